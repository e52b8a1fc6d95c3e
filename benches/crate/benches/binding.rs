//! Durable binding table: resolve a durable key to a handle, then read a component
//! by that handle, against three map peers on the same keys and the same world; and activating
//! 100k keys against building a foldhash `hashbrown` map of the same pairs.
//!
//! Group = workload, function id = contender (`ludus` ours, the rest peers), parameter = keys.
//!
//! - `resolve_read/<contender>/<keys>`: one iteration is [`BATCH`] lookups from a stream of
//!   shuffled queries, 90% hits and 10% misses; each hit reads `Hp` with `w.get::<Hp>(e)` and
//!   sums it into a black-boxed accumulator. Successive iterations walk on along the stream
//!   (at least 64k queries, and every key at least once at 100k and 1M), so the 1M case never
//!   sees a cache-warm repeat of one small batch. Divide the time by [`BATCH`] for ns/lookup.
//!   The ludus key is a `PersistentObjectKey` (32 bytes: instance + object UUID);
//!   `hashbrown_foldhash_key` keys by the same 32 bytes (the same-work peer), the other peers
//!   by the 16-byte object UUID alone (a map's natural key for one instance).
//!   `hashbrown_table_keyed` is hashbrown's layout with the library's hash: a
//!   `hashbrown::HashTable` of `(key, handle)` pairs, capacity reserved at init, hashed with
//!   the table's keyed fold and a per-table random secret ([`KeyedTable`]). `ludus_batch`
//!   resolves the same [`BATCH`] queries with one `resolve_batch` call, then reads each hit.
//! - `activate_100k/<contender>`: `w.activate(&batch)` of 100k `Activation`s into a fresh
//!   durable world (world, entities and batch built in the untimed setup) against
//!   `hashbrown::HashMap::with_capacity_and_hasher` + 100k inserts of the same 32-byte keys
//!   (the allocation is timed) and, for reference, the same inserts into a map whose storage
//!   was allocated and touched in the setup (`hashbrown_foldhash_key_preallocated`; the ludus
//!   table is allocated at world init, in the setup), and a [`KeyedTable`] built the same way
//!   (`hashbrown_table_keyed`: allocation and inserts, each refusing a bound key; `_preallocated`:
//!   the inserts alone into touched storage).
//!
//! `cargo bench -p ludus-benches --bench binding -- --warm-up-time 1 --measurement-time 3`.
//! `LUDUS_INTERLEAVE=<rounds> cargo bench -p ludus-benches --bench binding` times only the
//! activation, its five contenders rotated round by round (the shared-machine protocol of
//! `docs/benchmarking.md`), and prints the median of ludus's per-round ratio to each.
//! `LUDUS_INTERLEAVE_RESOLVE=<rounds>` times only `resolve_read` of `ludus`, `ludus_batch`,
//! `hashbrown_foldhash_key` and `hashbrown_table_keyed`, alternated the same way.
//! `LUDUS_CRAFTED=1` times inserting a crafted collision set into `hashbrown_table_keyed`
//! (see [`crafted`]).

use std::collections::HashMap as StdHashMap;
use std::hint::black_box;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use criterion::{criterion_group, BatchSize, BenchmarkId, Criterion, Throughput};
use ludus::identity::{InstanceId, PersistentObjectKey};
use ludus::prelude::*;
use uuid::Uuid;

#[path = "common/binding.rs"]
mod common;
use common::{key, spawned, Hp, Level, Rng};
#[path = "common/keyed_table.rs"]
mod keyed_table;
use keyed_table::KeyedTable;

type FoldMap = hashbrown::HashMap<Uuid, EntityId, foldhash::fast::RandomState>;
/// hashbrown + foldhash keyed by the same 32-byte `PersistentObjectKey` as the table.
type FoldKeyMap = hashbrown::HashMap<PersistentObjectKey, EntityId, foldhash::fast::RandomState>;
/// One contender of `resolve_read`: [`BATCH`] lookups from stream position `at`, summed.
type Contender = fn(&Fixture, usize) -> u64;

/// Lookups per iteration.
const BATCH: usize = 1024;
/// Table sizes of `resolve_read`.
const SIZES: [usize; 3] = [1_000, 100_000, 1_000_000];
/// Keys of `activate_100k`.
const ACTIVATE: usize = 100_000;

/// One size of `resolve_read`: the world with every key bound, the query stream in both key
/// forms, and the three peer maps of the same pairs.
struct Fixture {
    world: Level,
    keys: Vec<PersistentObjectKey>,
    uuids: Vec<Uuid>,
    std: StdHashMap<Uuid, EntityId>,
    fold: FoldMap,
    fold_key: FoldKeyMap,
    keyed: KeyedTable,
    sorted: Vec<(Uuid, EntityId)>,
}

