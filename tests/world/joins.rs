//! Property test: joins (required, optional, excluded columns; aligned, bits and driver plans;
//! sorted and unsorted pools; grouped pools) against a `HashMap` model, through random
//! structural changes, both iterated externally (`next`) and internally (`for_each`).
//!
//! A second model covers standalone pools, whose entries can outlive their entity (the
//! registry releases a slot that a pool still holds): a join pairs entries only of one
//! incarnation.

use std::collections::{BTreeMap, HashMap};

use ludus::world::WorldDiagnostics;
use ludus::world::{
    cluster, join, opt, without, ClusterError, CommandBuffer, ComponentPool, EntityRegistry, Join,
    JoinPlan, WorldOps,
};
use ludus::EntityId;
use proptest::prelude::*;

use crate::support::{A, B, C, D, E};

ludus::world! {
    struct World { a: A, b: B, c: C, d: D, e: E }
    groups { ab(a: A, b: B) }
}

/// Large enough for the bits plan to span several words and for the driver plan to be
/// chosen over small pools.
const CAPACITY: usize = 200;

#[derive(Debug, Clone)]
enum Op {
    /// Spawn with the components named by the mask's bits (a, b, c, d, e).
    Spawn(u8, u32),
    /// `spawn_batch` of `n` `(C, D, E)` bundles (shared layout stamps: the aligned plan).
    SpawnBatchCde(u8, u32),
    /// `spawn_batch` of `n` `(C, D)` bundles.
    SpawnBatchCd(u8, u32),
    Destroy(usize),
    Insert(u8, usize, u32),
    Remove(u8, usize),
    /// `sort_by_slot` of c, d or e.
    Sort(u8),
    /// `WorldOps::sort_pools`: every ungrouped pool, shared stamps renamed together.
    SortAll,
    /// `cluster` of (c, d), (c, d, e), (e, c), (d, e) or (a, c) (refused while `ab` packs).
    Cluster(u8),
    /// Bump every value of c through a join (checks `&mut` yields write where they should).
    Bump(u32),
    /// One commit of a `CommandBuffer`: destroys of the picked handles, then spawns of
    /// `(C, D, E)` bundles (which may reuse the slots those destroys free: a full world
    /// replaces entities in one commit) and of `(A, B, C)` bundles (a grouped pair).
    Commit(Vec<usize>, u8, u8, u32),
    /// `CommandBuffer::respawn` of a picked handle as bundle kind `k` (0: `(C, D, E)`,
    /// 1: `(C, D)`, 2: `(C, E)`, 3: `(A, B, C)`; 4: the kind the entity already has, when it
    /// has one: in place, every pool's stamps kept), then a commit.
    Respawn(usize, u8, u32),
}

/// The components (a, b, c, d, e) of respawn bundle kind `k`.
const RESPAWN_KINDS: [[bool; 5]; 4] = [
    [false, false, true, true, true],
    [false, false, true, true, false],
    [false, false, true, false, true],
    [true, true, true, false, false],
];

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (1u8..32, any::<u32>()).prop_map(|(m, v)| Op::Spawn(m, v)),
        1 => (0u8..40, any::<u32>()).prop_map(|(n, v)| Op::SpawnBatchCde(n, v)),
        1 => (0u8..40, any::<u32>()).prop_map(|(n, v)| Op::SpawnBatchCd(n, v)),
        3 => any::<usize>().prop_map(Op::Destroy),
        4 => (0u8..5, any::<usize>(), any::<u32>()).prop_map(|(k, i, v)| Op::Insert(k, i, v)),
        3 => (0u8..5, any::<usize>()).prop_map(|(k, i)| Op::Remove(k, i)),
        1 => (2u8..5).prop_map(Op::Sort),
        1 => Just(Op::SortAll),
        2 => (0u8..5).prop_map(Op::Cluster),
        1 => any::<u32>().prop_map(Op::Bump),
        2 => (proptest::collection::vec(any::<usize>(), 0..6), 0u8..6, 0u8..3, any::<u32>())
            .prop_map(|(d, n, g, v)| Op::Commit(d, n, g, v)),
        3 => (any::<usize>(), 0u8..5, any::<u32>()).prop_map(|(i, k, v)| Op::Respawn(i, k, v)),
    ]
}

