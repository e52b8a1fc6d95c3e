//! The failure injector (feature `test-hooks`) under concurrency, on the crate's real
//! `FailureInjector` behind a domain: requests racing on two threads are numbered once each,
//! so exactly the armed one fails and the domain counts one failure.
#![cfg(loom)]

use loom::sync::Arc;
use loom::thread;
use ludus::memory::{AllocationDomain, AllocationLayout, Backend, FailureInjector};
use ludus_loom_tests::model;

#[test]
fn exactly_the_armed_request_fails() {
    model(|| {
        let inj: &'static FailureInjector = Box::leak(Box::new(FailureInjector::fail_nth(2)));
        let d = Arc::new(
            AllocationDomain::with_backend("loom/failing", Backend::Failing(inj)).unwrap(),
        );
        let l = AllocationLayout::new(8, 8).unwrap();
        let try_one = move |d: &AllocationDomain| match d.try_allocate(l) {
            Ok(p) => {
                // SAFETY: `p` came from `d` with layout `l`.
                unsafe { d.free(p, l) };
                false
            }
            Err(_) => true,
        };
        let h = {
            let d = d.clone();
            thread::spawn(move || try_one(&d))
        };
        let here = try_one(&d);
        let there = h.join().unwrap();
        assert!(
            here != there,
            "one of the two requests fails: {here} {there}"
        );
        assert_eq!(inj.requests(), 2);
        assert_eq!(d.usage().failures, 1);
    });
}
