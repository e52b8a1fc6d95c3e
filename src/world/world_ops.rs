//! [`WorldOps`]: every operation of a world, in generic Rust over its [`Roster`].
//!
//! Structural operations check, in release builds, the phase, the handle, the budgets and
//! that each pool they touch belongs to the world's registry (so a registry or pool swapped
//! between two worlds is refused with [`WorldError::ForeignPool`], never mixed). Owned groups
//! are kept packed on every insert, remove and destroy.

use core::marker::PhantomData;

use crate::world::store::component::Component;
use allocator_api2::alloc::Allocator;

use crate::world::command::buffer::CommandBuffer;
use crate::world::command::group::{groups_valid, repack, Consistent};
use crate::world::command::spawn::{self, Bundle};
use crate::world::command::structural::{
    all_bound, grouped, insert, insert_as, member, pools_exact, remove, remove_as, Bind, Bindable,
    RemoveAll, SortAll, SORT_STAMPS,
};
use crate::world::query::pool_access::{GroupQuery, PoolQuery};
use crate::world::raw::keys::EntityId;
use crate::world::raw::keys::EntityKey;
use crate::world::store::error::InitError;
use crate::world::store::error::WorldError;
use crate::world::store::hooks::EntityHooks;
use crate::world::store::pool::ComponentPool;
use crate::world::store::registry::EntityRegistry;
use crate::world::store::roster::{
    ComponentList, GroupList, PoolsMutList, PoolsRefList, Roster, Stores,
};

