//! Hand-written archetype tables (structure of arrays per component set) with a slot map:
//! what an engine would write by hand for this frame, and the limit for it.

use std::collections::VecDeque;

use super::*;
use crate::{Digest, Workload};

/// Entities holding exactly the components of `mask` (bit 0 velocity, 1 rotation, 2 data).
#[derive(Default)]
struct Table {
    mask: u8,
    slots: Vec<u32>,
    positions: Vec<Position>,
    velocities: Vec<Velocity>,
    rotations: Vec<Rotation>,
    data: Vec<Data>,
}

fn mask_of(c: &(Position, Option<Velocity>, Option<Rotation>, Option<Data>)) -> u8 {
    u8::from(c.1.is_some()) | u8::from(c.2.is_some()) << 1 | u8::from(c.3.is_some()) << 2
}

/// The frame on hand-written tables.
pub struct Frame {
    tables: Vec<Table>,
    /// Per slot: (table, row).
    location: Vec<(u8, u32)>,
    free: Vec<u32>,
    /// Alive slots, oldest first.
    order: VecDeque<u32>,
    next: usize,
}

impl Frame {
    fn spawn(&mut self, i: usize) {
        let c = components(i);
        let mask = mask_of(&c);
        let slot = self.free.pop().unwrap_or_else(|| {
            self.location.push((0, 0));
            (self.location.len() - 1) as u32
        });
        let t = &mut self.tables[usize::from(mask)];
        self.location[slot as usize] = (mask, t.slots.len() as u32);
        t.slots.push(slot);
        t.positions.push(c.0);
        t.velocities.extend(c.1);
        t.rotations.extend(c.2);
        t.data.extend(c.3);
        self.order.push_back(slot);
    }

    /// `movement` over every table with a velocity.
    pub fn movement(&mut self) {
        for t in self.tables.iter_mut().filter(|t| t.mask & 1 != 0) {
            t.positions
                .iter_mut()
                .zip(&t.velocities)
                .for_each(|(p, v)| movement(p, v));
        }
    }
    /// `spin` over every table with a velocity and a rotation.
    pub fn spin(&mut self) {
        for t in self.tables.iter_mut().filter(|t| t.mask & 3 == 3) {
            t.rotations
                .iter_mut()
                .zip(&t.velocities)
                .for_each(|(r, v)| spin(r, v));
        }
    }
    /// `decay` over every table with a `Data`.
    pub fn decay(&mut self) {
        for t in self.tables.iter_mut().filter(|t| t.mask & 4 != 0) {
            t.data
                .iter_mut()
                .zip(&t.positions)
                .for_each(|(d, p)| decay(d, p));
        }
    }
    /// The structural step, deferred: the despawns are collected, then applied, then the spawns.
    pub fn structural(&mut self) {
        let old: Vec<u32> = self.order.drain(..FRAME_CHURN).collect();
        for slot in old {
            self.despawn(slot);
        }
        for k in 0..FRAME_CHURN {
            self.spawn(self.next + k);
        }
        self.next += FRAME_CHURN;
    }

    fn despawn(&mut self, slot: u32) {
        let (mask, row) = self.location[slot as usize];
        let t = &mut self.tables[usize::from(mask)];
        let row = row as usize;
        t.slots.swap_remove(row);
        t.positions.swap_remove(row);
        if mask & 1 != 0 {
            t.velocities.swap_remove(row);
        }
        if mask & 2 != 0 {
            t.rotations.swap_remove(row);
        }
        if mask & 4 != 0 {
            t.data.swap_remove(row);
        }
        if let Some(&moved) = t.slots.get(row) {
            self.location[moved as usize] = (mask, row as u32);
        }
        self.free.push(slot);
    }
}

impl Workload for Frame {
    fn setup() -> Self {
        let mut f = Frame {
            tables: (0..8u8)
                .map(|mask| Table {
                    mask,
                    ..Table::default()
                })
                .collect(),
            location: Vec::with_capacity(FRAME_N),
            free: Vec::new(),
            order: VecDeque::with_capacity(FRAME_N),
            next: 0,
        };
        for i in 0..FRAME_N {
            f.spawn(i);
        }
        f.next = FRAME_N;
        f
    }
    fn run(&mut self) {
        self.movement();
        self.spin();
        self.decay();
        self.structural();
    }
    fn checksum(&self) -> u64 {
        let mut d = Digest::default();
        let mut count = 0;
        for t in &self.tables {
            count += t.positions.len();
            t.positions.iter().for_each(|x| d.add_pod(x));
            t.velocities.iter().for_each(|x| d.add_pod(x));
            t.rotations.iter().for_each(|x| d.add_pod(x));
            t.data.iter().for_each(|x| d.add_pod(x));
        }
        frame_checksum(count, d)
    }
}
