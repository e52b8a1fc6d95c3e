//! Layout experiment for the binding table (`docs/decisions/binding-table.md`): the
//! `binding` bench's resolve + read loop over the table, `hashbrown` + foldhash, and three
//! forward-table layouts that need no reverse read to confirm a key, each probed without tags:
//!
//! - `full48`: 48-byte entries holding the whole 32-byte key, linear probing;
//! - `scoped32`: 32-byte entries holding the object UUID and a 4-byte instance index (the
//!   instance interned elsewhere), queried with the 16-byte object UUID, linear probing;
//! - `scoped32_pairs`: the same entries probed a cache line (two entries) at a time;
//! - `hashbrown32`: hashbrown + foldhash keyed by the whole 32-byte `PersistentObjectKey`;
//! - `direct`: the read alone, from handles found beforehand (the floor).
//!
//! Not a bench of the library: the three layouts are bare prototypes (insert and lookup only,
//! an unkeyed fixed secret, no removal), to decide whether a rewrite is worth it. Each round
//! times every contender once over the whole query stream; the line per size gives the medians
//! of the rounds and the ratio to hashbrown's. `LUDUS_HITS_ONLY=1` drops the 10% misses.
//!
//! `cargo bench -p ludus-benches --bench binding_layouts -- 7` (rounds; a bench target, so that
//! `cargo test` does not build the benches' dependencies).
//! `LUDUS_ONLY=<contender>` times one contender alone; `LUDUS_SIZES=1000000` picks the sizes.

use std::hint::black_box;
use std::time::Instant;

use ludus::identity::{InstanceId, PersistentObjectKey};
use ludus::prelude::*;
use uuid::Uuid;

#[path = "common/binding.rs"]
mod common;
use common::{key, spawned, Hp, Rng};

type FoldMap = hashbrown::HashMap<Uuid, EntityId, foldhash::fast::RandomState>;
/// hashbrown + foldhash keyed by the library's whole 32-byte key (the same key as `ludus`).
type FoldMap32 = hashbrown::HashMap<PersistentObjectKey, EntityId, foldhash::fast::RandomState>;

/// Folded 64×64 → 128-bit multiply (the table's hash step).
#[inline(always)]
fn fold(a: u64, b: u64) -> u64 {
    let p = u128::from(a) * u128::from(b);
    (p as u64) ^ ((p >> 64) as u64)
}

const SECRET: [u64; 4] = [
    0x243f_6a88_85a3_08d3,
    0x1319_8a2e_0370_7344,
    0xa409_3822_299f_31d0,
    0x082e_fa98_ec4e_6c89,
];

/// A whole key and its binding (generation 0: empty).
#[derive(Clone, Copy, Default)]
#[repr(C, align(16))]
struct Entry48 {
    key: [u64; 4],
    slot: u32,
    generation: u32,
    kind: u32,
    _pad: u32,
}

/// An object UUID, its interned instance and its binding (generation 0: empty).
#[derive(Clone, Copy, Default)]
#[repr(C, align(32))]
struct Entry32 {
    object: [u64; 2],
    instance: u32,
    slot: u32,
    generation: u32,
    kind: u32,
}

struct Full48 {
    entries: Vec<Entry48>,
    mask: usize,
    owner: u64,
}

impl Full48 {
    fn new(n: usize, owner: u64) -> Self {
        let m = (2 * n).next_power_of_two();
        Full48 {
            entries: vec![Entry48::default(); m],
            mask: m - 1,
            owner,
        }
    }

    #[inline(always)]
    fn home(&self, w: &[u64; 4]) -> usize {
        let s = &SECRET;
        let h = fold(w[2] ^ s[0], w[3] ^ s[1]) ^ fold(w[0] ^ s[2], w[1] ^ s[3]).rotate_left(32);
        (h >> 20) as usize & self.mask
    }

    fn insert(&mut self, w: [u64; 4], e: EntityId) {
        let mut i = self.home(&w);
        while self.entries[i].generation != 0 {
            i = (i + 1) & self.mask;
        }
        self.entries[i] = Entry48 {
            key: w,
            slot: e.slot(),
            generation: e.generation(),
            ..Entry48::default()
        };
    }

