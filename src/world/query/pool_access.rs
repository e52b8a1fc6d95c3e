//! Several pools of a world at once, by type: [`PoolQuery`] (`world.pools_mut::<(&mut
//! Position, &Velocity)>()`) and [`GroupQuery`] (an owned group's packed prefix).
//!
//! Each pool is taken out of the world's pool list, so a query naming a type twice panics
//! (with the type's name) instead of handing out two borrows of one pool. The lookups are
//! constant type compares: in release builds a query compiles to field accesses.

use core::any::{type_name, TypeId};

use crate::world::store::component::Component;

use crate::world::raw::keys::Owners;
use crate::world::store::pool::ComponentPool;
use crate::world::store::roster::{GroupList, PoolsMut, PoolsMutList, Roster, Stores};

/// The pool of `T`, taken out of `pools`; panics when it was taken already or is missing.
#[inline(always)]
fn take<'a, W: Roster, T: Component>(
    pools: &mut PoolsMut<'a, W>,
) -> &'a mut ComponentPool<T, W::Alloc> {
    match pools.take::<T>() {
        Some(pool) => pool,
        None => not_available(type_name::<T>()),
    }
}

#[cold]
#[inline(never)]
#[track_caller]
fn not_available(component: &'static str) -> ! {
    panic!("pool of {component} requested twice in one query (or not in the roster)")
}

/// One element of a [`PoolQuery`]: `&mut T` (the pool of `T`, mutably) or `&T` (shared).
pub trait PoolAccess<W: Roster> {
    /// The pool borrow.
    type Out<'a>
    where
        W: 'a;
    /// Takes the pool out of the world's list.
    fn fetch<'a>(pools: &mut PoolsMut<'a, W>) -> Self::Out<'a>
    where
        W: 'a;
}

impl<W: Stores<T>, T: Component> PoolAccess<W> for &mut T {
    type Out<'a>
        = &'a mut ComponentPool<T, W::Alloc>
    where
        W: 'a;
    #[inline(always)]
    fn fetch<'a>(pools: &mut PoolsMut<'a, W>) -> Self::Out<'a>
    where
        W: 'a,
    {
        take::<W, T>(pools)
    }
}

impl<W: Stores<T>, T: Component> PoolAccess<W> for &T {
    type Out<'a>
        = &'a ComponentPool<T, W::Alloc>
    where
        W: 'a;
    #[inline(always)]
    fn fetch<'a>(pools: &mut PoolsMut<'a, W>) -> Self::Out<'a>
    where
        W: 'a,
    {
        take::<W, T>(pools)
    }
}

/// A tuple of 1 to 8 [`PoolAccess`] elements naming distinct component types of `W`, e.g.
/// `(&mut Position, &Velocity)`; see [`WorldOps::pools_mut`](crate::world::world_ops::WorldOps::pools_mut).
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a pool query of the world `{W}`",
    note = "a pool query is a tuple of 1 to 8 elements `&mut T` or `&T`, each `T` a component of the world (`Stores<T>`), e.g. `(&mut Position, &Velocity)`"
)]
pub trait PoolQuery<W: Roster> {
    /// The tuple of pool borrows.
    type Out<'a>
    where
        W: 'a;
    /// Takes every pool out of the world's list.
    fn fetch<'a>(pools: &mut PoolsMut<'a, W>) -> Self::Out<'a>
    where
        W: 'a;
}

macro_rules! tuple_query {
    ($($q:ident),+) => {
        impl<W: Roster, $($q: PoolAccess<W>),+> PoolQuery<W> for ($($q,)+) {
            type Out<'a> = ($($q::Out<'a>,)+) where W: 'a;
            #[inline(always)]
            fn fetch<'a>(pools: &mut PoolsMut<'a, W>) -> Self::Out<'a>
    where
        W: 'a,
    {
                ($($q::fetch(pools),)+)
            }
        }
    };
}

tuple_query!(Q0);
tuple_query!(Q0, Q1);
tuple_query!(Q0, Q1, Q2);
tuple_query!(Q0, Q1, Q2, Q3);
tuple_query!(Q0, Q1, Q2, Q3, Q4);
tuple_query!(Q0, Q1, Q2, Q3, Q4, Q5);
tuple_query!(Q0, Q1, Q2, Q3, Q4, Q5, Q6);
tuple_query!(Q0, Q1, Q2, Q3, Q4, Q5, Q6, Q7);

/// A tuple of 1 to 8 component types of one owned group of `W`, e.g. `(Position, Velocity)`;
/// see [`WorldOps::group_mut`](crate::world::world_ops::WorldOps::group_mut).
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a group query of the world `{W}`",
    note = "a group query is a tuple of 1 to 8 component types of one owned group, e.g. `(Position, Velocity)`"
)]
pub trait GroupQuery<W: Roster> {
    /// `(Owners, &mut [T0], &mut [T1], …)`: the packed prefix, in the same order.
    type Out<'a>
    where
        W: 'a;
    /// The packed prefix of the group. Panics when the types are not all members of one
    /// group, or a member pool is foreign (its registry was swapped out).
    fn fetch(world: &mut W) -> Self::Out<'_>;
}

#[cold]
#[inline(never)]
#[track_caller]
fn not_a_group(first: &'static str) -> ! {
    panic!("group query starting with {first}: not all members of one owned group, or a member pool belongs to another registry")
}

macro_rules! tuple_group {
    ($t0:ident 0 $(, $t:ident $i:tt)*) => {
        impl<W: Roster + Stores<$t0> $(+ Stores<$t>)*, $t0: Component $(, $t: Component)*>
            GroupQuery<W> for ($t0, $($t,)*)
        {
            type Out<'a> = (Owners<'a>, &'a mut [$t0] $(, &'a mut [$t])*) where W: 'a;
            #[inline]
            fn fetch(world: &mut W) -> Self::Out<'_> {
                // The smallest group holding every type (with nested groups, several do).
                let size = W::Groups::smallest_containing(&[TypeId::of::<$t0>() $(, TypeId::of::<$t>())*]);
                let (registry, mut pools) = world.parts();
                let owner = registry.owner();
                let pools = (take::<W, $t0>(&mut pools), $(take::<W, $t>(&mut pools),)*);
                let n = pools.0.packed(size);
                let consistent = size > 0 && pools.0.owner() == owner
                    $(&& pools.$i.owner() == owner && pools.$i.packed(size) == n)*;
                if !consistent {
                    not_a_group(type_name::<$t0>());
                }
                let (owners, first) = pools.0.split_mut();
                (owners.prefix(n), &mut first[..n] $(, &mut pools.$i.values_mut()[..n])*)
            }
        }
    };
}

tuple_group!(T0 0);
tuple_group!(T0 0, T1 1);
tuple_group!(T0 0, T1 1, T2 2);
tuple_group!(T0 0, T1 1, T2 2, T3 3);
tuple_group!(T0 0, T1 1, T2 2, T3 3, T4 4);
tuple_group!(T0 0, T1 1, T2 2, T3 3, T4 4, T5 5);
tuple_group!(T0 0, T1 1, T2 2, T3 3, T4 4, T5 5, T6 6);
tuple_group!(T0 0, T1 1, T2 2, T3 3, T4 4, T5 5, T6 6, T7 7);
