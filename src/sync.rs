//! The one door to concurrency primitives.
//!
//! Every atomic in the crate comes from here, so that `--cfg loom` swaps in loom's
//! model-checked types and the loom models in `loom-tests/` exercise the real code rather than a
//! copy. Nothing else in the crate names `core::sync::atomic` directly.

#[cfg(loom)]
#[allow(unused_imports)]
pub(crate) use loom::sync::atomic::{
    AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering,
};

#[cfg(not(loom))]
#[allow(unused_imports)]
pub(crate) use core::sync::atomic::{
    AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering,
};

/// A mutex for short critical sections that never block on anything else (loom's under loom).
#[cfg(loom)]
#[allow(unused_imports)]
pub(crate) use loom::sync::Mutex;

/// A mutex for short critical sections that never block on anything else (loom's under loom).
#[cfg(not(loom))]
#[allow(unused_imports)]
pub(crate) use std::sync::Mutex;

/// A cell a loom model checks for unsynchronized access (loom's under loom): reach the value
/// only through [`UnsafeCell::with_mut`].
#[cfg(loom)]
#[allow(unused_imports)]
pub(crate) use loom::cell::UnsafeCell;

/// A cell a loom model checks for unsynchronized access (loom's under loom): reach the value
/// only through [`UnsafeCell::with_mut`].
#[cfg(not(loom))]
#[allow(dead_code)]
pub(crate) struct UnsafeCell<T>(core::cell::UnsafeCell<T>);

#[cfg(not(loom))]
#[allow(dead_code)]
impl<T> UnsafeCell<T> {
    /// A cell holding `value`.
    pub(crate) const fn new(value: T) -> Self {
        Self(core::cell::UnsafeCell::new(value))
    }

    /// Calls `f` with a pointer to the value; the caller synchronizes the accesses.
    #[inline(always)]
    pub(crate) fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
        f(self.0.get())
    }
}

/// Gives way inside a spin loop (loom's scheduler under loom, which a spin must reach).
#[cfg(loom)]
#[allow(unused_imports)]
pub(crate) use loom::thread::yield_now;

/// Gives way inside a spin loop (loom's scheduler under loom, which a spin must reach).
#[cfg(not(loom))]
#[allow(unused_imports)]
pub(crate) use std::thread::yield_now;

/// Process-lifetime counters that live in `static`s (capture session epochs, thread numbers):
/// always the core atomics, because loom's cannot be `static`. Nothing that a model checks
/// depends on their interleaving: each is a lone `fetch_add`/`fetch_update` issuing unique
/// numbers.
pub(crate) mod process {
    #[allow(unused_imports)]
    pub(crate) use core::sync::atomic::{AtomicU64, Ordering};
}