/// Every operation of a world declared with [`world!`](crate::world!), implemented once for
/// every [`Roster`] (so it cannot be implemented by hand, and generic systems can name it:
/// `fn movement<W: WorldOps + Stores<Position> + Stores<Velocity>>(world: &mut W)`).
///
/// # Examples
/// ```
/// use ludus::world::{join, Stores, WorldOps};
/// # #[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
/// # #[repr(C)]
/// # pub struct Position(pub f32);
/// # #[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
/// # #[repr(C)]
/// # pub struct Velocity(pub f32);
/// fn movement<W: WorldOps + Stores<Position> + Stores<Velocity>>(world: &mut W) {
///     let (pos, vel) = world.pools_mut::<(&mut Position, &Velocity)>();
///     for (_, (p, v)) in join((pos, vel)) {
///         p.0 += v.0;
///     }
/// }
///
/// ludus::world! { struct Game { position: Position, velocity: Velocity } }
/// let mut game = Game::try_new(8)?;
/// let e = game.spawn((Position(1.0), Velocity(0.5)))?;
/// movement(&mut game);
/// assert_eq!(game.get::<Position>(e), Some(&Position(1.5)));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait WorldOps: Roster {
    /// Issues the world's owner token and binds every pool to it; `world!`'s constructors call
    /// it after every array was allocated, so a failed init consumes no token. On a world
    /// already bound it binds nothing: `Ok` when its pools are exactly those bound to its
    /// registry.
    ///
    /// # Errors
    /// [`InitError::DuplicateComponent`] (a type declared twice), [`InitError::GroupOverlap`]
    /// (a group with no member, more than [`MAX_GROUP_MEMBERS`](crate::world::raw::dense::MAX_GROUP_MEMBERS), a
    /// member not in the roster, or a pool in two groups), [`InitError::PoolMismatch`] (a pool
    /// bound, not empty or sized differently; on a bound world, a pool not bound to it),
    /// [`InitError::IdentityExhausted`]; no token is consumed on any of them.
    fn try_bind(&mut self) -> Result<(), InitError> {
        if !Self::Components::distinct() {
            return Err(InitError::DuplicateComponent);
        }
        if !groups_valid::<Self::Components, Self::Groups>() {
            return Err(InitError::GroupOverlap);
        }
        let (registry, hooks, mut pools) = self.hooked_parts();
        if registry.owner() != 0 {
            // A bound world attaches no hooks: fresh ones handed out now stay unattached and
            // every destroy (and durable operation) on the world is refused.
            return if all_bound(&registry.0, &mut pools) && hooks.serves(registry.owner()) {
                Ok(())
            } else {
                Err(InitError::PoolMismatch)
            };
        }
        let mut bindable = Bindable {
            capacity: registry.capacity(),
            ok: registry.bound_pools() == 0,
        };
        pools.visit(&mut bindable);
        if !bindable.ok || !hooks.fits(registry.capacity()) {
            return Err(InitError::PoolMismatch);
        }
        registry.0.issue_owner()?;
        pools.visit(&mut Bind {
            registry: &mut registry.0,
        });
        hooks.0.attach(registry.owner());
        Ok(())
    }

    /// The registry.
    #[inline(always)]
    fn registry(&self) -> &EntityRegistry<Self::Alloc> {
        self.parts_ref().0
    }

    /// Opens the structural phase.
    #[inline]
    fn begin_structural(&mut self) {
        self.parts().0 .0.set_structural_phase(true);
    }

    /// Closes the structural phase: structural changes fail with `InvalidPhase`.
    #[inline]
    fn end_structural(&mut self) {
        self.parts().0 .0.set_structural_phase(false);
    }

    /// Whether structural changes are accepted.
    #[inline]
    fn is_structural_phase(&self) -> bool {
        self.registry().is_structural_phase()
    }

    /// Creates an entity with no components.
    ///
    /// # Errors
    /// As [`EntityRegistry::try_create`].
    #[inline]
    fn create(&mut self) -> Result<EntityId, WorldError> {
        self.parts().0 .0.try_create()
    }

    /// Creates `out.len()` entities, all or nothing.
    ///
    /// # Errors
    /// As [`EntityRegistry::try_create_batch`].
    fn create_batch(&mut self, out: &mut [EntityId]) -> Result<(), WorldError> {
        self.parts().0 .0.try_create_batch(out)
    }

    /// Destroys `entity`: leaves every owned group, is removed from every pool, then its
    /// registry slot is released (generation advanced or slot retired).
    ///
    /// The world's [hooks](crate::world::roster::EntityHooks) hear of it first: a durable world
    /// detaches the entity (its binding removed, its children reparented, its name dropped).
    ///
    /// # Errors
    /// `InvalidPhase`, `Rejected` (not alive), `RevisionExhausted`, `Protected`, or
    /// `ForeignPool` (a pool or the hooks of another registry, or fewer pools than are
    /// bound to the registry); nothing changes.
    fn destroy(&mut self, entity: EntityId) -> Result<(), WorldError> {
        let (registry, hooks, mut pools) = self.hooked_parts();
        let registry = &mut registry.0;
        let hooks = &mut hooks.0;
        registry.check_entity_change(entity, Self::Components::LEN as u64 + 1)?;
        // The release invariant: a world's registry releases a slot only here and in a
        // commit (`destroy_run`, `replace_in_place`), after every pool bound to it left the
        // entity or with its rows handed to the next incarnation (spawns into reused slots
        // rely on it).
        if !all_bound(registry, &mut pools) || !hooks.serves(registry.owner()) {
            return Err(WorldError::ForeignPool);
        }
        if hooks.protects(entity) {
            return Err(WorldError::Protected);
        }
        // The destruction order: the hooks hear of it first (a durable world detaches the
        // entity's binding), then the components are removed, then the slot is released.
        hooks.on_destroy(registry.owner(), entity);
        if Self::Groups::LEN > 0 {
            repack::<Self::Groups, Self::Alloc, _>(&mut pools, entity, None, false);
        }
        let mut remove = RemoveAll {
            key: EntityKey::of(entity),
            removed: 0,
        };
        pools.visit(&mut remove);
        registry.release_charged(entity, remove.removed);
        Ok(())
    }

    /// Creates an entity holding every component of `bundle` (a tuple of 1 to 8 distinct
    /// component types), checking phase and budgets once.
    ///
    /// # Errors
    /// As [`create`](Self::create) (also `RevisionExhausted` for the inserts),
    /// [`WorldError::DuplicateComponent`] for a bundle naming a type twice, `ForeignPool`;
    /// nothing changes.
    #[inline]
    fn spawn<B: Bundle<Self>>(&mut self, bundle: B) -> Result<EntityId, WorldError> {
        spawn::spawn(self, bundle)
    }

    /// Spawns one entity per bundle of `bundles`: phase, capacity, sequence and revision
    /// budgets are checked once for the iterator's reported length (an iterator that yields
    /// fewer spawns fewer). The entities take the slots that as many `create`s would
    /// (released slots first, LIFO, then fresh ones in increasing order) and get increasing
    /// creation sequences; returns the number spawned. Their handles are in each pool's
    /// `owners()` (the last entries of an ungrouped pool), or written to a slice by
    /// [`spawn_batch_into`](Self::spawn_batch_into). If the iterator panics, the
    /// bundles already placed in released slots stay spawned and none of the fresh-slot part
    /// is published.
    ///
    /// # Errors
    /// As [`spawn`](Self::spawn), for the whole batch; nothing changes.
    fn spawn_batch<B, I>(&mut self, bundles: I) -> Result<usize, WorldError>
    where
        B: Bundle<Self>,
        I: IntoIterator<Item = B>,
        I::IntoIter: ExactSizeIterator,
    {
        spawn::spawn_batch(self, bundles, None)
    }

    /// [`spawn_batch`](Self::spawn_batch), writing the handles it creates to `out[..spawned]`,
    /// in bundle order (grouped pools included).
    ///
    /// # Errors
    /// [`WorldError::LengthMismatch`] when `out` is shorter than the iterator's reported
    /// length (to append to a `Vec`, use [`spawn_batch_extend`](Self::spawn_batch_extend)), then as [`spawn_batch`](Self::spawn_batch); nothing changes and `out` is
    /// untouched.
    fn spawn_batch_into<B, I>(
        &mut self,
        bundles: I,
        out: &mut [EntityId],
    ) -> Result<usize, WorldError>
    where
        B: Bundle<Self>,
        I: IntoIterator<Item = B>,
        I::IntoIter: ExactSizeIterator,
    {
        spawn::spawn_batch(self, bundles, Some(out))
    }

    /// [`spawn_batch`](Self::spawn_batch), appending the handles it creates to `out`, in
    /// bundle order. The world allocates nothing; `out` grows by the iterator's reported
    /// length (it may allocate) and is cut back to what was spawned.
    ///
    /// # Errors
    /// As [`spawn_batch`](Self::spawn_batch); nothing changes and `out` is as it was (its
    /// capacity aside).
    fn spawn_batch_extend<B, I>(
        &mut self,
        bundles: I,
        out: &mut Vec<EntityId>,
    ) -> Result<usize, WorldError>
    where
        B: Bundle<Self>,
        I: IntoIterator<Item = B>,
        I::IntoIter: ExactSizeIterator,
    {
        let bundles = bundles.into_iter();
        let start = out.len();
        out.resize(start + bundles.len(), EntityId::NULL);
        let spawned = spawn::spawn_batch(self, bundles, Some(&mut out[start..]));
        out.truncate(start + *spawned.as_ref().unwrap_or(&0));
        spawned
    }

    /// Gives `entity` a component value (replacing a previous one).
    ///
    /// # Errors
    /// `ForeignPool`, then as [`ComponentPool::insert`]; nothing changes.
    #[inline]
    fn insert<T: Component>(&mut self, entity: EntityId, value: T) -> Result<Option<T>, WorldError>
    where
        Self: Stores<T>,
    {
        insert(self, entity, value)
    }

    /// Removes `entity`'s `T`, returning it.
    ///
    /// # Errors
    /// `ForeignPool`, then as [`ComponentPool::remove`]; nothing changes.
    #[inline]
    fn remove<T: Component>(&mut self, entity: EntityId) -> Result<Option<T>, WorldError>
    where
        Self: Stores<T>,
    {
        remove(self, entity)
    }

    /// Gives each of `entities` the value at the same index of `values`, all or nothing
    /// (phase and budget checked once, liveness in the same pass as the appends and undone on
    /// a dead entity); returns how many newly joined the pool.
    ///
    /// # Errors
    /// `ForeignPool`, then as [`ComponentPool::insert_batch`]; nothing changes.
    fn insert_batch<T: Component>(
        &mut self,
        entities: &[EntityId],
        values: &[T],
    ) -> Result<usize, WorldError>
    where
        Self: Stores<T>,
    {
        if entities.len() != values.len() {
            return Err(WorldError::LengthMismatch {
                entities: entities.len(),
                values: values.len(),
            });
        }
        let (registry, pool) = member::<Self, T>(self)?;
        if !grouped::<Self, T>() {
            registry.check_phase()?;
            registry.check_revisions(entities.len() as u64)?;
            let joined = pool.insert_batch_checked(registry, entities, values)?;
            registry.advance_revision(joined as u64);
            return Ok(joined);
        }
        registry.check_member_changes(entities)?;
        let mut joined = 0;
        for (&entity, &value) in entities.iter().zip(values) {
            joined += usize::from(insert_as::<false, _, _>(self, entity, value)?.is_none());
        }
        Ok(joined)
    }

    /// Removes the `T` of each of `entities`, all or nothing; returns how many were removed.
    /// Dense order afterwards as for [`ComponentPool::remove_batch`] (a grouped component is
    /// removed entity by entity).
    ///
    /// # Errors
    /// `ForeignPool`, then as [`ComponentPool::remove_batch`]; nothing changes.
    fn remove_batch<T: Component>(&mut self, entities: &[EntityId]) -> Result<usize, WorldError>
    where
        Self: Stores<T>,
    {
        let (registry, pool) = member::<Self, T>(self)?;
        if !grouped::<Self, T>() {
            registry.check_phase()?;
            registry.check_revisions(entities.len() as u64)?;
            let removed = pool.remove_batch_checked(registry, entities)?;
            registry.advance_revision(removed as u64);
            return Ok(removed);
        }
        registry.check_member_changes(entities)?;
        let mut removed = 0;
        for &entity in entities {
            removed += usize::from(remove_as::<false, Self, T>(self, entity)?.is_some());
        }
        Ok(removed)
    }

    /// `entity`'s `T`.
    #[inline]
    fn get<T: Component>(&self, entity: EntityId) -> Option<&T>
    where
        Self: Stores<T>,
    {
        self.parts_ref().1.get::<T>()?.get(entity)
    }

    /// `entity`'s `T`, mutably (allowed in every phase).
    #[inline]
    fn get_mut<T: Component>(&mut self, entity: EntityId) -> Option<&mut T>
    where
        Self: Stores<T>,
    {
        self.parts().1.take::<T>()?.get_mut(entity)
    }

    /// Whether `entity` holds a `T`.
    #[inline]
    fn contains<T: Component>(&self, entity: EntityId) -> bool
    where
        Self: Stores<T>,
    {
        self.parts_ref()
            .1
            .get::<T>()
            .is_some_and(|p| p.contains(entity))
    }

    /// The pool of `T`.
    ///
    /// # Panics
    /// When the roster has no pool of `T` (only a hand-written roster can lie about it).
    #[inline]
    fn pool<T: Component>(&self) -> &ComponentPool<T, Self::Alloc>
    where
        Self: Stores<T>,
    {
        match self.parts_ref().1.get::<T>() {
            Some(pool) => pool,
            None => panic!(
                "no pool of {} in this world's roster",
                core::any::type_name::<T>()
            ),
        }
    }

    /// The pool of `T`, mutably (values only: membership changes need the world).
    ///
    /// # Panics
    /// As [`pool`](Self::pool).
    #[inline]
    fn pool_mut<T: Component>(&mut self) -> &mut ComponentPool<T, Self::Alloc>
    where
        Self: Stores<T>,
    {
        self.pools_mut::<(&mut T,)>().0
    }

    /// Several pools at once, by type: `world.pools_mut::<(&mut Position, &Velocity)>()`
    /// returns `(&mut ComponentPool<Position>, &ComponentPool<Velocity>)`, ready for
    /// [`join`](fn@crate::world::join). Compiles to field accesses.
    ///
    /// # Panics
    /// When the query names a component type twice.
    #[inline]
    fn pools_mut<Q: PoolQuery<Self>>(&mut self) -> Q::Out<'_> {
        Q::fetch(&mut self.parts().1)
    }

    /// The registry (shared) beside several pools: for systems that check handles or record
    /// commands while they write pools.
    ///
    /// # Panics
    /// As [`pools_mut`](Self::pools_mut).
    #[inline]
    fn split_mut<Q: PoolQuery<Self>>(&mut self) -> (&EntityRegistry<Self::Alloc>, Q::Out<'_>) {
        let (registry, mut pools) = self.parts();
        (&registry.0, Q::fetch(&mut pools))
    }

    /// An owned group's packed prefix: `world.group_mut::<(Position, Velocity)>()` returns
    /// `(Owners, &mut [Position], &mut [Velocity])`, the entities holding every member and
    /// their values, in the same dense order (a plain zip).
    ///
    /// # Panics
    /// When the types are not all members of one owned group.
    #[inline]
    fn group_mut<Q: GroupQuery<Self>>(&mut self) -> Q::Out<'_> {
        Q::fetch(self)
    }

    /// Applies `commands` all or nothing.
    ///
    /// # Errors
    /// As [`CommandBuffer::commit`].
    fn commit<B: Allocator + Clone>(
        &mut self,
        commands: &mut CommandBuffer<B>,
    ) -> Result<(), WorldError> {
        commands.commit(self)
    }

    /// Clears every pending-destruction mark of the registry (the entities become active
    /// again) and returns how many there were: recovers the marks of a [`CommandBuffer`]
    /// dropped (or unwound) without `commit` or `clear`. A live buffer holding destroys recorded
    /// before then refuses to commit ([`WorldError::MarksCleared`], nothing applied) until it
    /// is cleared.
    ///
    /// # Errors
    /// [`WorldError::InvalidPhase`] outside the structural phase; nothing changes.
    fn clear_pending(&mut self) -> Result<usize, WorldError> {
        let registry = &mut self.parts().0 .0;
        registry.check_phase()?;
        Ok(registry.clear_pending_marks())
    }

    /// Puts every pool outside an owned group in ascending slot order
    /// ([`ComponentPool::sort_by_slot`]: `O(len)` swaps each, no allocation) and returns how
    /// many it reordered. Joins then find rows by rank again, after churn has scattered the
    /// dense orders; pools that shared a layout stamp share a fresh one (the same keys sort
    /// alike), so aligned joins stay aligned. Not a membership change: allowed in every phase,
    /// handles stay valid.
    fn sort_pools(&mut self) -> usize {
        let (registry, mut pools) = self.parts();
        let mut sort = SortAll::<Self> {
            registry: &mut registry.0,
            renamed: [(0, 0); SORT_STAMPS],
            sorted: 0,
            _world: PhantomData,
        };
        pools.visit(&mut sort);
        sort.sorted
    }
}

