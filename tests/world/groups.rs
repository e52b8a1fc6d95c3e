//! Owned groups, nested and flat:
//!
//! - a spawned bundle packs every group it completes, nested ones included, whatever the order
//!   of its types (`spawn`, `spawn_batch`, `spawn_batch_into`): packing type by type could pack
//!   an outer group before a smaller one that does not hold the bundle's first type, and the
//!   group queries would then pair one entity's values with another's;
//! - `insert` / `remove` of a grouped type check every member pool of the groups it touches
//!   against the registry: a member pool swapped out (or hidden by a hand-written roster) is
//!   refused with nothing changed, instead of leaving its group unpacked;
//! - and a seeded random walk over `one(a) ⊂ ab ⊂ abcd ⊃ cd` checking every group query and
//!   two joins against a model after each operation.

use bytemuck::cast_slice;
use ludus::world::roster::{HookedParts, PartsRef, Roster};
use ludus::world::WorldDiagnostics;
use ludus::world::{join, CommandBuffer, Owners, Stores, WorldError, WorldOps};
use ludus::EntityId;
use std::collections::HashMap;

use crate::support::{Rng, A, B, C, D};

ludus::world! {
    pub struct N { pub a: A, pub b: B, pub c: C }
    groups { ab(a: A, b: B), abc(a: A, b: B, c: C) }
}

ludus::world! {
    pub struct N3 { pub a: A, pub b: B, pub c: C }
    groups { one(a: A), ab(a: A, b: B), abc(a: A, b: B, c: C) }
}

/// Every entity holding A and B must be in `ab`'s prefix.
fn ab_holds_everyone(w: &mut N, expect: usize) {
    let (ids, a, b) = w.ab();
    assert_eq!(ids.len(), expect, "ab prefix length");
    assert!(a.iter().zip(b.iter()).all(|(a, b)| a.0 == b.0));
}

#[test]
fn spawn_with_outer_only_member_first_keeps_groups() {
    let mut w = N::try_new(16).unwrap();
    w.spawn((A(1), B(1))).unwrap(); // in `ab` only
    w.spawn((C(2), A(2), B(2))).unwrap(); // C first: packs `abc` before `ab`
    assert!(w.check_groups(), "check_groups after spawn((C, A, B))");
    ab_holds_everyone(&mut w, 2);
}

#[test]
fn spawn_batch_with_outer_only_member_first_keeps_groups() {
    let mut w = N::try_new(16).unwrap();
    w.spawn((A(1), B(1))).unwrap();
    w.spawn_batch((2..5).map(|i| (C(i), A(i), B(i)))).unwrap();
    assert!(
        w.check_groups(),
        "check_groups after spawn_batch((C, A, B))"
    );
    ab_holds_everyone(&mut w, 4);
}

#[test]
fn spawn_batch_into_with_outer_only_member_first_keeps_groups() {
    let mut w = N::try_new(16).unwrap();
    w.spawn((A(1), B(1))).unwrap();
    let mut out = [EntityId::from_raw_parts(0, 0, 0); 3];
    w.spawn_batch_into((2..5).map(|i| (C(i), A(i), B(i))), &mut out)
        .unwrap();
    assert!(
        w.check_groups(),
        "check_groups after spawn_batch_into((C, A, B))"
    );
}

#[test]
fn one_member_group_three_deep_spawn_b_first() {
    let mut w = N3::try_new(16).unwrap();
    w.spawn((A(1),)).unwrap();
    w.spawn((B(2), A(2))).unwrap(); // B first: packs `ab` before `one`
    assert!(w.check_groups(), "check_groups after spawn((B, A))");
    let (ids, a) = w.one();
    assert_eq!(ids.len(), 2, "every A holder is in `one`");
    assert_eq!(a.len(), 2);
}