/// Per entity, the value of each component it holds (index: a, b, c, d, e).
type Model = BTreeMap<EntityId, [Option<u32>; 5]>;

fn insert(w: &mut World, k: u8, e: EntityId, v: u32) {
    match k {
        0 => w.insert(e, A(v)).map(drop),
        1 => w.insert(e, B(v)).map(drop),
        2 => w.insert(e, C(v)).map(drop),
        3 => w.insert(e, D(v)).map(drop),
        _ => w.insert(e, E(v)).map(drop),
    }
    .unwrap();
}

fn remove(w: &mut World, k: u8, e: EntityId) {
    match k {
        0 => w.remove::<A>(e).map(drop),
        1 => w.remove::<B>(e).map(drop),
        2 => w.remove::<C>(e).map(drop),
        3 => w.remove::<D>(e).map(drop),
        _ => w.remove::<E>(e).map(drop),
    }
    .unwrap();
}

/// The model's expected rows of a join: entities holding every `required` component and
/// none of the `excluded`, each with the values of `yielded` (absent optional ones: `None`).
fn expected(
    m: &Model,
    required: &[usize],
    excluded: &[usize],
    yielded: &[usize],
) -> Vec<(EntityId, Vec<Option<u32>>)> {
    let mut rows: Vec<_> = m
        .iter()
        .filter(|(_, r)| required.iter().all(|&k| r[k].is_some()))
        .filter(|(_, r)| excluded.iter().all(|&k| r[k].is_none()))
        .map(|(&e, r)| (e, yielded.iter().map(|&k| r[k]).collect()))
        .collect();
    rows.sort_by_key(|(e, _)| *e);
    rows
}

/// Rows of a join, sorted by entity, through `next` or through `for_each`.
/// `mode` 0: `for_each`; 1: a `for` loop (`next`); 2: three items by `next`, the rest by
/// `for_each` (a join must not mix two ways of finding indices).
fn rows<C, F>(j: Join<C>, mode: u8, mut row: F) -> Vec<(EntityId, Vec<Option<u32>>)>
where
    Join<C>: Iterator,
    F: FnMut(<Join<C> as Iterator>::Item) -> (EntityId, Vec<Option<u32>>),
{
    let mut out = Vec::new();
    let mut j = j;
    let first = if mode == 2 { 3 } else { 0 };
    for item in j.by_ref().take(first) {
        out.push(row(item));
    }
    if mode == 1 {
        for item in j {
            out.push(row(item));
        }
    } else {
        j.for_each(|item| out.push(row(item)));
    }
    let n = out.len();
    out.sort_by_key(|(e, _)| *e);
    out.dedup_by_key(|(e, _)| *e);
    assert_eq!(out.len(), n, "a join yielded an entity twice");
    out
}

