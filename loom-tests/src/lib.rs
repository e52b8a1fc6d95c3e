//! loom models of ludus's concurrent pieces live in `tests/`; this library holds what they share.
//!
//! Run: `RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom cargo test -p ludus-loom-tests
//! --release`.

/// Checks `f` under every interleaving with at most three preemptions. The races the models
/// target (two read-modify-writes of one atomic, a raise racing a decrease, two CAS loops)
/// need at most two; the bound keeps CAS-retry state spaces small enough for CI.
#[cfg(loom)]
pub fn model(f: impl Fn() + Sync + Send + 'static) {
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(3);
    b.check(f);
}
