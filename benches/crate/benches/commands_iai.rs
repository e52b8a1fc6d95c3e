//! iai-callgrind instruction counts of `CommandBuffer` recording and commit: 1 000 destroys,
//! 1 000 spawns of a two-component bundle (3 000 commands), and 1 000 replacements of an entity
//! by a bundle of its own four types (as `respawn`, in place, and as a destroy and a spawn), and
//! 2 000 respawns by bundles that share some of their predecessor's types, on
//! a world of 10 000 entities with five pools and one owned group (as `benches/commands.rs`).
#![allow(missing_docs)] // iai-callgrind generates undocumented modules

use std::hint::black_box;

use iai_callgrind::{library_benchmark, library_benchmark_group, main};
use ludus::world::{CommandBuffer, WorldOps};
use ludus::EntityId;

/// Position.
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
pub struct Position([f32; 3]);
/// Velocity.
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
pub struct Velocity([f32; 3]);
/// Health.
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
pub struct Health(f32);
/// Rotation.
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
pub struct Rotation([f32; 3]);
/// Tag.
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
pub struct Tag(u32);

ludus::world! {
    pub struct Game { position: Position, velocity: Velocity, health: Health, rotation: Rotation, tag: Tag }
    groups { moving(position: Position, velocity: Velocity) }
}

const N: usize = 10_000;
const K: usize = 1_000;

type State = (Game, Vec<EntityId>, CommandBuffer);

fn world() -> State {
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
    (
        g,
        ids,
        CommandBuffer::try_with_capacity(12 * K, 128 * K).unwrap(),
    )
}

fn record_destroys((g, ids, cmd): &mut State) {
    for &e in ids.iter().step_by(N / K).take(K) {
        cmd.destroy(&g.registry, e).unwrap();
    }
}

fn record_spawns((g, _, cmd): &mut State) {
    for i in 0..K {
        black_box(
            cmd.spawn(&g.registry, (Position([i as f32; 3]), Velocity([1.0; 3])))
                .unwrap(),
        );
    }
}

/// The bundle of the entities `record_destroys` picks (even-numbered: position, health,
/// velocity, rotation), with new values.
fn replacement(i: usize) -> (Position, Health, Velocity, Rotation) {
    (
        Position([i as f32; 3]),
        Health(2.0),
        Velocity([2.0; 3]),
        Rotation([1.0; 3]),
    )
}

/// `record_destroys`'s entities, each respawned with a bundle of its own four types (in place
/// at commit).
fn record_respawns((g, ids, cmd): &mut State) {
    for (i, &e) in ids.iter().step_by(N / K).take(K).enumerate() {
        black_box(cmd.respawn(&g.registry, e, replacement(i)).unwrap());
    }
}

/// The same as a destroy and a spawn each, the destroys first (runs at commit).
fn record_destroys_then_spawns(s: &mut State) {
    record_destroys(s);
    let (g, _, cmd) = s;
    for i in 0..K {
        black_box(cmd.spawn(&g.registry, replacement(i)).unwrap());
    }
}

fn respawns_recorded() -> State {
    let mut s = world();
    record_respawns(&mut s);
    s
}

fn destroys_then_spawns_recorded() -> State {
    let mut s = world();
    record_destroys_then_spawns(&mut s);
    s
}

/// `record_destroys`'s entities respawned without their rotation, and the entities after
/// them (position, health) respawned with a velocity and a rotation too: each replacement
/// shares some types with its predecessor (in place for those, the others removed or
/// inserted; the second kind packs into the group).
fn mixed_respawns_recorded() -> State {
    let mut s = world();
    let (g, ids, cmd) = &mut s;
    for (i, &e) in ids.iter().step_by(N / K).take(K).enumerate() {
        let r = cmd.respawn(
            &g.registry,
            e,
            (Position([i as f32; 3]), Health(2.0), Velocity([2.0; 3])),
        );
        black_box(r.unwrap());
    }
    for (i, &e) in ids.iter().skip(1).step_by(N / K).take(K).enumerate() {
        black_box(cmd.respawn(&g.registry, e, replacement(i)).unwrap());
    }
    s
}

fn destroys_recorded() -> State {
    let mut s = world();
    record_destroys(&mut s);
    s
}

fn spawns_recorded() -> State {
    let mut s = world();
    record_spawns(&mut s);
    s
}

#[library_benchmark]
#[bench::k1000(setup = world)]
fn record_destroy(mut s: State) -> usize {
    record_destroys(&mut s);
    s.2.len()
}

#[library_benchmark]
#[bench::k1000(setup = destroys_recorded)]
fn commit_destroy((mut g, _, mut cmd): State) -> usize {
    g.begin_structural();
    g.commit(&mut cmd).unwrap();
    g.registry.len()
}

#[library_benchmark]
#[bench::k1000(setup = world)]
fn record_spawn2(mut s: State) -> usize {
    record_spawns(&mut s);
    s.2.len()
}

#[library_benchmark]
#[bench::k1000(setup = spawns_recorded)]
fn commit_spawn2((mut g, _, mut cmd): State) -> usize {
    g.begin_structural();
    g.commit(&mut cmd).unwrap();
    g.registry.len()
}

#[library_benchmark]
#[bench::k1000(setup = world)]
fn record_respawn4(mut s: State) -> usize {
    record_respawns(&mut s);
    s.2.len()
}

#[library_benchmark]
#[bench::k1000(setup = respawns_recorded)]
fn commit_respawn4((mut g, _, mut cmd): State) -> usize {
    g.begin_structural();
    g.commit(&mut cmd).unwrap();
    g.registry.len()
}

#[library_benchmark]
#[bench::k1000(setup = destroys_then_spawns_recorded)]
fn commit_destroy_spawn4((mut g, _, mut cmd): State) -> usize {
    g.begin_structural();
    g.commit(&mut cmd).unwrap();
    g.registry.len()
}

#[library_benchmark]
#[bench::k1000(setup = mixed_respawns_recorded)]
fn commit_respawn_mixed((mut g, _, mut cmd): State) -> usize {
    g.begin_structural();
    g.commit(&mut cmd).unwrap();
    g.registry.len()
}

library_benchmark_group!(
    name = commands;
    benchmarks = record_destroy, commit_destroy, record_spawn2, commit_spawn2, record_respawn4,
        commit_respawn4, commit_destroy_spawn4, commit_respawn_mixed
);

main!(library_benchmark_groups = commands);
