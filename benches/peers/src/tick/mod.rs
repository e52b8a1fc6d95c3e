//! A game-like tick: particles that move, some that spin, all that age and are replaced when
//! they expire, and a few tracked by handle.
//!
//! [`PARTICLES`] particles, each with a position, a velocity and a lifetime (`Data`, in ticks);
//! a quarter also carry a `Rotation`. Per tick, four systems:
//!
//! 1. `movement`: position += velocity, over every particle;
//! 2. `swirl`: position += rotation × 0.001 and rotation += velocity × 0.01, over the particles
//!    with all three (a three-pool join where a minority has the third);
//! 3. `age`: lifetime −= 1; each expired particle's position is read by handle, and it is
//!    despawned and replaced by a new one ([`replacement`]), both deferred through the
//!    contender's command buffer (~[`PARTICLES`] / 100 a tick);
//! 4. `track`: [`TRACKED`] handles read their particle's position; a handle whose particle
//!    expired is retargeted to its replacement.
//!
//! The checksum digests every component, the particle count and the trackers' sum.

pub mod hecs;
pub mod ludus;

use crate::components::{Data, Position, Rotation, Velocity};
use crate::{mix, position, rotation, velocity};

/// Particles alive at every tick.
pub const PARTICLES: usize = 30_000;
/// Handles tracked across ticks.
pub const TRACKED: usize = 500;

/// Particle number `i`: its components (a rotation on a quarter of them) and lifetime.
pub fn particle(i: usize) -> (Position, Velocity, Data, Option<Rotation>) {
    let h = mix(i as u64 ^ 0x7C3A_11D5);
    (
        position(i),
        velocity(i),
        Data((50 + h % 100) as f32),
        (h >> 32).is_multiple_of(4).then(|| rotation(i)),
    )
}

/// `movement`.
#[inline]
pub fn movement(p: &mut Position, v: &Velocity) {
    crate::integrate(p, v);
}

/// `swirl`.
#[inline]
pub fn swirl(p: &mut Position, v: &Velocity, r: &mut Rotation) {
    p.0.x += r.0.x * 0.001;
    p.0.y += r.0.y * 0.001;
    p.0.z += r.0.z * 0.001;
    r.0.x += v.0.x * 0.01;
    r.0.y += v.0.y * 0.01;
    r.0.z += v.0.z * 0.01;
}

/// `age`: whether the particle expired this tick.
#[inline]
pub fn age(d: &mut Data) -> bool {
    d.0 -= 1.0;
    d.0 <= 0.0
}

/// The number of the particle that replaces one that expired at position `p` (a function of
/// the particle's state, so every contender makes the same replacement whatever order it
/// visits the expired ones in).
#[inline]
pub fn replacement(p: &Position) -> usize {
    let bits = u64::from(p.0.x.to_bits()) << 32 | u64::from(p.0.z.to_bits());
    (mix(bits) % 1_000_000) as usize
}

/// The tracker term of one position.
#[inline]
pub fn track_term(p: &Position) -> u64 {
    u64::from(p.0.x.to_bits() ^ p.0.z.to_bits())
}

/// The tick checksum.
pub fn tick_checksum(count: usize, tracked: u64, d: crate::Digest) -> u64 {
    mix(count as u64) ^ mix(tracked) ^ d.0
}
