//! `DomainAllocator`: an `allocator_api2` allocator that charges a `'static` domain.
//!
//! `allocator_api2::vec::Vec<T, DomainAllocator>`, `Box<T, DomainAllocator>` and `hashbrown`
//! maps built with it are attributed to the domain. Growth (`grow`, `grow_zeroed`) and shrink at
//! equal alignment are one logical resize record each.

use core::alloc::Layout;
use core::ptr::NonNull;

use allocator_api2::alloc::{AllocError, Allocator};
use allocator_api2::boxed::Box;

use super::bound::BoundDomain;
use super::byte_api::{AllocFailed, ResizeError};
use super::domain::AllocationDomain;
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

/// The byte API an `Allocator` impl forwards to: a domain through a [`DomainAllocator`], or a
/// [`BoundDomain`].
trait Bytes {
    fn try_allocate(&self, l: AllocationLayout) -> Result<Option<NonNull<u8>>, AllocFailed>;
    /// # Safety
    /// As [`AllocationDomain::free`].
    unsafe fn free(&self, p: Option<NonNull<u8>>, l: AllocationLayout);
    /// # Safety
    /// As [`AllocationDomain::try_reallocate`].
    unsafe fn try_reallocate(
        &self,
        p: &mut Option<NonNull<u8>>,
        old: AllocationLayout,
        new_size: usize,
    ) -> Result<(), ResizeError>;
}

/// Forwards the byte API of `$t` to `self.$via` (both have the same methods and contracts).
macro_rules! forward_bytes {
    ($t:ty, $via:tt) => {
        impl Bytes for $t {
            #[inline(always)]
            fn try_allocate(
                &self,
                l: AllocationLayout,
            ) -> Result<Option<NonNull<u8>>, AllocFailed> {
                self.$via.try_allocate(l)
            }
            #[inline(always)]
            unsafe fn free(&self, p: Option<NonNull<u8>>, l: AllocationLayout) {
                // SAFETY: forwarded caller contract.
                unsafe { self.$via.free(p, l) }
            }
            #[inline]
            unsafe fn try_reallocate(
                &self,
                p: &mut Option<NonNull<u8>>,
                old: AllocationLayout,
                new_size: usize,
            ) -> Result<(), ResizeError> {
                // SAFETY: forwarded caller contract.
                unsafe { self.$via.try_reallocate(p, old, new_size) }
            }
        }
    };
}

forward_bytes!(DomainAllocator, domain);

/// A [`BoundDomain`]'s byte API: its inherent methods.
struct Inherent<'a, 'd>(&'a BoundDomain<'d>);
forward_bytes!(Inherent<'_, '_>, 0);

/// `Allocator::allocate` over the byte API.
#[inline(always)]
fn allocate(b: &impl Bytes, layout: Layout) -> Result<NonNull<[u8]>, AllocError> {
    let l = AllocationLayout::from(layout);
    let p = b.try_allocate(l).map_err(|_| AllocError)?;
    Ok(block(p, l))
}

/// `Allocator::deallocate` over the byte API.
///
/// # Safety
/// `ptr` was allocated by `b`'s domain with `layout`.
#[inline(always)]
unsafe fn deallocate(b: &impl Bytes, ptr: NonNull<u8>, layout: Layout) {
    // SAFETY: `ptr` was allocated by this domain with `layout` (caller contract).
    unsafe { b.free(owned(ptr, layout), layout.into()) }
}

/// `Allocator::grow`/`shrink`: a resize of the domain when the alignment is unchanged (one
/// logical record); otherwise allocate, copy, free.
///
/// # Safety
/// `ptr` is a block of `b`'s domain with layout `old`.
unsafe fn resize(
    b: &impl Bytes,
    ptr: NonNull<u8>,
    old: Layout,
    new: Layout,
) -> Result<NonNull<[u8]>, AllocError> {
    if old.align() == new.align() {
        let mut p = owned(ptr, old);
        // SAFETY: `p` is this domain's block with layout `old` (caller contract).
        unsafe { b.try_reallocate(&mut p, old.into(), new.size()) }.map_err(|_| AllocError)?;
        return Ok(block(p, new.into()));
    }
    let fresh = allocate(b, new)?;
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
    unsafe { deallocate(b, ptr, old) };
    Ok(fresh)
}

/// The five `Allocator` methods of `$t` that touch the domain, over its byte API
/// `$bytes(self)` (`allocate_zeroed` keeps the default: one allocate, then zeroing).
macro_rules! allocator_methods {
    ($bytes:expr) => {
        #[inline]
        fn allocate(&self, layout: Layout) -> Result<NonNull<[u8]>, AllocError> {
            allocate(&$bytes(self), layout)
        }

        #[inline]
        unsafe fn deallocate(&self, ptr: NonNull<u8>, layout: Layout) {
            // SAFETY: forwarded trait contract.
            unsafe { deallocate(&$bytes(self), ptr, layout) }
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
            unsafe { resize(&$bytes(self), ptr, old, new) }
        }

        /// As `grow` (one resize record at equal alignment, no transient old + new charge),
        /// then the new tail zeroed; allocator-api2's default would allocate, copy and free.
        #[inline]
        unsafe fn grow_zeroed(
            &self,
            ptr: NonNull<u8>,
            old: Layout,
            new: Layout,
        ) -> Result<NonNull<[u8]>, AllocError> {
            debug_assert!(new.size() >= old.size(), "grow_zeroed {old:?} -> {new:?}");
            // SAFETY: forwarded trait contract.
            let p = unsafe { resize(&$bytes(self), ptr, old, new) }?;
            let keep = old.size().min(new.size());
            // SAFETY: `p` is valid for `new.size()` bytes (`resize` returns a block of the new
            // layout) and `keep <= new.size()`, so the tail `keep..new.size()` is inside it.
            unsafe {
                p.cast::<u8>()
                    .as_ptr()
                    .add(keep)
                    .write_bytes(0, new.size() - keep)
            };
            Ok(p)
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
            unsafe { resize(&$bytes(self), ptr, old, new) }
        }
    };
}

// SAFETY: 1. every nonzero block comes from the domain's backend and stays valid until passed
// back to `deallocate`/`grow`/`shrink` of an allocator on the same domain (equality means same
// domain, so clones free each other's blocks). 2. Zero-size blocks are dangling, aligned and
// never reach the backend. 3. Copies share the `'static` domain, so moving an allocator does not
// invalidate its blocks.
unsafe impl Allocator for DomainAllocator {
    allocator_methods!(|a: &DomainAllocator| *a);
}

// SAFETY: 1. every nonzero block comes from the domain's backend and stays valid until passed
// back to a free of the same domain (through this handle or any other way: the blocks are the
// domain's, not the handle's). 2. Zero-size blocks are dangling, aligned and never reach the
// backend. 3. Moving or dropping the handle leaves its blocks valid: the domain outlives `'d`.
// The handle is not `Clone`, so there are no copies to agree with.
unsafe impl Allocator for BoundDomain<'_> {
    allocator_methods!(Inherent);
}