fn check_joins(w: &mut World, m: &Model) {
    assert!(
        w.check_clusters(),
        "a cluster's runs disagree with its pools' membership"
    );
    assert!(
        w.check_pools(),
        "a pool's sparse map, bitset or order fact is inexact"
    );
    for external in 0..3u8 {
        let got = rows(join((&w.c, &w.d)), external, |(e, (c, d))| {
            (e, vec![Some(c.0), Some(d.0)])
        });
        assert_eq!(got, expected(m, &[2, 3], &[], &[2, 3]), "c d ({external})");
        let got = rows(join((&w.c, &w.d, &w.e)), external, |(e, (c, d, x))| {
            (e, vec![Some(c.0), Some(d.0), Some(x.0)])
        });
        assert_eq!(got, expected(m, &[2, 3, 4], &[], &[2, 3, 4]), "c d e");
        let got = rows(join((&w.e, &w.d, &w.c)), external, |(e, (x, d, c))| {
            (e, vec![Some(c.0), Some(d.0), Some(x.0)])
        });
        assert_eq!(got, expected(m, &[2, 3, 4], &[], &[2, 3, 4]), "e d c");
        let got = rows(
            join((opt(&w.d), &w.c, without(&w.e))),
            external,
            |(e, (d, c, ()))| (e, vec![Some(c.0), d.map(|d| d.0)]),
        );
        assert_eq!(got, expected(m, &[2], &[4], &[2, 3]), "opt d, c, without e");
        let got = rows(
            join((&w.a, &w.c, opt(&w.b), without(&w.d))),
            external,
            |(e, (a, c, b, ()))| (e, vec![Some(a.0), b.map(|b| b.0), Some(c.0)]),
        );
        assert_eq!(
            got,
            expected(m, &[0, 2], &[3], &[0, 1, 2]),
            "a c opt b without d"
        );
        let got = rows(join((&w.b, &w.a)), external, |(e, (b, a))| {
            (e, vec![Some(a.0), Some(b.0)])
        });
        assert_eq!(got, expected(m, &[0, 1], &[], &[0, 1]), "grouped b a");
        let got = rows(
            join((&w.e, opt(&w.a), opt(&w.c))),
            external,
            |(e, (x, a, c))| (e, vec![a.map(|a| a.0), c.map(|c| c.0), Some(x.0)]),
        );
        assert_eq!(got, expected(m, &[4], &[], &[0, 2, 4]), "e opt a opt c");
    }
}

