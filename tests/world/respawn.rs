//! `CommandBuffer::respawn`: a roster that changes the world from inside `hooked_parts`
//! during a commit (a second entry for one slot; a create failing after the in-place release)
//! is refused without harm, and a differential test of respawn against the destroy and spawn
//! it stands for (random commits on nested groups, clusters, shared layout stamps, durable
//! state; the terminal generation; budgets at their edge; recording all or nothing).

use std::collections::{BTreeMap, HashSet};

use bytemuck::{Pod, Zeroable};
use ludus::world::roster::{HookedParts, PartsRef, Roster};
use ludus::world::WorldDiagnostics;
use ludus::world::{cluster, join, CommandBuffer, JoinPlan, Stores, WorldError, WorldOps};
use ludus::EntityId;

use crate::support::{keys_unique, sg, Rng, A, B, C, D, E};

ludus::world! {
    pub struct Loose { pub a: A, pub b: B }
}

// ---------------------------------------------------------------------------------------------
// A hand-written roster (wrapping a `world!` world) that changes the world from inside
// `hooked_parts`, user code called in the middle of a commit.
// ---------------------------------------------------------------------------------------------

pub enum Trick {
    None,
    /// On the `n`-th `hooked_parts` call from now, insert an `A(666)` into whatever entity
    /// lives at `slot` when it has no A (the commit's freshly created entity).
    SneakA {
        slot: u32,
        min_gen: u32,
    },
    /// On the `n`-th call from now, exhaust the creation sequence (test hook).
    ExhaustSequence {
        calls: usize,
    },
}

pub struct Sneaky {
    pub w: Loose,
    pub trick: Trick,
}

impl Roster for Sneaky {
    type Alloc = <Loose as Roster>::Alloc;
    type Components = <Loose as Roster>::Components;
    type Groups = <Loose as Roster>::Groups;
    type Hooks = ();
    fn hooked_parts(&mut self) -> HookedParts<'_, Self> {
        match &mut self.trick {
            Trick::None => {}
            Trick::SneakA { slot, min_gen } => {
                if let Some(e) = self.w.registry.live_at(*slot) {
                    if e.generation() >= *min_gen {
                        self.trick = Trick::None;
                        // Through the world itself (re-enters `hooked_parts`, disarmed).
                        WorldOps::insert(self, e, A(666)).unwrap();
                    }
                }
            }
            Trick::ExhaustSequence { calls } => {
                if *calls == 0 {
                    self.trick = Trick::None;
                    let rev = self.w.registry.structural_revision();
                    assert!(WorldDiagnostics::test_hook_advance_counters(
                        self,
                        u64::MAX,
                        rev
                    ));
                } else {
                    *calls -= 1;
                }
            }
        }
        self.w.hooked_parts()
    }
    fn parts_ref(&self) -> PartsRef<'_, Self> {
        self.w.parts_ref()
    }
    fn hooks(&self) -> &Self::Hooks {
        self.w.hooks()
    }
}
impl Stores<A> for Sneaky {}
impl Stores<B> for Sneaky {}

/// Capacity large enough for the driver plan over a two-row pool (many bitset words).
const BIG: usize = 64 * 20;

/// Not respawn-specific, but the respawn fallback goes through it: a commit applies a bundle's
/// create and each of its fresh inserts through separate `hooked_parts` calls, and a fresh
/// insert trusts that nothing inserted a `T` since the create. A roster that inserts from
/// inside `hooked_parts` tries to break that: were the pool to hold the slot twice, a join
/// would hand out two `&mut` to one value.
fn sneak_into_commit(respawn: bool) -> (Sneaky, Vec<EntityId>) {
    let mut s = Sneaky {
        w: Loose::try_new(BIG).unwrap(),
        trick: Trick::None,
    };
    // b is larger than a, so a drives joins over (a, b).
    let mut others = Vec::new();
    for i in 0..4 {
        others.push(s.w.spawn((B(i),)).unwrap());
    }
    let mut cmd = CommandBuffer::try_with_capacity(8, 64).unwrap();
    let (slot, min_gen);
    if respawn {
        // `old` holds only B: not the bundle's types, so the fallback destroy + spawn runs.
        let old = others.pop().unwrap();
        slot = old.slot();
        min_gen = old.generation() + 1;
        cmd.respawn(&s.w.registry, old, (A(1), B(1))).unwrap();
    } else {
        slot = 4;
        min_gen = 1;
        cmd.spawn(&s.w.registry, (A(1), B(1))).unwrap();
    }
    // Fires on the first `hooked_parts` call after the commit's create: the first fresh
    // insert's `member`.
    s.trick = Trick::SneakA { slot, min_gen };
    let r = s.commit(&mut cmd);
    (s, {
        let _ = r;
        others
    })
}

