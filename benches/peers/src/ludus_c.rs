//! ludus: a compile-time roster (`world!`) of fixed-capacity sparse-set pools; `spawn` /
//! `spawn_batch` (one check per bundle / batch), owned groups for
//! the dense multi-component loops, `values_mut` for single-pool loops, `pool.get` (full owner
//! check) for handle lookups, rayon over a group's slices for the parallel variant.

#![allow(missing_docs)] // the `world!` expansions

use ludus::world::WorldOps;
use ludus::EntityId;
use rayon::prelude::*;

use crate::components::{CompA, CompB, Data, Position, Rotation, Transform, Velocity};
use crate::math::heavy_kernel;
use crate::*;

ludus::world! {
    pub struct InsertWorld {
        transform: Transform,
        position: Position,
        rotation: Rotation,
        velocity: Velocity,
    }
}

ludus::world! {
    pub struct IterWorld {
        transform: Transform,
        position: Position,
        rotation: Rotation,
        velocity: Velocity,
    }
    groups { moving(position: Position, velocity: Velocity) }
}

ludus::world! {
    pub struct HeavyWorld {
        transform: Transform,
        position: Position,
        rotation: Rotation,
        velocity: Velocity,
    }
    groups { heavy(transform: Transform, position: Position) }
}

ludus::world! {
    pub struct AddRemoveWorld { a: CompA, b: CompB }
}

ludus::world! {
    pub struct HandleWorld { position: Position, velocity: Velocity }
}

ludus::world! {
    pub struct ChurnWorld { a: CompA }
}

/// The frag_iter roster: `data` plus one pool per fragment type.
#[allow(non_snake_case)]
mod frag_world {
    use crate::components::frag::*;
    use crate::components::Data;
    use ludus::world::WorldOps;

    macro_rules! declare {
        ($($t:ident),*) => {
            ludus::world! {
                pub struct FragWorld { pub data: Data, $(pub $t: $t),* }
            }

            impl FragWorld {
                /// 26 × [`crate::FRAG_PER_TYPE`] entities, group `k` holding type `k` + `Data`.
                pub fn build() -> Self {
                    let mut w = Self::try_new(26 * crate::FRAG_PER_TYPE).unwrap();
                    let mut i = 0;
                    $(
                        for _ in 0..crate::FRAG_PER_TYPE {
                            w.spawn(($t(0.0), crate::data(i))).unwrap();
                            i += 1;
                        }
                    )*
                    w
                }
            }
        };
    }
    crate::for_each_frag_type!(declare);
}
use frag_world::FragWorld;

/// Adds every value of `values` to `d`.
fn digest<T: bytemuck::Pod>(values: &[T], d: &mut Digest) {
    values.iter().for_each(|x| d.add_pod(x));
}

/// simple_insert: `try_new` (all memory up front), then one `spawn_batch` of 4-component bundles.
#[derive(Default)]
pub struct SimpleInsert(Option<InsertWorld>);

impl Workload for SimpleInsert {
    fn setup() -> Self {
        Self::default()
    }
    fn run(&mut self) {
        let mut w = InsertWorld::try_new(SIMPLE_N).unwrap();
        w.spawn_batch((0..SIMPLE_N).map(|i| (transform(i), position(i), rotation(i), velocity(i))))
            .unwrap();
        self.0 = Some(w);
    }
    fn checksum(&self) -> u64 {
        let w = self.0.as_ref().expect("run before checksum");
        let mut d = Digest::default();
        digest(w.transform.values(), &mut d);
        digest(w.position.values(), &mut d);
        digest(w.rotation.values(), &mut d);
        digest(w.velocity.values(), &mut d);
        d.0
    }
}

/// simple_iter: zip over the owned group `(position, velocity)`.
pub struct SimpleIter(IterWorld);

impl Workload for SimpleIter {
    fn setup() -> Self {
        let mut w = IterWorld::try_new(SIMPLE_N).unwrap();
        w.spawn_batch((0..SIMPLE_N).map(|i| (transform(i), position(i), rotation(i), velocity(i))))
            .unwrap();
        Self(w)
    }
    fn run(&mut self) {
        let (_, ps, vs) = self.0.moving();
        ps.iter_mut()
            .zip(vs.iter())
            .for_each(|(p, v)| integrate(p, v));
    }
    fn checksum(&self) -> u64 {
        let mut d = Digest::default();
        digest(self.0.position.values(), &mut d);
        d.0
    }
}

/// frag_iter: `values_mut` of the `data` pool (one dense array).
pub struct FragIter(FragWorld);

impl Workload for FragIter {
    fn setup() -> Self {
        Self(FragWorld::build())
    }
    fn run(&mut self) {
        self.0.data.values_mut().iter_mut().for_each(double);
    }
    fn checksum(&self) -> u64 {
        let mut d = Digest::default();
        digest::<Data>(self.0.data.values(), &mut d);
        d.0
    }
}

fn heavy_world() -> HeavyWorld {
    let mut w = HeavyWorld::try_new(HEAVY_N).unwrap();
    w.spawn_batch((0..HEAVY_N).map(|i| (transform(i), position(i), rotation(i), velocity(i))))
        .unwrap();
    w
}

