//! Activity capture (feature `capture`): lifetimes and unknown-origin frees, coverage loss that
//! is visible and sticky while the domain counters stay exact, reconciliation at quiescence,
//! and the session rules. Built only with the feature (the `mod` line in `main.rs`).

use std::ptr::NonNull;

use crate::support::keep;
use ludus::memory::{
    ActivityCapture, AllocationDomain, AllocationLayout, Backend, CaptureError, CoverageLoss,
    EventKind, ReconcileError,
};

/// Captures are process-lifetime; keeping them reachable tells Miri they are kept on purpose.
static CAPTURES: std::sync::Mutex<Vec<&'static ActivityCapture>> =
    std::sync::Mutex::new(Vec::new());

fn capture(events: usize, live: usize) -> &'static ActivityCapture {
    let c = ActivityCapture::leak(events, live).unwrap();
    CAPTURES.lock().unwrap().push(c);
    c
}

fn domain(name: &str) -> &'static AllocationDomain {
    keep(AllocationDomain::with_backend(name, Backend::BUILD).unwrap())
}

fn layout(size: usize) -> AllocationLayout {
    AllocationLayout::new(size, 16).unwrap()
}

fn alloc(d: &AllocationDomain, size: usize) -> NonNull<u8> {
    d.try_allocate(layout(size)).unwrap().unwrap()
}

fn free(d: &AllocationDomain, p: NonNull<u8>, size: usize) {
    // SAFETY: every test frees a block of `d` once, with its current size.
    unsafe { d.free(Some(p), layout(size)) };
}

fn resize(d: &AllocationDomain, p: NonNull<u8>, old: usize, new: usize) -> NonNull<u8> {
    let mut q = Some(p);
    // SAFETY: `p` is a live block of `d` of size `old`.
    unsafe { d.try_reallocate(&mut q, layout(old), new).unwrap() };
    q.unwrap()
}

#[test]
fn a_session_records_lifetimes_and_unknown_origins() {
    let d = domain("capture-a");
    let before = alloc(d, 40); // exists before the session
    let before2 = alloc(d, 8);
    let cap = capture(64, 16);
    let s = cap.begin(&[d]).unwrap();
    let epoch = s.epoch();
    let a = alloc(d, 100);
    let b = alloc(d, 24);
    let a = resize(d, a, 100, 300);
    free(d, b, 24);
    free(d, before, 40);
    let before2 = resize(d, before2, 8, 64); // a pre-existing block stays unknown when moved
    free(d, before2, 64);
    let r = s.end();
    assert!(r.loss.is_complete(), "{:?}", r.loss);
    let kinds: Vec<_> = r
        .events
        .iter()
        .map(|e| (e.kind, e.lifetime.map(|l| l.seq)))
        .collect();
    use EventKind::*;
    assert_eq!(
        kinds,
        [
            (Allocate, Some(1)),
            (Allocate, Some(2)),
            (Resize, Some(1)),
            (Free, Some(2)),
            (Free, None),
            (Resize, None),
            (Free, None),
        ]
    );
    assert!(r.events.iter().all(|e| e.domain == d.tag()));
    assert!(r
        .events
        .iter()
        .flat_map(|e| e.lifetime)
        .all(|l| l.epoch == epoch));
    let e = r.events[2];
    assert_eq!((e.size, e.old_size, e.align), (300, 100, 16));
    assert_eq!(e.address, a.as_ptr().addr());
    assert!(r.events.windows(2).all(|w| w[0].time_ns <= w[1].time_ns));
    assert!(r
        .events
        .iter()
        .all(|e| e.thread == r.events[0].thread && e.thread != 0));
    assert_eq!(
        r.still_live
            .iter()
            .map(|(l, n)| (l.seq, *n))
            .collect::<Vec<_>>(),
        [(1, 300)]
    );
    r.reconcile().unwrap();
    free(d, a, 300); // after the session: not recorded
    assert_eq!(r.events.len(), 7);
}

