//! `CommandBuffer` costs per command: recording (during the systems phase, against the
//! read-only registry) and commit (at the structural boundary), for destroys and for spawns of
//! a two-component bundle (one create and two inserts: three commands), on a world of 10 000
//! entities with five pools, one owned group. Each sample gets a fresh world and buffer.
//!
//! `cargo bench -p ludus-benches --bench commands`; figures in `perf-results/commands.md`.

use std::hint::black_box;

use bytemuck::{Pod, Zeroable};
use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use ludus::world::{CommandBuffer, WorldOps};
use ludus::EntityId;

/// Position.
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
#[repr(C)]
pub struct Position([f32; 3]);
/// Velocity.
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
#[repr(C)]
pub struct Velocity([f32; 3]);
/// Health.
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
#[repr(C)]
pub struct Health(f32);
/// Rotation.
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
#[repr(C)]
pub struct Rotation([f32; 3]);
/// Tag.
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
#[repr(C)]
pub struct Tag(u32);

ludus::world! {
    struct Game { position: Position, velocity: Velocity, health: Health, rotation: Rotation, tag: Tag }
    groups { moving(position: Position, velocity: Velocity) }
}

const N: usize = 10_000;
/// Destroys or spawns per sample.
const K: usize = 1_000;

/// A world of `N` entities (all with position and health, every other one with velocity and
/// rotation), in the systems phase, with its handles.
fn world() -> (Game, Vec<EntityId>) {
    let mut g = Game::try_new(N + K).unwrap();
    let ids = (0..N)
        .map(|i| {
            if i % 2 == 0 {
                g.spawn((
                    Position([i as f32; 3]),
                    Health(1.0),
                    Velocity([1.0; 3]),
                    Rotation([0.0; 3]),
                ))
            } else {
                g.spawn((Position([i as f32; 3]), Health(1.0)))
            }
            .unwrap()
        })
        .collect();
    g.end_structural();
    (g, ids)
}

fn buffer() -> CommandBuffer {
    CommandBuffer::try_with_capacity(4 * K, 64 * K).unwrap()
}

fn record_destroys(cmd: &mut CommandBuffer, g: &Game, ids: &[EntityId]) {
    for &e in ids.iter().step_by(N / K).take(K) {
        cmd.destroy(&g.registry, e).unwrap();
    }
}

fn record_spawns(cmd: &mut CommandBuffer, g: &Game) {
    for i in 0..K {
        black_box(
            cmd.spawn(&g.registry, (Position([i as f32; 3]), Velocity([1.0; 3])))
                .unwrap(),
        );
    }
}

fn commands(c: &mut Criterion) {
    let mut group = c.benchmark_group("commands");
    group.throughput(Throughput::Elements(K as u64));
    group.bench_function("record_destroy", |b| {
        b.iter_batched(
            || (world(), buffer()),
            |((g, ids), mut cmd)| {
                record_destroys(&mut cmd, &g, &ids);
                (g, cmd)
            },
            BatchSize::LargeInput,
        )
    });
    group.bench_function("commit_destroy", |b| {
        b.iter_batched(
            || {
                let ((g, ids), mut cmd) = (world(), buffer());
                record_destroys(&mut cmd, &g, &ids);
                (g, cmd)
            },
            |(mut g, mut cmd)| {
                g.begin_structural();
                g.commit(&mut cmd).unwrap();
                (g, cmd)
            },
            BatchSize::LargeInput,
        )
    });
    group.throughput(Throughput::Elements(3 * K as u64));
    group.bench_function("record_spawn2", |b| {
        b.iter_batched(
            || (world(), buffer()),
            |((g, _), mut cmd)| {
                record_spawns(&mut cmd, &g);
                (g, cmd)
            },
            BatchSize::LargeInput,
        )
    });
    group.bench_function("commit_spawn2", |b| {
        b.iter_batched(
            || {
                let ((g, _), mut cmd) = (world(), buffer());
                record_spawns(&mut cmd, &g);
                (g, cmd)
            },
            |(mut g, mut cmd)| {
                g.begin_structural();
                g.commit(&mut cmd).unwrap();
                (g, cmd)
            },
            BatchSize::LargeInput,
        )
    });
    group.finish();
}

criterion_group!(benches, commands);
criterion_main!(benches);
