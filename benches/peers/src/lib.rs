//! Peer comparison: ludus against hecs, bevy_ecs, shipyard, sparsey and a raw `Vec` baseline on
//! the same workloads (modelled on the ecs_bench_suite), driven by `benches/peers.rs`.
//!
//! Every contender module (`raw`, `ludus_c`, `hecs_c`, `bevy_c`, `shipyard_c`, `sparsey_c`, `ludus_c`)
//! defines one type per workload (`SimpleInsert`, `SimpleIter`, `FragIter`, `HeavyCompute`,
//! `HeavyComputeParallel`, `AddRemove`, `HandleGet`, `Churn`) implementing [`Workload`].
//! [`verify`] runs each workload once per contender and checks that all checksums agree, so every
//! contender provably does the same work. See `README.md`.

#![warn(missing_docs)]

pub mod clock;
pub mod components;
pub mod math;

pub mod bevy_c;
pub mod frame;
pub mod hecs_c;
pub mod joins;
pub mod ludus_c;
pub mod raw;
pub mod shipyard_c;
pub mod sparsey_c;
pub mod tick;

use components::{CompA, Data, Position, Rotation, Transform, Velocity};
use math::{Mat4, Vec3};

/// simple_insert / simple_iter entity count.
pub const SIMPLE_N: usize = 10_000;
/// frag_iter entities per fragment type (26 types).
pub const FRAG_PER_TYPE: usize = 20;
/// heavy_compute entity count.
pub const HEAVY_N: usize = 1_000;
/// Matrix inversions per entity in heavy_compute.
pub const HEAVY_INVERSIONS: usize = 100;
/// add_remove entity count.
pub const ADD_REMOVE_N: usize = 10_000;
/// handle_get entity count.
pub const HANDLE_N: usize = 100_000;
/// handle_get lookups per iteration.
pub const LOOKUPS: usize = 100_000;
/// churn entity count (half destroyed, then as many created).
pub const CHURN_N: usize = 100_000;
/// Seed of the handle_get lookup sequence.
pub const LOOKUP_SEED: u64 = 0x9E37_79B9_7F4A_7C15;

/// One workload as implemented by one contender.
///
/// The bench times only [`Workload::run`]; [`Workload::setup`] and [`Workload::checksum`] are
/// untimed. When [`Workload::FRESH_STATE`] is set, every timed `run` gets a freshly set-up state
/// (criterion `iter_batched`), because `run` consumes what setup built (churn).
pub trait Workload: Sized {
    /// Whether each `run` needs a fresh `setup` (the bench then uses `iter_batched`).
    const FRESH_STATE: bool = false;
    /// Builds the state (untimed).
    fn setup() -> Self;
    /// The timed work.
    fn run(&mut self);
    /// An order-independent digest of the observable result of the last `run` (untimed).
    fn checksum(&self) -> u64;
}

/// Runs `W` `runs` times from a fresh setup and returns its checksum.
pub fn checksum_after<W: Workload>(runs: usize) -> u64 {
    let mut w = W::setup();
    for _ in 0..runs {
        w.run();
    }
    w.checksum()
}

/// Runs `W` once from a fresh setup and returns its checksum.
pub fn checksum_of<W: Workload>() -> u64 {
    let mut w = W::setup();
    w.run();
    w.checksum()
}

// ---------------------------------------------------------------------------------------------
// Shared initial values: entity number `i` gets exactly these components in every contender.

/// `sin(1.2)`.
pub const SIN_1_2: f32 = 0.932_039_1;
/// `cos(1.2)`.
pub const COS_1_2: f32 = 0.362_357_76;