fn check_sneak(respawn: bool) {
    let (mut s, _) = sneak_into_commit(respawn);
    let a_len = s.w.a.len();
    let unique = keys_unique(&s.w.a);
    eprintln!("respawn={respawn}: a.len={a_len}, keys unique={unique}");
    if !unique {
        let j = join((&s.w.a, &mut s.w.b));
        eprintln!("plan {:?}", j.plan());
        let mut rows: Vec<_> = j.collect();
        let ptrs: Vec<*const B> = rows.iter().map(|(_, (_, b))| &**b as *const B).collect();
        eprintln!("rows {}, b pointers {:?}", rows.len(), ptrs);
        // Write through both (Miri: Stacked/Tree Borrows violation).
        for (_, (_, b)) in rows.iter_mut() {
            b.0 += 1;
        }
        assert!(
            !(ptrs.len() == 2 && ptrs[0] == ptrs[1]),
            "two live &mut B to one value from safe code"
        );
    }
    assert!(unique, "respawn={respawn}: pool a holds one slot twice");
}

/// The fresh insert sees the slot's membership bit and replaces the value: the pool never holds
/// the slot twice, so no join hands out two `&mut` to one value (UB from safe code, which Miri
/// would report).
#[test]
fn reentrant_roster_cannot_duplicate_a_slot_in_a_commit_spawn() {
    check_sneak(false);
}

#[test]
fn reentrant_roster_cannot_duplicate_a_slot_in_a_respawn_fallback() {
    check_sneak(true);
}

/// Respawn-specific: `replace_in_place` releases `old` before its create. A roster exhausting
/// the creation sequence inside `hooked_parts` (after the preflight checked it on
/// `parts_ref`'s registry) must not make the create fail after the release, which would leave
/// `old` released with its rows in every pool (a stale handle reading a value through the
/// world): the sequence is checked before anything changes, and the commit fails with `old`
/// untouched.
#[test]
fn in_place_respawn_checks_the_sequence_before_the_release() {
    let mut s = Sneaky {
        w: Loose::try_new(8).unwrap(),
        trick: Trick::None,
    };
    let old = s.w.spawn((A(1), B(1))).unwrap();
    let mut cmd = CommandBuffer::try_with_capacity(8, 64).unwrap();
    cmd.respawn(&s.w.registry, old, (A(2), B(2))).unwrap();
    // Calls: roster_intact (0), replace_in_place (1).
    s.trick = Trick::ExhaustSequence { calls: 1 };
    let r = s.commit(&mut cmd);
    eprintln!(
        "commit -> {r:?}; alive(old)={}, a.get(old)={:?}, a.len={}, world.get={:?}",
        s.w.registry.is_alive(old),
        s.w.a.get(old),
        s.w.a.len(),
        s.w.get::<A>(old)
    );
    assert_eq!(r, Err(WorldError::SequenceExhausted));
    assert!(s.w.registry.is_alive(old), "nothing changed");
    assert_eq!(s.w.get::<A>(old), Some(&A(1)));
}

// ---------------------------------------------------------------------------------------------
// Differential: respawn against destroy + spawn, random commits on nested groups, clusters,
// shared layout stamps, durable state.
// ---------------------------------------------------------------------------------------------

ludus::world! {
    pub struct R { pub a: A, pub b: B, pub c: C, pub d: D, pub e: E }
    groups { ab(a: A, b: B), abc(a: A, b: B, c: C) }
    durable
}

type Row = [Option<u32>; 5];

fn row_of(w: &R, e: EntityId) -> Row {
    [
        w.get::<A>(e).map(|x| x.0),
        w.get::<B>(e).map(|x| x.0),
        w.get::<C>(e).map(|x| x.0),
        w.get::<D>(e).map(|x| x.0),
        w.get::<E>(e).map(|x| x.0),
    ]
}

/// Per live entity (slot, generation): its components, its parent, its name, its child count.
type Observed = BTreeMap<(u32, u32), (Row, Option<(u32, u32)>, String, usize)>;

