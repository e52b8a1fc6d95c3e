//! `ScratchScope`: a nested region of a `LinearArena` rewound when its closure ends.
//!
//! A scope exists only inside the closure passed to [`LinearArena::scope`] or
//! [`ScratchScope::scope`]; its brand lifetime `'s` is higher-ranked there, so neither the scope
//! nor anything allocated from it (`&'s mut T`) can leave the closure. Opening a nested scope
//! borrows the parent mutably: while the child lives, the parent can neither allocate nor
//! rewind, yet the parent's earlier allocations stay usable (they hold `'s`, not the borrow).
//! The `compile_fail` doctests in `lifetimes.rs` prove these rules.

// A bump allocator hands out disjoint `&mut` blocks from `&self` (as bumpalo does): each block
// is reserved by advancing the cursor, so no two live results alias.
#![allow(clippy::mut_from_ref)]

use core::marker::PhantomData;

use bytemuck::Pod;

use super::arena::{self, ArenaError, LinearArena};
use super::layout::AllocationLayout;

/// A LIFO region of an arena; see the module docs.
///
/// # Examples
/// ```
/// use ludus::memory::LinearArena;
/// let mut bytes = [0u8; 128];
/// let mut arena = LinearArena::new(&mut bytes);
/// arena.scope(|outer| {
///     let a = outer.try_alloc_pod(1u32).unwrap();
///     outer.scope(|inner| {
///         let b = inner.try_alloc_pod(2u32).unwrap();
///         *a += *b; // outer allocations stay usable inside the inner scope
///     });
///     assert_eq!(*a, 3);
/// });
/// assert_eq!(arena.used(), 0);
/// ```
#[derive(Debug)]
pub struct ScratchScope<'s> {
    arena: &'s LinearArena<'s>,
    /// The cursor at opening; restored on drop.
    marker: usize,
    /// Invariant in `'s`, so the brand cannot be widened or narrowed.
    _brand: PhantomData<fn(&'s ()) -> &'s ()>,
}

impl LinearArena<'_> {
    /// Runs `f` with a [`ScratchScope`] whose allocations are rewound when `f` returns (or
    /// unwinds). The scope's allocations cannot escape `f`.
    pub fn scope<R>(&mut self, f: impl for<'s> FnOnce(&mut ScratchScope<'s>) -> R) -> R {
        let mut s = ScratchScope::open(self);
        f(&mut s)
    }
}

impl<'s> ScratchScope<'s> {
    /// Opens a scope at the arena's current cursor. The caller holds the exclusive borrow.
    pub(crate) fn open(arena: &'s LinearArena<'s>) -> Self {
        Self {
            arena,
            marker: arena.used(),
            _brand: PhantomData,
        }
    }

    /// Runs `f` with a nested scope; its allocations are rewound when `f` returns.
    pub fn scope<R>(&mut self, f: impl for<'i> FnOnce(&mut ScratchScope<'i>) -> R) -> R {
        let mut inner = ScratchScope::open(self.arena);
        f(&mut inner)
    }

    /// The arena's used bytes, padding included.
    pub fn used(&self) -> usize {
        self.arena.used()
    }

    /// The arena's capacity.
    pub fn capacity(&self) -> usize {
        self.arena.capacity()
    }

    /// The arena's free bytes (before alignment padding).
    pub fn remaining(&self) -> usize {
        self.arena.remaining()
    }

    /// The arena's high-water mark.
    pub fn high_water(&self) -> usize {
        self.arena.high_water()
    }

    /// Reserves `layout.size()` bytes for the scope's lifetime; their contents are
    /// unspecified, as [`LinearArena::try_alloc_bytes`] says.
    ///
    /// # Errors
    /// [`ArenaError::Exhausted`]; the cursor is unchanged.
    #[inline]
    pub fn try_alloc_bytes(&self, layout: AllocationLayout) -> Result<&'s mut [u8], ArenaError> {
        arena::alloc_bytes(self.arena, layout)
    }

    /// Moves a plain-data value into the scope.
    ///
    /// # Errors
    /// [`ArenaError::Exhausted`]; the cursor is unchanged.
    #[inline(always)]
    pub fn try_alloc_pod<T: Pod>(&self, value: T) -> Result<&'s mut T, ArenaError> {
        arena::alloc_pod(self.arena, value)
    }

    /// Copies a plain-data slice into the scope.
    ///
    /// # Errors
    /// [`ArenaError`]; the cursor is unchanged.
    #[inline]
    pub fn try_alloc_slice_copy<T: Pod>(&self, src: &[T]) -> Result<&'s mut [T], ArenaError> {
        arena::alloc_slice_copy(self.arena, src)
    }

    /// A slice of `len` copies of `value`; as [`LinearArena::try_alloc_slice_fill`] (bitwise
    /// copies, and a zero-sized `T` writes nothing, so any `len` returns at once).
    ///
    /// # Errors
    /// [`ArenaError`]; the cursor is unchanged.
    #[inline]
    pub fn try_alloc_slice_fill<T: Pod>(
        &self,
        len: usize,
        value: T,
    ) -> Result<&'s mut [T], ArenaError> {
        arena::alloc_slice_fill(self.arena, len, value)
    }

    /// A zeroed slice of `len` plain-data values.
    ///
    /// # Errors
    /// [`ArenaError`]; the cursor is unchanged.
    #[inline]
    pub fn try_alloc_slice_zeroed<T: Pod>(&self, len: usize) -> Result<&'s mut [T], ArenaError> {
        arena::alloc_slice_zeroed(self.arena, len)
    }
}

impl Drop for ScratchScope<'_> {
    fn drop(&mut self) {
        // SAFETY: every allocation above `marker` is `&'s`-bound, and `'s` ends with the
        // closure that received this scope, before this drop runs; nested scopes were dropped
        // first. So none of them is alive.
        unsafe { self.arena.rewind(self.marker) };
    }
}
