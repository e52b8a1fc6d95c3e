//! Per-domain counters: [`CounterMode::Sharded`] (the default: per-thread shards, see
//! `shards.rs`) or [`CounterMode::Exact`] (one set of relaxed atomics, described here), both with
//! checked updates and a sticky invalid flag.
//!
//! Every update is one `fetch_add`/`fetch_sub` whose previous value tells whether it wrapped;
//! a wrap sets `invalid`, which nothing ever clears, so a figure that went out of range can never
//! come back looking exact.
//!
//! Each lock-prefixed read-modify-write costs on every allocation, so only independent figures
//! are stored: an allocation touches `live_bytes` and `allocations` (plus a plain load of
//! `high_water`), a free `live_bytes`, `frees` and `freed_bytes`. The rest is derived when read:
//! `live_blocks = allocations - frees` and `allocated_bytes = live_bytes + freed_bytes`.
//! Figures read while other threads allocate are samples (several fields are not one atomic
//! snapshot; a derived figure is clamped at zero rather than reported negative); at quiescence
//! they are exact.

use super::charge::Charge;
#[cfg(loom)]
use super::shards::SlotLease;
use super::shards::{current_slot, ShardedCounters};
use super::usage::{CounterMode, MemoryUsage, ZERO};
use crate::sync::{
    AtomicBool, AtomicU64, AtomicUsize, Ordering::Acquire, Ordering::Relaxed, Ordering::Release,
};

/// A domain's counters in either [`CounterMode`].
///
/// Figures read while other threads allocate are samples; at quiescence they are exact.
#[derive(Debug)]
pub struct DomainCounters(Counters);

// Inline, not boxed: domains are process-lifetime statics, and a box would put a pointer chase
// on every allocation. An exact domain carries the unused shard array (~8 KiB).
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
enum Counters {
    Exact(ExactCounters),
    Sharded(ShardedCounters),
}

impl DomainCounters {
    /// All zero, valid.
    #[cfg(not(loom))]
    pub const fn new(mode: CounterMode) -> Self {
        Self(match mode {
            CounterMode::Exact => Counters::Exact(ExactCounters::new()),
            CounterMode::Sharded => Counters::Sharded(ShardedCounters::new()),
        })
    }

    /// All zero, valid (loom atomics are not `const`).
    #[cfg(loom)]
    pub fn new(mode: CounterMode) -> Self {
        Self(match mode {
            CounterMode::Exact => Counters::Exact(ExactCounters::new()),
            CounterMode::Sharded => Counters::Sharded(ShardedCounters::new()),
        })
    }

    /// Counters in `start.mode` starting from injected figures: near-limit tests without
    /// impossible sizes. `live_blocks` and `allocated_bytes` are derived, so they are not
    /// injected: they follow from `allocations - frees` and `live_bytes + freed_bytes`.
    pub fn with_start(start: MemoryUsage) -> Self {
        Self(match start.mode {
            CounterMode::Exact => Counters::Exact(ExactCounters::with_start(start)),
            CounterMode::Sharded => Counters::Sharded(ShardedCounters::with_start(start)),
        })
    }

    /// The sharded counters, `None` in exact mode.
    #[inline(always)]
    pub(crate) fn sharded(&self) -> Option<&ShardedCounters> {
        match &self.0 {
            Counters::Exact(_) => None,
            Counters::Sharded(c) => Some(c),
        }
    }

    /// The mode chosen at construction.
    pub fn mode(&self) -> CounterMode {
        match self.0 {
            Counters::Exact(_) => CounterMode::Exact,
            Counters::Sharded(_) => CounterMode::Sharded,
        }
    }

    /// Records a successful nonzero allocation of `size` bytes by the calling thread.
    #[inline(always)] // the byte API's hot path
    pub fn on_allocate(&self, size: usize) {
        match &self.0 {
            Counters::Exact(c) => c.on_allocate(size),
            Counters::Sharded(c) => c.on_allocate_at(current_slot(), size),
        }
    }

