//! Typed errors of the world: initialization, structural operations, rejections and commands.

/// Why a handle does not name an active entity of a registry, as reported by
/// [`EntityRegistry::diagnose`](crate::world::store::registry::EntityRegistry::diagnose).
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
    /// The requested capacity exceeds what the layout addresses: the slot space (`u32::MAX`
    /// slots), or [`MAX_NAME_BYTES`](crate::durable::hierarchy::MAX_NAME_BYTES) for a durable world's name arena.
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
    /// An owned group is invalid: two groups share a pool without being nested (one's
    /// members a strict subset of the other's), a pool is twice in one group, a group has no
    /// member or more than [`MAX_GROUP_MEMBERS`](crate::world::raw::dense::MAX_GROUP_MEMBERS), or a member is
    /// not a component of the world.
    #[error("invalid owned groups: two groups share a pool without being nested, a pool twice in one group, an empty or oversized group (at most {max} members), or a member the world does not store", max = crate::world::raw::dense::MAX_GROUP_MEMBERS)]
    GroupOverlap,
    /// The world's roster names one component type twice (use newtypes).
    #[error("a component type appears twice in the world's roster; wrap one in a newtype")]
    DuplicateComponent,
    /// A pool handed to a world at init is bound to another registry, not empty, or sized
    /// differently from the registry.
    #[error("a pool does not match the world's registry (bound elsewhere, not empty, or another capacity)")]
    PoolMismatch,
    /// A type of the `entity_refs` clause is not a component of the world.
    #[error("an entity_refs type is not a component of the world")]
    UnknownRefComponent,
    /// A component's type implements `EntityRefs` (it has entity fields) but the world's
    /// `entity_refs` clause does not declare it: its references would be copied raw.
    #[error(
        "component {component} implements EntityRefs but is not in the world's entity_refs clause"
    )]
    UndeclaredEntityRefs {
        /// The component's roster name.
        component: &'static str,
    },
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
    /// Not enough slots for the creates asked for: every slot is live, pending or retired (a
    /// slot released at the terminal generation is retired for good).
    #[error("entity capacity exhausted: {requested} requested, {available} available of {capacity} slots ({retired} retired); size the world for its peak population")]
    CapacityExhausted {
        /// Entities the call would create.
        requested: usize,
        /// Slots free now.
        available: usize,
        /// The registry's fixed capacity.
        capacity: usize,
        /// Slots retired at the terminal generation.
        retired: usize,
    },
    /// The creation-sequence counter reached its limit.
    #[error("creation sequence exhausted")]
    SequenceExhausted,
    /// The structural-revision counter reached its limit.
    #[error("structural revision exhausted")]
    RevisionExhausted,
    /// The pool was initialized against another registry (or the world's hooks serve
    /// another registry).
    #[error("pool belongs to another registry")]
    ForeignPool,
    /// The entity is protected (a durable world's `set_protected`, as for a level's World
    /// Settings): it cannot be destroyed, duplicated or reparented.
    #[error("entity is protected")]
    Protected,
    /// A component type the world does not store (a command's, or one a hand-written roster
    /// did not hand out).
    #[error("component type not in the world's roster")]
    UnknownComponent,
    /// Bytes of a component's size that hold no value of it (a `bool` byte other than 0 or
    /// 1, an enum discriminant no variant has): read back from a command, transaction or
    /// checkpoint, they are refused before anything changes.
    #[error("component bytes hold no valid value")]
    InvalidValue,
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
    /// The buffer's commands were recorded against another world's registry.
    #[error("command buffer recorded against another registry")]
    ForeignCommands,
    /// The world cleared every pending mark (`clear_pending`) since this buffer recorded a
    /// destroy; clear the buffer and record again.
    #[error("the pending marks of this buffer's destroys were cleared; clear it and record again")]
    MarksCleared,
    /// A bundle names one component type twice (each entity holds at most one value per
    /// type: use a newtype for a second one).
    #[error("bundle names {component} twice")]
    DuplicateComponent {
        /// The repeated type.
        component: &'static str,
    },
}

/// Failure to record a command; the buffer and the registry are unchanged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum CommandError {
    /// The bounded command list or its value bytes are full; commit (or clear) the buffer, or
    /// size it for the peak number of commands per frame.
    #[error("command buffer full: {commands} of {command_capacity} commands, {bytes_requested} value bytes requested with {bytes_free} free")]
    BufferFull {
        /// Commands recorded.
        commands: usize,
        /// The buffer's command capacity.
        command_capacity: usize,
        /// Value bytes the refused command needs.
        bytes_requested: usize,
        /// Value bytes still free.
        bytes_free: usize,
    },
    /// The target entity is not active in this registry.
    #[error("target rejected: {0}")]
    Rejected(Rejection),
    /// The provisional id was issued by another buffer or before the last commit.
    #[error("provisional id from another buffer or epoch")]
    ForeignProvisional,
    /// The world cleared every pending mark since this buffer recorded a destroy; clear it.
    #[error("the pending marks of this buffer's destroys were cleared; clear it and record again")]
    MarksCleared,
    /// A bundle names one component type twice.
    #[error("bundle names {component} twice")]
    DuplicateComponent {
        /// The repeated type.
        component: &'static str,
    },
    /// The buffer holds commands recorded against another registry (a buffer serves one
    /// world between commits).
    #[error("buffer holds commands recorded against another registry")]
    ForeignRegistry,
}
