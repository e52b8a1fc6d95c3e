//! [`WorldOps`]: every operation of a world, in generic Rust over its [`Roster`].
//!
//! Structural operations check, in release builds, the phase, the handle, the budgets and
//! that each pool they touch belongs to the world's registry (so a registry or pool swapped
//! between two worlds is refused with [`WorldError::ForeignPool`], never mixed). Owned groups
//! are kept packed on every insert, remove and destroy.

use core::any::TypeId;
use core::marker::PhantomData;

use allocator_api2::alloc::Allocator;
use bytemuck::Pod;

use crate::identity::{OwnerToken, TERMINAL_GENERATION};
use crate::world::command::buffer::BundleLayout;
use crate::world::command::buffer::CommandBuffer;
use crate::world::command::group::{groups_valid, repack, Consistent};
use crate::world::command::spawn::{self, pack_groups_of, Bundle};
use crate::world::query::pool_access::{GroupQuery, PoolQuery};
use crate::world::raw::keys::EntityId;
use crate::world::raw::keys::EntityKey;
use crate::world::store::error::InitError;
use crate::world::store::error::WorldError;
use crate::world::store::pool::ComponentPool;
use crate::world::store::registry::EntityRegistry;
use crate::world::store::roster::{
    ComponentList, GroupList, GroupVisitor, PoolVisitor, PoolsMut, PoolsMutList, PoolsRefList,
    RefList, Roster, Stores, TypeVisitor,
};

/// A world's registry and one of its pools, mutably.
type Member<'a, W, T> = (
    &'a mut EntityRegistry<<W as Roster>::Alloc>,
    &'a mut ComponentPool<T, <W as Roster>::Alloc>,
);

/// The registry and the pool of `T`, checked to belong together; for a grouped `T`, every
/// member pool of `T`'s groups too (a change of `T` repacks them all: a member pool swapped
/// out, or hidden by a hand-written roster, would leave its group unpacked).
#[inline(always)]
fn member<W: Roster, T: Pod>(world: &mut W) -> Result<Member<'_, W, T>, WorldError> {
    member_with::<W, T>(world, true)
}

/// [`member`], checking the member pools of `T`'s groups only when `groups` (a caller that
/// checked them for the same operation, or for a whole batch, passes `false`).
#[inline(always)]
fn member_with<W: Roster, T: Pod>(
    world: &mut W,
    groups: bool,
) -> Result<Member<'_, W, T>, WorldError> {
    let (registry, mut pools) = world.parts();
    if groups && grouped::<W, T>() && !groups_owned::<W, T>(&mut pools, registry.owner()) {
        return Err(WorldError::ForeignPool);
    }
    let pool = pools.take::<T>().ok_or(WorldError::UnknownComponent)?;
    if pool.owner() != registry.owner() {
        return Err(WorldError::ForeignPool);
    }
    Ok((&mut registry.0, pool))
}

/// Whether every member pool of every group containing `T` is handed out and belongs to
/// `owner`.
#[inline(always)]
fn groups_owned<'a, W: Roster, T: Pod>(pools: &mut PoolsMut<'a, W>, owner: OwnerToken) -> bool {
    /// Checks one group's member pools.
    struct Members<'p, P, A> {
        pools: &'p mut P,
        owner: OwnerToken,
        ok: bool,
        _alloc: PhantomData<A>,
    }
    impl<'a, A: Allocator + Clone + 'static, P: PoolsMutList<'a, A>> TypeVisitor for Members<'_, P, A> {
        #[inline(always)]
        fn visit<U: Pod>(&mut self) {
            self.ok &= self
                .pools
                .get::<U>()
                .is_some_and(|p| p.owner() == self.owner);
        }
    }
    impl<'a, A: Allocator + Clone + 'static, P: PoolsMutList<'a, A>> GroupVisitor
        for Members<'_, P, A>
    {
        #[inline(always)]
        fn visit<G: ComponentList>(&mut self) {
            G::each(self);
        }
    }
    let mut members = Members::<_, W::Alloc> {
        pools,
        owner,
        ok: true,
        _alloc: PhantomData,
    };
    crate::world::command::group::by_size::<W::Groups, _>(
        Some(&[TypeId::of::<T>()]),
        true,
        &mut members,
    );
    members.ok
}