/// Everything observable but dense order.
fn observe(w: &mut R) -> Observed {
    use ludus::durable::DurableOps;
    assert!(w.check_groups());
    assert!(w.check_clusters());
    assert!(w.check_pools());
    assert!(keys_unique(&w.a) && keys_unique(&w.b) && keys_unique(&w.c));
    assert!(keys_unique(&w.d) && keys_unique(&w.e));
    // Every row of every pool is of a live entity.
    for owners in [
        w.a.owners().iter().collect::<Vec<_>>(),
        w.b.owners().iter().collect(),
        w.c.owners().iter().collect(),
        w.d.owners().iter().collect(),
        w.e.owners().iter().collect(),
    ] {
        assert!(owners.iter().all(|&e| w.registry.is_alive(e)));
    }
    // Layout invariant seen from outside: an aligned join pairs equal owners.
    macro_rules! aligned {
        ($p:expr, $q:expr) => {
            if join((&$p, &$q)).plan() == JoinPlan::Aligned {
                let x: Vec<_> = $p.owners().iter().collect();
                let y: Vec<_> = $q.owners().iter().collect();
                assert_eq!(x, y, "aligned pools with different keys");
            }
        };
    }
    aligned!(w.c, w.d);
    aligned!(w.c, w.e);
    aligned!(w.d, w.e);
    aligned!(w.a, w.d);
    // Joins against the per-entity rows.
    let mut live = BTreeMap::new();
    let mut all: Vec<EntityId> = Vec::new();
    for p in [
        w.a.owners().iter().collect::<Vec<_>>(),
        w.b.owners().iter().collect(),
        w.c.owners().iter().collect(),
        w.d.owners().iter().collect(),
        w.e.owners().iter().collect(),
    ] {
        all.extend(p);
    }
    all.sort();
    all.dedup();
    for &e in &all {
        let parent = w.parent(e).unwrap().map(sg);
        let name = w.name(e).unwrap().to_string();
        let children = w.children(e).count();
        live.insert(sg(e), (row_of(w, e), parent, name, children));
    }
    let mut cde: Vec<_> = join((&w.c, &w.d, &w.e))
        .map(|(e, (c, d, x))| (sg(e), c.0, d.0, x.0))
        .collect();
    cde.sort();
    let expect: Vec<_> = live
        .iter()
        .filter_map(|(k, (r, ..))| Some((*k, r[2]?, r[3]?, r[4]?)))
        .collect();
    assert_eq!(
        cde,
        expect,
        "join c d e ({:?})",
        join((&w.c, &w.d, &w.e)).plan()
    );
    let mut de: Vec<_> = join((&w.e, &w.d))
        .map(|(e, (x, d))| (sg(e), d.0, x.0))
        .collect();
    de.sort();
    let expect: Vec<_> = live
        .iter()
        .filter_map(|(k, (r, ..))| Some((*k, r[3]?, r[4]?)))
        .collect();
    assert_eq!(de, expect, "join e d");
    let (ids, a, b, c) = w.abc();
    for k in 0..ids.len() {
        let e = ids.get(k).unwrap();
        let r = live[&sg(e)].0;
        assert_eq!(
            (r[0], r[1], r[2]),
            (Some(a[k].0), Some(b[k].0), Some(c[k].0))
        );
    }
    live
}

fn durable_r(capacity: usize) -> R {
    let config = ludus::durable::DurableConfig {
        name_bytes: 1 << 14,
        ..ludus::durable::DurableConfig::default()
    };
    R::try_new_durable(capacity, config).unwrap()
}

/// Records `kind`'s bundle with value `v`.
macro_rules! with_bundle {
    ($kind:expr, $v:expr, |$b:ident| $body:expr) => {{
        let v: u32 = $v;
        match $kind {
            0 => {
                let $b = (A(v), B(v ^ 1));
                $body
            }
            1 => {
                let $b = (A(v), B(v ^ 1), C(v ^ 2));
                $body
            }
            2 => {
                let $b = (C(v), D(v ^ 3), E(v ^ 4));
                $body
            }
            3 => {
                let $b = (D(v), E(v ^ 5));
                $body
            }
            4 => {
                let $b = (E(v), C(v ^ 6));
                $body
            }
            5 => {
                let $b = (B(v),);
                $body
            }
            _ => {
                let $b = (A(v), B(v ^ 1), C(v ^ 2), D(v ^ 3), E(v ^ 4));
                $body
            }
        }
    }};
}