/// Transform of entity `i`: a rotation of 1.2 rad about x (constant sine and cosine, so making
/// the value costs next to nothing beside the insert being timed) and an `i`-dependent
/// translation.
pub fn transform(i: usize) -> Transform {
    let f = i as f32;
    Transform(Mat4::rotation_x_translation(
        SIN_1_2,
        COS_1_2,
        Vec3::new(f, 1.0, -f),
    ))
}
/// Position of entity `i`.
pub fn position(i: usize) -> Position {
    Position(Vec3::new(i as f32, 1.0, 0.5))
}
/// Rotation of entity `i`.
pub fn rotation(i: usize) -> Rotation {
    Rotation(Vec3::new(0.0, i as f32, 1.0))
}
/// Velocity of entity `i`.
pub fn velocity(i: usize) -> Velocity {
    Velocity(Vec3::new(1.0, (i % 7) as f32, 0.25))
}
/// frag_iter `Data` of entity `i`.
pub fn data(i: usize) -> Data {
    Data(i as f32)
}
/// `CompA` of entity `i` (add_remove, churn).
pub fn comp_a(i: usize) -> CompA {
    CompA(i as f32)
}

/// The shared per-entity step of simple_iter.
///
/// Every contender calls it through internal iteration (`for_each`): its two arguments are then
/// `noalias`, so LLVM pairs the x/y lanes (SLP). A `for` loop over two `Vec`-owned buffers loses
/// that (the optimiser cannot prove the buffers disjoint) and runs ~40% slower, which would make
/// the raw limit artificially slow.
#[inline]
pub fn integrate(p: &mut Position, v: &Velocity) {
    p.0.x += v.0.x;
    p.0.y += v.0.y;
    p.0.z += v.0.z;
}

/// The shared per-entity step of frag_iter.
#[inline]
pub fn double(d: &mut Data) {
    d.0 *= 2.0;
}

// ---------------------------------------------------------------------------------------------
// Checksums.

/// splitmix64's finaliser: spreads the bits of `x`.
#[inline]
pub fn mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Order-independent digest of a set of values: a wrapping sum of mixed bit patterns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Digest(pub u64);

impl Digest {
    /// Adds one `u64`.
    #[inline]
    pub fn add(&mut self, x: u64) {
        self.0 = self.0.wrapping_add(mix(x));
    }
    /// Adds every f32 of a `Pod` value (its exact bits), as one entry.
    pub fn add_pod<T: bytemuck::Pod>(&mut self, value: &T) {
        let h = bytemuck::cast_slice::<T, f32>(std::slice::from_ref(value))
            .iter()
            .fold(0u64, |h, f| mix(h ^ u64::from(f.to_bits())));
        self.add(h);
    }
}

/// The handle_get lookup sequence: `LOOKUPS` indices into `0..HANDLE_N` (xorshift64, seeded).
pub fn lookup_indices() -> Vec<usize> {
    let mut s = LOOKUP_SEED;
    (0..LOOKUPS)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s % HANDLE_N as u64) as usize
        })
        .collect()
}

/// The checksum of handle_get: the wrapping sum of the looked-up positions' `x` bits.
#[inline]
pub fn handle_get_term(p: &Position) -> u64 {
    u64::from(p.0.x.to_bits())
}

/// The add_remove checksum from the number of `CompB` values the removal loop got back and a
/// digest of every remaining `CompA` / `CompB`.
pub fn add_remove_checksum(removed: usize, live: Digest) -> u64 {
    mix(removed as u64) ^ live.0
}

/// The churn checksum from the count of old handles still alive and a digest of every live
/// entity's `CompA`.
pub fn churn_checksum(alive_old: usize, live: Digest) -> u64 {
    mix(alive_old as u64) ^ live.0
}

// ---------------------------------------------------------------------------------------------
// Verification.

/// Names of the workloads, as criterion group names.
pub const WORKLOADS: [&str; 14] = [
    "simple_insert",
    "simple_iter",
    "frag_iter",
    "heavy_compute",
    "heavy_compute_parallel",
    "add_remove",
    "handle_get",
    "churn",
    "join_aligned",
    "join_half",
    "join_sparse3",
    "join_mixed4",
    "frame",
    "tick",
];

