//! `BoundDomain`: a handle to a domain that holds a counter shard of its own.
//!
//! The byte API of `&AllocationDomain` finds the calling thread's shard on every call: the mode
//! (exact or sharded), the thread's slot from thread-local storage and its range, then the
//! shard's address. A `BoundDomain` leases a slot once, when it is made, so its calls go
//! straight to the shard: the counter placement for allocation-heavy loops, without a thread
//! registry or a per-thread heap (the backend is the domain's).
//!
//! ```text
//! AllocationDomain::try_allocate   mode? -> TLS slot -> slot < 64? -> shards[slot] -> update
//! BoundDomain::try_allocate        -------------- lease taken at bind() ----------> update
//! ```
//!
//! Exclusivity: a shard is written with plain loads and stores, so one writer at a time. The
//! handle owns its lease (not the thread's), so it may move to another thread (`Send`: a move
//! between threads is a happens-before edge) but not be shared (`!Sync`). Its figures belong to
//! the domain and outlive it, exactly like a thread's. A handle always has its shard: `bind`
//! refuses an exact-mode domain or a full slot registry with a [`BindError`], and the caller
//! keeps using the domain itself (slower, never wrong), so no call through a handle branches on
//! whether it has one.

use core::cell::Cell;
use core::marker::PhantomData;
use core::ptr::NonNull;

use super::byte_api::{AllocFailed, ResizeError};
use super::domain::AllocationDomain;
use super::layout::AllocationLayout;
use super::shards::{ShardWriter, SlotLease, ThreadSlots};
use super::usage::MemoryUsage;

/// A handle to an [`AllocationDomain`] that holds one counter shard of its own while it lives.
///
/// Blocks are the domain's: one allocated through the handle may be freed through the domain
/// (or another handle of it) and the other way round, on any thread. The figures are the
/// domain's too ([`usage`](Self::usage) is the domain's), with the sharded mode's meaning.
/// A handle holds one of the process's [`THREAD_SLOTS`](super::THREAD_SLOTS) slots until it is
/// dropped: threads and handles share them, and a thread that finds none falls back to the
/// slower shared shard.
///
/// # Examples
/// ```
/// use ludus::memory::{AllocationDomain, AllocationLayout};
/// let d = AllocationDomain::register("doc/bound").unwrap();
/// let bound = d.bind().unwrap();
/// let l = AllocationLayout::new(64, 8).unwrap();
/// let p = bound.try_allocate(l).unwrap();
/// assert_eq!(d.usage().live_bytes, 64);
/// // SAFETY: `p` came from `d` (through `bound`) with layout `l`.
/// unsafe { d.free(p, l) };
/// assert_eq!(d.usage().live_bytes, 0);
/// ```
///
/// A handle may move to another thread, but not be shared between threads:
/// ```
/// fn moves<T: Send>(_: T) {}
/// moves(ludus::memory::AllocationDomain::core().bind().unwrap());
/// ```
/// ```compile_fail
/// fn shared<T: Sync>(_: &T) {}
/// shared(&ludus::memory::AllocationDomain::core().bind().unwrap()); // not `Sync`
/// ```
#[derive(Debug)]
pub struct BoundDomain<'d> {
    domain: &'d AllocationDomain,
    writer: ShardWriter<'d>,
    /// Keeps `writer`'s shard exclusive to this handle until it is dropped.
    _lease: SlotLease<'d>,
    /// `!Sync`: two threads writing one shard at once would lose updates.
    _not_sync: PhantomData<Cell<()>>,
}

/// Why [`AllocationDomain::bind`] gave no handle. Nothing was leased; the domain's own byte API
/// works as before.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum BindError {
    /// The domain keeps exact counters: there are no shards to bind.
    #[error("the domain keeps exact counters: no shard to bind")]
    ExactMode,
    /// Every one of the process's thread slots is held by a thread or another handle.
    #[error("every thread slot is leased")]
    NoFreeSlot,
}