/// Whether `T`'s pool is in an owned group (folds to a constant).
#[inline(always)]
fn grouped<W: Roster, T: Pod>() -> bool {
    W::Groups::index_of(TypeId::of::<T>()).is_some()
}

/// [`WorldOps::insert`] without the compile-time roster bound (commands dispatch by type).
#[inline(always)]
pub(crate) fn insert<W: Roster, T: Pod>(
    world: &mut W,
    entity: EntityId,
    value: T,
) -> Result<Option<T>, WorldError> {
    insert_as::<true, W, T>(world, entity, value)
}

/// [`insert`], checking the change (phase, liveness, budget) when `CHECK`; a batch passes
/// `false` after checking every entity of the batch at once.
#[inline(always)]
fn insert_as<const CHECK: bool, W: Roster, T: Pod>(
    world: &mut W,
    entity: EntityId,
    value: T,
) -> Result<Option<T>, WorldError> {
    let (previous, joined) = {
        // A batch (`!CHECK`) checked its groups' member pools with the column's pool.
        let (registry, pool) = member_with::<W, T>(world, CHECK)?;
        if CHECK {
            registry.check_member_change(entity)?;
        }
        let inserted = pool.insert_validated(entity, value);
        registry.advance_revision(u64::from(inserted.1));
        inserted
    };
    if joined && grouped::<W, T>() {
        pack_groups_of::<W, T>(&mut world.parts().1, entity);
    }
    Ok(previous)
}

/// Inserts, for each `k`, the `T` read from `values(k)` into `entities[k]`: one pool taken
/// for the whole column, the changes (phase, every entity alive, the column's revisions)
/// checked once before any insert, groups packed after the column. A value of the wrong size
/// stops it there (the entities before it keep their values).
///
/// # Errors
/// As [`insert`]; `UnknownComponent` for bytes of another size than `T`'s.
pub(crate) fn insert_column<'v, W: Roster, T: Pod>(
    world: &mut W,
    entities: &[EntityId],
    values: impl Fn(usize) -> &'v [u8],
) -> Result<(), WorldError> {
    {
        let (registry, pool) = member::<W, T>(world)?;
        registry.check_member_changes(entities)?;
        for (k, &entity) in entities.iter().enumerate() {
            let value = bytemuck::try_pod_read_unaligned::<T>(values(k))
                .map_err(|_| WorldError::UnknownComponent)?;
            let (_, joined) = pool.insert_validated(entity, value);
            registry.advance_revision(u64::from(joined));
        }
    }
    if grouped::<W, T>() {
        for &entity in entities {
            pack_groups_of::<W, T>(&mut world.parts().1, entity);
        }
    }
    Ok(())
}

/// Appends `value` as `entity`'s `T` without a slot lookup, checking the change: a command
/// bundle's component, right after its create. The create made `entity` new, so its slot has
/// no `T`; but a bundle's create and each of its inserts are separate visits of the world, and
/// a hand-written roster can insert from inside `durable_parts` in between. So the slot's
/// membership bit is checked (one word, in release builds): when it is set, the value goes
/// through the ordinary insert (a lookup that replaces it), never a second entry.
///
/// # Errors
/// As [`WorldOps::insert`](crate::world::world_ops::WorldOps::insert).
#[inline(always)]
pub(crate) fn insert_fresh<W: Roster, T: Pod>(
    world: &mut W,
    entity: EntityId,
    value: T,
    layout: &mut BundleLayout,
) -> Result<(), WorldError> {
    {
        let (registry, pool) = member::<W, T>(world)?;
        registry.check_member_change(entity)?;
        if pool.holds_slot(entity.slot()) {
            let (_, joined) = pool.insert_validated(entity, value);
            registry.advance_revision(u64::from(joined));
        } else {
            let class = pool.layout_class();
            // SAFETY: the slot has no entry in this pool (its membership bit, checked just
            // above, is clear: the bits are exact, the dense module's invariant).
            unsafe { pool.insert_first(entity, value) };
            registry.advance_revision(1);
            if !grouped::<W, T>() {
                layout.after_append(pool, class);
            }
        }
    }
    if grouped::<W, T>() {
        pack_groups_of::<W, T>(&mut world.parts().1, entity);
    }
    Ok(())
}

