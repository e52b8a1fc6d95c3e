//! Programs without `unsafe` that would reach undefined behaviour or break a world guarantee
//! if the world trusted them: bundles and queries naming a type twice, swapped registries and
//! pools, lying or pool-hiding rosters, commits stopped half way, buffers outliving or
//! outrunning their marks, stale handles, roster type lists, batch spawns, parts moved between
//! world types. Each must be refused at compile time (see the `compile_fail` doctests in
//! `src/world/mod.rs`, `src/world/store/registry.rs`, `src/world/store/read_only.rs` and
//! `src/world/store/roster.rs`) or with a typed error or panic before any state changes. CI runs these in debug, in release and under Miri.

use std::collections::HashSet;
use std::panic::{catch_unwind, AssertUnwindSafe};

use ludus::prelude::*;
use ludus::world::roster::{ComponentList, GroupList, HookedParts, PartsRef, Roster};
use ludus::world::WorldDiagnostics;
use ludus::world::{CommandError, ComponentPool, EntityRegistry, ReadOnly, Rejection};

use crate::support::{keys_unique, A, B, C};

ludus::world! {
    /// Two pools, grouped.
    pub struct W {
        /// A.
        pub a: A,
        /// B.
        pub b: B,
    }
    groups { ab(a: A, b: B) }
}

ludus::world! {
    /// Two pools, no group.
    pub struct Loose {
        /// A.
        pub a: A,
        /// B.
        pub b: B,
    }
}

fn snapshot(w: &W) -> (usize, u64, u64, usize, usize) {
    (
        w.registry.len(),
        w.registry.structural_revision(),
        w.registry.last_sequence(),
        w.a.len(),
        w.b.len(),
    )
}

#[test]
fn a_bundle_naming_a_type_twice_is_refused_before_anything_changes() {
    for capacity in [1, 2, 8] {
        let mut w = W::try_new(capacity).unwrap();
        let before = snapshot(&w);
        let dup = |w: &mut W| w.spawn((A(1), A(2)));
        assert!(matches!(
            dup(&mut w),
            Err(WorldError::DuplicateComponent { component }) if component.ends_with("::A")
        ));
        assert!(matches!(
            w.spawn_batch([(A(1), A(2)), (A(3), A(4))]),
            Err(WorldError::DuplicateComponent { .. })
        ));
        assert!(matches!(
            w.spawn((A(1), B(1), A(2))),
            Err(WorldError::DuplicateComponent { .. })
        ));
        assert_eq!(
            snapshot(&w),
            before,
            "nothing changed (capacity {capacity})"
        );
        // The world still works, and a join over it yields each entity once.
        let e = w.spawn((A(7), B(8))).unwrap();
        assert_eq!(join((&mut w.a, &mut w.b)).count(), 1);
        assert_eq!(w.get::<A>(e), Some(&A(7)));
        w.destroy(e).unwrap();
        assert_eq!(w.get::<A>(e), None);
        assert!(keys_unique(&w.a) && keys_unique(&w.b) && w.check_groups());
    }
}

#[test]
fn swapped_registries_are_refused_as_foreign_pools() {
    let mut w1 = W::try_new(4).unwrap();
    let mut w2 = W::try_new(4).unwrap();
    let e1 = w1.spawn((A(1), B(1))).unwrap();
    let e2 = w2.spawn((A(2), B(2))).unwrap();
    std::mem::swap(&mut w1.registry, &mut w2.registry);
    // w1 now holds w2's registry beside its own pools: every structural change is refused.
    let before = snapshot(&w1);
    assert_eq!(w1.spawn((A(3), B(3))), Err(WorldError::ForeignPool));
    assert_eq!(
        w1.spawn_batch([(A(3),), (A(4),)]),
        Err(WorldError::ForeignPool)
    );
    assert_eq!(w1.insert(e2, A(9)), Err(WorldError::ForeignPool));
    assert_eq!(w1.remove::<A>(e2), Err(WorldError::ForeignPool));
    assert_eq!(
        w1.insert_batch(&[e2], &[A(9)]),
        Err(WorldError::ForeignPool)
    );
    assert_eq!(w1.remove_batch::<A>(&[e2]), Err(WorldError::ForeignPool));
    assert_eq!(w1.destroy(e2), Err(WorldError::ForeignPool));
    assert_eq!(snapshot(&w1), before);
    assert!(
        w1.registry.is_alive(e2),
        "the refused destroy released nothing"
    );
    // Reads answer for the pools' own entities only.
    assert_eq!(w1.get::<A>(e2), None);
    assert_eq!(w1.get::<A>(e1), Some(&A(1)));
    // Swapping back restores both worlds.
    std::mem::swap(&mut w1.registry, &mut w2.registry);
    w1.destroy(e1).unwrap();
    w2.destroy(e2).unwrap();
    assert!(keys_unique(&w1.a) && keys_unique(&w2.a));
}