impl AllocationDomain {
    /// A handle whose allocations and frees skip the per-call search for the calling thread's
    /// counter shard (see [`BoundDomain`]). It leases a slot from the process's thread slots
    /// until it is dropped.
    ///
    /// # Errors
    /// [`BindError::ExactMode`] for a domain with exact counters, [`BindError::NoFreeSlot`]
    /// when every thread slot is held; nothing is leased.
    #[cfg(not(loom))]
    pub fn bind(&self) -> Result<BoundDomain<'_>, BindError> {
        self.bind_with(super::shards::process_slots())
    }

    /// Loom: [`bind`](Self::bind) with a lease from `slots` (the process's registry is a
    /// `static`, which loom cannot model).
    ///
    /// # Errors
    /// As [`bind`](Self::bind).
    #[cfg(loom)]
    pub fn bind_in<'d>(&'d self, slots: &'d ThreadSlots) -> Result<BoundDomain<'d>, BindError> {
        self.bind_with(slots)
    }

    fn bind_with<'d>(&'d self, slots: &'d ThreadSlots) -> Result<BoundDomain<'d>, BindError> {
        let sharded = self.counters().sharded().ok_or(BindError::ExactMode)?;
        let lease = slots.claim().ok_or(BindError::NoFreeSlot)?;
        // `claim` hands out indices below `THREAD_SLOTS`, each of which has a shard.
        let writer = sharded.writer(lease.index()).ok_or(BindError::NoFreeSlot)?;
        Ok(BoundDomain {
            domain: self,
            writer,
            _lease: lease,
            _not_sync: PhantomData,
        })
    }
}