/// [`WorldOps::remove`] without the compile-time roster bound (commands dispatch by type).
#[inline(always)]
pub(crate) fn remove<W: Roster, T: Pod>(
    world: &mut W,
    entity: EntityId,
) -> Result<Option<T>, WorldError> {
    remove_as::<true, W, T>(world, entity)
}

/// [`remove`], checking the change when `CHECK` (see [`insert_as`]). For a grouped `T` the
/// checks, the unpacking and the removal take one borrow of the pools: a roster runs code of
/// its own on every `parts` call, which could otherwise change the entity's memberships
/// between the unpacking and the removal and leave a group unpacked.
#[inline(always)]
fn remove_as<const CHECK: bool, W: Roster, T: Pod>(
    world: &mut W,
    entity: EntityId,
) -> Result<Option<T>, WorldError> {
    if !grouped::<W, T>() {
        let (registry, pool) = member_with::<W, T>(world, false)?;
        if CHECK {
            registry.check_member_change(entity)?;
        }
        let value = pool.remove_validated(entity);
        registry.advance_revision(u64::from(value.is_some()));
        return Ok(value);
    }
    let (registry, mut pools) = world.parts();
    let registry = &mut registry.0;
    // A batch (`!CHECK`) checked its groups' member pools with the column's pool.
    if CHECK && !groups_owned::<W, T>(&mut pools, registry.owner()) {
        return Err(WorldError::ForeignPool);
    }
    // Checked in the list: the unpacking needs it there.
    match pools.get::<T>() {
        None => return Err(WorldError::UnknownComponent),
        Some(pool) if pool.owner() != registry.owner() => return Err(WorldError::ForeignPool),
        Some(_) => {}
    }
    if CHECK {
        registry.check_member_change(entity)?;
    }
    repack::<W::Groups, W::Alloc, _>(&mut pools, entity, Some(&[TypeId::of::<T>()]), false);
    let pool = pools.take::<T>().ok_or(WorldError::UnknownComponent)?;
    let value = pool.remove_validated(entity);
    registry.advance_revision(u64::from(value.is_some()));
    Ok(value)
}

/// Checks that every pool belongs to `owner`, counting them.
struct AllOwned {
    owner: OwnerToken,
    ok: bool,
    pools: usize,
}

impl<A: Allocator + Clone + 'static> PoolVisitor<A> for AllOwned {
    #[inline(always)]
    fn visit<T: Pod>(&mut self, pool: &mut ComponentPool<T, A>) {
        self.ok &= pool.owner() == self.owner;
        self.pools += 1;
    }
}

/// Removes one entity from every pool (all of its registry: checked before), counting the
/// removals.
struct RemoveAll {
    key: EntityKey,
    removed: u64,
}

impl<A: Allocator + Clone + 'static> PoolVisitor<A> for RemoveAll {
    #[inline(always)]
    fn visit<T: Pod>(&mut self, pool: &mut ComponentPool<T, A>) {
        // A pool the entity is not in costs one bitset word (`remove_key` returns before it
        // touches the keys or the stamp).
        let layout = pool.layout();
        self.removed += u64::from(pool.remove_key(self.key).is_some());
        // Every pool sharing the stamp held equal keys, so the entity at the same index, and
        // all of them take the same swap removal here (groups hold no shared stamp).
        pool.set_layout(layout);
    }
}

/// Removes a run of entities from every pool, one pass per pool (see [`destroy_run`]),
/// counting the removals.
struct RemoveRun<I> {
    run: I,
    removed: u64,
}

impl<A: Allocator + Clone + 'static, I: Iterator<Item = EntityId> + Clone> PoolVisitor<A>
    for RemoveRun<I>
{
    #[inline(always)]
    fn visit<T: Pod>(&mut self, pool: &mut ComponentPool<T, A>) {
        // Pools sharing a stamp held equal keys, so they take the same removals in the same
        // order and still hold equal keys after them (as in `RemoveAll`).
        let layout = pool.layout();
        self.removed += pool.remove_keys(self.run.clone().map(EntityKey::of));
        pool.set_layout(layout);
    }
}

