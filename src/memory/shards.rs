//! Sharded counters: one cache-padded shard per thread slot, written by its owner alone.
//!
//! ```text
//! ThreadSlots (process-wide)     bit i set  <=>  slot i is leased to one live thread
//! ShardedCounters (per domain)   shards[i]  written only by the thread holding slot i
//!                                shared     RMW fallback: no slot (registry full, TLS torn down)
//! ```
//!
//! Every figure a shard holds is monotone (`allocated`, `freed`, `allocations`, `frees`,
//! `reallocations`), so a free charged to another thread's shard than its allocation needs no
//! signed arithmetic: the domain's live bytes are `Σ allocated − Σ freed`. The owner updates its
//! shard with a plain load and store (no lock prefix); a slot changes hands only through the
//! registry's Release (exit) / Acquire (claim) pair, so the next owner continues from the last
//! value. A slot's figures outlive its thread: they belong to the domain.
//!
//! Reads sum the shards. Frees store with Release and a read loads every `frees`/`freed`
//! (Acquire) before any `allocations`/`allocated`: a free that a read sees happened after its
//! block's allocation (the pointer was handed over), so the read sees that allocation too and a
//! sample's live figures are never negative for a correct caller. A read that finds a total out
//! of range (a traffic total above `u64::MAX`, live below zero or above `usize::MAX`) has proof of
//! a wrap and sets the sticky invalid flag; a shard's own byte wrap is caught at its update.
//!
//! What sharding weakens, and nothing else: (1) high-water is a bound (below); (2) an excess
//! free (more bytes freed than allocated, which only a broken `free` contract or a direct
//! `on_free` call can cause) is caught by the first read that sees it — if allocations make up
//! the deficit before any read, it goes unseen. Overflow cannot hide: traffic totals only rise,
//! so a total that passed `u64::MAX` stays above it in every later read.
//!
//! High-water: no thread sees the sum while it allocates, so the sharded peak is the upper bound
//! `Σ max(live_i)` — each shard tracks the highest `allocated_i − freed_i` it reached. The true
//! peak is never above it; it overstates the peak when blocks are freed on other threads than
//! their allocator's (a producer's shard only ever rises).

use super::charge::Charge;
use super::usage::{CounterMode, MemoryUsage};
use crate::sync::{AtomicBool, AtomicU64, Ordering::Acquire, Ordering::Relaxed, Ordering::Release};

/// Thread slots, and so shards per domain. Threads beyond it share one RMW shard.
#[cfg(not(loom))]
pub const THREAD_SLOTS: usize = 64;
/// Thread slots, and so shards per domain (small under loom to keep models fast).
#[cfg(loom)]
pub const THREAD_SLOTS: usize = 2;

const _: () = assert!(THREAD_SLOTS <= 64, "one bitmap word");

/// The process's thread-slot leases: bit `i` set iff slot `i` is held by a live thread.
#[derive(Debug)]
pub struct ThreadSlots {
    leased: AtomicU64,
}

/// Exclusive use of one thread slot until dropped (at thread exit for the process's slots).
#[derive(Debug)]
pub struct SlotLease<'a> {
    slots: &'a ThreadSlots,
    index: usize,
}

impl ThreadSlots {
    /// No slot leased.
    #[cfg(not(loom))]
    pub(crate) const fn new() -> Self {
        Self {
            leased: AtomicU64::new(0),
        }
    }

    /// No slot leased (loom models build their own registry: loom atomics are not `const`).
    #[cfg(loom)]
    pub fn new() -> Self {
        Self {
            leased: AtomicU64::new(0),
        }
    }

    /// Leases the lowest free slot; `None` when all are held. Acquire: the new holder sees every
    /// store the slot's previous holder made before it let go.
    pub fn claim(&self) -> Option<SlotLease<'_>> {
        let mut word = self.leased.load(Relaxed);
        loop {
            let index = (!word).trailing_zeros() as usize;
            if index >= THREAD_SLOTS {
                return None;
            }
            match self
                .leased
                .compare_exchange_weak(word, word | 1 << index, Acquire, Relaxed)
            {
                Ok(_) => return Some(SlotLease { slots: self, index }),
                Err(now) => word = now,
            }
        }
    }
}

impl SlotLease<'_> {
    /// The leased slot.
    pub fn index(&self) -> usize {
        self.index
    }
}

impl Drop for SlotLease<'_> {
    fn drop(&mut self) {
        // Release: this holder's shard stores happen before the next claim of the slot.
        self.slots.leased.fetch_and(!(1 << self.index), Release);
    }
}