fn heavy_checksum(w: &HeavyWorld) -> u64 {
    let mut d = Digest::default();
    digest(w.transform.values(), &mut d);
    digest(w.position.values(), &mut d);
    d.0
}

/// heavy_compute: zip over the owned group `(transform, position)`.
pub struct HeavyCompute(HeavyWorld);

impl Workload for HeavyCompute {
    fn setup() -> Self {
        Self(heavy_world())
    }
    fn run(&mut self) {
        let (_, ts, ps) = self.0.heavy();
        for (t, p) in ts.iter_mut().zip(ps.iter_mut()) {
            heavy_kernel(&mut t.0, &mut p.0);
        }
    }
    fn checksum(&self) -> u64 {
        heavy_checksum(&self.0)
    }
}

/// heavy_compute: rayon over the owned group's slices.
pub struct HeavyComputeParallel(HeavyWorld);

impl Workload for HeavyComputeParallel {
    fn setup() -> Self {
        Self(heavy_world())
    }
    fn run(&mut self) {
        let (_, ts, ps) = self.0.heavy();
        ts.par_iter_mut()
            .zip(ps.par_iter_mut())
            .for_each(|(t, p)| heavy_kernel(&mut t.0, &mut p.0));
    }
    fn checksum(&self) -> u64 {
        heavy_checksum(&self.0)
    }
}

/// add_remove: world `insert_batch` / `remove_batch` (one phase and budget preflight per batch,
/// then the sparse-set push / swap-remove per entity).
pub struct AddRemove {
    world: AddRemoveWorld,
    entities: Vec<EntityId>,
    values: Vec<CompB>,
    removed: usize,
}

impl Workload for AddRemove {
    fn setup() -> Self {
        let mut world = AddRemoveWorld::try_new(ADD_REMOVE_N).unwrap();
        let entities = (0..ADD_REMOVE_N)
            .map(|i| world.spawn((comp_a(i),)).unwrap())
            .collect();
        Self {
            world,
            entities,
            values: vec![CompB(0.0); ADD_REMOVE_N],
            removed: 0,
        }
    }
    fn run(&mut self) {
        self.world
            .insert_batch(&self.entities, &self.values)
            .unwrap();
        self.removed = self.world.remove_batch::<CompB>(&self.entities).unwrap();
    }
    fn checksum(&self) -> u64 {
        let mut d = Digest::default();
        digest(self.world.a.values(), &mut d);
        digest(self.world.b.values(), &mut d);
        add_remove_checksum(self.removed, d)
    }
}

/// add_remove, one entity per call: world `insert` / `remove` by handle (each call checks
/// phase, liveness and budget).
pub struct AddRemoveSingle(AddRemove);

impl Workload for AddRemoveSingle {
    fn setup() -> Self {
        Self(AddRemove::setup())
    }
    fn run(&mut self) {
        let w = &mut self.0;
        for &e in &w.entities {
            w.world.insert(e, CompB(0.0)).unwrap();
        }
        let mut removed = 0;
        for &e in &w.entities {
            removed += usize::from(w.world.remove::<CompB>(e).unwrap().is_some());
        }
        w.removed = removed;
    }
    fn checksum(&self) -> u64 {
        self.0.checksum()
    }
}

/// handle_get: `pool.get(handle)` (owner + generation checked against the pool).
pub struct HandleGet {
    world: HandleWorld,
    lookups: Vec<EntityId>,
    sum: u64,
}

impl Workload for HandleGet {
    fn setup() -> Self {
        let mut world = HandleWorld::try_new(HANDLE_N).unwrap();
        let entities: Vec<EntityId> = (0..HANDLE_N)
            .map(|i| world.spawn((position(i), velocity(i))).unwrap())
            .collect();
        let lookups = lookup_indices().into_iter().map(|i| entities[i]).collect();
        Self {
            world,
            lookups,
            sum: 0,
        }
    }
    fn run(&mut self) {
        let pool = &self.world.position;
        let mut sum = 0u64;
        for &e in &self.lookups {
            if let Some(p) = pool.get(e) {
                sum = sum.wrapping_add(handle_get_term(p));
            }
        }
        self.sum = sum;
    }
    fn checksum(&self) -> u64 {
        self.sum
    }
}

/// churn: `destroy` (every pool, then the slot) / `spawn` / `registry.is_alive`.
pub struct Churn {
    world: ChurnWorld,
    old: Vec<EntityId>,
    alive_old: usize,
}

impl Workload for Churn {
    const FRESH_STATE: bool = true;
    fn setup() -> Self {
        let mut world = ChurnWorld::try_new(CHURN_N).unwrap();
        let old = (0..CHURN_N)
            .map(|i| world.spawn((comp_a(i),)).unwrap())
            .collect();
        Self {
            world,
            old,
            alive_old: 0,
        }
    }
    fn run(&mut self) {
        for &e in self.old.iter().step_by(2) {
            self.world.destroy(e).unwrap();
        }
        for j in 0..CHURN_N / 2 {
            self.world.spawn((comp_a(CHURN_N + j),)).unwrap();
        }
        let registry = self.world.registry();
        self.alive_old = self.old.iter().filter(|&&e| registry.is_alive(e)).count();
    }
    fn checksum(&self) -> u64 {
        let mut d = Digest::default();
        digest(self.world.a.values(), &mut d);
        churn_checksum(self.alive_old, d)
    }
}