    /// Records a free of a nonzero block of `size` bytes by the calling thread (any thread:
    /// the domain's totals do not depend on which thread allocated it).
    #[inline(always)] // the byte API's hot path
    pub fn on_free(&self, size: usize) {
        match &self.0 {
            Counters::Exact(c) => c.on_free(size),
            Counters::Sharded(c) => c.on_free_at(current_slot(), size),
        }
    }

    /// Records a successful resize `old -> new` of one live block (both nonzero).
    #[inline]
    pub fn on_resize(&self, old: usize, new: usize) {
        match &self.0 {
            Counters::Exact(c) => c.on_resize(old, new),
            Counters::Sharded(c) => c.on_resize_at(current_slot(), old, new),
        }
    }

    /// Records a refused request.
    #[inline]
    pub fn on_failure(&self) {
        match &self.0 {
            Counters::Exact(c) => c.on_failure(),
            Counters::Sharded(c) => c.on_failure(),
        }
    }

    /// The current figures. Concurrent readers get samples (several fields are not one atomic
    /// snapshot); at quiescence they are exact. In sharded mode a sample's live figures are
    /// never negative for a correct caller, and a read that finds a total out of range marks
    /// the counters invalid for good.
    pub fn usage(&self) -> MemoryUsage {
        match &self.0 {
            Counters::Exact(c) => c.usage(),
            Counters::Sharded(c) => c.usage(),
        }
    }

    /// Loom: an allocation charged to `lease`'s shard (the process's thread registry, which
    /// picks the slot outside loom, is a `static` that loom cannot model).
    #[cfg(loom)]
    pub fn on_allocate_leased(&self, lease: &SlotLease<'_>, size: usize) {
        match &self.0 {
            Counters::Exact(c) => c.on_allocate(size),
            Counters::Sharded(c) => c.on_allocate_at(lease.index(), size),
        }
    }

    /// Loom: a free charged to `lease`'s shard.
    #[cfg(loom)]
    pub fn on_free_leased(&self, lease: &SlotLease<'_>, size: usize) {
        match &self.0 {
            Counters::Exact(c) => c.on_free(size),
            Counters::Sharded(c) => c.on_free_at(lease.index(), size),
        }
    }
}

impl Charge for &DomainCounters {
    #[inline(always)]
    fn on_allocate(self, size: usize) {
        DomainCounters::on_allocate(self, size);
    }
    #[inline(always)]
    fn on_free(self, size: usize) {
        DomainCounters::on_free(self, size);
    }
    #[inline(always)]
    fn on_resize(self, old: usize, new: usize) {
        DomainCounters::on_resize(self, old, new);
    }
}

/// The exact mode's storage: one relaxed atomic per stored figure.
#[derive(Debug)]
struct ExactCounters {
    live_bytes: AtomicUsize,
    high_water: AtomicUsize,
    allocations: AtomicU64,
    frees: AtomicU64,
    freed_bytes: AtomicU64,
    reallocations: AtomicU64,
    failures: AtomicU64,
    /// Sticky: set by the first wrap, never cleared.
    invalid: AtomicBool,
}

/// Injected figures map onto the stored ones; `live_blocks` and `allocated_bytes` follow from
/// them (`with_start` documents how).
macro_rules! counters_from {
    ($s:expr) => {
        ExactCounters {
            live_bytes: AtomicUsize::new($s.live_bytes),
            high_water: AtomicUsize::new($s.high_water_bytes),
            allocations: AtomicU64::new($s.allocations),
            frees: AtomicU64::new($s.frees),
            freed_bytes: AtomicU64::new($s.freed_bytes),
            reallocations: AtomicU64::new($s.reallocations),
            failures: AtomicU64::new($s.failures),
            invalid: AtomicBool::new(!$s.valid),
        }
    };
}

