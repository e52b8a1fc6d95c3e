//! Content restore, save and `identity apply`: a 100k-entity version-2 World record
//! restored into a world against plain typed serde_json plus a `HashMap<Uuid, usize>` fixup,
//! saved against `serde_json::to_writer` of the same typed structs, and `identity apply` of a
//! 10 MB version-1 world.
//!
//! The record: 100k entities, three components each (`pos {x, y}`, `hp {hp}`, `enemy {target,
//! speed}`); `enemy.target` names another entity on 30% of them (half forward, half backward),
//! `""` on the rest; canonical bytes (`WorldV2::to_bytes`, the line layout: one compact entity
//! per line), about 18.8 MB.
//!
//! - `restore_100k/restore_world`: `restore_world_from_slice(bytes, instance, world)` into a
//!   fresh durable world of 100k (built in the untimed setup; the world is returned, so its
//!   drop is not timed): strict parse, decode, resolve, create, insert, name, bind.
//! - `restore_100k/typed_parse_fixup`: the baseline: `serde_json::from_slice::<RecordT>` of
//!   the same bytes into plain structs (`Uuid` ids, `String` targets) and a fixup pass that
//!   builds a `HashMap<Uuid, usize>` of the entities and resolves every non-empty target to
//!   its index. Target: `restore_world ≤ 1.2 × typed_parse_fixup`.
//! - `save_100k/save_world`: `save_world_bytes` of the restored world (canonical bytes).
//! - `save_100k/save_world_uuid_slots`, for information: the same entities restored from the
//!   saved record (canonical, so in UUID order): slots in UUID order, save's best case.
//! - `save_100k/typed_to_writer`: `serde_json::to_writer` of the parsed `RecordT` into a
//!   `Vec<u8>` with the output's capacity reserved. Target: `save_world ≤ 1.2 ×
//!   typed_to_writer`. `save_100k/typed_to_writer_pretty`, for information: the same with
//!   `to_writer_pretty` (twice the bytes; the record's layout before the line layout).
//! - `level_10k/restore_level`: `restore_level_from_slice` of a 10 000-entity world's level file
//!   (`save_level`), bound under an instance, against `level_10k/restore_world`: the same
//!   world's World record (`save_world_bytes`, the same entities in the same order) through
//!   `restore_world_from_slice`. Target: `restore_level ≤ 1.2 × restore_world`.
//!   `level_10k/restore_level_tree`, for information: the tree reader (`LevelFile::from_slice`
//!   then `restore_level`), the path a level took before the streaming reader read levels.
//! - `apply_10mb/identity_apply`: `cook::apply` (read the manifest, schema and a 10 MB
//!   version-1 world (pretty, as the legacy tools wrote it) from a temporary root, replay, publish the version-2 record) — the
//!   `ludus-cook identity apply` command without the process start. Target: < 0.5 s.
//!
//! `LUDUS_INTERLEAVE=<rounds>` skips criterion and times the pairs round-robin, one call of
//! each per round, alternating which goes first, and prints the medians and the median of the
//! per-round ratios (the shared-machine protocol of `docs/benchmarking.md`). With it:
//! `LUDUS_CONTENT_ROUNDS=1` also prints each round's save and `to_writer` times;
//! `LUDUS_CONTENT_NO_APPLY=1` skips `identity apply`; `LUDUS_CONTENT_ONLY_APPLY=1` times only
//! it; `LUDUS_CONTENT_ONLY_SAVE=1` times `<rounds>` saves, then `<rounds>` `to_writer` calls
//! (a loop to profile under `perf record`; `LUDUS_CONTENT_SAVE_ALONE=1` drops the second).
//!
//! The bench world's slots are in record order, which is unrelated to UUID order: save's
//! canonical (UUID) order is a random permutation of its pools, the hard case. A world restored
//! from a record that ludus wrote has its slots in UUID order.

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use criterion::{criterion_group, BatchSize, Criterion, Throughput};
use ludus::content::cook::{self, Hooks};
use ludus::content::{
    generate_manifest, restore_level, restore_level_from_slice, restore_world_from_slice,
    save_level, save_world_bytes, DocPath, LevelFile,
};
use ludus::identity::test_entropy::SeqEntropy;

#[path = "common/content.rs"]
mod common;
use common::*;

