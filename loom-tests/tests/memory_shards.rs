//! Sharded domain counters under concurrency, on the crate's real `ThreadSlots` and
//! `DomainCounters` (loom builds have two slots): slot registration is exclusive, a slot's
//! figures pass to its next holder when a thread exits, and a block freed on another thread than
//! the one that allocated it reconciles — with no concurrent read ever seeing live figures below
//! zero (which a read would report as a sticky invalid).
#![cfg(loom)]

use loom::sync::atomic::{AtomicBool, Ordering};
use loom::sync::Arc;
use loom::thread;
use ludus::memory::{CounterMode, DomainCounters, ThreadSlots, THREAD_SLOTS};
use ludus_loom_tests::model;

/// Claims a slot, yielding while every slot is held.
fn claim(slots: &ThreadSlots) -> ludus::memory::SlotLease<'_> {
    loop {
        if let Some(l) = slots.claim() {
            return l;
        }
        thread::yield_now();
    }
}

#[test]
fn slot_registration_is_exclusive() {
    assert_eq!(THREAD_SLOTS, 2, "the models assume two slots");
    model(|| {
        let slots = Arc::new(ThreadSlots::new());
        let other = {
            let slots = slots.clone();
            thread::spawn(move || slots.claim().map(|l| l.index()))
        };
        let mine = slots.claim().map(|l| l.index());
        let theirs = other.join().unwrap();
        // Two slots for two threads: both claims succeed. (Each lease is dropped at once, so
        // equal indices here are a hand-on; leases held together are the next model's case.)
        assert!(mine.is_some() && theirs.is_some());
        let a = slots.claim().unwrap();
        let b = slots.claim().unwrap();
        assert_ne!(a.index(), b.index());
        assert!(slots.claim().is_none(), "both held");
        drop(a);
        assert!(slots.claim().is_some(), "released at drop");
    });
}

#[test]
fn held_leases_never_share_a_slot() {
    model(|| {
        let slots = Arc::new(ThreadSlots::new());
        let held = Arc::new(AtomicBool::new(false));
        let h = {
            let (slots, held) = (slots.clone(), held.clone());
            thread::spawn(move || {
                let l = slots.claim().unwrap();
                let i = l.index();
                held.store(true, Ordering::SeqCst);
                // Hold it while the main thread claims.
                while held.load(Ordering::SeqCst) {
                    thread::yield_now();
                }
                i
            })
        };
        let mine = claim(&slots);
        while !held.load(Ordering::SeqCst) {
            thread::yield_now();
        }
        let i = mine.index();
        held.store(false, Ordering::SeqCst);
        assert_ne!(h.join().unwrap(), i);
    });
}

#[test]
fn a_slot_passes_its_figures_to_the_next_thread() {
    model(|| {
        let slots = Arc::new(ThreadSlots::new());
        let c = Arc::new(DomainCounters::new(CounterMode::Sharded));
        // The main thread holds one slot, so both workers use the other: the second takes it
        // over when the first exits, and must continue from the first one's stores.
        let _main = slots.claim().unwrap();
        let worker = |n: usize| {
            let (slots, c) = (slots.clone(), c.clone());
            thread::spawn(move || {
                let lease = claim(&slots);
                c.on_allocate_leased(&lease, n);
                c.on_free_leased(&lease, 1);
                c.on_allocate_leased(&lease, 1);
            })
        };
        let a = worker(8);
        let b = worker(16);
        a.join().unwrap();
        b.join().unwrap();
        let u = c.usage();
        assert_eq!((u.live_bytes, u.live_blocks), (24, 2), "{u:?}");
        assert_eq!((u.allocations, u.frees), (4, 2));
        assert!(u.valid);
        assert!(u.high_water_bytes >= 24, "a bound of the true peak: {u:?}");
    });
}

#[test]
fn a_remote_free_reconciles_and_no_read_sees_it_early() {
    model(|| {
        let slots = Arc::new(ThreadSlots::new());
        let c = Arc::new(DomainCounters::new(CounterMode::Sharded));
        let handed = Arc::new(AtomicBool::new(false));
        let freed = Arc::new(AtomicBool::new(false));
        let producer = {
            let (slots, c, handed) = (slots.clone(), c.clone(), handed.clone());
            thread::spawn(move || {
                let lease = slots.claim().unwrap();
                c.on_allocate_leased(&lease, 16);
                // The pointer travels to the consumer: a Release/Acquire hand-off.
                handed.store(true, Ordering::Release);
            })
        };
        let consumer = {
            let (slots, c, handed, freed) =
                (slots.clone(), c.clone(), handed.clone(), freed.clone());
            thread::spawn(move || {
                // No spinning (it would blow up the model): free only if the block arrived.
                if handed.load(Ordering::Acquire) {
                    let lease = slots.claim().unwrap();
                    c.on_free_leased(&lease, 16);
                    // Relaxed: the reader learns nothing from it.
                    freed.store(true, Ordering::Relaxed);
                }
            })
        };
        // The reader's first load is of `freed`, a plain store's target, so loom also orders it
        // after the free (loom's reduction tracks only an object's last access, so without it
        // the reader's loads would never follow the owners' load-then-store updates); the shard loads that follow may then return any value the memory
        // model allows. A free may be seen only together with its allocation.
        freed.load(Ordering::Relaxed);
        let u = c.usage();
        assert!(
            u.valid,
            "a concurrent read invalidated correct traffic: {u:?}"
        );
        assert!(u.live_bytes == 0 || u.live_bytes == 16, "{u:?}");
        producer.join().unwrap();
        consumer.join().unwrap();
        let u = c.usage();
        let frees = u.frees;
        assert_eq!((u.allocations, u.live_blocks as u64 + frees), (1, 1));
        assert_eq!(u.live_bytes, 16 - 16 * frees as usize);
        assert!(u.valid);
    });
}
