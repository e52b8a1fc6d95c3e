//! The exact sparse map and `Probe::Exact` (a join's probe of a shared world pool that trusts
//! `sparse[slot]` without a key compare): a random world of five pools (one owned group)
//! against a model, through batches that fail midway, whole-pool removals, commits that reuse
//! freed slots, in-place respawns, `sort_pools`, `cluster` and panics in callbacks, checking
//! every pool's index (`check_pools`) and seven joins after each step; and standalone pools
//! holding stale entries, which are never trusted without a compare.

use std::collections::BTreeMap;
use std::panic::{catch_unwind, AssertUnwindSafe};

use ludus::world::WorldDiagnostics;
use ludus::world::{
    cluster, join, opt, without, CommandBuffer, ComponentPool, EntityRegistry, WorldOps,
};
use ludus::EntityId;

use crate::support::{Rng, A, B, C, G, H};

ludus::world! {
    pub struct W { pub a: A, pub b: B, pub c: C, pub g: G, pub h: H }
    groups { gh(g: G, h: H) }
}

const CAP: usize = if cfg!(miri) { 80 } else { 300 };

type Model = BTreeMap<EntityId, [Option<u32>; 5]>;

fn pick(m: &Model, r: &mut Rng) -> Option<EntityId> {
    if m.is_empty() {
        return None;
    }
    m.keys().nth(r.below(m.len())).copied()
}

fn ins(w: &mut W, k: usize, e: EntityId, v: u32) {
    match k {
        0 => w.insert(e, A(v)).map(drop),
        1 => w.insert(e, B(v)).map(drop),
        2 => w.insert(e, C(v)).map(drop),
        3 => w.insert(e, G(v)).map(drop),
        _ => w.insert(e, H(v)).map(drop),
    }
    .unwrap()
}

fn rem(w: &mut W, k: usize, e: EntityId) {
    match k {
        0 => w.remove::<A>(e).map(drop),
        1 => w.remove::<B>(e).map(drop),
        2 => w.remove::<C>(e).map(drop),
        3 => w.remove::<G>(e).map(drop),
        _ => w.remove::<H>(e).map(drop),
    }
    .unwrap()
}

fn expect(
    m: &Model,
    req: &[usize],
    exc: &[usize],
    y: &[usize],
) -> Vec<(EntityId, Vec<Option<u32>>)> {
    m.iter()
        .filter(|(_, r)| req.iter().all(|&k| r[k].is_some()) && exc.iter().all(|&k| r[k].is_none()))
        .map(|(&e, r)| (e, y.iter().map(|&k| r[k]).collect()))
        .collect()
}

fn sorted(mut v: Vec<(EntityId, Vec<Option<u32>>)>) -> Vec<(EntityId, Vec<Option<u32>>)> {
    v.sort_by_key(|x| x.0);
    v
}