impl<R: Roster> WorldOps for R {}

/// A world's self-checks and test seams, apart from its operations: each check walks every pool
/// or group (`O(n)` or more) and answers whether the world's invariants hold. For tests, fuzzers
/// and debugging; implemented for every [`Roster`]. Not in the prelude: bring it into scope
/// with `use ludus::world::WorldDiagnostics`.
pub trait WorldDiagnostics: Roster {
    /// Checks every owned group's invariant (O(n)); for tests and debugging.
    fn check_groups(&self) -> bool {
        let pools = self.parts_ref().1;
        let mut check = Consistent::<_, Self::Alloc> {
            pools,
            ok: true,
            _alloc: PhantomData,
        };
        crate::world::command::group::by_size::<Self::Groups, _>(None, true, &mut check);
        check.ok
    }

    /// Checks every pool's lookup structures
    /// ([`ComponentPool::check_index`](crate::world::store::pool::ComponentPool::check_index), `O(capacity)` per
    /// pool); for tests and debugging.
    fn check_pools(&self) -> bool {
        pools_exact::<Self::Components, Self::Alloc, _>(self.parts_ref().1)
    }

    /// Checks every cluster's runs against its pools' membership (O(n × pools); allocates):
    /// in each set of pools sharing a cluster stamp, each pool's runs partition its entries in
    /// ascending signature order and every entry's run has its entity's signature among the
    /// set; for tests and debugging (see [`cluster`](fn@crate::world::cluster)).
    fn check_clusters(&self) -> bool {
        crate::world::query::cluster::clusters_exact::<Self::Components, Self::Alloc, _>(
            self.parts_ref().1,
        )
    }

