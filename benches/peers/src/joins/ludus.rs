//! ludus: a `world!` roster with no group; `join` of the pools.

#![allow(missing_docs)] // the `world!` expansion

use ::ludus::world::{join, WorldOps};

use super::*;
use crate::Digest;

::ludus::world! {
    /// The join roster.
    pub struct JoinWorld {
        pub position: Position,
        pub velocity: Velocity,
        pub data: Data,
        pub rotation: Rotation,
    }
}

/// A ludus world of one shape.
pub struct State(JoinWorld);

impl State {
    pub(crate) fn build(shape: Shape) -> Self {
        let mut w = JoinWorld::try_new(JOIN_N).unwrap();
        for i in 0..JOIN_N {
            // Each entity spawned with its whole bundle, as a user would.
            let spawned = match components(shape, i) {
                (p, None, None, None) => w.spawn((p,)),
                (p, Some(v), None, None) => w.spawn((p, v)),
                (p, None, Some(d), None) => w.spawn((p, d)),
                (p, None, None, Some(r)) => w.spawn((p, r)),
                (p, Some(v), Some(d), None) => w.spawn((p, v, d)),
                (p, Some(v), None, Some(r)) => w.spawn((p, v, r)),
                (p, None, Some(d), Some(r)) => w.spawn((p, d, r)),
                (p, Some(v), Some(d), Some(r)) => w.spawn((p, v, d, r)),
            };
            spawned.unwrap();
        }
        w.end_structural();
        Self(w)
    }
    /// The world.
    pub(crate) fn world_mut(&mut self) -> &mut JoinWorld {
        &mut self.0
    }
    pub(crate) fn run2(&mut self) {
        let w = &mut self.0;
        join((&mut w.position, &w.velocity)).for_each(|(_, (p, v))| step2(p, v));
    }
    pub(crate) fn run3(&mut self) {
        let w = &mut self.0;
        join((&mut w.position, &w.velocity, &w.data)).for_each(|(_, (p, v, d))| step3(p, v, d));
    }
    pub(crate) fn run4(&mut self) {
        let w = &mut self.0;
        join((&mut w.position, &w.velocity, &w.data, &w.rotation))
            .for_each(|(_, (p, v, d, r))| step4(p, v, d, r));
    }
    pub(crate) fn digest(&self) -> u64 {
        let mut d = Digest::default();
        self.0.position.values().iter().for_each(|p| d.add_pod(p));
        d.0
    }
}

crate::join_workloads!(State);
