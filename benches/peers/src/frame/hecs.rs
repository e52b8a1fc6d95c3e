//! hecs 0.11: `query_mut` per system, a `hecs::CommandBuffer` for the structural step (new
//! entities reserved, then inserted when the buffer runs).

use std::collections::VecDeque;

use ::hecs::{CommandBuffer, Entity, EntityBuilder, World};

use super::*;
use crate::{Digest, Workload};

/// The frame on a hecs world.
pub struct Frame {
    world: World,
    order: VecDeque<Entity>,
    cmd: CommandBuffer,
    builder: EntityBuilder,
    next: usize,
}

/// Fills `b` with entity number `i`'s components.
fn fill(b: &mut EntityBuilder, i: usize) {
    let (p, v, r, d) = components(i);
    b.add(p);
    if let Some(v) = v {
        b.add(v);
    }
    if let Some(r) = r {
        b.add(r);
    }
    if let Some(d) = d {
        b.add(d);
    }
}

impl Workload for Frame {
    fn setup() -> Self {
        let mut world = World::new();
        let mut builder = EntityBuilder::new();
        let order = (0..FRAME_N)
            .map(|i| {
                fill(&mut builder, i);
                world.spawn(builder.build())
            })
            .collect();
        Frame {
            world,
            order,
            cmd: CommandBuffer::new(),
            builder,
            next: FRAME_N,
        }
    }
    fn run(&mut self) {
        self.movement();
        self.spin();
        self.decay();
        self.structural();
    }
    fn checksum(&self) -> u64 {
        self.digest()
    }
}

impl Frame {
    /// `movement`.
    pub fn movement(&mut self) {
        self.world
            .query_mut::<(&mut Position, &Velocity)>()
            .into_iter()
            .for_each(|(p, v)| movement(p, v));
    }
    /// `spin`.
    pub fn spin(&mut self) {
        self.world
            .query_mut::<(&mut Rotation, &Velocity)>()
            .into_iter()
            .for_each(|(r, v)| spin(r, v));
    }
    /// `decay`.
    pub fn decay(&mut self) {
        self.world
            .query_mut::<(&mut Data, &Position)>()
            .into_iter()
            .for_each(|(d, p)| decay(d, p));
    }
    /// The deferred structural step.
    pub fn structural(&mut self) {
        for e in self.order.drain(..FRAME_CHURN) {
            self.cmd.despawn(e);
        }
        for k in 0..FRAME_CHURN {
            fill(&mut self.builder, self.next + k);
            let e = self.world.reserve_entity();
            self.cmd.insert(e, self.builder.build());
            self.order.push_back(e);
        }
        self.cmd.run_on(&mut self.world);
        self.next += FRAME_CHURN;
    }
    fn digest(&self) -> u64 {
        let mut d = Digest::default();
        self.world
            .query::<&Position>()
            .iter()
            .for_each(|x| d.add_pod(x));
        self.world
            .query::<&Velocity>()
            .iter()
            .for_each(|x| d.add_pod(x));
        self.world
            .query::<&Rotation>()
            .iter()
            .for_each(|x| d.add_pod(x));
        self.world
            .query::<&Data>()
            .iter()
            .for_each(|x| d.add_pod(x));
        frame_checksum(self.world.len() as usize, d)
    }
}
