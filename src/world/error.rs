//! Typed errors of the world: initialization, structural operations, rejections and commands.

/// Why a handle does not name an active entity of a registry, as reported by
/// [`EntityRegistry::diagnose`](super::EntityRegistry::diagnose).
///
/// The variants follow the validation order: shape, owner, range, slot state, generation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, thiserror::Error)]
pub enum Rejection {
    /// The all-zero handle.
    #[error("null handle")]
    Null,
    /// The owner token is zero or belongs to another registry lifetime.
    #[error("handle belongs to another registry")]
    ForeignOwner,
    /// The slot is beyond the registry's capacity.
    #[error("slot out of range")]
    OutOfRange,
    /// The slot is not live (never created, or released and not yet reused).
    #[error("slot is free")]
    Free,
    /// The slot is live (or pending) with a different generation, or the handle's generation is 0.
    #[error("stale generation")]
    Stale,
    /// The entity is alive but its destruction has been recorded.
    #[error("entity is pending destruction")]
    Pending,
    /// The slot reached the terminal generation and is retired for good.
    #[error("slot retired")]
    Retired,
}

/// Failure to initialize a registry, pool, command buffer or world. A failed init consumes no
/// owner token.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum InitError {
    /// The requested capacity exceeds the slot space (`u32::MAX` slots).
    #[error("capacity {requested} exceeds the maximum {max}")]
    CapacityTooLarge {
        /// Requested capacity.
        requested: usize,
        /// Largest supported capacity.
        max: usize,
    },
    /// The allocator refused a fixed array (or its byte size overflowed).
    #[error("allocation of fixed storage failed")]
    Allocation,
    /// The owner-token source is exhausted.
    #[error("owner tokens exhausted")]
    IdentityExhausted,
    /// A component pool appears in more than one owned group.
    #[error("a pool is owned by more than one group")]
    GroupOverlap,
}

/// Failure of a structural operation (create, release, insert, remove, destroy, commit).
/// A failed operation changes nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum WorldError {
    /// Structural changes are only accepted inside the structural phase.
    #[error("structural change outside the structural phase")]
    InvalidPhase,
    /// The handle does not name a live entity of this registry.
    #[error("handle rejected: {0}")]
    Rejected(Rejection),
    /// Every slot is live, pending or retired.
    #[error("entity capacity exhausted")]
    CapacityExhausted,
    /// The creation-sequence counter reached its limit.
    #[error("creation sequence exhausted")]
    SequenceExhausted,
    /// The structural-revision counter reached its limit.
    #[error("structural revision exhausted")]
    RevisionExhausted,
    /// The pool was initialized against another registry.
    #[error("pool belongs to another registry")]
    ForeignPool,
    /// A command inserts or removes a component type the world does not store.
    #[error("component type not in the world's roster")]
    UnknownComponent,
    /// A batch gave a different number of values than entities.
    #[error("batch of {entities} entities with {values} values")]
    LengthMismatch {
        /// Entities in the batch.
        entities: usize,
        /// Values in the batch.
        values: usize,
    },
    /// A command names a provisional entity its buffer never created.
    #[error("provisional id unknown to this buffer")]
    UnknownProvisional,
}

/// Failure to record a command; the buffer and the registry are unchanged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum CommandError {
    /// The bounded command list or its value bytes are full.
    #[error("command buffer full")]
    BufferFull,
    /// The target entity is not active in this registry.
    #[error("target rejected: {0}")]
    Rejected(Rejection),
    /// The provisional id was issued by another buffer or before the last commit.
    #[error("provisional id from another buffer or epoch")]
    ForeignProvisional,
}
