//! Feature `validation`: the bounded ledger detects double free, wrong layout and wrong domain
//! before the backend is touched, and reports incompleteness instead of growing.
#![cfg(feature = "validation")]

use core::ptr::NonNull;

use ludus::memory::{AllocationDomain, AllocationLayout, Backend, Ledger, LedgerViolation};

mod memory_common;

fn domain(name: &str) -> &'static AllocationDomain {
    memory_common::domain(name, Backend::BUILD)
}

fn layout(size: usize, align: usize) -> AllocationLayout {
    AllocationLayout::new(size, align).unwrap()
}

#[test]
#[should_panic(expected = "not live")]
fn double_free_is_detected() {
    let d = domain("v-double");
    let l = layout(32, 8);
    let p = d.try_allocate(l).unwrap();
    // SAFETY: first free is valid; the second is the misuse under test, caught by the ledger
    // before the backend sees it.
    unsafe {
        d.free(p, l);
        d.free(p, l);
    }
}

#[test]
#[should_panic(expected = "wrong layout")]
fn wrong_layout_is_detected() {
    let d = domain("v-layout");
    let p = d.try_allocate(layout(32, 8)).unwrap();
    // SAFETY: deliberate misuse; the ledger panics before the backend is called.
    unsafe { d.free(p, layout(16, 8)) };
}

#[test]
#[should_panic(expected = "wrong domain")]
fn wrong_domain_is_detected() {
    let (a, b) = (domain("v-a"), domain("v-b"));
    let l = layout(32, 8);
    let p = a.try_allocate(l).unwrap();
    // SAFETY: deliberate misuse; the ledger panics before the backend is called.
    unsafe { b.free(p, l) };
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
    let blocks: Vec<_> = (0..5u8)
        .map(|i| {
            let b = Box::leak(Box::new([i; 16]));
            NonNull::from(b).cast::<u8>()
        })
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
    let buf: &'static mut [u8] = Box::leak(vec![0u8; 48].into_boxed_slice());
    let base = NonNull::from(buf).cast::<u8>();
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
