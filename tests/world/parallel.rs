//! Parallel iteration over disjoint dense chunks (feature `rayon`; built only with it, see the
//! `mod` line in `main.rs`): the same values as the sequential loop.

use bytemuck::{Pod, Zeroable};
use ludus::world::WorldOps;
use rayon::prelude::*;

/// Position.
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
#[repr(C)]
pub struct Position(f32);
/// Velocity.
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
#[repr(C)]
pub struct Velocity(f32);

ludus::world! {
    struct Game { position: Position, velocity: Velocity }
    groups { moving(position: Position, velocity: Velocity) }
}

#[test]
fn parallel_chunks_match_sequential() {
    let n = if cfg!(miri) { 40 } else { 10_000 };
    let mut g = Game::try_new(n).unwrap();
    for i in 0..n {
        if i % 3 == 0 {
            g.spawn((Position(i as f32),)).unwrap();
        } else {
            g.spawn((Position(i as f32), Velocity(2.0))).unwrap();
        }
    }
    let expected: Vec<f32> = g.position.values().iter().map(|p| p.0 * 3.0).collect();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .unwrap();
    pool.install(|| {
        g.position
            .par_chunks_mut(64)
            .for_each(|c| c.iter_mut().for_each(|p| p.0 *= 3.0))
    });
    let got: Vec<f32> = g.position.values().iter().map(|p| p.0).collect();
    assert_eq!(got, expected);

    // Groups: zip the packed prefixes chunk by chunk.
    let (_, pos, vel) = g.moving();
    let packed = pos.len();
    pool.install(|| {
        pos.par_chunks_mut(64)
            .zip(vel.par_chunks(64))
            .for_each(|(p, v)| p.iter_mut().zip(v).for_each(|(p, v)| p.0 += v.0))
    });
    assert_eq!(packed, n - n.div_ceil(3));
    // Positions were multiples of 3; moved ones gained 2.
    for (e, p) in g.position.iter() {
        let moved = g.velocity.contains(e);
        assert_eq!(p.0 % 3.0, if moved { 2.0 } else { 0.0 });
    }
}
