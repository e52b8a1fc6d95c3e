//! The roster: what [`world!`](crate::world!) declares about a world, as types.
//!
//! A world's components are a type list `(T0, (T1, (…, ())))` ([`ComponentList`]); its owned
//! groups a list of such lists ([`GroupList`]). From the component list the crate derives the
//! world's pool tuples (`(Option<&mut ComponentPool<T0>>, (…))`), which generic code searches by
//! [`TypeId`]: each search compares constants, so it folds to a field access in release builds.
//! Taking a pool out of the mutable tuple leaves `None` behind, so a component type named twice
//! (in a bundle or a query) is found once and refused the second time — never two `&mut` to one
//! pool.
//!
//! A [`Roster`] is not trusted: it only chooses which pools it hands out (each at most once per
//! call: two `&mut` to one pool cannot exist), and every structural operation checks that they
//! belong to the world's registry. The list traits ([`ComponentList`], [`PoolsMutList`],
//! [`PoolsRefList`], [`GroupList`]) are sealed: implemented by the crate for `()` and pairs
//! only, so a list visits each of its pools exactly once, which `destroy`'s bound-pool count
//! relies on.

pub(crate) mod sealed {
    /// Implemented for `()` and `(Head, Tail)` only.
    pub trait List {}
    impl List for () {}
    impl<H, T: List> List for (H, T) {}
}

use core::any::TypeId;

use crate::world::store::component::Component;
use allocator_api2::alloc::Allocator;

use crate::world::raw::dense::MAX_GROUP_MEMBERS;
use crate::world::store::hooks::EntityHooks;
use crate::world::store::pool::ComponentPool;
use crate::world::store::read_only::ReadOnly;
use crate::world::store::registry::EntityRegistry;

/// A world declared by [`world!`](crate::world!): its registry, its pools (by type), its
/// owned groups and its destroy hooks. Every world operation is a method of
/// [`WorldOps`](crate::world::WorldOps), which is implemented for every roster.
///
/// `world!` implements this trait; a hand-written impl is possible (nothing unsafe relies on
/// it), but then the world's guarantees (destroy reaches every pool, groups stay packed) hold
/// only for the pools that [`parts`](Self::parts) returns, and only if it returns the same
/// ones on every call.
pub trait Roster: Sized {
    /// Allocator of the registry and the pools.
    type Alloc: Allocator + Clone + 'static;
    /// The component types, as a type list `(T0, (T1, (…, ())))`.
    type Components: ComponentList;
    /// The owned groups, as a list of component lists.
    type Groups: GroupList;
    /// What the world runs around each destroy: `()` for a plain world, the durable tables
    /// ([`Durable`](crate::durable::Durable)) for a durable one.
    type Hooks: EntityHooks;
    /// The components' stable names (the roster's field names), in `Components` order: what
    /// prepared commands, transactions and checkpoints call them. Empty: the world has no
    /// names, and those operations refuse its components.
    const NAMES: &'static [&'static str] = &[];
    /// The registry (read-only outside the crate), the hooks (likewise) and every pool,
    /// mutably.
    fn hooked_parts(&mut self) -> HookedParts<'_, Self>;
    /// The registry and every pool, shared.
    fn parts_ref(&self) -> PartsRef<'_, Self>;
    /// The hooks, shared.
    fn hooks(&self) -> &Self::Hooks;
    /// The registry and every pool, mutably (what [`hooked_parts`](Self::hooked_parts)
    /// returns, without the hooks).
    #[inline(always)]
    fn parts(&mut self) -> Parts<'_, Self> {
        let (registry, _, pools) = self.hooked_parts();
        (registry, pools)
    }
}

/// What [`Roster::hooked_parts`] returns.
pub type HookedParts<'a, R> = (
    &'a mut ReadOnly<EntityRegistry<<R as Roster>::Alloc>, <R as Roster>::Groups>,
    &'a mut ReadOnly<<R as Roster>::Hooks>,
    PoolsMut<'a, R>,
);

/// What [`Roster::parts`] returns: the registry and one `Some(&mut pool)` per component.
pub type Parts<'a, R> = (
    &'a mut ReadOnly<EntityRegistry<<R as Roster>::Alloc>, <R as Roster>::Groups>,
    PoolsMut<'a, R>,
);