#[test]
fn swapped_pools_are_refused_as_foreign_pools() {
    let mut w1 = Loose::try_new(4).unwrap();
    let mut w2 = Loose::try_new(4).unwrap();
    let e1 = w1.spawn((A(1),)).unwrap();
    let e2 = w2.spawn((A(2),)).unwrap();
    std::mem::swap(&mut w1.a, &mut w2.a);
    assert_eq!(w1.spawn((A(3),)), Err(WorldError::ForeignPool));
    assert_eq!(w1.insert(e1, A(9)), Err(WorldError::ForeignPool));
    assert_eq!(w1.destroy(e1), Err(WorldError::ForeignPool));
    assert!(w1.registry.is_alive(e1));
    // A commit would be refused half way: it is refused before it applies anything.
    let mut cmd = CommandBuffer::try_with_capacity(4, 16).unwrap();
    let p = cmd.create().unwrap();
    cmd.insert(&w1.registry, p, B(1)).unwrap();
    cmd.destroy(&w1.registry, e1).unwrap();
    let before = (
        w1.registry.len(),
        w1.b.len(),
        w1.registry.structural_revision(),
    );
    assert_eq!(w1.commit(&mut cmd), Err(WorldError::ForeignPool));
    assert_eq!(
        (
            w1.registry.len(),
            w1.b.len(),
            w1.registry.structural_revision()
        ),
        before
    );
    cmd.clear(&w1.registry).unwrap();
    // B's pool is still w1's own: changes there go through.
    w1.insert(e1, B(5)).unwrap();
    std::mem::swap(&mut w1.a, &mut w2.a);
    w1.destroy(e1).unwrap();
    w2.destroy(e2).unwrap();
}

/// A hand-written roster that lies: it hands out a different pool of `A` on every call, both
/// bound to its registry. Nothing unsafe may rely on a roster; the worst it may do is make its
/// own world answer wrongly.
struct Liar {
    registry: ReadOnly<EntityRegistry>,
    hooks: ReadOnly<()>,
    first: ComponentPool<A>,
    second: ComponentPool<A>,
    flip: bool,
}

impl Roster for Liar {
    type Alloc = ludus::world::__private::Global;
    type Components = (A, ());
    type Groups = ();
    type Hooks = ();
    fn hooked_parts(&mut self) -> HookedParts<'_, Self> {
        self.flip = !self.flip;
        let pool = if self.flip {
            &mut self.first
        } else {
            &mut self.second
        };
        (&mut self.registry, &mut self.hooks, (Some(pool), ()))
    }
    fn hooks(&self) -> &Self::Hooks {
        &self.hooks
    }
    fn parts_ref(&self) -> PartsRef<'_, Self> {
        (&self.registry, (&self.first, ()))
    }
}

impl ludus::world::Stores<A> for Liar {}