fn build(n: usize) -> Fixture {
    let mut rng = Rng(0x6c75_6475_7300_0000 ^ n as u64);
    let instance = InstanceId::from_uuid(rng.uuid()).unwrap();
    let (mut world, ids, objects) = spawned(n, &mut rng);
    let batch: Vec<Activation> = ids
        .iter()
        .zip(&objects)
        .map(|(&e, &o)| Activation::new(e, key(instance, o)))
        .collect();
    world.activate(&batch).unwrap();
    world.end_structural();

    let pairs: Vec<(Uuid, EntityId)> = objects.iter().copied().zip(ids.iter().copied()).collect();
    let std: StdHashMap<Uuid, EntityId> = pairs.iter().copied().collect();
    let mut fold = FoldMap::with_capacity_and_hasher(n, foldhash::fast::RandomState::default());
    fold.extend(pairs.iter().copied());
    let mut fold_key =
        FoldKeyMap::with_capacity_and_hasher(n, foldhash::fast::RandomState::default());
    fold_key.extend(pairs.iter().map(|&(o, e)| (key(instance, o), e)));
    let mut keyed = KeyedTable::with_capacity(n, KeyedTable::random_secret());
    for &(o, e) in &pairs {
        assert!(keyed.insert(key(instance, o), e));
    }
    let mut sorted = pairs;
    sorted.sort_unstable_by_key(|a| a.0);

    // The stream: 90% hits (shuffled passes over every key), 10% misses (fresh UUIDs).
    let len = n.max(1 << 16).div_ceil(BATCH) * BATCH;
    let misses = len / 10;
    let mut stream: Vec<Uuid> = Vec::with_capacity(len);
    let mut pass = objects.clone();
    while stream.len() < len - misses {
        rng.shuffle(&mut pass);
        let take = (len - misses - stream.len()).min(n);
        stream.extend_from_slice(&pass[..take]);
    }
    stream.extend((0..misses).map(|_| rng.uuid()));
    rng.shuffle(&mut stream);
    let keys: Vec<PersistentObjectKey> = stream.iter().map(|&o| key(instance, o)).collect();

    let fx = Fixture {
        world,
        keys,
        uuids: stream,
        std,
        fold,
        fold_key,
        keyed,
        sorted,
    };
    // Every contender finds the same entities on the whole stream.
    let expect: u64 = (0..len / BATCH).map(|b| fx.ludus(b * BATCH)).sum();
    for f in [
        Fixture::ludus_batch,
        Fixture::std_hashmap,
        Fixture::hashbrown_foldhash,
        Fixture::hashbrown_foldhash_key,
        Fixture::hashbrown_table_keyed,
        Fixture::sorted_vec,
    ] {
        assert_eq!(
            (0..len / BATCH).map(|b| f(&fx, b * BATCH)).sum::<u64>(),
            expect
        );
    }
    fx
}

impl Fixture {
    #[inline(always)]
    fn read(&self, e: Option<EntityId>) -> u64 {
        e.and_then(|e| self.world.get::<Hp>(e))
            .map_or(0, |h| u64::from(h.0))
    }

    fn ludus(&self, at: usize) -> u64 {
        let w = &self.world;
        black_box(&self.keys[at..at + BATCH])
            .iter()
            .map(|k| self.read(w.resolve(k).entity()))
            .sum()
    }

    /// The same queries through `resolve_batch` (the block's keys resolved together, then
    /// each read by handle).
    fn ludus_batch(&self, at: usize) -> u64 {
        let w = &self.world;
        let mut out = [None; BATCH];
        w.resolve_batch(black_box(&self.keys[at..at + BATCH]), &mut out)
            .unwrap();
        out.iter().map(|&e| self.read(e)).sum()
    }

    fn std_hashmap(&self, at: usize) -> u64 {
        black_box(&self.uuids[at..at + BATCH])
            .iter()
            .map(|u| self.read(self.std.get(u).copied()))
            .sum()
    }

    fn hashbrown_foldhash(&self, at: usize) -> u64 {
        black_box(&self.uuids[at..at + BATCH])
            .iter()
            .map(|u| self.read(self.fold.get(u).copied()))
            .sum()
    }

    /// The same-work peer: the same 32-byte keys as the table.
    fn hashbrown_foldhash_key(&self, at: usize) -> u64 {
        black_box(&self.keys[at..at + BATCH])
            .iter()
            .map(|k| self.read(self.fold_key.get(k).copied()))
            .sum()
    }

