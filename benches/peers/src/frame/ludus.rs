//! ludus: nested owned groups, `moving(position, velocity)` for `movement` and inside it
//! `spinning(position, velocity, rotation)` for `spin` (every entity has a position, so
//! `spin`'s entities are exactly the group's), a plain join for `decay` (its pools cross
//! `moving`'s), a `CommandBuffer` for the structural step (each of the oldest entities
//! `respawn`ed as a new one, in place where the two have the same components, recorded against
//! the read-only registry; one commit).

#![allow(missing_docs)] // the `world!` expansion

use std::collections::VecDeque;

use ::ludus::world::{join, CommandBuffer, Provisional, WorldOps};
use ::ludus::EntityId;

use super::*;
use crate::{Digest, Workload};

::ludus::world! {
    pub struct FrameWorld {
        pub position: Position,
        pub velocity: Velocity,
        pub rotation: Rotation,
        pub data: Data,
    }
    groups {
        moving(position: Position, velocity: Velocity),
        spinning(position: Position, velocity: Velocity, rotation: Rotation),
    }
}

/// The frame on a ludus world.
pub struct Frame {
    world: FrameWorld,
    order: VecDeque<EntityId>,
    cmd: CommandBuffer,
    spawned: Vec<Provisional>,
    next: usize,
}

/// Records the spawn of entity number `i` with its bundle.
fn record(cmd: &mut CommandBuffer, w: &FrameWorld, i: usize) -> Provisional {
    let r = &w.registry;
    match components(i) {
        (p, None, None, None) => cmd.spawn(r, (p,)),
        (p, Some(v), None, None) => cmd.spawn(r, (p, v)),
        (p, None, Some(o), None) => cmd.spawn(r, (p, o)),
        (p, None, None, Some(d)) => cmd.spawn(r, (p, d)),
        (p, Some(v), Some(o), None) => cmd.spawn(r, (p, v, o)),
        (p, Some(v), None, Some(d)) => cmd.spawn(r, (p, v, d)),
        (p, None, Some(o), Some(d)) => cmd.spawn(r, (p, o, d)),
        (p, Some(v), Some(o), Some(d)) => cmd.spawn(r, (p, v, o, d)),
    }
    .unwrap()
}

impl Workload for Frame {
    fn setup() -> Self {
        let mut world = FrameWorld::try_new(FRAME_N + FRAME_CHURN).unwrap();
        let mut cmd = CommandBuffer::try_with_capacity(FRAME_N * 5, FRAME_N * 64).unwrap();
        let spawned: Vec<Provisional> = (0..FRAME_N).map(|i| record(&mut cmd, &world, i)).collect();
        world.commit(&mut cmd).unwrap();
        let order = spawned.iter().map(|&p| cmd.resolve(p).unwrap()).collect();
        world.end_structural();
        Frame {
            world,
            order,
            cmd: CommandBuffer::try_with_capacity(FRAME_CHURN * 6, FRAME_CHURN * 64).unwrap(),
            spawned: Vec::with_capacity(FRAME_CHURN),
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
    /// `movement` over the owned group.
    pub fn movement(&mut self) {
        let (_, ps, vs) = self.world.moving();
        ps.iter_mut()
            .zip(vs.iter())
            .for_each(|(p, v)| movement(p, v));
    }
    /// `spin` over the nested group: every entity has a position, so the entities with a
    /// rotation and a velocity are exactly `spinning`'s.
    pub fn spin(&mut self) {
        let (_, _, vs, rs) = self.world.spinning();
        rs.iter_mut().zip(vs.iter()).for_each(|(r, v)| spin(r, v));
    }
    /// `decay`: a plain join.
    pub fn decay(&mut self) {
        let w = &mut self.world;
        join((&mut w.data, &w.position)).for_each(|(_, (d, p))| decay(d, p));
    }
    /// The deferred structural step.
    pub fn structural(&mut self) {
        let w = &mut self.world;
        self.spawned.clear();
        for (k, e) in self.order.drain(..FRAME_CHURN).enumerate() {
            let r = &w.registry;
            let p = match components(self.next + k) {
                (p, None, None, None) => self.cmd.respawn(r, e, (p,)),
                (p, Some(v), None, None) => self.cmd.respawn(r, e, (p, v)),
                (p, None, Some(o), None) => self.cmd.respawn(r, e, (p, o)),
                (p, None, None, Some(d)) => self.cmd.respawn(r, e, (p, d)),
                (p, Some(v), Some(o), None) => self.cmd.respawn(r, e, (p, v, o)),
                (p, Some(v), None, Some(d)) => self.cmd.respawn(r, e, (p, v, d)),
                (p, None, Some(o), Some(d)) => self.cmd.respawn(r, e, (p, o, d)),
                (p, Some(v), Some(o), Some(d)) => self.cmd.respawn(r, e, (p, v, o, d)),
            };
            self.spawned.push(p.unwrap());
        }
        w.begin_structural();
        w.commit(&mut self.cmd).unwrap();
        w.end_structural();
        for &p in &self.spawned {
            self.order.push_back(self.cmd.resolve(p).unwrap());
        }
        self.next += FRAME_CHURN;
    }
    fn digest(&self) -> u64 {
        let w = &self.world;
        let mut d = Digest::default();
        w.position.values().iter().for_each(|x| d.add_pod(x));
        w.velocity.values().iter().for_each(|x| d.add_pod(x));
        w.rotation.values().iter().for_each(|x| d.add_pod(x));
        w.data.values().iter().for_each(|x| d.add_pod(x));
        frame_checksum(w.registry.len(), d)
    }
}
