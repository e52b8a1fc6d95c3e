//! Persistent spawn and checkpoints: a transaction of 10k prepared spawns against
//! spawning the same bundles directly, and the checkpoint digest of 100k entities against
//! copying and hashing the same number of canonical bytes.
//!
//! Group = workload, function id = contender (`transact`, `checkpoint_digest`, … ours; the
//! baselines named for what they do), all in one run so they are measured back to back.
//!
//! - `transact_10k/transact`: `w.transact(&tx)` of a [`Transaction`] of 10k
//!   `TxCommand::Create` into a fresh durable world (`try_new_durable(10k)`,
//!   `begin_structural()`, built in `iter_batched`'s untimed setup). The `PreparedSpawn`s are
//!   prepared once, before any timing, with `PreparedSpawn::prepare::<Sim, _, _>((Pos, Hp),
//!   &mut SeqEntropy::new(i))`.
//! - `transact_10k/spawn_batch_durable`: `w.spawn_batch(bundles.iter().copied())` of the same
//!   10k `(Pos, Hp)` bundles into the same fresh durable world (same setup). Target:
//!   `transact ≤ 1.5 × spawn_batch_durable`.
//! - `transact_10k/spawn_batch_plain`: the same spawn into a plain `try_new(10k)` world, for
//!   reference. In every case the world is returned from the routine, so its drop is not timed.
//! - `transact_10k/spawn_batch_hash_ids`: a lower bound of what any `transact` must do:
//!   `spawn_batch_into` of the same bundles into the same fresh durable world, then every
//!   prepared spawn's `PersistentId` inserted, mapped to its new entity, into a hashbrown map
//!   (foldhash) whose storage was allocated and written in the setup (as the world's stable
//!   index is at init). No validation, no collision or duplicate check: strictly less than a
//!   transaction must do.
//! - `checkpoint_100k/checkpoint_digest`: `w.checkpoint_digest()` (canonical bytes + SHA-256)
//!   of a durable world of 100k entities with stable ids, two components each (`Pos` 8 bytes,
//!   `Hp` 4 bytes), created by one transaction in the (one-off) setup.
//! - `checkpoint_100k/copy_hash`: the baseline: a `Vec<u8>` allocated with the length of
//!   `w.checkpoint_bytes()`, filled with the canonical header, the 33 id bytes (namespace tag +
//!   32-byte key) of every entity (taken from the world in the setup, as an index holds them),
//!   the pools' `values()` as bytes, then zero-filled to the same length (the canonical form's
//!   per-entity framing), and SHA-256'd. Target: `checkpoint_digest ≤ 2 × copy_hash`.
//! - `checkpoint_100k/checkpoint_bytes`, `/checkpoint`, `/restore_fresh`, `/restore_replace`:
//!   for information. `checkpoint_bytes` is the digest's input without the hash; `checkpoint`
//!   the structured form; `restore_fresh` restores it into a fresh durable world (built in the
//!   setup); `restore_replace` restores it over a world holding the same 100k (destroy 100k,
//!   create 100k).
//! - `checkpoint_100k_parts/*`: for attribution only, parts of `checkpoint_digest` rebuilt with
//!   the public API on the same world: `sha256_only` hashes the world's canonical bytes (built
//!   in the setup); `stable_ids` collects `(w.stable_id(e), e)` for every entity (dense order);
//!   `sort_ids` sorts a copy of that vector by id (copy made in the setup), as the canonical
//!   order needs.
//!
//! `cargo bench -p ludus-benches --bench persistent -- --warm-up-time 1 --measurement-time 3`.
//!
//! With `LUDUS_INTERLEAVE=<rounds>` in the environment the bench skips criterion and instead
//! runs the two target pairs round-robin (`transact` / `spawn_batch_durable` /
//! `spawn_batch_plain` / `spawn_batch_hash_ids`, then `checkpoint_digest` / `copy_hash`), one
//! timed call of each contender per round, starting with a different contender each round,
//! setups untimed; it
//! prints each contender's median and the median of the per-round ratios. On a shared machine
//! this keeps a burst of someone else's load from landing on one contender only. The checkpoint
//! rounds also time `checkpoint_bytes` and the `checkpoint_100k_parts` rows; with
//! `LUDUS_PERSISTENT_ONLY_TRANSACT` set as well, only the transaction rounds run.

use std::hint::black_box;
use std::sync::OnceLock;

