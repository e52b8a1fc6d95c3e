//! The structural primitives every world operation and a commit share: typed insert and
//! remove (with group packing), destroying a run of entities, replacing an entity in place,
//! and the checks that a world's pools, groups and hooks are bound to its registry.
//!
//! Each checks, in release builds, the phase, the handle, the budgets and that each pool it
//! touches belongs to the world's registry (so a registry or pool swapped between two worlds
//! is refused with [`WorldError::ForeignPool`], never mixed). Owned groups are kept packed.

use core::any::TypeId;
use core::marker::PhantomData;

use crate::world::store::component::{self, Component};
use allocator_api2::alloc::Allocator;

use crate::identity::{OwnerToken, TERMINAL_GENERATION};
use crate::world::command::group::repack;
use crate::world::command::spawn::pack_groups_of;
use crate::world::raw::keys::EntityId;
use crate::world::raw::keys::EntityKey;
use crate::world::store::error::WorldError;
use crate::world::store::hooks::EntityHooks;
use crate::world::store::pool::ComponentPool;
use crate::world::store::registry::EntityRegistry;
use crate::world::store::roster::{
    ComponentList, GroupList, GroupVisitor, PoolVisitor, PoolsMut, PoolsMutList, PoolsRefList,
    Roster, TypeVisitor,
};

/// A world's registry and one of its pools, mutably.
pub(crate) type Member<'a, W, T> = (
    &'a mut EntityRegistry<<W as Roster>::Alloc>,
    &'a mut ComponentPool<T, <W as Roster>::Alloc>,
);

/// The registry and the pool of `T`, checked to belong together; for a grouped `T`, every
/// member pool of `T`'s groups too (a change of `T` repacks them all: a member pool swapped
/// out, or hidden by a hand-written roster, would leave its group unpacked).
#[inline(always)]
pub(crate) fn member<W: Roster, T: Component>(
    world: &mut W,
) -> Result<Member<'_, W, T>, WorldError> {
    member_with::<W, T>(world, true)
}

