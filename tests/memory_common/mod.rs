//! Shared helpers of the memory integration tests.
#![allow(dead_code)]

use std::sync::Mutex;

use ludus::memory::{AllocationDomain, Backend, FailureInjector};

/// Process-lifetime test objects stay reachable from here, so leak checkers (Miri) see them as
/// deliberately kept rather than lost.
static DOMAINS: Mutex<Vec<&'static AllocationDomain>> = Mutex::new(Vec::new());
static INJECTORS: Mutex<Vec<&'static FailureInjector>> = Mutex::new(Vec::new());

/// Gives a standalone domain the process lifetime its allocator handle needs.
pub fn keep(d: AllocationDomain) -> &'static AllocationDomain {
    let d: &'static AllocationDomain = Box::leak(Box::new(d));
    DOMAINS.lock().unwrap().push(d);
    d
}

/// A fresh standalone domain (own counters, so parallel tests do not interfere).
pub fn domain(name: &str, backend: Backend) -> &'static AllocationDomain {
    keep(AllocationDomain::with_backend(name, backend).unwrap())
}

/// A domain over the system allocator that refuses backend request `k` (0: never).
pub fn failing(k: u64) -> (&'static AllocationDomain, &'static FailureInjector) {
    let inj: &'static FailureInjector = Box::leak(Box::new(FailureInjector::fail_nth(k)));
    INJECTORS.lock().unwrap().push(inj);
    (domain("failing", Backend::Failing(inj)), inj)
}