impl ExactCounters {
    /// All zero, valid.
    #[cfg(not(loom))]
    pub const fn new() -> Self {
        counters_from!(ZERO)
    }

    /// All zero, valid (loom atomics are not `const`).
    #[cfg(loom)]
    pub fn new() -> Self {
        counters_from!(ZERO)
    }

    fn with_start(start: MemoryUsage) -> Self {
        counters_from!(start)
    }

    #[inline]
    fn add_usize(&self, c: &AtomicUsize, n: usize) -> usize {
        let prev = c.fetch_add(n, Relaxed);
        let (next, wrapped) = prev.overflowing_add(n);
        if wrapped {
            self.invalidate();
        }
        next
    }

    #[inline]
    fn sub_usize(&self, c: &AtomicUsize, n: usize) {
        if c.fetch_sub(n, Relaxed) < n {
            self.invalidate();
        }
    }

    #[inline]
    fn add_u64(&self, c: &AtomicU64, n: u64) {
        if c.fetch_add(n, Relaxed).checked_add(n).is_none() {
            self.invalidate();
        }
    }

    #[inline]
    fn raise_high_water(&self, live: usize) {
        if live > self.high_water.load(Relaxed) {
            self.high_water.fetch_max(live, Relaxed);
        }
    }

    /// Sets the sticky invalid flag.
    #[cold]
    pub(crate) fn invalidate(&self) {
        self.invalid.store(true, Relaxed);
    }

    /// Records a successful nonzero allocation of `size` bytes.
    #[inline]
    pub fn on_allocate(&self, size: usize) {
        let live = self.add_usize(&self.live_bytes, size);
        self.raise_high_water(live);
        self.add_u64(&self.allocations, 1);
    }

    /// Records a free of a nonzero block of `size` bytes.
    #[inline]
    pub fn on_free(&self, size: usize) {
        self.sub_usize(&self.live_bytes, size);
        // Release: a reader that sees this free (Acquire, in `usage`) sees the allocation
        // that happened before it, so a sample never counts more frees than allocations.
        if self.frees.fetch_add(1, Release) == u64::MAX {
            self.invalidate();
        }
        self.add_u64(&self.freed_bytes, size as u64);
    }

    /// Records a successful resize `old -> new` of one live block (both nonzero).
    #[inline]
    pub fn on_resize(&self, old: usize, new: usize) {
        if new >= old {
            let live = self.add_usize(&self.live_bytes, new - old);
            self.raise_high_water(live);
        } else {
            let shrink = old - new;
            self.sub_usize(&self.live_bytes, shrink);
            self.add_u64(&self.freed_bytes, shrink as u64);
        }
        self.add_u64(&self.reallocations, 1);
    }

    /// Records a refused request.
    #[inline]
    pub fn on_failure(&self) {
        self.add_u64(&self.failures, 1);
    }

    /// The current figures. `valid` is read last, so a wrap that happened before the figures
    /// were read on this thread is reported; concurrent readers get samples.
    pub fn usage(&self) -> MemoryUsage {
        let frees = self.frees.load(Acquire);
        let freed_bytes = self.freed_bytes.load(Relaxed);
        let live_bytes = self.live_bytes.load(Relaxed);
        let allocations = self.allocations.load(Relaxed);
        // Allocated bytes beyond `u64::MAX`, or more frees than allocations (frees are read
        // first, with Acquire: no concurrent sample can see a free without its allocation),
        // are figures out of range: sticky invalid, as in sharded mode.
        let allocated = (live_bytes as u64).checked_add(freed_bytes);
        if allocated.is_none() || allocations < frees {
            self.invalidate();
        }
        let mut u = MemoryUsage {
            live_bytes,
            live_blocks: usize::try_from(allocations.saturating_sub(frees)).unwrap_or(usize::MAX),
            // A sample can fall between an allocation's live add and its high-water raise:
            // the live figure it read is a peak already reached.
            high_water_bytes: self.high_water.load(Relaxed).max(live_bytes),
            allocations,
            frees,
            allocated_bytes: allocated.unwrap_or(u64::MAX),
            freed_bytes,
            reallocations: self.reallocations.load(Relaxed),
            failures: self.failures.load(Relaxed),
            valid: true,
            mode: CounterMode::Exact,
        };
        u.valid = !self.invalid.load(Relaxed);
        u
    }
}

