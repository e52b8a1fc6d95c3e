//! shipyard 0.11: one sparse set per component; views borrowed from the world, tuple
//! iteration, `par_iter` (rayon) for the parallel variant, `Get` on a view for random access.

use shipyard::{Component, EntitiesView, EntityId, Get, IntoIter, Remove, View, ViewMut, World};

use crate::components::frag::*;
use crate::components::{CompA, CompB, Data, Position, Rotation, Transform, Velocity};
use crate::math::heavy_kernel;
use crate::*;
use rayon::iter::ParallelIterator;

/// Adds every `T` in `world` to `d`.
fn digest<T: Component + bytemuck::Pod + Send + Sync>(world: &World, d: &mut Digest) {
    let view = world.borrow::<View<T>>().expect("storage borrow");
    view.iter().for_each(|x| d.add_pod(x));
}

/// simple_insert via `bulk_add_entity`.
#[derive(Default)]
pub struct SimpleInsert(Option<World>);

impl Workload for SimpleInsert {
    fn setup() -> Self {
        Self::default()
    }
    fn run(&mut self) {
        let mut world = World::new();
        world.bulk_add_entity(
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

/// simple_iter via `(&mut positions, &velocities).iter()`.
pub struct SimpleIter(World);

impl Workload for SimpleIter {
    fn setup() -> Self {
        let mut world = World::new();
        world.bulk_add_entity(
            (0..SIMPLE_N).map(|i| (transform(i), position(i), rotation(i), velocity(i))),
        );
        Self(world)
    }
    fn run(&mut self) {
        let (mut ps, vs) = self
            .0
            .borrow::<(ViewMut<Position>, View<Velocity>)>()
            .expect("borrow");
        for (p, v) in (&mut ps, &vs).iter() {
            integrate(p, v);
        }
    }
    fn checksum(&self) -> u64 {
        let mut d = Digest::default();
        digest::<Position>(&self.0, &mut d);
        d.0
    }
}

/// frag_iter via `(&mut data).iter()` (one dense array; fragment types live in other sets).
pub struct FragIter(World);

impl Workload for FragIter {
    fn setup() -> Self {
        let mut world = World::new();
        let mut i = 0;
        macro_rules! spawn {
            ($($t:ident),*) => {$(
                world.bulk_add_entity((0..FRAG_PER_TYPE).map(|_| {
                    i += 1;
                    ($t(0.0), data(i - 1))
                }));
            )*};
        }
        crate::for_each_frag_type!(spawn);
        Self(world)
    }
    fn run(&mut self) {
        let mut ds = self.0.borrow::<ViewMut<Data>>().expect("borrow");
        (&mut ds).iter().for_each(double);
    }
    fn checksum(&self) -> u64 {
        let mut d = Digest::default();
        digest::<Data>(&self.0, &mut d);
        d.0
    }
}

fn heavy_world() -> World {
    let mut world = World::new();
    world.bulk_add_entity(
        (0..HEAVY_N).map(|i| (transform(i), position(i), rotation(i), velocity(i))),
    );
    world
}

fn heavy_checksum(world: &World) -> u64 {
    let mut d = Digest::default();
    digest::<Transform>(world, &mut d);
    digest::<Position>(world, &mut d);
    d.0
}

/// heavy_compute via tuple `iter`.
pub struct HeavyCompute(World);

impl Workload for HeavyCompute {
    fn setup() -> Self {
        Self(heavy_world())
    }
    fn run(&mut self) {
        let (mut ts, mut ps) = self
            .0
            .borrow::<(ViewMut<Transform>, ViewMut<Position>)>()
            .expect("borrow");
        for (t, p) in (&mut ts, &mut ps).iter() {
            heavy_kernel(&mut t.0, &mut p.0);
        }
    }
    fn checksum(&self) -> u64 {
        heavy_checksum(&self.0)
    }
}

/// heavy_compute via tuple `par_iter` (rayon).
pub struct HeavyComputeParallel(World);

impl Workload for HeavyComputeParallel {
    fn setup() -> Self {
        Self(heavy_world())
    }
    fn run(&mut self) {
        let (mut ts, mut ps) = self
            .0
            .borrow::<(ViewMut<Transform>, ViewMut<Position>)>()
            .expect("borrow");
        (&mut ts, &mut ps)
            .par_iter()
            .for_each(|(t, p)| heavy_kernel(&mut t.0, &mut p.0));
    }
    fn checksum(&self) -> u64 {
        heavy_checksum(&self.0)
    }
}

/// add_remove via `EntitiesView::add_component` / `ViewMut::remove` (sparse-set push / swap-remove).
pub struct AddRemove {
    world: World,
    entities: Vec<EntityId>,
    removed: usize,
}

impl Workload for AddRemove {
    fn setup() -> Self {
        let mut world = World::new();
        let entities = world
            .bulk_add_entity((0..ADD_REMOVE_N).map(|i| (comp_a(i),)))
            .collect();
        Self {
            world,
            entities,
            removed: 0,
        }
    }
    fn run(&mut self) {
        let (entities, mut bs) = self
            .world
            .borrow::<(EntitiesView, ViewMut<CompB>)>()
            .expect("borrow");
        for &e in &self.entities {
            entities.add_component(e, &mut bs, CompB(0.0));
        }
        let mut removed = 0;
        for &e in &self.entities {
            removed += usize::from(bs.remove(e).is_some());
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

/// handle_get via `Get` on a borrowed `View`.
pub struct HandleGet {
    world: World,
    lookups: Vec<EntityId>,
    sum: u64,
}

impl Workload for HandleGet {
    fn setup() -> Self {
        let mut world = World::new();
        let entities: Vec<EntityId> = world
            .bulk_add_entity((0..HANDLE_N).map(|i| (position(i), velocity(i))))
            .collect();
        let lookups = lookup_indices().into_iter().map(|i| entities[i]).collect();
        Self {
            world,
            lookups,
            sum: 0,
        }
    }
    fn run(&mut self) {
        let ps = self.world.borrow::<View<Position>>().expect("borrow");
        let mut sum = 0u64;
        for &e in &self.lookups {
            if let Ok(p) = (&ps).get(e) {
                sum = sum.wrapping_add(handle_get_term(p));
            }
        }
        self.sum = sum;
    }
    fn checksum(&self) -> u64 {
        self.sum
    }
}

/// churn via `delete_entity` / `add_entity` / `EntitiesView::is_alive`.
pub struct Churn {
    world: World,
    old: Vec<EntityId>,
    alive_old: usize,
}

impl Workload for Churn {
    const FRESH_STATE: bool = true;
    fn setup() -> Self {
        let mut world = World::new();
        let old = world
            .bulk_add_entity((0..CHURN_N).map(|i| (comp_a(i),)))
            .collect();
        Self {
            world,
            old,
            alive_old: 0,
        }
    }
    fn run(&mut self) {
        for &e in self.old.iter().step_by(2) {
            assert!(self.world.delete_entity(e));
        }
        for j in 0..CHURN_N / 2 {
            self.world.add_entity((comp_a(CHURN_N + j),));
        }
        let entities = self.world.borrow::<EntitiesView>().expect("borrow");
        self.alive_old = self.old.iter().filter(|&&e| entities.is_alive(e)).count();
    }
    fn checksum(&self) -> u64 {
        let mut d = Digest::default();
        digest::<CompA>(&self.world, &mut d);
        churn_checksum(self.alive_old, d)
    }
}
