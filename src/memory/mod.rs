//! Memory: allocation layouts, domains with per-domain counters, system / mimalloc backends,
//! the allocator-api2 adapter and the fixed-capacity `LinearArena`.
//!
//! * [`AllocationLayout`] — checked `{ size, align }`.
//! * [`AllocationDomain`] — immutable backend + tag, counters ([`MemoryUsage`]) sharded per
//!   thread slot or exact ([`CounterMode`]), the
//!   byte API (`try_allocate` / `free` / `try_reallocate`); the core domain is built in, named
//!   domains live in a bounded process registry ([`DomainRegistry`]).
//! * [`BoundDomain`] — a domain handle holding a counter shard of its own: the byte API without
//!   the per-call search for the thread's shard, for allocation-heavy loops.
//! * [`DomainAllocator`] — `allocator_api2::alloc::Allocator` charging a domain (a
//!   [`BoundDomain`] is one too).
//! * [`LinearArena`] / [`ScratchScope`] — bump allocation over caller bytes with lexical
//!   rewind, enforced by the borrow checker.
#![cfg_attr(
    feature = "capture",
    doc = " * [`ActivityCapture`] (feature `capture`) — bounded, preallocated allocation/free/resize"
)]
#![cfg_attr(
    not(feature = "capture"),
    doc = " * `ActivityCapture` (feature `capture`) — bounded, preallocated allocation/free/resize"
)]
//!   records of chosen domains between two quiescent boundaries, with sticky coverage loss.
//! * [`gauges_json`] — a JSON snapshot of every domain for profilers.
//!
//! The library never installs a global allocator: backends are called explicitly.

mod adapter;
mod arena;
mod backend;
mod bound;
mod byte_api;
#[cfg(feature = "capture")]
mod capture;
mod charge;
mod counters;
mod domain;
#[cfg(feature = "test-hooks")]
mod failure;
mod gauges;
mod layout;
#[cfg(feature = "validation")]
mod ledger;
// Doc-only: the arena's lifetime rules as `compile_fail` doctests.
#[cfg(doctest)]
mod lifetimes;
mod registry;
mod scope;
mod shards;
mod tag;
mod usage;

pub use adapter::DomainAllocator;
pub use arena::{ArenaError, LinearArena, POISON};
pub use backend::Backend;
pub use bound::{BindError, BoundDomain};
pub use byte_api::{AllocFailed, ResizeError};
#[cfg(feature = "capture")]
pub use capture::{
    ActivityCapture, CaptureError, CaptureEvent, CaptureReport, CaptureSession, CoverageLoss,
    EventKind, LifetimeId, ReconcileError,
};
pub use counters::DomainCounters;
pub use domain::AllocationDomain;
#[cfg(feature = "test-hooks")]
pub use failure::FailureInjector;
#[cfg(not(loom))]
pub use gauges::gauges_json;
pub use gauges::{domains_json, write_domain_json};
pub use layout::{AllocationLayout, LayoutError};
#[cfg(feature = "validation")]
pub use ledger::{Ledger, LedgerViolation, LEDGER_CAPACITY};
pub use registry::{DomainRegistry, CORE_DOMAIN_NAME, REGISTRY_CAPACITY};
pub use scope::ScratchScope;
pub use shards::THREAD_SLOTS;
#[cfg(loom)]
pub use shards::{SlotLease, ThreadSlots};
pub use tag::{domain_tag, RegisterError, MAX_NAME_LEN};
pub use usage::{CounterMode, MemoryUsage};
