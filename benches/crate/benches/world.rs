//! World micro-benchmarks with a raw-`Vec` contender on the peer workloads.
//!
//! Group = workload, function id = contender (`ludus*` ours, `raw` the plain-Vec limit).
//! `cargo bench --bench world -- --warm-up-time 1 --measurement-time 2` while developing.

use ludus::world::WorldOps;
use std::hint::black_box;

use bytemuck::{Pod, Zeroable};
use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use ludus::EntityId;

/// 4x4 matrix.
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
#[repr(C)]
pub struct Transform([f32; 16]);
/// Position.
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
#[repr(C)]
pub struct Position([f32; 3]);
/// Rotation.
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
#[repr(C)]
pub struct Rotation([f32; 3]);
/// Velocity.
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
#[repr(C)]
pub struct Velocity([f32; 3]);
/// Added and removed in `add_remove`.
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
#[repr(C)]
pub struct Extra(f32);

ludus::world! {
    struct Game {
        transform: Transform,
        position: Position,
        rotation: Rotation,
        velocity: Velocity,
        extra: Extra,
    }
    groups { moving(position: Position, velocity: Velocity) }
}

const IDENTITY: Transform = Transform([
    1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0,
]);

fn game(n: usize) -> (Game, Vec<EntityId>) {
    let mut g = Game::try_new(n).unwrap();
    let ids = (0..n)
        .map(|i| {
            g.spawn((
                IDENTITY,
                Position([i as f32; 3]),
                Rotation([0.0; 3]),
                Velocity([1.0; 3]),
            ))
            .unwrap()
        })
        .collect();
    (g, ids)
}

fn game_by_inserts(n: usize) -> Game {
    let mut g = Game::try_new(n).unwrap();
    for i in 0..n {
        let e = g.create().unwrap();
        g.insert(e, IDENTITY).unwrap();
        g.insert(e, Position([i as f32; 3])).unwrap();
        g.insert(e, Rotation([0.0; 3])).unwrap();
        g.insert(e, Velocity([1.0; 3])).unwrap();
    }
    g
}

fn simple_insert(c: &mut Criterion) {
    let mut group = c.benchmark_group("simple_insert");
    group.bench_function("ludus", |b| {
        b.iter(|| black_box(game(10_000).0.registry.len()))
    });
    group.bench_function("ludus_batch", |b| {
        b.iter(|| {
            let mut g = Game::try_new(10_000).unwrap();
            g.spawn_batch((0..10_000).map(|i| {
                (
                    IDENTITY,
                    Position([i as f32; 3]),
                    Rotation([0.0; 3]),
                    Velocity([1.0; 3]),
                )
            }))
            .unwrap();
            black_box(g.registry.len())
        })
    });
    group.bench_function("ludus_inserts", |b| {
        b.iter(|| black_box(game_by_inserts(10_000).registry.len()))
    });
    group.bench_function("raw", |b| {
        b.iter(|| {
            let n = 10_000;
            let (mut t, mut p, mut r, mut v) = (
                Vec::with_capacity(n),
                Vec::with_capacity(n),
                Vec::with_capacity(n),
                Vec::with_capacity(n),
            );
            for i in 0..n {
                t.push(IDENTITY);
                p.push(Position([i as f32; 3]));
                r.push(Rotation([0.0; 3]));
                v.push(Velocity([1.0; 3]));
            }
            black_box((t, p, r, v));
        })
    });
    group.finish();
    let mut group = c.benchmark_group("world_init");
    group.bench_function("ludus", |b| {
        b.iter(|| black_box(Game::try_new(10_000).unwrap()))
    });
    group.finish();
}

fn step(p: &mut Position, v: &Velocity) {
    for k in 0..3 {
        p.0[k] += v.0[k];
    }
}