fn run(ops: Vec<Op>) {
    let mut w = World::try_new(CAPACITY).unwrap();
    let mut m = Model::new();
    let mut handles: Vec<EntityId> = Vec::new();
    for op in ops {
        match op {
            Op::Spawn(mask, v) => {
                if w.registry.available() == 0 {
                    continue;
                }
                let e = w.spawn((C(v),)).unwrap();
                w.remove::<C>(e).unwrap();
                let mut row = [None; 5];
                for k in 0..5u8 {
                    if mask & (1 << k) != 0 {
                        insert(&mut w, k, e, v.wrapping_add(k.into()));
                        row[usize::from(k)] = Some(v.wrapping_add(k.into()));
                    }
                }
                m.insert(e, row);
                handles.push(e);
            }
            Op::SpawnBatchCde(n, v) | Op::SpawnBatchCd(n, v) => {
                let n = usize::from(n).min(w.registry.available());
                let cde = matches!(op, Op::SpawnBatchCde(..));
                let mut out = vec![EntityId::from_raw_parts(0, 0, 0); n];
                if cde {
                    w.spawn_batch_into((0..n as u32).map(|i| (C(v ^ i), D(i), E(v))), &mut out)
                        .unwrap();
                } else {
                    w.spawn_batch_into((0..n as u32).map(|i| (C(v ^ i), D(i))), &mut out)
                        .unwrap();
                }
                for (i, &e) in out.iter().enumerate() {
                    let i = i as u32;
                    m.insert(e, [None, None, Some(v ^ i), Some(i), cde.then_some(v)]);
                    handles.push(e);
                }
            }
            Op::Destroy(i) => {
                if handles.is_empty() {
                    continue;
                }
                let e = handles.swap_remove(i % handles.len());
                w.destroy(e).unwrap();
                m.remove(&e);
            }
            Op::Insert(k, i, v) => {
                if handles.is_empty() {
                    continue;
                }
                let e = handles[i % handles.len()];
                insert(&mut w, k, e, v);
                m.get_mut(&e).unwrap()[usize::from(k)] = Some(v);
            }
            Op::Remove(k, i) => {
                if handles.is_empty() {
                    continue;
                }
                let e = handles[i % handles.len()];
                remove(&mut w, k, e);
                m.get_mut(&e).unwrap()[usize::from(k)] = None;
            }
            Op::Sort(k) => {
                let sorted = match k {
                    2 => w.c.sort_by_slot() && w.c.is_slot_sorted(),
                    3 => w.d.sort_by_slot() && w.d.is_slot_sorted(),
                    _ => w.e.sort_by_slot() && w.e.is_slot_sorted(),
                };
                assert!(sorted);
                // Sorting keeps every value with its entity.
                for (e, row) in &m {
                    assert_eq!(w.get::<C>(*e).map(|c| c.0), row[2]);
                    assert_eq!(w.get::<D>(*e).map(|d| d.0), row[3]);
                    assert_eq!(w.get::<E>(*e).map(|x| x.0), row[4]);
                }
            }
            Op::Cluster(k) => {
                let done = match k {
                    0 => cluster((&mut w.c, &mut w.d)),
                    1 => cluster((&mut w.c, &mut w.d, &mut w.e)),
                    2 => cluster((&mut w.e, &mut w.c)),
                    3 => cluster((&mut w.d, &mut w.e)),
                    _ => cluster((&mut w.a, &mut w.c)),
                };
                let packs = m.values().any(|row| row[0].is_some() && row[1].is_some());
                if k == 4 && packs {
                    assert_eq!(done, Err(ClusterError::Grouped));
                } else {
                    done.unwrap();
                }
                let nonempty = |n: usize| n > 0;
                if k == 1 && nonempty(w.c.len()) && nonempty(w.d.len()) && nonempty(w.e.len()) {
                    assert_eq!(join((&w.c, &w.d, &w.e)).plan(), JoinPlan::Runs);
                    assert_eq!(join((&w.e, &w.c)).plan(), JoinPlan::Runs);
                }
                // Clustering keeps every value with its entity.
                for (e, row) in &m {
                    assert_eq!(w.get::<A>(*e).map(|x| x.0), row[0]);
                    assert_eq!(w.get::<C>(*e).map(|x| x.0), row[2]);
                    assert_eq!(w.get::<D>(*e).map(|x| x.0), row[3]);
                    assert_eq!(w.get::<E>(*e).map(|x| x.0), row[4]);
                }
            }
            Op::SortAll => {
                w.sort_pools();
                assert!(w.c.is_slot_sorted() && w.d.is_slot_sorted() && w.e.is_slot_sorted());
            }
            Op::Bump(v) => {
                join((&mut w.c, &w.d)).for_each(|(_, (c, d))| c.0 = c.0.wrapping_add(d.0 ^ v));
                for (e, (c, _)) in join((&mut w.c, opt(&mut w.e))) {
                    c.0 = c.0.wrapping_mul(3);
                    assert!(m.contains_key(&e));
                }
                for row in m.values_mut() {
                    if let (Some(c), Some(d)) = (row[2], row[3]) {
                        row[2] = Some(c.wrapping_add(d ^ v));
                    }
                    if let Some(c) = row[2] {
                        row[2] = Some(c.wrapping_mul(3));
                    }
                }
            }
            Op::Commit(picks, n, g, v) => {
                let mut cmd = CommandBuffer::try_with_capacity(64, 1024).unwrap();
                let mut doomed = Vec::new();
                for i in picks {
                    if handles.is_empty() {
                        break;
                    }
                    let e = handles.swap_remove(i % handles.len());
                    cmd.destroy(&w.registry, e).unwrap();
                    doomed.push(e);
                }
                let room = w.registry.available() + doomed.len();
                let (n, g) = (usize::from(n).min(room), usize::from(g));
                let g = g.min(room - n);
                let cde: Vec<_> = (0..n as u32)
                    .map(|i| cmd.spawn(&w.registry, (C(v ^ i), D(i), E(v))).unwrap())
                    .collect();
                let abc: Vec<_> = (0..g as u32)
                    .map(|i| cmd.spawn(&w.registry, (A(i), B(v), C(i))).unwrap())
                    .collect();
                w.commit(&mut cmd).unwrap();
                for e in doomed {
                    m.remove(&e);
                }
                for (i, p) in cde.into_iter().enumerate() {
                    let e = cmd.resolve(p).unwrap();
                    let i = i as u32;
                    m.insert(e, [None, None, Some(v ^ i), Some(i), Some(v)]);
                    handles.push(e);
                }
                for (i, p) in abc.into_iter().enumerate() {
                    let e = cmd.resolve(p).unwrap();
                    let i = i as u32;
                    m.insert(e, [Some(i), Some(v), Some(i), None, None]);
                    handles.push(e);
                }
            }
            Op::Respawn(i, k, v) => {
                if handles.is_empty() {
                    continue;
                }
                let at = i % handles.len();
                let e = handles[at];
                let held = m[&e].map(|x| x.is_some());
                let own = RESPAWN_KINDS.iter().position(|kind| *kind == held);
                let kind = match (k, own) {
                    (4, Some(own)) => own,
                    _ => usize::from(k % 4),
                };
                let plans = |w: &World| {
                    [
                        join((&w.c, &w.d, &w.e)).plan(),
                        join((&w.c, &w.d)).plan(),
                        join((&w.e, &w.c)).plan(),
                    ]
                };
                let before = plans(&w);
                let mut cmd = CommandBuffer::try_with_capacity(8, 64).unwrap();
                let r = &w.registry;
                let p = match kind {
                    0 => cmd.respawn(r, e, (C(v), D(v ^ 1), E(v ^ 2))),
                    1 => cmd.respawn(r, e, (C(v), D(v ^ 1))),
                    2 => cmd.respawn(r, e, (C(v), E(v ^ 2))),
                    _ => cmd.respawn(r, e, (A(v), B(v ^ 3), C(v))),
                }
                .unwrap();
                w.commit(&mut cmd).unwrap();
                let new = cmd.resolve(p).unwrap();
                assert!(!w.registry.is_alive(e));
                assert_eq!(new.slot(), e.slot(), "the replacement takes the freed slot");
                m.remove(&e);
                let values = [Some(v), Some(v ^ 3), Some(v), Some(v ^ 1), Some(v ^ 2)];
                let mut row = [None; 5];
                for c in 0..5 {
                    if RESPAWN_KINDS[kind][c] {
                        row[c] = values[c];
                    }
                }
                m.insert(new, row);
                handles[at] = new;
                if own == Some(kind) {
                    // In place: no row moved, so every layout stamp, cluster, order fact and
                    // count a plan is chosen by stays, and so does every plan.
                    assert_eq!(plans(&w), before);
                }
            }
        }
        check_joins(&mut w, &m);
    }
}