use std::time::{Duration, Instant};

use criterion::{criterion_group, BatchSize, Criterion, Throughput};
use ludus::durable::Checkpoint;
use ludus::identity::PersistentId;
use ludus::prelude::*;
use sha2::{Digest, Sha256};

#[path = "common/persistent.rs"]
mod common;
use common::{durable, id_bytes, plain, prepared, Hp, Pos, Sim};
use ludus::durable::{Transaction, TxCommand};

/// Prepared spawns of `transact_10k`.
const SPAWNS: usize = 10_000;
/// Entities of `checkpoint_100k`.
const ENTITIES: usize = 100_000;
fn transact_10k(c: &mut Criterion) {
    let (bundles, tx) = prepared(SPAWNS);
    // The contenders build the same worlds.
    let mut a = durable(SPAWNS);
    assert_eq!(a.transact(&tx).unwrap().created, SPAWNS);
    let mut b = durable(SPAWNS);
    assert_eq!(b.spawn_batch(bundles.iter().copied()).unwrap(), SPAWNS);
    assert_eq!(a.pos.values(), b.pos.values());
    assert_eq!(a.hp.values(), b.hp.values());

    let mut group = c.benchmark_group("transact_10k");
    group.throughput(Throughput::Elements(SPAWNS as u64));
    group.bench_function("transact", |b| {
        b.iter_batched(
            || durable(SPAWNS),
            |mut w| {
                w.transact(black_box(&tx)).unwrap();
                w
            },
            BatchSize::PerIteration,
        )
    });
    group.bench_function("spawn_batch_durable", |b| {
        b.iter_batched(
            || durable(SPAWNS),
            |mut w| {
                w.spawn_batch(black_box(&bundles).iter().copied()).unwrap();
                w
            },
            BatchSize::PerIteration,
        )
    });
    group.bench_function("spawn_batch_plain", |b| {
        b.iter_batched(
            || plain(SPAWNS),
            |mut w| {
                w.spawn_batch(black_box(&bundles).iter().copied()).unwrap();
                w
            },
            BatchSize::PerIteration,
        )
    });
    let ids = ids_of(&tx);
    group.bench_function("spawn_batch_hash_ids", |b| {
        b.iter_batched(
            || {
                let out = vec![EntityId::from_raw_parts(0, 0, 0); SPAWNS];
                (durable(SPAWNS), resident_map(SPAWNS), out)
            },
            |(mut w, mut map, mut out)| {
                spawn_and_map(&mut w, &mut map, &bundles, &ids, &mut out);
                (w, map)
            },
            BatchSize::PerIteration,
        )
    });
    group.finish();
}

/// The stable ids of a transaction of creates, in order.
fn ids_of(tx: &Transaction) -> Vec<PersistentId> {
    tx.commands
        .iter()
        .map(|c| match c {
            TxCommand::Create { spawn } => spawn.id,
            _ => unreachable!("creates only"),
        })
        .collect()
}

/// A map of `n` stable ids whose storage is allocated and written (then cleared), as the
/// world's stable index is at init.
fn resident_map(n: usize) -> IdMap {
    let mut map = IdMap::with_capacity_and_hasher(n, Default::default());
    for k in 0..n {
        // Distinct keys scatter over the whole table, so every page of it is written.
        let mut key = [0u8; 32];
        key[..8].copy_from_slice(&(k as u64).to_le_bytes());
        map.insert(
            PersistentId::Authored(key),
            EntityId::from_raw_parts(0, 0, 0),
        );
    }
    map.clear();
    map
}

/// hashbrown with foldhash, from stable id to entity.
type IdMap = hashbrown::HashMap<PersistentId, EntityId, foldhash::fast::RandomState>;

/// A lower bound of what `transact` must do (`spawn_batch_hash_ids`): the bundles spawned
/// directly, and every id mapped to its entity in a hashbrown map (foldhash) whose storage is
/// resident (as the world's stable index is) — no validation, no check against live ids.
fn spawn_and_map(
    w: &mut Sim,
    map: &mut IdMap,
    bundles: &[(Pos, Hp)],
    ids: &[PersistentId],
    out: &mut [EntityId],
) {
    w.spawn_batch_into(black_box(bundles).iter().copied(), out)
        .unwrap();
    for (id, &e) in black_box(ids).iter().zip(out.iter()) {
        map.insert(*id, e);
    }
}

