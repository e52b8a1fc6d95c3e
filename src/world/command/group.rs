//! Owned groups (as in EnTT): entities holding every member component are packed at the front
//! `[0..len)` of each member pool's dense arrays, in the same order, so a group iteration is a
//! straight zip of dense slices with no probing.
//!
//! Invariant, for every group and every member pool `p` and `i < len`: `p.owners().get(i) ==
//! first.owners().get(i)`, and an entity is in `[0..len)` exactly when it holds every member.
//! `len` is stored in every member pool under the group's size ([`ComponentPool::packed`]) and
//! is equal in all of them.
//!
//! **Nested groups.** Groups that share a pool must be nested: one's members a strict subset of
//! the other's (`moving(position, velocity)` and `swirling(position, velocity, rotation)`). The
//! larger group's entities are a subset of the smaller one's, and its prefix lies inside the
//! smaller one's prefix in every shared pool. So a pool's groups have different sizes, and each
//! keeps its own prefix length. The world keeps the invariant on every insert, remove and
//! destroy: gaining the last member of a group swaps the entity to position `len` in every
//! member, smaller groups first (the entity is then inside the smaller prefixes, and the swap
//! stays inside them); losing one swaps it to `len - 1` first, larger groups first. Nothing
//! unsafe relies on the invariant: slicing a group's prefix is bounds-checked.

use core::any::TypeId;

use crate::world::store::component::Component;
use allocator_api2::alloc::Allocator;

use crate::world::raw::dense::MAX_GROUP_MEMBERS;
use crate::world::raw::keys::EntityId;
use crate::world::store::pool::ComponentPool;
use crate::world::store::roster::{
    ComponentList, GroupList, GroupVisitor, PoolsMutList, PoolsRefList, TypeVisitor,
};

/// Whether to pack an entity that gained a member, or unpack one about to lose a member.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Direction {
    Pack,
    Unpack,
}

/// Packs (or unpacks) one entity in each group it visits, in pools of allocator `A` (the
/// visitor needs the allocator as a type).
pub(crate) struct Repack<'p, P, A> {
    pools: &'p mut P,
    entity: EntityId,
    direction: Direction,
    _alloc: core::marker::PhantomData<A>,
}

impl<'p, P, A> Repack<'p, P, A> {
    /// Packs `entity` into every visited group whose members it now all holds.
    pub(crate) fn pack(pools: &'p mut P, entity: EntityId) -> Self {
        Self {
            pools,
            entity,
            direction: Direction::Pack,
            _alloc: core::marker::PhantomData,
        }
    }

    /// Unpacks `entity` from every visited group it is packed in.
    pub(crate) fn unpack(pools: &'p mut P, entity: EntityId) -> Self {
        Self {
            pools,
            entity,
            direction: Direction::Unpack,
            _alloc: core::marker::PhantomData,
        }
    }
}

/// Packs or unpacks `entity` in every group containing one of `ids` (every group for `None`),
/// in the order nesting needs: packs into smaller groups first, unpacks from larger groups
/// first (module docs). A change of several types at once (a spawned bundle) passes them all:
/// packing type by type would pack an outer group before a smaller one that does not hold the
/// first type.
#[inline(always)]
pub(crate) fn repack<'a, G, A, P>(
    pools: &mut P,
    entity: EntityId,
    ids: Option<&[TypeId]>,
    pack: bool,
) where
    G: GroupList,
    A: Allocator + Clone + 'static,
    P: PoolsMutList<'a, A>,
{
    if G::LEN == 0 {
        return;
    }
    let mut visitor = if pack {
        Repack::<_, A>::pack(pools, entity)
    } else {
        Repack::<_, A>::unpack(pools, entity)
    };
    by_size::<G, _>(ids, pack, &mut visitor);
}

/// Calls `v` with every group containing one of `ids` (every group for `None`) by size,
/// smallest first when `ascending`; each size test is a constant.
#[inline(always)]
pub(crate) fn by_size<G: GroupList, V: GroupVisitor>(
    ids: Option<&[TypeId]>,
    ascending: bool,
    v: &mut V,
) {
    const _: () = assert!(MAX_GROUP_MEMBERS == 8, "one call per size below");
    if ascending {
        G::with_sized::<1, V>(ids, v);
        G::with_sized::<2, V>(ids, v);
        G::with_sized::<3, V>(ids, v);
        G::with_sized::<4, V>(ids, v);
        G::with_sized::<5, V>(ids, v);
        G::with_sized::<6, V>(ids, v);
        G::with_sized::<7, V>(ids, v);
        G::with_sized::<8, V>(ids, v);
    } else {
        G::with_sized::<8, V>(ids, v);
        G::with_sized::<7, V>(ids, v);
        G::with_sized::<6, V>(ids, v);
        G::with_sized::<5, V>(ids, v);
        G::with_sized::<4, V>(ids, v);
        G::with_sized::<3, V>(ids, v);
        G::with_sized::<2, V>(ids, v);
        G::with_sized::<1, V>(ids, v);
    }
}

