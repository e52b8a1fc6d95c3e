//! sparsey 0.13: one sparse set per component, with *groups* (sets kept packed in a common
//! order) for the dense loops — its idiomatic fast path; `par_for_each` (rayon) for the parallel
//! variant, `View::get` for random access.

use sparsey::component::Component;
use sparsey::{Entity, World};

use crate::components::frag::*;
use crate::components::{CompA, CompB, Data, Position, Rotation, Transform, Velocity};
use crate::math::heavy_kernel;
use crate::*;

/// Adds every `T` in `world` to `d`.
fn digest<T: Component + bytemuck::Pod>(world: &World, d: &mut Digest) {
    world.for_each::<&T>(|x| d.add_pod(x));
}

/// A world with the four simple_insert / heavy_compute components registered (no group).
fn four_component_world() -> World {
    World::builder()
        .register::<Transform>()
        .register::<Position>()
        .register::<Rotation>()
        .register::<Velocity>()
        .build()
}

/// simple_insert via `extend`.
#[derive(Default)]
pub struct SimpleInsert(Option<World>);

impl Workload for SimpleInsert {
    fn setup() -> Self {
        Self::default()
    }
    fn run(&mut self) {
        let mut world = four_component_world();
        world.extend((0..SIMPLE_N).map(|i| (transform(i), position(i), rotation(i), velocity(i))));
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

/// simple_iter via `for_each` over the group `(Position, Velocity)`.
pub struct SimpleIter(World);

impl Workload for SimpleIter {
    fn setup() -> Self {
        let mut world = World::builder()
            .add_group::<(Position, Velocity)>()
            .register::<Transform>()
            .register::<Rotation>()
            .build();
        world.extend((0..SIMPLE_N).map(|i| (transform(i), position(i), rotation(i), velocity(i))));
        Self(world)
    }
    fn run(&mut self) {
        self.0
            .for_each::<(&mut Position, &Velocity)>(|(p, v)| integrate(p, v));
    }
    fn checksum(&self) -> u64 {
        let mut d = Digest::default();
        digest::<Position>(&self.0, &mut d);
        d.0
    }
}

/// frag_iter via `for_each::<&mut Data>` (one dense array).
pub struct FragIter(World);

impl Workload for FragIter {
    fn setup() -> Self {
        let mut builder = World::builder();
        builder.register::<Data>();
        macro_rules! register {
            ($($t:ident),*) => {$( builder.register::<$t>(); )*};
        }
        crate::for_each_frag_type!(register);
        let mut world = builder.build();
        let mut i = 0;
        macro_rules! spawn {
            ($($t:ident),*) => {$(
                world.extend((0..FRAG_PER_TYPE).map(|_| {
                    i += 1;
                    ($t(0.0), data(i - 1))
                }));
            )*};
        }
        crate::for_each_frag_type!(spawn);
        Self(world)
    }
    fn run(&mut self) {
        self.0.for_each::<&mut Data>(double);
    }
    fn checksum(&self) -> u64 {
        let mut d = Digest::default();
        digest::<Data>(&self.0, &mut d);
        d.0
    }
}

/// heavy_compute world: group `(Transform, Position)`.
fn heavy_world() -> World {
    let mut world = World::builder()
        .add_group::<(Transform, Position)>()
        .register::<Rotation>()
        .register::<Velocity>()
        .build();
    world.extend((0..HEAVY_N).map(|i| (transform(i), position(i), rotation(i), velocity(i))));
    world
}

fn heavy_checksum(world: &World) -> u64 {
    let mut d = Digest::default();
    digest::<Transform>(world, &mut d);
    digest::<Position>(world, &mut d);
    d.0
}

/// heavy_compute via `for_each` over the group.
pub struct HeavyCompute(World);

impl Workload for HeavyCompute {
    fn setup() -> Self {
        Self(heavy_world())
    }
    fn run(&mut self) {
        self.0
            .for_each::<(&mut Transform, &mut Position)>(|(t, p)| heavy_kernel(&mut t.0, &mut p.0));
    }
    fn checksum(&self) -> u64 {
        heavy_checksum(&self.0)
    }
}

/// heavy_compute via `par_for_each` (rayon) over the group.
pub struct HeavyComputeParallel(World);

impl Workload for HeavyComputeParallel {
    fn setup() -> Self {
        Self(heavy_world())
    }
    fn run(&mut self) {
        self.0
            .par_for_each::<(&mut Transform, &mut Position)>(|(t, p)| {
                heavy_kernel(&mut t.0, &mut p.0)
            });
    }
    fn checksum(&self) -> u64 {
        heavy_checksum(&self.0)
    }
}

/// add_remove via `insert` / `delete`.
pub struct AddRemove {
    world: World,
    entities: Vec<Entity>,
    removed: usize,
}

impl Workload for AddRemove {
    fn setup() -> Self {
        let mut world = World::builder()
            .register::<CompA>()
            .register::<CompB>()
            .build();
        let entities = world
            .extend((0..ADD_REMOVE_N).map(|i| (comp_a(i),)))
            .to_vec();
        Self {
            world,
            entities,
            removed: 0,
        }
    }
    fn run(&mut self) {
        for &e in &self.entities {
            self.world.insert(e, (CompB(0.0),));
        }
        let mut removed = 0;
        for &e in &self.entities {
            removed += usize::from(self.world.remove::<(CompB,)>(e).0.is_some());
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

/// handle_get via `View::get` on a borrowed view.
pub struct HandleGet {
    world: World,
    lookups: Vec<Entity>,
    sum: u64,
}

impl Workload for HandleGet {
    fn setup() -> Self {
        let mut world = World::builder()
            .register::<Position>()
            .register::<Velocity>()
            .build();
        let entities = world
            .extend((0..HANDLE_N).map(|i| (position(i), velocity(i))))
            .to_vec();
        let lookups = lookup_indices().into_iter().map(|i| entities[i]).collect();
        Self {
            world,
            lookups,
            sum: 0,
        }
    }
    fn run(&mut self) {
        let ps = self.world.borrow::<Position>();
        let mut sum = 0u64;
        for &e in &self.lookups {
            if let Some(p) = ps.get(e) {
                sum = sum.wrapping_add(handle_get_term(p));
            }
        }
        self.sum = sum;
    }
    fn checksum(&self) -> u64 {
        self.sum
    }
}

/// churn via `destroy` / `create` / `contains_entity`.
pub struct Churn {
    world: World,
    old: Vec<Entity>,
    alive_old: usize,
}

impl Workload for Churn {
    const FRESH_STATE: bool = true;
    fn setup() -> Self {
        let mut world = World::builder().register::<CompA>().build();
        let old = world.extend((0..CHURN_N).map(|i| (comp_a(i),))).to_vec();
        Self {
            world,
            old,
            alive_old: 0,
        }
    }
    fn run(&mut self) {
        for &e in self.old.iter().step_by(2) {
            assert!(self.world.destroy(e));
        }
        for j in 0..CHURN_N / 2 {
            self.world.create((comp_a(CHURN_N + j),));
        }
        self.alive_old = self
            .old
            .iter()
            .filter(|&&e| self.world.contains_entity(e))
            .count();
    }
    fn checksum(&self) -> u64 {
        let mut d = Digest::default();
        digest::<CompA>(&self.world, &mut d);
        churn_checksum(self.alive_old, d)
    }
}
