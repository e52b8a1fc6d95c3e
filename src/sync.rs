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
