//! Soundness against programs without `unsafe`: misuse of the world's safe API and user code
//! called from inside world operations (hand-written rosters, `EntityRefs` impls, entropy
//! sources) that would reach undefined behaviour or break a world or durable-identity
//! guarantee is refused at compile time or with a typed error or panic, before any state
//! changes. CI runs these in debug, in release and under Miri.

#[path = "../support/mod.rs"]
mod support;

mod durable;
mod world;
