//! Per-domain counters: relaxed atomics with checked updates and a sticky invalid flag.
//!
//! Every update is one `fetch_add`/`fetch_sub` whose previous value tells whether it wrapped;
//! a wrap sets `invalid`, which nothing ever clears, so a figure that went out of range can never
//! come back looking exact. Figures read while other threads allocate are samples (several
//! fields are not one atomic snapshot); at quiescence they reconcile exactly:
//! `live_bytes == allocated_bytes - freed_bytes` and `live_blocks == allocations - frees`.

use crate::sync::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed};

/// A domain's figures with their validity. Bytes are requested bytes (not backend usable size).
///
/// A resize is one logical record: it counts in `reallocations`, and its growth (or shrink)
/// counts in `allocated_bytes` (or `freed_bytes`); block counts do not move.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MemoryUsage {
    /// Requested bytes currently live.
    pub live_bytes: usize,
    /// Nonzero blocks currently live.
    pub live_blocks: usize,
    /// Highest `live_bytes` ever reached.
    pub high_water_bytes: usize,
    /// Successful nonzero allocations.
    pub allocations: u64,
    /// Frees of nonzero blocks.
    pub frees: u64,
    /// Bytes handed out (allocations plus resize growth).
    pub allocated_bytes: u64,
    /// Bytes handed back (frees plus resize shrink).
    pub freed_bytes: u64,
    /// Successful resizes that changed the size.
    pub reallocations: u64,
    /// Refused allocation or resize requests.
    pub failures: u64,
    /// `false` once any counter overflowed or underflowed; sticky.
    pub valid: bool,
}

/// The atomic storage behind [`MemoryUsage`].
#[derive(Debug)]
pub struct DomainCounters {
    live_bytes: AtomicUsize,
    live_blocks: AtomicUsize,
    high_water: AtomicUsize,
    allocations: AtomicU64,
    frees: AtomicU64,
    allocated_bytes: AtomicU64,
    freed_bytes: AtomicU64,
    reallocations: AtomicU64,
    failures: AtomicU64,
    /// Sticky: set by the first wrap, never cleared.
    invalid: AtomicBool,
}

macro_rules! counters_from {
    ($s:expr) => {
        DomainCounters {
            live_bytes: AtomicUsize::new($s.live_bytes),
            live_blocks: AtomicUsize::new($s.live_blocks),
            high_water: AtomicUsize::new($s.high_water_bytes),
            allocations: AtomicU64::new($s.allocations),
            frees: AtomicU64::new($s.frees),
            allocated_bytes: AtomicU64::new($s.allocated_bytes),
            freed_bytes: AtomicU64::new($s.freed_bytes),
            reallocations: AtomicU64::new($s.reallocations),
            failures: AtomicU64::new($s.failures),
            invalid: AtomicBool::new(!$s.valid),
        }
    };
}

const ZERO: MemoryUsage = MemoryUsage {
    live_bytes: 0,
    live_blocks: 0,
    high_water_bytes: 0,
    allocations: 0,
    frees: 0,
    allocated_bytes: 0,
    freed_bytes: 0,
    reallocations: 0,
    failures: 0,
    valid: true,
};

impl DomainCounters {
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

    /// Counters starting from injected figures: near-limit tests without impossible sizes.
    pub fn with_start(start: MemoryUsage) -> Self {
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
        self.add_usize(&self.live_blocks, 1);
        self.add_u64(&self.allocations, 1);
        self.add_u64(&self.allocated_bytes, size as u64);
    }

    /// Records a free of a nonzero block of `size` bytes.
    #[inline]
    pub fn on_free(&self, size: usize) {
        self.sub_usize(&self.live_bytes, size);
        self.sub_usize(&self.live_blocks, 1);
        self.add_u64(&self.frees, 1);
        self.add_u64(&self.freed_bytes, size as u64);
    }

    /// Records a successful resize `old -> new` of one live block (both nonzero).
    #[inline]
    pub fn on_resize(&self, old: usize, new: usize) {
        if new >= old {
            let grow = new - old;
            let live = self.add_usize(&self.live_bytes, grow);
            self.raise_high_water(live);
            self.add_u64(&self.allocated_bytes, grow as u64);
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
        let mut u = MemoryUsage {
            live_bytes: self.live_bytes.load(Relaxed),
            live_blocks: self.live_blocks.load(Relaxed),
            high_water_bytes: self.high_water.load(Relaxed),
            allocations: self.allocations.load(Relaxed),
            frees: self.frees.load(Relaxed),
            allocated_bytes: self.allocated_bytes.load(Relaxed),
            freed_bytes: self.freed_bytes.load(Relaxed),
            reallocations: self.reallocations.load(Relaxed),
            failures: self.failures.load(Relaxed),
            valid: true,
        };
        u.valid = !self.invalid.load(Relaxed);
        u
    }
}

#[cfg(not(loom))]
impl Default for DomainCounters {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn allocate_free_reconcile() {
        let c = DomainCounters::new();
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

    #[test]
    fn live_bytes_overflow_is_sticky() {
        let c = DomainCounters::with_start(MemoryUsage {
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

    #[test]
    fn underflow_is_sticky() {
        let c = DomainCounters::new();
        c.on_allocate(8);
        c.on_free(16);
        assert!(!c.usage().valid);
        c.on_allocate(8);
        assert!(!c.usage().valid);
    }

    #[test]
    fn traffic_overflow_invalidates() {
        for start in [
            MemoryUsage {
                allocations: u64::MAX,
                ..ZERO
            },
            MemoryUsage {
                allocated_bytes: u64::MAX - 1,
                ..ZERO
            },
        ] {
            let c = DomainCounters::with_start(start);
            c.on_allocate(2);
            assert!(!c.usage().valid, "{start:?}");
        }
        let c = DomainCounters::with_start(MemoryUsage {
            failures: u64::MAX,
            ..ZERO
        });
        c.on_failure();
        assert!(!c.usage().valid);
        let c = DomainCounters::with_start(MemoryUsage {
            reallocations: u64::MAX,
            live_bytes: 1,
            live_blocks: 1,
            ..ZERO
        });
        c.on_resize(1, 2);
        assert!(!c.usage().valid);
    }

    #[test]
    fn injected_invalid_start_stays_invalid() {
        let c = DomainCounters::with_start(MemoryUsage {
            valid: false,
            ..ZERO
        });
        c.on_allocate(1);
        c.on_free(1);
        assert!(!c.usage().valid);
    }
}