const N: usize = 100_000;

struct Fixture {
    bytes: Vec<u8>,
    world: Level,
    /// The same entities restored from the saved (canonical, UUID-ordered) record: slots in
    /// UUID order.
    world_sorted: Level,
    saved_len: usize,
    typed: RecordT,
}

fn fixture() -> &'static Fixture {
    static F: OnceLock<Fixture> = OnceLock::new();
    F.get_or_init(|| {
        let bytes = record(N).to_bytes();
        let mut world = fresh(N);
        restore_world_from_slice(Path::new("bench"), &bytes, instance(), &mut world).unwrap();
        let saved =
            save_world_bytes(&world, instance(), "ludus.bench.v1", record(0).document).unwrap();
        let typed: RecordT = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(saved.len(), bytes.len());
        let mut world_sorted = fresh(N);
        restore_world_from_slice(Path::new("saved"), &saved, instance(), &mut world_sorted)
            .unwrap();
        let again = save_world_bytes(
            &world_sorted,
            instance(),
            "ludus.bench.v1",
            record(0).document,
        )
        .unwrap();
        assert_eq!(again, saved);
        Fixture {
            saved_len: saved.len(),
            bytes,
            world,
            world_sorted,
            typed,
        }
    })
}

fn restore(bytes: &[u8], mut w: Level) -> Level {
    restore_world_from_slice(Path::new("bench"), bytes, instance(), &mut w).unwrap();
    w
}

fn save(fx: &Fixture) -> Vec<u8> {
    save_world_bytes(&fx.world, instance(), "ludus.bench.v1", record(0).document).unwrap()
}

/// For information: save of a world whose slots are in UUID order.
fn save_sorted(fx: &Fixture) -> Vec<u8> {
    save_world_bytes(
        &fx.world_sorted,
        instance(),
        "ludus.bench.v1",
        record(0).document,
    )
    .unwrap()
}

fn to_writer(fx: &Fixture) -> Vec<u8> {
    let mut out = Vec::with_capacity(fx.saved_len);
    serde_json::to_writer(&mut out, &fx.typed).unwrap();
    out
}

/// For information: the same structs, pretty (about twice the bytes).
fn to_writer_pretty(fx: &Fixture) -> Vec<u8> {
    let mut out = Vec::with_capacity(fx.saved_len);
    serde_json::to_writer_pretty(&mut out, &fx.typed).unwrap();
    out
}

/// A temporary content root holding a ~10 MB version-1 world, its manifest and schema.
struct ApplyRoot {
    _dir: tempfile::TempDir,
    root: PathBuf,
    manifest: PathBuf,
    schema: PathBuf,
    out: PathBuf,
    world_bytes: usize,
}

fn apply_root() -> &'static ApplyRoot {
    static R: OnceLock<ApplyRoot> = OnceLock::new();
    R.get_or_init(|| {
        let world = world_v1(36_500);
        let bytes = world.to_bytes();
        assert!(bytes.len() >= 10 << 20, "{}", bytes.len());
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        std::fs::create_dir_all(root.join("levels")).unwrap();
        std::fs::write(root.join("levels/big.world.json"), &bytes).unwrap();
        let path: DocPath = "levels/big.world.json".parse().unwrap();
        let m = generate_manifest(&[(path, &world)], &mut SeqEntropy::new(7)).unwrap();
        let manifest = dir.path().join("identity-migration.json");
        std::fs::write(&manifest, m.to_bytes()).unwrap();
        let schema = dir.path().join("schema.json");
        std::fs::write(&schema, SCHEMA_JSON).unwrap();
        let out = dir.path().join("out.json");
        ApplyRoot {
            root,
            manifest,
            schema,
            out,
            world_bytes: bytes.len(),
            _dir: dir,
        }
    })
}

fn identity_apply(r: &ApplyRoot) {
    let _ = std::fs::remove_file(&r.out);
    cook::apply(
        &r.root,
        &r.manifest,
        &r.schema,
        "levels/big.world.json",
        &r.out,
        Hooks::default(),
    )
    .unwrap();
}

/// A 10 000-entity world saved both ways: its World record (canonical) and its level file
/// (`save_level`), the same entities in the same order.
struct Level10k {
    record: Vec<u8>,
    level: Vec<u8>,
}