/// The world of `checkpoint_100k`, its checkpoint, its canonical length, and the id bytes.
struct Fixture {
    world: Sim,
    checkpoint: Checkpoint,
    len: usize,
    ids: Vec<u8>,
}

fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let (_, tx) = prepared(ENTITIES);
        let mut world = durable(ENTITIES);
        assert_eq!(world.transact(&tx).unwrap().created, ENTITIES);
        world.end_structural();
        let checkpoint = world.checkpoint().unwrap();
        assert_eq!(checkpoint.digest(), world.checkpoint_digest().unwrap());
        let len = world.checkpoint_bytes().unwrap().len();
        let ids = id_bytes(&world);
        Fixture {
            world,
            checkpoint,
            len,
            ids,
        }
    })
}

/// The baseline: the same number of bytes as the canonical form, copied and hashed.
fn copy_hash(fx: &Fixture) -> [u8; 32] {
    common::copy_hash(&fx.world, fx.len, &fx.ids)
}

fn checkpoint_100k(c: &mut Criterion) {
    let fx = fixture();
    let baseline = copy_hash(fx);
    assert_eq!(black_box(baseline).len(), 32);
    let mut group = c.benchmark_group("checkpoint_100k");
    group.throughput(Throughput::Elements(ENTITIES as u64));
    group.bench_function("checkpoint_digest", |b| {
        b.iter(|| black_box(&fx.world).checkpoint_digest().unwrap())
    });
    group.bench_function("copy_hash", |b| b.iter(|| copy_hash(black_box(fx))));
    group.bench_function("checkpoint_bytes", |b| {
        b.iter(|| black_box(&fx.world).checkpoint_bytes().unwrap())
    });
    group.bench_function("checkpoint", |b| {
        b.iter(|| black_box(&fx.world).checkpoint().unwrap())
    });
    group.bench_function("restore_fresh", |b| {
        b.iter_batched(
            || durable(ENTITIES),
            |mut w| {
                w.restore(black_box(&fx.checkpoint)).unwrap();
                w
            },
            BatchSize::PerIteration,
        )
    });
    let mut live = durable(ENTITIES);
    live.restore(&fx.checkpoint).unwrap();
    assert_eq!(
        live.checkpoint_digest().unwrap(),
        fx.world.checkpoint_digest().unwrap()
    );
    group.bench_function("restore_replace", |b| {
        b.iter(|| live.restore(black_box(&fx.checkpoint)).unwrap())
    });
    assert_eq!(
        live.checkpoint_digest().unwrap(),
        fx.world.checkpoint_digest().unwrap()
    );
    group.finish();
}

/// `(id, entity)` of every entity, in dense order.
fn stable_ids(w: &Sim) -> Vec<(PersistentId, EntityId)> {
    w.pos
        .owners()
        .iter()
        .filter_map(|e| w.stable_id(e).map(|id| (id, e)))
        .collect()
}

fn checkpoint_100k_parts(c: &mut Criterion) {
    let fx = fixture();
    let bytes = fx.world.checkpoint_bytes().unwrap();
    let unsorted = stable_ids(&fx.world);
    assert_eq!(unsorted.len(), ENTITIES);
    let mut group = c.benchmark_group("checkpoint_100k_parts");
    group.throughput(Throughput::Elements(ENTITIES as u64));
    group.bench_function("sha256_only", |b| {
        b.iter(|| -> [u8; 32] { Sha256::digest(black_box(&bytes)).into() })
    });
    group.bench_function("stable_ids", |b| {
        b.iter(|| stable_ids(black_box(&fx.world)))
    });
    group.bench_function("sort_ids", |b| {
        b.iter_batched(
            || unsorted.clone(),
            |mut v| {
                v.sort_unstable_by_key(|a| a.0);
                v
            },
            BatchSize::PerIteration,
        )
    });
    group.finish();
}

