//! Spawning: [`Bundle`]s (tuples of distinct component types) and the batch-spawn protocol.
//!
//! `spawn` creates one entity and inserts every component of its bundle, after one check of
//! phase and budgets. `spawn_batch` reuses released slots first (LIFO, one entity at a time,
//! exactly as `spawn`), then takes the rest as never-used slots in one step: every component's
//! values are written straight into its pool's reserved capacity through a
//! [`BatchWriter`](crate::world::store::pool::BatchWriter) that holds the pool exclusively, and the fresh
//! slots are published together at the end (nothing of that part is published if the
//! iterator panics).
//!
//! A bundle naming one component type twice is refused ([`WorldError::DuplicateComponent`])
//! by constant `TypeId` compares before any pool is taken; they fold away, so a valid bundle
//! pays nothing for the check. Its pools are then taken out of the world's pool list by type
//! and checked to belong to the world's registry. Spawned values are appended without a slot
//! lookup: a slot just created in a world's registry has no entry in any pool bound to it (the
//! provenance and release invariants of [`ComponentPool`]; an in-place respawn, the one release
//! that leaves rows behind, hands them to the entity it creates next, before any spawn runs).

use core::any::{type_name, TypeId};

use crate::world::store::component::Component;

use crate::identity::{OwnerToken, FIRST_GENERATION};
use crate::world::command::group::repack;
use crate::world::raw::keys::EntityId;
use crate::world::store::error::WorldError;
use crate::world::store::pool::ComponentPool;
use crate::world::store::pool::{BatchCursor, BatchWriter};
use crate::world::store::roster::{GroupList, PoolsMut, PoolsMutList, Roster, Stores};

mod sealed {
    use super::*;