fn level_fixture() -> &'static Level10k {
    static F: OnceLock<Level10k> = OnceLock::new();
    F.get_or_init(|| {
        let mut world = fresh(LEVEL_N);
        let bytes = record(LEVEL_N).to_bytes();
        restore_world_from_slice(Path::new("bench"), &bytes, instance(), &mut world).unwrap();
        let record =
            save_world_bytes(&world, instance(), "ludus.bench.v1", record(0).document).unwrap();
        let level = save_level(&world, instance()).unwrap().to_bytes();
        Level10k { record, level }
    })
}

const LEVEL_N: usize = 10_000;

fn restore_level_bytes(bytes: &[u8], mut w: Level) -> Level {
    restore_level_from_slice(Path::new("bench"), bytes, Some(instance()), &mut w).unwrap();
    w
}

fn restore_level_tree(bytes: &[u8], mut w: Level) -> Level {
    let level = LevelFile::from_slice(Path::new("bench"), bytes).unwrap();
    restore_level(&level, Some(instance()), &mut w).unwrap();
    w
}

fn benches_restore(c: &mut Criterion) {
    let lx = level_fixture();
    let mut g = c.benchmark_group("level_10k");
    g.sample_size(20)
        .throughput(Throughput::Elements(LEVEL_N as u64));
    g.bench_function("restore_world", |b| {
        b.iter_batched(
            || fresh(LEVEL_N),
            |w| restore(black_box(&lx.record), w),
            BatchSize::PerIteration,
        )
    });
    g.bench_function("restore_level", |b| {
        b.iter_batched(
            || fresh(LEVEL_N),
            |w| restore_level_bytes(black_box(&lx.level), w),
            BatchSize::PerIteration,
        )
    });
    g.bench_function("restore_level_tree", |b| {
        b.iter_batched(
            || fresh(LEVEL_N),
            |w| restore_level_tree(black_box(&lx.level), w),
            BatchSize::PerIteration,
        )
    });
    g.finish();
    let fx = fixture();
    let mut g = c.benchmark_group("restore_100k");
    g.sample_size(10).throughput(Throughput::Elements(N as u64));
    g.bench_function("restore_world", |b| {
        b.iter_batched(
            || fresh(N),
            |w| restore(black_box(&fx.bytes), w),
            BatchSize::PerIteration,
        )
    });
    g.bench_function("typed_parse_fixup", |b| {
        b.iter(|| typed_parse_fixup(black_box(&fx.bytes)))
    });
    g.finish();
    let mut g = c.benchmark_group("save_100k");
    g.sample_size(10).throughput(Throughput::Elements(N as u64));
    g.bench_function("save_world", |b| b.iter(|| save(black_box(fx))));
    g.bench_function("save_world_uuid_slots", |b| {
        b.iter(|| save_sorted(black_box(fx)))
    });
    g.bench_function("typed_to_writer", |b| b.iter(|| to_writer(black_box(fx))));
    g.bench_function("typed_to_writer_pretty", |b| {
        b.iter(|| to_writer_pretty(black_box(fx)))
    });
    g.finish();
    let r = apply_root();
    let mut g = c.benchmark_group("apply_10mb");
    g.sample_size(10)
        .throughput(Throughput::Bytes(r.world_bytes as u64));
    g.bench_function("identity_apply", |b| b.iter(|| identity_apply(r)));
    g.finish();
}

criterion_group!(benches, benches_restore);

fn median(v: &mut [Duration]) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ratio_median(a: &[Duration], b: &[Duration]) -> f64 {
    let mut r: Vec<f64> = a
        .iter()
        .zip(b)
        .map(|(x, y)| x.as_secs_f64() / y.as_secs_f64())
        .collect();
    r.sort_by(|x, y| x.partial_cmp(y).unwrap());
    r[r.len() / 2]
}

