//! Durable identity at the world's boundary: the [`WorldBindingTable`] (keys to handles, with
//! resolve statuses), names and an ordered [`Hierarchy`], graph duplication with reference
//! remapping, operation tickets and selections, stable ids for persistent spawns with
//! all-or-nothing transactions, and checkpoints with a canonical digest.
//!
//! This layer sits on top of the world: it names the world's public operations and
//! implements the core's destroy hook, and nothing in [`world`](mod@crate::world) names it.
//! See `docs/durable.md` and `docs/persistent.md`.
//!
//! Durability is chosen per world type: a world declared `durable` has the tables and the
//! operations,
//!
//! ```
//! use ludus::prelude::*;
//! #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
//! #[repr(C)]
//! struct Hp(u32);
//! ludus::world! { struct W { hp: Hp } durable }
//! let mut w = W::try_new_durable(4, DurableConfig::default()).unwrap();
//! let e = w.spawn((Hp(1),)).unwrap();
//! w.set_name(e, "x").unwrap();
//! assert_eq!(w.name(e), Ok("x"));
//! ```
//!
//! and a plain world has neither (its destroys pay nothing for them):
//!
//! ```compile_fail,E0599
//! use ludus::prelude::*;
//! #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
//! #[repr(C)]
//! struct Hp(u32);
//! ludus::world! { struct W { hp: Hp } }
//! let mut w = W::try_new(4).unwrap();
//! let e = w.spawn((Hp(1),)).unwrap();
//! w.set_name(e, "x"); // error[E0599]: `W` is not a durable roster
//! ```

pub(crate) mod binding;
pub(crate) mod checkpoint;
pub(crate) mod duplicate_graph;
pub(crate) mod durable_ops;
pub(crate) mod error;
pub(crate) mod hex_bytes;
pub(crate) mod hierarchy;
pub(crate) mod outliner;
pub(crate) mod persistent;
pub(crate) mod selection;
pub(crate) mod tables;
pub(crate) mod ticket;

pub use binding::{
    Activation, ActivationError, BindingKind, BindingStats, CandidateRejection, CatalogEntry,
    InvalidReference, NoCatalog, ResidencyCatalog, Resolution, WorldBindingTable, LOOKUP_BATCH,
    MAX_BINDINGS, MAX_PROBE,
};
pub use checkpoint::{
    digest_hex, Checkpoint, CheckpointEntity, CheckpointError, CheckpointOps, ComponentShape,
    EntityBinding, ReplayEntry, ReplayError, ReplayLog, CHECKPOINT_FORMAT, CHECKPOINT_VERSION,
    REPLAY_FORMAT,
};
pub use durable_ops::DurableOps;
pub use error::DurableError;
pub use hex_bytes::INLINE_VALUE_BYTES;
pub(crate) use hierarchy::first_cycle;
pub use hierarchy::{
    Hierarchy, HierarchyError, OrphanPolicy, MAX_LABEL_LEN, MAX_NAME_BYTES, MAX_NAME_LEN,
};
pub use ludus_derive::EntityRefs;
pub use outliner::{Outliner, OutlinerRow, WorldCounts};
pub use persistent::{
    ComponentValue, HexBytes, InvariantViolation, PersistentOps, PrepareError, PreparedSpawn,
    Transaction, TransactionQueue, TxCommand, TxError, TxRejection, TxReport, IDENTITY_COMPONENT,
    MAX_COMMAND_COMPONENTS,
};
pub use selection::{Selection, SelectionEntry, SelectionError};
pub(crate) use tables::{has_refs_of, rewrite_refs_of};
pub use tables::{
    Durable, DurableConfig, DurableCounters, DurableRoster, EntityFields, EntityRefs,
    NAME_BYTES_PER_SLOT,
};

/// The plumbing of durable worlds: the type list of a roster's entity-referencing components and
/// the bind step that `world!`'s durable constructors call. A program that declares its worlds
/// with `world!` names none of these.
pub mod roster {
    pub use crate::durable::tables::{
        try_bind_durable, DeclaresRefs, NoRefs, RefList, RefVisitor, RefsProbe,
    };
}
pub use ticket::{OperationTicket, StaleCompletion};
