//! bevy_ecs 0.20 (no default features; `std` + `multi_threaded`): table storage; cached
//! `QueryState`s, contiguous (per-table slice) iteration for the dense loops, `par_iter_mut` on
//! the `ComputeTaskPool` for the parallel variant.

use bevy_ecs::component::Component;
use bevy_ecs::entity::Entity;
use bevy_ecs::query::QueryState;
use bevy_ecs::world::World;
use bevy_tasks::{ComputeTaskPool, TaskPool};

use crate::components::frag::*;
use crate::components::{CompA, CompB, Data, Position, Rotation, Transform, Velocity};
use crate::math::heavy_kernel;
use crate::*;

/// Adds every `T` in `world` to `d`.
fn digest<T: Component + bytemuck::Pod>(world: &World, d: &mut Digest) {
    if let Some(mut q) = world.try_query::<&T>() {
        q.iter(world).for_each(|x| d.add_pod(x));
    }
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

/// simple_iter via a cached `QueryState` and `contiguous_iter_mut` (one slice pair per table).
pub struct SimpleIter {
    world: World,
    query: QueryState<(&'static mut Position, &'static Velocity)>,
}

impl Workload for SimpleIter {
    fn setup() -> Self {
        let mut world = World::new();
        world.spawn_batch(
            (0..SIMPLE_N).map(|i| (transform(i), position(i), rotation(i), velocity(i))),
        );
        let query = world.query();
        Self { world, query }
    }
    fn run(&mut self) {
        for (mut ps, vs) in self
            .query
            .contiguous_iter_mut(&mut self.world)
            .expect("dense query")
        {
            for (p, v) in ps.iter_mut().zip(vs) {
                integrate(p, v);
            }
        }
    }
    fn checksum(&self) -> u64 {
        let mut d = Digest::default();
        digest::<Position>(&self.world, &mut d);
        d.0
    }
}

/// frag_iter via a cached `QueryState` and `contiguous_iter_mut` over 26 tables.
pub struct FragIter {
    world: World,
    query: QueryState<&'static mut Data>,
}

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
        let query = world.query();
        Self { world, query }
    }
    fn run(&mut self) {
        for mut ds in self
            .query
            .contiguous_iter_mut(&mut self.world)
            .expect("dense query")
        {
            ds.iter_mut().for_each(double);
        }
    }
    fn checksum(&self) -> u64 {
        let mut d = Digest::default();
        digest::<Data>(&self.world, &mut d);
        d.0
    }
}

/// heavy_compute state: world + cached query.
pub struct Heavy {
    world: World,
    query: QueryState<(&'static mut Transform, &'static mut Position)>,
}

impl Heavy {
    fn new() -> Self {
        let mut world = World::new();
        world.spawn_batch(
            (0..HEAVY_N).map(|i| (transform(i), position(i), rotation(i), velocity(i))),
        );
        let query = world.query();
        Self { world, query }
    }
    fn checksum(&self) -> u64 {
        let mut d = Digest::default();
        digest::<Transform>(&self.world, &mut d);
        digest::<Position>(&self.world, &mut d);
        d.0
    }
}

/// heavy_compute via `iter_mut`.
pub struct HeavyCompute(Heavy);

impl Workload for HeavyCompute {
    fn setup() -> Self {
        Self(Heavy::new())
    }
    fn run(&mut self) {
        for (mut t, mut p) in self.0.query.iter_mut(&mut self.0.world) {
            heavy_kernel(&mut t.0, &mut p.0);
        }
    }
    fn checksum(&self) -> u64 {
        self.0.checksum()
    }
}

/// heavy_compute via `par_iter_mut` on the global `ComputeTaskPool`.
pub struct HeavyComputeParallel(Heavy);

impl Workload for HeavyComputeParallel {
    fn setup() -> Self {
        ComputeTaskPool::get_or_init(TaskPool::new);
        Self(Heavy::new())
    }
    fn run(&mut self) {
        self.0
            .query
            .par_iter_mut(&mut self.0.world)
            .for_each(|(mut t, mut p)| {
                heavy_kernel(&mut t.0, &mut p.0);
            });
    }
    fn checksum(&self) -> u64 {
        self.0.checksum()
    }
}

/// add_remove via `entity_mut(e).insert` / `.remove` (table moves).
pub struct AddRemove {
    world: World,
    entities: Vec<Entity>,
    removed: usize,
}

impl Workload for AddRemove {
    fn setup() -> Self {
        let mut world = World::new();
        let entities = world.spawn_batch((0..ADD_REMOVE_N).map(comp_a)).collect();
        Self {
            world,
            entities,
            removed: 0,
        }
    }
    fn run(&mut self) {
        for &e in &self.entities {
            self.world.entity_mut(e).insert(CompB(0.0));
        }
        let mut removed = 0;
        for &e in &self.entities {
            removed += usize::from(self.world.entity_mut(e).take::<CompB>().is_some());
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

/// handle_get via `Query::get` on a query made once per run from a cached `QueryState` (what a
/// system does; `World::get` would also look the component id up per call).
pub struct HandleGet {
    world: World,
    query: QueryState<&'static Position>,
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
        let query = world.query();
        Self {
            world,
            query,
            lookups,
            sum: 0,
        }
    }
    fn run(&mut self) {
        let query = self.query.query(&self.world);
        let mut sum = 0u64;
        for &e in &self.lookups {
            if let Ok(p) = query.get(e) {
                sum = sum.wrapping_add(handle_get_term(p));
            }
        }
        self.sum = sum;
    }
    fn checksum(&self) -> u64 {
        self.sum
    }
}

/// churn via `despawn` / `spawn` / `entities().contains_spawned`.
pub struct Churn {
    world: World,
    old: Vec<Entity>,
    alive_old: usize,
}

impl Workload for Churn {
    const FRESH_STATE: bool = true;
    fn setup() -> Self {
        let mut world = World::new();
        let old = world.spawn_batch((0..CHURN_N).map(comp_a)).collect();
        Self {
            world,
            old,
            alive_old: 0,
        }
    }
    fn run(&mut self) {
        for &e in self.old.iter().step_by(2) {
            assert!(self.world.despawn(e));
        }
        for j in 0..CHURN_N / 2 {
            self.world.spawn(comp_a(CHURN_N + j));
        }
        let entities = self.world.entities();
        self.alive_old = self
            .old
            .iter()
            .filter(|&&e| entities.contains_spawned(e))
            .count();
    }
    fn checksum(&self) -> u64 {
        let mut d = Digest::default();
        digest::<CompA>(&self.world, &mut d);
        churn_checksum(self.alive_old, d)
    }
}
