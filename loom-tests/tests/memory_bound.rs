//! `BoundDomain` under concurrency, on the crate's real domain, counters and `ThreadSlots`
//! (loom builds have two slots): a handle's lease keeps its shard exclusive, a handle dropped on
//! one thread passes its slot's figures to the next handle that leases it, a handle moved to
//! another thread keeps charging its shard, and a concurrent read never sees live figures below
//! zero (which it would report as a sticky invalid).
#![cfg(loom)]

use std::ptr::NonNull;

use loom::sync::Arc;
use loom::thread;
use ludus::memory::{
    AllocationDomain, AllocationLayout, Backend, BindError, BoundDomain, CounterMode, ThreadSlots,
};
use ludus_loom_tests::model;

/// A block crossing threads: its owner is whoever holds the wrapper.
struct Block(NonNull<u8>);
// SAFETY: the block is owned by the holder of the wrapper alone.
unsafe impl Send for Block {}

fn layout(n: usize) -> AllocationLayout {
    AllocationLayout::new(n, 8).unwrap()
}

fn sharded() -> AllocationDomain {
    AllocationDomain::with_mode("loom/bound", Backend::System, CounterMode::Sharded).unwrap()
}

/// Binds, yielding while both slots are leased.
fn bind<'d>(d: &'d AllocationDomain, slots: &'d ThreadSlots) -> BoundDomain<'d> {
    loop {
        match d.bind_in(slots) {
            Ok(b) => return b,
            Err(BindError::NoFreeSlot) => thread::yield_now(),
            Err(e) => panic!("{e}"),
        }
    }
}

#[test]
fn handles_pass_a_slot_and_its_figures_on() {
    model(|| {
        let slots = Arc::new(ThreadSlots::new());
        let d = Arc::new(sharded());
        // The main thread holds one slot, so the two workers' handles share the other: the
        // second leases it when the first is dropped, and must continue from its stores.
        let _main = slots.claim().unwrap();
        let worker = |n: usize| {
            let (slots, d) = (slots.clone(), d.clone());
            thread::spawn(move || {
                let b = bind(&d, &slots);
                let p = b.try_allocate(layout(n)).unwrap();
                // SAFETY: `p` is `d`'s block with this layout, freed once.
                unsafe { b.free(p, layout(n)) };
                b.try_allocate(layout(1)).unwrap().map(Block)
            })
        };
        let a = worker(8);
        let b = worker(16);
        let blocks = [a.join().unwrap(), b.join().unwrap()];
        let u = d.usage();
        assert_eq!((u.live_bytes, u.live_blocks), (2, 2), "{u:?}");
        assert_eq!((u.allocations, u.frees), (4, 2));
        assert!(u.valid);
        for p in blocks {
            // SAFETY: `d`'s blocks of one byte, freed once.
            unsafe { d.free(p.map(|p| p.0), layout(1)) };
        }
        assert_eq!(d.usage().live_bytes, 0);
    });
}

#[test]
fn a_moved_handle_keeps_its_shard_and_reads_stay_valid() {
    model(|| {
        // loom threads need `'static` captures and a handle borrows its domain and slots:
        // leaked per execution (two slots make both small).
        let slots: &'static ThreadSlots = Box::leak(Box::new(ThreadSlots::new()));
        let d: &'static AllocationDomain = Box::leak(Box::new(sharded()));
        let mover = thread::spawn(move || {
            let b = d.bind_in(slots).unwrap();
            let p = Block(b.try_allocate(layout(16)).unwrap().unwrap());
            // The handle and its block move to another thread, which frees through it.
            thread::spawn(move || {
                let p = p;
                // SAFETY: `d`'s block of 16 bytes, handed over and freed once.
                unsafe { b.free(Some(p.0), layout(16)) };
            })
            .join()
            .unwrap();
        });
        // A reader racing the whole exchange: whatever it sees is a valid sample.
        let u = d.usage();
        assert!(u.valid, "{u:?}");
        assert!(u.live_bytes == 0 || u.live_bytes == 16, "{u:?}");
        mover.join().unwrap();
        let u = d.usage();
        assert_eq!((u.live_bytes, u.allocations, u.frees), (0, 1, 1), "{u:?}");
        assert!(u.valid);
    });
}