/// Standalone pools: entries may outlive their entity.
#[derive(Debug, Clone)]
enum Raw {
    Create,
    Release(usize),
    Insert(bool, usize, u32),
    Remove(bool, usize),
    Sort(bool),
}

fn raw_op() -> impl Strategy<Value = Raw> {
    prop_oneof![
        3 => Just(Raw::Create),
        2 => any::<usize>().prop_map(Raw::Release),
        4 => (any::<bool>(), any::<usize>(), any::<u32>()).prop_map(|(p, i, v)| Raw::Insert(p, i, v)),
        2 => (any::<bool>(), any::<usize>()).prop_map(|(p, i)| Raw::Remove(p, i)),
        1 => any::<bool>().prop_map(Raw::Sort),
    ]
}

fn run_raw(ops: Vec<Raw>) {
    let mut reg = EntityRegistry::try_with_capacity(CAPACITY).unwrap();
    let mut p = ComponentPool::<u32>::try_new(&mut reg).unwrap();
    let mut q = ComponentPool::<u32>::try_new(&mut reg).unwrap();
    // Every handle ever created (alive or not): inserts go to alive ones only.
    let mut made: Vec<EntityId> = Vec::new();
    // Per pool: slot → (the handle its entry was stored for, value).
    let mut mp: HashMap<u32, (EntityId, u32)> = HashMap::new();
    let mut mq: HashMap<u32, (EntityId, u32)> = HashMap::new();
    for op in ops {
        match op {
            Raw::Create => {
                if let Ok(e) = reg.try_create() {
                    made.push(e);
                }
            }
            Raw::Release(i) if !made.is_empty() => {
                let _ = reg.try_release(made[i % made.len()]);
            }
            Raw::Insert(first, i, v) if !made.is_empty() => {
                let e = made[i % made.len()];
                let (pool, model) = if first {
                    (&mut p, &mut mp)
                } else {
                    (&mut q, &mut mq)
                };
                if pool.insert(&mut reg, e, v).is_ok() {
                    model.insert(e.slot(), (e, v));
                }
            }
            Raw::Remove(first, i) if !made.is_empty() => {
                let e = made[i % made.len()];
                let (pool, model) = if first {
                    (&mut p, &mut mp)
                } else {
                    (&mut q, &mut mq)
                };
                if pool.remove(&mut reg, e).ok().flatten().is_some() {
                    model.remove(&e.slot());
                }
            }
            Raw::Sort(first) => {
                assert!(if first {
                    p.sort_by_slot()
                } else {
                    q.sort_by_slot()
                });
            }
            _ => {}
        }
        let mut want: Vec<(EntityId, Vec<Option<u32>>)> = mp
            .values()
            .filter_map(|&(e, v)| match mq.get(&e.slot()) {
                Some(&(f, w)) if f == e => Some((e, vec![Some(v), Some(w)])),
                _ => None,
            })
            .collect();
        want.sort_by_key(|(e, _)| *e);
        for external in 0..3u8 {
            let got = rows(join((&p, &q)), external, |(e, (a, b))| {
                (e, vec![Some(*a), Some(*b)])
            });
            assert_eq!(got, want, "standalone join ({external})");
            let got = rows(join((&q, opt(&p))), external, |(e, (b, a))| {
                (e, vec![a.copied(), Some(*b)])
            });
            let mut with_opt: Vec<_> = mq
                .values()
                .map(|&(e, w)| {
                    let a = mp.get(&e.slot()).filter(|(f, _)| *f == e).map(|&(_, v)| v);
                    (e, vec![a, Some(w)])
                })
                .collect();
            with_opt.sort_by_key(|(e, _)| *e);
            assert_eq!(got, with_opt, "standalone opt join ({external})");
            let got = rows(join((&q, without(&p))), external, |(e, (b, ()))| {
                (e, vec![Some(*b)])
            });
            let want_without: Vec<_> = with_opt
                .iter()
                .filter(|(_, r)| r[0].is_none())
                .map(|(e, r)| (*e, vec![r[1]]))
                .collect();
            assert_eq!(got, want_without, "standalone without join ({external})");
        }
    }
}

