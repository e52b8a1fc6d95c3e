//! General-purpose backends, called explicitly (never installed as the global allocator).
//!
//! One backend is chosen at build time for every registered domain ([`Backend::BUILD`]):
//! the system allocator by default, mimalloc with the `mimalloc` feature. Under Miri the
//! mimalloc backend routes to the system allocator (Miri cannot run C).
//! `Backend::Failing` exists only to build separate test domains, with the `test-hooks` feature
//! (the crate's own tests turn it on): production builds do not carry its branch on every
//! allocation. The registry never hands it out.

use core::alloc::GlobalAlloc;
use std::alloc::System;

#[cfg(feature = "test-hooks")]
use super::failure::FailureInjector;
use super::layout::AllocationLayout;

/// Which allocator runtime owns a domain's blocks. Immutable for the domain's lifetime.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub enum Backend {
    /// The platform allocator (`std::alloc::System`).
    System,
    /// mimalloc, called through its `GlobalAlloc` methods (feature `mimalloc`).
    #[cfg(feature = "mimalloc")]
    Mimalloc,
    /// Test facility (feature `test-hooks`): the system allocator, except that the injector may
    /// refuse a request.
    #[cfg(feature = "test-hooks")]
    Failing(&'static FailureInjector),
}

impl Backend {
    /// The backend every registered domain uses in this build.
    #[cfg(not(feature = "mimalloc"))]
    pub const BUILD: Backend = Backend::System;
    /// The backend every registered domain uses in this build.
    #[cfg(feature = "mimalloc")]
    pub const BUILD: Backend = Backend::Mimalloc;

    /// A short stable name ("system", "mimalloc", "failing") for reports.
    pub const fn name(self) -> &'static str {
        match self {
            Backend::System => "system",
            #[cfg(feature = "mimalloc")]
            Backend::Mimalloc => "mimalloc",
            #[cfg(feature = "test-hooks")]
            Backend::Failing(_) => "failing",
        }
    }

    /// Allocates `layout` bytes; null on failure.
    ///
    /// # Safety
    /// `layout.size() > 0`.
    #[inline(always)] // part of the byte API's hot path
    pub(crate) unsafe fn alloc(self, layout: AllocationLayout) -> *mut u8 {
        debug_assert!(layout.size() > 0, "zero-size request reached the backend");
        let l = layout.to_layout();
        match self {
            // SAFETY: nonzero size (caller contract).
            Backend::System => unsafe { System.alloc(l) },
            // SAFETY: nonzero size (caller contract).
            #[cfg(feature = "mimalloc")]
            Backend::Mimalloc => unsafe { mimalloc_impl::alloc(l) },
            #[cfg(feature = "test-hooks")]
            Backend::Failing(inj) => {
                if inj.should_fail() {
                    core::ptr::null_mut()
                } else {
                    // SAFETY: nonzero size (caller contract).
                    unsafe { System.alloc(l) }
                }
            }
        }
    }

    /// Frees a block.
    ///
    /// # Safety
    /// `ptr` came from `alloc`/`realloc` of this same backend with exactly `layout`, and is
    /// not used afterwards.
    #[inline(always)]
    pub(crate) unsafe fn dealloc(self, ptr: *mut u8, layout: AllocationLayout) {
        let l = layout.to_layout();
        match self {
            // SAFETY: ptr/layout pair came from `System` (caller contract).
            Backend::System => unsafe { System.dealloc(ptr, l) },
            // SAFETY: as above: a failing backend's blocks come from `System`.
            #[cfg(feature = "test-hooks")]
            Backend::Failing(_) => unsafe { System.dealloc(ptr, l) },
            // SAFETY: ptr/layout pair came from this backend (caller contract).
            #[cfg(feature = "mimalloc")]
            Backend::Mimalloc => unsafe { mimalloc_impl::dealloc(ptr, l) },
        }
    }

    /// Resizes a block, preserving `min(old, new_size)` bytes and the alignment. On null the
    /// original block is untouched and still owned by the caller.
    ///
    /// # Safety
    /// As for `dealloc` for `ptr`/`old`; `new_size > 0` and `old.with_size(new_size)` is valid.
    #[inline]
    pub(crate) unsafe fn realloc(
        self,
        ptr: *mut u8,
        old: AllocationLayout,
        new_size: usize,
    ) -> *mut u8 {
        debug_assert!(
            new_size > 0 && old.with_size(new_size).is_ok(),
            "bad resize {old:?} -> {new_size}"
        );
        let l = old.to_layout();
        match self {
            // SAFETY: caller contract; `GlobalAlloc::realloc` preserves alignment and leaves
            // the old block intact on failure.
            Backend::System => unsafe { System.realloc(ptr, l, new_size) },
            // SAFETY: as above.
            #[cfg(feature = "mimalloc")]
            Backend::Mimalloc => unsafe { mimalloc_impl::realloc(ptr, l, new_size) },
            #[cfg(feature = "test-hooks")]
            Backend::Failing(inj) => {
                if inj.should_fail() {
                    core::ptr::null_mut()
                } else {
                    // SAFETY: as above.
                    unsafe { System.realloc(ptr, l, new_size) }
                }
            }
        }
    }
}

/// mimalloc's entry points; the system allocator under Miri.
#[cfg(feature = "mimalloc")]
mod mimalloc_impl {
    use core::alloc::{GlobalAlloc, Layout};

    #[cfg(not(miri))]
    use mimalloc::MiMalloc as Heap;
    #[cfg(miri)]
    use std::alloc::System as Heap;

    /// # Safety
    /// `GlobalAlloc::alloc`'s contract.
    #[inline]
    pub(super) unsafe fn alloc(l: Layout) -> *mut u8 {
        // SAFETY: forwarded caller contract.
        unsafe { Heap.alloc(l) }
    }

    /// # Safety
    /// `GlobalAlloc::dealloc`'s contract.
    #[inline]
    pub(super) unsafe fn dealloc(p: *mut u8, l: Layout) {
        // SAFETY: forwarded caller contract.
        unsafe { Heap.dealloc(p, l) }
    }

    /// # Safety
    /// `GlobalAlloc::realloc`'s contract.
    #[inline]
    pub(super) unsafe fn realloc(p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        // SAFETY: forwarded caller contract.
        unsafe { Heap.realloc(p, l, n) }
    }
}
