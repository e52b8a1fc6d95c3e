//! ludus: nested owned groups, `moving(position, velocity)` and inside it `swirling(position,
//! velocity, rotation)`, so `movement` and `swirl` are both zips of the groups' slices; the
//! lifetime pool's `update_select` for `age`, a `CommandBuffer` for expiry and replacement
//! (one `respawn` per expired particle: the commit applies it in place when the replacement
//! has the same components, a rotation or not, as the particle it replaces, and as a destroy
//! and a spawn otherwise), `pool.get` for the tracked handles. No join, so no `sort_pools`.

#![allow(missing_docs)] // the `world!` expansion

use ::ludus::world::{CommandBuffer, Provisional, WorldOps};
use ::ludus::EntityId;

use super::*;
use crate::{Digest, Workload};

::ludus::world! {
    pub struct TickWorld {
        pub position: Position,
        pub velocity: Velocity,
        pub life: Data,
        pub rotation: Rotation,
    }
    groups {
        moving(position: Position, velocity: Velocity),
        swirling(position: Position, velocity: Velocity, rotation: Rotation),
    }
}

/// The tick on a ludus world.
pub struct Tick {
    world: TickWorld,
    cmd: CommandBuffer,
    expired: Vec<(EntityId, usize)>,
    spawned: Vec<(u32, Provisional)>,
    tracked: Vec<EntityId>,
    /// Per slot: the replacement of the entity there that expired last.
    replaced: Vec<EntityId>,
    /// The trackers' sum over the last tick.
    pub sum: u64,
}

impl Tick {
    /// `movement`.
    pub fn movement(&mut self) {
        let (_, ps, vs) = self.world.moving();
        ps.iter_mut()
            .zip(vs.iter())
            .for_each(|(p, v)| movement(p, v));
    }
    /// `swirl`.
    pub fn swirl(&mut self) {
        let (_, ps, vs, rs) = self.world.swirling();
        for ((p, v), r) in ps.iter_mut().zip(vs.iter()).zip(rs.iter_mut()) {
            swirl(p, v, r);
        }
    }
    /// `age`, with the deferred despawns and replacements.
    pub fn age(&mut self) {
        let w = &mut self.world;
        let expired = &mut self.expired;
        expired.clear();
        w.life.update_select(age, |e| expired.push((e, 0)));
        for (e, i) in expired.iter_mut() {
            *i = replacement(w.position.get(*e).expect("alive"));
        }
        self.spawned.clear();
        // Each expiry and its replacement as one `respawn`: in place when the replacement has
        // the same components (a rotation or not, as the expired one).
        for &(e, i) in expired.iter() {
            let p = match particle(i) {
                (p, v, d, None) => self.cmd.respawn(&w.registry, e, (p, v, d)),
                (p, v, d, Some(r)) => self.cmd.respawn(&w.registry, e, (p, v, d, r)),
            };
            self.spawned.push((e.slot(), p.unwrap()));
        }
        w.begin_structural();
        w.commit(&mut self.cmd).unwrap();
        w.end_structural();
        for &(slot, p) in &self.spawned {
            self.replaced[slot as usize] = self.cmd.resolve(p).unwrap();
        }
    }
    /// `track`.
    pub fn track(&mut self) {
        let mut sum = 0u64;
        let positions = &self.world.position;
        for t in &mut self.tracked {
            match positions.get(*t) {
                Some(p) => sum = sum.wrapping_add(track_term(p)),
                None => *t = self.replaced[t.slot() as usize],
            }
        }
        self.sum = sum;
    }
}

impl Workload for Tick {
    fn setup() -> Self {
        let mut world = TickWorld::try_new(PARTICLES).unwrap();
        let mut all = vec![EntityId::NULL; PARTICLES];
        for (i, slot) in all.iter_mut().enumerate() {
            *slot = match particle(i) {
                (p, v, d, None) => world.spawn((p, v, d)),
                (p, v, d, Some(r)) => world.spawn((p, v, d, r)),
            }
            .unwrap();
        }
        world.end_structural();
        let tracked = all.iter().step_by(PARTICLES / TRACKED).copied().collect();
        Tick {
            world,
            cmd: CommandBuffer::try_with_capacity(PARTICLES, PARTICLES * 64).unwrap(),
            expired: Vec::new(),
            spawned: Vec::new(),
            tracked,
            replaced: vec![EntityId::NULL; PARTICLES],
            sum: 0,
        }
    }
    fn run(&mut self) {
        self.movement();
        self.swirl();
        self.age();
        self.track();
    }
    fn checksum(&self) -> u64 {
        let w = &self.world;
        let mut d = Digest::default();
        w.position.values().iter().for_each(|x| d.add_pod(x));
        w.velocity.values().iter().for_each(|x| d.add_pod(x));
        w.rotation.values().iter().for_each(|x| d.add_pod(x));
        w.life.values().iter().for_each(|x| d.add_pod(x));
        tick_checksum(w.registry.len(), self.sum, d)
    }
}
