//! The byte API of [`AllocationDomain`]: `try_allocate`, `free` and `try_reallocate`, with
//! their validation-ledger and activity-capture hooks.
//!
//! The byte API contract: zero size is an empty success (`Ok(None)`) that
//! touches neither backend nor counters; freeing `None` is a no-op; a free needs the original
//! domain and layout; a resize is one logical record; a failed resize leaves pointer, contents
//! and live counters unchanged (only `failures` moves).

use core::ptr::NonNull;

use super::charge::Charge;
use super::domain::AllocationDomain;
use super::layout::{AllocationLayout, LayoutError};

/// The backend refused a nonzero request. Nothing changed except the `failures` counter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("allocation of {size} bytes at alignment {align} failed")]
pub struct AllocFailed {
    /// Requested bytes.
    pub size: usize,
    /// Requested alignment.
    pub align: usize,
}

/// Why a resize was refused. The block, its contents and the live counters are unchanged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ResizeError {
    /// The new size is not a valid layout at the old alignment.
    #[error(transparent)]
    Layout(#[from] LayoutError),
    /// The backend refused the request.
    #[error(transparent)]
    Exhausted(#[from] AllocFailed),
    /// A null block was passed with a nonzero old size.
    #[error("resize of a null block with nonzero old size {old_size}")]
    NullWithSize {
        /// The old size that should have been zero.
        old_size: usize,
    },
}

impl AllocationDomain {
    /// Allocates `layout.size()` uninitialized bytes aligned to `layout.align()`.
    ///
    /// Zero size is an empty success: `Ok(None)`, no backend call, no counter change.
    ///
    /// # Examples
    /// ```
    /// use ludus::memory::{AllocationDomain, AllocationLayout};
    /// let d = AllocationDomain::core();
    /// let l = AllocationLayout::new(64, 16).unwrap();
    /// let p = d.try_allocate(l).unwrap();
    /// assert!(p.unwrap().as_ptr().addr() % 16 == 0);
    /// // SAFETY: `p` came from `d` with layout `l`.
    /// unsafe { d.free(p, l) };
    /// assert_eq!(d.try_allocate(AllocationLayout::new(0, 8).unwrap()), Ok(None));
    /// ```
    ///
    /// # Errors
    /// [`AllocFailed`] when the backend refuses; only `failures` is counted.
    #[inline(always)] // the byte API is the hot path: inline into every caller
    pub fn try_allocate(
        &self,
        layout: AllocationLayout,
    ) -> Result<Option<NonNull<u8>>, AllocFailed> {
        self.allocate_charged(layout, self.counters())
    }

    /// [`try_allocate`](Self::try_allocate), charging the figures to `charge`.
    #[inline(always)]
    pub(crate) fn allocate_charged(
        &self,
        layout: AllocationLayout,
        charge: impl Charge,
    ) -> Result<Option<NonNull<u8>>, AllocFailed> {
        if layout.size() == 0 {
            return Ok(None);
        }
        // SAFETY: the size is nonzero.
        let p = unsafe { self.backend().alloc(layout) };
        match NonNull::new(p) {
            Some(p) => {
                #[cfg(all(feature = "validation", not(loom)))]
                super::ledger::PROCESS.record(p, layout, self);
                charge.on_allocate(layout.size());
                #[cfg(feature = "capture")]
                if let Some(c) = self.capture() {
                    c.on_allocate(self.tag(), p.as_ptr().addr(), layout.size(), layout.align());
                }
                Ok(Some(p))
            }
            None => {
                self.counters().on_failure();
                Err(AllocFailed {
                    size: layout.size(),
                    align: layout.align(),
                })
            }
        }
    }

    /// Frees a block. `None`, and any zero-size layout, is a no-op with no counter change.
    ///
    /// # Safety
    /// A `Some` pointer was returned by this same domain, directly
    /// ([`try_allocate`](Self::try_allocate), [`try_reallocate`](Self::try_reallocate)) or
    /// through any of its [`BoundDomain`](super::BoundDomain)s or
    /// [`DomainAllocator`](super::DomainAllocator)s, with exactly `layout` (the current size
    /// after resizes), has not been freed, and is not used afterwards.
    /// With the `validation` feature, violations found by the ledger panic before any memory
    /// is touched.
    #[inline(always)] // the byte API is the hot path: inline into every caller
    pub unsafe fn free(&self, ptr: Option<NonNull<u8>>, layout: AllocationLayout) {
        // SAFETY: forwarded caller contract.
        unsafe { self.free_charged(ptr, layout, self.counters()) }
    }

    /// [`free`](Self::free), charging the figures to `charge`.
    ///
    /// # Safety
    /// As for [`free`](Self::free).
    #[inline(always)]
    pub(crate) unsafe fn free_charged(
        &self,
        ptr: Option<NonNull<u8>>,
        layout: AllocationLayout,
        charge: impl Charge,
    ) {
        let Some(p) = ptr else { return };
        if layout.size() == 0 {
            debug_assert!(false, "non-null free of a zero-size layout {layout:?}");
            return;
        }
        #[cfg(all(feature = "validation", not(loom)))]
        super::ledger::PROCESS.remove(p, layout, self);
        // The capture drops the block's entry before the backend may hand the address out again.
        #[cfg(feature = "capture")]
        if let Some(c) = self.capture() {
            c.on_free(self.tag(), p.as_ptr().addr(), layout.size(), layout.align());
        }
        charge.on_free(layout.size());
        // SAFETY: `p`/`layout` came from this domain's backend and are dead (caller contract).
        unsafe { self.backend().dealloc(p.as_ptr(), layout) }
    }

    /// Resizes `*ptr` from `old` to `new_size` bytes at the same alignment, preserving
    /// `min(old, new)` bytes; updates `*ptr` only on success.
    ///
    /// `None` allocates (old size must be zero); `new_size == 0` frees and sets `None`; an
    /// equal size returns unchanged. A successful change is one logical resize record.
    ///
    /// # Errors
    /// [`ResizeError`]; on every error `*ptr`, the block's contents and the live counters are
    /// unchanged (a refused backend request counts one failure).
    ///
    /// # Safety
    /// As for [`free`](Self::free): a `Some` block belongs to this domain with layout `old`.
    /// After success the old pointer value is dead; the block's layout is
    /// `old.with_size(new_size)`.
    #[inline]
    pub unsafe fn try_reallocate(
        &self,
        ptr: &mut Option<NonNull<u8>>,
        old: AllocationLayout,
        new_size: usize,
    ) -> Result<(), ResizeError> {
        // SAFETY: forwarded caller contract.
        unsafe { self.reallocate_charged(ptr, old, new_size, self.counters()) }
    }

    /// [`try_reallocate`](Self::try_reallocate), charging the figures to `charge`.
    ///
    /// # Errors
    /// As [`try_reallocate`](Self::try_reallocate).
    ///
    /// # Safety
    /// As for [`try_reallocate`](Self::try_reallocate).
    #[inline]
    pub(crate) unsafe fn reallocate_charged(
        &self,
        ptr: &mut Option<NonNull<u8>>,
        old: AllocationLayout,
        new_size: usize,
        charge: impl Charge,
    ) -> Result<(), ResizeError> {
        let new = old.with_size(new_size)?;
        let Some(p) = *ptr else {
            if old.size() != 0 {
                return Err(ResizeError::NullWithSize {
                    old_size: old.size(),
                });
            }
            *ptr = self.allocate_charged(new, charge)?;
            return Ok(());
        };
        if old.size() == 0 {
            debug_assert!(false, "non-null block with zero-size layout {old:?}");
            *ptr = self.allocate_charged(new, charge)?;
            return Ok(());
        }
        if new_size == 0 {
            // SAFETY: forwarded caller contract.
            unsafe { self.free_charged(Some(p), old, charge) };
            *ptr = None;
            return Ok(());
        }
        if new_size == old.size() {
            return Ok(());
        }
        // Metadata leaves the ledger before the backend may free `p` (another thread could be
        // handed the same address at once); it is restored if the resize fails.
        #[cfg(all(feature = "validation", not(loom)))]
        super::ledger::PROCESS.remove(p, old, self);
        // The capture's entry leaves for the same reason (one observer for the whole resize).
        #[cfg(feature = "capture")]
        let capture = self.capture().map(|c| (c, c.take(p.as_ptr().addr())));
        // SAFETY: `p`/`old` belong to this backend (caller contract); `new_size > 0` and `new`
        // is a valid layout.
        let q = unsafe { self.backend().realloc(p.as_ptr(), old, new_size) };
        match NonNull::new(q) {
            Some(q) => {
                #[cfg(all(feature = "validation", not(loom)))]
                super::ledger::PROCESS.record(q, new, self);
                charge.on_resize(old.size(), new_size);
                #[cfg(feature = "capture")]
                if let Some((c, seq)) = capture {
                    let q = q.as_ptr().addr();
                    c.on_resize(self.tag(), seq, q, old.size(), new_size, old.align());
                }
                *ptr = Some(q);
                Ok(())
            }
            None => {
                #[cfg(all(feature = "validation", not(loom)))]
                super::ledger::PROCESS.record(p, old, self);
                #[cfg(feature = "capture")]
                if let Some((c, seq)) = capture {
                    c.restore(p.as_ptr().addr(), seq, old.size());
                }
                self.counters().on_failure();
                Err(ResizeError::Exhausted(AllocFailed {
                    size: new_size,
                    align: old.align(),
                }))
            }
        }
    }
}