proptest! {
    #![proptest_config(crate::support::proptest_config_unpersisted(256, 2))]

    #[test]
    fn world_joins_match_the_model(ops in proptest::collection::vec(op(), 1..if cfg!(miri) { 12 } else { 150 })) {
        run(ops);
    }

    #[test]
    fn standalone_joins_pair_one_incarnation(ops in proptest::collection::vec(raw_op(), 1..if cfg!(miri) { 20 } else { 200 })) {
        run_raw(ops);
    }
}

/// The three plans on fixed worlds: spawned together (aligned), a sparse third pool (bits),
/// a tiny pool beside a wide slot range (driver).
#[test]
fn every_plan_agrees_with_the_model() {
    // Smaller under Miri; the plans' thresholds still pick the same plans.
    let (cap, n) = if cfg!(miri) { (512, 300) } else { (4096, 3000) };
    let mut w = World::try_new(cap).unwrap();
    let mut out = vec![EntityId::from_raw_parts(0, 0, 0); n];
    w.spawn_batch_into((0..n as u32).map(|i| (C(i), D(i * 2), E(i * 3))), &mut out)
        .unwrap();
    assert_eq!(join((&w.c, &w.d, &w.e)).plan(), JoinPlan::Aligned);
    let sum: u64 = join((&w.c, &w.d, &w.e))
        .map(|(_, (c, d, e))| u64::from(c.0 + d.0 + e.0))
        .sum();
    assert_eq!(sum, (0..n as u64).map(|i| 6 * i).sum::<u64>());
    for &e in out.iter().step_by(7) {
        w.destroy(e).unwrap();
    }
    // The same swap removal in each pool: still aligned; sorting them all keeps them aligned.
    assert_eq!(join((&w.c, &w.d, &w.e)).plan(), JoinPlan::Aligned);
    assert!(!w.c.is_slot_sorted());
    assert_eq!(w.sort_pools(), 3);
    assert!(w.c.is_slot_sorted() && w.d.is_slot_sorted() && w.e.is_slot_sorted());
    assert_eq!(join((&w.c, &w.d, &w.e)).plan(), JoinPlan::Aligned);
    assert_eq!(w.sort_pools(), 0);
    let left = join((&w.c, &w.d, &w.e)).count();
    assert_eq!(left, n - out.iter().step_by(7).count());
    let keep = out[n / 3 + 2 - (n / 3 + 2) % 7 + 1];
    for &e in &out {
        if e != keep && w.registry.is_alive(e) {
            w.remove::<D>(e).unwrap();
        }
    }
    let j = join((&w.c, &w.d));
    assert_eq!(j.plan(), JoinPlan::Driver);
    assert_eq!(j.map(|(e, _)| e).collect::<Vec<_>>(), vec![keep]);
    // Sorted (by `sort_pools` above): the bits plan finds each row by rank.
    let j = join((&w.c, without(&w.d)));
    assert_eq!(j.plan(), JoinPlan::Bits);
    assert_eq!(j.count(), left - 1);
    // Unsorted, and every row of the smallest required pool matches: it drives.
    assert_ne!(out[1], keep);
    w.destroy(out[1]).unwrap();
    let left = left - 1;
    assert!(!w.c.is_slot_sorted());
    let j = join((&w.c, without(&w.d)));
    assert_eq!(j.plan(), JoinPlan::Driver);
    assert_eq!(j.count(), left - 1);
    assert!(w.c.sort_by_slot() && w.c.is_slot_sorted());
    let mut seen: Vec<EntityId> = join((&w.c, &w.e)).map(|(e, _)| e).collect();
    assert_eq!(seen.len(), left);
    seen.sort();
    seen.dedup();
    assert_eq!(seen.len(), left);
}