/// Destroys `run` (distinct entities; the iterator is walked several times: the checks, the
/// detaches, once per pool, the releases) as many [`WorldOps::destroy`] calls in order would —
/// detached, unpacked from their groups, removed from every pool, their slots released in
/// run order (so later creates take the same slots) — except for the pools' dense order:
/// each pool removes the whole run in one pass. A commit applies its runs of consecutive
/// destroys through it. Checks everything `destroy` does for every entity before changing
/// anything.
///
/// # Errors
/// As [`WorldOps::destroy`], for the first entity that fails; nothing changes.
pub(crate) fn destroy_run<W: Roster>(
    world: &mut W,
    run: impl Iterator<Item = EntityId> + Clone,
) -> Result<(), WorldError> {
    let (registry, durable, mut pools) = world.durable_parts();
    let registry = &mut registry.0;
    let durable = &mut durable.0;
    // The release invariant, as in `destroy`.
    if !all_bound(registry, &mut pools) || durable.owner() != registry.owner() {
        return Err(WorldError::ForeignPool);
    }
    // Phase, budget (a release and a removal per pool for each entity) and liveness.
    let budget = (run.clone().count() as u64).saturating_mul(W::Components::LEN as u64 + 1);
    for entity in run.clone() {
        registry.check_entity_change(entity, budget)?;
        if durable.is_protected(entity) {
            return Err(WorldError::Protected);
        }
    }
    for entity in run.clone() {
        durable.detach(registry, entity);
        if W::Groups::LEN > 0 {
            repack::<W::Groups, W::Alloc, _>(&mut pools, entity, None, false);
        }
    }
    let mut remove = RemoveRun {
        run: run.clone(),
        removed: 0,
    };
    pools.visit(&mut remove);
    // A repeated entity (never in a commit: a destroy's recording marks its target, and a
    // marked entity cannot be recorded again) is removed once and its second release
    // panics, before any slot is handed out twice.
    for entity in run {
        registry.release_charged(entity, 0);
    }
    registry.advance_revision(remove.removed);
    Ok(())
}

/// The most components a replacement bundle has (`CommandBundle`'s limit).
pub(crate) const MAX_REPLACEMENT: usize = 8;

/// The components of a replacement: each one's type and value bytes.
pub(crate) type Replacement<'b> = [(TypeId, &'b [u8])];

/// How a replacement meets its predecessor's rows: in roster order, the part that takes each
/// row it has a type for, and how many rows it has no type for.
struct Classify<'r, 'b> {
    slot: u32,
    parts: &'r Replacement<'b>,
    /// `order[n]`: the part of the `n`-th pool (roster order) holding the predecessor.
    order: [u8; MAX_REPLACEMENT],
    shared: usize,
    /// Bit `k`: `parts[k]` takes a row.
    matched: u32,
    /// The predecessor's rows no part takes.
    drops: usize,
    /// False when a part's size is not its type's.
    ok: bool,
}

impl<A: Allocator + Clone + 'static> PoolVisitor<A> for Classify<'_, '_> {
    #[inline(always)]
    fn visit<T: Pod>(&mut self, pool: &mut ComponentPool<T, A>) {
        // A bound pool's entries are of live entities (the release invariant), and the
        // predecessor is alive: its slot's membership bit says whether the pool holds it.
        if !pool.holds_slot(self.slot) {
            return;
        }
        let part = self
            .parts
            .iter()
            .position(|(id, _)| *id == TypeId::of::<T>());
        match (part, self.order.get_mut(self.shared)) {
            (Some(k), Some(order)) => {
                self.ok &= self.parts[k].1.len() == core::mem::size_of::<T>();
                *order = k as u8;
                self.shared += 1;
                self.matched |= 1 << k;
            }
            (None, _) => self.drops += 1,
            // More shared rows than parts: the parts' types are not distinct.
            (Some(_), None) => self.ok = false,
        }
    }
}

/// The first type of the predecessor's rows that no part takes.
struct FirstDropped<'r, 'b> {
    slot: u32,
    parts: &'r Replacement<'b>,
    found: Option<TypeId>,
}

