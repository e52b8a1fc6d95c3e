//! hecs 0.11: `query_mut` per system, a `hecs::CommandBuffer` for expiry and replacement (the
//! despawns recorded first, as the ludus port does; the order made no measurable difference
//! to hecs), `World::get` for the tracked handles.

use ::hecs::{CommandBuffer, Entity, EntityBuilder, World};

use super::*;
use crate::{Digest, Workload};

/// The tick on a hecs world.
pub struct Tick {
    world: World,
    cmd: CommandBuffer,
    builder: EntityBuilder,
    dead: Vec<Entity>,
    expired: Vec<(Entity, usize)>,
    tracked: Vec<Entity>,
    /// Per entity index: the replacement of the entity there that expired last.
    replaced: Vec<Entity>,
    /// The trackers' sum over the last tick.
    pub sum: u64,
}

fn fill(b: &mut EntityBuilder, i: usize) {
    let (p, v, d, r) = particle(i);
    b.add(p).add(v).add(d);
    if let Some(r) = r {
        b.add(r);
    }
}

impl Tick {
    /// `movement`.
    pub fn movement(&mut self) {
        self.world
            .query_mut::<(&mut Position, &Velocity)>()
            .into_iter()
            .for_each(|(p, v)| movement(p, v));
    }
    /// `swirl`.
    pub fn swirl(&mut self) {
        self.world
            .query_mut::<(&mut Position, &Velocity, &mut Rotation)>()
            .into_iter()
            .for_each(|(p, v, r)| swirl(p, v, r));
    }
    /// `age`, with the deferred despawns and replacements.
    pub fn age(&mut self) {
        let expired = &mut self.expired;
        expired.clear();
        let dead = &mut self.dead;
        dead.clear();
        self.world
            .query_mut::<(Entity, &mut Data)>()
            .into_iter()
            .for_each(|(e, d)| {
                if age(d) {
                    dead.push(e);
                }
            });
        for &e in dead.iter() {
            let p = self.world.get::<&Position>(e).expect("alive");
            expired.push((e, replacement(&p)));
        }
        // Despawns first, as the ludus port records its destroys.
        for &(e, _) in expired.iter() {
            self.cmd.despawn(e);
        }
        for &(e, i) in expired.iter() {
            fill(&mut self.builder, i);
            let new = self.world.reserve_entity();
            self.cmd.insert(new, self.builder.build());
            let at = e.id() as usize;
            if at >= self.replaced.len() {
                self.replaced.resize(at + 1, Entity::DANGLING);
            }
            self.replaced[at] = new;
        }
        self.cmd.run_on(&mut self.world);
    }
    /// `track`.
    pub fn track(&mut self) {
        let mut sum = 0u64;
        for t in &mut self.tracked {
            match self.world.get::<&Position>(*t) {
                Ok(p) => sum = sum.wrapping_add(track_term(&p)),
                Err(_) => *t = self.replaced[t.id() as usize],
            }
        }
        self.sum = sum;
    }
}

impl Workload for Tick {
    fn setup() -> Self {
        let mut world = World::new();
        let mut builder = EntityBuilder::new();
        let all: Vec<Entity> = (0..PARTICLES)
            .map(|i| {
                fill(&mut builder, i);
                world.spawn(builder.build())
            })
            .collect();
        let tracked = all.iter().step_by(PARTICLES / TRACKED).copied().collect();
        Tick {
            world,
            cmd: CommandBuffer::new(),
            builder,
            dead: Vec::new(),
            expired: Vec::new(),
            tracked,
            replaced: vec![Entity::DANGLING; PARTICLES],
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
        tick_checksum(self.world.len() as usize, self.sum, d)
    }
}