fn differential(seed: u64, rounds: usize, capacity: usize) {
    use ludus::durable::DurableOps;
    let mut rng = Rng(seed | 1);
    let mut x = durable_r(capacity); // respawn
    let mut y = durable_r(capacity); // destroy + spawn
                                     // Handles by (slot, generation) in x and y.
    let mut hx: Vec<EntityId> = Vec::new();
    let mut hy: Vec<EntityId> = Vec::new();
    let mut cx = CommandBuffer::try_with_capacity(64, 2048).unwrap();
    let mut cy = CommandBuffer::try_with_capacity(64, 2048).unwrap();
    for round in 0..rounds {
        // Direct changes, identical in both.
        for _ in 0..rng.below(3) {
            match rng.below(9) {
                0 | 1 if hx.len() + 2 < capacity => {
                    let kind = rng.below(7);
                    let v = rng.next() as u32;
                    let ex = with_bundle!(kind, v, |b| x.spawn(b)).unwrap();
                    let ey = with_bundle!(kind, v, |b| y.spawn(b)).unwrap();
                    assert_eq!(sg(ex), sg(ey));
                    hx.push(ex);
                    hy.push(ey);
                }
                2 if !hx.is_empty() => {
                    let i = rng.below(hx.len());
                    x.destroy(hx.swap_remove(i)).unwrap();
                    y.destroy(hy.swap_remove(i)).unwrap();
                }
                3 if !hx.is_empty() => {
                    let i = rng.below(hx.len());
                    let v = rng.next() as u32;
                    match rng.below(5) {
                        0 => {
                            x.insert(hx[i], A(v)).unwrap();
                            y.insert(hy[i], A(v)).unwrap();
                        }
                        1 => {
                            x.insert(hx[i], B(v)).unwrap();
                            y.insert(hy[i], B(v)).unwrap();
                        }
                        2 => {
                            x.insert(hx[i], C(v)).unwrap();
                            y.insert(hy[i], C(v)).unwrap();
                        }
                        3 => {
                            x.remove::<D>(hx[i]).unwrap();
                            y.remove::<D>(hy[i]).unwrap();
                        }
                        _ => {
                            x.remove::<A>(hx[i]).unwrap();
                            y.remove::<A>(hy[i]).unwrap();
                        }
                    }
                }
                4 => {
                    let k = rng.below(3);
                    for w in [&mut x, &mut y] {
                        let _ = match k {
                            0 => cluster((&mut w.c, &mut w.d, &mut w.e)),
                            1 => cluster((&mut w.d, &mut w.e)),
                            _ => cluster((&mut w.e, &mut w.c)),
                        };
                    }
                }
                5 => {
                    x.sort_pools();
                    y.sort_pools();
                }
                6 if hx.len() >= 2 => {
                    let (i, j) = (rng.below(hx.len()), rng.below(hx.len()));
                    if i != j {
                        let rx = x.set_parent(hx[i], Some(hx[j]));
                        let ry = y.set_parent(hy[i], Some(hy[j]));
                        assert_eq!(rx.is_ok(), ry.is_ok());
                    }
                }
                7 if !hx.is_empty() => {
                    let i = rng.below(hx.len());
                    let name = format!("n{round}");
                    let _ = x.set_name(hx[i], &name);
                    let _ = y.set_name(hy[i], &name);
                }
                8 if hx.len() + 8 < capacity => {
                    let n = rng.below(5);
                    let v = rng.next() as u32;
                    let mut ox = vec![EntityId::NULL; n];
                    let mut oy = vec![EntityId::NULL; n];
                    x.spawn_batch_into((0..n as u32).map(|i| (C(v ^ i), D(i), E(v))), &mut ox)
                        .unwrap();
                    y.spawn_batch_into((0..n as u32).map(|i| (C(v ^ i), D(i), E(v))), &mut oy)
                        .unwrap();
                    hx.extend(ox);
                    hy.extend(oy);
                }
                _ => {}
            }
        }
        // A commit: a random mix of respawns (x) / destroy + spawn (y), destroys, spawns,
        // inserts and removes on existing entities and on provisionals.
        let mut picked = HashSet::new();
        let mut replaced: Vec<(usize, ludus::world::Provisional, ludus::world::Provisional)> =
            Vec::new();
        let mut spawned = Vec::new();
        let mut destroyed = Vec::new();
        let mut budget = capacity - hx.len();
        for _ in 0..rng.below(8) {
            if hx.is_empty() {
                break;
            }
            let i = rng.below(hx.len());
            let v = rng.next() as u32;
            match rng.below(8) {
                0..=3 if !picked.contains(&i) => {
                    picked.insert(i);
                    // Respawn: with the entity's own kind half the time (in place).
                    let row = row_of(&x, hx[i]);
                    let held: Vec<bool> = row.iter().map(Option::is_some).collect();
                    let kinds: [[bool; 5]; 7] = [
                        [true, true, false, false, false],
                        [true, true, true, false, false],
                        [false, false, true, true, true],
                        [false, false, false, true, true],
                        [false, false, true, false, true],
                        [false, true, false, false, false],
                        [true; 5],
                    ];
                    let own = kinds.iter().position(|k| k[..] == held[..]);
                    let kind = match own {
                        Some(k) if rng.below(2) == 0 => k,
                        _ => rng.below(7),
                    };
                    let px = with_bundle!(kind, v, |b| cx.respawn(&x.registry, hx[i], b)).unwrap();
                    cy.destroy(&y.registry, hy[i]).unwrap();
                    let py = with_bundle!(kind, v, |b| cy.spawn(&y.registry, b)).unwrap();
                    // Sometimes more commands on the replacement.
                    if rng.below(3) == 0 {
                        cx.insert(&x.registry, px, D(v ^ 9)).unwrap();
                        cy.insert(&y.registry, py, D(v ^ 9)).unwrap();
                    }
                    if rng.below(4) == 0 {
                        cx.remove::<A, _>(&x.registry, px).unwrap();
                        cy.remove::<A, _>(&y.registry, py).unwrap();
                    }
                    replaced.push((i, px, py));
                }
                4 if !picked.contains(&i) => {
                    picked.insert(i);
                    cx.destroy(&x.registry, hx[i]).unwrap();
                    cy.destroy(&y.registry, hy[i]).unwrap();
                    destroyed.push(i);
                    budget += 1;
                }
                5 if !picked.contains(&i) => {
                    // Insert / remove on an entity that is respawned later in this buffer.
                    cx.insert(&x.registry, hx[i], C(v)).unwrap();
                    cy.insert(&y.registry, hy[i], C(v)).unwrap();
                    if rng.below(2) == 0 {
                        cx.remove::<E, _>(&x.registry, hx[i]).unwrap();
                        cy.remove::<E, _>(&y.registry, hy[i]).unwrap();
                    }
                }
                6 if budget > 0 => {
                    budget -= 1;
                    let kind = rng.below(7);
                    let px = with_bundle!(kind, v, |b| cx.spawn(&x.registry, b)).unwrap();
                    let py = with_bundle!(kind, v, |b| cy.spawn(&y.registry, b)).unwrap();
                    spawned.push((px, py));
                }
                _ => {}
            }
        }
        if rng.below(2) == 0 {
            let k = rng.below(3);
            for w in [&mut x, &mut y] {
                let _ = match k {
                    0 => cluster((&mut w.c, &mut w.d, &mut w.e)),
                    1 => cluster((&mut w.d, &mut w.e)),
                    _ => cluster((&mut w.e, &mut w.c, &mut w.d)),
                };
            }
        }
        let rows_before: Vec<Option<usize>> = replaced
            .iter()
            .map(|&(i, ..)| {
                let e = hx[i];
                x.a.dense_index(e)
                    .or(x.b.dense_index(e))
                    .or(x.c.dense_index(e))
                    .or(x.d.dense_index(e))
                    .or(x.e.dense_index(e))
            })
            .collect();
        let plan_before = join((&x.d, &x.e)).plan();
        let (rx, ry) = (x.commit(&mut cx), y.commit(&mut cy));
        assert_eq!(rx, ry, "round {round}");
        if rx.is_err() {
            cx.clear(&x.registry).unwrap();
            cy.clear(&y.registry).unwrap();
            continue;
        }
        for &(i, px, py) in &replaced {
            let (nx, ny) = (cx.resolve(px).unwrap(), cy.resolve(py).unwrap());
            assert_eq!(sg(nx), sg(ny), "round {round}: replacement handles");
            assert!(!x.registry.is_alive(hx[i]));
            assert_eq!(x.get::<A>(hx[i]), None);
            hx[i] = nx;
            hy[i] = ny;
        }
        for (k, &(_, px, _)) in replaced.iter().enumerate() {
            let n = cx.resolve(px).unwrap();
            let now =
                x.a.dense_index(n)
                    .or(x.b.dense_index(n))
                    .or(x.c.dense_index(n))
                    .or(x.d.dense_index(n))
                    .or(x.e.dense_index(n));
            if now == rows_before[k] {
                STATS.with(|s| s.borrow_mut().0 += 1);
            }
            STATS.with(|s| s.borrow_mut().1 += 1);
        }
        if !replaced.is_empty() && join((&x.d, &x.e)).plan() == plan_before {
            STATS.with(|s| s.borrow_mut().2 += 1);
        }
        if plan_before == JoinPlan::Runs || plan_before == JoinPlan::Aligned {
            STATS.with(|s| s.borrow_mut().3 += 1);
        }
        for &(px, py) in &spawned {
            let (nx, ny) = (cx.resolve(px).unwrap(), cy.resolve(py).unwrap());
            assert_eq!(sg(nx), sg(ny));
            hx.push(nx);
            hy.push(ny);
        }
        destroyed.sort_unstable();
        for &i in destroyed.iter().rev() {
            hx.swap_remove(i);
            hy.swap_remove(i);
        }
        assert_eq!(
            x.registry.structural_revision(),
            y.registry.structural_revision(),
            "round {round}: revisions"
        );
        assert_eq!(x.registry.last_sequence(), y.registry.last_sequence());
        assert_eq!(x.registry.len(), y.registry.len());
        assert_eq!(x.registry.available(), y.registry.available());
        for (&ex, &ey) in hx.iter().zip(&hy) {
            assert_eq!(
                x.registry.creation_sequence(ex),
                y.registry.creation_sequence(ey)
            );
        }
        let (ox, oy) = (observe(&mut x), observe(&mut y));
        assert_eq!(ox, oy, "round {round}");
        assert_eq!(ox.len(), x.registry.len().min(ox.len()));
        // Creates after the commit take the same slots.
        if rng.below(4) == 0 && x.registry.available() > 0 {
            let (ex, ey) = (x.create().unwrap(), y.create().unwrap());
            assert_eq!(sg(ex), sg(ey));
            x.destroy(ex).unwrap();
            y.destroy(ey).unwrap();
        }
    }
}

