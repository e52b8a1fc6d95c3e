//! shipyard 0.11: one sparse set per component; tuple iteration over borrowed views.

use ::shipyard::{IntoIter, View, ViewMut, World};

use super::*;
use crate::Digest;

/// A shipyard world of one shape.
pub struct State(World);

impl State {
    fn build(shape: Shape) -> Self {
        let mut world = World::new();
        for i in 0..JOIN_N {
            let (p, v, d, r) = components(shape, i);
            let e = world.add_entity((p,));
            if let Some(v) = v {
                world.add_component(e, (v,));
            }
            if let Some(d) = d {
                world.add_component(e, (d,));
            }
            if let Some(r) = r {
                world.add_component(e, (r,));
            }
        }
        Self(world)
    }
    fn run2(&mut self) {
        let (mut ps, vs) = self
            .0
            .borrow::<(ViewMut<Position>, View<Velocity>)>()
            .expect("borrow");
        (&mut ps, &vs).iter().for_each(|(p, v)| step2(p, v));
    }
    fn run3(&mut self) {
        let (mut ps, vs, ds) = self
            .0
            .borrow::<(ViewMut<Position>, View<Velocity>, View<Data>)>()
            .expect("borrow");
        (&mut ps, &vs, &ds)
            .iter()
            .for_each(|(p, v, d)| step3(p, v, d));
    }
    fn run4(&mut self) {
        let (mut ps, vs, ds, rs) = self
            .0
            .borrow::<(
                ViewMut<Position>,
                View<Velocity>,
                View<Data>,
                View<Rotation>,
            )>()
            .expect("borrow");
        (&mut ps, &vs, &ds, &rs)
            .iter()
            .for_each(|(p, v, d, r)| step4(p, v, d, r));
    }
    fn digest(&self) -> u64 {
        let mut d = Digest::default();
        let ps = self.0.borrow::<View<Position>>().expect("borrow");
        ps.iter().for_each(|p| d.add_pod(p));
        d.0
    }
}

crate::join_workloads!(State);