    #[inline(always)]
    fn get(&self, w: &[u64; 4]) -> Option<EntityId> {
        let mut i = self.home(w);
        for _ in 0..128 {
            let e = &self.entries[i];
            if e.key == *w {
                return Some(EntityId::from_raw_parts(self.owner, e.slot, e.generation));
            }
            if e.generation == 0 {
                return None;
            }
            i = (i + 1) & self.mask;
        }
        None
    }
}

struct Scoped32 {
    entries: Vec<Entry32>,
    mask: usize,
    owner: u64,
}

impl Scoped32 {
    fn new(n: usize, owner: u64) -> Self {
        let m = (2 * n).next_power_of_two();
        Scoped32 {
            entries: vec![Entry32::default(); m],
            mask: m - 1,
            owner,
        }
    }

    /// The home entry, rounded down to a pair (both probes walk from there).
    #[inline(always)]
    fn home(&self, o: &[u64; 2], instance: u32) -> usize {
        let h = fold(o[0] ^ SECRET[0], o[1] ^ SECRET[1] ^ u64::from(instance));
        (h >> 20) as usize & self.mask & !1
    }

    fn insert(&mut self, o: [u64; 2], instance: u32, e: EntityId) {
        let mut i = self.home(&o, instance);
        while self.entries[i].generation != 0 {
            i = (i + 1) & self.mask;
        }
        self.entries[i] = Entry32 {
            object: o,
            instance,
            slot: e.slot(),
            generation: e.generation(),
            kind: 0,
        };
    }

    #[inline(always)]
    fn entity(&self, e: &Entry32) -> EntityId {
        EntityId::from_raw_parts(self.owner, e.slot, e.generation)
    }

    #[inline(always)]
    fn get(&self, o: &[u64; 2], instance: u32) -> Option<EntityId> {
        let mut i = self.home(o, instance);
        for _ in 0..128 {
            let e = &self.entries[i];
            if e.object == *o && e.instance == instance {
                return Some(self.entity(e));
            }
            if e.generation == 0 {
                return None;
            }
            i = (i + 1) & self.mask;
        }
        None
    }

    /// As `get`, a pair of entries (one cache line) per step, both compared before a branch.
    #[inline(always)]
    fn get_pairs(&self, o: &[u64; 2], instance: u32) -> Option<EntityId> {
        let mut g = self.home(o, instance);
        for _ in 0..64 {
            let (a, b) = (&self.entries[g], &self.entries[g + 1]);
            let is = |e: &Entry32| {
                (e.object[0] == o[0]) & (e.object[1] == o[1]) & (e.instance == instance)
            };
            let (ha, hb) = (is(a), is(b));
            if ha | hb {
                return Some(self.entity(if ha { a } else { b }));
            }
            if (a.generation == 0) | (b.generation == 0) {
                return None;
            }
            g = (g + 2) & self.mask;
        }
        None
    }
}

fn words(k: &PersistentObjectKey) -> [u64; 4] {
    bytemuck::pod_read_unaligned(bytemuck::bytes_of(k))
}

fn object_words(u: &Uuid) -> [u64; 2] {
    bytemuck::pod_read_unaligned(u.as_bytes())
}

const NAMES: [&str; 7] = [
    "hashbrown",
    "ludus",
    "full48",
    "scoped32",
    "scoped32_pairs",
    "hashbrown32",
    "direct",
];