thread_local! {
    static STATS: std::cell::RefCell<(usize, usize, usize, usize)> =
        const { std::cell::RefCell::new((0, 0, 0, 0)) };
}

#[test]
fn respawn_matches_destroy_then_spawn() {
    let (seeds, rounds) = if cfg!(miri) { (1, 12) } else { (64, 300) };
    for seed in 0..seeds {
        differential(0x9E37_79B9_7F4A_7C15 ^ (seed * 0x1234_5677), rounds, 48);
    }
    STATS.with(|s| {
        eprintln!(
            "same row / respawns / plan kept / runs-or-aligned before: {:?}",
            s.borrow()
        )
    });
}

#[test]
fn respawn_differential_other_shapes() {
    let rounds = if cfg!(miri) { 4 } else { 200 };
    for (seed, cap) in [(7u64, 6usize), (11, 16), (13, 200)] {
        differential(seed.wrapping_mul(0x2545_F491_4F6C_DD1D), rounds, cap);
    }
}

fn pair() -> (R, R) {
    (durable_r(8), durable_r(8))
}

/// Both commits' results, then both new handles.
type Outcomes = (
    Result<(), WorldError>,
    Result<(), WorldError>,
    Option<EntityId>,
    Option<EntityId>,
);

/// Commits `old` respawned as `(A, B)` in `x` and destroyed + spawned in `y`; returns both
/// results and handles.
fn one(x: &mut R, y: &mut R, ox: EntityId, oy: EntityId) -> Outcomes {
    let mut cx = CommandBuffer::try_with_capacity(8, 64).unwrap();
    let mut cy = CommandBuffer::try_with_capacity(8, 64).unwrap();
    let px = cx.respawn(&x.registry, ox, (A(5), B(6))).unwrap();
    cy.destroy(&y.registry, oy).unwrap();
    let py = cy.spawn(&y.registry, (A(5), B(6))).unwrap();
    let (rx, ry) = (x.commit(&mut cx), y.commit(&mut cy));
    let (nx, ny) = (cx.resolve(px), cy.resolve(py));
    if rx.is_err() {
        cx.clear(&x.registry).unwrap();
    }
    if ry.is_err() {
        cy.clear(&y.registry).unwrap();
    }
    (rx, ry, nx, ny)
}

