//! Stale-operation checks for asynchronous work: operation tickets.
//!
//! An [`OperationTicket`] is issued by the world for one entity: its full handle, a request
//!   sequence and the expected content revision. Completing it
//!   ([`DurableOps::complete`](crate::durable::durable_ops::DurableOps::complete)) revalidates all three, so a result
//!   is refused after the entity was destroyed (and the slot recreated), after a newer request
//!   for the same live entity, and after its content changed. A copied UUID is never enough.

use crate::world::raw::keys::EntityId;

/// A ticket for one asynchronous operation on an entity (issued by
/// [`DurableOps::issue_ticket`](crate::durable::durable_ops::DurableOps::issue_ticket)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct OperationTicket {
    /// The entity's full handle.
    pub entity: EntityId,
    /// The request sequence of this slot when issued (never reused, across incarnations too).
    pub request: u64,
    /// The entity's content revision when issued.
    pub content_revision: u64,
}

/// Why a completion was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum StaleCompletion {
    /// The entity is no longer alive (destroyed, maybe recreated in the same slot).
    #[error("the entity was destroyed")]
    Destroyed,
    /// A newer request (or a cancel) was issued for the same live entity.
    #[error("superseded by request {latest}")]
    Superseded {
        /// The slot's latest request sequence.
        latest: u64,
    },
    /// The entity's content changed since the ticket was issued.
    #[error("content revision {current}, expected {expected}")]
    ContentChanged {
        /// The ticket's revision.
        expected: u64,
        /// The entity's revision now.
        current: u64,
    },
    /// The world's durable tables are empty (a world of no capacity) or not its registry's.
    #[error("the world's durable tables are empty or not its registry's")]
    Disabled,
}

/// Per-slot request sequence and content revision.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct TicketState {
    pub(crate) request: u64,
    pub(crate) content: u64,
}
