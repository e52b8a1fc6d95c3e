//! Failure injection for tests (feature `test-hooks`): refuse the k-th backend request.
//!
//! A test facility, never a production switch: it only takes effect in a domain explicitly built
//! with [`Backend::Failing`](super::Backend::Failing) via
//! [`AllocationDomain::with_backend`](super::AllocationDomain::with_backend); the process
//! registry always uses [`Backend::BUILD`](super::Backend::BUILD).

use crate::sync::{AtomicU64, Ordering};

/// Counts backend requests (allocations and resizes, not frees) and refuses the `k`-th one
/// (1-based). `k == 0` never fails.
///
/// # Examples
/// ```
/// use ludus::memory::{AllocationDomain, AllocationLayout, Backend, FailureInjector};
/// let inj: &'static FailureInjector = Box::leak(Box::new(FailureInjector::fail_nth(2)));
/// let d: &'static AllocationDomain =
///     Box::leak(Box::new(AllocationDomain::with_backend("test", Backend::Failing(inj)).unwrap()));
/// let l = AllocationLayout::new(16, 8).unwrap();
/// let a = d.try_allocate(l).unwrap();
/// assert!(d.try_allocate(l).is_err());
/// // SAFETY: `a` came from `d` with layout `l`.
/// unsafe { d.free(a, l) };
/// assert_eq!(d.usage().failures, 1);
/// ```
#[derive(Debug)]
pub struct FailureInjector {
    requests: AtomicU64,
    fail_at: AtomicU64,
}

impl FailureInjector {
    /// An injector refusing request number `k` (1-based); `0` never fails.
    pub fn fail_nth(k: u64) -> Self {
        Self {
            requests: AtomicU64::new(0),
            fail_at: AtomicU64::new(k),
        }
    }

    /// Re-arms: request number `k` counted from now fails (`0` disarms).
    pub fn arm(&self, k: u64) {
        self.requests.store(0, Ordering::Relaxed);
        self.fail_at.store(k, Ordering::Relaxed);
    }

    /// Requests seen since the last arming.
    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }

    /// Counts one request and says whether to refuse it.
    pub(crate) fn should_fail(&self) -> bool {
        let n = self.requests.fetch_add(1, Ordering::Relaxed) + 1;
        n == self.fail_at.load(Ordering::Relaxed)
    }
}