fn interleaved(rounds: usize) {
    let fx = fixture();
    let r = apply_root();
    println!(
        "record {} bytes, {} entities; apply world {} bytes",
        fx.bytes.len(),
        N,
        r.world_bytes
    );
    let (mut ours, mut base, mut sv, mut tw, mut ap) = (vec![], vec![], vec![], vec![], vec![]);
    let (mut twp, mut ss) = (vec![], vec![]);
    if std::env::var_os("LUDUS_CONTENT_ONLY_SAVE").is_some() {
        let median_of = |f: &dyn Fn() -> Vec<u8>| {
            let mut v: Vec<Duration> = (0..rounds)
                .map(|_| {
                    let t = Instant::now();
                    black_box(f());
                    t.elapsed()
                })
                .collect();
            median(&mut v)
        };
        println!("save_world {:?}", median_of(&|| save(fx)));
        if std::env::var_os("LUDUS_CONTENT_SAVE_ALONE").is_none() {
            println!("to_writer {:?}", median_of(&|| to_writer(fx)));
        }
        return;
    }
    if std::env::var_os("LUDUS_CONTENT_ONLY_APPLY").is_some() {
        for _ in 0..rounds {
            let t = Instant::now();
            identity_apply(r);
            ap.push(t.elapsed());
        }
        println!("identity_apply {:?}", median(&mut ap));
        return;
    }
    for round in 0..rounds {
        let time_restore = || {
            let w = fresh(N);
            let t = Instant::now();
            let w = black_box(restore(&fx.bytes, w));
            let d = t.elapsed();
            drop(w);
            d
        };
        let time_base = || {
            let t = Instant::now();
            let x = black_box(typed_parse_fixup(&fx.bytes));
            let d = t.elapsed();
            drop(x);
            d
        };
        if round % 2 == 0 {
            ours.push(time_restore());
            base.push(time_base());
        } else {
            base.push(time_base());
            ours.push(time_restore());
        }
        let time_save = || {
            let t = Instant::now();
            black_box(save(fx));
            t.elapsed()
        };
        let time_writer = || {
            let t = Instant::now();
            black_box(to_writer(fx));
            t.elapsed()
        };
        if round % 2 == 0 {
            sv.push(time_save());
            tw.push(time_writer());
        } else {
            tw.push(time_writer());
            sv.push(time_save());
        }
        let t = Instant::now();
        black_box(to_writer_pretty(fx));
        twp.push(t.elapsed());
        let t = Instant::now();
        black_box(save_sorted(fx));
        ss.push(t.elapsed());
        if std::env::var_os("LUDUS_CONTENT_NO_APPLY").is_none() {
            let t = Instant::now();
            identity_apply(r);
            ap.push(t.elapsed());
        } else {
            ap.push(Duration::ZERO);
        }
    }
    println!(
        "restore_world {:?}  typed_parse_fixup {:?}  ratio (median of rounds) {:.2}",
        median(&mut ours.clone()),
        median(&mut base.clone()),
        ratio_median(&ours, &base)
    );
    if std::env::var_os("LUDUS_CONTENT_ROUNDS").is_some() {
        for (a, b) in sv.iter().zip(&tw) {
            println!("round: save {a:?} to_writer {b:?}");
        }
    }
    println!(
        "save_world {:?}  typed_to_writer {:?}  ratio {:.2}",
        median(&mut sv.clone()),
        median(&mut tw.clone()),
        ratio_median(&sv, &tw)
    );
    println!(
        "save_world_uuid_slots {:?}  / typed_to_writer {:.2}",
        median(&mut ss.clone()),
        ratio_median(&ss, &tw)
    );
    println!(
        "typed_to_writer_pretty {:?}  save_world / pretty {:.2}",
        median(&mut twp.clone()),
        ratio_median(&sv, &twp)
    );
    println!(
        "compact {} bytes, pretty {} bytes",
        to_writer(fx).len(),
        to_writer_pretty(fx).len()
    );
    println!("identity_apply {:?}", median(&mut ap));
}

fn main() {
    // glibc raises its mmap threshold when a mapped block is freed, so whichever contender
    // runs after a large free gets recycled heap pages for its ~19 MB buffers while the other
    // pays fresh page faults, and which one depends on the binary's whole allocation history
    // (the same `typed_to_writer` read 19 and 24 ms in two builds). Pinning the threshold
    // (which disables the adjustment) gives every large buffer a fresh mapping, in any order.
    // A benchmark setting, not the library's: ludus never configures the process allocator.
    #[cfg(target_env = "gnu")]
    // SAFETY: `mallopt` only adjusts glibc's tuning parameters; called first thing in `main`,
    // before any fixture is built, on the main thread.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 128 * 1024);
    }
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