/// Spawn order as a group query sees it: after spawns whose types come in another order than
/// the groups' and removals that unpack, `abc()` still returns each row's `A`, `B` and `C` from
/// one entity (packing type by type would pair one entity's `A`, `B` with another's `C`).
#[test]
fn spawn_order_bug_makes_abc_pair_different_entities() {
    for removed in 0..3 {
        let mut w = N::try_new(16).unwrap();
        let x = w.spawn((A(1), B(1))).unwrap();
        let y = w.spawn((C(2), A(2), B(2))).unwrap();
        match removed {
            0 => {
                w.remove::<A>(y).unwrap();
            }
            1 => {
                w.remove::<B>(y).unwrap();
            }
            _ => {
                w.remove::<C>(y).unwrap();
            }
        }
        w.insert(x, C(1)).unwrap();
        w.spawn((C(3), A(3), B(3))).unwrap();
        let (ids, a, b, c) = w.abc();
        for (k, e) in ids.iter().enumerate() {
            assert!(
                a[k].0 == b[k].0 && b[k].0 == c[k].0,
                "removed {removed}: abc row {k} of {e:?}: {:?} {:?} {:?}",
                a[k],
                b[k],
                c[k]
            );
        }
    }
}

ludus::world! {
    pub struct Q { pub a: A, pub b: B, pub c: C, pub d: D }
    groups { ab(a: A, b: B), cd(c: C, d: D), abcd(a: A, b: B, c: C, d: D) }
}

/// Two disjoint groups nested in a third: a declaration-order bundle keeps `cd` packed too
/// (packing type by type from `A` would visit `abcd` before `cd`, which does not contain `A`).
#[test]
fn disjoint_nested_groups_break_on_a_plain_spawn() {
    let mut w = Q::try_new(16).unwrap();
    w.spawn((C(1), D(1))).unwrap();
    w.spawn((A(2), B(2), C(2), D(2))).unwrap();
    assert!(w.check_groups(), "check_groups after spawn((A, B, C, D))");
    let (ids, _, _) = w.cd();
    assert_eq!(ids.len(), 2, "both C+D holders are in `cd`");
}

/// A command-buffer spawn in outer-first order: the commit packs after each insert (one
/// component at a time) and keeps every group packed.
#[test]
fn command_spawn_in_outer_first_order_is_fine() {
    let mut w = N::try_new(16).unwrap();
    w.spawn((A(1), B(1))).unwrap();
    let mut cmd = ludus::world::CommandBuffer::try_with_capacity(8, 64).unwrap();
    cmd.spawn(&w.registry, (C(2), A(2), B(2))).unwrap();
    w.commit(&mut cmd).unwrap();
    assert!(w.check_groups());
}

ludus::world! {
    pub struct F { pub a: A, pub b: B, pub c: C }
    groups { abc(a: A, b: B, c: C) }
}

fn rows(w: &mut N) -> Vec<(A, B, C)> {
    let (ids, a, b, c) = w.abc();
    (0..ids.len()).map(|k| (a[k], b[k], c[k])).collect()
}

#[test]
fn remove_with_a_swapped_member_pool_leaves_a_stale_prefix() {
    let mut w1 = N::try_new(16).unwrap();
    let mut w2 = N::try_new(16).unwrap();
    w1.spawn((A(1), B(1))).unwrap();
    let e = w1.spawn((A(2), B(2), C(2))).unwrap();
    assert!(w1.check_groups());
    std::mem::swap(&mut w1.c, &mut w2.c);
    // Comparing only `a` with the registry would accept it (the unpack of `abc` cannot find
    // `e` in w2's `c`, so it would skip that group): refused, nothing changes.
    let r = w1.remove::<A>(e);
    assert_eq!(r, Err(WorldError::ForeignPool));
    std::mem::swap(&mut w1.c, &mut w2.c);
    let ok = w1.check_groups();
    assert!(
        ok,
        "remove -> {r:?}; check_groups false; abc rows {:?}",
        rows(&mut w1)
    );
}

