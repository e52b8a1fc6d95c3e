//! iai-callgrind instruction counts of the world's hot operations.
#![allow(missing_docs)] // iai-callgrind generates undocumented modules

use ludus::world::WorldOps;
use std::hint::black_box;

use iai_callgrind::{library_benchmark, library_benchmark_group, main};
use ludus::world::{cluster, join, ComponentPool, EntityRegistry, JoinPlan};
use ludus::EntityId;

const N: usize = 1_000;

/// 4x4 matrix.
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
pub struct Transform([f32; 16]);
/// Position.
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
pub struct Position([f32; 3]);
/// Rotation.
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
pub struct Rotation([f32; 3]);
/// Velocity.
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
pub struct Velocity([f32; 3]);

ludus::world! {
    pub struct Game { transform: Transform, position: Position, rotation: Rotation, velocity: Velocity }
    groups { moving(position: Position, velocity: Velocity) }
}

fn game() -> Game {
    Game::try_new(N).unwrap()
}

fn spawned() -> (Game, Vec<EntityId>) {
    let mut g = game();
    let ids = (0..N).map(|_| spawn_one(&mut g)).collect();
    (g, ids)
}

fn spawn_one(g: &mut Game) -> EntityId {
    g.spawn((
        Transform([1.0; 16]),
        Position([0.0; 3]),
        Rotation([0.0; 3]),
        Velocity([1.0; 3]),
    ))
    .unwrap()
}

#[library_benchmark]
#[bench::n1000(setup = game)]
fn spawn_batch(mut g: Game) -> usize {
    let bundles = (0..N).map(|i| {
        (
            Transform([i as f32; 16]),
            Position([0.0; 3]),
            Rotation([0.0; 3]),
            Velocity([1.0; 3]),
        )
    });
    black_box(g.spawn_batch(bundles).unwrap())
}

#[library_benchmark]
#[bench::n1000(setup = game)]
fn spawn(mut g: Game) -> usize {
    for _ in 0..N {
        black_box(spawn_one(&mut g));
    }
    g.registry.len()
}

#[library_benchmark]
#[bench::n1000(setup = spawned)]
fn destroy((mut g, ids): (Game, Vec<EntityId>)) -> usize {
    for &e in &ids {
        g.destroy(black_box(e)).unwrap();
    }
    g.registry.len()
}

type Setup = (EntityRegistry, ComponentPool<[f32; 3]>, Vec<EntityId>);

fn empty() -> Setup {
    let mut reg = EntityRegistry::try_with_capacity(N).unwrap();
    let pool = ComponentPool::try_new(&mut reg).unwrap();
    (reg, pool, Vec::with_capacity(N))
}

fn created() -> Setup {
    let (mut reg, pool, mut ids) = empty();
    for _ in 0..N {
        ids.push(reg.try_create().unwrap());
    }
    (reg, pool, ids)
}

fn filled() -> Setup {
    let (mut reg, mut pool, ids) = created();
    for (i, &e) in ids.iter().enumerate() {
        pool.insert(&mut reg, e, [i as f32; 3]).unwrap();
    }
    (reg, pool, ids)
}

#[library_benchmark]
#[bench::n1000(setup = empty)]
fn create((mut reg, _pool, _ids): Setup) -> usize {
    for _ in 0..N {
        black_box(reg.try_create().unwrap());
    }
    reg.len()
}

#[library_benchmark]
#[bench::n1000(setup = created)]
fn release((mut reg, _pool, ids): Setup) -> usize {
    for &e in &ids {
        reg.try_release(black_box(e)).unwrap();
    }
    reg.len()
}

#[library_benchmark]
#[bench::n1000(setup = created)]
fn is_alive((reg, _pool, ids): Setup) -> usize {
    ids.iter().filter(|e| reg.is_alive(black_box(**e))).count()
}

#[library_benchmark]
#[bench::n1000(setup = created)]
fn insert((mut reg, mut pool, ids): Setup) -> usize {
    for &e in &ids {
        pool.insert(&mut reg, black_box(e), [1.0; 3]).unwrap();
    }
    pool.len()
}

#[library_benchmark]
#[bench::n1000(setup = filled)]
fn remove((mut reg, mut pool, ids): Setup) -> usize {
    for &e in &ids {
        black_box(pool.remove(&mut reg, black_box(e)).unwrap());
    }
    pool.len()
}

#[library_benchmark]
#[bench::n1000(setup = created)]
fn insert_batch((mut reg, mut pool, ids): Setup) -> usize {
    let values = vec![[1.0; 3]; N];
    black_box(
        pool.insert_batch(&mut reg, black_box(&ids), &values)
            .unwrap(),
    )
}

#[library_benchmark]
#[bench::n1000(setup = filled)]
fn remove_batch((mut reg, mut pool, ids): Setup) -> usize {
    black_box(pool.remove_batch(&mut reg, black_box(&ids)).unwrap())
}

#[library_benchmark]
#[bench::n1000(setup = filled)]
fn remove_batch_chunks((mut reg, mut pool, ids): Setup) -> usize {
    // Ten batches of 100: swap removal while a batch is under half the pool, then compaction.
    ids.chunks(100)
        .map(|chunk| pool.remove_batch(&mut reg, black_box(chunk)).unwrap())
        .sum()
}

#[library_benchmark]
#[bench::n1000(setup = filled)]
fn get((_reg, pool, ids): Setup) -> f32 {
    ids.iter()
        .map(|e| pool.get(black_box(*e)).map_or(0.0, |v| v[0]))
        .sum()
}