#[test]
fn a_lying_roster_cannot_corrupt_a_pool() {
    let capacity = if cfg!(miri) { 8 } else { 32 };
    let alloc = ludus::world::__private::Global;
    let mut w = Liar {
        registry: ReadOnly::try_new_world_registry(capacity, alloc).unwrap(),
        hooks: ReadOnly::no_hooks_in(capacity, alloc).unwrap(),
        first: ComponentPool::try_unbound_in(capacity, alloc).unwrap(),
        second: ComponentPool::try_unbound_in(capacity, alloc).unwrap(),
        flip: false,
    };
    // Binds the pool of the first call; a bound world binds no more pools, so the other one
    // stays unbound and every change that reaches it is refused.
    w.try_bind().unwrap();
    assert_eq!(w.try_bind(), Err(ludus::world::InitError::PoolMismatch));
    assert!(w.first.owner() != 0 && w.second.owner() == 0);
    assert_eq!(w.registry.bound_pools(), 1);
    let mut live = Vec::new();
    let mut refused = 0;
    for round in 0..6u32 {
        let n = (capacity - w.registry.len()).min(3);
        match w.spawn_batch((0..n).map(|k| (A(round * 10 + k as u32),))) {
            Ok(_) => {}
            Err(WorldError::ForeignPool) => refused += 1,
            Err(other) => panic!("{other:?}"),
        }
        match w.spawn((A(round),)) {
            Ok(e) => live.push(e),
            Err(WorldError::ForeignPool) => refused += 1,
            Err(WorldError::CapacityExhausted { .. }) => {}
            Err(other) => panic!("{other:?}"),
        }
        let owners: Vec<EntityId> = w.first.owners().iter().collect();
        for e in live.drain(..).chain(owners.into_iter().take(2)) {
            match w.destroy(e) {
                Ok(()) | Err(WorldError::Rejected(_)) => {}
                Err(WorldError::ForeignPool) => refused += 1,
                Err(other) => panic!("{other:?}"),
            }
        }
        for pool in [&w.first, &w.second] {
            assert!(keys_unique(pool), "round {round}: one entry per slot");
            assert!(pool.len() <= capacity);
        }
        assert!(w.second.is_empty(), "an unbound pool never takes an entity");
        // Every entity in the bound pool is alive: its destroys all reached it.
        assert!(w.first.owners().iter().all(|e| w.registry.is_alive(e)));
        let mut seen = HashSet::new();
        for (e, (x, y)) in join((&mut w.first, &mut w.second)) {
            assert!(seen.insert(e));
            x.0 = x.0.wrapping_add(1);
            y.0 = y.0.wrapping_add(1);
        }
    }
    assert!(refused > 0, "the lying calls were refused");
}

/// A roster that can hide its pool (`None` in its place): a destroy that would not reach
/// every pool bound to the registry is refused, so a reused slot never meets a stale entry.
struct Hider {
    registry: ReadOnly<EntityRegistry>,
    hooks: ReadOnly<()>,
    a: ComponentPool<A>,
    hide: bool,
    /// The pool is hidden too once the registry holds this many entities.
    limit: usize,
}

impl Roster for Hider {
    type Alloc = ludus::world::__private::Global;
    type Components = (A, ());
    type Groups = ();
    type Hooks = ();
    fn hooked_parts(&mut self) -> HookedParts<'_, Self> {
        let pool = (!self.hide && self.registry.len() < self.limit).then_some(&mut self.a);
        (&mut self.registry, &mut self.hooks, (pool, ()))
    }
    fn hooks(&self) -> &Self::Hooks {
        &self.hooks
    }
    fn parts_ref(&self) -> PartsRef<'_, Self> {
        (&self.registry, (&self.a, ()))
    }
}

impl ludus::world::Stores<A> for Hider {}

#[test]
fn a_roster_hiding_a_pool_cannot_release_past_it() {
    let alloc = ludus::world::__private::Global;
    let mut w = Hider {
        registry: ReadOnly::try_new_world_registry(4, alloc).unwrap(),
        hooks: ReadOnly::no_hooks_in(4, alloc).unwrap(),
        a: ComponentPool::try_unbound_in(4, alloc).unwrap(),
        hide: false,
        limit: usize::MAX,
    };
    w.try_bind().unwrap();
    let e = w.spawn((A(1),)).unwrap();
    w.hide = true;
    assert_eq!(w.destroy(e), Err(WorldError::ForeignPool));
    assert!(w.registry.is_alive(e) && w.a.len() == 1, "nothing changed");
    assert_eq!(w.spawn((A(2),)), Err(WorldError::UnknownComponent));
    w.hide = false;
    w.destroy(e).unwrap();
    assert!(w.a.is_empty());
    let again = w.spawn((A(3),)).unwrap();
    assert_eq!(
        again.slot(),
        e.slot(),
        "the slot is reused, with no stale entry"
    );
    assert!(keys_unique(&w.a));
    assert_eq!(w.get::<A>(e), None);
}