/// [`member`], checking the member pools of `T`'s groups only when `groups` (a caller that
/// checked them for the same operation, or for a whole batch, passes `false`).
#[inline(always)]
pub(crate) fn member_with<W: Roster, T: Component>(
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
pub(crate) fn groups_owned<'a, W: Roster, T: Component>(
    pools: &mut PoolsMut<'a, W>,
    owner: OwnerToken,
) -> bool {
    /// Checks one group's member pools.
    struct Members<'p, P, A> {
        pools: &'p mut P,
        owner: OwnerToken,
        ok: bool,
        _alloc: PhantomData<A>,
    }
    impl<'a, A: Allocator + Clone + 'static, P: PoolsMutList<'a, A>> TypeVisitor for Members<'_, P, A> {
        #[inline(always)]
        fn visit<U: Component>(&mut self) {
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
pub(crate) fn grouped<W: Roster, T: Component>() -> bool {
    W::Groups::index_of(TypeId::of::<T>()).is_some()
}

/// [`WorldOps::insert`] without the compile-time roster bound (commands dispatch by type).
#[inline(always)]
pub(crate) fn insert<W: Roster, T: Component>(
    world: &mut W,
    entity: EntityId,
    value: T,
) -> Result<Option<T>, WorldError> {
    insert_as::<true, W, T>(world, entity, value)
}

/// [`insert`], checking the change (phase, liveness, budget) when `CHECK`; a batch passes
/// `false` after checking every entity of the batch at once.
#[inline(always)]
pub(crate) fn insert_as<const CHECK: bool, W: Roster, T: Component>(
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
/// checked once before any insert, groups packed after the column. The callers check the
/// values first (a transaction's checks do): a value of the wrong size or pattern stops the
/// column there (the entities before it keep their values).
///
/// # Errors
/// As [`insert`]; `UnknownComponent` for bytes of another size than `T`'s, `InvalidValue` for
/// a pattern no `T` has.
pub(crate) fn insert_column<'v, W: Roster, T: Component>(
    world: &mut W,
    entities: &[EntityId],
    values: impl Fn(usize) -> &'v [u8],
) -> Result<(), WorldError> {
    {
        let (registry, pool) = member::<W, T>(world)?;
        registry.check_member_changes(entities)?;
        for (k, &entity) in entities.iter().enumerate() {
            let value = component::try_read::<T>(values(k))?;
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
/// a hand-written roster can insert from inside `hooked_parts` in between. So the slot's
/// membership bit is checked (one word, in release builds): when it is set, the value goes
/// through the ordinary insert (a lookup that replaces it), never a second entry.
///
/// # Errors
/// As [`WorldOps::insert`](crate::world::world_ops::WorldOps::insert).
#[inline(always)]
pub(crate) fn insert_fresh<W: Roster, T: Component>(
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
pub(crate) fn remove<W: Roster, T: Component>(
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
pub(crate) fn remove_as<const CHECK: bool, W: Roster, T: Component>(
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
pub(crate) struct AllOwned {
    owner: OwnerToken,
    ok: bool,
    pools: usize,
}

impl<A: Allocator + Clone + 'static> PoolVisitor<A> for AllOwned {
    #[inline(always)]
    fn visit<T: Component>(&mut self, pool: &mut ComponentPool<T, A>) {
        self.ok &= pool.owner() == self.owner;
        self.pools += 1;
    }
}

/// Removes one entity from every pool (all of its registry: checked before), counting the
/// removals.
pub(crate) struct RemoveAll {
    pub(crate) key: EntityKey,
    pub(crate) removed: u64,
}

impl<A: Allocator + Clone + 'static> PoolVisitor<A> for RemoveAll {
    #[inline(always)]
    fn visit<T: Component>(&mut self, pool: &mut ComponentPool<T, A>) {
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
pub(crate) struct RemoveRun<I> {
    run: I,
    removed: u64,
}

impl<A: Allocator + Clone + 'static, I: Iterator<Item = EntityId> + Clone> PoolVisitor<A>
    for RemoveRun<I>
{
    #[inline(always)]
    fn visit<T: Component>(&mut self, pool: &mut ComponentPool<T, A>) {
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
    let (registry, hooks, mut pools) = world.hooked_parts();
    let registry = &mut registry.0;
    let hooks = &mut hooks.0;
    // The release invariant, as in `destroy`.
    if !all_bound(registry, &mut pools) || !hooks.serves(registry.owner()) {
        return Err(WorldError::ForeignPool);
    }
    // Phase, budget (a release and a removal per pool for each entity) and liveness.
    let budget = (run.clone().count() as u64).saturating_mul(W::Components::LEN as u64 + 1);
    for entity in run.clone() {
        registry.check_entity_change(entity, budget)?;
        if hooks.protects(entity) {
            return Err(WorldError::Protected);
        }
    }
    for entity in run.clone() {
        hooks.on_destroy(registry.owner(), entity);
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
    fn visit<T: Component>(&mut self, pool: &mut ComponentPool<T, A>) {
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
                self.ok &= component::is_valid::<T>(self.parts[k].1);
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
    fn visit<T: Component>(&mut self, pool: &mut ComponentPool<T, A>) {
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
    fn visit<T: Component>(&mut self, pool: &mut ComponentPool<T, A>) {
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
        if let Some(value) = component::read::<T>(bytes) {
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
                    Some(id) => remove_type(world, old, id)?,
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
            insert_fresh_bytes(world, new, id, bytes, &mut layout)?;
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
    let (registry, hooks, mut pools) = world.hooked_parts();
    let registry = &mut registry.0;
    let hooks = &mut hooks.0;
    if !all_bound(registry, &mut pools) || !hooks.serves(registry.owner()) {
        return Err(WorldError::ForeignPool);
    }
    // Phase and liveness (the release and the create; the rest once classified below).
    registry.check_entity_change(old, 2)?;
    if hooks.protects(old) {
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
    hooks.on_destroy(registry.owner(), old);
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
    // pools: one `hooked_parts` borrow).
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
    fn visit<T: Component>(&mut self) {
        if let Some(pool) = self.pools.get::<T>() {
            self.ok &= pool.check_index();
        }
    }
}

/// Whether every pool of a world has exact lookup structures (sparse map, membership bitset,
/// order fact; `O(capacity)` per pool, for tests and debugging).
pub(crate) fn pools_exact<'a, C, A, P>(pools: P) -> bool
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
pub(crate) const SORT_STAMPS: usize = 16;

/// Sorts every ungrouped pool by slot, renaming shared stamps consistently.
pub(crate) struct SortAll<'r, W: Roster> {
    pub(crate) registry: &'r mut EntityRegistry<W::Alloc>,
    /// Old stamp → new stamp, for the stamps seen so far.
    pub(crate) renamed: [(u64, u64); SORT_STAMPS],
    pub(crate) sorted: usize,
    pub(crate) _world: PhantomData<W>,
}

impl<W: Roster> PoolVisitor<W::Alloc> for SortAll<'_, W> {
    fn visit<T: Component>(&mut self, pool: &mut ComponentPool<T, W::Alloc>) {
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
pub(crate) struct Bindable {
    pub(crate) capacity: usize,
    pub(crate) ok: bool,
}

impl<A: Allocator + Clone + 'static> PoolVisitor<A> for Bindable {
    fn visit<T: Component>(&mut self, pool: &mut ComponentPool<T, A>) {
        self.ok &= pool.capacity() == self.capacity && pool.owner() == 0 && pool.is_empty();
    }
}

/// Binds every pool to a registry.
pub(crate) struct Bind<'r, B: Allocator + Clone> {
    pub(crate) registry: &'r mut EntityRegistry<B>,
}

impl<A: Allocator + Clone + 'static, B: Allocator + Clone> PoolVisitor<A> for Bind<'_, B> {
    fn visit<T: Component>(&mut self, pool: &mut ComponentPool<T, A>) {
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
pub(crate) fn all_bound<'a, A: Allocator + Clone + 'static, P: PoolsMutList<'a, A>>(
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

/// Inserts a value's bytes as the component whose type matched.
struct InsertBytes<'w, 'b, W> {
    world: &'w mut W,
    entity: EntityId,
    bytes: &'b [u8],
    result: Result<(), WorldError>,
}

impl<W: Roster> TypeVisitor for InsertBytes<'_, '_, W> {
    fn visit<T: Component>(&mut self) {
        self.result = component::try_read::<T>(self.bytes)
            .and_then(|value| insert(self.world, self.entity, value).map(|_| ()));
    }
}

/// The layout stamp a commit hands the pools of one spawned bundle (as `spawn` does): the
/// fresh stamp, and the layout class of the bundle's first pool before its insert.
#[derive(Debug, Clone, Copy)]
pub(crate) struct BundleLayout {
    pub(crate) stamp: u64,
    /// The registry that issued the stamp: only its pools take it.
    pub(crate) owner: OwnerToken,
    pub(crate) first: Option<Option<u64>>,
}

impl BundleLayout {
    /// No stamp: the pools a bundle appends to share nothing after it.
    pub(crate) const NONE: BundleLayout = BundleLayout {
        stamp: 0,
        owner: 0,
        first: None,
    };

    /// After the bundle's append to an ungrouped `pool` whose class was `class`: the pools of
    /// the first pool's class (equal keys before, the same append since) take the stamp.
    #[inline(always)]
    pub(crate) fn after_append<T: Component, A: Allocator + Clone>(
        &mut self,
        pool: &mut crate::world::store::pool::ComponentPool<T, A>,
        class: Option<u64>,
    ) {
        if self.stamp == 0 || pool.owner() != self.owner {
            return;
        }
        let first = *self.first.get_or_insert(class);
        if first.is_some() && class == first {
            pool.set_layout(self.stamp);
        }
    }
}

/// Appends a value's bytes as the component whose type matched, to an entity that has none.
struct InsertFreshBytes<'w, 'b, W> {
    world: &'w mut W,
    entity: EntityId,
    bytes: &'b [u8],
    layout: &'w mut BundleLayout,
    result: Result<(), WorldError>,
}

impl<W: Roster> TypeVisitor for InsertFreshBytes<'_, '_, W> {
    fn visit<T: Component>(&mut self) {
        self.result = component::try_read::<T>(self.bytes)
            .and_then(|value| insert_fresh(self.world, self.entity, value, self.layout));
    }
}

/// [`insert_bytes`] for a bundle's component right after its create: appended without a slot
/// lookup when the slot's membership bit is clear ([`insert_fresh`]).
pub(crate) fn insert_fresh_bytes<W: Roster>(
    world: &mut W,
    entity: EntityId,
    component: TypeId,
    bytes: &[u8],
    layout: &mut BundleLayout,
) -> Result<(), WorldError> {
    let mut insert = InsertFreshBytes {
        world,
        entity,
        bytes,
        layout,
        result: Err(WorldError::UnknownComponent),
    };
    W::Components::dispatch(component, &mut insert);
    insert.result
}

/// Removes the component whose type matched.
struct RemoveType<'w, W> {
    world: &'w mut W,
    entity: EntityId,
    result: Result<(), WorldError>,
}

impl<W: Roster> TypeVisitor for RemoveType<'_, W> {
    fn visit<T: Component>(&mut self) {
        self.result = remove::<W, T>(self.world, self.entity).map(|_| ());
    }
}

/// Inserts `bytes` into `entity` as the value of `W`'s component type `component` (commands,
/// transactions and restores: component dispatch by type id).
///
/// # Errors
/// As [`WorldOps::insert`](crate::world::world_ops::WorldOps::insert); `UnknownComponent` for a type outside
/// the roster or bytes of another size than the type's.
pub(crate) fn insert_bytes<W: Roster>(
    world: &mut W,
    entity: EntityId,
    component: TypeId,
    bytes: &[u8],
) -> Result<(), WorldError> {
    let mut insert = InsertBytes {
        world,
        entity,
        bytes,
        result: Err(WorldError::UnknownComponent),
    };
    W::Components::dispatch(component, &mut insert);
    insert.result
}

/// Removes `W`'s component type `component` from `entity`.
///
/// # Errors
/// As [`WorldOps::remove`](crate::world::world_ops::WorldOps::remove); `UnknownComponent` for a type outside
/// the roster.
pub(crate) fn remove_type<W: Roster>(
    world: &mut W,
    entity: EntityId,
    component: TypeId,
) -> Result<(), WorldError> {
    let mut remove = RemoveType {
        world,
        entity,
        result: Err(WorldError::UnknownComponent),
    };
    W::Components::dispatch(component, &mut remove);
    remove.result
}