/// Pass 1 over a group's members: each one's dense index of the entity.
struct Indices<'p, P, A> {
    pools: &'p mut P,
    entity: EntityId,
    /// The group's size (the key of its prefix length in each member).
    size: usize,
    at: [Option<usize>; MAX_GROUP_MEMBERS],
    k: usize,
    len: Option<usize>,
    _alloc: core::marker::PhantomData<A>,
}

impl<'a, A: Allocator + Clone + 'static, P: PoolsMutList<'a, A>> TypeVisitor for Indices<'_, P, A> {
    #[inline(always)]
    fn visit<T: Component>(&mut self) {
        let pool: Option<&mut ComponentPool<T, A>> = self.pools.get::<T>();
        if let (Some(pool), Some(slot)) = (pool, self.at.get_mut(self.k)) {
            *slot = pool.dense_index(self.entity);
            self.len.get_or_insert(pool.packed(self.size));
        }
        self.k += 1;
    }
}

/// Pass 2: swaps the entity to `to` in every member and sets the prefix length.
struct Swap<'p, P, A> {
    pools: &'p mut P,
    size: usize,
    at: [Option<usize>; MAX_GROUP_MEMBERS],
    to: usize,
    len: usize,
    k: usize,
    _alloc: core::marker::PhantomData<A>,
}

impl<'a, A: Allocator + Clone + 'static, P: PoolsMutList<'a, A>> TypeVisitor for Swap<'_, P, A> {
    #[inline(always)]
    fn visit<T: Component>(&mut self) {
        let pool: Option<&mut ComponentPool<T, A>> = self.pools.get::<T>();
        if let (Some(pool), Some(Some(i))) = (pool, self.at.get(self.k)) {
            if *i != self.to {
                pool.swap_dense(*i, self.to);
            }
            pool.set_packed(self.size, self.len);
        }
        self.k += 1;
    }
}

impl<'a, A: Allocator + Clone + 'static, P: PoolsMutList<'a, A>> GroupVisitor for Repack<'_, P, A> {
    #[inline(always)]
    fn visit<G: ComponentList>(&mut self) {
        let r = self;
        let mut pass = Indices::<P, A> {
            pools: r.pools,
            entity: r.entity,
            size: G::LEN,
            at: [None; MAX_GROUP_MEMBERS],
            k: 0,
            len: None,
            _alloc: core::marker::PhantomData,
        };
        G::each(&mut pass);
        let len = pass.len.unwrap_or(0);
        let members = &pass.at[..G::LEN.min(MAX_GROUP_MEMBERS)];
        let (to, new_len) = match r.direction {
            Direction::Pack if members.iter().all(|i| matches!(i, Some(i) if *i >= len)) => {
                (len, len + 1)
            }
            Direction::Unpack
                if len > 0 && members.iter().all(|i| matches!(i, Some(i) if *i < len)) =>
            {
                (len - 1, len - 1)
            }
            _ => return,
        };
        let at = pass.at;
        G::each(&mut Swap::<P, A> {
            pools: r.pools,
            size: G::LEN,
            at,
            to,
            len: new_len,
            k: 0,
            _alloc: core::marker::PhantomData,
        });
    }
}

/// Checks one group's invariant over shared pools (O(n)); for tests and debugging.
pub(crate) struct Consistent<'a, P, A> {
    pub(crate) pools: P,
    pub(crate) ok: bool,
    pub(crate) _alloc: core::marker::PhantomData<&'a A>,
}

/// Pass over members: all prefix lengths equal and the prefixes hold the same owners.
struct Prefixes<'a, P, A> {
    pools: P,
    size: usize,
    len: Option<usize>,
    head: Option<crate::world::raw::keys::Owners<'a>>,
    ok: bool,
    _alloc: core::marker::PhantomData<A>,
}