fn simple_iter(c: &mut Criterion) {
    let mut group = c.benchmark_group("simple_iter");
    let (mut g, _) = game(10_000);
    g.end_structural();
    group.bench_function("ludus", |b| {
        b.iter(|| {
            let (_, pos, vel) = g.moving();
            for (p, v) in pos.iter_mut().zip(vel.iter()) {
                step(p, v);
            }
        })
    });
    group.bench_function("ludus_join", |b| {
        b.iter(|| {
            for (_, (p, v)) in ludus::join((&mut g.position, &g.velocity)) {
                step(p, v);
            }
        })
    });
    let mut pos: Vec<Position> = (0..10_000).map(|i| Position([i as f32; 3])).collect();
    let vel = vec![Velocity([1.0; 3]); 10_000];
    group.bench_function("raw", |b| {
        b.iter(|| {
            for (p, v) in pos.iter_mut().zip(vel.iter()) {
                step(p, v);
            }
        })
    });
    group.finish();
}

macro_rules! frag_world {
    ($($t:ident),+) => {
        $(
            /// Fragmenting component.
            #[derive(Clone, Copy, Debug, Pod, Zeroable)]
            #[repr(C)]
            pub struct $t(f32);
        )+
        /// Shared component.
        #[derive(Clone, Copy, Debug, Pod, Zeroable)]
        #[repr(C)]
        pub struct Data(f32);
        #[allow(non_snake_case)]
        mod frag {
            use super::*;
            ludus::world! {
                pub struct Frag { pub data: Data, $(pub $t: $t),+ }
            }
            pub fn build() -> Frag {
                let mut w = Frag::try_new(26 * 20).unwrap();
                $(
                    for _ in 0..20 {
                        let e = w.create().unwrap();
                        w.insert(e, $t(0.0)).unwrap();
                        w.insert(e, Data(1.0)).unwrap();
                    }
                )+
                w
            }
        }
    };
}
frag_world!(A, B, C, D, E, F, G, H, I, J, K, L, M, N, O, P, Q, R, S, T, U, V, W, X, Y, Z);

fn frag_iter(c: &mut Criterion) {
    let mut group = c.benchmark_group("frag_iter");
    let mut w = frag::build();
    group.bench_function("ludus", |b| {
        b.iter(|| {
            for d in w.data.values_mut() {
                d.0 *= 2.0;
            }
        })
    });
    let mut raw = vec![Data(1.0); 26 * 20];
    group.bench_function("raw", |b| {
        b.iter(|| {
            for d in raw.iter_mut() {
                d.0 *= 2.0;
            }
        })
    });
    group.finish();
}