impl<'d> BoundDomain<'d> {
    /// The domain this handle allocates from and charges.
    pub fn domain(&self) -> &'d AllocationDomain {
        self.domain
    }

    /// The domain's figures ([`AllocationDomain::usage`]).
    pub fn usage(&self) -> MemoryUsage {
        self.domain.usage()
    }

    /// [`AllocationDomain::try_allocate`], charged to this handle's shard.
    ///
    /// # Errors
    /// [`AllocFailed`] when the backend refuses; only the domain's `failures` is counted.
    #[inline(always)]
    pub fn try_allocate(
        &self,
        layout: AllocationLayout,
    ) -> Result<Option<NonNull<u8>>, AllocFailed> {
        self.domain.allocate_charged(layout, self.writer)
    }

    /// [`AllocationDomain::free`], charged to this handle's shard.
    ///
    /// # Safety
    /// A `Some` pointer was returned by this domain (through any handle, or the domain itself)
    /// with exactly `layout`, has not been freed, and is not used afterwards.
    #[inline(always)]
    pub unsafe fn free(&self, ptr: Option<NonNull<u8>>, layout: AllocationLayout) {
        // SAFETY: forwarded caller contract (the handle's domain is the block's).
        unsafe { self.domain.free_charged(ptr, layout, self.writer) }
    }

    /// [`AllocationDomain::try_reallocate`], charged to this handle's shard.
    ///
    /// # Errors
    /// As [`AllocationDomain::try_reallocate`]: nothing changes but the domain's `failures`.
    ///
    /// # Safety
    /// As for [`free`](Self::free): a `Some` block belongs to this domain with layout `old`.
    pub unsafe fn try_reallocate(
        &self,
        ptr: &mut Option<NonNull<u8>>,
        old: AllocationLayout,
        new_size: usize,
    ) -> Result<(), ResizeError> {
        // SAFETY: forwarded caller contract.
        unsafe {
            self.domain
                .reallocate_charged(ptr, old, new_size, self.writer)
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::memory::charge::Charge as _;
    use crate::memory::{Backend, CounterMode, THREAD_SLOTS};

    fn domain(mode: CounterMode) -> AllocationDomain {
        AllocationDomain::with_mode("test/bound", Backend::System, mode).unwrap()
    }

    #[test]
    fn a_bound_handle_charges_the_domain() {
        let d = domain(CounterMode::Sharded);
        let b = d.bind().unwrap();
        let l = AllocationLayout::new(40, 8).unwrap();
        let p = b.try_allocate(l).unwrap();
        let mut q = d.try_allocate(l).unwrap();
        // SAFETY: `q` is `d`'s block with layout `l`.
        unsafe { b.try_reallocate(&mut q, l, 100) }.unwrap();
        let u = d.usage();
        assert_eq!((u.live_bytes, u.live_blocks, u.reallocations), (140, 2, 1));
        // Blocks cross between the handle and the domain.
        // SAFETY: `p` is `d`'s block with layout `l`, `q` with `l` resized to 100.
        unsafe {
            d.free(p, l);
            b.free(q, l.with_size(100).unwrap());
        }
        let u = b.usage();
        assert_eq!((u.live_bytes, u.live_blocks), (0, 0));
        assert_eq!((u.allocations, u.frees), (2, 2));
        assert_eq!((u.allocated_bytes, u.freed_bytes), (140, 140));
        assert_eq!(
            u.high_water_bytes, 140,
            "one thread: the bound is the true peak"
        );
        assert!(u.valid);
    }

    #[test]
    fn bind_refuses_exact_domains_and_a_full_registry() {
        let exact = domain(CounterMode::Exact);
        assert_eq!(exact.bind().err(), Some(BindError::ExactMode));
        let slots = ThreadSlots::new();
        let d = domain(CounterMode::Sharded);
        let handles: Vec<_> = (0..THREAD_SLOTS)
            .map(|_| d.bind_with(&slots).unwrap())
            .collect();
        assert_eq!(d.bind_with(&slots).err(), Some(BindError::NoFreeSlot));
        let l = AllocationLayout::new(8, 8).unwrap();
        let p = handles[7].try_allocate(l).unwrap();
        // SAFETY: `p` is `d`'s block with layout `l`.
        unsafe { handles[3].free(p, l) };
        drop(handles);
        assert!(d.bind_with(&slots).is_ok(), "released at drop");
        let u = d.usage();
        assert_eq!((u.live_bytes, u.allocations, u.frees), (0, 1, 1));
        assert!(u.valid);
    }

    #[test]
    fn a_shard_wrap_through_a_handle_is_sticky() {
        let d = domain(CounterMode::Sharded);
        let b = d.bind().unwrap();
        // The shard's byte figure is pushed to the edge without a real block of that size.
        let huge = isize::MAX as usize;
        b.writer.on_allocate(huge);
        b.writer.on_allocate(huge);
        b.writer.on_free(huge);
        b.writer.on_free(huge);
        assert!(d.usage().valid);
        let l = AllocationLayout::new(4, 4).unwrap();
        let p = b.try_allocate(l).unwrap(); // `allocated` passes u64::MAX at the shard
                                            // SAFETY: `p` is `d`'s block with layout `l`.
        unsafe { b.free(p, l) };
        assert!(!d.usage().valid);
    }

    #[test]
    fn a_moved_handle_keeps_charging() {
        let d = domain(CounterMode::Sharded);
        let b = d.bind().unwrap();
        let l = AllocationLayout::new(24, 8).unwrap();
        let p = SendPtr(b.try_allocate(l).unwrap().unwrap());
        std::thread::scope(|s| {
            s.spawn(move || {
                let p = p;
                // SAFETY: the block is `d`'s with layout `l`, handed to this thread.
                unsafe { b.free(Some(p.0), l) };
            });
        });
        let u = d.usage();
        assert_eq!((u.live_bytes, u.allocations, u.frees), (0, 1, 1));
        assert!(u.valid);
    }

    /// A block crossing threads (raw pointers are not `Send`).
    struct SendPtr(NonNull<u8>);
    // SAFETY: the block is owned by whoever holds the wrapper; nothing else touches it.
    unsafe impl Send for SendPtr {}
}