impl<A: Allocator + Clone + 'static> PoolVisitor<A> for FirstDropped<'_, '_> {
    #[inline(always)]
    fn visit<T: Pod>(&mut self, pool: &mut ComponentPool<T, A>) {
        let id = TypeId::of::<T>();
        if self.found.is_none()
            && pool.holds_slot(self.slot)
            && self.parts.iter().all(|(p, _)| *p != id)
        {
            self.found = Some(id);
        }
    }
}

/// Gives each of `old`'s rows to `new` with the value of the part [`Classify`] found for it.
struct ReplaceRows<'r, 'b> {
    old: EntityKey,
    new: EntityKey,
    parts: &'r Replacement<'b>,
    order: &'r [u8],
    /// Pools holding the slot seen so far.
    seen: usize,
    replaced: usize,
}

impl<A: Allocator + Clone + 'static> PoolVisitor<A> for ReplaceRows<'_, '_> {
    #[inline(always)]
    fn visit<T: Pod>(&mut self, pool: &mut ComponentPool<T, A>) {
        // `old` and `new` share the slot: the pools holding it are the ones `Classify` saw
        // holding `old`, in the same order (one borrow of the pools, and nothing between
        // changed a pool's membership). A part of another type replaces nothing, and the
        // caller's count check stops the commit.
        if !pool.holds_slot(self.old.slot()) {
            return;
        }
        let n = self.seen;
        self.seen += 1;
        let Some(&(id, bytes)) = self
            .order
            .get(n)
            .and_then(|&k| self.parts.get(usize::from(k)))
        else {
            return;
        };
        if id != TypeId::of::<T>() {
            return;
        }
        if let Ok(value) = bytemuck::try_pod_read_unaligned::<T>(bytes) {
            self.replaced += usize::from(pool.replace_key(self.old, self.new, value));
        }
    }
}

/// Destroys `old` and creates its replacement holding exactly `parts` (distinct roster types,
/// at most [`MAX_REPLACEMENT`]) *in place* when the two share a component type and `old`'s
/// slot is not retired by the release: as [`destroy_run`] of `old` followed by a create and a
/// fresh insert of each part would, except that the new entity (the next generation of
/// `old`'s slot, the one that create would take: the free stack is LIFO) takes `old`'s row in
/// every pool of a shared type, where it stands, and those pools keep their layout and
/// cluster stamps (the pools losing or gaining the slot reset theirs, as any change does). `old`'s
/// rows of types the replacement lacks are removed first (as `remove` does: groups unpacked,
/// which moves the shared rows of a group that held one of them), the parts of types `old`
/// lacked inserted last (as a spawn's: groups packed, likewise). Returns `None` when it does not
/// apply: nothing changed (but for a hand-written roster that hands out other pools between
/// the removals and the release: `old` may have lost rows then, which the caller's destroy
/// of `old` would remove anyway).
///
/// # Errors
/// As [`destroy_run`] for `old`, and [`WorldError::SequenceExhausted`]; nothing changes. (A
/// hand-written roster that hands out other pools between calls can make a removal or an
/// insert fail half way, as it can stop a commit.)
pub(crate) fn replace_in_place<W: Roster>(
    world: &mut W,
    old: EntityId,
    parts: &Replacement<'_>,
) -> Result<Option<EntityId>, WorldError> {
    if parts.is_empty() || parts.len() > MAX_REPLACEMENT || old.generation() == TERMINAL_GENERATION
    {
        return Ok(None);
    }
    let (new, matched) = match replace_rows(world, old, parts)? {
        Replaced::Done(new, matched) => (new, matched),
        Replaced::Not => return Ok(None),
        Replaced::DropFirst(drops) => {
            // Rows of types the replacement lacks leave first, as `remove` takes them
            // (groups unpacked); then the rows left are exactly the shared types'.
            for _ in 0..drops {
                let mut first = FirstDropped {
                    slot: old.slot(),
                    parts,
                    found: None,
                };
                world.parts().1.visit(&mut first);
                match first.found {
                    Some(id) => crate::world::command::buffer::remove_type(world, old, id)?,
                    None => break,
                }
            }
            match replace_rows(world, old, parts)? {
                Replaced::Done(new, matched) => (new, matched),
                // Only a roster handing out other pools than before gets here: `old` is
                // destroyed by the caller's fallback (the removals above are part of that
                // destroy).
                Replaced::Not | Replaced::DropFirst(_) => return Ok(None),
            }
        }
    };
    // The parts of types `old` lacked, as a spawn appends them (groups packed; the pools get
    // no shared stamp).
    let mut layout = BundleLayout::NONE;
    for (k, &(id, bytes)) in parts.iter().enumerate() {
        if matched & (1 << k) == 0 {
            crate::world::command::buffer::insert_fresh_bytes(world, new, id, bytes, &mut layout)?;
        }
    }
    Ok(Some(new))
}

