//! iai-callgrind instruction counts of persistent spawn and checkpoints, at sizes
//! callgrind can run: a transaction of 1k prepared spawns against spawning the same bundles
//! directly (durable and plain worlds), and the checkpoint digest of 10k entities against
//! copying and hashing the same number of canonical bytes. The workloads are the `persistent`
//! criterion bench's (see its module docs), smaller.
//!
//! Everything is deterministic (`SeqEntropy` ids), except that the stable-id index draws a
//! hashing secret per table, so the counts of the rows that touch it may move a little between
//! runs. SHA-256 runs sha2's portable code under callgrind (valgrind does not offer the SHA
//! extensions, so sha2's runtime detection falls back), in both the digest and the baseline.
#![allow(missing_docs)] // iai-callgrind generates undocumented modules

use std::hint::black_box;

use iai_callgrind::{library_benchmark, library_benchmark_group, main};
use ludus::durable::{Checkpoint, Transaction};
use ludus::prelude::*;

#[path = "common/persistent.rs"]
mod common;
use common::{durable, id_bytes, plain, prepared, Hp, PlainSim, Pos, Sim};

/// Prepared spawns of `transact`.
const SPAWNS: usize = 1_000;
/// Entities of `checkpoint_digest`.
const ENTITIES: usize = 10_000;
fn transact_setup(n: usize) -> (Sim, Transaction) {
    (durable(n), prepared(n).1)
}

#[library_benchmark]
#[bench::k1000(args = (SPAWNS), setup = transact_setup)]
fn transact((mut w, tx): (Sim, Transaction)) -> (Sim, Transaction) {
    w.transact(black_box(&tx)).unwrap();
    (w, tx)
}

fn spawn_setup(n: usize) -> (Sim, Vec<(Pos, Hp)>) {
    (durable(n), prepared(n).0)
}

fn plain_setup(n: usize) -> (PlainSim, Vec<(Pos, Hp)>) {
    (plain(n), prepared(n).0)
}

// Baseline of `transact`: the same bundles spawned directly into the same fresh durable world.
#[library_benchmark]
#[bench::k1000(args = (SPAWNS), setup = spawn_setup)]
fn spawn_batch_durable((mut w, bundles): (Sim, Vec<(Pos, Hp)>)) -> (Sim, Vec<(Pos, Hp)>) {
    w.spawn_batch(black_box(&bundles).iter().copied()).unwrap();
    (w, bundles)
}

// Reference: the same spawn into a plain world.
#[library_benchmark]
#[bench::k1000(args = (SPAWNS), setup = plain_setup)]
fn spawn_batch_plain((mut w, bundles): (PlainSim, Vec<(Pos, Hp)>)) -> (PlainSim, Vec<(Pos, Hp)>) {
    w.spawn_batch(black_box(&bundles).iter().copied()).unwrap();
    (w, bundles)
}

/// A world of `n` entities with stable ids (one transaction), the canonical length, the id
/// bytes in dense order.
type Saved = (Sim, usize, Vec<u8>);

fn saved_setup(n: usize) -> Saved {
    let mut w = durable(n);
    w.transact(&prepared(n).1).unwrap();
    w.end_structural();
    let len = w.checkpoint_bytes().unwrap().len();
    let ids = id_bytes(&w);
    (w, len, ids)
}

#[library_benchmark]
#[bench::k10000(args = (ENTITIES), setup = saved_setup)]
fn checkpoint_digest((w, _, _): Saved) -> [u8; 32] {
    black_box(&w).checkpoint_digest().unwrap()
}

// Baseline of `checkpoint_digest`: as many bytes as the canonical form, copied and hashed.
#[library_benchmark]
#[bench::k10000(args = (ENTITIES), setup = saved_setup)]
fn copy_hash((w, len, ids): Saved) -> [u8; 32] {
    common::copy_hash(black_box(&w), len, &ids)
}

// For information: the canonical bytes without the hash, and the structured checkpoint.
#[library_benchmark]
#[bench::k10000(args = (ENTITIES), setup = saved_setup)]
fn checkpoint_bytes((w, _, _): Saved) -> Vec<u8> {
    black_box(&w).checkpoint_bytes().unwrap()
}

#[library_benchmark]
#[bench::k10000(args = (ENTITIES), setup = saved_setup)]
fn checkpoint((w, _, _): Saved) -> Checkpoint {
    black_box(&w).checkpoint().unwrap()
}

fn restore_setup(n: usize) -> (Sim, Checkpoint) {
    let (w, ..) = saved_setup(n);
    (durable(n), w.checkpoint().unwrap())
}

// For information: restoring the checkpoint into a fresh durable world.
#[library_benchmark]
#[bench::k10000(args = (ENTITIES), setup = restore_setup)]
fn restore_fresh((mut w, cp): (Sim, Checkpoint)) -> (Sim, Checkpoint) {
    w.restore(black_box(&cp)).unwrap();
    (w, cp)
}

library_benchmark_group!(
    name = persistent;
    benchmarks = transact, spawn_batch_durable, spawn_batch_plain, checkpoint_digest, copy_hash,
        checkpoint_bytes, checkpoint, restore_fresh
);

main!(library_benchmark_groups = persistent);
