//! `LinearArena`: a bump allocator over caller-supplied bytes.
//!
//! ```text
//! base                                  base + capacity
//! |<-- used (allocations + padding) -->|<----- free ----->|
//!                                 cursor
//! ```
//! Invariant: `cursor <= capacity` (stored as the address `top = base + cursor`),
//! `high_water <= capacity`, and every live allocation lies inside `base[..cursor]`. The cursor only grows between rewinds, so the stored high-water is
//! brought up to date at each rewind and the reported one is `max(high_water, cursor)`: the bump
//! path pays no extra store. Alignment is computed from the real address `base + cursor`, and padding
//! counts toward `used` and `high_water`. A failed request leaves the cursor unchanged. There is
//! no growth and no fallback heap.
//!
//! Lifetimes do the bookkeeping the seed asks markers for: allocations made through `&arena`
//! borrow the arena, so [`reset`](LinearArena::reset) (`&mut self`) and
//! [`scope`](LinearArena::scope) (`&mut self`) cannot run while one is alive; a
//! [`ScratchScope`](super::ScratchScope) is only reachable inside its closure, and a nested scope
//! mutably borrows its parent, so only the innermost live scope can allocate or rewind. The
//! `compile_fail` doctests in `lifetimes.rs` prove each of these rules.

// A bump allocator hands out disjoint `&mut` blocks from `&self` (as bumpalo does): each block
// is reserved by advancing the cursor, so no two live results alias.
#![allow(clippy::mut_from_ref)]

use core::cell::Cell;
use core::marker::PhantomData;
use core::mem::MaybeUninit;
use core::ptr::NonNull;

use bytemuck::{Pod, Zeroable};

use super::layout::{AllocationLayout, LayoutError};

/// Why an arena request was refused. The cursor is unchanged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ArenaError {
    /// Not enough room left for the request plus its alignment padding.
    #[error(
        "arena exhausted: {size} bytes at alignment {align} need more than the {remaining} left"
    )]
    Exhausted {
        /// Requested bytes.
        size: usize,
        /// Requested alignment.
        align: usize,
        /// Bytes that were left.
        remaining: usize,
    },
    /// The typed request's size overflowed.
    #[error(transparent)]
    Layout(#[from] LayoutError),
}

/// Byte written over rewound or reset storage in debug builds.
pub const POISON: u8 = 0xDD;

/// A fixed-capacity bump allocator borrowing `'buf` bytes exclusively.
///
/// # Examples
/// ```
/// use ludus::memory::LinearArena;
/// let mut bytes = [0u8; 256];
/// let mut arena = LinearArena::new(&mut bytes);
/// let x: &mut u32 = arena.try_alloc_pod(7).unwrap();
/// *x += 1;
/// let n = arena.scope(|s| {
///     let tmp = s.try_alloc_slice_fill(16, 1u64).unwrap();
///     tmp.iter().sum::<u64>()
/// });
/// assert_eq!(n, 16);
/// assert_eq!(arena.used(), 4); // the scope's bytes were rewound
/// arena.reset();
/// assert_eq!(arena.used(), 0);
/// ```
#[derive(Debug)]
pub struct LinearArena<'buf> {
    /// Start of the buffer; carries the provenance of every allocation.
    base: NonNull<u8>,
    /// Address of the first free byte: `base.addr() + used`. Invariant: `base <= top <= limit`.
    top: Cell<usize>,
    /// Address one past the buffer: `base.addr() + capacity`.
    limit: usize,
    /// Largest `used` before the last rewind (see `high_water()`).
    high_water: Cell<usize>,
    /// The buffer came uninitialized ([`from_uninit`](Self::from_uninit)): byte views are
    /// zeroed before they are handed out. Over [`new`](Self::new)'s buffer every byte is
    /// initialized (the caller's bytes, or values the arena wrote), and must stay so: the caller
    /// reads the buffer as `[u8]` once the arena is gone.
    uninit: bool,
    _buf: PhantomData<&'buf mut [u8]>,
}

// SAFETY: the arena is an exclusive borrow of plain bytes (`&mut [u8]` is `Send`) plus
// single-threaded cursor cells; moving the whole owner to another thread moves every access with
// it. It stays `!Sync`: two threads must never bump the same cursor.
unsafe impl Send for LinearArena<'_> {}

impl<'buf> LinearArena<'buf> {
    /// An arena over `bytes`; the bytes are borrowed exclusively for the arena's lifetime.
    pub fn new(bytes: &'buf mut [u8]) -> Self {
        let len = bytes.len();
        Self::over(NonNull::from(bytes).cast(), len, false)
    }

    /// An arena over the `len` bytes at `base` (one exclusively borrowed buffer).
    fn over(base: NonNull<u8>, len: usize, uninit: bool) -> Self {
        let start = base.as_ptr().addr();
        Self {
            base,
            top: Cell::new(start),
            // No overflow: a Rust allocation never wraps the address space.
            limit: start + len,
            high_water: Cell::new(0),
            uninit,
            _buf: PhantomData,
        }
    }