    /// The machinery of a [`Bundle`](super::Bundle), out of reach of other crates.
    pub trait BundleParts<W: Roster>: Sized {
        /// Number of components.
        const LEN: u64;
        /// One `&mut` pool per component.
        type Pools<'a>;
        /// One batch writer per component.
        type Writers<'a>;
        /// The first type the bundle names twice (constant compares: folds away).
        fn duplicate() -> Option<&'static str>;
        /// Takes every component's pool out of the world's list.
        fn take<'a>(pools: &mut PoolsMut<'a, W>) -> Result<Self::Pools<'a>, WorldError>;
        /// Whether every pool belongs to the registry of `owner`.
        fn owned_by(pools: &Self::Pools<'_>, owner: OwnerToken) -> bool;
        /// Whether every pool has `n` free entries.
        fn room(pools: &Self::Pools<'_>, n: usize) -> bool;
        /// Appends every component for `entity`, without a slot lookup.
        ///
        /// # Safety
        /// `entity` was created just now in the world registry every pool belongs to, and
        /// nothing was inserted for it yet.
        unsafe fn insert(self, pools: &mut Self::Pools<'_>, entity: EntityId);
        /// One write cursor per component.
        type Cursors: Copy;
        /// Reserves `n` entries past the end of every pool.
        fn writers<'a>(pools: Self::Pools<'a>, n: usize) -> Option<Self::Writers<'a>>;
        /// The writers' cursors.
        fn cursors(writers: &Self::Writers<'_>) -> Self::Cursors;
        /// Writes the `k`-th bundle of a batch.
        ///
        /// # Safety
        /// The cursors came from writers that are alive and unpublished, and `k` is below the
        /// `n` of [`writers`](Self::writers).
        unsafe fn write(self, cursors: Self::Cursors, k: usize);
        /// Publishes `count` written bundles as the fresh slots `first..first + count`.
        ///
        /// # Safety
        /// Bundles `0..count` were written, and the slots were just created for the first time
        /// in the registry every pool belongs to.
        unsafe fn publish(writers: Self::Writers<'_>, first: u32, count: usize);
        /// Each pool's layout class (`ComponentPool::layout_class`).
        type Classes: Copy;
        /// The pools' layout classes before a change.
        fn classes(pools: &Self::Pools<'_>) -> Self::Classes;
        /// After the same appends to every pool: the ungrouped pools whose class `before`
        /// was the first pool's (equal keys then, so equal keys now) share `stamp`, a stamp
        /// no pool holds (the layout invariant of `ComponentPool`).
        fn relayout(pools: &mut Self::Pools<'_>, before: Self::Classes, stamp: u64);
        /// Whether any component belongs to an owned group (folds to a constant).
        fn grouped() -> bool;
        /// Packs `entity` into the groups its components complete.
        fn pack<'a>(pools: &mut PoolsMut<'a, W>, entity: EntityId);
    }
}

/// A tuple of 1 to 8 distinct component types of world `W`, spawned together (sealed).
///
/// Distinctness is checked once per call, with constant type compares that fold away:
/// a bundle naming a type twice is refused with [`WorldError::DuplicateComponent`].
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a bundle of the world `{W}`",
    label = "not a bundle of this world",
    note = "a bundle is a tuple of 1 to 8 component types, each declared in the world's `world!` roster (`Stores<T>`); spawn larger sets with a second `insert` or `insert_batch`"
)]
pub trait Bundle<W: Roster>: sealed::BundleParts<W> {}

/// The name of the first type in `ids` that appears twice (bundles of worlds and of commands).
#[inline(always)]
pub(crate) fn first_duplicate(ids: &[TypeId], names: &[&'static str]) -> Option<&'static str> {
    (1..ids.len()).find_map(|i| ids[..i].contains(&ids[i]).then(|| names[i]))
}

/// The pool of `T` taken from `pools`, or why not.
#[inline(always)]
fn take_pool<'a, W: Roster, T: Component>(
    pools: &mut PoolsMut<'a, W>,
) -> Result<&'a mut ComponentPool<T, W::Alloc>, WorldError> {
    match pools.take::<T>() {
        Some(pool) => Ok(pool),
        // Not in the list: a hand-written roster can hide a pool (a type named twice was
        // refused before, by the bundle's `duplicate`).
        None => Err(WorldError::UnknownComponent),
    }
}

/// Packs `entity` into every group containing `T`.
#[inline(always)]
pub(crate) fn pack_groups_of<'a, W: Roster, T: Component>(
    pools: &mut PoolsMut<'a, W>,
    entity: EntityId,
) {
    repack::<W::Groups, W::Alloc, _>(pools, entity, Some(&[TypeId::of::<T>()]), true);
}

macro_rules! tuple_bundle {
    ($len:literal; $($t:ident $i:tt),+) => {
        impl<W: Roster $(+ Stores<$t>)+, $($t: Component),+> sealed::BundleParts<W> for ($($t,)+) {
            const LEN: u64 = $len;
            type Pools<'a> = ($(&'a mut ComponentPool<$t, W::Alloc>,)+);
            type Writers<'a> = ($(BatchWriter<'a, $t, W::Alloc>,)+);
            type Cursors = ($(BatchCursor<$t>,)+);
            #[inline(always)]
            fn duplicate() -> Option<&'static str> {
                first_duplicate(&[$(TypeId::of::<$t>()),+], &[$(type_name::<$t>()),+])
            }
            #[inline(always)]
            fn take<'a>(pools: &mut PoolsMut<'a, W>) -> Result<Self::Pools<'a>, WorldError> {
                if let Some(component) = <Self as sealed::BundleParts<W>>::duplicate() {
                    return Err(WorldError::DuplicateComponent { component });
                }
                Ok(($(take_pool::<W, $t>(pools)?,)+))
            }
            #[inline(always)]
            fn owned_by(pools: &Self::Pools<'_>, owner: OwnerToken) -> bool {
                true $(&& pools.$i.owner() == owner)+
            }
            #[inline(always)]
            fn room(pools: &Self::Pools<'_>, n: usize) -> bool {
                true $(&& pools.$i.capacity() - pools.$i.len() >= n)+
            }
            #[inline(always)]
            unsafe fn insert(self, pools: &mut Self::Pools<'_>, entity: EntityId) {
                // SAFETY: forwarded contract; no pool bound to a world's registry holds an
                // entry for a slot just created in it: a slot never created has none
                // (provenance invariant of `ComponentPool`), and a reused slot left every pool
                // bound to the registry at its release (`WorldOps::destroy` and a commit's
                // `structural::destroy_run` check that they visit all of them) or had its rows
                // handed to the entity created right after it (a commit's
                // `structural::replace_in_place`), the only releases of a world's registry.
                $( unsafe { pools.$i.insert_first(entity, self.$i) }; )+
            }
            #[inline(always)]
            fn writers<'a>(pools: Self::Pools<'a>, n: usize) -> Option<Self::Writers<'a>> {
                Some(($(pools.$i.batch_writer(n)?,)+))
            }
            #[inline(always)]
            fn cursors(writers: &Self::Writers<'_>) -> Self::Cursors {
                ($(writers.$i.cursor(),)+)
            }
            #[inline(always)]
            unsafe fn write(self, cursors: Self::Cursors, k: usize) {
                // SAFETY: forwarded contract (writers alive and unpublished, `k < n`), per
                // component.
                $( unsafe { cursors.$i.write(k, self.$i) }; )+
            }
            #[inline]
            unsafe fn publish(writers: Self::Writers<'_>, first: u32, count: usize) {
                // SAFETY: forwarded contract, per component: values written, and slots never
                // created before in the pool's registry have no entry (provenance invariant).
                $( unsafe { writers.$i.publish(first, count, FIRST_GENERATION) }; )+
            }
            type Classes = [Option<u64>; $len];
            #[inline(always)]
            fn classes(pools: &Self::Pools<'_>) -> Self::Classes {
                [$(pools.$i.layout_class()),+]
            }
            #[inline(always)]
            fn relayout(pools: &mut Self::Pools<'_>, before: Self::Classes, stamp: u64) {
                if $len < 2 || stamp == 0 {
                    return;
                }
                let Some(first) = before[0] else { return };
                $(
                    if before[$i] == Some(first)
                        && W::Groups::index_of(TypeId::of::<$t>()).is_none()
                    {
                        pools.$i.set_layout(stamp);
                    }
                )+
            }
            #[inline(always)]
            fn grouped() -> bool {
                false $(|| W::Groups::index_of(core::any::TypeId::of::<$t>()).is_some())+
            }
            #[inline(always)]
            fn pack<'a>(pools: &mut PoolsMut<'a, W>, entity: EntityId) {
                // Every group of the bundle's types at once, smallest first across the bundle.
                repack::<W::Groups, W::Alloc, _>(pools, entity, Some(&[$(TypeId::of::<$t>()),+]), true);
            }
        }

        impl<W: Roster $(+ Stores<$t>)+, $($t: Component),+> Bundle<W> for ($($t,)+) {}
    };
}