    /// hashbrown's layout with the table's keyed hash, the same 32-byte keys.
    fn hashbrown_table_keyed(&self, at: usize) -> u64 {
        black_box(&self.keys[at..at + BATCH])
            .iter()
            .map(|k| self.read(self.keyed.get(k)))
            .sum()
    }

    fn sorted_vec(&self, at: usize) -> u64 {
        black_box(&self.uuids[at..at + BATCH])
            .iter()
            .map(|u| {
                let hit = self.sorted.binary_search_by(|(k, _)| k.cmp(u)).ok();
                self.read(hit.map(|i| self.sorted[i].1))
            })
            .sum()
    }
}

fn fixture(i: usize) -> &'static Fixture {
    static FIXTURES: [OnceLock<Fixture>; 3] = [OnceLock::new(), OnceLock::new(), OnceLock::new()];
    FIXTURES[i].get_or_init(|| build(SIZES[i]))
}

fn resolve_read(c: &mut Criterion) {
    let mut group = c.benchmark_group("resolve_read");
    group.throughput(Throughput::Elements(BATCH as u64));
    let contenders: [(&str, Contender); 7] = [
        ("ludus", Fixture::ludus),
        ("ludus_batch", Fixture::ludus_batch),
        ("std_hashmap", Fixture::std_hashmap),
        ("hashbrown_foldhash", Fixture::hashbrown_foldhash),
        ("hashbrown_foldhash_key", Fixture::hashbrown_foldhash_key),
        ("hashbrown_table_keyed", Fixture::hashbrown_table_keyed),
        ("sorted_vec", Fixture::sorted_vec),
    ];
    for (i, &n) in SIZES.iter().enumerate() {
        for (name, f) in contenders {
            group.bench_function(BenchmarkId::new(name, n), |b| {
                let fx = fixture(i);
                let len = fx.keys.len();
                let mut at = 0;
                b.iter(|| {
                    let sum = f(fx, at);
                    at = (at + BATCH) % len;
                    black_box(sum)
                })
            });
        }
    }
    group.finish();
}

/// The inputs of `activate_100k`: the peers' pairs and ludus's keys of the same objects.
struct ActivationInputs {
    pairs: Vec<(PersistentObjectKey, EntityId)>,
    keys: Vec<PersistentObjectKey>,
}

impl ActivationInputs {
    fn new() -> Self {
        let mut rng = Rng(0x6163_7469_7661_7465);
        let instance = InstanceId::from_uuid(rng.uuid()).unwrap();
        let (_, ids, objects) = spawned(ACTIVATE, &mut rng);
        let keys: Vec<PersistentObjectKey> = objects.iter().map(|&o| key(instance, o)).collect();
        ActivationInputs {
            pairs: keys.iter().copied().zip(ids).collect(),
            keys,
        }
    }

    /// A fresh world with its entities and the batch (handles carry the world's owner).
    fn fresh(&self) -> (Level, Vec<Activation>) {
        let mut w = Level::try_new_durable(ACTIVATE, DurableConfig::default()).unwrap();
        w.begin_structural();
        let mut ids = vec![EntityId::NULL; ACTIVATE];
        w.spawn_batch_into((0..ACTIVATE as u32).map(|i| (Hp(i),)), &mut ids)
            .unwrap();
        let batch = ids
            .iter()
            .zip(&self.keys)
            .map(|(&e, &k)| Activation::new(e, k))
            .collect();
        (w, batch)
    }

    /// The peer's inserts into `m`.
    fn insert_all(&self, m: &mut FoldKeyMap) {
        for &(k, e) in black_box(&self.pairs) {
            m.insert(k, e);
        }
    }

    /// The peer's whole build: allocation and inserts.
    fn build(&self) -> FoldKeyMap {
        let mut m =
            FoldKeyMap::with_capacity_and_hasher(ACTIVATE, foldhash::fast::RandomState::default());
        self.insert_all(&mut m);
        m
    }

    /// hashbrown's layout with the table's keyed hash: allocation and inserts, each refusing
    /// a bound key as activation does.
    fn build_keyed(&self) -> KeyedTable {
        let mut t = KeyedTable::with_capacity(ACTIVATE, KeyedTable::random_secret());
        self.insert_keyed(&mut t);
        t
    }

    /// The inserts of [`build_keyed`](Self::build_keyed) alone.
    fn insert_keyed(&self, t: &mut KeyedTable) {
        for &(k, e) in black_box(&self.pairs) {
            assert!(t.insert(k, e));
        }
    }
}