/// What one in-place step did.
enum Replaced {
    /// `old` released and the replacement created on its rows; the parts whose bit is clear
    /// in the mask are still to insert.
    Done(EntityId, u32),
    /// Nothing changed; the replacement does not apply in place.
    Not,
    /// Nothing changed; `old` first loses this many rows of types no part has.
    DropFirst(usize),
}

/// The in-place step of [`replace_in_place`], under one borrow of the world: checks, and when
/// `old`'s rows are all of the parts' types (at least one), releases `old`, creates the
/// replacement and hands it those rows.
fn replace_rows<W: Roster>(
    world: &mut W,
    old: EntityId,
    parts: &Replacement<'_>,
) -> Result<Replaced, WorldError> {
    let (registry, durable, mut pools) = world.durable_parts();
    let registry = &mut registry.0;
    let durable = &mut durable.0;
    if !all_bound(registry, &mut pools) || durable.owner() != registry.owner() {
        return Err(WorldError::ForeignPool);
    }
    // Phase and liveness (the release and the create; the rest once classified below).
    registry.check_entity_change(old, 2)?;
    if durable.is_protected(old) {
        return Err(WorldError::Protected);
    }
    // The create below must not fail once `old` is released (its rows would outlive it): its
    // room is the slot the release frees and its revision is inside the budget checked above,
    // so only the sequence is left to check. (The preflight checked it too, but a roster runs
    // code of its own between the preflight and here.)
    if registry.last_sequence() == u64::MAX {
        return Err(WorldError::SequenceExhausted);
    }
    let mut plan = Classify {
        slot: old.slot(),
        parts,
        order: [0; MAX_REPLACEMENT],
        shared: 0,
        matched: 0,
        drops: 0,
        ok: true,
    };
    pools.visit(&mut plan);
    if !plan.ok || plan.shared == 0 {
        return Ok(Replaced::Not);
    }
    // What the destroy and the spawn it stands for would count: the release, a removal per
    // row, the create, a fresh insert per part (the preflight reserved at least that).
    let held = (plan.shared + plan.drops) as u64;
    registry.check_revisions(2 + held + parts.len() as u64)?;
    if plan.drops > 0 {
        return Ok(Replaced::DropFirst(plan.drops));
    }
    let (order, shared, matched) = (plan.order, plan.shared, plan.matched);
    durable.detach(registry, old);
    registry.release_charged(old, 0);
    let new = registry.try_create_charged(0)?;
    // LIFO: the create takes the slot the release just pushed. Checked in release builds: the
    // rows below are handed over by slot.
    assert_eq!(
        new.slot(),
        old.slot(),
        "a replacement takes its predecessor's slot"
    );
    let mut rows = ReplaceRows {
        old: EntityKey::of(old),
        new: EntityKey::of(new),
        parts,
        order: &order[..shared],
        seen: 0,
        replaced: 0,
    };
    pools.visit(&mut rows);
    // Every pool holding `old` held it at the check above and took the replacement (the same
    // pools: one `durable_parts` borrow).
    assert_eq!(
        rows.replaced, shared,
        "every row of the predecessor is replaced"
    );
    // A removal and a fresh insert per row taken over.
    registry.advance_revision(2 * shared as u64);
    Ok(Replaced::Done(new, matched))
}

/// Checks each pool's lookup structures ([`pools_exact`]).
struct IndexesExact<P, A> {
    pools: P,
    ok: bool,
    _alloc: PhantomData<A>,
}

impl<'a, A: Allocator + Clone + 'static, P: PoolsRefList<'a, A>> TypeVisitor
    for IndexesExact<P, A>
{
    fn visit<T: Pod>(&mut self) {
        if let Some(pool) = self.pools.get::<T>() {
            self.ok &= pool.check_index();
        }
    }
}

