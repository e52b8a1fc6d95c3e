//! hecs 0.11: archetypal storage; `query_mut` (no runtime borrow flags), `spawn_batch`,
//! `view_mut` for random access, `iter_batched` + rayon for the parallel variant.

use hecs::{Entity, World};
use rayon::iter::{ParallelBridge, ParallelIterator};

use crate::components::frag::*;
use crate::components::{CompA, CompB, Data, Position, Rotation, Transform, Velocity};
use crate::math::heavy_kernel;
use crate::*;

/// Adds every `T` in `world` to `d`.
fn digest<T: bytemuck::Pod + Send + Sync>(world: &World, d: &mut Digest) {
    world.query::<&T>().iter().for_each(|x| d.add_pod(x));
}

/// simple_insert via `spawn_batch`.
#[derive(Default)]
pub struct SimpleInsert(Option<World>);

impl Workload for SimpleInsert {
    fn setup() -> Self {
        Self::default()
    }
    fn run(&mut self) {
        let mut world = World::new();
        world.spawn_batch(
            (0..SIMPLE_N).map(|i| (transform(i), position(i), rotation(i), velocity(i))),
        );
        self.0 = Some(world);
    }
    fn checksum(&self) -> u64 {
        let w = self.0.as_ref().expect("run before checksum");
        let mut d = Digest::default();
        digest::<Transform>(w, &mut d);
        digest::<Position>(w, &mut d);
        digest::<Rotation>(w, &mut d);
        digest::<Velocity>(w, &mut d);
        d.0
    }
}

/// simple_iter via `query_mut`.
pub struct SimpleIter(World);

impl Workload for SimpleIter {
    fn setup() -> Self {
        let mut world = World::new();
        world.spawn_batch(
            (0..SIMPLE_N).map(|i| (transform(i), position(i), rotation(i), velocity(i))),
        );
        Self(world)
    }
    fn run(&mut self) {
        for (p, v) in self.0.query_mut::<(&mut Position, &Velocity)>() {
            integrate(p, v);
        }
    }
    fn checksum(&self) -> u64 {
        let mut d = Digest::default();
        digest::<Position>(&self.0, &mut d);
        d.0
    }
}

/// frag_iter via `query_mut` over 26 archetypes.
pub struct FragIter(World);

impl Workload for FragIter {
    fn setup() -> Self {
        let mut world = World::new();
        let mut i = 0;
        macro_rules! spawn {
            ($($t:ident),*) => {$(
                world.spawn_batch((0..FRAG_PER_TYPE).map(|_| {
                    i += 1;
                    ($t(0.0), data(i - 1))
                }));
            )*};
        }
        crate::for_each_frag_type!(spawn);
        Self(world)
    }
    fn run(&mut self) {
        for d in self.0.query_mut::<&mut Data>() {
            double(d);
        }
    }
    fn checksum(&self) -> u64 {
        let mut d = Digest::default();
        digest::<Data>(&self.0, &mut d);
        d.0
    }
}

fn heavy_world() -> World {
    let mut world = World::new();
    world.spawn_batch((0..HEAVY_N).map(|i| (transform(i), position(i), rotation(i), velocity(i))));
    world
}

fn heavy_checksum(world: &World) -> u64 {
    let mut d = Digest::default();
    digest::<Transform>(world, &mut d);
    digest::<Position>(world, &mut d);
    d.0
}

/// heavy_compute via `query_mut`.
pub struct HeavyCompute(World);

impl Workload for HeavyCompute {
    fn setup() -> Self {
        Self(heavy_world())
    }
    fn run(&mut self) {
        for (t, p) in self.0.query_mut::<(&mut Transform, &mut Position)>() {
            heavy_kernel(&mut t.0, &mut p.0);
        }
    }
    fn checksum(&self) -> u64 {
        heavy_checksum(&self.0)
    }
}

/// heavy_compute via `iter_batched(64)` bridged onto rayon.
pub struct HeavyComputeParallel(World);

impl Workload for HeavyComputeParallel {
    fn setup() -> Self {
        Self(heavy_world())
    }
    fn run(&mut self) {
        self.0
            .query::<(&mut Transform, &mut Position)>()
            .iter_batched(64)
            .par_bridge()
            .for_each(|batch| {
                for (t, p) in batch {
                    heavy_kernel(&mut t.0, &mut p.0);
                }
            });
    }
    fn checksum(&self) -> u64 {
        heavy_checksum(&self.0)
    }
}

/// add_remove via `insert_one` / `remove_one` (archetype moves).
pub struct AddRemove {
    world: World,
    entities: Vec<Entity>,
    removed: usize,
}

impl Workload for AddRemove {
    fn setup() -> Self {
        let mut world = World::new();
        let entities = world
            .spawn_batch((0..ADD_REMOVE_N).map(|i| (comp_a(i),)))
            .collect();
        Self {
            world,
            entities,
            removed: 0,
        }
    }
    fn run(&mut self) {
        for &e in &self.entities {
            self.world.insert_one(e, CompB(0.0)).unwrap();
        }
        let mut removed = 0;
        for &e in &self.entities {
            removed += usize::from(self.world.remove_one::<CompB>(e).is_ok());
        }
        self.removed = removed;
    }
    fn checksum(&self) -> u64 {
        let mut d = Digest::default();
        digest::<CompA>(&self.world, &mut d);
        digest::<CompB>(&self.world, &mut d);
        add_remove_checksum(self.removed, d)
    }
}

/// handle_get via a `view_mut` (no runtime borrow flag per lookup).
pub struct HandleGet {
    world: World,
    lookups: Vec<Entity>,
    sum: u64,
}

impl Workload for HandleGet {
    fn setup() -> Self {
        let mut world = World::new();
        let entities: Vec<Entity> = world
            .spawn_batch((0..HANDLE_N).map(|i| (position(i), velocity(i))))
            .collect();
        let lookups = lookup_indices().into_iter().map(|i| entities[i]).collect();
        Self {
            world,
            lookups,
            sum: 0,
        }
    }
    fn run(&mut self) {
        let view = self.world.view_mut::<&Position>();
        let mut sum = 0u64;
        for &e in &self.lookups {
            if let Some(p) = view.get(e) {
                sum = sum.wrapping_add(handle_get_term(p));
            }
        }
        self.sum = sum;
    }
    fn checksum(&self) -> u64 {
        self.sum
    }
}

/// churn via `despawn` / `spawn` / `contains`.
pub struct Churn {
    world: World,
    old: Vec<Entity>,
    alive_old: usize,
}

impl Workload for Churn {
    const FRESH_STATE: bool = true;
    fn setup() -> Self {
        let mut world = World::new();
        let old = world
            .spawn_batch((0..CHURN_N).map(|i| (comp_a(i),)))
            .collect();
        Self {
            world,
            old,
            alive_old: 0,
        }
    }
    fn run(&mut self) {
        for &e in self.old.iter().step_by(2) {
            self.world.despawn(e).unwrap();
        }
        for j in 0..CHURN_N / 2 {
            self.world.spawn((comp_a(CHURN_N + j),));
        }
        self.alive_old = self.old.iter().filter(|&&e| self.world.contains(e)).count();
    }
    fn checksum(&self) -> u64 {
        let mut d = Digest::default();
        digest::<CompA>(&self.world, &mut d);
        churn_checksum(self.alive_old, d)
    }
}
