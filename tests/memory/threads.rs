//! Domain counters across threads, in both counter modes: totals reconcile at quiescence when
//! blocks are freed on other threads and after their allocating threads exited; high-water is
//! exact in exact mode and a bound of the true peak in sharded mode; a registered name keeps its
//! mode. (More threads than thread slots: the `process_wide` binary.)

use std::sync::mpsc;

use ludus::memory::{AllocationDomain, CounterMode, RegisterError};

use crate::support::{alloc_block, assert_quiescent, free_block, thread_domain, Block};

const MODES: [CounterMode; 2] = [CounterMode::Sharded, CounterMode::Exact];

#[test]
fn blocks_freed_after_their_threads_exit_reconcile() {
    let threads = if cfg!(miri) { 3 } else { 8 };
    for mode in MODES {
        let d = thread_domain(mode);
        let (tx, rx) = mpsc::channel();
        for t in 0..threads {
            let tx = tx.clone();
            // Each producer allocates and exits; its slot is released and reused by the next.
            std::thread::spawn(move || {
                for i in 0..10 {
                    tx.send(alloc_block(d, 16 + t + i)).unwrap();
                }
            })
            .join()
            .unwrap();
        }
        drop(tx);
        let live = d.usage();
        assert_eq!(live.live_blocks, threads * 10);
        let mut bytes = 0;
        for b in rx {
            bytes += b.1.size() as u64;
            free_block(d, b);
        }
        assert_quiescent(d.usage(), threads as u64 * 10, bytes);
    }
}

#[test]
fn producer_consumer_frees_on_another_thread() {
    let n = if cfg!(miri) { 20 } else { 2000 };
    for mode in MODES {
        let d = thread_domain(mode);
        let (tx, rx) = mpsc::sync_channel::<Block>(8);
        let consumer = std::thread::spawn(move || {
            let mut seen = 0;
            for b in rx {
                // A read while the producer runs: a sample, never invalid.
                if seen % 64 == 0 {
                    assert!(d.usage().valid);
                }
                free_block(d, b);
                seen += 1;
            }
            seen
        });
        for i in 0..n {
            tx.send(alloc_block(d, 8 + i % 100)).unwrap();
        }
        drop(tx);
        assert_eq!(consumer.join().unwrap(), n);
        let bytes = (0..n).map(|i| (8 + i % 100) as u64).sum();
        assert_quiescent(d.usage(), n as u64, bytes);
    }
}

#[test]
fn high_water_is_exact_or_a_bound() {
    for mode in MODES {
        let d = thread_domain(mode);
        let a = alloc_block(d, 100);
        let b = alloc_block(d, 50);
        free_block(d, a);
        let c = alloc_block(d, 10);
        // Peak 150 on this one thread: both modes report it exactly here.
        assert_eq!(d.usage().high_water_bytes, 150, "{mode:?}");
        // Freed elsewhere: exact mode keeps 150; sharded may only rise (a bound).
        let bc = (b, c);
        std::thread::spawn(move || {
            free_block(d, bc.0);
            free_block(d, bc.1);
        })
        .join()
        .unwrap();
        let u = d.usage();
        assert_eq!(u.mode, mode);
        match mode {
            CounterMode::Exact => assert_eq!(u.high_water_bytes, 150),
            CounterMode::Sharded => assert!(u.high_water_bytes >= 150),
        }
    }
}

#[test]
fn a_name_keeps_its_mode() {
    let d = AllocationDomain::register_with("tests/threads-exact", CounterMode::Exact).unwrap();
    assert_eq!(d.counter_mode(), CounterMode::Exact);
    assert!(std::ptr::eq(
        d,
        AllocationDomain::register_with("tests/threads-exact", CounterMode::Exact).unwrap()
    ));
    assert_eq!(
        AllocationDomain::register("tests/threads-exact").unwrap_err(),
        RegisterError::ModeMismatch {
            registered: CounterMode::Exact
        }
    );
    assert_eq!(
        AllocationDomain::core().counter_mode(),
        CounterMode::Sharded
    );
}
