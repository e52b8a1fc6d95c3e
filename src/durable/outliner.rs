//! Observability: the outliner view and the world's counts.

use allocator_api2::alloc::Allocator;

use crate::durable::tables::Durable;
use crate::identity::PersistentObjectKey;
use crate::world::raw::keys::EntityId;
use crate::world::store::registry::EntityRegistry;

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

/// Observability counts of a world: its slots and entities, the binding table, references and
/// tickets, links and the name arena.
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

/// Depth-first rows of the outliner (see [`DurableOps::outliner`](crate::durable::durable_ops::DurableOps::outliner)).
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
    /// The rows of a world, from its first root; none when `durable` is another registry's
    /// (its names and links are not this registry's entities').
    pub(crate) fn new(registry: &'w EntityRegistry<A>, durable: &'w Durable<A>) -> Self {
        let foreign = durable.owner() != registry.owner();
        Self {
            registry,
            durable,
            // Past every slot: the root scan ends at once.
            scan: if foreign { u32::MAX } else { 0 },
            next: None,
        }
    }
}

impl<'w, A: Allocator + Clone> Outliner<'w, A> {
    fn shown(&self, slot: u32) -> bool {
        self.durable.hierarchy.has_links(slot)
            || self.durable.bindings.may_bind(slot)
            || self.durable.stable.may_bind(slot)
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
    pub(crate) fn successor(&self, slot: u32, depth: u32) -> Option<(u32, u32)> {
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