#[library_benchmark]
#[bench::n1000(setup = filled)]
fn iterate((_reg, mut pool, _ids): Setup) -> f32 {
    for v in pool.values_mut() {
        v[0] += 1.0;
    }
    black_box(pool.values()[0][0])
}

ludus::world! {
    /// Two ungrouped pools: the world-level insert / remove / respawn paths.
    pub struct Pair { a: Position, b: Rotation }
}

fn pair_with_a() -> (Pair, Vec<EntityId>) {
    let mut w = Pair::try_new(N).unwrap();
    let ids = (0..N)
        .map(|_| w.spawn((Position([1.0; 3]),)).unwrap())
        .collect();
    (w, ids)
}

fn pair_with_ab() -> (Pair, Vec<EntityId>) {
    let (mut w, ids) = pair_with_a();
    for &e in &ids {
        w.insert(e, Rotation([2.0; 3])).unwrap();
    }
    (w, ids)
}

fn pair_released() -> (Pair, Vec<EntityId>) {
    let (mut w, ids) = pair_with_a();
    for &e in &ids {
        w.destroy(e).unwrap();
    }
    (w, ids)
}

#[library_benchmark]
#[bench::n1000(setup = pair_with_a)]
fn world_insert((mut w, ids): (Pair, Vec<EntityId>)) -> usize {
    for &e in &ids {
        black_box(w.insert(black_box(e), Rotation([3.0; 3])).unwrap());
    }
    w.b.len()
}

#[library_benchmark]
#[bench::n1000(setup = pair_with_ab)]
fn world_remove((mut w, ids): (Pair, Vec<EntityId>)) -> usize {
    for &e in &ids {
        black_box(w.remove::<Rotation>(black_box(e)).unwrap());
    }
    w.b.len()
}

#[library_benchmark]
#[bench::n1000(setup = pair_released)]
fn respawn((mut w, _ids): (Pair, Vec<EntityId>)) -> usize {
    for _ in 0..N {
        black_box(w.spawn((Position([4.0; 3]),)).unwrap());
    }
    w.a.len()
}

/// Every entity in `a`; every other one also in `b`, inserted last to first (so `b`'s dense
/// order is not `a`'s).
fn pair_half() -> Pair {
    let (mut w, ids) = pair_with_a();
    for &e in ids.iter().step_by(2).rev() {
        w.insert(e, Rotation([2.0; 3])).unwrap();
    }
    w
}

/// `pair_half` with its pools in their own orders: the bits plan (`a` is in slot order, so
/// its rows are found by rank; `b`'s are probed).
fn pair_probed() -> Pair {
    let w = pair_half();
    assert_eq!(join((&w.a, &w.b)).plan(), JoinPlan::Bits);
    w
}

/// `pair_half` with `a`'s entries of every other entity removed and put back last to first:
/// neither pool in slot order, so the smaller (`b`) drives and probes `a` (driver plan).
fn pair_driven() -> Pair {
    let mut w = pair_half();
    let ids: Vec<EntityId> = w.a.owners().iter().step_by(2).collect();
    for &e in &ids {
        w.remove::<Position>(e).unwrap();
    }
    for &e in ids.iter().rev() {
        w.insert(e, Position([1.0; 3])).unwrap();
    }
    assert_eq!(join((&w.a, &w.b)).plan(), JoinPlan::Driver);
    w
}

/// `pair_half` clustered: the runs plan.
fn pair_clustered() -> Pair {
    let mut w = pair_half();
    cluster((&mut w.a, &mut w.b)).unwrap();
    assert_eq!(join((&w.a, &w.b)).plan(), JoinPlan::Runs);
    w
}

/// Both pools spawned together: the aligned plan.
fn pair_aligned() -> Pair {
    let mut w = Pair::try_new(N).unwrap();
    for _ in 0..N {
        w.spawn((Position([1.0; 3]), Rotation([2.0; 3]))).unwrap();
    }
    assert_eq!(join((&w.a, &w.b)).plan(), JoinPlan::Aligned);
    w
}

/// The join the three `join_*` rows time: `a += b` over the entities in both.
fn join_ab(w: &mut Pair) -> f32 {
    join((&mut w.a, &w.b)).for_each(|(_, (a, b))| a.0[0] += b.0[0]);
    w.a.values()[0].0[0]
}

#[library_benchmark]
#[bench::n1000(setup = pair_probed)]
fn join_probed(mut w: Pair) -> f32 {
    black_box(join_ab(black_box(&mut w)))
}

#[library_benchmark]
#[bench::n1000(setup = pair_driven)]
fn join_driver(mut w: Pair) -> f32 {
    black_box(join_ab(black_box(&mut w)))
}

#[library_benchmark]
#[bench::n1000(setup = pair_driven)]
fn join_driver_next(mut w: Pair) -> f32 {
    // A `for` loop: the join's `next`, not its `fold`.
    for (_, (a, b)) in join((&mut w.a, &w.b)) {
        a.0[0] += b.0[0];
    }
    black_box(w.a.values()[0].0[0])
}

#[library_benchmark]
#[bench::n1000(setup = pair_clustered)]
fn join_runs(mut w: Pair) -> f32 {
    black_box(join_ab(black_box(&mut w)))
}

#[library_benchmark]
#[bench::n1000(setup = pair_aligned)]
fn join_aligned(mut w: Pair) -> f32 {
    black_box(join_ab(black_box(&mut w)))
}

library_benchmark_group!(
    name = world;
    benchmarks = create, release, is_alive, insert, remove, insert_batch, remove_batch,
        remove_batch_chunks, get, iterate, spawn, spawn_batch, destroy, world_insert, world_remove,
        respawn, join_probed, join_driver, join_driver_next, join_runs, join_aligned
);

main!(library_benchmark_groups = world);