/// Whether every pool of a world has exact lookup structures (sparse map, membership bitset,
/// order fact; `O(capacity)` per pool, for tests and debugging).
fn pools_exact<'a, C, A, P>(pools: P) -> bool
where
    C: ComponentList,
    A: Allocator + Clone + 'static,
    P: PoolsRefList<'a, A>,
{
    let mut check = IndexesExact {
        pools,
        ok: true,
        _alloc: PhantomData,
    };
    C::each(&mut check);
    check.ok
}

/// Distinct shared layout stamps [`WorldOps::sort_pools`] carries over (pools past it keep
/// stamp 0, which shares nothing).
const SORT_STAMPS: usize = 16;

/// Sorts every ungrouped pool by slot, renaming shared stamps consistently.
struct SortAll<'r, W: Roster> {
    registry: &'r mut EntityRegistry<W::Alloc>,
    /// Old stamp → new stamp, for the stamps seen so far.
    renamed: [(u64, u64); SORT_STAMPS],
    sorted: usize,
    _world: PhantomData<W>,
}

impl<W: Roster> PoolVisitor<W::Alloc> for SortAll<'_, W> {
    fn visit<T: Pod>(&mut self, pool: &mut ComponentPool<T, W::Alloc>) {
        if grouped::<W, T>() || pool.is_slot_sorted() {
            // A group's order is the group's; a sorted pool is left as it is, and so are the
            // pools sharing its stamp (equal keys: sorted too).
            return;
        }
        let old = pool.layout();
        if !pool.sort_by_slot() {
            // A pool that still packs a group this world type does not declare (its parts
            // came from another world type) keeps its order, so it keeps its stamp: renaming
            // it with the pools that did sort would claim equal keys it no longer has.
            return;
        }
        self.sorted += 1;
        if old == 0 || pool.owner() != self.registry.owner() {
            return;
        }
        // Pools that shared `old` held equal keys and sorted to equal keys: they share `new`.
        let new = match self.renamed.iter().find(|(o, _)| *o == old) {
            Some(&(_, new)) => new,
            None => match self.renamed.iter_mut().find(|(o, _)| *o == 0) {
                Some(free) => {
                    *free = (old, self.registry.fresh_layout());
                    free.1
                }
                None => 0,
            },
        };
        pool.set_layout(new);
    }
}

/// Checks that every pool can be bound to a registry of `capacity`: unbound and empty.
struct Bindable {
    capacity: usize,
    ok: bool,
}

impl<A: Allocator + Clone + 'static> PoolVisitor<A> for Bindable {
    fn visit<T: Pod>(&mut self, pool: &mut ComponentPool<T, A>) {
        self.ok &= pool.capacity() == self.capacity && pool.owner() == 0 && pool.is_empty();
    }
}

/// Binds every pool to a registry.
struct Bind<'r, B: Allocator + Clone> {
    registry: &'r mut EntityRegistry<B>,
}

impl<A: Allocator + Clone + 'static, B: Allocator + Clone> PoolVisitor<A> for Bind<'_, B> {
    fn visit<T: Pod>(&mut self, pool: &mut ComponentPool<T, A>) {
        pool.bind_world(self.registry);
    }
}

/// Whether the world's pools are exactly the pools bound to its registry (every structural
/// operation on them then goes through): a commit checks it before applying anything.
pub(crate) fn roster_intact<W: Roster>(world: &mut W) -> bool {
    let (registry, mut pools) = world.parts();
    all_bound(&registry.0, &mut pools)
}

