//! sparsey 0.13: one sparse set per component, no group (a plain join); `for_each`.

use ::sparsey::World;

use super::*;
use crate::Digest;

/// A sparsey world of one shape.
pub struct State(World);

impl State {
    fn build(shape: Shape) -> Self {
        let mut world = World::builder()
            .register::<Position>()
            .register::<Velocity>()
            .register::<Data>()
            .register::<Rotation>()
            .build();
        for i in 0..JOIN_N {
            let (p, v, d, r) = components(shape, i);
            let e = world.create((p,));
            if let Some(v) = v {
                world.insert(e, (v,));
            }
            if let Some(d) = d {
                world.insert(e, (d,));
            }
            if let Some(r) = r {
                world.insert(e, (r,));
            }
        }
        Self(world)
    }
    fn run2(&mut self) {
        self.0
            .for_each::<(&mut Position, &Velocity)>(|(p, v)| step2(p, v));
    }
    fn run3(&mut self) {
        self.0
            .for_each::<(&mut Position, &Velocity, &Data)>(|(p, v, d)| step3(p, v, d));
    }
    fn run4(&mut self) {
        self.0
            .for_each::<(&mut Position, &Velocity, &Data, &Rotation)>(|(p, v, d, r)| {
                step4(p, v, d, r)
            });
    }
    fn digest(&self) -> u64 {
        let mut d = Digest::default();
        self.0.for_each::<&Position>(|p| d.add_pod(p));
        d.0
    }
}

crate::join_workloads!(State);
