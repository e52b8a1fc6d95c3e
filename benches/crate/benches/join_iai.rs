//! iai-callgrind instruction counts of join shapes beyond `world_iai`'s two columns: 3 and 4
//! columns with `opt` and `without`, `next` and `fold` for every plan, a ranked join and
//! standalone pools (`cargo bench -p ludus-benches --bench join_iai`).
#![allow(missing_docs)]

use std::hint::black_box;

use iai_callgrind::{library_benchmark, library_benchmark_group, main};
use ludus::world::WorldOps;
use ludus::world::{cluster, join, opt, without, ComponentPool, EntityRegistry, JoinPlan};
use ludus::EntityId;

const N: usize = 1_000;

#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
pub struct P([f32; 3]);
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
pub struct Q([f32; 3]);
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
pub struct R([f32; 3]);
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
pub struct S([f32; 4]);

ludus::world! {
    pub struct Quad { a: P, b: Q, c: R, d: S }
}

/// Every entity in `a`; every other in `b` (last to first), every third in `c` (in order),
/// every fourth in `d` (last to first).
fn mixed() -> Quad {
    let mut w = Quad::try_new(N).unwrap();
    let ids: Vec<EntityId> = (0..N).map(|_| w.spawn((P([1.0; 3]),)).unwrap()).collect();
    for &e in ids.iter().step_by(2).rev() {
        w.insert(e, Q([2.0; 3])).unwrap();
    }
    for &e in ids.iter().step_by(3) {
        w.insert(e, R([3.0; 3])).unwrap();
    }
    for &e in ids.iter().step_by(4).rev() {
        w.insert(e, S([4.0; 4])).unwrap();
    }
    w
}

fn mixed_bits() -> Quad {
    let w = mixed();
    assert_eq!(
        join((&w.a, opt(&w.b), without(&w.c))).plan(),
        JoinPlan::Bits
    );
    assert_eq!(join((&w.a, &w.b, &w.c, &w.d)).plan(), JoinPlan::Bits);
    w
}

/// `mixed` with `a` and `c` scrambled: nothing sorted, driver plans.
fn mixed_driver() -> Quad {
    let mut w = mixed();
    let ids: Vec<EntityId> = w.a.owners().iter().step_by(2).collect();
    for &e in &ids {
        w.remove::<P>(e).unwrap();
    }
    for &e in ids.iter().rev() {
        w.insert(e, P([1.0; 3])).unwrap();
    }
    let ids: Vec<EntityId> = w.c.owners().iter().step_by(2).collect();
    for &e in &ids {
        w.remove::<R>(e).unwrap();
    }
    for &e in ids.iter().rev() {
        w.insert(e, R([3.0; 3])).unwrap();
    }
    assert_eq!(
        join((&w.a, opt(&w.b), without(&w.c))).plan(),
        JoinPlan::Driver
    );
    assert_eq!(join((&w.a, &w.b, opt(&w.c), &w.d)).plan(), JoinPlan::Driver);
    w
}

/// Every entity in a, b, c, in order: the aligned plan (d empty).
fn trio_aligned() -> Quad {
    let mut w = Quad::try_new(N).unwrap();
    for _ in 0..N {
        w.spawn((P([1.0; 3]), Q([2.0; 3]), R([3.0; 3]))).unwrap();
    }
    assert_eq!(join((&w.a, &w.b, &w.c)).plan(), JoinPlan::Aligned);
    w
}

/// `mixed` clustered: runs.
fn mixed_clustered() -> Quad {
    let mut w = mixed();
    cluster((&mut w.a, &mut w.b, &mut w.c)).unwrap();
    assert_eq!(join((&w.a, &w.b, &w.c)).plan(), JoinPlan::Runs);
    w
}

/// Every entity in `a`, every other in `b`, both in slot order: ranked bits.
fn ranked() -> Quad {
    let mut w = Quad::try_new(N).unwrap();
    let ids: Vec<EntityId> = (0..N).map(|_| w.spawn((P([1.0; 3]),)).unwrap()).collect();
    for &e in ids.iter().step_by(2) {
        w.insert(e, Q([2.0; 3])).unwrap();
    }
    assert_eq!(join((&w.a, &w.b)).plan(), JoinPlan::Bits);
    w
}

#[library_benchmark]
#[bench::n1000(setup = mixed_bits)]
fn x3_bits_opt_without(mut w: Quad) -> f32 {
    join((&mut w.a, opt(&w.b), without(&w.c)))
        .for_each(|(_, (a, b, ()))| a.0[0] += b.map_or(1.0, |b| b.0[0]));
    black_box(w.a.values()[0].0[0])
}

#[library_benchmark]
#[bench::n1000(setup = mixed_bits)]
fn x3_bits_opt_without_next(mut w: Quad) -> f32 {
    for (_, (a, b, ())) in join((&mut w.a, opt(&w.b), without(&w.c))) {
        a.0[0] += b.map_or(1.0, |b| b.0[0]);
    }
    black_box(w.a.values()[0].0[0])
}

#[library_benchmark]
#[bench::n1000(setup = mixed_bits)]
fn x4_bits(mut w: Quad) -> f32 {
    join((&mut w.a, &w.b, &w.c, &mut w.d)).for_each(|(_, (a, b, c, d))| {
        a.0[0] += b.0[0] + c.0[0];
        d.0[1] += 1.0;
    });
    black_box(w.a.values()[0].0[0])
}