fn activate_100k(c: &mut Criterion) {
    let mut group = c.benchmark_group("activate_100k");
    group.throughput(Throughput::Elements(ACTIVATE as u64));
    let inputs = ActivationInputs::new();
    group.bench_function("ludus", |b| {
        b.iter_batched(
            || inputs.fresh(),
            |(mut w, batch)| {
                w.activate(black_box(&batch)).unwrap();
                (w, batch)
            },
            BatchSize::PerIteration,
        )
    });
    group.bench_function("hashbrown_foldhash_key", |b| {
        // Allocation and inserts timed; the drop is not (as the ludus world's).
        b.iter_batched(|| (), |()| inputs.build(), BatchSize::PerIteration)
    });
    group.bench_function("hashbrown_table_keyed", |b| {
        b.iter_batched(|| (), |()| inputs.build_keyed(), BatchSize::PerIteration)
    });
    let keyed = inputs.build_keyed();
    group.bench_function("hashbrown_table_keyed_preallocated", |b| {
        b.iter_batched(
            || {
                let mut t = keyed.clone();
                t.clear();
                t
            },
            |mut t| {
                inputs.insert_keyed(&mut t);
                t
            },
            BatchSize::PerIteration,
        )
    });
    // Storage allocated and touched in the setup: a clone of a built map, emptied.
    let template = inputs.build();
    group.bench_function("hashbrown_foldhash_key_preallocated", |b| {
        b.iter_batched(
            || {
                let mut m = template.clone();
                m.clear();
                m
            },
            |mut m| {
                inputs.insert_all(&mut m);
                m
            },
            BatchSize::PerIteration,
        )
    });
    group.finish();
}

criterion_group!(benches, resolve_read, activate_100k);

/// `LUDUS_INTERLEAVE=<rounds>`: activation only, the contenders alternated within each round
/// (which goes first rotates too), each timed once per round, so a phase of the shared host
/// lands on all alike; prints the medians and the median of ludus's per-round ratio to each.
fn interleaved_activation(rounds: usize) {
    let inputs = ActivationInputs::new();
    // The inserts alone, into storage allocated and touched before the clock starts.
    let template = inputs.build();
    let keyed = inputs.build_keyed();
    let contenders: [(&str, &dyn Fn() -> Duration); 5] = [
        ("ludus", &|| {
            timed(
                || inputs.fresh(),
                |(w, batch)| w.activate(black_box(&*batch)).unwrap(),
            )
        }),
        ("hashbrown_foldhash_key", &|| {
            timed(|| (), |()| inputs.build())
        }),
        ("hashbrown_foldhash_key_preallocated", &|| {
            let empty = || {
                let mut m = template.clone();
                m.clear();
                m
            };
            timed(empty, |m| inputs.insert_all(m))
        }),
        ("hashbrown_table_keyed", &|| {
            timed(|| (), |()| inputs.build_keyed())
        }),
        ("hashbrown_table_keyed_preallocated", &|| {
            let empty = || {
                let mut m = keyed.clone();
                m.clear();
                m
            };
            timed(empty, |m| inputs.insert_keyed(m))
        }),
    ];
    let k = contenders.len();
    let mut times = [(); 5].map(|()| Vec::with_capacity(rounds));
    for r in 0..rounds {
        for j in 0..k {
            let c = (r + j) % k;
            times[c].push((contenders[c].1)());
        }
    }
    for (c, (name, _)) in contenders.iter().enumerate() {
        let mut ratios: Vec<f64> = times[0]
            .iter()
            .zip(&times[c])
            .map(|(a, b)| a.as_secs_f64() / b.as_secs_f64())
            .collect();
        ratios.sort_by(f64::total_cmp);
        let mut t = times[c].clone();
        t.sort();
        println!(
            "activate_100k/{name} ({rounds} rounds): median {:?}, ludus ÷ it {:.2} \
             (rounds {:.2}..{:.2})",
            t[rounds / 2],
            ratios[rounds / 2],
            ratios[0],
            ratios[rounds - 1]
        );
    }
}

/// The time `work` takes on what `setup` made; both are dropped after the clock stops.
fn timed<S, T>(setup: impl FnOnce() -> S, work: impl FnOnce(&mut S) -> T) -> Duration {
    let mut s = setup();
    let t = Instant::now();
    let out = work(&mut s);
    let d = t.elapsed();
    drop(black_box((s, out)));
    d
}

