//! Fork detection for buffered entropy: a counter bumped in every forked child.
//!
//! `getpid()` is a system call on modern glibc (no cache since 2.25), which would cost as much as
//! the `getrandom` call batching saves. Instead a `pthread_atfork` child handler, registered once,
//! increments [`ForkCounter`]; a buffer records the count it was filled under and discards itself
//! when the count differs. Reading the count is one relaxed load: the handler runs in the child's
//! only thread before `fork` returns there, so that thread observes its own increment.
//!
//! Limit: a child created by a raw `clone`/`vfork` system call that bypasses libc's `fork` runs
//! no atfork handlers and is not detected (the same limit as every atfork-based RNG).

use std::sync::OnceLock;

use crate::sync::{AtomicU64, Ordering};

/// Number of forks observed by this process image (0 in the original process).
#[derive(Debug)]
pub(crate) struct ForkCounter(AtomicU64);

impl ForkCounter {
    /// A counter at 0.
    pub(crate) const fn new() -> Self {
        Self(AtomicU64::new(0))
    }

    /// The current count.
    #[inline]
    pub(crate) fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }

    /// Records one fork. Async-signal-safe (a single atomic increment). (Under Miri no fork
    /// handler is registered: only the tests bump.)
    #[inline]
    #[cfg_attr(all(miri, not(test)), allow(dead_code))]
    pub(crate) fn bump(&self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

/// The process-wide counter bumped by the atfork child handler.
static FORKS: ForkCounter = ForkCounter::new();

/// The process-wide fork counter, registering the child handler on first use; `None` if the
/// handler could not be registered (then callers must not buffer entropy at all).
pub(crate) fn process_fork_counter() -> Option<&'static ForkCounter> {
    static REGISTERED: OnceLock<bool> = OnceLock::new();
    REGISTERED.get_or_init(register).then_some(&FORKS)
}

/// Bumps the process counter in the forked child.
#[cfg(all(unix, not(miri)))]
extern "C" fn on_fork_child() {
    FORKS.bump();
}

#[cfg(all(unix, not(miri)))]
fn register() -> bool {
    // SAFETY: the only handler is `on_fork_child`, a `'static` `extern "C" fn()` that performs one
    // atomic increment, which is async-signal-safe as required in a forked child; it never
    // unwinds.
    unsafe { libc::pthread_atfork(None, None, Some(on_fork_child)) == 0 }
}

/// No `fork` exists on this target (or under Miri, which cannot fork): the count never changes.
#[cfg(not(all(unix, not(miri))))]
fn register() -> bool {
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counter_counts() {
        let c = ForkCounter::new();
        assert_eq!(c.get(), 0);
        c.bump();
        c.bump();
        assert_eq!(c.get(), 2);
    }

    #[test]
    fn process_counter_is_registered_and_stable_without_fork() {
        let c = process_fork_counter().expect("atfork registration");
        let before = c.get();
        assert!(std::ptr::eq(c, process_fork_counter().unwrap()));
        assert_eq!(c.get(), before);
    }
}
