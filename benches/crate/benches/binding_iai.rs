//! iai-callgrind instruction counts of the durable binding table: the `binding`
//! bench's resolve + read loop at 1k and 100k keys, one by one and through `resolve_batch`
//! (1M is kept out of callgrind: too slow), and
//! activating 10k keys into a fresh durable world. Foldhash `hashbrown` peers of both (lookup
//! loop; `with_capacity_and_hasher` + inserts), keyed by the same 32-byte key (`_key`, the
//! same work) and by the object UUID alone, and `hashbrown::HashTable` hashed with the table's
//! own keyed fold under a fixed secret (`_table_keyed`: hashbrown's layout, the library's hash).
//!
//! One lookup run is [`BATCH`] queries from a shuffled stream, 90% hits and 10% misses, each hit
//! followed by `w.get::<Hp>(e)`; divide Ir by [`BATCH`] for instructions per lookup. The keys and
//! the stream are deterministic; the binding table's hashing secret is drawn per table (from the
//! standard library's keyed hasher), so probe lengths, and so the ludus counts, may move by a
//! few instructions per lookup between runs. The peer uses a fixed foldhash seed.
#![allow(missing_docs)] // iai-callgrind generates undocumented modules

use std::hint::black_box;

use iai_callgrind::{library_benchmark, library_benchmark_group, main};
use ludus::identity::{InstanceId, PersistentObjectKey};
use ludus::prelude::*;
use uuid::Uuid;

#[path = "common/binding.rs"]
mod common;
use common::{key, spawned, Hp, Level, Rng};
#[path = "common/keyed_table.rs"]
mod keyed_table;
use keyed_table::KeyedTable;

type FoldMap = hashbrown::HashMap<Uuid, EntityId, foldhash::fast::FixedState>;
/// The same-work peer: keyed by the same 32-byte `PersistentObjectKey` as the table.
type FoldKeyMap = hashbrown::HashMap<PersistentObjectKey, EntityId, foldhash::fast::FixedState>;

/// The fixed secret of the [`KeyedTable`] contenders (hashbrown's layout with the table's
/// keyed hash), so their counts repeat.
const SECRET: [u64; 4] = [
    0x243f_6a88_85a3_08d3,
    0x1319_8a2e_0370_7344,
    0xa409_3822_299f_31d0,
    0x082e_fa98_ec4e_6c89,
];

/// Lookups per run.
const BATCH: usize = 1024;
/// Keys of `activate`.
const ACTIVATE: usize = 10_000;

/// A durable world of `n` entities, the activation batch of `n` fresh keys, and the pairs.
fn unbound(n: usize, rng: &mut Rng) -> (Level, Vec<Activation>, Vec<(Uuid, EntityId)>) {
    let instance = InstanceId::from_uuid(rng.uuid()).unwrap();
    let (w, ids, objects) = spawned(n, rng);
    let pairs: Vec<(Uuid, EntityId)> = objects.into_iter().zip(ids).collect();
    let batch = pairs
        .iter()
        .map(|&(o, e)| Activation::new(e, key(instance, o)))
        .collect();
    (w, batch, pairs)
}

/// A bound world of `n` keys and [`BATCH`] queries: shuffled hits, one in ten a miss.
type Lookup = (Level, Vec<PersistentObjectKey>);

fn lookup_setup(n: usize) -> Lookup {
    let mut rng = Rng(0x6c75_6475_7300_0000 ^ n as u64);
    let (mut w, batch, _) = unbound(n, &mut rng);
    w.activate(&batch).unwrap();
    w.end_structural();
    let instance = batch[0].key.instance;
    let queries = (0..BATCH)
        .map(|i| {
            if i % 10 == 9 {
                key(instance, rng.uuid())
            } else {
                batch[rng.below(n)].key
            }
        })
        .collect();
    (w, queries)
}

#[library_benchmark]
#[bench::k1000(args = (1_000), setup = lookup_setup)]
#[bench::k100000(args = (100_000), setup = lookup_setup)]
fn resolve_read((w, queries): Lookup) -> u64 {
    queries
        .iter()
        .map(|k| {
            w.resolve(black_box(k))
                .entity()
                .and_then(|e| w.get::<Hp>(e))
                .map_or(0, |h| u64::from(h.0))
        })
        .sum()
}

// The same queries through one `resolve_batch` call (key by key below the cached-table size,
// the pipeline above it), then each hit read by handle.
#[library_benchmark]
#[bench::k1000(args = (1_000), setup = lookup_setup)]
#[bench::k100000(args = (100_000), setup = lookup_setup)]
fn resolve_batch_read((w, queries): Lookup) -> u64 {
    let mut out = [None; BATCH];
    w.resolve_batch(black_box(&queries), &mut out).unwrap();
    out.iter()
        .map(|&e| e.and_then(|e| w.get::<Hp>(e)).map_or(0, |h| u64::from(h.0)))
        .sum()
}

type PeerLookup = (Level, FoldMap, Vec<Uuid>);

fn peer_setup(n: usize) -> PeerLookup {
    let (w, keys) = lookup_setup(n);
    let mut map = FoldMap::with_capacity_and_hasher(n, foldhash::fast::FixedState::with_seed(7));
    for (k, e) in w.durable().bindings().iter().map(|(k, e, _)| (k, e)) {
        map.insert(k.object.as_uuid(), e);
    }
    let queries = keys.iter().map(|k| k.object.as_uuid()).collect();
    (w, map, queries)
}