#[test]
fn loss_is_visible_sticky_and_leaves_counters_exact() {
    let d = domain("capture-loss");
    let cap = capture(4, 2);
    let s = cap.begin(&[d]).unwrap();
    let blocks: Vec<_> = (0..10).map(|i| alloc(d, 8 + i)).collect();
    let seen = s.loss();
    assert!(seen.has(CoverageLoss::EVENTS_FULL) && seen.has(CoverageLoss::LIVE_TABLE_FULL));
    for (i, p) in blocks.into_iter().enumerate() {
        free(d, p, 8 + i);
    }
    let r = s.end();
    assert_eq!(r.loss, seen, "sticky, nothing added or cleared");
    assert_eq!((r.events.len(), r.dropped), (4, 16));
    assert_eq!(r.reconcile(), Err(ReconcileError::Incomplete(seen)));
    // The counters never depended on the capture.
    let u = d.usage();
    assert_eq!((u.live_bytes, u.allocations, u.frees), (0, 10, 10));
    assert!(u.valid);
    // A new session starts complete again, with a new epoch.
    let s2 = cap.begin(&[d]).unwrap();
    free(d, alloc(d, 8), 8);
    let r2 = s2.end();
    assert!(r2.loss.is_complete() && r2.epoch > r.epoch);
    r2.reconcile().unwrap();
}

#[test]
fn sessions_are_exclusive_and_a_refused_begin_attaches_nothing() {
    let (d1, d2) = (domain("capture-x1"), domain("capture-x2"));
    let cap = capture(16, 16);
    let other = capture(16, 16);
    let s = cap.begin(&[d2]).unwrap();
    assert_eq!(cap.begin(&[d1]).unwrap_err(), CaptureError::Busy);
    assert!(matches!(
        other.begin(&[d1, d2]),
        Err(CaptureError::AlreadyAttached { domain }) if domain == "capture-x2"
    ));
    // d1 was rolled back: `other` can take it alone, and its events stay apart.
    let s_other = other.begin(&[d1]).unwrap();
    free(d1, alloc(d1, 32), 32);
    free(d2, alloc(d2, 16), 16);
    let (r, r_other) = (s.end(), s_other.end());
    assert_eq!(
        r.events.iter().map(|e| e.domain).collect::<Vec<_>>(),
        [d2.tag(); 2]
    );
    assert_eq!(
        r_other.events.iter().map(|e| e.domain).collect::<Vec<_>>(),
        [d1.tag(); 2]
    );
    assert_ne!(r.epoch, r_other.epoch);
    assert_eq!(
        ActivityCapture::leak(0, 4).unwrap_err(),
        CaptureError::ZeroCapacity
    );
    // A session dropped without `end` detaches and frees the capture for another session.
    let dropped = cap.begin(&[d1, d2]).unwrap();
    drop(dropped);
    let s3 = other.begin(&[d1, d2]).unwrap();
    drop(s3);
    cap.begin(&[]).unwrap().end();
    cap.begin(&[d1]).unwrap().end().reconcile().unwrap();
}

#[test]
fn threads_reconcile_at_quiescence() {
    let d = domain("capture-threads");
    let n = if cfg!(miri) { 10 } else { 500 };
    let cap = capture(4 * n * 2 + 8, 4 * n + 8);
    let keep = alloc(d, 77); // baseline
    let s = cap.begin(&[d]).unwrap();
    std::thread::scope(|t| {
        for k in 0..4 {
            t.spawn(move || {
                let mut held = Vec::new();
                for i in 0..n {
                    held.push((alloc(d, 16 + i % 50 + k), 16 + i % 50 + k));
                    if i % 3 == 0 {
                        let (p, size) = held.swap_remove(0);
                        free(d, p, size);
                    }
                }
                for (p, size) in held {
                    free(d, p, size);
                }
            });
        }
    });
    let r = s.end();
    assert!(r.loss.is_complete());
    assert_eq!(r.events.len(), 4 * n * 2);
    assert!(r.still_live.is_empty());
    r.reconcile().unwrap();
    let threads: std::collections::BTreeSet<_> = r.events.iter().map(|e| e.thread).collect();
    assert_eq!(threads.len(), 4);
    // A report whose events were tampered with does not reconcile.
    let mut bad = r.clone();
    bad.events.pop();
    assert!(matches!(
        bad.reconcile(),
        Err(ReconcileError::Mismatch { .. })
    ));
    free(d, keep, 77);
}