/// A commit that a lying roster stops half way (its pool vanishes after the commit's checks)
/// leaves no provisional resolving to the handles it created: the last commit's provisionals
/// would otherwise read this one's creates at their indices.
#[test]
fn a_commit_stopped_half_way_resolves_no_provisional_to_its_creates() {
    let alloc = ludus::world::__private::Global;
    let mut w = Hider {
        registry: ReadOnly::try_new_world_registry(8, alloc).unwrap(),
        hooks: ReadOnly::no_hooks_in(8, alloc).unwrap(),
        a: ComponentPool::try_unbound_in(8, alloc).unwrap(),
        hide: false,
        limit: usize::MAX,
    };
    w.try_bind().unwrap();
    let mut cmd = CommandBuffer::try_with_capacity(16, 256).unwrap();
    let first = cmd.spawn(&w.registry, (A(1),)).unwrap();
    w.commit(&mut cmd).unwrap();
    let e1 = cmd.resolve(first).unwrap();
    assert_eq!(w.get::<A>(e1), Some(&A(1)));
    // The next commit's first create reaches the limit: its insert finds no pool.
    w.limit = 2;
    cmd.spawn(&w.registry, (A(2),)).unwrap();
    cmd.spawn(&w.registry, (A(3),)).unwrap();
    assert_eq!(w.commit(&mut cmd), Err(WorldError::UnknownComponent));
    assert_eq!(w.registry.len(), 2, "the commit stopped after one create");
    assert_eq!(
        cmd.resolve(first),
        None,
        "no provisional resolves into a failed commit"
    );
}

#[test]
fn a_query_naming_a_pool_twice_panics_instead_of_aliasing() {
    let mut w = Loose::try_new(2).unwrap();
    let got = catch_unwind(AssertUnwindSafe(|| {
        let (x, y) = w.pools_mut::<(&mut A, &mut A)>();
        (x.len(), y.len())
    }));
    assert!(got.is_err());
    let (x, y) = w.pools_mut::<(&mut A, &B)>();
    assert_eq!((x.len(), y.len()), (0, 0));
}

/// A generic system over any world that stores `A` and `B`.
fn bump<Wd: WorldOps + ludus::world::Stores<A> + ludus::world::Stores<B>>(w: &mut Wd) -> usize {
    let (a, b) = w.pools_mut::<(&mut A, &B)>();
    let mut n = 0;
    for (_, (x, y)) in join((a, b)) {
        x.0 += y.0;
        n += 1;
    }
    n
}

#[test]
fn generic_systems_take_several_pools_by_type() {
    let mut grouped = W::try_new(4).unwrap();
    let mut loose = Loose::try_new(4).unwrap();
    let e = grouped.spawn((A(1), B(2))).unwrap();
    let f = loose.spawn((A(10), B(20))).unwrap();
    loose.spawn((A(0),)).unwrap();
    assert_eq!(bump(&mut grouped), 1);
    assert_eq!(bump(&mut loose), 1);
    assert_eq!(grouped.get::<A>(e), Some(&A(3)));
    assert_eq!(loose.get::<A>(f), Some(&A(30)));
    let (registry, (a,)) = loose.split_mut::<(&mut A,)>();
    for (id, x) in a.iter_mut() {
        if registry.is_active(id) {
            x.0 += 1;
        }
    }
    assert_eq!(loose.get::<A>(f), Some(&A(31)));
}

#[test]
fn a_dropped_buffer_leaves_marks_that_the_world_can_clear() {
    let mut w = W::try_new(4).unwrap();
    let e = w.spawn((A(1), B(1))).unwrap();
    {
        let mut cmd = CommandBuffer::try_with_capacity(4, 0).unwrap();
        cmd.destroy(&w.registry, e).unwrap();
    }
    assert!(w.registry.is_pending(e) && !w.registry.is_active(e));
    // A panicking system's buffer the same way.
    let f = w.spawn((A(2),)).unwrap();
    let registry = &w.registry;
    let unwound = catch_unwind(AssertUnwindSafe(|| {
        let mut cmd = CommandBuffer::try_with_capacity(4, 0).unwrap();
        cmd.destroy(registry, f).unwrap();
        panic!("system failed");
    }));
    assert!(unwound.is_err());
    assert!(w.registry.is_pending(f));
    w.end_structural();
    assert_eq!(w.clear_pending(), Err(WorldError::InvalidPhase));
    w.begin_structural();
    assert_eq!(w.clear_pending(), Ok(2));
    assert!(w.registry.is_active(e) && w.registry.is_active(f));
    assert_eq!(w.clear_pending(), Ok(0));
    // Recorded again, the destroy goes through.
    let mut cmd = CommandBuffer::try_with_capacity(4, 0).unwrap();
    cmd.destroy(&w.registry, e).unwrap();
    w.commit(&mut cmd).unwrap();
    assert!(!w.registry.is_alive(e));
}

