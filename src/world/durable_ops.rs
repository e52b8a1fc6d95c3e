//! [`DurableOps`]: the durable-identity operations of every world (binding, resolve, names,
//! hierarchy, protection, subtree destroy, unload, duplication, outliner, counts), generic over
//! its [`Roster`] like [`WorldOps`].
//!
//! They need a world made with `try_new_durable` (else [`DurableError::Disabled`]) and check
//! that its durable part belongs to its registry. Every failing operation changes nothing.

use allocator_api2::alloc::Allocator;
use bytemuck::Pod;

use super::binding::{
    Activation, ActivationError, BindingKind, NoCatalog, ResidencyCatalog, Resolution,
};
use super::hierarchy::{Hierarchy, HierarchyError, OrphanPolicy};
use super::ops::insert;
use super::roster::{
    ComponentList, PoolsMutList, PoolsRefList, RefList, RefVisitor, Roster, TypeVisitor,
};
use super::ticket::{OperationTicket, StaleCompletion};
use super::{Durable, EntityId, EntityRefs, EntityRegistry, WorldError, WorldOps};
use crate::identity::{
    EntropySource, InstanceId, MintError, PersistentObjectKey, SourceObjectId, MINT_ATTEMPTS,
};

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

/// One row of the outliner: a durable or named entity in deterministic depth-first order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutlinerRow<'w> {
    /// The entity.
    pub entity: EntityId,
    /// 0 for a root.
    pub depth: u32,
    /// Its durable key, when bound.
    pub key: Option<PersistentObjectKey>,
    /// Its name (`""` when unnamed).
    pub name: &'w str,
}

/// Observability counts of a world (seed 000, "Debugging and observability").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct WorldCounts {
    /// Slots fixed at init.
    pub capacity: usize,
    /// Live entities (pending included).
    pub live: usize,
    /// Live entities whose destruction is recorded.
    pub pending: usize,
    /// Slots free for creation.
    pub free: usize,
    /// Slots retired at the terminal generation.
    pub retired: usize,
    /// Highest generation any slot reached.
    pub peak_generation: u32,
    /// Live bindings.
    pub bindings: usize,
    /// Binding capacity.
    pub binding_capacity: usize,
    /// Activation candidates refused as conflicts (key or entity already bound, repeats).
    pub binding_conflicts: u64,
    /// Activation candidates refused at the probe limit.
    pub probe_limit_hits: u64,
    /// Required references that did not resolve.
    pub unresolved_references: u64,
    /// Completions refused by ticket validation.
    pub stale_completions: u64,
    /// Entities with a parent.
    pub linked: usize,
    /// Name arena bytes in use (headers included) and its size.
    pub name_bytes: usize,
    /// The name arena's size.
    pub name_budget: usize,
}

impl WorldCounts {
    /// The counts as one JSON object (stable member order).
    pub fn to_json(&self) -> String {
        format!(
            concat!(
                "{{\"capacity\":{},\"live\":{},\"pending\":{},\"free\":{},\"retired\":{},",
                "\"peak_generation\":{},\"bindings\":{},\"binding_capacity\":{},",
                "\"binding_conflicts\":{},\"probe_limit_hits\":{},\"unresolved_references\":{},",
                "\"stale_completions\":{},\"linked\":{},\"name_bytes\":{},\"name_budget\":{}}}"
            ),
            self.capacity,
            self.live,
            self.pending,
            self.free,
            self.retired,
            self.peak_generation,
            self.bindings,
            self.binding_capacity,
            self.binding_conflicts,
            self.probe_limit_hits,
            self.unresolved_references,
            self.stale_completions,
            self.linked,
            self.name_bytes,
            self.name_budget
        )
    }
}

/// A world's registry and durable part, shared.
type Halves<'w, W> = (
    &'w EntityRegistry<<W as Roster>::Alloc>,
    &'w Durable<<W as Roster>::Alloc>,
);

/// The registry and durable part of an enabled world whose part belongs to its registry.
fn enabled<W: Roster>(world: &W) -> Result<Halves<'_, W>, DurableError> {
    let (registry, durable) = (world.registry(), world.durable_ref());
    if !durable.is_enabled() {
        return Err(DurableError::Disabled);
    }
    if durable.owner() != registry.owner() {
        return Err(WorldError::ForeignPool.into());
    }
    Ok((registry, durable))
}