/// Median of `v` (sorted in place).
fn median(v: &mut [f64]) -> f64 {
    v.sort_unstable_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// `rounds` rounds of one timed call per contender (after its untimed setup), rotating the
/// order; prints medians (µs) and the median per-round ratio of each contender to the first.
fn round_robin(name: &str, rounds: usize, contenders: &mut [(&str, &mut dyn FnMut() -> Duration)]) {
    let k = contenders.len();
    let mut times = vec![Vec::with_capacity(rounds); k];
    for r in 0..rounds {
        for j in 0..k {
            let i = (r + j) % k;
            times[i].push((contenders[i].1)().as_secs_f64() * 1e6);
        }
    }
    println!("{name}: {rounds} rounds, interleaved");
    let first = times[0].clone();
    for (i, (label, _)) in contenders.iter().enumerate() {
        let mut ratios: Vec<f64> = first.iter().zip(&times[i]).map(|(a, b)| a / b).collect();
        let mut t = times[i].clone();
        println!(
            "  {label:<22} median {:>11.1} µs   {} ÷ this, median per round: {:.3}",
            median(&mut t),
            contenders[0].0,
            median(&mut ratios)
        );
    }
}

fn interleaved(rounds: usize) {
    let (bundles, tx) = prepared(SPAWNS);
    let mut transact = || {
        let mut w = durable(SPAWNS);
        let t = Instant::now();
        w.transact(black_box(&tx)).unwrap();
        let d = t.elapsed();
        drop(black_box(w));
        d
    };
    fn spawn<W: WorldOps + Stores<Pos> + Stores<Hp>>(mut w: W, bundles: &[(Pos, Hp)]) -> Duration {
        let t = Instant::now();
        w.spawn_batch(black_box(bundles).iter().copied()).unwrap();
        let d = t.elapsed();
        drop(black_box(w));
        d
    }
    let mut spawn_durable = || spawn(durable(SPAWNS), &bundles);
    let mut spawn_plain = || spawn(plain(SPAWNS), &bundles);
    let ids = ids_of(&tx);
    let mut hash_ids = || {
        let out = vec![EntityId::from_raw_parts(0, 0, 0); SPAWNS];
        let (mut w, mut map, mut out) = (durable(SPAWNS), resident_map(SPAWNS), out);
        let t = Instant::now();
        spawn_and_map(&mut w, &mut map, &bundles, &ids, &mut out);
        let d = t.elapsed();
        drop(black_box((w, map)));
        d
    };
    round_robin(
        "transact_10k",
        rounds,
        &mut [
            ("transact", &mut transact),
            ("spawn_batch_durable", &mut spawn_durable),
            ("spawn_batch_plain", &mut spawn_plain),
            ("spawn_batch_hash_ids", &mut hash_ids),
        ],
    );
    if std::env::var_os("LUDUS_PERSISTENT_ONLY_TRANSACT").is_some() {
        return;
    }
    let fx = fixture();
    let mut digest = || {
        let t = Instant::now();
        black_box(black_box(&fx.world).checkpoint_digest().unwrap());
        t.elapsed()
    };
    let mut baseline = || {
        let t = Instant::now();
        black_box(copy_hash(black_box(fx)));
        t.elapsed()
    };
    // Parts, for attribution (as `checkpoint_100k_parts`).
    let bytes = fx.world.checkpoint_bytes().unwrap();
    let unsorted = stable_ids(&fx.world);
    let mut canonical = || {
        let t = Instant::now();
        black_box(black_box(&fx.world).checkpoint_bytes().unwrap());
        t.elapsed()
    };
    let mut sha = || {
        let t = Instant::now();
        let d: [u8; 32] = Sha256::digest(black_box(&bytes)).into();
        black_box(d);
        t.elapsed()
    };
    let mut ids = || {
        let t = Instant::now();
        black_box(stable_ids(black_box(&fx.world)));
        t.elapsed()
    };
    let mut sort = || {
        let mut v = unsorted.clone();
        let t = Instant::now();
        v.sort_unstable_by_key(|a| a.0);
        let d = t.elapsed();
        black_box(v);
        d
    };
    round_robin(
        "checkpoint_100k",
        rounds,
        &mut [
            ("checkpoint_digest", &mut digest),
            ("copy_hash", &mut baseline),
            ("checkpoint_bytes", &mut canonical),
            ("parts/sha256_only", &mut sha),
            ("parts/stable_ids", &mut ids),
            ("parts/sort_ids", &mut sort),
        ],
    );
}

criterion_group!(
    benches,
    transact_10k,
    checkpoint_100k,
    checkpoint_100k_parts
);

fn main() {
    if let Some(rounds) = std::env::var("LUDUS_INTERLEAVE")
        .ok()
        .and_then(|r| r.parse().ok())
    {
        interleaved(rounds);
        return;
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
