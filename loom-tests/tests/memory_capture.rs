//! Activity capture under concurrency, on the crate's real `ActivityCapture` and domain hooks:
//! two threads record into one session at once (distinct slots and lifetimes, a complete and
//! reconciling report), and a drain that races a producer never reports a half-written event:
//! it either has the whole event or reports the slot in flight.
#![cfg(loom)]

use loom::thread;
use ludus::memory::{
    ActivityCapture, AllocationDomain, AllocationLayout, Backend, CoverageLoss, EventKind,
};
use ludus_loom_tests::model;

fn domain() -> &'static AllocationDomain {
    // Leaked per execution: loom objects must not outlive their model run.
    Box::leak(Box::new(
        AllocationDomain::with_backend("loom", Backend::System).unwrap(),
    ))
}

fn pair(d: &AllocationDomain, size: usize) {
    let l = AllocationLayout::new(size, 8).unwrap();
    let p = d.try_allocate(l).unwrap();
    // SAFETY: `p` came from `d` with `l`, freed once.
    unsafe { d.free(p, l) };
}

#[test]
fn two_producers_record_one_complete_session() {
    model(|| {
        let d = domain();
        let cap = ActivityCapture::leak(8, 4).unwrap();
        let s = cap.begin(&[d]).unwrap();
        let t = thread::spawn(move || pair(d, 24));
        pair(d, 40);
        t.join().unwrap();
        let r = s.end();
        assert!(r.loss.is_complete(), "{:?}", r.loss);
        assert_eq!(r.events.len(), 4);
        let mut seqs: Vec<_> = r.events.iter().map(|e| e.lifetime.unwrap().seq).collect();
        seqs.sort_unstable();
        assert_eq!(
            seqs,
            [1, 1, 2, 2],
            "each allocation and its free share one lifetime"
        );
        r.reconcile().unwrap();
    });
}

#[test]
fn a_racing_drain_never_reads_a_half_written_event() {
    model(|| {
        let d = domain();
        let cap = ActivityCapture::leak(4, 4).unwrap();
        let s = cap.begin(&[d]).unwrap();
        let l = AllocationLayout::new(24, 8).unwrap();
        let t = thread::spawn(move || {
            let p = d.try_allocate(l).unwrap();
            // The block is deliberately kept: only the allocation event races the drain.
            p.map(|p| p.as_ptr().expose_provenance())
        });
        // `end` while the producer may be inside the capture (the protocol is broken on
        // purpose): a slot is either complete or reported in flight.
        let r = s.end();
        for e in &r.events {
            assert_eq!(
                (e.kind, e.size, e.align),
                (EventKind::Allocate, 24, 8),
                "{e:?}"
            );
            assert_eq!(e.lifetime.map(|l| l.seq), Some(1));
        }
        assert!(r.events.len() == 1 || r.loss.has(CoverageLoss::IN_FLIGHT) || r.events.is_empty());
        let addr = t.join().unwrap().unwrap();
        let p = std::ptr::NonNull::new(std::ptr::with_exposed_provenance_mut::<u8>(addr));
        // SAFETY: the block came from `d` with `l` and is freed once.
        unsafe { d.free(p, l) };
    });
}
