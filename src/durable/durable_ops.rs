//! [`DurableOps`]: the durable-identity operations of every durable world (binding, resolve,
//! names, hierarchy, protection, subtree destroy, unload, duplication, outliner, counts),
//! generic over its [`DurableRoster`] as [`WorldOps`] is over its roster.
//!
//! They need durable tables with room for entities (a world of no capacity has none: else
//! [`DurableError::Disabled`]) and check that the tables belong to the world's registry. Every
//! failing operation changes nothing.

use crate::durable::binding::{Activation, BindingKind, NoCatalog, ResidencyCatalog, Resolution};
use crate::durable::duplicate_graph;
use crate::durable::error::DurableError;
use crate::durable::hierarchy::{HierarchyError, OrphanPolicy};
use crate::durable::outliner::{Outliner, WorldCounts};
use crate::durable::tables::{enabled, enabled_mut, DurableRoster};
use crate::durable::ticket::{OperationTicket, StaleCompletion};
use crate::identity::{EntropySource, InstanceId, PersistentObjectKey};
use crate::world::raw::keys::EntityId;
use crate::world::store::error::WorldError;
use crate::world::store::roster::ComponentList;
use crate::world::world_ops::WorldOps;

/// The durable-identity operations of every durable world (a world declared `durable` in
/// [`world!`](crate::world!); module docs). Bring them into scope with `use ludus::prelude::*`.
pub trait DurableOps: WorldOps + DurableRoster {
    /// Publishes a batch of bindings, all or nothing (see
    /// [`WorldBindingTable::try_activate`](crate::durable::binding::WorldBindingTable::try_activate)).
    ///
    /// # Errors
    /// [`DurableError::Disabled`], [`DurableError::Activation`].
    fn activate(&mut self, batch: &[Activation]) -> Result<(), DurableError> {
        let (registry, durable) = enabled_mut(self)?;
        durable.bindings.try_activate(registry, batch)?;
        Ok(())
    }

    /// Resolves every key of `keys` to its live entity of any kind (`None`: not resolved;
    /// ask [`resolve_with`](Self::resolve_with) about those for the reason), written to the
    /// same place of `out`; returns how many resolved. Equal to resolving them one by one,
    /// and faster for many keys in a large table (see
    /// [`WorldBindingTable::lookup_batch`](crate::durable::binding::WorldBindingTable::lookup_batch)).
    ///
    /// # Errors
    /// [`DurableError::Disabled`]; [`DurableError::LengthMismatch`] when `out` is shorter
    /// than `keys` (nothing written).
    fn resolve_batch(
        &self,
        keys: &[PersistentObjectKey],
        out: &mut [Option<EntityId>],
    ) -> Result<usize, DurableError> {
        if out.len() < keys.len() {
            return Err(DurableError::LengthMismatch {
                selection: keys.len(),
                out: out.len(),
            });
        }
        let (registry, durable) = enabled(self)?;
        Ok(durable.bindings.lookup_batch_attached(registry, keys, out))
    }

    /// Resolves `key` to a live entity of any kind (unbound keys: `Missing`).
    #[inline(always)]
    fn resolve(&self, key: &PersistentObjectKey) -> Resolution {
        self.resolve_with(key, None, &NoCatalog)
    }

    /// Resolves `key`, requiring `kind` when given, asking `catalog` about unbound keys.
    #[inline(always)]
    fn resolve_with<C: ResidencyCatalog + ?Sized>(
        &self,
        key: &PersistentObjectKey,
        kind: Option<BindingKind>,
        catalog: &C,
    ) -> Resolution {
        self.durable()
            .bindings
            .resolve_attached(self.registry(), key, kind, catalog)
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
        self.durable().bindings.key_of(entity)
    }