    /// Test hook (feature `test-hooks`): as
    /// [`EntityRegistry::test_hook_advance_free_generation`].
    #[cfg(feature = "test-hooks")]
    fn test_hook_advance_free_generation(&mut self, slot: u32, generation: u32) -> bool {
        self.parts()
            .0
             .0
            .test_hook_advance_free_generation(slot, generation)
    }

    /// Test hook (feature `test-hooks`): as [`EntityRegistry::test_hook_advance_counters`].
    #[cfg(feature = "test-hooks")]
    fn test_hook_advance_counters(&mut self, last_sequence: u64, revision: u64) -> bool {
        self.parts()
            .0
             .0
            .test_hook_advance_counters(last_sequence, revision)
    }
}

impl<R: Roster> WorldDiagnostics for R {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::world::command::structural::destroy_run;

    crate::world! {
        struct Pair { a: u32, b: u64, c: u16 }
        groups { ab(a: u32, b: u64) }
    }

    fn spawned(w: &mut Pair) -> Vec<EntityId> {
        (0..4u32)
            .map(|i| w.spawn((i, u64::from(i), i as u16)).unwrap())
            .collect()
    }

    #[test]
    fn spawn_batch_extend_appends_to_a_vec_and_leaves_it_as_it_was_on_failure() {
        let mut w = Pair::try_new(4).unwrap();
        let mut out = Vec::with_capacity(8);
        let first = w.spawn((9u32, 9u64, 9u16)).unwrap();
        out.push(first);
        let bundles = (0..2u32).map(|i| (i, u64::from(i), i as u16));
        assert_eq!(w.spawn_batch_extend(bundles, &mut out), Ok(2));
        assert_eq!(out.len(), 3);
        assert_eq!(out[0], first);
        for (i, &e) in out[1..].iter().enumerate() {
            assert_eq!(w.get::<u32>(e), Some(&(i as u32)));
        }
        // Two more do not fit in the last free slot: nothing spawns, `out` is unchanged.
        let before = out.clone();
        let bundles = (0..2u32).map(|i| (i, u64::from(i), i as u16));
        assert!(w.spawn_batch_extend(bundles, &mut out).is_err());
        assert_eq!((out, w.registry.len()), (before, 3));
    }