/// Mutable parts of an enabled world, checked as [`enabled`].
#[allow(clippy::type_complexity)]
fn enabled_mut<W: Roster>(
    world: &mut W,
) -> Result<(&mut EntityRegistry<W::Alloc>, &mut Durable<W::Alloc>), DurableError> {
    enabled(&*world)?;
    let (registry, durable, _) = world.durable_parts();
    Ok((&mut registry.0, &mut durable.0))
}

/// Counts the components of the selection (revision budget of a duplicate).
struct CountComponents<'w, W: Roster> {
    world: &'w W,
    selection: &'w [EntityId],
    n: u64,
}

impl<W: Roster> TypeVisitor for CountComponents<'_, W> {
    fn visit<T: Pod>(&mut self) {
        if let Some(pool) = self.world.parts_ref().1.get::<T>() {
            self.n += self.selection.iter().filter(|e| pool.contains(**e)).count() as u64;
        }
    }
}

/// Copies every component of each selected entity to its copy.
struct CopyComponents<'w, W: Roster> {
    world: &'w mut W,
    selection: &'w [EntityId],
    copies: &'w [EntityId],
    result: Result<(), WorldError>,
}

impl<W: Roster> TypeVisitor for CopyComponents<'_, W> {
    fn visit<T: Pod>(&mut self) {
        for (src, dst) in self.selection.iter().zip(self.copies) {
            let value = self
                .world
                .parts_ref()
                .1
                .get::<T>()
                .and_then(|p| p.get(*src).copied());
            if let Some(v) = value {
                if let Err(e) = insert::<W, T>(self.world, *dst, v) {
                    self.result = Err(e);
                }
            }
        }
    }
}

/// Rewrites the copies' entity-typed fields whose target is in the selection.
struct RewriteRefs<'w, W: Roster> {
    world: &'w mut W,
    selection: &'w [EntityId],
    copies: &'w [EntityId],
}

impl<W: Roster> RefVisitor for RewriteRefs<'_, W> {
    fn visit<T: EntityRefs>(&mut self) {
        let (_, durable, mut pools) = self.world.durable_parts();
        let Some(pool) = pools.get::<T>() else { return };
        for dst in self.copies {
            if let Some(v) = pool.get_mut(*dst) {
                v.visit_entities(&mut |r: &mut EntityId| {
                    if let Some(i) = durable.0.selected(*r, self.selection) {
                        *r = self.copies[i];
                    }
                });
            }
        }
    }
}

impl<A: Allocator + Clone> Durable<A> {
    /// Position of `e` in the selection being duplicated (tagged in `remap` this epoch).
    fn selected(&self, e: EntityId, selection: &[EntityId]) -> Option<usize> {
        if e.owner() != self.owner() {
            return None;
        }
        let tag = *self.remap.get(e.slot() as usize)?;
        let i = (tag as u32).checked_sub(1)? as usize;
        ((tag >> 32) as u32 == self.epoch && selection.get(i) == Some(&e)).then_some(i)
    }

    /// Starts a new selection epoch (so no tag of an earlier one matches).
    fn next_epoch(&mut self) {
        if self.epoch == u32::MAX {
            self.remap.iter_mut().for_each(|t| *t = 0);
            self.epoch = 0;
        }
        self.epoch += 1;
    }
}

/// The live parent handle of `slot`'s node, if any (never a stale handle).
fn parent_of<A: Allocator + Clone, B: Allocator + Clone>(
    registry: &EntityRegistry<B>,
    hierarchy: &Hierarchy<A>,
    slot: u32,
) -> Option<EntityId> {
    let (s, g) = hierarchy.parent(slot)?;
    let p = EntityId::from_raw_parts(registry.owner(), s, g);
    registry.is_alive(p).then_some(p)
}

/// Depth-first rows of the outliner (see [`DurableOps::outliner`]).
#[derive(Debug)]
pub struct Outliner<'w, A: Allocator + Clone> {
    registry: &'w EntityRegistry<A>,
    durable: &'w Durable<A>,
    /// Next slot of the root scan.
    scan: u32,
    /// The node to emit next, with its depth.
    next: Option<(u32, u32)>,
}