/// `LUDUS_INTERLEAVE_RESOLVE=<rounds>`: `resolve_read` of `ludus`, `ludus_batch`, the
/// same-work peer and hashbrown's layout with the table's hash at every size, one timed span of [`SPAN`] batches of each per round (the order
/// rotates by round; each contender walks on along its own copy of the stream position);
/// prints each one's median ns per lookup and the median of its per-round ratio to the peer.
fn interleaved_resolve(rounds: usize) {
    const SPAN: usize = 64;
    let contenders: [(&str, Contender); 4] = [
        ("hashbrown_foldhash_key", Fixture::hashbrown_foldhash_key),
        ("ludus", Fixture::ludus),
        ("ludus_batch", Fixture::ludus_batch),
        ("hashbrown_table_keyed", Fixture::hashbrown_table_keyed),
    ];
    let count = contenders.len();
    for (i, &n) in SIZES.iter().enumerate() {
        let fx = fixture(i);
        let len = fx.keys.len();
        let mut at = [0usize; 4];
        let mut times = [(); 4].map(|()| Vec::with_capacity(rounds));
        for r in 0..rounds {
            for j in 0..count {
                let k = (r + j) % count;
                let t = Instant::now();
                let mut sum = 0;
                for _ in 0..SPAN {
                    sum += (contenders[k].1)(fx, at[k]);
                    at[k] = (at[k] + BATCH) % len;
                }
                times[k].push(t.elapsed().as_secs_f64() * 1e9 / (SPAN * BATCH) as f64);
                black_box(sum);
            }
        }
        let median = |mut v: Vec<f64>| {
            v.sort_by(f64::total_cmp);
            v[v.len() / 2]
        };
        for (k, (name, _)) in contenders.iter().enumerate() {
            let ratios = times[k].iter().zip(&times[0]).map(|(a, b)| a / b).collect();
            println!(
                "resolve_read/{name}/{n}: {:.1} ns per lookup, ÷ peer per round {:.3}",
                median(times[k].clone()),
                median(ratios)
            );
        }
    }
}

/// `LUDUS_CRAFTED=1`: what a collision set crafted against a leaked secret costs hashbrown's
/// layout, which has no probe bound: `n` keys whose hashes are all equal (the object half's
/// first word equal to the secret's first word zeroes its fold; one instance), inserted into a
/// [`KeyedTable`] with that secret, for doubling `n`. The library's table refuses such a key
/// at `MAX_PROBE` (`CandidateRejection::ProbeLimit`), so its cost stays linear.
fn crafted() {
    let mut rng = Rng(0x6372_6166_7465_6400);
    // A first word that is a version-4 UUID's (byte 6's high nibble 4, read little-endian).
    let w0 = (rng.next() & !(0xf << 52)) | (0x4 << 52);
    let secret = [w0, rng.next(), rng.next(), rng.next()];
    let instance = InstanceId::from_uuid(rng.uuid()).unwrap();
    let mut previous: Option<f64> = None;
    for n in [1_000usize, 2_000, 4_000, 8_000, 16_000] {
        let keys: Vec<PersistentObjectKey> = (0..n)
            .map(|_| {
                // Word 1: the RFC variant in byte 8 (its top two bits 10), the rest random.
                let w1 = (rng.next() & !0xc0) | 0x80;
                let bytes: [u8; 16] = bytemuck::cast([w0, w1]);
                key(instance, Uuid::from_bytes(bytes))
            })
            .collect();
        let t = Instant::now();
        let mut table = KeyedTable::with_capacity(n, secret);
        for (i, &k) in keys.iter().enumerate() {
            assert!(table.insert(k, EntityId::from_raw_parts(1, i as u32, 0)));
        }
        let ms = t.elapsed().as_secs_f64() * 1e3;
        black_box(&table);
        let growth = previous.map_or(String::new(), |p| format!(", ×{:.1} the previous", ms / p));
        println!("crafted/hashbrown_table_keyed/{n}: {ms:.2} ms{growth}");
        previous = Some(ms);
    }
}

/// The positive round count in environment variable `var`, if set.
fn rounds(var: &str) -> Option<usize> {
    std::env::var(var)
        .ok()
        .and_then(|r| r.parse::<usize>().ok())
        .filter(|&r| r > 0)
}

fn main() {
    if std::env::var_os("LUDUS_CRAFTED").is_some() {
        crafted();
        return;
    }
    if let Some(rounds) = rounds("LUDUS_INTERLEAVE_RESOLVE") {
        interleaved_resolve(rounds);
        return;
    }
    if let Some(rounds) = rounds("LUDUS_INTERLEAVE") {
        interleaved_activation(rounds);
        return;
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