/// One slot's figures. Only the slot's holder stores; anyone may load.
#[derive(Debug)]
#[repr(align(128))] // two cache lines: the adjacent-line prefetcher pairs them
struct Shard {
    allocated: AtomicU64,
    freed: AtomicU64,
    allocations: AtomicU64,
    frees: AtomicU64,
    reallocations: AtomicU64,
    /// Highest `allocated − freed` this shard reached (unsigned: a shard's live bytes may pass
    /// `i64::MAX`; a moment where its frees lead its allocations raises nothing).
    peak: AtomicU64,
}

/// Adds `n` to an owner-written counter; `true` if it wrapped.
#[inline(always)]
fn bump(c: &AtomicU64, n: u64, order: crate::sync::Ordering) -> bool {
    let (v, wrapped) = c.load(Relaxed).overflowing_add(n);
    c.store(v, order);
    wrapped
}

/// Adds one to an owner-written count. A shard's counts start at zero and rise by one per
/// call: 2^64 calls take 584 years at one per nanosecond, so their wrap is not checked. (Byte
/// figures are: one call can add any `usize`.) Injected start figures live in [`Base`] and are
/// range-checked by every read.
#[inline(always)]
fn count(c: &AtomicU64, order: crate::sync::Ordering) {
    c.store(c.load(Relaxed).wrapping_add(1), order);
}

/// A zeroed shard (one body for the `const` and the loom constructor).
macro_rules! zeroed_shard {
    () => {
        Shard {
            allocated: AtomicU64::new(0),
            freed: AtomicU64::new(0),
            allocations: AtomicU64::new(0),
            frees: AtomicU64::new(0),
            reallocations: AtomicU64::new(0),
            peak: AtomicU64::new(0),
        }
    };
}

impl Shard {
    #[cfg(not(loom))]
    const fn new() -> Self {
        zeroed_shard!()
    }

    #[cfg(loom)]
    fn new() -> Self {
        zeroed_shard!()
    }

    #[inline(always)]
    fn raise_peak(&self, allocated: u64) {
        // Both figures only rise (a wrap sets the invalid flag), so they compare unsigned.
        if let Some(live) = allocated.checked_sub(self.freed.load(Relaxed)) {
            if live > self.peak.load(Relaxed) {
                self.peak.store(live, Relaxed);
            }
        }
    }

    /// Adds `n` allocated bytes and one to `counter`; `true` if the bytes wrapped.
    #[inline(always)]
    fn grow(&self, n: u64, counter: &AtomicU64) -> bool {
        let (allocated, wrapped) = self.allocated.load(Relaxed).overflowing_add(n);
        self.allocated.store(allocated, Relaxed);
        count(counter, Relaxed);
        self.raise_peak(allocated);
        wrapped
    }

    /// Adds `n` freed bytes (Release) and one to `counter`; `true` if the bytes wrapped.
    #[inline(always)]
    fn shrink(&self, n: u64, counter: &AtomicU64, order: crate::sync::Ordering) -> bool {
        let wrapped = bump(&self.freed, n, Release);
        count(counter, order);
        wrapped
    }
}

/// The RMW fallback shard, shared by threads without a slot.
#[derive(Debug)]
#[repr(align(128))]
struct SharedShard {
    allocated: AtomicU64,
    freed: AtomicU64,
    allocations: AtomicU64,
    frees: AtomicU64,
    reallocations: AtomicU64,
}

#[inline]
fn add_shared(c: &AtomicU64, n: u64, order: crate::sync::Ordering) -> bool {
    c.fetch_add(n, order).checked_add(n).is_none()
}

/// The writer of one shard: its updates are plain loads and stores, so at most one thread may
/// use a shard's writer at a time: the holder of the shard's slot (a [`SlotLease`], held by a
/// thread in `tls` or by a [`BoundDomain`](super::BoundDomain)). A second writer at the same time
/// would lose updates (wrong figures, never undefined behaviour: every field is an atomic).
#[derive(Debug, Clone, Copy)]
pub(crate) struct ShardWriter<'a> {
    shard: &'a Shard,
    /// The domain's sticky flag, set when one of the shard's byte figures wraps.
    invalid: &'a AtomicBool,
}

impl ShardWriter<'_> {
    #[inline(always)]
    fn check(self, wrapped: bool) {
        if wrapped {
            invalidate(self.invalid);
        }
    }
}