tuple_bundle!(1; T0 0);
tuple_bundle!(2; T0 0, T1 1);
tuple_bundle!(3; T0 0, T1 1, T2 2);
tuple_bundle!(4; T0 0, T1 1, T2 2, T3 3);
tuple_bundle!(5; T0 0, T1 1, T2 2, T3 3, T4 4);
tuple_bundle!(6; T0 0, T1 1, T2 2, T3 3, T4 4, T5 5);
tuple_bundle!(7; T0 0, T1 1, T2 2, T3 3, T4 4, T5 5, T6 6);
tuple_bundle!(8; T0 0, T1 1, T2 2, T3 3, T4 4, T5 5, T6 6, T7 7);

/// Creates one entity holding every component of `bundle`; see
/// [`WorldOps::spawn`](crate::world::world_ops::WorldOps::spawn).
#[inline]
pub(crate) fn spawn<W: Roster, B: Bundle<W>>(
    world: &mut W,
    bundle: B,
) -> Result<EntityId, WorldError> {
    let entity = {
        let (registry, mut pools) = world.parts();
        let registry = &mut registry.0;
        let mut bundle_pools = B::take(&mut pools)?;
        if !B::owned_by(&bundle_pools, registry.owner()) {
            return Err(WorldError::ForeignPool);
        }
        let entity = registry.try_create_charged(B::LEN)?;
        let before = B::classes(&bundle_pools);
        // SAFETY: `entity` was just created in `registry`, a world's registry (behind
        // `ReadOnly`: `parts` is how a world hands it out), to which every pool belongs
        // (`owned_by`, checked above); nothing was inserted for it.
        unsafe { bundle.insert(&mut bundle_pools, entity) };
        if B::LEN > 1 {
            B::relayout(&mut bundle_pools, before, registry.fresh_layout());
        }
        entity
    };
    if B::grouped() {
        B::pack(&mut world.parts().1, entity);
    }
    Ok(entity)
}

