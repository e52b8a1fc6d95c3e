//! # ludus
//!
//! A performance-first, data-oriented ECS with custom allocators and durable identity.
//!
//! * [`identity`] — generational handles `{owner u64, slot u32, generation u32}` that reject
//!   stale and foreign values, owner-token issuance, and UUID-based durable ids kept apart from
//!   handles.
//! * [`memory`] — allocation domains with counters, backends and a fixed-capacity arena.
//! * [`world`](mod@world) — the entity registry, component pools, phases, commands and joins.
//! * [`durable`] — durable identity for worlds declared `durable`: the binding table, names and
//!   hierarchy, duplication, tickets, stable ids, transactions and checkpoints.
//! * [`content`] — World records (version 1 and 2), the identity migration manifest, atomic
//!   publication, and the `ludus-cook identity` commands.
//!
//! The library never installs a global allocator and never intercepts `malloc`.
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs, missing_debug_implementations)]

// The durable forms (checkpoints and their digests, prepared commands, transaction values,
// replay logs) hold components' bytes as they are in memory: little-endian on every target
// ludus builds for, and a `repr(C)` layout without padding is the same on all of them. A
// big-endian target would write other bytes for the same values, so it is refused here.
#[cfg(target_endian = "big")]
compile_error!("ludus's durable encodings are little-endian: big-endian targets are not supported");

// `#[derive(EntityRefs)]` names `::ludus`, here too.
extern crate self as ludus;

mod buckets;
pub mod content;
pub mod durable;
mod hint;
pub mod identity;
pub mod memory;
mod sync;
pub mod world;

pub use identity::{Handle, HandleTag};
pub use world::{join, CommandBuffer, ComponentPool, EntityId, EntityRegistry, WorldError};

/// The README's examples run as doctests, so they stay true.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;

/// The names most programs need: `use ludus::prelude::*;` brings the world operations
/// ([`WorldOps`](world::WorldOps), [`DurableOps`](durable::DurableOps)) into scope, with
/// handles, joins, commands and the durable-identity vocabulary.
pub mod prelude {
    pub use crate::durable::{
        Activation, CheckpointOps, DurableConfig, DurableError, DurableOps, DurableRoster,
        EntityRefs, PersistentOps, Resolution,
    };
    pub use crate::world::{
        cluster, join, opt, without, Bundle, CommandBuffer, EntityId, Rejection, Stores,
        WorldError, WorldOps,
    };
}