/// Checksums of one workload, per contender, in the order `(contender, checksum)`.
pub type Checksums = Vec<(&'static str, u64)>;

macro_rules! all_contenders {
    (joins; $w:ident) => {
        vec![
            ("raw", checksum_of::<joins::raw::$w>()),
            ("ludus", checksum_of::<joins::ludus::$w>()),
            (
                "ludus_clustered",
                checksum_of::<joins::ludus_clustered::$w>(),
            ),
            ("hecs", checksum_of::<joins::hecs::$w>()),
            ("bevy", checksum_of::<joins::bevy::$w>()),
            ("shipyard", checksum_of::<joins::shipyard::$w>()),
            ("sparsey", checksum_of::<joins::sparsey::$w>()),
        ]
    };
    ($w:ident) => {
        vec![
            ("raw", checksum_of::<raw::$w>()),
            ("ludus", checksum_of::<ludus_c::$w>()),
            ("hecs", checksum_of::<hecs_c::$w>()),
            ("bevy", checksum_of::<bevy_c::$w>()),
            ("shipyard", checksum_of::<shipyard_c::$w>()),
            ("sparsey", checksum_of::<sparsey_c::$w>()),
        ]
    };
}

/// Every workload's checksums, per contender.
pub fn all_checksums() -> Vec<(&'static str, Checksums)> {
    vec![
        ("simple_insert", all_contenders!(SimpleInsert)),
        ("simple_iter", all_contenders!(SimpleIter)),
        ("frag_iter", all_contenders!(FragIter)),
        ("heavy_compute", all_contenders!(HeavyCompute)),
        (
            "heavy_compute_parallel",
            all_contenders!(HeavyComputeParallel),
        ),
        ("add_remove", {
            let mut sums = all_contenders!(AddRemove);
            sums.push(("ludus_single", checksum_of::<ludus_c::AddRemoveSingle>()));
            sums
        }),
        ("handle_get", all_contenders!(HandleGet)),
        ("churn", all_contenders!(Churn)),
        ("join_aligned", all_contenders!(joins; JoinAligned)),
        ("join_half", all_contenders!(joins; JoinHalf)),
        ("join_sparse3", all_contenders!(joins; JoinSparse3)),
        ("join_mixed4", all_contenders!(joins; JoinMixed4)),
        (
            "frame",
            vec![
                ("raw", checksum_after::<frame::raw::Frame>(3)),
                ("ludus", checksum_after::<frame::ludus::Frame>(3)),
                ("hecs", checksum_after::<frame::hecs::Frame>(3)),
            ],
        ),
        (
            "tick",
            vec![
                // Long enough for every first-generation particle to expire.
                ("ludus", checksum_after::<tick::ludus::Tick>(160)),
                ("hecs", checksum_after::<tick::hecs::Tick>(160)),
            ],
        ),
    ]
}

/// Runs every workload once per contender and checks that all contenders of a workload agree.
///
/// # Errors
/// A message naming the workload and every contender's checksum when any two disagree.
pub fn verify() -> Result<(), String> {
    for (workload, sums) in all_checksums() {
        let first = sums[0].1;
        if sums.iter().any(|&(_, s)| s != first) {
            return Err(format!("{workload}: contenders disagree: {sums:x?}"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_contenders_agree_on_every_workload() {
        verify().unwrap();
    }

    #[test]
    fn heavy_compute_parallel_matches_single_threaded() {
        assert_eq!(
            checksum_of::<raw::HeavyCompute>(),
            checksum_of::<raw::HeavyComputeParallel>()
        );
    }

    #[test]
    fn digest_is_order_independent_and_value_sensitive() {
        let (mut a, mut b, mut c) = (Digest::default(), Digest::default(), Digest::default());
        for i in 0..10 {
            a.add_pod(&position(i));
            b.add_pod(&position(9 - i));
            c.add_pod(&position(i + usize::from(i == 3)));
        }
        assert_eq!(a, b);
        assert_ne!(a, c);
    }

    #[test]
    fn lookup_indices_are_in_range_and_spread() {
        let idx = lookup_indices();
        assert_eq!(idx.len(), LOOKUPS);
        assert!(idx.iter().all(|&i| i < HANDLE_N));
        let distinct: std::collections::HashSet<_> = idx.iter().collect();
        assert!(
            distinct.len() > LOOKUPS / 2,
            "only {} distinct",
            distinct.len()
        );
    }
}