    /// An arena over uninitialized bytes. Nothing is written here: typed allocations write
    /// their values, and [`try_alloc_bytes`](Self::try_alloc_bytes) zeroes what it hands out.
    pub fn from_uninit(bytes: &'buf mut [MaybeUninit<u8>]) -> Self {
        let len = bytes.len();
        Self::over(NonNull::from(bytes).cast(), len, true)
    }

    /// Bytes in use, padding included.
    #[inline]
    pub fn used(&self) -> usize {
        self.top.get() - self.base.as_ptr().addr()
    }

    /// Total bytes borrowed.
    #[inline]
    pub fn capacity(&self) -> usize {
        self.limit - self.base.as_ptr().addr()
    }

    /// Bytes still free (before alignment padding).
    #[inline]
    pub fn remaining(&self) -> usize {
        self.limit - self.top.get()
    }

    /// The largest `used` ever reached (reset does not lower it).
    #[inline]
    pub fn high_water(&self) -> usize {
        self.high_water.get().max(self.used())
    }

    /// Frees everything at once. No allocation can be alive: `&mut self` proves it.
    pub fn reset(&mut self) {
        // SAFETY: allocations borrow the arena, so `&mut self` proves none is alive.
        unsafe { self.rewind(0) };
    }

    /// The bump step: reserves `layout` after aligning the real address.
    ///
    /// # Errors
    /// [`ArenaError::Exhausted`]; the cursor is unchanged.
    #[inline(always)]
    pub(crate) fn bump(&self, layout: AllocationLayout) -> Result<NonNull<u8>, ArenaError> {
        let top = self.top.get();
        let remaining = self.limit - top;
        // `align` is a power of two: the distance from the real address up to its next multiple.
        let pad = top.wrapping_neg() & (layout.align() - 1);
        // No overflow: `pad < align` and the layout invariant bounds `size + align - 1`.
        let need = pad + layout.size();
        if need > remaining {
            return Err(exhausted(layout, remaining));
        }
        self.top.set(top + need);
        debug_assert!(
            top + need <= self.limit,
            "top {top} need {need} limit {}",
            self.limit
        );
        let p = self.base.as_ptr().with_addr(top + pad);
        // SAFETY: `base < top + pad + 1`, so the address is nonzero; it lies inside (or one
        // past) the borrowed buffer, whose provenance `base` carries.
        Ok(unsafe { NonNull::new_unchecked(p) })
    }

    /// Rewinds the cursor to `to`, poisoning the released bytes in debug builds.
    ///
    /// # Safety
    /// No allocation in `base[to..cursor]` may be alive: the bytes are handed out again (and
    /// overwritten with poison in debug builds).
    pub(crate) unsafe fn rewind(&self, to: usize) {
        let cursor = self.used();
        debug_assert!(to <= cursor, "rewind forward: {to} > {cursor}");
        self.high_water.set(self.high_water());
        #[cfg(debug_assertions)]
        if to < cursor {
            // SAFETY: `to..cursor` lies inside the borrowed buffer, and no live reference
            // covers it (caller contract), so writing through the buffer's pointer is sound.
            unsafe { self.base.add(to).as_ptr().write_bytes(POISON, cursor - to) };
        }
        self.top.set(self.base.as_ptr().addr() + to.min(cursor));
    }

    /// Reserves `layout.size()` bytes. Their contents are unspecified: what the buffer held
    /// (earlier allocations' bytes included) over [`new`](Self::new)'s buffer, zeros over
    /// [`from_uninit`](Self::from_uninit)'s (its uninitialized bytes are never exposed).
    ///
    /// # Errors
    /// [`ArenaError::Exhausted`]; the cursor is unchanged.
    #[inline]
    pub fn try_alloc_bytes(&self, layout: AllocationLayout) -> Result<&mut [u8], ArenaError> {
        alloc_bytes(self, layout)
    }

    /// Moves a plain-data value into the arena.
    ///
    /// # Errors
    /// [`ArenaError::Exhausted`]; the cursor is unchanged.
    #[inline(always)]
    pub fn try_alloc_pod<T: Pod>(&self, value: T) -> Result<&mut T, ArenaError> {
        alloc_pod(self, value)
    }

    /// Copies a plain-data slice into the arena.
    ///
    /// # Errors
    /// [`ArenaError`]; the cursor is unchanged.
    #[inline]
    pub fn try_alloc_slice_copy<T: Pod>(&self, src: &[T]) -> Result<&mut [T], ArenaError> {
        alloc_slice_copy(self, src)
    }

    /// A slice of `len` copies of `value`.
    ///
    /// The copies are bitwise (`T: Pod` is `Copy`; no user code runs). A zero-sized `T` takes no
    /// bytes beyond alignment padding and nothing is written, so any `len` (even `usize::MAX`)
    /// returns at once.
    ///
    /// # Errors
    /// [`ArenaError`]; the cursor is unchanged.
    #[inline]
    pub fn try_alloc_slice_fill<T: Pod>(
        &self,
        len: usize,
        value: T,
    ) -> Result<&mut [T], ArenaError> {
        alloc_slice_fill(self, len, value)
    }
}

