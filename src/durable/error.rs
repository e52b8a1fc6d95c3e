//! [`DurableError`]: why a durable operation was refused.

use crate::durable::binding::ActivationError;
use crate::durable::hierarchy::HierarchyError;
use crate::identity::MintError;
use crate::world::store::error::WorldError;

/// Failure of a durable operation; nothing changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum DurableError {
    /// The world was made without durable tables (`try_new`, not `try_new_durable`).
    #[error("world has no durable tables (make it with try_new_durable)")]
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
    /// The output slice does not match the selection.
    #[error("{selection} selected, output holds {out}")]
    LengthMismatch {
        /// Entities selected.
        selection: usize,
        /// Output slots.
        out: usize,
    },
}
