//! Feature `validation`: the bounded ledger detects double free, wrong layout and wrong domain
//! before the backend is touched, and reports incompleteness instead of growing. Built only
//! with the feature (the `mod` line in `main.rs`).

use core::ptr::NonNull;

use ludus::memory::{AllocationDomain, AllocationLayout, Backend, Ledger, LedgerViolation};

fn domain(name: &str) -> &'static AllocationDomain {
    crate::support::domain(name, Backend::BUILD)
}

fn layout(size: usize, align: usize) -> AllocationLayout {
    AllocationLayout::new(size, align).unwrap()
}

/// Runs `f`, expecting the ledger's terminal panic; returns its message.
fn violation(f: impl FnOnce()) -> String {
    let err = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_err();
    err.downcast_ref::<String>().cloned().unwrap_or_default()
}

#[test]
fn double_free_is_detected() {
    let d = domain("v-double");
    let l = layout(32, 8);
    let p = d.try_allocate(l).unwrap();
    // SAFETY: `p` came from `d` with `l`.
    unsafe { d.free(p, l) };
    // SAFETY: deliberate misuse; the ledger panics before the backend sees the pointer.
    let msg = violation(|| unsafe { d.free(p, l) });
    assert!(msg.contains("not live"), "{msg}");
    assert_eq!(d.usage().frees, 1, "the rejected free changed nothing");
}

#[test]
fn wrong_layout_is_detected_and_changes_nothing() {
    let d = domain("v-layout");
    let l = layout(32, 8);
    let p = d.try_allocate(l).unwrap();
    // SAFETY: deliberate misuse; the ledger panics before the backend is called.
    let msg = violation(|| unsafe { d.free(p, layout(16, 8)) });
    assert!(msg.contains("wrong layout"), "{msg}");
    let mut q = p;
    // SAFETY: deliberate misuse of the resize path, also caught first.
    let msg = violation(|| unsafe {
        d.try_reallocate(&mut q, layout(64, 8), 128)
            .map(drop)
            .unwrap()
    });
    assert!(msg.contains("wrong layout"), "{msg}");
    assert_eq!(d.usage().live_bytes, 32);
    // SAFETY: the correct free still works: the block is still recorded.
    unsafe { d.free(p, l) };
    assert_eq!(d.usage().live_bytes, 0);
}

#[test]
fn wrong_domain_is_detected_and_changes_nothing() {
    let (a, b) = (domain("v-a"), domain("v-b"));
    let l = layout(32, 8);
    let p = a.try_allocate(l).unwrap();
    // SAFETY: deliberate misuse; the ledger panics before the backend is called.
    let msg = violation(|| unsafe { b.free(p, l) });
    assert!(msg.contains("wrong domain"), "{msg}");
    assert_eq!(b.usage().frees, 0);
    // SAFETY: `p` came from `a` with `l`.
    unsafe { a.free(p, l) };
}

#[test]
fn valid_traffic_passes_including_resizes() {
    let d = domain("v-ok");
    let l = layout(8, 8);
    let mut p = d.try_allocate(l).unwrap();
    // SAFETY: `p` is `d`'s block with `l`, then with the resized layout.
    unsafe {
        d.try_reallocate(&mut p, l, 4000).unwrap();
        d.try_reallocate(&mut p, layout(4000, 8), 100).unwrap();
        d.free(p, layout(100, 8));
    }
    let mut v: allocator_api2::vec::Vec<u64, _> = allocator_api2::vec::Vec::new_in(d.allocator());
    v.extend(0..1000);
    drop(v);
    assert_eq!(d.usage().live_bytes, 0);
}

#[test]
fn a_full_ledger_marks_itself_incomplete_and_stops_proving() {
    let ledger = Box::new(Ledger::<4>::new());
    let d = domain("v-small");
    // Addresses only: the ledger never dereferences what it records.
    let mut backing = [[0u8; 16]; 5];
    let blocks: Vec<NonNull<u8>> = backing
        .iter_mut()
        .map(|b| NonNull::from(b).cast())
        .collect();
    let l = layout(16, 1);
    for &b in &blocks[..4] {
        ledger.record(b, l, d);
    }
    assert!(ledger.is_complete());
    assert_eq!(
        ledger.try_remove(blocks[4], l, d),
        Err(LedgerViolation::NotLive {
            addr: blocks[4].as_ptr().addr()
        })
    );
    ledger.record(blocks[4], l, d);
    assert!(!ledger.is_complete(), "exhaustion is reported");
    // After exhaustion a miss is unknown, not proof; recorded entries are still checked.
    assert_eq!(ledger.try_remove(blocks[4], l, d), Ok(()));
    assert!(matches!(
        ledger.try_remove(blocks[0], layout(8, 1), d),
        Err(LedgerViolation::WrongLayout { .. })
    ));
    for &b in &blocks[..4] {
        assert_eq!(ledger.try_remove(b, l, d), Ok(()));
    }
}

#[test]
fn ledger_deletion_keeps_probe_chains_intact() {
    let ledger = Box::new(Ledger::<64>::new());
    let d = domain("v-probe");
    let l = layout(1, 1);
    let mut buf = [0u8; 48];
    let base = NonNull::from(&mut buf).cast::<u8>();
    // SAFETY: offsets < 48 stay inside the leaked buffer.
    let ptrs: Vec<NonNull<u8>> = (0..48).map(|i| unsafe { base.add(i) }).collect();
    for &p in &ptrs {
        ledger.record(p, l, d);
    }
    for &p in ptrs.iter().step_by(2) {
        assert_eq!(ledger.try_remove(p, l, d), Ok(()));
    }
    for (i, &p) in ptrs.iter().enumerate() {
        let expect = if i % 2 == 0 {
            Err(LedgerViolation::NotLive {
                addr: p.as_ptr().addr(),
            })
        } else {
            Ok(())
        };
        assert_eq!(ledger.try_check(p, l, d), expect, "entry {i}");
    }
    assert!(ledger.is_complete());
}