#[test]
fn respawn_near_the_terminal_generation() {
    use ludus::identity::TERMINAL_GENERATION;
    for gen in [TERMINAL_GENERATION - 1, TERMINAL_GENERATION] {
        let (mut x, mut y) = pair();
        for w in [&mut x, &mut y] {
            let e = w.spawn((A(0),)).unwrap();
            w.destroy(e).unwrap();
            assert!(w.test_hook_advance_free_generation(0, gen));
        }
        let ox = x.spawn((A(1), B(1))).unwrap();
        let oy = y.spawn((A(1), B(1))).unwrap();
        assert_eq!(ox.generation(), gen);
        let (rx, ry, nx, ny) = one(&mut x, &mut y, ox, oy);
        assert_eq!(rx, ry);
        assert_eq!(nx.map(sg), ny.map(sg), "generation {gen}");
        assert_eq!(x.registry.retired(), y.registry.retired());
        assert_eq!(observe(&mut x), observe(&mut y));
        assert_eq!(x.get::<A>(ox), None);
        if gen == TERMINAL_GENERATION {
            // The documented "next generation of old's slot" does not exist: another slot.
            assert_ne!(nx.unwrap().slot(), ox.slot());
            assert_eq!(x.registry.retired(), 1);
        } else {
            assert_eq!(sg(nx.unwrap()), (ox.slot(), TERMINAL_GENERATION));
        }
    }
}

