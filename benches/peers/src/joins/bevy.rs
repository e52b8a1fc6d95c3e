//! bevy_ecs 0.20: entities spawned then given their optional components (each lands in the
//! table of its set); cached `QueryState`s iterated table by table (`contiguous_iter_mut`).

use bevy_ecs::query::QueryState;
use bevy_ecs::world::World;

use super::*;
use crate::Digest;

/// A bevy world of one shape and its cached queries.
pub struct State {
    world: World,
    q2: QueryState<(&'static mut Position, &'static Velocity)>,
    q3: QueryState<(&'static mut Position, &'static Velocity, &'static Data)>,
    q4: QueryState<(
        &'static mut Position,
        &'static Velocity,
        &'static Data,
        &'static Rotation,
    )>,
}

impl State {
    fn build(shape: Shape) -> Self {
        let mut world = World::new();
        for i in 0..JOIN_N {
            let (p, v, d, r) = components(shape, i);
            let mut e = world.spawn(p);
            if let Some(v) = v {
                e.insert(v);
            }
            if let Some(d) = d {
                e.insert(d);
            }
            if let Some(r) = r {
                e.insert(r);
            }
        }
        let (q2, q3, q4) = (world.query(), world.query(), world.query());
        Self { world, q2, q3, q4 }
    }
    fn run2(&mut self) {
        for (mut ps, vs) in self.q2.contiguous_iter_mut(&mut self.world).expect("dense") {
            ps.iter_mut().zip(vs).for_each(|(p, v)| step2(p, v));
        }
    }
    fn run3(&mut self) {
        for (mut ps, vs, ds) in self.q3.contiguous_iter_mut(&mut self.world).expect("dense") {
            ps.iter_mut()
                .zip(vs)
                .zip(ds)
                .for_each(|((p, v), d)| step3(p, v, d));
        }
    }
    fn run4(&mut self) {
        for (mut ps, vs, ds, rs) in self.q4.contiguous_iter_mut(&mut self.world).expect("dense") {
            ps.iter_mut()
                .zip(vs)
                .zip(ds)
                .zip(rs)
                .for_each(|(((p, v), d), r)| step4(p, v, d, r));
        }
    }
    fn digest(&self) -> u64 {
        let mut d = Digest::default();
        if let Some(mut q) = self.world.try_query::<&Position>() {
            q.iter(&self.world).for_each(|p| d.add_pod(p));
        }
        d.0
    }
}

crate::join_workloads!(State);
