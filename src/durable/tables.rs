//! [`Durable`]: the durable-identity part of a world — its [`WorldBindingTable`] and its
//! [`Hierarchy`] (names, parents, ordered children, protection) — and the world's entity-typed
//! component fields ([`EntityRefs`]).
//!
//! A world made with `try_new` has a disabled part (no memory, one branch per destroy); one made
//! with `try_new_durable` sizes both tables once from its capacity. Every destroy of the world
//! (direct, by a commit, by an unload) detaches the entity here before its slot is released:
//! its binding is removed (so the key resolves `Missing`, and a recycled slot never inherits
//! it), its children are reparented by the world's [`OrphanPolicy`], its name is dropped.

use allocator_api2::alloc::{Allocator, Global};
use allocator_api2::vec::Vec;
use bytemuck::Pod;

use crate::durable::binding::WorldBindingTable;
use crate::durable::hierarchy::{Hierarchy, OrphanPolicy};
use crate::durable::ticket::TicketState;
use crate::identity::OwnerToken;
use crate::world::raw::keys::EntityId;
use crate::world::store::error::InitError;
use crate::world::store::read_only::ReadOnly;
use crate::world::store::registry::EntityRegistry;
use crate::world::store::reserve::filled;

/// How a durable world sizes its identity tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DurableConfig {
    /// Bytes of the name arena (names are stored with a 6-byte header each); at most
    /// [`MAX_NAME_BYTES`](crate::durable::hierarchy::MAX_NAME_BYTES), else init fails with
    /// [`InitError::CapacityTooLarge`].
    pub name_bytes: usize,
    /// Most bindings at once (at most the world's capacity; `usize::MAX`: the capacity).
    pub bindings: usize,
    /// What a destroy does with the entity's children.
    pub orphans: OrphanPolicy,
    /// Whether entities can carry stable ids (persistent spawn, transactions, checkpoints;
    /// `PersistentOps`): a second index of the binding table's shape.
    pub stable_ids: bool,
}

impl Default for DurableConfig {
    fn default() -> Self {
        Self {
            name_bytes: 64 * 1024,
            bindings: usize::MAX,
            orphans: OrphanPolicy::Detach,
            stable_ids: true,
        }
    }
}

/// A component type with entity-typed fields: duplication, save and restore rewrite them
/// through this visitor instead of guessing (in the spirit of bevy's `MapEntities`). Declare
/// such types in the world's `entity_refs { … }` clause.
///
/// ```
/// use ludus::world::{EntityId, EntityRefs};
/// #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
/// #[repr(C)]
/// pub struct Follow { pub target: EntityId, pub distance: f32, pub _pad: u32 }
/// impl EntityRefs for Follow {
///     fn visit_entities(&mut self, visit: &mut dyn FnMut(&mut EntityId)) {
///         visit(&mut self.target);
///     }
/// }
/// ```
pub trait EntityRefs: Pod {
    /// Calls `visit` once with every entity-typed field (null fields included).
    fn visit_entities(&mut self, visit: &mut dyn FnMut(&mut EntityId));
}

/// Counters of the durable part (observability).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DurableCounters {
    /// Required references that did not resolve (duplication, restore, `resolve_required`).
    pub unresolved_references: u64,
    /// Completions refused by ticket validation.
    pub stale_completions: u64,
}

/// The durable-identity part of a world (module docs). Read it through the world's `durable`
/// field; it changes only through the world's [`DurableOps`](crate::durable::durable_ops::DurableOps).
pub struct Durable<A: Allocator + Clone = Global> {
    owner: OwnerToken,
    pub(crate) bindings: WorldBindingTable<A>,
    /// Stable ids (`PersistentId` as a 32-byte key, its namespace as the kind).
    pub(crate) stable: WorldBindingTable<A>,
    pub(crate) hierarchy: Hierarchy<A>,
    pub(crate) policy: OrphanPolicy,
    /// Duplication scratch, per slot: `epoch << 32 | (index + 1)` of a selected entity.
    pub(crate) remap: Vec<u64, A>,
    pub(crate) epoch: u32,
    pub(crate) counters: DurableCounters,
    /// Per slot: ticket request sequence and content revision (monotone across incarnations).
    pub(crate) tickets: Vec<TicketState, A>,
}

impl<A: Allocator + Clone> core::fmt::Debug for Durable<A> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Durable")
            .field("enabled", &self.is_enabled())
            .field("bindings", &self.bindings)
            .field("hierarchy", &self.hierarchy)
            .field("policy", &self.policy)
            .field("counters", &self.counters)
            .finish()
    }
}