/// Whether `pools` are exactly the pools bound to `registry`: each belongs to it, and as many
/// as it counted (so a destroy that visits them reaches every pool that can hold its entity).
#[inline(always)]
fn all_bound<'a, A: Allocator + Clone + 'static, P: PoolsMutList<'a, A>>(
    registry: &EntityRegistry<A>,
    pools: &mut P,
) -> bool {
    let mut owned = AllOwned {
        owner: registry.owner(),
        ok: true,
        pools: 0,
    };
    pools.visit(&mut owned);
    owned.ok && owned.pools == registry.bound_pools()
}

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
    /// (a group with no member, more than [`MAX_GROUP_MEMBERS`](crate::world::store::roster::MAX_GROUP_MEMBERS), a
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
        if !Self::Refs::all_in::<Self::Components>() {
            return Err(InitError::UnknownRefComponent);
        }
        let (registry, durable, mut pools) = self.durable_parts();
        if registry.owner() != 0 {
            // A bound world attaches no part: a fresh one handed out now stays unattached
            // and every durable operation on it is refused.
            return if all_bound(&registry.0, &mut pools) && durable.owner() == registry.owner() {
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
        if !bindable.ok || !durable.fits(registry.capacity()) {
            return Err(InitError::PoolMismatch);
        }
        registry.0.issue_owner()?;
        pools.visit(&mut Bind {
            registry: &mut registry.0,
        });
        durable.0.attach(&registry.0);
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
    /// A durable world first detaches the entity: its binding is removed, its children are
    /// reparented by the world's [`OrphanPolicy`](crate::durable::hierarchy::OrphanPolicy), its name dropped.
    ///
    /// # Errors
    /// `InvalidPhase`, `Rejected` (not alive), `RevisionExhausted`, `Protected`, or
    /// `ForeignPool` (a pool or durable part of another registry, or fewer pools than are
    /// bound to the registry); nothing changes.
    fn destroy(&mut self, entity: EntityId) -> Result<(), WorldError> {
        let (registry, durable, mut pools) = self.durable_parts();
        let registry = &mut registry.0;
        let durable = &mut durable.0;
        registry.check_entity_change(entity, Self::Components::LEN as u64 + 1)?;
        // The release invariant: a world's registry releases a slot only here and in a
        // commit (`destroy_run`, `replace_in_place`), after every pool bound to it left the
        // entity or with its rows handed to the next incarnation (spawns into reused slots
        // rely on it).
        if !all_bound(registry, &mut pools) || durable.owner() != registry.owner() {
            return Err(WorldError::ForeignPool);
        }
        if durable.is_protected(entity) {
            return Err(WorldError::Protected);
        }
        // Seed 000's destruction order: detach durable bindings, remove components, then
        // release the slot.
        durable.detach(registry, entity);
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
    /// length, then as [`spawn_batch`](Self::spawn_batch); nothing changes and `out` is
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

    /// Gives `entity` a component value (replacing a previous one).
    ///
    /// # Errors
    /// `ForeignPool`, then as [`ComponentPool::insert`]; nothing changes.
    #[inline]
    fn insert<T: Pod>(&mut self, entity: EntityId, value: T) -> Result<Option<T>, WorldError>
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
    fn remove<T: Pod>(&mut self, entity: EntityId) -> Result<Option<T>, WorldError>
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
    fn insert_batch<T: Pod>(
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
    fn remove_batch<T: Pod>(&mut self, entities: &[EntityId]) -> Result<usize, WorldError>
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
    fn get<T: Pod>(&self, entity: EntityId) -> Option<&T>
    where
        Self: Stores<T>,
    {
        self.parts_ref().1.get::<T>()?.get(entity)
    }

    /// `entity`'s `T`, mutably (allowed in every phase).
    #[inline]
    fn get_mut<T: Pod>(&mut self, entity: EntityId) -> Option<&mut T>
    where
        Self: Stores<T>,
    {
        self.parts().1.take::<T>()?.get_mut(entity)
    }

    /// Whether `entity` holds a `T`.
    #[inline]
    fn contains<T: Pod>(&self, entity: EntityId) -> bool
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
    fn pool<T: Pod>(&self) -> &ComponentPool<T, Self::Alloc>
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
    fn pool_mut<T: Pod>(&mut self) -> &mut ComponentPool<T, Self::Alloc>
    where
        Self: Stores<T>,
    {
        self.pools_mut::<(&mut T,)>().0
    }

    /// Several pools at once, by type: `world.pools_mut::<(&mut Position, &Velocity)>()`
    /// returns `(&mut ComponentPool<Position>, &ComponentPool<Velocity>)`, ready for
    /// [`join`](crate::world::query::join). Compiles to field accesses.
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
    /// set; for tests and debugging (see [`cluster`](crate::world::query::cluster)).
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

impl<R: Roster> WorldOps for R {}

#[cfg(test)]
mod tests {
    use super::*;

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
