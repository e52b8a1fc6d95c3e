//! Domain counters across threads, in both counter modes: totals reconcile at quiescence when
//! blocks are freed on other threads, after their allocating threads exited, and when more
//! threads allocate at once than there are thread slots; high-water is exact in exact mode and a
//! bound of the true peak in sharded mode.

mod memory_common;

use std::ptr::NonNull;
use std::sync::{mpsc, Arc, Barrier};

use ludus::memory::{
    AllocationDomain, AllocationLayout, Backend, CounterMode, MemoryUsage, RegisterError,
    THREAD_SLOTS,
};
use memory_common::keep;

const MODES: [CounterMode; 2] = [CounterMode::Sharded, CounterMode::Exact];

fn fresh(mode: CounterMode) -> &'static AllocationDomain {
    keep(AllocationDomain::with_mode("threads", Backend::BUILD, mode).unwrap())
}

/// A block and its layout, moved (never shared) between threads.
struct Block(NonNull<u8>, AllocationLayout);

// SAFETY: a `Block` owns its bytes exclusively; moving it to another thread moves that
// ownership (the domain's free may run on any thread).
unsafe impl Send for Block {}

fn alloc(d: &AllocationDomain, size: usize) -> Block {
    let l = AllocationLayout::new(size, 8).unwrap();
    Block(d.try_allocate(l).unwrap().unwrap(), l)
}

fn free(d: &AllocationDomain, b: Block) {
    // SAFETY: `b` came from `alloc` on `d` with its layout and is freed once.
    unsafe { d.free(Some(b.0), b.1) };
}

fn assert_quiescent(u: MemoryUsage, allocations: u64, bytes: u64) {
    assert_eq!((u.live_bytes, u.live_blocks), (0, 0), "{u:?}");
    assert_eq!(
        (u.allocations, u.frees),
        (allocations, allocations),
        "{u:?}"
    );
    assert_eq!((u.allocated_bytes, u.freed_bytes), (bytes, bytes), "{u:?}");
    assert!(u.valid);
}

#[test]
fn blocks_freed_after_their_threads_exit_reconcile() {
    let threads = if cfg!(miri) { 3 } else { 8 };
    for mode in MODES {
        let d = fresh(mode);
        let (tx, rx) = mpsc::channel();
        for t in 0..threads {
            let tx = tx.clone();
            // Each producer allocates and exits; its slot is released and reused by the next.
            std::thread::spawn(move || {
                for i in 0..10 {
                    tx.send(alloc(d, 16 + t + i)).unwrap();
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
            free(d, b);
        }
        assert_quiescent(d.usage(), threads as u64 * 10, bytes);
    }
}

#[test]
fn producer_consumer_frees_on_another_thread() {
    let n = if cfg!(miri) { 20 } else { 2000 };
    for mode in MODES {
        let d = fresh(mode);
        let (tx, rx) = mpsc::sync_channel::<Block>(8);
        let consumer = std::thread::spawn(move || {
            let mut seen = 0;
            for b in rx {
                // A read while the producer runs: a sample, never invalid.
                if seen % 64 == 0 {
                    assert!(d.usage().valid);
                }
                free(d, b);
                seen += 1;
            }
            seen
        });
        for i in 0..n {
            tx.send(alloc(d, 8 + i % 100)).unwrap();
        }
        drop(tx);
        assert_eq!(consumer.join().unwrap(), n);
        let bytes = (0..n).map(|i| (8 + i % 100) as u64).sum();
        assert_quiescent(d.usage(), n as u64, bytes);
    }
}

#[test]
#[cfg_attr(
    miri,
    ignore = "spawns more threads than there are slots: slow under Miri"
)]
fn more_threads_than_slots_all_counted() {
    let threads = THREAD_SLOTS + 6;
    let d = fresh(CounterMode::Sharded);
    let barrier = Arc::new(Barrier::new(threads));
    let hs: Vec<_> = (0..threads)
        .map(|_| {
            let barrier = barrier.clone();
            std::thread::spawn(move || {
                let mine: Vec<_> = (0..50).map(|_| alloc(d, 32)).collect();
                // Everyone holds a block (and so a slot, or the shared shard) at once.
                barrier.wait();
                for b in mine {
                    free(d, b);
                }
            })
        })
        .collect();
    for h in hs {
        h.join().unwrap();
    }
    assert_quiescent(d.usage(), threads as u64 * 50, threads as u64 * 50 * 32);
}

#[test]
fn high_water_is_exact_or_a_bound() {
    for mode in MODES {
        let d = fresh(mode);
        let a = alloc(d, 100);
        let b = alloc(d, 50);
        free(d, a);
        let c = alloc(d, 10);
        // Peak 150 on this one thread: both modes report it exactly here.
        assert_eq!(d.usage().high_water_bytes, 150, "{mode:?}");
        // Freed elsewhere: exact mode keeps 150; sharded may only rise (a bound).
        let bc = (b, c);
        std::thread::spawn(move || {
            free(d, bc.0);
            free(d, bc.1);
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
