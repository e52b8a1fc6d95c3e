//! `DomainAllocator`: an `allocator_api2` allocator that charges a `'static` domain.
//!
//! `allocator_api2::vec::Vec<T, DomainAllocator>`, `Box<T, DomainAllocator>` and `hashbrown`
//! maps built with it are attributed to the domain. Growth and shrink at equal alignment are
//! one logical resize record each.

use core::alloc::Layout;
use core::ptr::NonNull;

use allocator_api2::alloc::{AllocError, Allocator};
use allocator_api2::boxed::Box;

use super::domain::{AllocFailed, AllocationDomain};
use super::layout::AllocationLayout;

/// A copyable handle to a process-lifetime domain, usable as an `allocator_api2` allocator.
///
/// # Examples
/// ```
/// use allocator_api2::vec::Vec;
/// use ludus::memory::{AllocationDomain, DomainAllocator};
/// let d = AllocationDomain::register("doc/adapter").unwrap();
/// let mut v: Vec<u64, DomainAllocator> = Vec::new_in(d.allocator());
/// v.extend(0..100);
/// assert!(d.usage().live_bytes >= 800);
/// drop(v);
/// assert_eq!(d.usage().live_bytes, 0);
/// ```
#[derive(Debug, Clone, Copy)]
pub struct DomainAllocator {
    domain: &'static AllocationDomain,
}

impl DomainAllocator {
    /// An allocator charging `domain`.
    pub const fn new(domain: &'static AllocationDomain) -> Self {
        Self { domain }
    }

    /// An allocator charging the core domain.
    #[cfg(not(loom))]
    pub fn core() -> Self {
        Self::new(AllocationDomain::core())
    }

    /// The domain this allocator charges.
    pub const fn domain(self) -> &'static AllocationDomain {
        self.domain
    }

    /// Moves `value` into a block of this domain: sizeof(T) bytes at alignof(T). The box frees
    /// through the same domain when dropped.
    ///
    /// # Errors
    /// [`AllocFailed`] if the backend refuses; `value` is dropped and nothing else changes
    /// (except the domain's `failures`).
    pub fn try_new_box<T>(self, value: T) -> Result<Box<T, Self>, AllocFailed> {
        let l = AllocationLayout::of::<T>();
        Box::try_new_in(value, self).map_err(|_| AllocFailed {
            size: l.size(),
            align: l.align(),
        })
    }
}

impl AllocationDomain {
    /// A copyable `allocator_api2` allocator charging this domain.
    pub fn allocator(&'static self) -> DomainAllocator {
        DomainAllocator::new(self)
    }
}

impl PartialEq for DomainAllocator {
    fn eq(&self, other: &Self) -> bool {
        core::ptr::eq(self.domain, other.domain)
    }
}

impl Eq for DomainAllocator {}

/// The slice `allocator_api2` wants: `ptr` (or a dangling pointer for zero size), `len` bytes.
#[inline]
fn block(ptr: Option<NonNull<u8>>, layout: AllocationLayout) -> NonNull<[u8]> {
    NonNull::slice_from_raw_parts(ptr.unwrap_or(layout.dangling()), layout.size())
}

/// The domain-side pointer of a block: zero-size blocks were never allocated.
#[inline]
fn owned(ptr: NonNull<u8>, layout: Layout) -> Option<NonNull<u8>> {
    (layout.size() != 0).then_some(ptr)
}

// SAFETY: 1. every nonzero block comes from the domain's backend and stays valid until passed
// back to `deallocate`/`grow`/`shrink` of an allocator on the same domain (equality means same
// domain, so clones free each other's blocks). 2. Zero-size blocks are dangling, aligned and
// never reach the backend. 3. Copies share the `'static` domain, so moving an allocator does not
// invalidate its blocks.
unsafe impl Allocator for DomainAllocator {
    #[inline]
    fn allocate(&self, layout: Layout) -> Result<NonNull<[u8]>, AllocError> {
        let l = AllocationLayout::from(layout);
        let p = self.domain.try_allocate(l).map_err(|_| AllocError)?;
        Ok(block(p, l))
    }

    #[inline]
    unsafe fn deallocate(&self, ptr: NonNull<u8>, layout: Layout) {
        // SAFETY: `ptr` was allocated by this domain with `layout` (trait contract).
        unsafe { self.domain.free(owned(ptr, layout), layout.into()) }
    }

    #[inline]
    unsafe fn grow(
        &self,
        ptr: NonNull<u8>,
        old: Layout,
        new: Layout,
    ) -> Result<NonNull<[u8]>, AllocError> {
        debug_assert!(new.size() >= old.size(), "grow {old:?} -> {new:?}");
        // SAFETY: forwarded trait contract.
        unsafe { self.resize(ptr, old, new) }
    }

    #[inline]
    unsafe fn shrink(
        &self,
        ptr: NonNull<u8>,
        old: Layout,
        new: Layout,
    ) -> Result<NonNull<[u8]>, AllocError> {
        debug_assert!(new.size() <= old.size(), "shrink {old:?} -> {new:?}");
        // SAFETY: forwarded trait contract.
        unsafe { self.resize(ptr, old, new) }
    }
}

impl DomainAllocator {
    /// Resizes in place of the domain when the alignment is unchanged (one logical record);
    /// otherwise allocate, copy, free.
    ///
    /// # Safety
    /// `ptr` is a block of this domain with layout `old`.
    unsafe fn resize(
        &self,
        ptr: NonNull<u8>,
        old: Layout,
        new: Layout,
    ) -> Result<NonNull<[u8]>, AllocError> {
        if old.align() == new.align() {
            let mut p = owned(ptr, old);
            // SAFETY: `p` is this domain's block with layout `old` (caller contract).
            unsafe { self.domain.try_reallocate(&mut p, old.into(), new.size()) }
                .map_err(|_| AllocError)?;
            return Ok(block(p, new.into()));
        }
        let fresh = self.allocate(new)?;
        // SAFETY: 1. both blocks are valid for `min(old, new)` bytes; 2. they are distinct
        // live blocks, so they do not overlap.
        unsafe {
            core::ptr::copy_nonoverlapping(
                ptr.as_ptr(),
                fresh.cast::<u8>().as_ptr(),
                old.size().min(new.size()),
            )
        };
        // SAFETY: `ptr`/`old` belong to this domain and are no longer used.
        unsafe { self.deallocate(ptr, old) };
        Ok(fresh)
    }
}