impl<A: Allocator + Clone> Durable<A> {
    fn try_new_in(
        capacity: usize,
        config: Option<DurableConfig>,
        alloc: A,
    ) -> Result<Self, InitError> {
        let (slots, c) = match config {
            Some(c) => (capacity, c),
            None => (0, DurableConfig::default()),
        };
        let bindings = if slots == 0 { 0 } else { c.bindings.min(slots) };
        Ok(Self {
            owner: 0,
            bindings: WorldBindingTable::try_new_in(0, slots, bindings, alloc.clone())?,
            stable: WorldBindingTable::try_new_raw_in(
                0,
                slots,
                if c.stable_ids { slots } else { 0 },
                alloc.clone(),
            )?,
            hierarchy: Hierarchy::try_new_in(
                slots,
                if slots == 0 { 0 } else { c.name_bytes },
                alloc.clone(),
            )?,
            policy: c.orphans,
            remap: filled(slots, 0, alloc.clone())?,
            epoch: 0,
            counters: DurableCounters::default(),
            tickets: filled(slots, TicketState::default(), alloc)?,
        })
    }

    /// Attaches a fresh part to the registry its world was just bound to (the only time a
    /// part is attached, so a registry has one attached part and every destroy detaches in
    /// it).
    pub(crate) fn attach<B: Allocator + Clone>(&mut self, registry: &EntityRegistry<B>) {
        if self.owner == 0 {
            self.owner = registry.owner();
            self.bindings.attach(registry.owner());
            self.stable.attach(registry.owner());
        }
    }

    /// Whether a fresh part can attach to a registry of `capacity` slots.
    pub(crate) fn fits(&self, capacity: usize) -> bool {
        self.owner == 0 && (self.hierarchy.slots() == 0 || self.hierarchy.slots() == capacity)
    }

    /// Owner token of the world's registry (0 before init completes).
    #[inline]
    pub fn owner(&self) -> OwnerToken {
        self.owner
    }

    /// Whether the world was made with durable tables (`try_new_durable`).
    #[inline(always)]
    pub fn is_enabled(&self) -> bool {
        self.hierarchy.slots() != 0
    }

    /// The binding table.
    #[inline]
    pub fn bindings(&self) -> &WorldBindingTable<A> {
        &self.bindings
    }

    /// Names and links.
    #[inline]
    pub fn hierarchy(&self) -> &Hierarchy<A> {
        &self.hierarchy
    }

    /// What a destroy does with children.
    #[inline]
    pub fn orphan_policy(&self) -> OrphanPolicy {
        self.policy
    }

    /// Observability counters.
    #[inline]
    pub fn counters(&self) -> DurableCounters {
        self.counters
    }

    /// Bytes of fixed storage.
    pub fn footprint_bytes(&self) -> usize {
        self.bindings.footprint_bytes()
            + self.stable.footprint_bytes()
            + self.hierarchy.footprint_bytes()
            + self.remap.len() * core::mem::size_of::<u64>()
            + self.tickets.len() * core::mem::size_of::<TicketState>()
    }

    /// The live parent handle of `slot`'s node, if any (never a stale handle).
    pub(crate) fn parent_handle<B: Allocator + Clone>(
        &self,
        registry: &EntityRegistry<B>,
        slot: u32,
    ) -> Option<EntityId> {
        let (s, g) = self.hierarchy.parent(slot)?;
        let p = EntityId::from_raw_parts(registry.owner(), s, g);
        registry.is_alive(p).then_some(p)
    }

    /// Whether `entity`'s slot is protected (a destroy must be refused).
    #[inline(always)]
    pub(crate) fn is_protected(&self, entity: EntityId) -> bool {
        self.is_enabled() && self.hierarchy.is_protected(entity.slot())
    }

    /// The destroy hook: detaches `entity` (alive, checked by the caller) before its slot is
    /// released — binding removed, children reparented by policy, name dropped, tickets
    /// superseded.
    #[inline(always)]
    pub(crate) fn detach<B: Allocator + Clone>(
        &mut self,
        registry: &EntityRegistry<B>,
        entity: EntityId,
    ) {
        if !self.is_enabled() {
            return;
        }
        let slot = entity.slot();
        // Every ticket of the slot is superseded (even one re-pointed at a later incarnation).
        self.tickets[slot as usize].request += 1;
        if self.bindings.may_bind(slot) {
            self.bindings.detach(entity);
        }
        if self.stable.may_bind(slot) {
            self.stable.detach(entity);
        }
        if self.hierarchy.has_links(slot) {
            let grandparent = self
                .hierarchy
                .parent(slot)
                .map(|(s, g)| EntityId::from_raw_parts(registry.owner(), s, g));
            self.hierarchy.detach(slot, self.policy, grandparent);
        }
    }
}

impl<A: Allocator + Clone> ReadOnly<Durable<A>> {
    /// The durable part of a new world of `capacity` entities: disabled for `None`, else
    /// sized by `config`. The `world!` constructors call it.
    ///
    /// # Errors
    /// [`InitError::Allocation`], [`InitError::CapacityTooLarge`].
    pub fn try_new_durable(
        capacity: usize,
        config: Option<DurableConfig>,
        alloc: A,
    ) -> Result<Self, InitError> {
        Durable::try_new_in(capacity, config, alloc).map(Self::wrap)
    }
}
