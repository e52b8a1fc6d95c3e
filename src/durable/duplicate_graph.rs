//! Runtime duplication: one graph transaction over a world.

use crate::world::Component;
use allocator_api2::alloc::Allocator;

use crate::durable::binding::ActivationError;
use crate::durable::error::DurableError;
use crate::durable::hierarchy::{Hierarchy, HierarchyError};
use crate::durable::tables::enabled_mut;
use crate::durable::tables::Durable;
use crate::durable::tables::{DurableRoster, EntityRefs, RefList, RefVisitor};
use crate::identity::{
    EntropySource, InstanceId, MintError, PersistentObjectKey, SourceObjectId, MINT_ATTEMPTS,
};
use crate::world::command::structural::insert;
use crate::world::raw::keys::EntityId;
use crate::world::store::error::WorldError;
use crate::world::store::roster::{ComponentList, PoolsMutList, PoolsRefList, TypeVisitor};
use crate::world::world_ops::WorldOps;

/// Counts the components of the selection (revision budget of a duplicate).
struct CountComponents<'w, W: DurableRoster> {
    world: &'w W,
    selection: &'w [EntityId],
    n: u64,
}

impl<W: DurableRoster> TypeVisitor for CountComponents<'_, W> {
    fn visit<T: Component>(&mut self) {
        if let Some(pool) = self.world.parts_ref().1.get::<T>() {
            self.n += self.selection.iter().filter(|e| pool.contains(**e)).count() as u64;
        }
    }
}

/// Copies every component of each selected entity to its copy.
struct CopyComponents<'w, W: DurableRoster> {
    world: &'w mut W,
    selection: &'w [EntityId],
    copies: &'w [EntityId],
    result: Result<(), WorldError>,
}

impl<W: DurableRoster> TypeVisitor for CopyComponents<'_, W> {
    fn visit<T: Component>(&mut self) {
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
struct RewriteRefs<'w, W: DurableRoster> {
    world: &'w mut W,
    selection: &'w [EntityId],
    copies: &'w [EntityId],
}

impl<W: DurableRoster> RefVisitor for RewriteRefs<'_, W> {
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

/// [`DurableOps::duplicate`](crate::durable::durable_ops::DurableOps::duplicate).
///
/// User code runs while keys are reserved and copies exist: the entropy source, and each
/// component's [`EntityRefs`]. Should it panic, the reservations are released and the copies
/// made so far destroyed before the panic goes on, so nothing of the attempt stays behind (the
/// copies' slots keep their advanced generations).
pub(crate) fn duplicate<W: DurableRoster, S: EntropySource + ?Sized>(
    world: &mut W,
    selection: &[EntityId],
    entropy: &mut S,
    out: &mut [EntityId],
) -> Result<(), DurableError> {
    let mut created = false;
    let attempt = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        duplicate_in(world, selection, entropy, out, &mut created)
    }));
    match attempt {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => {
            // Refused after the copies were created: only a hand-written roster that changed
            // the world from inside the duplication gets here (the checks before the creates
            // cover everything else). The reservations were released; the copies go too.
            if created {
                for &copy in out.iter() {
                    let _ = world.destroy(copy);
                }
            }
            Err(e)
        }
        Err(panic) => {
            if let Ok((_, durable)) = enabled_mut(world) {
                durable.bindings.abandon_scratch();
            }
            if created {
                for &copy in out.iter() {
                    // Fresh copies: no binding, name, parent or protection yet.
                    let _ = world.destroy(copy);
                }
            }
            std::panic::resume_unwind(panic)
        }
    }
}