/// Spawns one entity per bundle, writing their handles to `out` when given; see
/// [`WorldOps::spawn_batch`](crate::world::world_ops::WorldOps::spawn_batch).
pub(crate) fn spawn_batch<W, B, I>(
    world: &mut W,
    bundles: I,
    mut out: Option<&mut [EntityId]>,
) -> Result<usize, WorldError>
where
    W: Roster,
    B: Bundle<W>,
    I: IntoIterator<Item = B>,
    I::IntoIter: ExactSizeIterator,
{
    let bundles = bundles.into_iter();
    let n = bundles.len();
    if let Some(out) = &out {
        if out.len() < n {
            return Err(WorldError::LengthMismatch {
                entities: out.len(),
                values: n,
            });
        }
    }
    let reuse = {
        let (registry, mut pools) = world.parts();
        let registry = &registry.0;
        let bundle_pools = B::take(&mut pools)?;
        if !B::owned_by(&bundle_pools, registry.owner()) {
            return Err(WorldError::ForeignPool);
        }
        registry.check_create_budget(n)?;
        let revisions = (n as u64)
            .checked_mul(1 + B::LEN)
            .ok_or(WorldError::RevisionExhausted)?;
        registry.check_revisions(revisions)?;
        // Never short in a world (a pool holds at most its registry's alive entities), but
        // checked: the batch must be all or nothing.
        if !B::room(&bundle_pools, n) {
            return Err(registry.capacity_error(n));
        }
        // Released slots are reused first (LIFO), one entity at a time; the rest (all of
        // them, if the registry cannot batch) too.
        if registry.fresh_batchable() {
            n.min(registry.available() - registry.fresh_available())
        } else {
            n
        }
    };
    let mut bundles = bundles.take(n);
    let mut spawned = 0;
    for bundle in bundles.by_ref().take(reuse) {
        // Cannot fail: the whole batch's budget was checked above.
        let entity = spawn(world, bundle)?;
        if let Some(out) = &mut out {
            out[spawned] = entity;
        }
        spawned += 1;
    }
    let rest = n - reuse;
    if rest == 0 {
        return Ok(spawned);
    }
    let (first, count, before) = {
        let (registry, mut pools) = world.parts();
        let registry = &mut registry.0;
        let bundle_pools = B::take(&mut pools)?;
        // The same registry and pools as checked above, unless a hand-written roster hands out
        // others: then checked again (once per batch), so that nothing is created outside the
        // phase or the budgets.
        if !B::owned_by(&bundle_pools, registry.owner()) {
            return Err(WorldError::ForeignPool);
        }
        registry.check_create_budget(rest)?;
        registry.check_revisions((rest as u64).saturating_mul(1 + B::LEN))?;
        if !registry.fresh_batchable() || registry.fresh_available() < rest {
            return Err(registry.capacity_error(rest));
        }
        let before = B::classes(&bundle_pools);
        // The reused part grew each pool by at most `reuse`: `rest` entries are still free.
        let writers = match B::writers(bundle_pools, rest) {
            Some(writers) => writers,
            None => return Err(registry.capacity_error(rest)),
        };
        let cursors = B::cursors(&writers);
        // Internal iteration (`fold`) lets each bundle go straight from the producer into the
        // pools instead of through a stack copy per `next`; the cursors and the count move into
        // the closure, so they stay in registers even when the fold is not inlined.
        let count = bundles.fold(0, move |count, bundle| {
            if count < rest {
                // SAFETY: `count < rest`, the `n` the writers reserved; the writers are alive
                // and publish only below.
                unsafe { bundle.write(cursors, count) };
                count + 1
            } else {
                count
            }
        });
        let first = registry.create_fresh_batch(count);
        registry.advance_revision(B::LEN * count as u64);
        // SAFETY: bundles `0..count` were written above; `create_fresh_batch` created the slots
        // `first..first + count` for the first time in the registry, to which every pool
        // belongs (`owned_by`, checked in this block).
        unsafe { B::publish(writers, first, count) };
        (first, count, before)
    };
    if B::LEN > 1 {
        let (registry, mut pools) = world.parts();
        // The pools just published to, when the roster hands out the same ones again (a
        // hand-written roster might not: then the stamps stay 0, which shares nothing).
        if let Ok(mut bundle_pools) = B::take(&mut pools) {
            if B::owned_by(&bundle_pools, registry.owner()) {
                B::relayout(&mut bundle_pools, before, registry.0.fresh_layout());
            }
        }
    }
    let owner = world.parts_ref().0.owner();
    if let Some(out) = out {
        for (k, e) in out[spawned..spawned + count].iter_mut().enumerate() {
            *e = EntityId::from_raw_parts(owner, first + k as u32, FIRST_GENERATION);
        }
    }
    if B::grouped() {
        for slot in first..first + count as u32 {
            let entity = EntityId::from_raw_parts(owner, slot, FIRST_GENERATION);
            B::pack(&mut world.parts().1, entity);
        }
    }
    Ok(spawned + count)
}