impl Charge for ShardWriter<'_> {
    #[inline(always)]
    fn on_allocate(self, size: usize) {
        let s = self.shard;
        self.check(s.grow(size as u64, &s.allocations));
    }

    #[inline(always)]
    fn on_free(self, size: usize) {
        let s = self.shard;
        self.check(s.shrink(size as u64, &s.frees, Release));
    }

    #[inline]
    fn on_resize(self, old: usize, new: usize) {
        let s = self.shard;
        self.check(if new >= old {
            s.grow((new - old) as u64, &s.reallocations)
        } else {
            s.shrink((old - new) as u64, &s.reallocations, Relaxed)
        });
    }
}

#[cold]
fn invalidate(flag: &AtomicBool) {
    flag.store(true, Relaxed);
}

/// Injected start figures (near-limit tests), constant after construction.
#[derive(Debug, Clone, Copy)]
struct Base {
    allocated: u128,
    freed: u64,
    allocations: u64,
    frees: u64,
    reallocations: u64,
    high_water: usize,
    live: usize,
}

const NO_BASE: Base = Base {
    allocated: 0,
    freed: 0,
    allocations: 0,
    frees: 0,
    reallocations: 0,
    high_water: 0,
    live: 0,
};

/// A domain's figures as per-thread shards (see the module docs for what a read means).
#[derive(Debug)]
pub struct ShardedCounters {
    shards: [Shard; THREAD_SLOTS],
    shared: SharedShard,
    failures: AtomicU64,
    invalid: AtomicBool,
    base: Base,
}

macro_rules! sharded_new {
    ($shards:expr, $base:expr, $invalid:expr) => {
        ShardedCounters {
            shards: $shards,
            shared: SharedShard {
                allocated: AtomicU64::new(0),
                freed: AtomicU64::new(0),
                allocations: AtomicU64::new(0),
                frees: AtomicU64::new(0),
                reallocations: AtomicU64::new(0),
            },
            failures: AtomicU64::new(0),
            invalid: AtomicBool::new($invalid),
            base: $base,
        }
    };
}

impl ShardedCounters {
    /// All zero, valid.
    #[cfg(not(loom))]
    pub const fn new() -> Self {
        sharded_new!([const { Shard::new() }; THREAD_SLOTS], NO_BASE, false)
    }

    /// All zero, valid.
    #[cfg(loom)]
    pub fn new() -> Self {
        sharded_new!(core::array::from_fn(|_| Shard::new()), NO_BASE, false)
    }

    /// Counters starting from injected figures (`live_blocks`, `allocated_bytes` derived).
    pub fn with_start(s: MemoryUsage) -> Self {
        let base = Base {
            allocated: s.live_bytes as u128 + s.freed_bytes as u128,
            freed: s.freed_bytes,
            allocations: s.allocations,
            frees: s.frees,
            reallocations: s.reallocations,
            high_water: s.high_water_bytes,
            live: s.live_bytes,
        };
        let c = ShardedCounters {
            base,
            ..Self::new()
        };
        c.failures.store(s.failures, Relaxed);
        if !s.valid {
            c.invalidate();
        }
        c
    }

    fn invalidate(&self) {
        invalidate(&self.invalid);
    }

    #[inline(always)]
    fn check(&self, wrapped: bool) {
        if wrapped {
            self.invalidate();
        }
    }