    #[test]
    fn a_destroy_run_is_checked_whole_before_it_changes_anything() {
        let mut w = Pair::try_new(8).unwrap();
        let e = spawned(&mut w);
        w.destroy(e[3]).unwrap();
        let revision = w.registry.structural_revision();
        assert!(matches!(
            destroy_run(&mut w, [e[0], e[1], e[3]].into_iter()),
            Err(WorldError::Rejected(_))
        ));
        assert!(e[..3].iter().all(|&x| w.registry.is_alive(x)));
        assert_eq!((w.a.len(), w.b.len(), w.c.len()), (3, 3, 3));
        assert_eq!(w.registry.structural_revision(), revision);
        assert!(w.check_groups());
    }

    #[test]
    fn a_destroy_run_releases_in_run_order_as_destroys_would() {
        let (mut run, mut one) = (Pair::try_new(8).unwrap(), Pair::try_new(8).unwrap());
        let (r, o) = (spawned(&mut run), spawned(&mut one));
        destroy_run(&mut run, [r[0], r[2]].into_iter()).unwrap();
        one.destroy(o[0]).unwrap();
        one.destroy(o[2]).unwrap();
        for w in [&mut run, &mut one] {
            assert_eq!((w.a.len(), w.b.len(), w.c.len()), (2, 2, 2));
            assert!(w.check_groups());
        }
        assert_eq!(
            run.registry.structural_revision(),
            one.registry.structural_revision()
        );
        for _ in 0..3 {
            let (x, y) = (run.create().unwrap(), one.create().unwrap());
            assert_eq!((x.slot(), x.generation()), (y.slot(), y.generation()));
        }
        assert_eq!(run.a.get(r[1]), Some(&1));
        assert_eq!(run.c.get(r[3]), Some(&3));
    }

    #[test]
    #[should_panic(expected = "not alive")]
    fn a_repeated_entity_in_a_run_panics_before_a_slot_is_freed_twice() {
        let mut w = Pair::try_new(8).unwrap();
        let e = spawned(&mut w);
        let _ = destroy_run(&mut w, [e[1], e[1]].into_iter());
    }
}