/// What [`Roster::parts_ref`] returns: the registry and one `&pool` per component.
pub type PartsRef<'a, R> = (&'a EntityRegistry<<R as Roster>::Alloc>, PoolsRef<'a, R>);

/// A roster's pools, mutably: `(Option<&mut ComponentPool<T0, A>>, (…, ()))`.
pub type PoolsMut<'a, R> =
    <<R as Roster>::Components as ComponentList>::Mut<'a, <R as Roster>::Alloc>;

/// A roster's pools, shared: `(&ComponentPool<T0, A>, (…, ()))`.
pub type PoolsRef<'a, R> =
    <<R as Roster>::Components as ComponentList>::Ref<'a, <R as Roster>::Alloc>;

/// Marks a world that stores components of type `T` (implemented by [`world!`](crate::world!)
/// for each declared component). A compile-time gate only: lookups are by type and a world
/// whose roster lacks `T` answers `UnknownComponent`.
#[diagnostic::on_unimplemented(
    message = "the world `{Self}` has no pool of `{T}`",
    label = "`{T}` is not in this world's roster",
    note = "declare a field of type `{T}` in the world's `world!` roster"
)]
pub trait Stores<T: Component>: Roster {}

/// Calls back with a type (component dispatch by [`TypeId`], for commands).
pub trait TypeVisitor {
    /// Called with the matching type.
    fn visit<T: Component>(&mut self);
}

/// Calls back with each pool of a world.
pub trait PoolVisitor<A: Allocator + Clone + 'static> {
    /// Called once per pool, in roster order.
    fn visit<T: Component>(&mut self, pool: &mut ComponentPool<T, A>);
}

/// A type list of distinct component types: `()` or `(Head, Tail)`. Sealed: a list of one's
/// own cannot stand in for it (its pools could then be visited twice, or not at all).
///
/// ```compile_fail,E0277
/// use ludus::world::roster::{ComponentList, PoolsMutList, PoolsRefList, TypeVisitor};
/// struct Mine;
/// impl ComponentList for Mine { // error[E0277]: the sealing trait is not implemented
///     const LEN: usize = 0;
///     type Mut<'a, A: allocator_api2::alloc::Allocator + Clone + 'static> = ();
///     type Ref<'a, A: allocator_api2::alloc::Allocator + Clone + 'static> = ();
///     fn contains(_: core::any::TypeId) -> bool { false }
///     fn dispatch<V: TypeVisitor>(_: core::any::TypeId, _: &mut V) -> bool { false }
///     fn ids(_: &mut [core::any::TypeId]) -> usize { 0 }
///     fn each<V: TypeVisitor>(_: &mut V) {}
///     fn distinct() -> bool { true }
/// }
/// ```
pub trait ComponentList: sealed::List + 'static {
    /// Number of types.
    const LEN: usize;
    /// The pools of these types, mutably and each taken at most once.
    type Mut<'a, A: Allocator + Clone + 'static>: PoolsMutList<'a, A>;
    /// The pools of these types, shared.
    type Ref<'a, A: Allocator + Clone + 'static>: PoolsRefList<'a, A>;
    /// Whether `id` is one of the types.
    fn contains(id: TypeId) -> bool;
    /// Calls `v` with the type whose id is `id`; false when there is none.
    fn dispatch<V: TypeVisitor>(id: TypeId, v: &mut V) -> bool;
    /// Appends every type's id to `out`, returning how many were written (capped by its length).
    fn ids(out: &mut [TypeId]) -> usize;
    /// Calls `v` with every type, in order.
    fn each<V: TypeVisitor>(v: &mut V);
    /// Whether no type appears twice.
    fn distinct() -> bool;
}

impl ComponentList for () {
    const LEN: usize = 0;
    type Mut<'a, A: Allocator + Clone + 'static> = ();
    type Ref<'a, A: Allocator + Clone + 'static> = ();
    #[inline(always)]
    fn contains(_: TypeId) -> bool {
        false
    }
    #[inline(always)]
    fn dispatch<V: TypeVisitor>(_: TypeId, _: &mut V) -> bool {
        false
    }
    fn ids(_: &mut [TypeId]) -> usize {
        0
    }
    #[inline(always)]
    fn each<V: TypeVisitor>(_: &mut V) {}
    fn distinct() -> bool {
        true
    }
}

