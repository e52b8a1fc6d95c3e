//! Durable identity in the world: the binding table (activation, resolve, unload and reload,
//! duplication), names and the hierarchy, protection, persistent spawn, transactions,
//! checkpoints and replay; each also against a model over random operation sequences.

#[path = "../support/mod.rs"]
mod support;

// The table's only unsafe code (its SSE2 group match) runs under Miri in its unit tests.
#[cfg(not(miri))]
mod binding_model;
mod hierarchy;
mod model;
mod persistent;
#[cfg(not(miri))]
mod persistent_model;
mod plain_state;
mod references;
mod sim;
mod world;
