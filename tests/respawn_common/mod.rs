//! Shared helpers of the `respawn` differential tests (`world_respawn_adversarial.rs`,
//! `world_respawn_partial_review.rs`).
#![allow(dead_code)]

use std::collections::HashSet;

use bytemuck::Pod;
use ludus::world::ComponentPool;
use ludus::EntityId;

/// xorshift64: the differentials' seeded choices.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// An entity's (slot, generation): what two worlds replaying the same commands agree on.
pub fn sg(e: EntityId) -> (u32, u32) {
    (e.slot(), e.generation())
}

/// Whether a pool holds each slot at most once.
pub fn keys_unique<T: Pod>(pool: &ComponentPool<T>) -> bool {
    let mut seen = HashSet::new();
    pool.owners().iter().all(|e| seen.insert(e.slot()))
}