impl<H: Component, T: ComponentList> ComponentList for (H, T) {
    const LEN: usize = 1 + T::LEN;
    type Mut<'a, A: Allocator + Clone + 'static> =
        (Option<&'a mut ComponentPool<H, A>>, T::Mut<'a, A>);
    type Ref<'a, A: Allocator + Clone + 'static> = (&'a ComponentPool<H, A>, T::Ref<'a, A>);
    #[inline(always)]
    fn contains(id: TypeId) -> bool {
        id == TypeId::of::<H>() || T::contains(id)
    }
    #[inline(always)]
    fn dispatch<V: TypeVisitor>(id: TypeId, v: &mut V) -> bool {
        if id == TypeId::of::<H>() {
            v.visit::<H>();
            true
        } else {
            T::dispatch(id, v)
        }
    }
    fn ids(out: &mut [TypeId]) -> usize {
        match out.split_first_mut() {
            Some((first, rest)) => {
                *first = TypeId::of::<H>();
                1 + T::ids(rest)
            }
            None => 0,
        }
    }
    #[inline(always)]
    fn each<V: TypeVisitor>(v: &mut V) {
        v.visit::<H>();
        T::each(v);
    }
    fn distinct() -> bool {
        !T::contains(TypeId::of::<H>()) && T::distinct()
    }
}

/// `pool` as a pool of `T`, when `H` is `T`.
#[inline(always)]
fn downcast_mut<H: Component, T: Component, A: Allocator + Clone + 'static>(
    pool: &mut ComponentPool<H, A>,
) -> Option<&mut ComponentPool<T, A>> {
    if TypeId::of::<H>() == TypeId::of::<T>() {
        // SAFETY: equal `TypeId`s of two `'static` types (`Component: 'static`) mean `H` and
        // `T` are the same type, so `ComponentPool<H, A>` and `ComponentPool<T, A>` are one
        // type and the cast keeps the borrow's lifetime and exclusivity.
        Some(unsafe { &mut *(pool as *mut ComponentPool<H, A>).cast::<ComponentPool<T, A>>() })
    } else {
        None
    }
}

/// `pool` as a pool of `T`, when `H` is `T`.
#[inline(always)]
fn downcast_ref<H: Component, T: Component, A: Allocator + Clone + 'static>(
    pool: &ComponentPool<H, A>,
) -> Option<&ComponentPool<T, A>> {
    if TypeId::of::<H>() == TypeId::of::<T>() {
        // SAFETY: as in `downcast_mut`: `H` is `T`.
        Some(unsafe { &*(pool as *const ComponentPool<H, A>).cast::<ComponentPool<T, A>>() })
    } else {
        None
    }
}

/// A world's pools, mutably; each can be taken once.
pub trait PoolsMutList<'a, A: Allocator + Clone + 'static>: sealed::List {
    /// Takes the pool of `T` out of the list; `None` when there is none or it was taken.
    fn take<T: Component>(&mut self) -> Option<&'a mut ComponentPool<T, A>>;
    /// The pool of `T`, reborrowed (not taken); `None` when there is none or it was taken.
    fn get<T: Component>(&mut self) -> Option<&mut ComponentPool<T, A>>;
    /// Calls `v` with every pool not taken.
    fn visit<V: PoolVisitor<A>>(&mut self, v: &mut V);
}

impl<A: Allocator + Clone + 'static> PoolsMutList<'_, A> for () {
    #[inline(always)]
    fn take<T: Component>(&mut self) -> Option<&'static mut ComponentPool<T, A>> {
        None
    }
    #[inline(always)]
    fn get<T: Component>(&mut self) -> Option<&mut ComponentPool<T, A>> {
        None
    }
    #[inline(always)]
    fn visit<V: PoolVisitor<A>>(&mut self, _: &mut V) {}
}

impl<'a, A: Allocator + Clone + 'static, H: Component, T: PoolsMutList<'a, A>> PoolsMutList<'a, A>
    for (Option<&'a mut ComponentPool<H, A>>, T)
{
    #[inline(always)]
    fn take<U: Component>(&mut self) -> Option<&'a mut ComponentPool<U, A>> {
        if TypeId::of::<H>() == TypeId::of::<U>() {
            self.0.take().and_then(downcast_mut)
        } else {
            self.1.take::<U>()
        }
    }
    #[inline(always)]
    fn get<U: Component>(&mut self) -> Option<&mut ComponentPool<U, A>> {
        if TypeId::of::<H>() == TypeId::of::<U>() {
            self.0.as_deref_mut().and_then(downcast_mut)
        } else {
            self.1.get::<U>()
        }
    }
    #[inline(always)]
    fn visit<V: PoolVisitor<A>>(&mut self, v: &mut V) {
        if let Some(pool) = self.0.as_deref_mut() {
            v.visit(pool);
        }
        self.1.visit(v);
    }
}