impl<'w, A: Allocator + Clone> Outliner<'w, A> {
    fn shown(&self, slot: u32) -> bool {
        self.durable.hierarchy.has_links(slot) || self.durable.bindings.may_bind(slot)
    }

    fn next_root(&mut self) -> Option<(u32, u32)> {
        while (self.scan as usize) < self.registry.capacity() {
            let s = self.scan;
            self.scan += 1;
            if self.registry.live_at(s).is_some()
                && self.durable.hierarchy.parent(s).is_none()
                && self.shown(s)
            {
                return Some((s, 0));
            }
        }
        None
    }

    /// The node after `slot` (at `depth`) in depth-first order, within its root's tree.
    fn successor(&self, slot: u32, depth: u32) -> Option<(u32, u32)> {
        let h = &self.durable.hierarchy;
        if let Some(c) = h.first_child(slot) {
            return Some((c, depth + 1));
        }
        let (mut s, mut d) = (slot, depth);
        loop {
            if d == 0 {
                return None;
            }
            if let Some(n) = h.next_sibling(s) {
                return Some((n, d));
            }
            s = h.parent(s)?.0;
            d -= 1;
        }
    }
}

impl<'w, A: Allocator + Clone> Iterator for Outliner<'w, A> {
    type Item = OutlinerRow<'w>;
    fn next(&mut self) -> Option<OutlinerRow<'w>> {
        let (slot, depth) = match self.next.take() {
            Some(n) => n,
            None => self.next_root()?,
        };
        self.next = self.successor(slot, depth);
        let entity = self.registry.live_at(slot)?;
        Some(OutlinerRow {
            entity,
            depth,
            key: self.durable.bindings.key_of(entity),
            name: self.durable.hierarchy.name(slot),
        })
    }
}

/// The durable-identity operations of every world (module docs). Bring them into scope with
/// `use ludus::prelude::*`.
pub trait DurableOps: WorldOps {
    /// Publishes a batch of bindings, all or nothing (see
    /// [`WorldBindingTable::try_activate`](super::WorldBindingTable::try_activate)).
    ///
    /// # Errors
    /// [`DurableError::Disabled`], [`DurableError::Activation`].
    fn activate(&mut self, batch: &[Activation]) -> Result<(), DurableError> {
        let (registry, durable) = enabled_mut(self)?;
        durable.bindings.try_activate(registry, batch)?;
        Ok(())
    }

    /// Resolves `key` to a live entity of any kind (unbound keys: `Missing`).
    #[inline]
    fn resolve(&self, key: &PersistentObjectKey) -> Resolution {
        self.resolve_with(key, None, &NoCatalog)
    }

    /// Resolves `key`, requiring `kind` when given, asking `catalog` about unbound keys.
    #[inline]
    fn resolve_with<C: ResidencyCatalog + ?Sized>(
        &self,
        key: &PersistentObjectKey,
        kind: Option<BindingKind>,
        catalog: &C,
    ) -> Resolution {
        self.durable_ref()
            .bindings
            .try_resolve_with(self.registry(), key, kind, catalog)
    }

    /// Resolves a required reference: the entity, or the failed [`Resolution`] (counted as
    /// an unresolved reference).
    ///
    /// # Errors
    /// Every resolution but `Resolved`.
    fn resolve_required<C: ResidencyCatalog + ?Sized>(
        &mut self,
        key: &PersistentObjectKey,
        kind: Option<BindingKind>,
        catalog: &C,
    ) -> Result<EntityId, Resolution> {
        let r = self.resolve_with(key, kind, catalog);
        match r {
            Resolution::Resolved(e) => Ok(e),
            other => {
                self.durable_parts().1 .0.counters.unresolved_references += 1;
                Err(other)
            }
        }
    }

    /// The key bound to `entity` (one slot read, validated by owner and generation).
    #[inline]
    fn key_of(&self, entity: EntityId) -> Option<PersistentObjectKey> {
        self.durable_ref().bindings.key_of(entity)
    }

    /// The binding table's revision (compare with a cached negative result's).
    #[inline]
    fn binding_revision(&self) -> u64 {
        self.durable_ref().bindings.binding_revision()
    }