    /// The writer of slot `slot`'s shard; `None` for `THREAD_SLOTS` or more (the shared one).
    /// Only the slot's holder may use it (see [`ShardWriter`]).
    #[inline(always)]
    pub(crate) fn writer(&self, slot: usize) -> Option<ShardWriter<'_>> {
        self.shards.get(slot).map(|shard| ShardWriter {
            shard,
            invalid: &self.invalid,
        })
    }

    /// Records an allocation of `size` bytes on slot `slot` (`THREAD_SLOTS` or more: shared).
    #[inline(always)]
    pub(crate) fn on_allocate_at(&self, slot: usize, size: usize) {
        match self.writer(slot) {
            Some(w) => w.on_allocate(size),
            None => self.check(
                add_shared(&self.shared.allocated, size as u64, Relaxed)
                    | add_shared(&self.shared.allocations, 1, Relaxed),
            ),
        }
    }

    /// Records a free of `size` bytes on slot `slot`.
    #[inline(always)]
    pub(crate) fn on_free_at(&self, slot: usize, size: usize) {
        match self.writer(slot) {
            Some(w) => w.on_free(size),
            None => self.check(
                add_shared(&self.shared.freed, size as u64, Release)
                    | add_shared(&self.shared.frees, 1, Release),
            ),
        }
    }

    /// Records a resize `old -> new` on slot `slot`.
    #[inline]
    pub(crate) fn on_resize_at(&self, slot: usize, old: usize, new: usize) {
        if let Some(w) = self.writer(slot) {
            return w.on_resize(old, new);
        }
        let w = match new >= old {
            true => add_shared(&self.shared.allocated, (new - old) as u64, Relaxed),
            false => add_shared(&self.shared.freed, (old - new) as u64, Release),
        };
        self.check(w | add_shared(&self.shared.reallocations, 1, Relaxed));
    }

    /// Records a refused request (rare: always the shared RMW).
    #[inline]
    pub(crate) fn on_failure(&self) {
        let w = add_shared(&self.failures, 1, Relaxed);
        self.check(w);
    }

    /// Sums the shards. Frees first (Acquire), then allocations: see the module docs.
    pub fn usage(&self) -> MemoryUsage {
        let b = &self.base;
        let (mut frees, mut freed) = (b.frees as u128, b.freed as u128);
        for s in &self.shards {
            frees += s.frees.load(Acquire) as u128;
            freed += s.freed.load(Acquire) as u128;
        }
        frees += self.shared.frees.load(Acquire) as u128;
        freed += self.shared.freed.load(Acquire) as u128;
        let (mut allocations, mut allocated) = (b.allocations as u128, b.allocated);
        let mut reallocations = b.reallocations as u128;
        let mut peaks = b.live as u128;
        for s in &self.shards {
            allocations += s.allocations.load(Relaxed) as u128;
            allocated += s.allocated.load(Relaxed) as u128;
            reallocations += s.reallocations.load(Relaxed) as u128;
            peaks += s.peak.load(Relaxed) as u128;
        }
        allocations += self.shared.allocations.load(Relaxed) as u128;
        let shared_allocated = self.shared.allocated.load(Relaxed) as u128;
        allocated += shared_allocated;
        // The shared shard keeps no peak: its whole traffic bounds its live bytes.
        peaks += shared_allocated;
        reallocations += self.shared.reallocations.load(Relaxed) as u128;
        let live = allocated.checked_sub(freed);
        let live_blocks = allocations.checked_sub(frees);
        let out_of_range = live.is_none_or(|l| l > usize::MAX as u128)
            || live_blocks.is_none()
            || [frees, freed, allocations, allocated, reallocations]
                .iter()
                .any(|&t| t > u64::MAX as u128);
        if out_of_range {
            self.invalidate();
        }
        let sat = |v: u128| u64::try_from(v).unwrap_or(u64::MAX);
        let live_bytes = live.map_or(0, |l| usize::try_from(l).unwrap_or(usize::MAX));
        let mut u = MemoryUsage {
            live_bytes,
            live_blocks: live_blocks.map_or(0, |l| usize::try_from(l).unwrap_or(usize::MAX)),
            high_water_bytes: usize::try_from(peaks)
                .unwrap_or(usize::MAX)
                .max(b.high_water)
                .max(live_bytes),
            allocations: sat(allocations),
            frees: sat(frees),
            allocated_bytes: sat(allocated),
            freed_bytes: sat(freed),
            reallocations: sat(reallocations),
            failures: self.failures.load(Relaxed),
            valid: true,
            mode: CounterMode::Sharded,
        };
        u.valid = !self.invalid.load(Relaxed);
        u
    }
}

#[cfg(not(loom))]
impl Default for ShardedCounters {
    fn default() -> Self {
        Self::new()
    }
}

/// The calling thread's slot in the process registry; `THREAD_SLOTS` when it has none.
#[cfg(not(loom))]
#[inline(always)]
pub(crate) fn current_slot() -> usize {
    let s = tls::SLOT.with(core::cell::Cell::get);
    if s < THREAD_SLOTS {
        s
    } else {
        tls::claim(s)
    }
}

/// The process's thread-slot registry: threads lease from it on their first update, and so
/// does every [`BoundDomain`](super::BoundDomain).
#[cfg(not(loom))]
pub(crate) fn process_slots() -> &'static ThreadSlots {
    &tls::PROCESS
}

/// Under loom there is no process registry: unleased updates use the shared shard.
#[cfg(loom)]
#[inline(always)]
pub(crate) fn current_slot() -> usize {
    THREAD_SLOTS
}

#[cfg(not(loom))]
mod tls {
    use core::cell::Cell;

    use super::{SlotLease, ThreadSlots, THREAD_SLOTS};

    /// Not yet asked for a slot.
    const UNCLAIMED: usize = usize::MAX;

    pub(super) static PROCESS: ThreadSlots = ThreadSlots::new();