/// The refusal, kept out of line so the bump path stays small.
#[cold]
#[inline(never)]
fn exhausted(layout: AllocationLayout, remaining: usize) -> ArenaError {
    ArenaError::Exhausted {
        size: layout.size(),
        align: layout.align(),
        remaining,
    }
}

// The typed helpers, shared by the arena (lifetime of `&arena`) and scopes (lifetime `'s`).

#[inline]
pub(crate) fn alloc_bytes<'a>(
    arena: &'a LinearArena<'_>,
    layout: AllocationLayout,
) -> Result<&'a mut [u8], ArenaError> {
    let p = arena.bump(layout)?;
    if arena.uninit {
        // SAFETY: `bump` returned `layout.size()` bytes inside the borrowed buffer, disjoint
        // from every other live allocation: nothing else reads or writes them.
        unsafe { p.as_ptr().write_bytes(0, layout.size()) };
    }
    // Every byte is initialized: zeroed just above over a `from_uninit` buffer; over a `new`
    // buffer all start initialized and the arena writes only whole `Pod` values (no padding)
    // and the debug poison byte.
    // SAFETY: `bump` returned `layout.size()` bytes inside the borrowed buffer, disjoint from
    // every other live allocation, valid for `'a` (no rewind runs while `'a` borrows the
    // arena or scope), and initialized (above).
    Ok(unsafe { core::slice::from_raw_parts_mut(p.as_ptr(), layout.size()) })
}

#[inline(always)]
pub(crate) fn alloc_pod<'a, T: Pod>(
    arena: &'a LinearArena<'_>,
    value: T,
) -> Result<&'a mut T, ArenaError> {
    let p = arena.bump(AllocationLayout::of::<T>())?.cast::<T>();
    // SAFETY: `p` is aligned for `T`, points to `size_of::<T>()` exclusively owned bytes valid
    // for `'a` (as in `alloc_bytes`); writing initializes them.
    unsafe {
        p.as_ptr().write(value);
        Ok(&mut *p.as_ptr())
    }
}

#[inline]
pub(crate) fn alloc_slice_fill<'a, T: Pod>(
    arena: &'a LinearArena<'_>,
    len: usize,
    value: T,
) -> Result<&'a mut [T], ArenaError> {
    let p = arena.bump(AllocationLayout::array::<T>(len)?)?.cast::<T>();
    // A zero-sized `T` needs no storage and has no bytes to initialize, so the writes are
    // skipped: `len` may be `usize::MAX`, and a per-element loop would not finish in debug
    // builds or under Miri. Skipping is unobservable because `T: Pod` is `Copy` with no `Drop`:
    // filling copies bits and never runs user code (no `Clone::clone` call to elide).
    if size_of::<T>() != 0 {
        for i in 0..len {
            // SAFETY: `i < len` and the block holds `len` aligned `T`s.
            unsafe { p.as_ptr().add(i).write(value) };
        }
    }
    // SAFETY: all `len` elements are initialized (a zero-sized `T` has no bytes to
    // initialize, and `p` is aligned for `T`); exclusivity and lifetime as in `alloc_bytes`.
    Ok(unsafe { core::slice::from_raw_parts_mut(p.as_ptr(), len) })
}

#[inline]
pub(crate) fn alloc_slice_copy<'a, T: Pod>(
    arena: &'a LinearArena<'_>,
    src: &[T],
) -> Result<&'a mut [T], ArenaError> {
    let p = arena
        .bump(AllocationLayout::array::<T>(src.len())?)?
        .cast::<T>();
    // SAFETY: 1. the destination holds `src.len()` aligned `T`s; 2. it is freshly reserved, so
    // it cannot overlap `src`; 3. exclusivity and lifetime as in `alloc_bytes`.
    unsafe {
        core::ptr::copy_nonoverlapping(src.as_ptr(), p.as_ptr(), src.len());
        Ok(core::slice::from_raw_parts_mut(p.as_ptr(), src.len()))
    }
}

/// Zeroed plain data.
#[inline]
pub(crate) fn alloc_slice_zeroed<'a, T: Pod>(
    arena: &'a LinearArena<'_>,
    len: usize,
) -> Result<&'a mut [T], ArenaError> {
    alloc_slice_fill(arena, len, T::zeroed())
}

impl LinearArena<'_> {
    /// A zeroed slice of `len` plain-data values.
    ///
    /// # Errors
    /// [`ArenaError`]; the cursor is unchanged.
    #[inline]
    pub fn try_alloc_slice_zeroed<T: Pod + Zeroable>(
        &self,
        len: usize,
    ) -> Result<&mut [T], ArenaError> {
        alloc_slice_zeroed(self, len)
    }
}