/// General 4x4 inverse (cofactor expansion); returns the input when singular.
fn invert(m: &Transform) -> Transform {
    let a = &m.0;
    let mut inv = [0.0f32; 16];
    inv[0] = a[5] * a[10] * a[15] - a[5] * a[11] * a[14] - a[9] * a[6] * a[15]
        + a[9] * a[7] * a[14]
        + a[13] * a[6] * a[11]
        - a[13] * a[7] * a[10];
    inv[4] = -a[4] * a[10] * a[15] + a[4] * a[11] * a[14] + a[8] * a[6] * a[15]
        - a[8] * a[7] * a[14]
        - a[12] * a[6] * a[11]
        + a[12] * a[7] * a[10];
    inv[8] = a[4] * a[9] * a[15] - a[4] * a[11] * a[13] - a[8] * a[5] * a[15]
        + a[8] * a[7] * a[13]
        + a[12] * a[5] * a[11]
        - a[12] * a[7] * a[9];
    inv[12] = -a[4] * a[9] * a[14] + a[4] * a[10] * a[13] + a[8] * a[5] * a[14]
        - a[8] * a[6] * a[13]
        - a[12] * a[5] * a[10]
        + a[12] * a[6] * a[9];
    inv[1] = -a[1] * a[10] * a[15] + a[1] * a[11] * a[14] + a[9] * a[2] * a[15]
        - a[9] * a[3] * a[14]
        - a[13] * a[2] * a[11]
        + a[13] * a[3] * a[10];
    inv[5] = a[0] * a[10] * a[15] - a[0] * a[11] * a[14] - a[8] * a[2] * a[15]
        + a[8] * a[3] * a[14]
        + a[12] * a[2] * a[11]
        - a[12] * a[3] * a[10];
    inv[9] = -a[0] * a[9] * a[15] + a[0] * a[11] * a[13] + a[8] * a[1] * a[15]
        - a[8] * a[3] * a[13]
        - a[12] * a[1] * a[11]
        + a[12] * a[3] * a[9];
    inv[13] = a[0] * a[9] * a[14] - a[0] * a[10] * a[13] - a[8] * a[1] * a[14]
        + a[8] * a[2] * a[13]
        + a[12] * a[1] * a[10]
        - a[12] * a[2] * a[9];
    inv[2] = a[1] * a[6] * a[15] - a[1] * a[7] * a[14] - a[5] * a[2] * a[15]
        + a[5] * a[3] * a[14]
        + a[13] * a[2] * a[7]
        - a[13] * a[3] * a[6];
    inv[6] = -a[0] * a[6] * a[15] + a[0] * a[7] * a[14] + a[4] * a[2] * a[15]
        - a[4] * a[3] * a[14]
        - a[12] * a[2] * a[7]
        + a[12] * a[3] * a[6];
    inv[10] = a[0] * a[5] * a[15] - a[0] * a[7] * a[13] - a[4] * a[1] * a[15]
        + a[4] * a[3] * a[13]
        + a[12] * a[1] * a[7]
        - a[12] * a[3] * a[5];
    inv[14] = -a[0] * a[5] * a[14] + a[0] * a[6] * a[13] + a[4] * a[1] * a[14]
        - a[4] * a[2] * a[13]
        - a[12] * a[1] * a[6]
        + a[12] * a[2] * a[5];
    inv[3] = -a[1] * a[6] * a[11] + a[1] * a[7] * a[10] + a[5] * a[2] * a[11]
        - a[5] * a[3] * a[10]
        - a[9] * a[2] * a[7]
        + a[9] * a[3] * a[6];
    inv[7] = a[0] * a[6] * a[11] - a[0] * a[7] * a[10] - a[4] * a[2] * a[11]
        + a[4] * a[3] * a[10]
        + a[8] * a[2] * a[7]
        - a[8] * a[3] * a[6];
    inv[11] = -a[0] * a[5] * a[11] + a[0] * a[7] * a[9] + a[4] * a[1] * a[11]
        - a[4] * a[3] * a[9]
        - a[8] * a[1] * a[7]
        + a[8] * a[3] * a[5];
    inv[15] = a[0] * a[5] * a[10] - a[0] * a[6] * a[9] - a[4] * a[1] * a[10]
        + a[4] * a[2] * a[9]
        + a[8] * a[1] * a[6]
        - a[8] * a[2] * a[5];
    let det = a[0] * inv[0] + a[1] * inv[4] + a[2] * inv[8] + a[3] * inv[12];
    if det == 0.0 {
        return *m;
    }
    let d = 1.0 / det;
    Transform(inv.map(|x| x * d))
}

fn heavy(t: &mut Transform) {
    for _ in 0..100 {
        *t = invert(t);
    }
}

fn heavy_compute(c: &mut Criterion) {
    let mut group = c.benchmark_group("heavy_compute");
    let (mut g, _) = game(1_000);
    group.bench_function("ludus", |b| {
        b.iter(|| g.transform.values_mut().iter_mut().for_each(heavy))
    });
    #[cfg(feature = "rayon")]
    {
        use rayon::prelude::*;
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        group.bench_function("ludus_par2", |b| {
            b.iter(|| {
                pool.install(|| {
                    g.transform
                        .par_chunks_mut(64)
                        .for_each(|c| c.iter_mut().for_each(heavy))
                })
            })
        });
    }
    let mut raw = vec![IDENTITY; 1_000];
    group.bench_function("raw", |b| b.iter(|| raw.iter_mut().for_each(heavy)));
    group.finish();
}