    /// Holds the thread's lease; its destructor (at thread exit) hands the slot back.
    struct Holder(Cell<Option<SlotLease<'static>>>);

    impl Drop for Holder {
        fn drop(&mut self) {
            // Later updates on this thread (other TLS destructors) use the shared shard.
            SLOT.with(|s| s.set(THREAD_SLOTS));
            drop(self.0.take());
        }
    }

    std::thread_local! {
        /// The hot path's copy of the lease's index (`THREAD_SLOTS`: none; `UNCLAIMED`).
        pub(super) static SLOT: Cell<usize> = const { Cell::new(UNCLAIMED) };
        static HOLDER: Holder = const { Holder(Cell::new(None)) };
    }

    /// Cold: leases a slot on a thread's first update. A thread that finds the registry full,
    /// or whose TLS is being torn down, stays on the shared shard.
    #[cold]
    #[inline(never)]
    pub(super) fn claim(current: usize) -> usize {
        if current != UNCLAIMED {
            return THREAD_SLOTS;
        }
        let index = HOLDER
            .try_with(|h| match PROCESS.claim() {
                Some(lease) => {
                    let i = lease.index();
                    h.0.set(Some(lease));
                    i
                }
                None => THREAD_SLOTS,
            })
            .unwrap_or(THREAD_SLOTS);
        SLOT.with(|s| s.set(index));
        index
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn slots_are_exclusive_and_reused_after_release() {
        let r = ThreadSlots::new();
        let leases: Vec<_> = (0..THREAD_SLOTS).map(|_| r.claim().unwrap()).collect();
        let mut seen: Vec<_> = leases.iter().map(SlotLease::index).collect();
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen.len(), THREAD_SLOTS);
        assert!(r.claim().is_none(), "full");
        let mut leases = leases;
        let freed = leases.swap_remove(5).index();
        drop(leases.swap_remove(0));
        let again = r.claim().unwrap();
        assert!(again.index() == freed || again.index() < freed);
    }

    #[test]
    fn remote_frees_reconcile_across_shards() {
        let c = ShardedCounters::new();
        c.on_allocate_at(0, 100);
        c.on_allocate_at(0, 20);
        c.on_free_at(1, 100); // freed on another thread's shard
        c.on_free_at(THREAD_SLOTS, 20); // and on the shared one
        c.on_allocate_at(THREAD_SLOTS, 7);
        c.on_resize_at(1, 7, 10);
        c.on_resize_at(0, 10, 4);
        let u = c.usage();
        assert_eq!((u.live_bytes, u.live_blocks), (4, 1));
        assert_eq!((u.allocations, u.frees, u.reallocations), (3, 2, 2));
        assert_eq!((u.allocated_bytes, u.freed_bytes), (130, 126));
        assert!(u.valid);
        // Shard 0 peaked at 120, shard 1 never rose above zero (its first act freed 100), the
        // shared shard counts its 7 allocated bytes: a bound of 127 over the true peak of 120.
        assert_eq!(u.high_water_bytes, 127);
    }

    #[test]
    fn a_total_out_of_range_is_sticky() {
        let c = ShardedCounters::new();
        c.on_allocate_at(0, 8);
        c.on_free_at(1, 16);
        assert!(!c.usage().valid, "more freed than allocated");
        c.on_allocate_at(0, 8);
        assert!(!c.usage().valid, "sticky once seen");

        let c = ShardedCounters::with_start(MemoryUsage {
            allocations: u64::MAX,
            ..MemoryUsage::default()
        });
        assert!(c.usage().valid);
        c.on_allocate_at(3, 1);
        assert!(!c.usage().valid, "allocation total above u64::MAX");
        c.on_free_at(3, 1);
        assert!(!c.usage().valid);
    }

    #[test]
    fn a_shard_wrap_is_caught_at_the_update() {
        let c = ShardedCounters::new();
        c.on_allocate_at(0, usize::MAX);
        c.on_free_at(0, usize::MAX);
        assert!(c.usage().valid);
        c.on_allocate_at(0, 2); // shard 0's `allocated` wraps to 1: the read sums would look fine
        c.on_free_at(0, 2);
        assert!(!c.usage().valid);
    }

    #[test]
    fn threads_get_slots_and_their_figures_outlive_them() {
        let c = std::sync::Arc::new(ShardedCounters::new());
        for _ in 0..3 {
            let c = c.clone();
            std::thread::spawn(move || {
                let s = current_slot();
                assert!(s < THREAD_SLOTS);
                assert_eq!(current_slot(), s, "cached");
                c.on_allocate_at(s, 10);
            })
            .join()
            .unwrap();
        }
        let s = current_slot();
        c.on_free_at(s, 30);
        let u = c.usage();
        assert_eq!((u.live_bytes, u.allocations, u.frees), (0, 3, 1));
        assert!(u.valid);
    }
}
