//! Plain joins (no group, no sort): 2 to 4 component types over [`JOIN_N`] entities whose
//! membership is drawn per entity and per type from a seeded hash, so every contender holds the
//! same entities with the same components in the same spawn order.
//!
//! | workload | position | velocity | data | rotation | matches |
//! | --- | ---: | ---: | ---: | ---: | ---: |
//! | `join_aligned` (spawned as pairs) | 100% | 100% | | | 100% |
//! | `join_half` | 100% | 50% | | | ~50% |
//! | `join_sparse3` | 100% | 50% | 10% | | ~5% |
//! | `join_mixed4` | 100% | 60% | 40% | 80% | ~19% |
//!
//! Each contender joins the workload's types and runs the same step per match; the checksum
//! digests every position. `raw` is hand-written archetype tables (structure of arrays per
//! component set), iterated table by table: what an archetype ECS does at its best.

pub mod bevy;
pub mod hecs;
pub mod ludus;
pub mod ludus_clustered;
pub mod raw;
pub mod shipyard;
pub mod sparsey;

use crate::components::{Data, Position, Rotation, Velocity};
use crate::{data, mix, position, rotation, velocity};

/// Entities per join workload.
pub const JOIN_N: usize = 100_000;

/// The component set of one join workload: percent of entities holding each optional type
/// (position is on every entity).
#[derive(Clone, Copy, Debug)]
pub struct Shape {
    /// Velocity, data, rotation: percent of entities holding it.
    pub percent: [u8; 3],
}

/// `join_aligned` and `join_half` and the others, by name.
pub const ALIGNED: Shape = Shape {
    percent: [100, 0, 0],
};
/// `join_half`.
pub const HALF: Shape = Shape {
    percent: [50, 0, 0],
};
/// `join_sparse3`.
pub const SPARSE3: Shape = Shape {
    percent: [50, 10, 0],
};
/// `join_mixed4`.
pub const MIXED4: Shape = Shape {
    percent: [60, 40, 80],
};

/// Which optional components entity `i` holds under `shape`: bit 0 velocity, 1 data, 2 rotation.
pub fn mask(shape: Shape, i: usize) -> u8 {
    let mut m = 0;
    for (k, &p) in shape.percent.iter().enumerate() {
        if p > 0 && mix((i as u64) << 2 | k as u64) % 100 < u64::from(p) {
            m |= 1 << k;
        }
    }
    m
}

/// The components of entity `i`, `None` where it lacks one.
pub fn components(
    shape: Shape,
    i: usize,
) -> (Position, Option<Velocity>, Option<Data>, Option<Rotation>) {
    let m = mask(shape, i);
    (
        position(i),
        (m & 1 != 0).then(|| velocity(i)),
        (m & 2 != 0).then(|| data(i)),
        (m & 4 != 0).then(|| rotation(i)),
    )
}

/// The per-match step of the two-type joins.
#[inline]
pub fn step2(p: &mut Position, v: &Velocity) {
    crate::integrate(p, v);
}

/// The per-match step of `join_sparse3`.
#[inline]
pub fn step3(p: &mut Position, v: &Velocity, d: &Data) {
    p.0.x += v.0.x * d.0;
    p.0.y += v.0.y * d.0;
    p.0.z += v.0.z * d.0;
}

/// The per-match step of `join_mixed4`.
#[inline]
pub fn step4(p: &mut Position, v: &Velocity, d: &Data, r: &Rotation) {
    p.0.x += v.0.x * d.0 + r.0.x;
    p.0.y += v.0.y * d.0 + r.0.y;
    p.0.z += v.0.z * d.0 + r.0.z;
}

/// Declares the four join workload types of a contender from a state type `$state` with
/// `fn build(Shape) -> Self`, `fn digest(&self) -> u64` and one run method per arity
/// (`run2`, `run3`, `run4`).
#[macro_export]
macro_rules! join_workloads {
    ($state:ty) => {
        /// `join_aligned`.
        pub struct JoinAligned(pub $state);
        /// `join_half`.
        pub struct JoinHalf(pub $state);
        /// `join_sparse3`.
        pub struct JoinSparse3(pub $state);
        /// `join_mixed4`.
        pub struct JoinMixed4(pub $state);
        $crate::join_workloads!(@one JoinAligned, ALIGNED, run2, $state);
        $crate::join_workloads!(@one JoinHalf, HALF, run2, $state);
        $crate::join_workloads!(@one JoinSparse3, SPARSE3, run3, $state);
        $crate::join_workloads!(@one JoinMixed4, MIXED4, run4, $state);
    };
    (@one $name:ident, $shape:ident, $run:ident, $state:ty) => {
        impl $crate::Workload for $name {
            fn setup() -> Self {
                Self(<$state>::build($crate::joins::$shape))
            }
            fn run(&mut self) {
                self.0.$run();
            }
            fn checksum(&self) -> u64 {
                self.0.digest()
            }
        }
    };
}