fn add_remove(c: &mut Criterion) {
    let mut group = c.benchmark_group("add_remove");
    let (mut g, ids) = game(10_000);
    group.bench_function("ludus", |b| {
        b.iter(|| {
            for &e in &ids {
                g.insert(e, Extra(1.0)).unwrap();
            }
            for &e in &ids {
                g.remove::<Extra>(e).unwrap();
            }
        })
    });
    let mut raw: Vec<Option<Extra>> = vec![None; 10_000];
    group.bench_function("raw", |b| {
        b.iter(|| {
            for x in raw.iter_mut() {
                *x = Some(Extra(1.0));
            }
            for x in raw.iter_mut() {
                black_box(x.take());
            }
        })
    });
    group.finish();
}

/// Deterministic xorshift permutation source.
fn shuffled(n: usize, count: usize) -> Vec<usize> {
    let mut s = 0x9E37_79B9_7F4A_7C15u64;
    (0..count)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s % n as u64) as usize
        })
        .collect()
}

fn handle_get(c: &mut Criterion) {
    let mut group = c.benchmark_group("handle_get");
    let n = 100_000;
    let mut g = Game::try_new(n).unwrap();
    let ids: Vec<EntityId> = (0..n)
        .map(|i| {
            let e = g.create().unwrap();
            g.insert(e, Position([i as f32; 3])).unwrap();
            e
        })
        .collect();
    let order = shuffled(n, n);
    let handles: Vec<EntityId> = order.iter().map(|&i| ids[i]).collect();
    group.bench_function("ludus", |b| {
        b.iter(|| {
            let mut sum = 0.0;
            for &e in &handles {
                sum += g.position.get(e).map_or(0.0, |p| p.0[0]);
            }
            black_box(sum)
        })
    });
    group.bench_function("ludus_sparse_path", |b| {
        b.iter(|| {
            let mut sum = 0.0;
            let values = g.position.values();
            for &e in &handles {
                sum += g.position.dense_index(e).map_or(0.0, |i| values[i].0[0]);
            }
            black_box(sum)
        })
    });
    let raw: Vec<Position> = (0..n).map(|i| Position([i as f32; 3])).collect();
    group.bench_function("raw", |b| {
        b.iter(|| {
            let mut sum = 0.0;
            for &i in &order {
                sum += raw[i].0[0];
            }
            black_box(sum)
        })
    });
    group.finish();
}

fn churn(c: &mut Criterion) {
    let mut group = c.benchmark_group("churn");
    let n = 100_000;
    group.bench_function("ludus", |b| {
        b.iter_batched(
            || {
                let mut g = Game::try_new(n).unwrap();
                let mut ids = vec![EntityId::NULL; n];
                g.create_batch(&mut ids).unwrap();
                (g, ids)
            },
            |(mut g, ids)| {
                for &e in ids.iter().step_by(2) {
                    g.destroy(e).unwrap();
                }
                for _ in 0..n / 2 {
                    g.create().unwrap();
                }
                black_box(ids.iter().filter(|e| g.registry.is_alive(**e)).count())
            },
            BatchSize::LargeInput,
        )
    });
    group.bench_function("raw", |b| {
        b.iter_batched(
            || {
                let gens = vec![1u32; n];
                let ids: Vec<(u32, u32)> = (0..n as u32).map(|i| (i, 1)).collect();
                (gens, ids, Vec::<u32>::with_capacity(n))
            },
            |(mut gens, ids, mut free)| {
                for &(slot, _) in ids.iter().step_by(2) {
                    gens[slot as usize] += 1;
                    free.push(slot);
                }
                for _ in 0..n / 2 {
                    black_box(free.pop());
                }
                black_box(ids.iter().filter(|(s, g)| gens[*s as usize] == *g).count())
            },
            BatchSize::LargeInput,
        )
    });
    group.finish();
}

criterion_group!(
    benches,
    simple_insert,
    simple_iter,
    frag_iter,
    heavy_compute,
    add_remove,
    handle_get,
    churn
);
criterion_main!(benches);