fn check(w: &mut W, m: &Model, ctx: &str) {
    assert_eq!(w.registry.len(), m.len(), "alive count after {ctx}");
    assert!(w.check_pools(), "check_pools after {ctx}");
    assert!(w.check_groups(), "check_groups after {ctx}");
    for (&e, r) in m {
        assert_eq!(w.get::<A>(e).map(|x| x.0), r[0], "{ctx}");
        assert_eq!(w.get::<B>(e).map(|x| x.0), r[1], "{ctx}");
        assert_eq!(w.get::<C>(e).map(|x| x.0), r[2], "{ctx}");
    }
    // Shared joins (Exact candidates), every driver order.
    let got = sorted(
        join((&w.a, &w.b))
            .map(|(e, (a, b))| (e, vec![Some(a.0), Some(b.0)]))
            .collect(),
    );
    assert_eq!(got, expect(m, &[0, 1], &[], &[0, 1]), "a b {ctx}");
    let got = sorted(
        join((&w.b, &w.a))
            .map(|(e, (b, a))| (e, vec![Some(a.0), Some(b.0)]))
            .collect(),
    );
    assert_eq!(got, expect(m, &[0, 1], &[], &[0, 1]), "b a {ctx}");
    let mut got = Vec::new();
    join((&w.c, opt(&w.a), without(&w.b)))
        .for_each(|(e, (c, a, ()))| got.push((e, vec![Some(c.0), a.map(|a| a.0)])));
    assert_eq!(
        sorted(got),
        expect(m, &[2], &[1], &[2, 0]),
        "c opt a without b {ctx}"
    );
    let got = sorted(
        join((&w.a, opt(&w.c), without(&w.g)))
            .map(|(e, (a, c, ()))| (e, vec![Some(a.0), c.map(|c| c.0)]))
            .collect(),
    );
    assert_eq!(
        got,
        expect(m, &[0], &[3], &[0, 2]),
        "a opt c without g {ctx}"
    );
    let got = sorted(
        join((&w.g, &w.a, &w.h, opt(&w.b)))
            .map(|(e, (g, a, h, b))| (e, vec![Some(g.0), Some(a.0), Some(h.0), b.map(|b| b.0)]))
            .collect(),
    );
    assert_eq!(
        got,
        expect(m, &[3, 0, 4], &[], &[3, 0, 4, 1]),
        "g a h opt b {ctx}"
    );
    let got = sorted(
        join((&w.a, &w.b, &w.c))
            .map(|(e, (a, b, c))| (e, vec![Some(a.0), Some(b.0), Some(c.0)]))
            .collect(),
    );
    assert_eq!(got, expect(m, &[0, 1, 2], &[], &[0, 1, 2]), "a b c {ctx}");
    // A mutable column with shared probes.
    let W { a, b, c, .. } = w;
    let mut got = Vec::new();
    join((&mut *a, &*b, opt(&*c)))
        .for_each(|(e, (a, b, c))| got.push((e, vec![Some(a.0), Some(b.0), c.map(|c| c.0)])));
    assert_eq!(
        sorted(got),
        expect(m, &[0, 1], &[], &[0, 1, 2]),
        "mut a b opt c {ctx}"
    );
}