#[library_benchmark]
#[bench::k1000(args = (1_000), setup = peer_setup)]
#[bench::k100000(args = (100_000), setup = peer_setup)]
fn resolve_read_hashbrown_foldhash((w, map, queries): PeerLookup) -> u64 {
    queries
        .iter()
        .map(|u| {
            map.get(black_box(u))
                .and_then(|&e| w.get::<Hp>(e))
                .map_or(0, |h| u64::from(h.0))
        })
        .sum()
}

type PeerKeyLookup = (Level, FoldKeyMap, Vec<PersistentObjectKey>);

fn peer_key_setup(n: usize) -> PeerKeyLookup {
    let (w, queries) = lookup_setup(n);
    let mut map = FoldKeyMap::with_capacity_and_hasher(n, foldhash::fast::FixedState::with_seed(7));
    for (k, e, _) in w.durable().bindings().iter() {
        map.insert(k, e);
    }
    (w, map, queries)
}

#[library_benchmark]
#[bench::k1000(args = (1_000), setup = peer_key_setup)]
#[bench::k100000(args = (100_000), setup = peer_key_setup)]
fn resolve_read_hashbrown_foldhash_key((w, map, queries): PeerKeyLookup) -> u64 {
    queries
        .iter()
        .map(|k| {
            map.get(black_box(k))
                .and_then(|&e| w.get::<Hp>(e))
                .map_or(0, |h| u64::from(h.0))
        })
        .sum()
}

type PeerKeyedLookup = (Level, KeyedTable, Vec<PersistentObjectKey>);

fn peer_keyed_setup(n: usize) -> PeerKeyedLookup {
    let (w, queries) = lookup_setup(n);
    let mut table = KeyedTable::with_capacity(n, SECRET);
    for (k, e, _) in w.durable().bindings().iter() {
        assert!(table.insert(k, e));
    }
    (w, table, queries)
}

// hashbrown's layout (`HashTable`, the key in the bucket) with the table's keyed hash.
#[library_benchmark]
#[bench::k1000(args = (1_000), setup = peer_keyed_setup)]
#[bench::k100000(args = (100_000), setup = peer_keyed_setup)]
fn resolve_read_hashbrown_table_keyed((w, table, queries): PeerKeyedLookup) -> u64 {
    queries
        .iter()
        .map(|k| {
            table
                .get(black_box(k))
                .and_then(|e| w.get::<Hp>(e))
                .map_or(0, |h| u64::from(h.0))
        })
        .sum()
}

type Activate = (Level, Vec<Activation>);

fn activate_setup(n: usize) -> Activate {
    let (w, batch, _) = unbound(n, &mut Rng(0x6163_7469_7661_7465));
    (w, batch)
}

#[library_benchmark]
#[bench::k10000(args = (ACTIVATE), setup = activate_setup)]
fn activate((mut w, batch): Activate) -> Level {
    w.activate(black_box(&batch)).unwrap();
    w
}

fn pairs_setup(n: usize) -> Vec<(Uuid, EntityId)> {
    unbound(n, &mut Rng(0x6163_7469_7661_7465)).2
}

// Reference for `activate`: `with_capacity_and_hasher` + `n` inserts (the allocation counted).
#[library_benchmark]
#[bench::k10000(args = (ACTIVATE), setup = pairs_setup)]
fn activate_hashbrown_foldhash(pairs: Vec<(Uuid, EntityId)>) -> FoldMap {
    let mut m =
        FoldMap::with_capacity_and_hasher(pairs.len(), foldhash::fast::FixedState::with_seed(7));
    for &(k, e) in &pairs {
        m.insert(k, e);
    }
    m
}

fn key_pairs_setup(n: usize) -> Vec<(PersistentObjectKey, EntityId)> {
    let (_, batch, _) = unbound(n, &mut Rng(0x6163_7469_7661_7465));
    batch.iter().map(|a| (a.key, a.entity)).collect()
}

// The same-work reference for `activate`: the same 32-byte keys.
#[library_benchmark]
#[bench::k10000(args = (ACTIVATE), setup = key_pairs_setup)]
fn activate_hashbrown_foldhash_key(pairs: Vec<(PersistentObjectKey, EntityId)>) -> FoldKeyMap {
    let mut m =
        FoldKeyMap::with_capacity_and_hasher(pairs.len(), foldhash::fast::FixedState::with_seed(7));
    for &(k, e) in &pairs {
        m.insert(k, e);
    }
    m
}

// hashbrown's layout with the table's keyed hash: `with_capacity` + `n` inserts, each refusing
// a bound key.
#[library_benchmark]
#[bench::k10000(args = (ACTIVATE), setup = key_pairs_setup)]
fn activate_hashbrown_table_keyed(pairs: Vec<(PersistentObjectKey, EntityId)>) -> KeyedTable {
    let mut t = KeyedTable::with_capacity(pairs.len(), SECRET);
    for &(k, e) in &pairs {
        assert!(t.insert(k, e));
    }
    t
}

library_benchmark_group!(
    name = binding;
    benchmarks = resolve_read, resolve_batch_read, resolve_read_hashbrown_foldhash,
        resolve_read_hashbrown_foldhash_key, resolve_read_hashbrown_table_keyed,
        activate, activate_hashbrown_foldhash, activate_hashbrown_foldhash_key,
        activate_hashbrown_table_keyed
);

main!(library_benchmark_groups = binding);