#[cfg(not(loom))]
impl Default for DomainCounters {
    /// Sharded, all zero.
    fn default() -> Self {
        Self::new(CounterMode::Sharded)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    const MODES: [CounterMode; 2] = [CounterMode::Exact, CounterMode::Sharded];

    #[test]
    fn allocate_free_reconcile() {
        for mode in MODES {
            let c = DomainCounters::new(mode);
            c.on_allocate(10);
            c.on_allocate(30);
            c.on_free(10);
            c.on_resize(30, 50);
            c.on_resize(50, 20);
            let u = c.usage();
            assert_eq!(
                (u.live_bytes, u.live_blocks, u.high_water_bytes),
                (20, 1, 50)
            );
            assert_eq!((u.allocations, u.frees, u.reallocations), (2, 1, 2));
            assert_eq!(u.allocated_bytes - u.freed_bytes, u.live_bytes as u64);
            assert!(u.valid);
        }
    }

    #[test]
    fn live_bytes_overflow_is_sticky() {
        for mode in MODES {
            let c = DomainCounters::with_start(MemoryUsage {
                mode,
                live_bytes: usize::MAX - 4,
                live_blocks: 1,
                high_water_bytes: usize::MAX - 4,
                ..ZERO
            });
            c.on_allocate(4);
            assert!(c.usage().valid, "exactly at the limit is still exact");
            c.on_allocate(1);
            assert!(!c.usage().valid);
            // Undoing the arithmetic does not restore validity.
            c.on_free(1);
            c.on_free(4);
            assert!(!c.usage().valid);
        }
    }

    #[test]
    fn underflow_is_sticky() {
        for mode in MODES {
            let c = DomainCounters::new(mode);
            c.on_allocate(8);
            c.on_free(16);
            assert!(!c.usage().valid);
            c.on_allocate(8);
            assert!(!c.usage().valid);
        }
    }

    #[test]
    fn traffic_overflow_invalidates() {
        for mode in MODES {
            let c = DomainCounters::with_start(MemoryUsage {
                mode,
                allocations: u64::MAX,
                ..ZERO
            });
            c.on_allocate(2);
            assert!(!c.usage().valid, "allocation count wrapped");
            for start in [
                MemoryUsage {
                    mode,
                    live_bytes: 2,
                    allocations: 1,
                    freed_bytes: u64::MAX - 1,
                    ..ZERO
                },
                MemoryUsage {
                    mode,
                    live_bytes: 2,
                    allocations: 1,
                    frees: u64::MAX,
                    ..ZERO
                },
            ] {
                let c = DomainCounters::with_start(start);
                c.on_free(2);
                assert!(!c.usage().valid, "{start:?}");
            }
            let c = DomainCounters::with_start(MemoryUsage {
                mode,
                failures: u64::MAX,
                ..ZERO
            });
            c.on_failure();
            assert!(!c.usage().valid);
            let c = DomainCounters::with_start(MemoryUsage {
                mode,
                reallocations: u64::MAX,
                live_bytes: 1,
                live_blocks: 1,
                ..ZERO
            });
            c.on_resize(1, 2);
            assert!(!c.usage().valid);
        }
    }

    #[test]
    fn injected_invalid_start_stays_invalid() {
        for mode in MODES {
            let c = DomainCounters::with_start(MemoryUsage {
                mode,
                valid: false,
                ..ZERO
            });
            c.on_allocate(1);
            c.on_free(1);
            assert!(!c.usage().valid);
        }
    }
}
