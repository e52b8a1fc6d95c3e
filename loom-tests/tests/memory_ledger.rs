//! The validation ledger's table lock (feature `validation`) under concurrency, on the crate's
//! real `Ledger` through its `sync` shim: every table access happens under the lock (loom's
//! cell reports any access the lock's Acquire/Release does not order), a record and a check of
//! one block see it absent or whole, and concurrent records and removals of distinct blocks
//! all land.
#![cfg(loom)]

use std::ptr::NonNull;

use loom::sync::Arc;
use loom::thread;
use ludus::memory::{AllocationDomain, AllocationLayout, Backend, Ledger, LedgerViolation};
use ludus_loom_tests::model;

/// A fake block address (the ledger never dereferences it).
fn block(addr: usize) -> NonNull<u8> {
    NonNull::new(addr as *mut u8).unwrap()
}

fn domain() -> AllocationDomain {
    AllocationDomain::with_backend("loom/ledger", Backend::System).unwrap()
}

#[test]
fn records_and_removals_of_distinct_blocks_all_land() {
    model(|| {
        let ledger = Arc::new(Ledger::<4>::new());
        let d = Arc::new(domain());
        let l = AllocationLayout::new(8, 8).unwrap();
        let h = {
            let (ledger, d) = (ledger.clone(), d.clone());
            thread::spawn(move || {
                ledger.record(block(0x1000), l, &d);
                ledger.try_remove(block(0x1000), l, &d)
            })
        };
        ledger.record(block(0x2000), l, &d);
        assert_eq!(h.join().unwrap(), Ok(()));
        // The other thread's block is gone, this one's is still live.
        assert_eq!(ledger.try_check(block(0x2000), l, &d), Ok(()));
        assert_eq!(
            ledger.try_check(block(0x1000), l, &d),
            Err(LedgerViolation::NotLive { addr: 0x1000 })
        );
        assert!(ledger.is_complete());
    });
}

#[test]
fn a_check_racing_a_record_sees_the_block_absent_or_whole() {
    model(|| {
        let ledger = Arc::new(Ledger::<4>::new());
        let d = Arc::new(domain());
        let l = AllocationLayout::new(16, 8).unwrap();
        let h = {
            let (ledger, d) = (ledger.clone(), d.clone());
            thread::spawn(move || ledger.record(block(0x3000), l, &d))
        };
        let seen = ledger.try_check(block(0x3000), l, &d);
        assert!(
            seen == Ok(()) || seen == Err(LedgerViolation::NotLive { addr: 0x3000 }),
            "{seen:?}"
        );
        h.join().unwrap();
        assert_eq!(ledger.try_check(block(0x3000), l, &d), Ok(()));
    });
}
