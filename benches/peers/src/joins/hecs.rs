//! hecs 0.11: entities built with an `EntityBuilder` (so each lands in the archetype of its
//! component set), joined with `query_mut`.

use ::hecs::{EntityBuilder, World};

use super::*;
use crate::Digest;

/// A hecs world of one shape.
pub struct State(World);

impl State {
    fn build(shape: Shape) -> Self {
        let mut world = World::new();
        let mut b = EntityBuilder::new();
        for i in 0..JOIN_N {
            let (p, v, d, r) = components(shape, i);
            b.add(p);
            if let Some(v) = v {
                b.add(v);
            }
            if let Some(d) = d {
                b.add(d);
            }
            if let Some(r) = r {
                b.add(r);
            }
            world.spawn(b.build());
        }
        Self(world)
    }
    fn run2(&mut self) {
        self.0
            .query_mut::<(&mut Position, &Velocity)>()
            .into_iter()
            .for_each(|(p, v)| step2(p, v));
    }
    fn run3(&mut self) {
        self.0
            .query_mut::<(&mut Position, &Velocity, &Data)>()
            .into_iter()
            .for_each(|(p, v, d)| step3(p, v, d));
    }
    fn run4(&mut self) {
        self.0
            .query_mut::<(&mut Position, &Velocity, &Data, &Rotation)>()
            .into_iter()
            .for_each(|(p, v, d, r)| step4(p, v, d, r));
    }
    fn digest(&self) -> u64 {
        let mut d = Digest::default();
        self.0
            .query::<&Position>()
            .iter()
            .for_each(|p| d.add_pod(p));
        d.0
    }
}

crate::join_workloads!(State);