    /// `entity`'s name (`""` when unnamed).
    ///
    /// # Errors
    /// [`DurableError::Disabled`]; `World(Rejected)` when `entity` is not alive.
    fn name(&self, entity: EntityId) -> Result<&str, DurableError> {
        let (registry, durable) = enabled(self)?;
        registry.check_alive(entity)?;
        Ok(durable.hierarchy.name(entity.slot()))
    }

    /// Names `entity` (`""` clears), within the world's name budget.
    ///
    /// # Errors
    /// [`DurableError::Disabled`], `World(Rejected)`, `Hierarchy(NameBudget)`.
    fn set_name(&mut self, entity: EntityId, name: &str) -> Result<(), DurableError> {
        let (registry, durable) = enabled_mut(self)?;
        registry.check_alive(entity)?;
        durable.hierarchy.set_name(entity.slot(), name)?;
        Ok(())
    }

    /// `entity`'s parent: `Ok(None)` for a root, never a stale handle.
    ///
    /// # Errors
    /// [`DurableError::Disabled`]; `World(Rejected)` when `entity` is not alive.
    fn parent(&self, entity: EntityId) -> Result<Option<EntityId>, DurableError> {
        let (registry, durable) = enabled(self)?;
        registry.check_alive(entity)?;
        Ok(parent_of(registry, &durable.hierarchy, entity.slot()))
    }