#[test]
fn respawn_at_the_edge_of_the_budgets() {
    // Revisions: a respawn of a two-pool entity by (A, B) is preflighted as 1 + 5 (destroy)
    // + 1 + 2 = 9 revisions, and applies 6; of an (A, C, D) entity (A kept in place, C and D
    // removed, B inserted) the same 9, and applies 7.
    for (shape, left) in (0..2).flat_map(|s| (0..12u64).map(move |l| (s, l))) {
        let (mut x, mut y) = pair();
        let (ox, oy) = if shape == 0 {
            (x.spawn((A(1), B(1))), y.spawn((A(1), B(1))))
        } else {
            (x.spawn((A(1), C(1), D(1))), y.spawn((A(1), C(1), D(1))))
        };
        let (ox, oy) = (ox.unwrap(), oy.unwrap());
        for w in [&mut x, &mut y] {
            let seq = w.registry.last_sequence();
            assert!(w.test_hook_advance_counters(seq, u64::MAX - left));
        }
        let (rx, ry, nx, ny) = one(&mut x, &mut y, ox, oy);
        assert_eq!(rx, ry, "shape {shape}: {left} revisions left");
        if rx.is_ok() {
            assert_eq!(observe(&mut x), observe(&mut y));
        }
        assert_eq!(nx.map(sg), ny.map(sg));
        assert_eq!(
            x.registry.structural_revision(),
            y.registry.structural_revision()
        );
        if rx.is_err() {
            assert!(x.registry.is_active(ox), "nothing applied, mark cleared");
            assert_eq!(x.get::<A>(ox), Some(&A(1)));
        }
    }
    // Sequences.
    for left in 0..3u64 {
        let (mut x, mut y) = pair();
        let ox = x.spawn((A(1), B(1))).unwrap();
        let oy = y.spawn((A(1), B(1))).unwrap();
        for w in [&mut x, &mut y] {
            let rev = w.registry.structural_revision();
            assert!(w.test_hook_advance_counters(u64::MAX - left, rev));
        }
        let (rx, ry, nx, ny) = one(&mut x, &mut y, ox, oy);
        assert_eq!(rx, ry, "{left} sequences left");
        assert_eq!(nx.map(sg), ny.map(sg));
        if rx.is_err() {
            assert!(x.registry.is_active(ox));
            assert_eq!(x.get::<A>(ox), Some(&A(1)));
        }
    }
}

