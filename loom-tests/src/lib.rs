//! loom models of ludus's concurrent pieces live in `tests/`; this library is empty on purpose.
//!
//! Run: `RUSTFLAGS="--cfg loom" cargo test -p ludus-loom-tests --release`.
