//! Domain counters under concurrency, on the crate's real `DomainCounters` through its `sync`
//! shim: traffic reconciles at quiescence, high-water is never below the serial maximum, and the
//! invalid flag stays sticky.
#![cfg(loom)]

use loom::sync::Arc;
use loom::thread;
use ludus::memory::{DomainCounters, MemoryUsage};

#[test]
fn concurrent_alloc_free_reconciles_at_quiescence() {
    loom::model(|| {
        let c = Arc::new(DomainCounters::new());
        let hs: Vec<_> = [8usize, 24]
            .into_iter()
            .map(|n| {
                let c = c.clone();
                thread::spawn(move || {
                    c.on_allocate(n);
                    c.on_free(n);
                })
            })
            .collect();
        c.on_allocate(4);
        for h in hs {
            h.join().unwrap();
        }
        let u = c.usage();
        assert_eq!((u.live_bytes, u.live_blocks), (4, 1));
        assert_eq!((u.allocations, u.frees), (3, 2));
        assert_eq!((u.allocated_bytes, u.freed_bytes), (36, 32));
        assert!(u.valid);
        // Some serial order reached 24 + (4 maybe): never below the largest single live value.
        assert!(
            u.high_water_bytes >= 24 && u.high_water_bytes <= 36,
            "{u:?}"
        );
    });
}

#[test]
fn high_water_is_the_true_maximum_when_nothing_is_freed() {
    loom::model(|| {
        let c = Arc::new(DomainCounters::new());
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
    loom::model(|| {
        let c = Arc::new(DomainCounters::with_start(MemoryUsage {
            live_bytes: usize::MAX - 1,
            live_blocks: 1,
            high_water_bytes: usize::MAX - 1,
            allocations: 1,
            allocated_bytes: 1,
            valid: true,
            ..Default::default()
        }));
        let a = {
            let c = c.clone();
            thread::spawn(move || c.on_allocate(4)) // wraps live_bytes
        };
        let b = {
            let c = c.clone();
            thread::spawn(move || {
                c.on_free(4);
                c.on_allocate(1);
            })
        };
        a.join().unwrap();
        b.join().unwrap();
        assert!(!c.usage().valid);
    });
}
