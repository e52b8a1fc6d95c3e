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

/// Process-lifetime counters that live in `static`s (capture session epochs, thread numbers):
/// always the core atomics, because loom's cannot be `static`. Nothing that a model checks
/// depends on their interleaving: each is a lone `fetch_add`/`fetch_update` issuing unique
/// numbers.
pub(crate) mod process {
    #[allow(unused_imports)]
    pub(crate) use core::sync::atomic::{AtomicU64, Ordering};
}