/// The aligned plan's walk hands out `&mut` items that outlive it: the first by `next`, the
/// rest collected by `fold`, then all written through after the walk returned (under Miri
/// this checks the borrows the walk derives from its slice arguments).
#[test]
fn aligned_items_outlive_the_walk() {
    let n = if cfg!(miri) { 40 } else { 1000 };
    let mut w = World::try_new(n).unwrap();
    let mut out = vec![EntityId::from_raw_parts(0, 0, 0); n];
    w.spawn_batch_into((0..n as u32).map(|i| (C(i), D(i * 2))), &mut out)
        .unwrap();
    let mut j = join((&mut w.c, &w.d));
    assert_eq!(j.plan(), JoinPlan::Aligned);
    let first = j.next().unwrap();
    let mut items = j.fold(vec![first], |mut v, item| {
        v.push(item);
        v
    });
    assert_eq!(items.len(), n);
    for (e, (c, d)) in &mut items {
        assert_eq!(c.0 * 2, d.0, "{e:?}");
        c.0 += d.0;
    }
    let got: Vec<(EntityId, u32)> = items.iter().map(|(e, (c, _))| (*e, c.0)).collect();
    drop(items);
    assert_eq!(got.iter().map(|g| g.0).collect::<Vec<_>>(), out);
    for (e, c) in got {
        assert_eq!(w.c.get(e).map(|c| c.0), Some(c));
        assert_eq!(c % 3, 0);
    }
}