#[library_benchmark]
#[bench::n1000(setup = mixed_driver)]
fn x3_driver_opt_without(mut w: Quad) -> f32 {
    join((&mut w.a, opt(&mut w.b), without(&w.c))).for_each(|(_, (a, b, ()))| {
        a.0[0] += 1.0;
        if let Some(b) = b {
            b.0[0] += 1.0;
        }
    });
    black_box(w.a.values()[0].0[0])
}

#[library_benchmark]
#[bench::n1000(setup = mixed_driver)]
fn x4_driver(mut w: Quad) -> f32 {
    join((&mut w.a, &w.b, opt(&w.c), &mut w.d)).for_each(|(_, (a, b, c, d))| {
        a.0[0] += b.0[0] + c.map_or(0.0, |c| c.0[0]);
        d.0[1] += 1.0;
    });
    black_box(w.a.values()[0].0[0])
}

#[library_benchmark]
#[bench::n1000(setup = mixed_driver)]
fn x4_driver_next(mut w: Quad) -> f32 {
    for (_, (a, b, c, d)) in join((&mut w.a, &w.b, opt(&w.c), &mut w.d)) {
        a.0[0] += b.0[0] + c.map_or(0.0, |c| c.0[0]);
        d.0[1] += 1.0;
    }
    black_box(w.a.values()[0].0[0])
}

#[library_benchmark]
#[bench::n1000(setup = trio_aligned)]
fn x3_aligned(mut w: Quad) -> f32 {
    let mut sum = 0.0;
    join((&mut w.a, &w.b, &w.c)).for_each(|(_, (a, b, c))| {
        a.0[0] += b.0[0] * c.0[1];
        sum += a.0[2];
    });
    black_box(sum + w.a.values()[0].0[0])
}

#[library_benchmark]
#[bench::n1000(setup = trio_aligned)]
fn x3_aligned_next(mut w: Quad) -> f32 {
    for (_, (a, b, c)) in join((&mut w.a, &w.b, &w.c)) {
        a.0[0] += b.0[0] * c.0[1];
    }
    black_box(w.a.values()[0].0[0])
}

#[library_benchmark]
#[bench::n1000(setup = mixed_clustered)]
fn x3_runs(mut w: Quad) -> f32 {
    join((&mut w.a, &w.b, &w.c)).for_each(|(_, (a, b, c))| a.0[0] += b.0[0] * c.0[1]);
    black_box(w.a.values()[0].0[0])
}

#[library_benchmark]
#[bench::n1000(setup = mixed_clustered)]
fn x3_runs_next(mut w: Quad) -> f32 {
    for (_, (a, b, c)) in join((&mut w.a, &w.b, &w.c)) {
        a.0[0] += b.0[0] * c.0[1];
    }
    black_box(w.a.values()[0].0[0])
}

#[library_benchmark]
#[bench::n1000(setup = ranked)]
fn x2_ranked(mut w: Quad) -> f32 {
    join((&mut w.a, &w.b)).for_each(|(_, (a, b))| a.0[0] += b.0[0]);
    black_box(w.a.values()[0].0[0])
}

#[library_benchmark]
#[bench::n1000(setup = ranked)]
fn x2_ranked_next(mut w: Quad) -> f32 {
    for (_, (a, b)) in join((&mut w.a, &w.b)) {
        a.0[0] += b.0[0];
    }
    black_box(w.a.values()[0].0[0])
}

type Loose = (
    EntityRegistry,
    ComponentPool<[f32; 3]>,
    ComponentPool<[f32; 3]>,
);

/// Standalone pools (not a world's: `live` false): `a` every entity, `b` every other, last
/// to first.
fn loose() -> Loose {
    let mut reg = EntityRegistry::try_with_capacity(N).unwrap();
    let mut a = ComponentPool::try_new(&mut reg).unwrap();
    let mut b = ComponentPool::try_new(&mut reg).unwrap();
    let ids: Vec<EntityId> = (0..N).map(|_| reg.try_create().unwrap()).collect();
    for &e in &ids {
        a.insert(&mut reg, e, [1.0; 3]).unwrap();
    }
    for &e in ids.iter().step_by(2).rev() {
        b.insert(&mut reg, e, [2.0; 3]).unwrap();
    }
    assert_eq!(join((&a, &b)).plan(), JoinPlan::Bits);
    (reg, a, b)
}

#[library_benchmark]
#[bench::n1000(setup = loose)]
fn x2_loose_bits((_reg, mut a, b): Loose) -> f32 {
    join((&mut a, &b)).for_each(|(_, (a, b))| a[0] += b[0]);
    black_box(a.values()[0][0])
}

#[library_benchmark]
#[bench::n1000(setup = loose)]
fn x2_loose_bits_next((_reg, mut a, b): Loose) -> f32 {
    for (_, (a, b)) in join((&mut a, &b)) {
        a[0] += b[0];
    }
    black_box(a.values()[0][0])
}

#[library_benchmark]
#[bench::n1000(setup = mixed_bits)]
fn build_only(w: Quad) -> usize {
    let mut n = 0;
    for _ in 0..100 {
        n += join((&w.a, &w.b, opt(&w.c), without(&w.d))).size_hint().0;
    }
    black_box(n)
}

library_benchmark_group!(
    name = joins;
    benchmarks = x3_bits_opt_without, x3_bits_opt_without_next, x4_bits, x3_driver_opt_without,
        x4_driver, x4_driver_next, x3_aligned, x3_aligned_next, x3_runs, x3_runs_next,
        x2_ranked, x2_ranked_next, x2_loose_bits, x2_loose_bits_next, build_only
);

main!(library_benchmark_groups = joins);