#[test]
fn respawn_recording_is_all_or_nothing() {
    use ludus::world::CommandError;
    let mut w = durable_r(8);
    let e = w.spawn((A(1), B(1), C(1))).unwrap();
    // Room for 1 + 3 commands, 2 + 3 needed.
    let mut cmd = CommandBuffer::try_with_capacity(4, 64).unwrap();
    assert!(matches!(
        cmd.respawn(&w.registry, e, (A(1), B(2), C(3))),
        Err(CommandError::BufferFull { .. })
    ));
    assert!(w.registry.is_active(e) && cmd.is_empty());
    // Bytes short by one.
    let mut cmd = CommandBuffer::try_with_capacity(8, 11).unwrap();
    assert!(matches!(
        cmd.respawn(&w.registry, e, (A(1), B(2), C(3))),
        Err(CommandError::BufferFull { .. })
    ));
    assert!(w.registry.is_active(e) && cmd.is_empty());
    // Duplicate types.
    assert!(matches!(
        cmd.respawn(&w.registry, e, (A(1), A(2))),
        Err(CommandError::DuplicateComponent { .. })
    ));
    assert!(w.registry.is_active(e) && cmd.is_empty());
    // Twice: the second is refused (pending), the first kept.
    let mut cmd = CommandBuffer::try_with_capacity(16, 64).unwrap();
    cmd.respawn(&w.registry, e, (A(1),)).unwrap();
    let n = cmd.len();
    assert!(matches!(
        cmd.respawn(&w.registry, e, (A(1),)),
        Err(CommandError::Rejected(_))
    ));
    assert!(matches!(
        cmd.destroy(&w.registry, e),
        Err(CommandError::Rejected(_))
    ));
    assert!(matches!(
        cmd.insert(&w.registry, e, D(1)),
        Err(CommandError::Rejected(_))
    ));
    assert_eq!(cmd.len(), n);
    // clear_pending: the buffer refuses, then clear leaves the entity active.
    assert_eq!(w.clear_pending(), Ok(1));
    assert_eq!(w.commit(&mut cmd), Err(WorldError::MarksCleared));
    assert_eq!(w.get::<C>(e), Some(&C(1)));
    cmd.clear(&w.registry).unwrap();
    assert!(w.registry.is_active(e));
    // Recorded and cleared: unmarked.
    cmd.respawn(&w.registry, e, (A(1),)).unwrap();
    cmd.clear(&w.registry).unwrap();
    assert!(w.registry.is_active(e));
    // Unknown component type: preflight refuses, nothing applied.
    #[derive(Clone, Copy, Pod, Zeroable)]
    #[repr(C)]
    struct Unknown(u8);
    cmd.respawn(&w.registry, e, (A(9), Unknown(1))).unwrap();
    assert_eq!(w.commit(&mut cmd), Err(WorldError::UnknownComponent));
    assert_eq!(w.get::<A>(e), Some(&A(1)));
    cmd.clear(&w.registry).unwrap();
    assert!(w.registry.is_active(e));
}

/// A full world: respawns and destroys and spawns in one commit, every slot reused.
#[test]
fn full_world_mixed_commit() {
    let (mut x, mut y) = (durable_r(4), durable_r(4));
    let mut hx = Vec::new();
    let mut hy = Vec::new();
    for i in 0..4 {
        hx.push(x.spawn((A(i), B(i), C(i))).unwrap());
        hy.push(y.spawn((A(i), B(i), C(i))).unwrap());
    }
    let mut cx = CommandBuffer::try_with_capacity(32, 256).unwrap();
    let mut cy = CommandBuffer::try_with_capacity(32, 256).unwrap();
    cx.destroy(&x.registry, hx[0]).unwrap();
    cy.destroy(&y.registry, hy[0]).unwrap();
    cx.respawn(&x.registry, hx[1], (A(9), B(9), C(9))).unwrap();
    cy.destroy(&y.registry, hy[1]).unwrap();
    cy.spawn(&y.registry, (A(9), B(9), C(9))).unwrap();
    cx.respawn(&x.registry, hx[2], (A(8), B(8))).unwrap();
    cy.destroy(&y.registry, hy[2]).unwrap();
    cy.spawn(&y.registry, (A(8), B(8))).unwrap();
    cx.spawn(&x.registry, (C(7),)).unwrap();
    cy.spawn(&y.registry, (C(7),)).unwrap();
    cx.destroy(&x.registry, hx[3]).unwrap();
    cy.destroy(&y.registry, hy[3]).unwrap();
    cx.respawn(&x.registry, hx[3], (C(1),)).unwrap_err();
    assert_eq!(x.commit(&mut cx), y.commit(&mut cy));
    assert_eq!(observe(&mut x), observe(&mut y));
}