fn run(seed: u64, steps: usize) {
    let mut r = Rng(seed | 1);
    let mut w = W::try_new(CAP).unwrap();
    w.begin_structural();
    let mut m = Model::new();
    let mut dead: Vec<EntityId> = Vec::new();
    for step in 0..steps {
        let op = r.below(16);
        let v = r.next() as u32;
        let ctx = format!("seed {seed} step {step} op {op}");
        match op {
            0 | 1 => {
                // spawn a random subset via create + inserts
                if m.len() + 1 < CAP {
                    let e = w.create().unwrap();
                    let mut row = [None; 5];
                    for (k, cell) in row.iter_mut().enumerate() {
                        if r.below(2) == 0 {
                            ins(&mut w, k, e, v ^ k as u32);
                            *cell = Some(v ^ k as u32);
                        }
                    }
                    m.insert(e, row);
                }
            }
            2 => {
                if m.len() + 40 < CAP {
                    let n = r.below(40);
                    let mut out = vec![EntityId::from_raw_parts(0, 0, 0); n];
                    let got = w
                        .spawn_batch_into((0..n as u32).map(|i| (A(v ^ i), B(i))), &mut out)
                        .unwrap();
                    for e in &out[..got] {
                        let i = out.iter().position(|x| x == e).unwrap() as u32;
                        m.insert(*e, [Some(v ^ i), Some(i), None, None, None]);
                    }
                }
            }
            3 => {
                if let Some(e) = pick(&m, &mut r) {
                    w.destroy(e).unwrap();
                    m.remove(&e);
                    dead.push(e);
                }
            }
            4 | 5 => {
                if let Some(e) = pick(&m, &mut r) {
                    let k = r.below(5);
                    ins(&mut w, k, e, v);
                    m.get_mut(&e).unwrap()[k] = Some(v);
                }
            }
            6 | 7 => {
                if let Some(e) = pick(&m, &mut r) {
                    let k = r.below(5);
                    rem(&mut w, k, e);
                    m.get_mut(&e).unwrap()[k] = None;
                }
            }
            8 => {
                // remove_batch of b: large or small, maybe with a dead entity somewhere
                let mut batch: Vec<EntityId> =
                    m.keys().copied().filter(|_| r.below(3) != 0).collect();
                if r.below(4) == 0 {
                    batch = m.keys().copied().collect();
                }
                let poison = !dead.is_empty() && r.below(2) == 0;
                if poison {
                    let at = r.below(batch.len() + 1);
                    batch.insert(at, dead[r.below(dead.len())]);
                }
                if r.below(3) == 0 && !batch.is_empty() {
                    let d = batch[0];
                    batch.push(d);
                }
                let res = if r.below(2) == 0 {
                    w.remove_batch::<B>(&batch)
                } else {
                    w.remove_batch::<A>(&batch).map(|x| x + 1_000_000)
                };
                match res {
                    Ok(n) => {
                        assert!(!poison, "{ctx}");
                        let k = if n >= 1_000_000 { 0 } else { 1 };
                        for e in &batch {
                            if let Some(row) = m.get_mut(e) {
                                row[k] = None;
                            }
                        }
                    }
                    Err(_) => assert!(poison, "{ctx}"),
                }
            }
            9 => {
                // insert_batch of c (ungrouped) or g (grouped) with maybe a dead entity
                let mut batch: Vec<EntityId> =
                    m.keys().copied().filter(|_| r.below(2) == 0).collect();
                let poison = !dead.is_empty() && r.below(2) == 0;
                if poison {
                    let at = r.below(batch.len() + 1);
                    batch.insert(at, dead[r.below(dead.len())]);
                }
                if !batch.is_empty() && r.below(2) == 0 {
                    let d = batch[r.below(batch.len())];
                    batch.push(d);
                }
                let k = if r.below(2) == 0 { 2 } else { 0 };
                let vals: Vec<u32> = (0..batch.len() as u32).map(|i| v ^ i).collect();
                let res = if k == 2 {
                    w.insert_batch(&batch, &vals.iter().map(|&x| C(x)).collect::<Vec<_>>())
                } else {
                    w.insert_batch(&batch, &vals.iter().map(|&x| A(x)).collect::<Vec<_>>())
                };
                match res {
                    Ok(_) => {
                        assert!(!poison, "{ctx}");
                        for (e, x) in batch.iter().zip(&vals) {
                            m.get_mut(e).unwrap()[k] = Some(*x);
                        }
                    }
                    Err(_) => assert!(poison, "{ctx}"),
                }
            }
            10 => {
                // commit: destroys then spawns (reuse slots), or a respawn in place
                let mut cmd = CommandBuffer::try_with_capacity(64, 2048).unwrap();
                if r.below(2) == 0 && m.len() + 8 < CAP {
                    let mut victims = Vec::new();
                    for _ in 0..r.below(5) {
                        if let Some(e) = pick(&m, &mut r) {
                            if !victims.contains(&e) {
                                victims.push(e);
                                cmd.destroy(&w.registry, e).unwrap();
                            }
                        }
                    }
                    let mut ps = Vec::new();
                    for i in 0..r.below(6) as u32 {
                        ps.push((cmd.spawn(&w.registry, (A(v ^ i), C(i))).unwrap(), i));
                    }
                    w.commit(&mut cmd).unwrap();
                    for e in victims {
                        m.remove(&e);
                        dead.push(e);
                    }
                    for (p, i) in ps {
                        m.insert(
                            cmd.resolve(p).unwrap(),
                            [Some(v ^ i), None, Some(i), None, None],
                        );
                    }
                } else if let Some(e) = pick(&m, &mut r) {
                    let kind = r.below(3);
                    let p = match kind {
                        0 => cmd.respawn(&w.registry, e, (A(v), B(v ^ 1))),
                        1 => cmd.respawn(&w.registry, e, (B(v ^ 1), C(v ^ 2), A(v))),
                        _ => cmd.respawn(&w.registry, e, (G(v ^ 3), H(v ^ 4), A(v))),
                    }
                    .unwrap();
                    w.commit(&mut cmd).unwrap();
                    let new = cmd.resolve(p).unwrap();
                    m.remove(&e);
                    dead.push(e);
                    let row = match kind {
                        0 => [Some(v), Some(v ^ 1), None, None, None],
                        1 => [Some(v), Some(v ^ 1), Some(v ^ 2), None, None],
                        _ => [Some(v), None, None, Some(v ^ 3), Some(v ^ 4)],
                    };
                    m.insert(new, row);
                }
            }
            11 => {
                w.sort_pools();
            }
            12 => {
                let _ = match r.below(3) {
                    0 => cluster((&mut w.a, &mut w.b)),
                    1 => cluster((&mut w.b, &mut w.c, &mut w.a)),
                    _ => cluster((&mut w.c, &mut w.a)),
                };
            }
            13 => {
                // scramble a pool order: remove and re-insert many entries of b
                let es: Vec<EntityId> = m
                    .iter()
                    .filter(|(_, r)| r[1].is_some())
                    .map(|(e, _)| *e)
                    .collect();
                for e in es.iter().rev().take(r.below(20)) {
                    let x = m[e][1].unwrap();
                    rem(&mut w, 1, *e);
                    ins(&mut w, 1, *e, x);
                }
            }
            14 => {
                // spawn_batch whose iterator panics midway
                if m.len() + 40 < CAP {
                    let n = 2 + r.below(20);
                    let stop = r.below(n);
                    let before = w.registry.len();
                    let res = catch_unwind(AssertUnwindSafe(|| {
                        w.spawn_batch((0..n as u32).map(|i| {
                            if i as usize == stop {
                                panic!("boom");
                            }
                            (A(i), C(v))
                        }))
                    }));
                    assert!(res.is_err());
                    // entities placed in released slots stay spawned: find them
                    let after = w.registry.len();
                    if after != before {
                        // discover new entities from pool a's owners
                        let known: std::collections::HashSet<_> = m.keys().copied().collect();
                        let fresh: Vec<(EntityId, u32)> =
                            w.a.iter()
                                .filter(|(e, _)| !known.contains(e))
                                .map(|(e, x)| (e, x.0))
                                .collect();
                        for (e, x) in fresh {
                            m.insert(e, [Some(x), None, Some(v), None, None]);
                        }
                        // entities alive with no components (created, not published)?
                        assert_eq!(m.len(), after, "{ctx}: registry alive vs model");
                    }
                }
            }
            _ => {
                // panic in a join closure and in update_select
                let _ = catch_unwind(AssertUnwindSafe(|| {
                    join((&mut w.a, &w.b)).for_each(|(_, (a, _))| {
                        if a.0 % 7 == 3 {
                            panic!("x");
                        }
                    });
                }));
                let _ = catch_unwind(AssertUnwindSafe(|| {
                    w.b.update_select(|x| if x.0 % 5 == 1 { panic!("y") } else { false }, |_| {});
                }));
            }
        }
        check(&mut w, &m, &ctx);
    }
}