impl<'a, A: Allocator + Clone + 'static, P: PoolsRefList<'a, A>> TypeVisitor
    for Prefixes<'a, P, A>
{
    fn visit<T: Component>(&mut self) {
        let Some(pool) = self.pools.get::<T>() else {
            self.ok = false;
            return;
        };
        let len = *self.len.get_or_insert(pool.packed(self.size));
        let owners = pool.owners();
        if pool.packed(self.size) != len || owners.len() < len {
            self.ok = false;
            return;
        }
        let head = *self.head.get_or_insert(owners);
        self.ok &= head.len() >= len && owners.prefix(len) == head.prefix(len);
    }
}

/// Pass over members: no entity outside a member's prefix holds every member.
struct Outside<'a, P, A> {
    pools: P,
    len: usize,
    ok: bool,
    _alloc: core::marker::PhantomData<&'a A>,
}

/// Whether `entity` is in every member pool of group `G`.
struct HoldsAll<'a, P, A> {
    pools: P,
    entity: EntityId,
    all: bool,
    _alloc: core::marker::PhantomData<&'a A>,
}

impl<'a, A: Allocator + Clone + 'static, P: PoolsRefList<'a, A>> TypeVisitor
    for HoldsAll<'a, P, A>
{
    fn visit<T: Component>(&mut self) {
        self.all &= self
            .pools
            .get::<T>()
            .is_some_and(|p| p.contains(self.entity));
    }
}

impl<'a, A: Allocator + Clone + 'static, P: PoolsRefList<'a, A>> Outside<'a, P, A> {
    fn check<G: ComponentList>(&mut self) {
        struct Each<'a, 'o, P, A, G> {
            o: &'o mut Outside<'a, P, A>,
            _g: core::marker::PhantomData<G>,
        }
        impl<'a, A: Allocator + Clone + 'static, P: PoolsRefList<'a, A>, G: ComponentList>
            TypeVisitor for Each<'a, '_, P, A, G>
        {
            fn visit<T: Component>(&mut self) {
                let o = &mut *self.o;
                let Some(pool) = o.pools.get::<T>() else {
                    o.ok = false;
                    return;
                };
                for entity in pool.owners().iter().skip(o.len) {
                    let mut h = HoldsAll::<P, A> {
                        pools: o.pools,
                        entity,
                        all: true,
                        _alloc: core::marker::PhantomData,
                    };
                    G::each(&mut h);
                    o.ok &= !h.all;
                }
            }
        }
        G::each(&mut Each::<P, A, G> {
            o: self,
            _g: core::marker::PhantomData,
        });
    }
}

impl<'a, A: Allocator + Clone + 'static, P: PoolsRefList<'a, A>> GroupVisitor
    for Consistent<'a, P, A>
{
    fn visit<G: ComponentList>(&mut self) {
        let mut prefixes = Prefixes::<P, A> {
            pools: self.pools,
            size: G::LEN,
            len: None,
            head: None,
            ok: true,
            _alloc: core::marker::PhantomData,
        };
        G::each(&mut prefixes);
        let mut outside = Outside::<P, A> {
            pools: self.pools,
            len: prefixes.len.unwrap_or(0),
            ok: prefixes.ok,
            _alloc: core::marker::PhantomData,
        };
        outside.check::<G>();
        self.ok &= outside.ok;
    }
}

/// Whether the group ids are valid for a roster: each group has 1..=[`MAX_GROUP_MEMBERS`]
/// distinct members, all of them components of the world, and any two groups that share a
/// component are nested (one's members a strict subset of the other's).
pub(crate) fn groups_valid<C: ComponentList, G: GroupList>() -> bool {
    let mut groups = [[TypeId::of::<()>(); MAX_GROUP_MEMBERS]; 64];
    let mut sizes = [0usize; 64];
    let mut n = 0;
    G::each_group(&mut |members: &[TypeId]| {
        if members.is_empty() || members.len() > MAX_GROUP_MEMBERS || n == groups.len() {
            return false;
        }
        for (k, id) in members.iter().enumerate() {
            if !C::contains(*id) || members[..k].contains(id) {
                return false;
            }
        }
        for (other, &size) in groups[..n].iter().zip(&sizes[..n]) {
            let other = &other[..size];
            let shared = members.iter().filter(|id| other.contains(id)).count();
            let nested = shared == members.len().min(size) && members.len() != size;
            if shared > 0 && !nested {
                return false;
            }
        }
        groups[n][..members.len()].copy_from_slice(members);
        sizes[n] = members.len();
        n += 1;
        true
    })
}
