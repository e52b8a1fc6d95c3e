//! Exact-mode domain counters under concurrency, on the crate's real `DomainCounters` through its `sync`
//! shim: traffic reconciles at quiescence, high-water is never below the serial maximum, and the
//! invalid flag stays sticky.
#![cfg(loom)]

use loom::sync::Arc;
use loom::thread;
use ludus::memory::{CounterMode, DomainCounters, MemoryUsage};
use ludus_loom_tests::model;

#[test]
fn concurrent_alloc_free_reconciles_at_quiescence() {
    model(|| {
        let c = Arc::new(DomainCounters::new(CounterMode::Exact));
        let h = {
            let c = c.clone();
            thread::spawn(move || {
                c.on_allocate(8);
                c.on_free(8);
            })
        };
        c.on_allocate(24);
        h.join().unwrap();
        let u = c.usage();
        assert_eq!((u.live_bytes, u.live_blocks), (24, 1));
        assert_eq!((u.allocations, u.frees), (2, 1));
        assert_eq!((u.allocated_bytes, u.freed_bytes), (32, 8));
        assert!(u.valid);
        // The serial orders peak at 24 or 32: never below the larger single live value.
        assert!(
            u.high_water_bytes == 24 || u.high_water_bytes == 32,
            "{u:?}"
        );
    });
}

#[test]
fn high_water_is_the_true_maximum_when_nothing_is_freed() {
    loom::model(|| {
        let c = Arc::new(DomainCounters::new(CounterMode::Exact));
        let hs: Vec<_> = [10usize, 20]
            .into_iter()
            .map(|n| {
                let c = c.clone();
                thread::spawn(move || c.on_allocate(n))
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
        // Every serial order ends at 30, which is its maximum.
        assert_eq!(c.usage().high_water_bytes, 30);
    });
}

#[test]
fn invalid_flag_is_sticky_under_races() {
    model(|| {
        // Every allocation wraps the allocation count; frees and reads race with it.
        let c = Arc::new(DomainCounters::with_start(MemoryUsage {
            live_bytes: 1,
            live_blocks: 1,
            high_water_bytes: 1,
            allocations: u64::MAX,
            allocated_bytes: 1,
            valid: true,
            mode: CounterMode::Exact,
            ..Default::default()
        }));
        let a = {
            let c = c.clone();
            thread::spawn(move || c.on_allocate(4))
        };
        let before = c.usage().valid;
        c.on_free(1);
        let after = c.usage().valid;
        // Once observed invalid, never valid again.
        assert!(before || !after);
        a.join().unwrap();
        assert!(!c.usage().valid);
    });
}

/// Exact mode: a block allocated on one thread and freed on another (handed over with
/// Release/Acquire) is never seen freed without its allocation by a concurrent read, which
/// would report more frees than allocations as a sticky invalid (the frees count is written
/// with Release and read first, with Acquire).
#[test]
fn a_remote_free_is_never_seen_without_its_allocation() {
    use loom::sync::atomic::{AtomicBool, Ordering};
    model(|| {
        let c = Arc::new(DomainCounters::new(CounterMode::Exact));
        let handed = Arc::new(AtomicBool::new(false));
        let freed = Arc::new(AtomicBool::new(false));
        let producer = {
            let (c, handed) = (c.clone(), handed.clone());
            thread::spawn(move || {
                c.on_allocate(16);
                handed.store(true, Ordering::Release);
            })
        };
        let consumer = {
            let (c, handed, freed) = (c.clone(), handed.clone(), freed.clone());
            thread::spawn(move || {
                // No spinning (it would blow up the model): free only if the block arrived.
                if handed.load(Ordering::Acquire) {
                    c.on_free(16);
                    freed.store(true, Ordering::Relaxed);
                }
            })
        };
        // As in `memory_shards.rs`: a first load of a plain store's target lets loom order the
        // read after the free.
        freed.load(Ordering::Relaxed);
        let u = c.usage();
        assert!(
            u.valid,
            "a concurrent read invalidated correct traffic: {u:?}"
        );
        producer.join().unwrap();
        consumer.join().unwrap();
        let u = c.usage();
        assert_eq!((u.allocations, u.live_blocks as u64 + u.frees), (1, 1));
        assert!(u.valid);
    });
}