/// [`duplicate`]; `created` is set once the copies exist.
fn duplicate_in<W: DurableRoster, S: EntropySource + ?Sized>(
    world: &mut W,
    selection: &[EntityId],
    entropy: &mut S,
    out: &mut [EntityId],
    created: &mut bool,
) -> Result<(), DurableError> {
    // A pool swapped in from another world would leave its component out of the copies.
    if !crate::world::command::structural::roster_intact(world) {
        return Err(WorldError::ForeignPool.into());
    }
    if selection.len() != out.len() {
        return Err(DurableError::LengthMismatch {
            selection: selection.len(),
            out: out.len(),
        });
    }
    let (registry, durable) = enabled_mut(world)?;
    registry.check_phase()?;
    // Reservations left by an attempt whose cleanup a hand-written roster dodged (it handed
    // the panic handler a disabled part) are released before this one reserves.
    if !durable.bindings.scratch_is_empty() {
        durable.bindings.abandon_scratch();
    }
    durable.next_epoch();
    let (mut bound, mut name_bytes) = (0usize, 0usize);
    for (i, &e) in selection.iter().enumerate() {
        if !registry.is_active(e) {
            return Err(WorldError::Rejected(
                registry
                    .diagnose(e)
                    .err()
                    .unwrap_or(crate::world::store::error::Rejection::Stale),
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
        name_bytes += Hierarchy::<W::Alloc>::name_cost(durable.hierarchy.name(e.slot()).len());
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
        world: &*world,
        selection,
        n: 0,
    };
    W::Components::each(&mut count);
    let inserts = count.n;
    world
        .registry()
        .check_revisions(selection.len() as u64 + inserts)?;
    // Mint every id before creating anything: the new keys are reserved in the forward
    // map (so later candidates see them) and released again on any failure.
    let (_, durable) = enabled_mut(world)?;
    let mut failure = None;
    for &e in selection {
        let Some(key) = durable.bindings.key_of(e) else {
            continue;
        };
        if let Err(m) = mint_key(&mut durable.bindings, key.instance, entropy) {
            failure = Some(m);
            break;
        }
    }
    if let Some(m) = failure {
        durable.bindings.abandon_scratch();
        return Err(m.into());
    }
    // Nothing below can fail: phase, liveness, capacity and budgets were checked (should the
    // create fail anyway, the reservations are released and nothing has changed).
    let (registry, durable) = enabled_mut(world)?;
    if let Err(e) = registry.try_create_batch(out) {
        durable.bindings.abandon_scratch();
        return Err(e.into());
    }
    *created = true;
    let mut copy = CopyComponents {
        world: &mut *world,
        selection,
        copies: out,
        result: Ok(()),
    };
    W::Components::each(&mut copy);
    if let Err(e) = copy.result {
        // Only a roster that hands out other parts than it was checked with gets here: keep
        // the binding table whole.
        if let Ok((_, durable)) = enabled_mut(world) {
            durable.bindings.abandon_scratch();
        }
        return Err(e.into());
    }
    W::Refs::each(&mut RewriteRefs {
        world: &mut *world,
        selection,
        copies: out,
    });
    let (registry, durable) = enabled_mut(world)?;
    // The copies and the reservations must be this pair's: a roster that handed out another
    // (self-consistent) pair for the creates or the mints would otherwise get bindings,
    // names and parents here for slots of another registry (a world's own table trusts its
    // bindings to be live), or count reservations it does not hold.
    // And the roster, which runs user code at every call, must not have changed what the
    // publication relies on: every reservation where it was made (an activation or removal
    // in between could move or drop one), and the copies still blank (a parent or child
    // linked to a copy could close a cycle once the copies take their parents).
    if durable.bindings.scratch_len() != bound
        || !durable.bindings.scratch_intact()
        || !out.iter().all(|&d| {
            registry.is_alive(d)
                && !durable.hierarchy.has_links(d.slot())
                && !durable.bindings.may_bind(d.slot())
        })
    {
        durable.bindings.abandon_scratch();
        return Err(WorldError::ForeignPool.into());
    }
    let (mut k, mut published) = (0, true);
    for (&src, &dst) in selection.iter().zip(out.iter()) {
        let parent = durable
            .parent_handle(registry, src.slot())
            .map(|p| durable.selected(p, selection).map_or(p, |j| out[j]));
        durable.hierarchy.set_parent(dst.slot(), parent);
        durable.hierarchy.copy_name(src.slot(), dst.slot());
        if let Some((_, kind)) = durable.bindings.binding_of(src) {
            published &= durable.bindings.publish_scratch(k, dst, kind);
            k += 1;
        }
    }
    // Every publication succeeds after the checks above; should one not, the batch still ends
    // with the table whole (what was published stays bound, the rest is released).
    if published {
        durable.bindings.finish_scratch(k);
    } else {
        durable.bindings.abandon_scratch();
    }
    Ok(())
}

/// Mints a `SourceObjectId` whose key in `instance` is free, reserving it.
fn mint_key<A: Allocator + Clone, S: EntropySource + ?Sized>(
    table: &mut crate::durable::binding::WorldBindingTable<A>,
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
