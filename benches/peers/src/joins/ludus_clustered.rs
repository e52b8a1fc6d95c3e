//! ludus, the join's pools clustered once after spawning (`ludus::world::cluster`): joins take
//! the runs plan, a zip of each matching signature's rows. The world, the spawns and the joins
//! are `ludus`'s.

use ::ludus::world::cluster;

use super::*;

/// A clustered ludus world of one shape.
pub struct State(super::ludus::State);

impl State {
    fn build(shape: Shape) -> Self {
        let mut s = super::ludus::State::build(shape);
        let w = s.world_mut();
        cluster((
            &mut w.position,
            &mut w.velocity,
            &mut w.data,
            &mut w.rotation,
        ))
        .unwrap();
        Self(s)
    }
    fn run2(&mut self) {
        self.0.run2();
    }
    fn run3(&mut self) {
        self.0.run3();
    }
    fn run4(&mut self) {
        self.0.run4();
    }
    fn digest(&self) -> u64 {
        self.0.digest()
    }
}

crate::join_workloads!(State);