/// Clustered pools: joins over any of them take the runs plan (external, internal and mixed
/// iteration, shared and exclusive columns, a cluster of three joined two at a time), and a
/// change of any one pool's keys sends its joins back to the other plans. Refusals: pools of
/// two worlds, a packing group's pool, standalone pools.
#[test]
fn clustered_joins_zip_runs_until_a_pool_changes() {
    let mut w = World::try_new(CAPACITY).unwrap();
    let mut m = Model::new();
    let mut handles = Vec::new();
    for i in 0..(CAPACITY as u32 - 20) {
        let mask = (i.wrapping_mul(0x9e37_79b9) >> 7) as u8 & 0b11100;
        let e = w.spawn((C(i),)).unwrap();
        w.remove::<C>(e).unwrap();
        let mut row = [None; 5];
        for k in 2..5u8 {
            if mask & (1 << k) != 0 {
                insert(&mut w, k, e, i + u32::from(k));
                row[usize::from(k)] = Some(i + u32::from(k));
            }
        }
        m.insert(e, row);
        handles.push(e);
    }
    // Scatter the dense orders first: destroy every fifth entity.
    for e in handles.iter().step_by(5) {
        w.destroy(*e).unwrap();
        m.remove(e);
    }
    assert_eq!(cluster((&mut w.c, &mut w.d, &mut w.e)), Ok(()));
    for plan in [
        join((&w.c, &w.d)).plan(),
        join((&w.e, &w.c)).plan(),
        join((&w.d, &w.e, &w.c)).plan(),
    ] {
        assert_eq!(plan, JoinPlan::Runs);
    }
    check_joins(&mut w, &m);
    // Again, unchanged: a no-op; the same pools in another order or another set: re-clustered.
    assert_eq!(cluster((&mut w.c, &mut w.d, &mut w.e)), Ok(()));
    assert_eq!(join((&w.c, &w.e)).plan(), JoinPlan::Runs);
    assert_eq!(cluster((&mut w.e, &mut w.d)), Ok(()));
    assert_eq!(join((&w.d, &w.e)).plan(), JoinPlan::Runs);
    assert_ne!(
        join((&w.c, &w.d)).plan(),
        JoinPlan::Runs,
        "c is of the older cluster"
    );
    check_joins(&mut w, &m);
    assert_eq!(cluster((&mut w.c, &mut w.d, &mut w.e)), Ok(()));
    // Exclusive columns through the runs, every mode.
    for mode in 0..3u8 {
        let got = rows(join((&mut w.d, &w.c)), mode, |(e, (d, c))| {
            d.0 = d.0.wrapping_add(c.0);
            (e, vec![Some(c.0), Some(d.0)])
        });
        for row in m.values_mut() {
            if let (Some(c), Some(d)) = (row[2], row[3]) {
                row[3] = Some(d.wrapping_add(c));
            }
        }
        assert_eq!(got, expected(&m, &[2, 3], &[], &[2, 3]), "mode {mode}");
    }
    check_joins(&mut w, &m);
    // One pool changes its keys: its joins leave the runs plan and still match the model.
    let e = *m.keys().find(|e| m[e][3].is_none()).unwrap();
    w.insert(e, D(7)).unwrap();
    m.get_mut(&e).unwrap()[3] = Some(7);
    assert_ne!(join((&w.c, &w.d)).plan(), JoinPlan::Runs);
    assert_eq!(
        join((&w.c, &w.e)).plan(),
        JoinPlan::Runs,
        "c and e did not change"
    );
    check_joins(&mut w, &m);
    // Pools of two worlds never cluster together; a packing group's pool is refused.
    let mut other = World::try_new(8).unwrap();
    assert_eq!(
        cluster((&mut w.c, &mut other.d)),
        Err(ClusterError::ForeignPool)
    );
    let ab = w.spawn((A(1), B(2))).unwrap();
    assert_eq!(cluster((&mut w.a, &mut w.c)), Err(ClusterError::Grouped));
    // Standalone pools may hold two incarnations of one slot: never clustered.
    let mut reg = EntityRegistry::try_with_capacity(4).unwrap();
    let mut p = ComponentPool::<u32>::try_new(&mut reg).unwrap();
    let mut q = ComponentPool::<u32>::try_new(&mut reg).unwrap();
    assert_eq!(cluster((&mut p, &mut q)), Err(ClusterError::Standalone));
    assert!(w.contains::<A>(ab));
}
