//! A frame: several systems over overlapping component sets, then a deferred structural step.
//!
//! [`FRAME_N`] entities; every one has a position, 90% a velocity, ~40% a rotation, ~30% a
//! `Data` (a decaying scalar). Per frame:
//!
//! 1. `movement`: position += velocity (joins position and velocity);
//! 2. `spin`: rotation += velocity × 0.01 (velocity again: only one of the two systems can own
//!    it in a group);
//! 3. `decay`: data = data × 0.99 + position.x × 0.001;
//! 4. the structural step, deferred (each contender's command buffer where it has one): the
//!    [`FRAME_CHURN`] oldest entities are despawned and as many new ones spawned, with the
//!    components the same rule gives them.
//!
//! Every contender keeps its handles in spawn order (oldest first). The checksum digests every
//! surviving component value and the entity count.

pub mod hecs;
pub mod ludus;
pub mod raw;

use crate::components::{Data, Position, Rotation, Velocity};
use crate::{data, mix, position, rotation, velocity};

/// Entities alive in a frame.
pub const FRAME_N: usize = 20_000;
/// Entities despawned and spawned per frame.
pub const FRAME_CHURN: usize = 100;

/// Entity number `i`'s components (`None` where it has none).
pub fn components(i: usize) -> (Position, Option<Velocity>, Option<Rotation>, Option<Data>) {
    let h = mix(i as u64 ^ 0x000F_7A3E);
    (
        position(i),
        (!i.is_multiple_of(10)).then(|| velocity(i)),
        (h % 100 < 40).then(|| rotation(i)),
        ((h >> 8) % 100 < 30).then(|| data(i)),
    )
}

/// `movement`.
#[inline]
pub fn movement(p: &mut Position, v: &Velocity) {
    crate::integrate(p, v);
}

/// `spin`.
#[inline]
pub fn spin(r: &mut Rotation, v: &Velocity) {
    r.0.x += v.0.x * 0.01;
    r.0.y += v.0.y * 0.01;
    r.0.z += v.0.z * 0.01;
}

/// `decay`.
#[inline]
pub fn decay(d: &mut Data, p: &Position) {
    d.0 = d.0 * 0.99 + p.0.x * 0.001;
}

/// The frame checksum from the digests of every component and the entity count.
pub fn frame_checksum(count: usize, d: crate::Digest) -> u64 {
    mix(count as u64) ^ d.0
}