/// Clearing every mark while a live buffer holds a destroy: the buffer could otherwise record
/// commands on the entity after its own destroy (it is active again) and fail half way through
/// its commit. It refuses to commit instead, and its `clear` leaves others' marks alone.
#[test]
fn a_live_buffer_refuses_to_commit_after_its_marks_were_cleared() {
    let mut w = W::try_new(4).unwrap();
    let e = w.spawn((A(1), B(1))).unwrap();
    let mut stale = CommandBuffer::try_with_capacity(4, 16).unwrap();
    stale.destroy(&w.registry, e).unwrap();
    assert_eq!(w.clear_pending(), Ok(1));
    stale.insert(&w.registry, e, A(2)).unwrap(); // active again: recorded after its destroy
    assert_eq!(
        stale.destroy(&w.registry, e),
        Err(CommandError::MarksCleared)
    );
    // Another buffer marks it now.
    let mut fresh = CommandBuffer::try_with_capacity(4, 16).unwrap();
    fresh.destroy(&w.registry, e).unwrap();
    let before = (
        w.registry.structural_revision(),
        w.a.len(),
        w.get::<A>(e).copied(),
    );
    assert_eq!(w.commit(&mut stale), Err(WorldError::MarksCleared));
    assert_eq!(
        (
            w.registry.structural_revision(),
            w.a.len(),
            w.get::<A>(e).copied()
        ),
        before,
        "nothing applied"
    );
    stale.clear(&w.registry).unwrap();
    assert!(w.registry.is_pending(e), "the other buffer's mark is kept");
    w.commit(&mut fresh).unwrap();
    assert!(!w.registry.is_alive(e));
}

#[test]
fn clear_with_another_registry_is_refused() {
    let mut w1 = W::try_new(4).unwrap();
    let w2 = W::try_new(4).unwrap();
    let e = w1.spawn((A(1),)).unwrap();
    let mut cmd = CommandBuffer::try_with_capacity(4, 16).unwrap();
    cmd.destroy(&w1.registry, e).unwrap();
    assert_eq!(cmd.clear(&w2.registry), Err(CommandError::ForeignRegistry));
    assert_eq!(cmd.len(), 1, "nothing cleared");
    assert!(w1.registry.is_pending(e), "the mark is still there");
    // Recording against the other registry is refused too, until the buffer is cleared.
    assert_eq!(
        cmd.insert(&w2.registry, e, A(1)),
        Err(CommandError::ForeignRegistry)
    );
    cmd.clear(&w1.registry).unwrap();
    assert!(w1.registry.is_active(e));
    let c = cmd.create().unwrap();
    cmd.insert(&w2.registry, c, B(3)).unwrap();
    assert_eq!(
        cmd.destroy(&w1.registry, e),
        Err(CommandError::ForeignRegistry)
    );
    // Recorded against w2: w1 refuses it before applying anything, w2 takes it.
    let len = w1.registry.len();
    assert_eq!(w1.commit(&mut cmd), Err(WorldError::ForeignCommands));
    assert_eq!(w1.registry.len(), len);
    let mut w2 = w2;
    w2.commit(&mut cmd).unwrap();
    assert_eq!(w2.get::<B>(cmd.resolve(c).unwrap()), Some(&B(3)));
}

#[test]
fn stale_handles_read_nothing_through_a_world() {
    let mut w = Loose::try_new(2).unwrap();
    let e = w.spawn((A(1), B(1))).unwrap();
    w.destroy(e).unwrap();
    assert_eq!((w.get::<A>(e), w.get::<B>(e)), (None, None));
    let again = w.spawn((A(2),)).unwrap();
    assert_eq!(again.slot(), e.slot());
    assert_eq!(w.get::<A>(e), None);
    assert_eq!(w.get::<A>(again), Some(&A(2)));
    assert_eq!(w.registry.diagnose(e), Err(Rejection::Stale));
}

#[test]
fn roster_type_lists_describe_the_world() {
    assert_eq!(<<W as Roster>::Components as ComponentList>::LEN, 2);
    assert_eq!(<<W as Roster>::Groups as GroupList>::LEN, 1);
    assert_eq!(<<Loose as Roster>::Groups as GroupList>::LEN, 0);
}

/// A roster that alternates between two registries (each with its pool): a batch spawn checks
/// the phase and budgets again on the registry it creates in.
struct TwoRegistries {
    r1: ReadOnly<EntityRegistry>,
    r2: ReadOnly<EntityRegistry>,
    d1: ReadOnly<()>,
    d2: ReadOnly<()>,
    x1: ComponentPool<A>,
    x2: ComponentPool<A>,
    second: bool,
}

