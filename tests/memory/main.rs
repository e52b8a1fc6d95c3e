//! The memory layer: allocation domains and their byte contract, counters (exact and sharded)
//! against models and across threads, bound handles, the allocator-api2 adapter, linear arenas
//! and scratch scopes, the process registry and gauges; with feature `validation` the
//! live-allocation ledger, with feature `capture` activity capture.
//!
//! Tests that use up the process's thread slots run in the `process_wide` binary instead: here
//! a test that binds a handle must find a slot free.

#[path = "../support/mod.rs"]
mod support;

mod adapter;
mod allocator_edges;
mod arena;
mod arena_scopes;
mod bound;
#[cfg(feature = "capture")]
mod capture;
mod contract;
mod counter_model;
mod counter_modes;
mod domains;
mod threads;
#[cfg(feature = "validation")]
mod validation;