/// The same with a single (flat) group: predates the nested groups.
#[test]
fn flat_group_remove_with_a_swapped_member_pool() {
    let mut w1 = F::try_new(16).unwrap();
    let mut w2 = F::try_new(16).unwrap();
    let e = w1.spawn((A(2), B(2), C(2))).unwrap();
    w1.spawn((A(3), B(3), C(3))).unwrap();
    std::mem::swap(&mut w1.c, &mut w2.c);
    let r = w1.remove::<A>(e);
    assert_eq!(r, Err(WorldError::ForeignPool));
    std::mem::swap(&mut w1.c, &mut w2.c);
    assert!(
        w1.check_groups(),
        "remove -> {r:?}; check_groups false after swap-back"
    );
}

/// Hands out `N`'s registry and pools `a`, `b`, but not `c`.
pub struct Hide(pub N);

impl Roster for Hide {
    type Alloc = <N as Roster>::Alloc;
    type Components = <N as Roster>::Components;
    type Groups = <N as Roster>::Groups;
    type Hooks = ();
    fn hooked_parts(&mut self) -> HookedParts<'_, Self> {
        let (registry, hooks, (a, (b, _))) = self.0.hooked_parts();
        (registry, hooks, (a, (b, (None, ()))))
    }
    fn parts_ref(&self) -> PartsRef<'_, Self> {
        self.0.parts_ref()
    }
    fn hooks(&self) -> &Self::Hooks {
        self.0.hooks()
    }
}
impl Stores<A> for Hide {}

#[test]
fn hidden_member_pool_leaves_a_stale_nested_prefix() {
    let mut w = N::try_new(16).unwrap();
    let _z = w.spawn((A(1), B(1))).unwrap();
    let e = w.spawn((A(2), B(2), C(2))).unwrap();
    assert!(w.check_groups());
    let mut h = Hide(w);
    // Accepting it would unpack `ab` but not the hidden `abc`: refused.
    let r = h.remove::<A>(e);
    assert_eq!(r, Err(WorldError::ForeignPool));
    let mut w = h.0;
    let ok = w.check_groups();
    let (ids, a, b, c) = w.abc();
    let rows: Vec<_> = (0..ids.len()).map(|k| (a[k], b[k], c[k])).collect();
    assert!(ok, "remove -> {r:?}; check_groups false; abc rows {rows:?}");
}

ludus::world! {
    pub struct W { pub a: A, pub b: B, pub c: C, pub d: D, pub x: u64 }
    groups { abcd(a: A, b: B, c: C, d: D), cd(c: C, d: D), one(a: A), ab(a: A, b: B) }
}

type Model = HashMap<EntityId, (u32, [bool; 4])>;

/// One group query against the model: it holds exactly the entities with every component in
/// `need` (indices into the model's flags), and each row of each column is its entity's tag.
fn group_matches(m: &Model, ids: Owners<'_>, need: &[usize], columns: &[&[u32]]) -> bool {
    let holders = m.values().filter(|(_, f)| need.iter().all(|&i| f[i]));
    ids.len() == holders.count()
        && columns.iter().all(|c| c.len() == ids.len())
        && ids
            .iter()
            .enumerate()
            .all(|(k, e)| columns.iter().all(|c| c[k] == m[&e].0))
}

fn check(w: &mut W, m: &Model, log: &[String]) {
    let fail = |msg: String| -> ! { panic!("{msg}\n{}", log.join("\n")) };
    if !w.check_groups() {
        fail("check_groups".into());
    }
    let (ids, a) = w.one();
    if !group_matches(m, ids, &[0], &[cast_slice(a)]) {
        fail("one".into());
    }
    let (ids, a, b) = w.ab();
    if !group_matches(m, ids, &[0, 1], &[cast_slice(a), cast_slice(b)]) {
        fail("ab".into());
    }
    let (ids, c, d) = w.cd();
    if !group_matches(m, ids, &[2, 3], &[cast_slice(c), cast_slice(d)]) {
        fail("cd".into());
    }
    let (ids, a, b, c, d) = w.abcd();
    let columns = [cast_slice(a), cast_slice(b), cast_slice(c), cast_slice(d)];
    if !group_matches(m, ids, &[0, 1, 2, 3], &columns) {
        fail("abcd".into());
    }
    let mut n = 0;
    for (e, (a, x)) in join((&w.a, &w.x)) {
        n += 1;
        if m[&e].0 != a.0 || u64::from(a.0) != *x {
            fail("join a x".into());
        }
    }
    if n != m.iter().filter(|(_, (_, f))| f[0]).count() {
        fail("join count".into());
    }
    for (e, (c, x)) in join((&mut w.c, &w.x)) {
        if m[&e].0 != c.0 || u64::from(c.0) != *x {
            fail("join c x".into());
        }
    }
}