    /// The binding table's revision (compare with a cached negative result's).
    #[inline]
    fn binding_revision(&self) -> u64 {
        self.durable().bindings.binding_revision()
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

    /// `entity`'s label (`""`: none): a saved record's readable, unique legacy id, kept beside
    /// the name.
    ///
    /// # Errors
    /// [`DurableError::Disabled`]; `World(Rejected)` when `entity` is not alive.
    fn label(&self, entity: EntityId) -> Result<&str, DurableError> {
        let (registry, durable) = enabled(self)?;
        registry.check_alive(entity)?;
        Ok(durable.hierarchy.label(entity.slot()))
    }

    /// Labels `entity` (`""` clears): 1–64 ASCII letters, digits or `_ - . :`, stored with
    /// its name in the name arena. A record saved with it writes this label.
    ///
    /// # Errors
    /// [`DurableError::Disabled`], `World(Rejected)`, `Hierarchy(InvalidLabel)`,
    /// `Hierarchy(NameBudget)`, `Hierarchy(NameTooLong)` (name and label together over
    /// `MAX_NAME_LEN`).
    fn set_label(&mut self, entity: EntityId, label: &str) -> Result<(), DurableError> {
        let (registry, durable) = enabled_mut(self)?;
        registry.check_alive(entity)?;
        durable.hierarchy.set_label(entity.slot(), label)?;
        Ok(())
    }

    /// `entity`'s parent: `Ok(None)` for a root, never a stale handle.
    ///
    /// # Errors
    /// [`DurableError::Disabled`]; `World(Rejected)` when `entity` is not alive.
    fn parent(&self, entity: EntityId) -> Result<Option<EntityId>, DurableError> {
        let (registry, durable) = enabled(self)?;
        registry.check_alive(entity)?;
        Ok(durable.parent_handle(registry, entity.slot()))
    }

    /// `entity`'s children in order (empty when it is not alive or has none).
    fn children(&self, entity: EntityId) -> impl Iterator<Item = EntityId> + '_ {
        let (registry, durable) = (self.registry(), self.durable());
        let alive = durable.owner() == registry.owner() && registry.is_alive(entity);
        let first = if alive { Some(entity.slot()) } else { None };
        first
            .into_iter()
            .flat_map(move |s| durable.hierarchy.children(s))
            .filter_map(move |c| registry.live_at(c))
    }

    /// Moves `child` under `parent` (appended as its last child) or to the root. O(1) when
    /// `child` has no children (building a chain top-down is linear); else the cycle check
    /// walks `parent`'s ancestors.
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

    /// Whether `entity` is alive and protected (false when the durable part is another
    /// registry's: its marks are not this world's entities').
    fn is_protected(&self, entity: EntityId) -> bool {
        enabled(self).is_ok_and(|(registry, durable)| {
            registry.is_alive(entity) && durable.is_protected(entity)
        })
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
        let outliner = Outliner::new(registry, durable);
        while let Some((s, d)) = at {
            n += 1;
            at = outliner.successor(s, d);
        }
        registry.check_revisions(n * (Self::Components::LEN as u64 + 1))?;
        // Leaves first: the deepest first child below `from` is a leaf; after its destroy the
        // walk goes on from the leaf's parent, so each link is followed down once (O(n); from
        // the root each time, a chain of n cost n²/2 steps).
        let mut from = entity.slot();
        loop {
            let hierarchy = &self.durable().hierarchy;
            let mut leaf = from;
            while let Some(c) = hierarchy.first_child(leaf) {
                leaf = c;
            }
            let parent = hierarchy.parent(leaf).map(|(p, _)| p);
            let e = self
                .registry()
                .live_at(leaf)
                .ok_or(WorldError::ForeignPool)?;
            self.destroy(e)?;
            match parent {
                Some(p) if leaf != entity.slot() => from = p,
                _ => break,
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
    /// at most [`MINT_ATTEMPTS`](crate::identity::MINT_ATTEMPTS) candidates each). References between selected entities —
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
        duplicate_graph::duplicate(self, selection, entropy, out)
    }

    /// The outliner: every live entity with a binding, a stable id, a name, a parent,
    /// children or protection, in deterministic depth-first order (roots by slot, children in
    /// their order). No rows when the durable part is another registry's.
    fn outliner(&self) -> Outliner<'_, Self::Alloc> {
        Outliner::new(self.registry(), self.durable())
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

    /// Observability counts (O(capacity)). The durable counts are zero when the durable part
    /// is another registry's (its figures are not this world's).
    fn counts(&self) -> WorldCounts {
        let (registry, durable) = (self.registry(), self.durable());
        let (pending, peak_generation) = registry.census();
        let registry_counts = WorldCounts {
            capacity: registry.capacity(),
            live: registry.len(),
            pending,
            free: registry.available(),
            retired: registry.retired(),
            peak_generation,
            ..WorldCounts::default()
        };
        if durable.owner() != registry.owner() {
            return registry_counts;
        }
        let stats = durable.bindings.stats();
        WorldCounts {
            bindings: durable.bindings.len(),
            binding_capacity: durable.bindings.capacity(),
            binding_conflicts: stats.conflicts,
            probe_limit_hits: stats.probe_limit_hits,
            unresolved_references: durable.counters.unresolved_references,
            stale_completions: durable.counters.stale_completions,
            linked: durable.hierarchy.linked(),
            name_bytes: durable.hierarchy.name_bytes_live(),
            name_budget: durable.hierarchy.name_budget(),
            ..registry_counts
        }
    }
}

impl<R: DurableRoster> DurableOps for R {}
