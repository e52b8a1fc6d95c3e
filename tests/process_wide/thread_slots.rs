//! The process's thread slots (one counter shard each, leased by a thread for its life or by a
//! bound handle): more threads allocating at once than there are slots all counted, thread-local
//! teardown that frees and allocates after the slot holder's destructor with more threads alive
//! than slots, waves of threads exiting while leased, and every slot leased by handles (one of
//! them forgotten) so that `bind` is refused and threads fall back to the shared shard.

use std::sync::{Arc, Barrier};

use ludus::memory::{
    AllocationDomain, AllocationLayout, Backend, BindError, CounterMode, DomainAllocator,
    DomainCounters, THREAD_SLOTS,
};

use crate::support::{alloc_block, assert_quiescent, free_block, keep, thread_domain};

#[test]
#[cfg_attr(
    miri,
    ignore = "spawns more threads than there are slots: slow under Miri"
)]
fn more_threads_than_slots_all_counted() {
    let _alone = crate::one_at_a_time();
    let threads = THREAD_SLOTS + 6;
    let d = thread_domain(CounterMode::Sharded);
    let barrier = Arc::new(Barrier::new(threads));
    let hs: Vec<_> = (0..threads)
        .map(|_| {
            let barrier = barrier.clone();
            std::thread::spawn(move || {
                let mine: Vec<_> = (0..50).map(|_| alloc_block(d, 32)).collect();
                // Everyone holds a block (and so a slot, or the shared shard) at once.
                barrier.wait();
                for b in mine {
                    free_block(d, b);
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
fn tls_teardown_frees_and_allocs_stay_exact() {
    let _alone = crate::one_at_a_time();
    use std::cell::RefCell;
    type V = allocator_api2::vec::Vec<u8, DomainAllocator>;
    struct Late(RefCell<Option<V>>);
    impl Drop for Late {
        fn drop(&mut self) {
            // Runs after the slot holder's destructor: free, then allocate and resize anew.
            if let Some(mut v) = self.0.borrow_mut().take() {
                v.extend_from_slice(&[1; 300]);
                v.shrink_to_fit();
                drop(v);
            }
        }
    }
    thread_local! { static LATE: Late = const { Late(RefCell::new(None)) }; }
    for mode in [CounterMode::Exact, CounterMode::Sharded] {
        let d = keep(AllocationDomain::with_mode("slots/tls", Backend::System, mode).unwrap());
        let n = if cfg!(miri) { 2 } else { 80 }; // > THREAD_SLOTS live at once natively
        let bar = std::sync::Arc::new(std::sync::Barrier::new(n));
        let hs: Vec<_> = (0..n)
            .map(|_| {
                let bar = bar.clone();
                std::thread::spawn(move || {
                    // Register LATE's destructor before the slot holder's.
                    LATE.with(|l| l.0.borrow().is_none());
                    let mut v: V = allocator_api2::vec::Vec::new_in(d.allocator());
                    v.extend_from_slice(&[0; 100]);
                    bar.wait();
                    LATE.with(|l| *l.0.borrow_mut() = Some(v));
                })
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
        let u = d.usage();
        assert_eq!((u.live_bytes, u.live_blocks), (0, 0), "{mode:?} {u:?}");
        assert_eq!(u.allocations, u.frees);
        assert_eq!(u.allocated_bytes, u.freed_bytes);
        assert!(u.valid);
    }
}

/// Many more threads than slots, exiting while leased, allocating on one thread and freeing on
/// another, with a concurrent reader: the reader never sees an invalid state, and at quiescence
/// the figures reconcile.
#[test]
fn many_threads_exits_while_leased_and_cross_frees_reconcile() {
    let _alone = crate::one_at_a_time();
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{mpsc, Arc};
    let (waves, per_wave, ops) = if cfg!(miri) {
        (1, 3, 5)
    } else {
        (4, 3 * THREAD_SLOTS, 2000)
    };
    for mode in [CounterMode::Sharded, CounterMode::Exact] {
        let c = Arc::new(DomainCounters::new(mode));
        let stop = Arc::new(AtomicBool::new(false));
        let reader = {
            let (c, stop) = (c.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut n = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let u = c.usage();
                    assert!(u.valid, "{mode:?}: a concurrent read saw invalid: {u:?}");
                    if mode == CounterMode::Sharded {
                        assert!(u.high_water_bytes >= u.live_bytes);
                    }
                    n += 1;
                    if cfg!(miri) && n > 20 {
                        break;
                    }
                }
                n
            })
        };
        for _ in 0..waves {
            // Producers hand sizes to consumers (the "pointer handover").
            let mut hs = Vec::new();
            for t in 0..per_wave {
                let (tx, rx) = mpsc::channel::<usize>();
                let cp = c.clone();
                hs.push(std::thread::spawn(move || {
                    for i in 0..ops {
                        let n = 1 + (i * 7 + t) % 97;
                        cp.on_allocate(n);
                        if i % 3 == 0 {
                            cp.on_resize(n, n + 5);
                            tx.send(n + 5).unwrap();
                        } else {
                            tx.send(n).unwrap();
                        }
                    }
                }));
                let cc = c.clone();
                hs.push(std::thread::spawn(move || {
                    for n in rx {
                        if n % 2 == 0 {
                            cc.on_resize(n, n - 1);
                            cc.on_free(n - 1);
                        } else {
                            cc.on_free(n);
                        }
                    }
                }));
            }
            for h in hs {
                h.join().unwrap();
            }
        }
        stop.store(true, Ordering::Relaxed);
        reader.join().unwrap();
        let u = c.usage();
        assert!(u.valid, "{mode:?} {u:?}");
        assert_eq!((u.live_bytes, u.live_blocks), (0, 0), "{mode:?} {u:?}");
        assert_eq!(u.allocations, u.frees);
        assert_eq!(u.allocated_bytes, u.freed_bytes);
        assert_eq!(u.allocations, (waves * per_wave * ops) as u64);
    }
}

/// Every process slot leased by handles (one of them forgotten, so its slot is gone for good):
/// threads fall back to the shared shard, `bind` is a typed refusal, and figures reconcile.
#[test]
fn slots_exhausted_by_handles_and_a_forgotten_handle() {
    let _alone = crate::one_at_a_time();
    let d: &'static AllocationDomain = keep(
        AllocationDomain::with_mode("slots/bound", Backend::System, CounterMode::Sharded).unwrap(),
    );
    let l = AllocationLayout::new(40, 8).unwrap();
    let mut handles = Vec::new();
    loop {
        match d.bind() {
            Ok(b) => handles.push(b),
            Err(e) => {
                assert_eq!(e, BindError::NoFreeSlot);
                break;
            }
        }
    }
    assert!(handles.len() <= THREAD_SLOTS);
    // Charge one block to the handle we are about to forget; free it through the domain later.
    let forgotten = handles.pop().unwrap();
    let p = forgotten.try_allocate(l).unwrap();
    std::mem::forget(forgotten);
    let n = if cfg!(miri) { 2 } else { 32 };
    std::thread::scope(|s| {
        for _ in 0..n {
            s.spawn(|| {
                for _ in 0..if cfg!(miri) { 3 } else { 500 } {
                    let q = d.try_allocate(l).unwrap();
                    // SAFETY: `q` is `d`'s block with layout `l`.
                    unsafe { d.free(q, l) };
                }
            });
        }
    });
    drop(handles);
    // SAFETY: `p` is `d`'s block with layout `l`.
    unsafe { d.free(p, l) };
    let u = d.usage();
    assert!(u.valid, "{u:?}");
    assert_eq!((u.live_bytes, u.live_blocks), (0, 0), "{u:?}");
    assert_eq!(u.allocations, u.frees);
    assert!(u.high_water_bytes >= 40);
}