#[test]
fn random_world_against_model() {
    // Under Miri one short walk (each step checks every pool and runs seven joins).
    let (seeds, steps) = if cfg!(miri) { (1, 30) } else { (60u64, 400) };
    for seed in 1..=seeds {
        run(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15), steps);
    }
}

/// Standalone pools are never `live`: a join of them must compare keys.
#[test]
fn standalone_pools_with_stale_entries() {
    let mut reg = EntityRegistry::try_with_capacity(64).unwrap();
    let mut p = ComponentPool::<u32>::try_new(&mut reg).unwrap();
    let mut q = ComponentPool::<u64>::try_new(&mut reg).unwrap();
    let es: Vec<_> = (0..40).map(|_| reg.try_create().unwrap()).collect();
    for e in es.iter().rev() {
        p.insert(&mut reg, *e, e.slot()).unwrap();
    }
    for e in &es {
        q.insert(&mut reg, *e, 0).unwrap();
    }
    // release without removing from p; the slot's next incarnation gets q only
    for e in &es[..20] {
        reg.try_release(*e).unwrap();
    }
    let mut fresh = Vec::new();
    for _ in 0..20 {
        fresh.push(reg.try_create().unwrap());
    }
    for e in &es[..20] {
        q.remove(&mut reg, *e).ok();
    }
    for e in &fresh {
        q.insert(&mut reg, *e, 1).unwrap();
    }
    assert!(p.check_index() && q.check_index());
    let n = join((&q, &p)).count();
    assert_eq!(n, 20);
    let n = join((&q, without(&p))).count();
    assert_eq!(n, 20);
}