impl Roster for TwoRegistries {
    type Alloc = ludus::world::__private::Global;
    type Components = (A, ());
    type Groups = ();
    type Hooks = ();
    fn hooked_parts(&mut self) -> HookedParts<'_, Self> {
        self.second = !self.second;
        if self.second {
            (&mut self.r1, &mut self.d1, (Some(&mut self.x1), ()))
        } else {
            (&mut self.r2, &mut self.d2, (Some(&mut self.x2), ()))
        }
    }
    fn hooks(&self) -> &Self::Hooks {
        &self.d1
    }
    fn parts_ref(&self) -> PartsRef<'_, Self> {
        (&self.r1, (&self.x1, ()))
    }
}

impl ludus::world::Stores<A> for TwoRegistries {}

#[test]
fn a_batch_spawn_rechecks_the_registry_it_creates_in() {
    let alloc = ludus::world::__private::Global;
    let mut w = TwoRegistries {
        r1: ReadOnly::try_new_world_registry(4, alloc).unwrap(),
        r2: ReadOnly::try_new_world_registry(4, alloc).unwrap(),
        d1: ReadOnly::no_hooks_in(4, alloc).unwrap(),
        d2: ReadOnly::no_hooks_in(4, alloc).unwrap(),
        x1: ComponentPool::try_unbound_in(4, alloc).unwrap(),
        x2: ComponentPool::try_unbound_in(4, alloc).unwrap(),
        second: false,
    };
    w.try_bind().unwrap(); // r1
    w.try_bind().unwrap(); // r2
    w.end_structural(); // r1
    w.end_structural(); // r2
    w.begin_structural(); // r1 open again, r2 closed
    assert_eq!(w.create(), Err(WorldError::InvalidPhase)); // r2
                                                           // Checks on r1, would create in r2.
    assert_eq!(
        w.spawn_batch([(A(1),), (A(2),)]),
        Err(WorldError::InvalidPhase)
    );
    assert_eq!((w.r2.len(), w.x2.len()), (0, 0));
    assert!(!w.r2.is_structural_phase());
}

ludus::world! {
    /// Three pools, two of them grouped.
    pub struct G3 {
        /// A.
        pub a: A,
        /// B.
        pub b: B,
        /// C.
        pub c: C,
    }
    groups { ab(a: A, b: B) }
}

ludus::world! {
    /// The same three pools and the same group, another type.
    pub struct H3 {
        /// A.
        pub a: A,
        /// B.
        pub b: B,
        /// C.
        pub c: C,
    }
    groups { ab(a: A, b: B) }
}

/// Swaps every part (registry, hooks, pools) of `g` and `h`.
fn swap_parts(g: &mut G3, h: &mut H3) {
    std::mem::swap(&mut g.registry, &mut h.registry);
    std::mem::swap(&mut g.__ludus_hooks, &mut h.__ludus_hooks);
    std::mem::swap(&mut g.a, &mut h.a);
    std::mem::swap(&mut g.b, &mut h.b);
    std::mem::swap(&mut g.c, &mut h.c);
}

/// Parts moved between world types that declare different groups (every ownership check
/// passes: they all came from one world) would carry their packing into a type that neither
/// keeps nor undoes it, and moved back, the group would pair values of different entities. A
/// world's registry type carries its group list (`ReadOnly`'s marker: the move does not
/// compile, see its `compile_fail` example); types with the same groups still trade parts, and
/// keep the packing exactly.
#[test]
fn parts_move_only_between_world_types_with_the_same_groups() {
    let mut g = G3::try_new(16).unwrap();
    let mut h = H3::try_new(16).unwrap();
    let es: Vec<EntityId> = (0..4)
        .map(|i| g.spawn((A(i), B(i), C(i))).unwrap())
        .collect();
    swap_parts(&mut g, &mut h);
    h.remove::<B>(es[1]).unwrap();
    h.destroy(es[0]).unwrap();
    let late = h.spawn((A(9), B(9))).unwrap();
    assert!(h.check_groups());
    swap_parts(&mut g, &mut h);
    assert!(g.check_groups());
    let (ids, a, b) = g.ab();
    assert_eq!(ids.len(), 3);
    assert!(ids.iter().any(|e| e == late));
    assert!(a.iter().zip(b.iter()).all(|(a, b)| a.0 == b.0));
    // H3 holds G3's fresh parts: its operations refuse G3's entities (another owner).
    assert_eq!(
        h.destroy(es[2]),
        Err(WorldError::Rejected(Rejection::ForeignOwner))
    );
}