#[test]
fn nested_groups_survive_a_random_walk() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut rnd = move |n: u64| rng.below(n as usize) as u64;
    let rounds = if cfg!(miri) { 2 } else { 400 };
    for round in 0..rounds {
        let mut w = W::try_new(64).unwrap();
        let mut m: Model = HashMap::new();
        let mut log: Vec<String> = vec![];
        let mut tag = 0u32;
        for _ in 0..40 {
            tag += 1;
            let op = rnd(10);
            let pick = |rnd: &mut dyn FnMut(u64) -> u64, m: &Model| -> Option<EntityId> {
                if m.is_empty() {
                    return None;
                }
                let mut ks: Vec<_> = m.keys().copied().collect();
                ks.sort_by_key(|e| e.slot());
                Some(ks[rnd(ks.len() as u64) as usize])
            };
            match op {
                0 | 1 if m.len() < 50 => {
                    let t = tag;
                    let (e, f) = match rnd(6) {
                        0 => (
                            w.spawn((C(t), D(t), B(t), A(t), t as u64)).unwrap(),
                            [true; 4],
                        ),
                        1 => (
                            w.spawn((D(t), A(t), t as u64, C(t))).unwrap(),
                            [true, false, true, true],
                        ),
                        2 => (
                            w.spawn((B(t), t as u64, A(t))).unwrap(),
                            [true, true, false, false],
                        ),
                        3 => (
                            w.spawn((t as u64, A(t), B(t), C(t), D(t))).unwrap(),
                            [true; 4],
                        ),
                        4 => (
                            w.spawn((t as u64, C(t), A(t))).unwrap(),
                            [true, false, true, false],
                        ),
                        _ => (
                            w.spawn((t as u64, D(t), C(t))).unwrap(),
                            [false, false, true, true],
                        ),
                    };
                    log.push(format!("spawn {op} {e:?} {f:?}"));
                    m.insert(e, (t, f));
                }
                2 if m.len() < 40 => {
                    let k = rnd(4) as u32 + 1;
                    let base = tag * 100;
                    let n = match rnd(2) {
                        0 => w
                            .spawn_batch((0..k).map(|i| {
                                (
                                    C(base + i),
                                    base as u64 + i as u64,
                                    A(base + i),
                                    B(base + i),
                                    D(base + i),
                                )
                            }))
                            .unwrap(),
                        _ => w
                            .spawn_batch(
                                (0..k).map(|i| (D(base + i), C(base + i), base as u64 + i as u64)),
                            )
                            .unwrap(),
                    };
                    assert_eq!(n, k as usize);
                    // find new entities via x pool values
                    for (e, x) in w.x.iter() {
                        if *x >= base as u64 && *x < base as u64 + k as u64 {
                            let full = w.contains::<A>(e);
                            m.insert(e, (*x as u32, [full, full, true, true]));
                        }
                    }
                    log.push(format!("spawn_batch {k}"));
                }
                3 => {
                    if let Some(e) = pick(&mut rnd, &m) {
                        let t = m[&e].0;
                        let i = rnd(4) as usize;
                        match i {
                            0 => {
                                w.insert(e, A(t)).unwrap();
                            }
                            1 => {
                                w.insert(e, B(t)).unwrap();
                            }
                            2 => {
                                w.insert(e, C(t)).unwrap();
                            }
                            _ => {
                                w.insert(e, D(t)).unwrap();
                            }
                        }
                        m.get_mut(&e).unwrap().1[i] = true;
                        log.push(format!("insert {e:?} {i}"));
                    }
                }
                4 => {
                    if let Some(e) = pick(&mut rnd, &m) {
                        let i = rnd(4) as usize;
                        match i {
                            0 => {
                                w.remove::<A>(e).unwrap();
                            }
                            1 => {
                                w.remove::<B>(e).unwrap();
                            }
                            2 => {
                                w.remove::<C>(e).unwrap();
                            }
                            _ => {
                                w.remove::<D>(e).unwrap();
                            }
                        }
                        m.get_mut(&e).unwrap().1[i] = false;
                        log.push(format!("remove {e:?} {i}"));
                    }
                }
                5 => {
                    if let Some(e) = pick(&mut rnd, &m) {
                        w.destroy(e).unwrap();
                        m.remove(&e);
                        log.push(format!("destroy {e:?}"));
                    }
                }
                6 => {
                    let mut ks: Vec<_> = m.keys().copied().collect();
                    ks.sort_by_key(|e| e.slot());
                    let sel: Vec<_> = ks.into_iter().filter(|_| rnd(2) == 0).collect();
                    let i = rnd(4) as usize;
                    if rnd(2) == 0 {
                        let vals: Vec<u32> = sel.iter().map(|e| m[e].0).collect();
                        match i {
                            0 => {
                                w.insert_batch(
                                    &sel,
                                    &vals.iter().map(|&v| A(v)).collect::<Vec<_>>(),
                                )
                                .unwrap();
                            }
                            1 => {
                                w.insert_batch(
                                    &sel,
                                    &vals.iter().map(|&v| B(v)).collect::<Vec<_>>(),
                                )
                                .unwrap();
                            }
                            2 => {
                                w.insert_batch(
                                    &sel,
                                    &vals.iter().map(|&v| C(v)).collect::<Vec<_>>(),
                                )
                                .unwrap();
                            }
                            _ => {
                                w.insert_batch(
                                    &sel,
                                    &vals.iter().map(|&v| D(v)).collect::<Vec<_>>(),
                                )
                                .unwrap();
                            }
                        }
                        for e in &sel {
                            m.get_mut(e).unwrap().1[i] = true;
                        }
                        log.push(format!("insert_batch {i} {sel:?}"));
                    } else {
                        match i {
                            0 => {
                                w.remove_batch::<A>(&sel).unwrap();
                            }
                            1 => {
                                w.remove_batch::<B>(&sel).unwrap();
                            }
                            2 => {
                                w.remove_batch::<C>(&sel).unwrap();
                            }
                            _ => {
                                w.remove_batch::<D>(&sel).unwrap();
                            }
                        }
                        for e in &sel {
                            m.get_mut(e).unwrap().1[i] = false;
                        }
                        log.push(format!("remove_batch {i} {sel:?}"));
                    }
                }
                7 => {
                    // commit: destroys of a few, spawn of one, insert/remove of some
                    let mut cmd = CommandBuffer::try_with_capacity(64, 4096).unwrap();
                    let mut ks: Vec<_> = m.keys().copied().collect();
                    ks.sort_by_key(|e| e.slot());
                    let dead: Vec<_> = ks.iter().copied().filter(|_| rnd(4) == 0).collect();
                    for e in &dead {
                        cmd.destroy(&w.registry, *e).unwrap();
                    }
                    let t = tag;
                    let p = if m.len() < 50 {
                        Some(
                            cmd.spawn(&w.registry, (D(t), C(t), t as u64, A(t), B(t)))
                                .unwrap(),
                        )
                    } else {
                        None
                    };
                    w.commit(&mut cmd).unwrap();
                    for e in &dead {
                        m.remove(e);
                    }
                    if p.is_some() {
                        let e = w.x.iter().find(|(_, x)| **x == t as u64).unwrap().0;
                        m.insert(e, (t, [true; 4]));
                    }
                    log.push(format!("commit destroy {dead:?} spawn {}", p.is_some()));
                }
                8 => {
                    w.sort_pools();
                    log.push("sort_pools".into());
                }
                _ => {}
            }
            check(&mut w, &m, &log);
        }
        let _ = round;
    }
}
