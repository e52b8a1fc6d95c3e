//! [`DurableError`]: why a durable operation was refused.

use crate::durable::binding::ActivationError;
use crate::durable::hierarchy::HierarchyError;
use crate::identity::MintError;
use crate::world::store::error::WorldError;

/// Failure of a durable operation; nothing changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum DurableError {
    /// The world's durable tables lack what the operation needs: a world of no capacity has
    /// no tables, and one made with `DurableConfig::stable_ids` off has no stable ids. (A
    /// plain world has no durable operations at all: they are methods of durable worlds.)
    #[error("the world's durable tables lack what this operation needs (no capacity, or stable ids off in DurableConfig)")]
    Disabled,
    /// A structural or handle check failed (phase, liveness, capacity, budgets, protection,
    /// a foreign durable part).
    #[error(transparent)]
    World(#[from] WorldError),
    /// A hierarchy or name rule refused the change.
    #[error(transparent)]
    Hierarchy(#[from] HierarchyError),
    /// Publishing bindings failed.
    #[error(transparent)]
    Activation(#[from] ActivationError),
    /// Minting a fresh identity failed (entropy, or every candidate taken).
    #[error(transparent)]
    Mint(#[from] MintError),
    /// A selection names one entity twice.
    #[error("selection repeats entity at index {index}")]
    DuplicateSelection {
        /// The second occurrence.
        index: usize,
    },
    /// The output slice does not match the selection (or is shorter than a batch of keys).
    #[error("{selection} selected, output holds {out}")]
    LengthMismatch {
        /// Entities selected, or keys given.
        selection: usize,
        /// Output slots.
        out: usize,
    },
}