    /// `entity`'s children in order (empty when it is not alive or has none).
    fn children(&self, entity: EntityId) -> impl Iterator<Item = EntityId> + '_ {
        let (registry, durable) = (self.registry(), self.durable_ref());
        let alive = durable.owner() == registry.owner() && registry.is_alive(entity);
        let first = if alive { Some(entity.slot()) } else { None };
        first
            .into_iter()
            .flat_map(move |s| durable.hierarchy.children(s))
            .filter_map(move |c| registry.live_at(c))
    }

    /// Moves `child` under `parent` (appended as its last child) or to the root.
    ///
    /// # Errors
    /// [`DurableError::Disabled`], `World(Rejected)` for a dead child or parent,
    /// `Hierarchy(Protected)` for a protected child, `Hierarchy(Cycle)` when `parent` is
    /// `child` or one of its descendants.
    fn set_parent(
        &mut self,
        child: EntityId,
        parent: Option<EntityId>,
    ) -> Result<(), DurableError> {
        let (registry, durable) = enabled_mut(self)?;
        registry.check_alive(child)?;
        let h = &mut durable.hierarchy;
        if h.is_protected(child.slot()) {
            return Err(HierarchyError::Protected.into());
        }
        if let Some(p) = parent {
            registry.check_alive(p)?;
            if h.is_ancestor_or_self(child.slot(), p.slot()) {
                return Err(HierarchyError::Cycle.into());
            }
        }
        h.set_parent(child.slot(), parent);
        Ok(())
    }

    /// Moves `child` to position `index` among its parent's children.
    ///
    /// # Errors
    /// [`DurableError::Disabled`], `World(Rejected)`, `Hierarchy(NotAChild)` for a root,
    /// `Hierarchy(ChildIndex)`.
    fn move_child(&mut self, child: EntityId, index: usize) -> Result<(), DurableError> {
        let (registry, durable) = enabled_mut(self)?;
        registry.check_alive(child)?;
        durable.hierarchy.move_child(child.slot(), index)?;
        Ok(())
    }

    /// Protects a root entity (it cannot be destroyed, duplicated or reparented) or lifts
    /// the protection.
    ///
    /// # Errors
    /// [`DurableError::Disabled`], `World(Rejected)`, `Hierarchy(NotRoot)`.
    fn set_protected(&mut self, entity: EntityId, protected: bool) -> Result<(), DurableError> {
        let (registry, durable) = enabled_mut(self)?;
        registry.check_alive(entity)?;
        durable.hierarchy.set_protected(entity.slot(), protected)?;
        Ok(())
    }

    /// Whether `entity` is alive and protected.
    fn is_protected(&self, entity: EntityId) -> bool {
        self.registry().is_alive(entity) && self.durable_ref().is_protected(entity)
    }

    /// Sets what every later destroy does with the destroyed entity's children.
    fn set_orphan_policy(&mut self, policy: OrphanPolicy) {
        self.durable_parts().1 .0.policy = policy;
    }

    /// Destroys `entity` and all its descendants (leaves first), all or nothing.
    ///
    /// # Errors
    /// As [`WorldOps::destroy`] (checked for the whole subtree first); returns how many
    /// entities were destroyed.
    fn destroy_subtree(&mut self, entity: EntityId) -> Result<usize, DurableError> {
        let (registry, durable) = enabled(self)?;
        registry.check_alive(entity)?;
        if durable.is_protected(entity) {
            return Err(WorldError::Protected.into());
        }
        let mut n = 0u64;
        let mut at = Some((entity.slot(), 0u32));
        let outliner = Outliner {
            registry,
            durable,
            scan: u32::MAX,
            next: None,
        };
        while let Some((s, d)) = at {
            n += 1;
            at = outliner.successor(s, d);
        }
        registry.check_revisions(n * (Self::Components::LEN as u64 + 1))?;
        loop {
            // The deepest first child of the subtree is a leaf.
            let mut leaf = entity.slot();
            while let Some(c) = self.durable_ref().hierarchy.first_child(leaf) {
                leaf = c;
            }
            let e = self
                .registry()
                .live_at(leaf)
                .ok_or(WorldError::ForeignPool)?;
            self.destroy(e)?;
            if leaf == entity.slot() {
                break;
            }
        }
        Ok(n as usize)
    }

    /// Unloads an instance scope: destroys every entity bound under `instance`, all or
    /// nothing, and returns how many. Their keys then resolve `Missing` until a reload binds
    /// them again (to fresh handles).
    ///
    /// # Errors
    /// [`DurableError::Disabled`], `World(InvalidPhase)`, `World(Protected)`,
    /// `World(RevisionExhausted)`.
    fn unload(&mut self, instance: InstanceId) -> Result<usize, DurableError> {
        let (registry, durable) = enabled(self)?;
        registry.check_phase()?;
        let mut n = 0u64;
        for (key, e, _) in durable.bindings.iter() {
            if key.instance == instance && registry.is_alive(e) {
                if durable.is_protected(e) {
                    return Err(WorldError::Protected.into());
                }
                n += 1;
            }
        }
        registry.check_revisions(n * (Self::Components::LEN as u64 + 1))?;
        for slot in 0..registry.capacity() as u32 {
            let Some(e) = self.registry().live_at(slot) else {
                continue;
            };
            if self.key_of(e).is_some_and(|k| k.instance == instance) {
                self.destroy(e)?;
            }
        }
        Ok(n as usize)
    }

    /// Duplicates `selection` as one graph transaction, writing the copies to `out` (same
    /// order). Each copy gets a new handle, the source's name and every component; a bound
    /// source's copy is bound in the same instance scope under a freshly minted
    /// `SourceObjectId` (from `entropy`, checked against the table and the ids minted so far,
    /// at most [`MINT_ATTEMPTS`] candidates each). References between selected entities —
    /// parent links and the `entity_refs` fields — are rewritten to the copies; references
    /// outside the selection are kept. Copies join their (possibly copied) parent last, in
    /// selection order. All or nothing: the whole selection is validated and every id minted
    /// before anything is created.
    ///
    /// # Errors
    /// [`DurableError::Disabled`], `LengthMismatch`, `DuplicateSelection`, `World(..)`
    /// (phase, a dead or pending entity, `Protected`, capacity, budgets),
    /// `Hierarchy(NameBudget)`, `Activation(CapacityExhausted)`, `Mint(..)`.
    fn duplicate<S: EntropySource + ?Sized>(
        &mut self,
        selection: &[EntityId],
        entropy: &mut S,
        out: &mut [EntityId],
    ) -> Result<(), DurableError> {
        if selection.len() != out.len() {
            return Err(DurableError::LengthMismatch {
                selection: selection.len(),
                out: out.len(),
            });
        }
        let (registry, durable) = enabled_mut(self)?;
        registry.check_phase()?;
        durable.next_epoch();
        let (mut bound, mut name_bytes) = (0usize, 0usize);
        for (i, &e) in selection.iter().enumerate() {
            if !registry.is_active(e) {
                return Err(WorldError::Rejected(
                    registry
                        .diagnose(e)
                        .err()
                        .unwrap_or(super::Rejection::Stale),
                )
                .into());
            }
            if durable.is_protected(e) {
                return Err(WorldError::Protected.into());
            }
            if durable.selected(e, selection).is_some() {
                return Err(DurableError::DuplicateSelection { index: i });
            }
            durable.remap[e.slot() as usize] = u64::from(durable.epoch) << 32 | (i as u64 + 1);
            bound += usize::from(durable.bindings.key_of(e).is_some());
            name_bytes +=
                Hierarchy::<Self::Alloc>::name_cost(durable.hierarchy.name(e.slot()).len());
        }
        let free_bindings = durable.bindings.capacity() - durable.bindings.len();
        if bound > free_bindings {
            return Err(ActivationError::CapacityExhausted {
                requested: bound,
                available: free_bindings,
                capacity: durable.bindings.capacity(),
            }
            .into());
        }
        if name_bytes > durable.hierarchy.name_free() {
            return Err(HierarchyError::NameBudget {
                requested: name_bytes,
                free: durable.hierarchy.name_free(),
                budget: durable.hierarchy.name_budget(),
            }
            .into());
        }
        registry.check_create_budget(selection.len())?;
        let mut count = CountComponents {
            world: &*self,
            selection,
            n: 0,
        };
        Self::Components::each(&mut count);
        let inserts = count.n;
        self.registry()
            .check_revisions(selection.len() as u64 + inserts)?;
        // Mint every id before creating anything: the new keys are reserved in the forward
        // map (so later candidates see them) and released again on any failure.
        let (_, durable) = enabled_mut(self)?;
        let mut reserved = 0;
        let mut failure = None;
        for &e in selection {
            let Some(key) = durable.bindings.key_of(e) else {
                continue;
            };
            match mint_key(&mut durable.bindings, key.instance, entropy) {
                Ok(new) => {
                    durable.bindings.scratch_push(new);
                    reserved += 1;
                }
                Err(m) => {
                    failure = Some(m);
                    break;
                }
            }
        }
        if let Some(m) = failure {
            durable.bindings.release_scratch(reserved);
            return Err(m.into());
        }
        // Nothing below can fail: phase, liveness, capacity and budgets were checked.
        let (registry, _) = enabled_mut(self)?;
        registry.try_create_batch(out)?;
        let mut copy = CopyComponents {
            world: &mut *self,
            selection,
            copies: out,
            result: Ok(()),
        };
        Self::Components::each(&mut copy);
        copy.result?;
        Self::Refs::each(&mut RewriteRefs {
            world: &mut *self,
            selection,
            copies: out,
        });
        let (registry, durable) = enabled_mut(self)?;
        let mut k = 0;
        for (&src, &dst) in selection.iter().zip(out.iter()) {
            let parent = parent_of(registry, &durable.hierarchy, src.slot())
                .map(|p| durable.selected(p, selection).map_or(p, |j| out[j]));
            durable.hierarchy.set_parent(dst.slot(), parent);
            durable.hierarchy.copy_name(src.slot(), dst.slot());
            if let Some((_, kind)) = durable.bindings.binding_of(src) {
                durable.bindings.publish_scratch(k, dst, kind);
                k += 1;
            }
        }
        durable.bindings.finish_scratch(k);
        Ok(())
    }

    /// The outliner: every live entity with a binding, a name, a parent or children, in
    /// deterministic depth-first order (roots by slot, children in their order).
    fn outliner(&self) -> Outliner<'_, Self::Alloc> {
        Outliner {
            registry: self.registry(),
            durable: self.durable_ref(),
            scan: 0,
            next: None,
        }
    }

    /// Issues a ticket for an asynchronous operation on `entity`: a new request sequence
    /// (superseding earlier tickets of the slot) and its current content revision.
    ///
    /// # Errors
    /// [`DurableError::Disabled`], `World(Rejected)`.
    fn issue_ticket(&mut self, entity: EntityId) -> Result<OperationTicket, DurableError> {
        let (registry, durable) = enabled_mut(self)?;
        registry.check_alive(entity)?;
        let t = &mut durable.tickets[entity.slot() as usize];
        t.request += 1;
        Ok(OperationTicket {
            entity,
            request: t.request,
            content_revision: t.content,
        })
    }

    /// Cancels every outstanding ticket of `entity` (their completions are refused).
    ///
    /// # Errors
    /// [`DurableError::Disabled`], `World(Rejected)`.
    fn cancel_tickets(&mut self, entity: EntityId) -> Result<(), DurableError> {
        let (registry, durable) = enabled_mut(self)?;
        registry.check_alive(entity)?;
        durable.tickets[entity.slot() as usize].request += 1;
        Ok(())
    }

    /// Records that `entity`'s content changed (tickets issued before are refused); returns
    /// the new content revision.
    ///
    /// # Errors
    /// [`DurableError::Disabled`], `World(Rejected)`.
    fn touch_content(&mut self, entity: EntityId) -> Result<u64, DurableError> {
        let (registry, durable) = enabled_mut(self)?;
        registry.check_alive(entity)?;
        let t = &mut durable.tickets[entity.slot() as usize];
        t.content += 1;
        Ok(t.content)
    }

    /// Validates a completion before its result is published: the entity is the same live
    /// incarnation, no newer request was issued for it, its content revision is unchanged.
    /// A refusal is counted (`stale_completions`).
    ///
    /// # Errors
    /// [`StaleCompletion`].
    fn complete(&mut self, ticket: &OperationTicket) -> Result<(), StaleCompletion> {
        let Ok((registry, durable)) = enabled_mut(self) else {
            return Err(StaleCompletion::Disabled);
        };
        let verdict = if !registry.is_alive(ticket.entity) {
            Err(StaleCompletion::Destroyed)
        } else {
            let t = durable.tickets[ticket.entity.slot() as usize];
            if t.request != ticket.request {
                Err(StaleCompletion::Superseded { latest: t.request })
            } else if t.content != ticket.content_revision {
                Err(StaleCompletion::ContentChanged {
                    expected: ticket.content_revision,
                    current: t.content,
                })
            } else {
                Ok(())
            }
        };
        if verdict.is_err() {
            durable.counters.stale_completions += 1;
        }
        verdict
    }

    /// Test hook (feature `test-hooks`): fixes the binding table's hashing secret (as if it
    /// had leaked) and drops every binding, for crafted-collision tests.
    #[cfg(feature = "test-hooks")]
    fn test_hook_set_binding_secret(&mut self, secret: [u64; 4]) {
        self.durable_parts()
            .1
             .0
            .bindings
            .test_hook_set_secret(secret);
    }

    /// Observability counts (O(capacity)).
    fn counts(&self) -> WorldCounts {
        let (registry, durable) = (self.registry(), self.durable_ref());
        let (pending, peak_generation) = registry.census();
        let stats = durable.bindings.stats();
        WorldCounts {
            capacity: registry.capacity(),
            live: registry.len(),
            pending,
            free: registry.available(),
            retired: registry.retired(),
            peak_generation,
            bindings: durable.bindings.len(),
            binding_capacity: durable.bindings.capacity(),
            binding_conflicts: stats.conflicts,
            probe_limit_hits: stats.probe_limit_hits,
            unresolved_references: durable.counters.unresolved_references,
            stale_completions: durable.counters.stale_completions,
            linked: durable.hierarchy.linked(),
            name_bytes: durable.hierarchy.name_bytes_live(),
            name_budget: durable.hierarchy.name_budget(),
        }
    }
}

impl<R: Roster> DurableOps for R {}

/// Mints a `SourceObjectId` whose key in `instance` is free, reserving it.
fn mint_key<A: Allocator + Clone, S: EntropySource + ?Sized>(
    table: &mut super::WorldBindingTable<A>,
    instance: InstanceId,
    entropy: &mut S,
) -> Result<PersistentObjectKey, MintError> {
    for _ in 0..MINT_ATTEMPTS {
        let object = SourceObjectId::mint(entropy)?;
        let key = PersistentObjectKey::new(instance, object);
        if table.reserve(&key) {
            return Ok(key);
        }
    }
    Err(MintError::Conflict(crate::identity::IdentityConflict))
}