/// A world's pools, shared.
pub trait PoolsRefList<'a, A: Allocator + Clone + 'static>: sealed::List + Copy {
    /// The pool of `T`; `None` when there is none.
    fn get<T: Component>(self) -> Option<&'a ComponentPool<T, A>>;
}

impl<A: Allocator + Clone + 'static> PoolsRefList<'_, A> for () {
    #[inline(always)]
    fn get<T: Component>(self) -> Option<&'static ComponentPool<T, A>> {
        None
    }
}

impl<'a, A: Allocator + Clone + 'static, H: Component, T: PoolsRefList<'a, A>> PoolsRefList<'a, A>
    for (&'a ComponentPool<H, A>, T)
{
    #[inline(always)]
    fn get<U: Component>(self) -> Option<&'a ComponentPool<U, A>> {
        if TypeId::of::<H>() == TypeId::of::<U>() {
            downcast_ref(self.0)
        } else {
            self.1.get::<U>()
        }
    }
}

/// A list of owned groups, each a [`ComponentList`] of its members: `()` or `(Group, Rest)`.
pub trait GroupList: sealed::List + 'static {
    /// Number of groups.
    const LEN: usize;
    /// Calls `f` with each group's member ids (at most [`MAX_GROUP_MEMBERS`] of them) until it
    /// returns false; returns false when it did.
    fn each_group(f: &mut dyn FnMut(&[TypeId]) -> bool) -> bool;
    /// Calls `v` with the members list of every group of `SIZE` members containing one of
    /// `ids` (every group of `SIZE` members when `ids` is `None`); `SIZE` is a constant so
    /// that the size test folds away.
    fn with_sized<const SIZE: usize, V: GroupVisitor>(ids: Option<&[TypeId]>, v: &mut V);
    /// Index of the first group containing `id`.
    fn index_of(id: TypeId) -> Option<usize>;
    /// The member count of the smallest group containing every one of `ids` (0: none).
    fn smallest_containing(ids: &[TypeId]) -> usize;
}

/// Calls back with a group's member list.
pub trait GroupVisitor {
    /// Called with one group.
    fn visit<G: ComponentList>(&mut self);
}

impl GroupList for () {
    const LEN: usize = 0;
    fn each_group(_: &mut dyn FnMut(&[TypeId]) -> bool) -> bool {
        true
    }
    #[inline(always)]
    fn with_sized<const SIZE: usize, V: GroupVisitor>(_: Option<&[TypeId]>, _: &mut V) {}
    #[inline(always)]
    fn index_of(_: TypeId) -> Option<usize> {
        None
    }
    #[inline(always)]
    fn smallest_containing(_: &[TypeId]) -> usize {
        0
    }
}

impl<G: ComponentList, R: GroupList> GroupList for (G, R) {
    const LEN: usize = 1 + R::LEN;
    fn each_group(f: &mut dyn FnMut(&[TypeId]) -> bool) -> bool {
        let mut ids = [TypeId::of::<()>(); MAX_GROUP_MEMBERS + 1];
        let n = G::ids(&mut ids);
        f(&ids[..n]) && R::each_group(f)
    }
    #[inline(always)]
    fn with_sized<const SIZE: usize, V: GroupVisitor>(ids: Option<&[TypeId]>, v: &mut V) {
        if G::LEN == SIZE && ids.is_none_or(|ids| ids.iter().any(|&id| G::contains(id))) {
            v.visit::<G>();
        }
        R::with_sized::<SIZE, V>(ids, v);
    }
    #[inline(always)]
    fn index_of(id: TypeId) -> Option<usize> {
        if G::contains(id) {
            Some(0)
        } else {
            R::index_of(id).map(|i| i + 1)
        }
    }
    #[inline(always)]
    fn smallest_containing(ids: &[TypeId]) -> usize {
        let rest = R::smallest_containing(ids);
        if ids.iter().all(|&id| G::contains(id)) && (rest == 0 || G::LEN < rest) {
            G::LEN
        } else {
            rest
        }
    }
}