fn main() {
    // `cargo bench` passes `--bench`; the first other argument is the number of rounds.
    let rounds: usize = std::env::args()
        .skip(1)
        .find(|a| a != "--bench")
        .map_or(7, |a| a.parse().expect("rounds: a number"));
    let hits_only = std::env::var_os("LUDUS_HITS_ONLY").is_some();
    // `LUDUS_ONLY=<contender>` times that contender alone (e.g. under `perf stat`).
    let only = std::env::var("LUDUS_ONLY").ok();
    const INSTANCE: u32 = 7;
    // `LUDUS_SIZES=1000000` (comma-separated): those table sizes only.
    let sizes: Vec<usize> = std::env::var("LUDUS_SIZES").map_or_else(
        |_| vec![1_000, 100_000, 1_000_000],
        |s| {
            s.split(',')
                .map(|n| n.trim().parse().expect("sizes: numbers"))
                .collect()
        },
    );
    for n in sizes {
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
        let owner = ids[0].owner();
        let mut fold_map = FoldMap::with_capacity_and_hasher(n, Default::default());
        let mut fold_map32 = FoldMap32::with_capacity_and_hasher(n, Default::default());
        let mut full = Full48::new(n, owner);
        let mut scoped = Scoped32::new(n, owner);
        for (&e, &o) in ids.iter().zip(&objects) {
            fold_map.insert(o, e);
            fold_map32.insert(key(instance, o), e);
            full.insert(words(&key(instance, o)), e);
            scoped.insert(object_words(&o), INSTANCE, e);
        }
        // The `binding` bench's stream: shuffled passes over the keys, 10% fresh misses.
        let len = n.max(1 << 16).div_ceil(1024) * 1024;
        let misses = if hits_only { 0 } else { len / 10 };
        let mut stream = Vec::with_capacity(len);
        let mut pass = objects.clone();
        while stream.len() < len - misses {
            rng.shuffle(&mut pass);
            let take = (len - misses - stream.len()).min(n);
            stream.extend_from_slice(&pass[..take]);
        }
        stream.extend((0..misses).map(|_| rng.uuid()));
        rng.shuffle(&mut stream);
        let keys: Vec<PersistentObjectKey> = stream.iter().map(|&o| key(instance, o)).collect();
        let key_words: Vec<[u64; 4]> = keys.iter().map(words).collect();
        let objects: Vec<[u64; 2]> = stream.iter().map(object_words).collect();
        let direct: Vec<Option<EntityId>> =
            stream.iter().map(|u| fold_map.get(u).copied()).collect();
        let read = |e: Option<EntityId>| {
            e.and_then(|e| world.get::<Hp>(e))
                .map_or(0u64, |h| u64::from(h.0))
        };
        let mut times = vec![Vec::new(); NAMES.len()];
        let mut sums = [0u64; NAMES.len()];
        let reps = (4_000_000 / len).max(1);
        for _ in 0..rounds {
            for (c, (t, sum)) in times.iter_mut().zip(&mut sums).enumerate() {
                if only.as_deref().is_some_and(|o| o != NAMES[c]) {
                    t.push(f64::NAN);
                    continue;
                }
                let start = Instant::now();
                let mut s = 0u64;
                for _ in 0..reps {
                    s += match c {
                        0 => black_box(&stream)
                            .iter()
                            .map(|u| read(fold_map.get(u).copied()))
                            .sum::<u64>(),
                        1 => black_box(&keys)
                            .iter()
                            .map(|k| read(world.resolve(k).entity()))
                            .sum(),
                        2 => black_box(&key_words)
                            .iter()
                            .map(|k| read(full.get(k)))
                            .sum(),
                        3 => black_box(&objects)
                            .iter()
                            .map(|o| read(scoped.get(o, INSTANCE)))
                            .sum(),
                        4 => black_box(&objects)
                            .iter()
                            .map(|o| read(scoped.get_pairs(o, INSTANCE)))
                            .sum(),
                        5 => black_box(&keys)
                            .iter()
                            .map(|k| read(fold_map32.get(k).copied()))
                            .sum(),
                        _ => black_box(&direct).iter().map(|&e| read(e)).sum(),
                    };
                }
                t.push(start.elapsed().as_nanos() as f64 / (reps * len) as f64);
                *sum = s;
            }
        }
        assert!(
            only.is_some() || sums.iter().all(|&s| s == sums[0]),
            "contenders disagree: {sums:?}"
        );
        let medians: Vec<f64> = times
            .iter_mut()
            .map(|v| {
                v.sort_by(f64::total_cmp);
                v[v.len() / 2]
            })
            .collect();
        let row: Vec<String> = NAMES
            .iter()
            .zip(&medians)
            .map(|(name, m)| format!("{name} {m:.1} ns ({:.2}×)", m / medians[0]))
            .collect();
        println!("{n} keys: {}", row.join(", "));
    }
}
