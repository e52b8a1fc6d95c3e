//! Counter modes at the edges of their figures: the same history through exact and sharded
//! counters (a shard's net bytes past `i64::MAX`, an allocated total past `u64::MAX`, more block
//! frees than allocations) keeps each mode's promise: sharded high-water never below the true
//! peak, an unrepresentable total flagged invalid, and both modes agreeing on validity.

use ludus::memory::{CounterMode, DomainCounters, MemoryUsage};

/// The same history through an exact and a sharded counter set: (exact, sharded).
fn both(f: impl Fn(&DomainCounters) -> MemoryUsage) -> (MemoryUsage, MemoryUsage) {
    let e = DomainCounters::new(CounterMode::Exact);
    let s = DomainCounters::new(CounterMode::Sharded);
    (f(&e), f(&s))
}

/// A shard whose net bytes pass `i64::MAX` (two live blocks of `isize::MAX` bytes, each a valid
/// layout size) must still raise its peak: once the blocks are freed, the sharded high-water is
/// never below the true peak, which exact mode reports.
#[test]
fn sharded_high_water_is_never_below_the_true_peak() {
    let huge = isize::MAX as usize;
    let (e, s) = both(|c| {
        c.on_allocate(huge);
        c.on_allocate(huge);
        c.on_free(huge);
        c.on_free(huge);
        c.usage()
    });
    assert!(e.valid && s.valid);
    assert_eq!(e.high_water_bytes, 2 * huge);
    assert!(
        s.high_water_bytes >= e.high_water_bytes,
        "sharded high-water {} below the true peak {}",
        s.high_water_bytes,
        e.high_water_bytes
    );
}

/// A true allocated total past `u64::MAX` is flagged invalid in both modes (exact mode derives
/// `allocated_bytes = live_bytes + freed_bytes`: a saturating add there would report a wrong
/// figure as valid).
#[test]
fn exact_allocated_bytes_overflow_is_flagged() {
    for mode in [CounterMode::Exact, CounterMode::Sharded] {
        let c = DomainCounters::with_start(MemoryUsage {
            mode,
            freed_bytes: u64::MAX - 1,
            frees: 1,
            allocations: 1,
            ..MemoryUsage::default()
        });
        c.on_allocate(10);
        let u = c.usage();
        // The true allocated total is 2^64 + 8: not representable.
        assert!(
            !u.valid,
            "{mode:?}: allocated_bytes {} reported valid (true total 2^64+8)",
            u.allocated_bytes
        );
    }
}

/// An excess block free (more frees than allocations, bytes still covered) is seen alike by both
/// modes: sharded mode's `live_blocks` goes below zero, and exact mode must not clamp it at zero
/// and stay valid.
#[test]
fn excess_block_frees_agree_across_modes() {
    let (e, s) = both(|c| {
        c.on_allocate(16);
        c.on_free(8);
        c.on_free(8);
        c.usage()
    });
    assert_eq!(
        e.valid,
        s.valid,
        "exact {:?} vs sharded {:?} on the same history",
        (e.live_blocks, e.valid),
        (s.live_blocks, s.valid)
    );
}
