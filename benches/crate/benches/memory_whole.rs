//! Domain accounting over whole workloads: every allocation of the process charged to a ludus
//! domain against the same backend called directly, on workloads that do work between
//! allocations (the accounting gate is whole-workload CPU, not a bare allocate/free pair).
//!
//! The bench installs its own global allocator (a bench binary may; the library never does):
//! in a `domain` process every `alloc`, `dealloc` and `realloc` goes through the core
//! [`AllocationDomain`] (sharded counters, the default) over the build's backend; in a `raw`
//! process the same calls go to that backend directly. Both paths sit behind the same mode
//! check. The backend is the build's: the system allocator, or mimalloc with `--features
//! mimalloc`.
//!
//! Workloads (each timed whole, setup untimed):
//! - `world_init`: `Level::try_new_durable(100k)` (the content benches' world: three pools,
//!   bindings, stable ids, names) and its drop;
//! - `restore_100k`: `restore_world_from_slice` of the content benches' 100k-entity World
//!   record (18.8 MB) into a fresh world: strict parse, plan, create, insert, name, bind, every
//!   temporary of it allocated and freed on the global allocator;
//! - `containers`: the container-heavy workload of a memory benchmark (fixed seed, payload
//!   written and checksummed): reserved and unreserved `Vec` growth, `reserve_exact` steps,
//!   clone / move / `shrink_to_fit`, nested `Vec<Vec<u32>>`, 64-byte-aligned elements, and
//!   strings of 24–280 bytes grown by `push_str`, held in a growing `Vec<String>` (moved on
//!   each growth) and sorted.
//!
//! The modes cannot share a process (a block must be freed by the path that allocated it), so
//! the bench is a driver: it runs itself as child processes, `raw` and `domain` alternated
//! round by round (which goes first alternates too); each child times every workload
//! `LUDUS_WHOLE_REPS` times (default 5, after one untimed warm-up) and reports its medians and
//! the allocations per run (the domain's traffic). The driver prints, per workload, the median
//! over children of each mode, the median of the per-round ratios, and the absolute cost per
//! allocation. `LUDUS_WHOLE_ROUNDS` sets the rounds (default 7).
//!
//! `cargo bench -p ludus-benches --bench memory_whole [--features mimalloc]`. Without
//! `--bench` (`cargo test`), one small round checks that everything runs.

use std::alloc::{GlobalAlloc, Layout};
use std::hint::black_box;
use std::path::Path;
use std::process::Command;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::time::Instant;

use ludus::content::restore_world_from_slice;
use ludus::memory::{AllocationDomain, AllocationLayout};

#[path = "common/content.rs"]
mod content;
use content::{fresh, instance, record};

/// The backend both modes end in.
#[cfg(not(feature = "mimalloc"))]
static BACKEND: std::alloc::System = std::alloc::System;
#[cfg(feature = "mimalloc")]
static BACKEND: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Whether allocations go through the core domain. Set once at the start of a `domain`
/// child's `main` (after its thread slot is claimed, see [`enable_domain`]) and cleared before
/// it returns; every block a child's workloads allocate is freed while it is set.
static DOMAIN: AtomicBool = AtomicBool::new(false);

/// The bench's global allocator: the core domain or the backend, by [`DOMAIN`].
struct Switch;

// SAFETY: every path forwards `GlobalAlloc`'s contract to a conforming allocator: the backend
// directly, or the core domain, whose blocks are the same backend's (it adds no header). A
// block is freed or resized by the path that allocated it: the mode changes only around a
// child's workloads, which free what they allocate (the blocks allocated before, which live on
// until exit, are the backend's and are freed by it after the mode is cleared). The child
// checks this after the fact: a block crossing the window in either direction would leave the
// domain's live bytes off their starting value, and the child then fails.
unsafe impl GlobalAlloc for Switch {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if DOMAIN.load(Relaxed) {
            match AllocationDomain::core().try_allocate(AllocationLayout::from(layout)) {
                Ok(Some(p)) => p.as_ptr(),
                _ => std::ptr::null_mut(),
            }
        } else {
            // SAFETY: forwarded `GlobalAlloc::alloc` contract (nonzero size).
            unsafe { BACKEND.alloc(layout) }
        }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if DOMAIN.load(Relaxed) {
            // SAFETY: `ptr` came from this allocator with `layout` while the mode was set
            // (see the impl's comment), i.e. from the core domain with this layout.
            unsafe { AllocationDomain::core().free(NonNull::new(ptr), layout.into()) }
        } else {
            // SAFETY: forwarded `GlobalAlloc::dealloc` contract.
            unsafe { BACKEND.dealloc(ptr, layout) }
        }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if DOMAIN.load(Relaxed) {
            let mut p = NonNull::new(ptr);
            // SAFETY: `ptr` came from the core domain with `layout` (as in `dealloc`), and
            // `new_size` is nonzero and fits `layout`'s alignment (`GlobalAlloc::realloc`).
            match unsafe {
                AllocationDomain::core().try_reallocate(&mut p, layout.into(), new_size)
            } {
                Ok(()) => p.map_or(std::ptr::null_mut(), NonNull::as_ptr),
                Err(_) => std::ptr::null_mut(),
            }
        } else {
            // SAFETY: forwarded `GlobalAlloc::realloc` contract.
            unsafe { BACKEND.realloc(ptr, layout, new_size) }
        }
    }
}

#[global_allocator]
static GLOBAL: Switch = Switch;

/// Claims this thread's counter slot while allocations still go to the backend (the first
/// update of a thread leases a slot and registers a thread-local destructor, which itself
/// allocates), then routes every allocation through the core domain.
fn enable_domain() {
    let d = AllocationDomain::core();
    let l = AllocationLayout::new(64, 8).unwrap();
    let p = d.try_allocate(l).unwrap();
    // SAFETY: `p` came from `d` with layout `l`.
    unsafe { d.free(p, l) };
    DOMAIN.store(true, Relaxed);
}

/// 64-byte-aligned elements.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Wide([u64; 3]);

/// splitmix64.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The container-heavy workload (`scale` rounds); returns a checksum of everything written.
fn containers(scale: usize) -> u64 {
    let mut sum = 0u64;
    let mut seed = 0x636f_6e74_6169_6e73u64;
    for round in 0..scale {
        // Reserved and unreserved growth.
        let n = 4096 + round % 7 * 512;
        let mut reserved: Vec<u64> = Vec::with_capacity(n);
        let mut grown: Vec<u64> = Vec::new();
        for i in 0..n as u64 {
            reserved.push(i ^ seed);
            grown.push(i.wrapping_mul(seed));
        }
        // Exact capacity steps.
        let mut exact: Vec<u32> = Vec::new();
        for step in 0..16u32 {
            exact.reserve_exact(97);
            exact.extend((0..97).map(|i| i * step));
        }
        // Copy, move, trim.
        let mut copy = grown.clone();
        copy.truncate(n / 3);
        copy.shrink_to_fit();
        let moved = std::mem::take(&mut reserved);
        sum = sum
            .wrapping_add(moved.iter().fold(0, |a, &x| a.wrapping_add(x)))
            .wrapping_add(copy.iter().fold(0, |a, &x| a ^ x))
            .wrapping_add(u64::from(exact.iter().sum::<u32>()));
        // Nested arrays of varied lengths.
        let mut nested: Vec<Vec<u32>> = Vec::new();
        for i in 0..256 {
            seed = mix(seed);
            let len = (seed % 64) as usize + i % 3;
            let mut inner = Vec::new();
            inner.extend((0..len as u32).map(|x| x ^ i as u32));
            nested.push(inner);
        }
        sum = sum.wrapping_add(nested.iter().map(|v| v.len() as u64).sum::<u64>());
        // Over-aligned elements.
        let mut wide: Vec<Wide> = Vec::new();
        for i in 0..512u64 {
            wide.push(Wide([i, seed, i ^ seed]));
        }
        sum = sum.wrapping_add(wide.iter().map(|w| w.0[2]).fold(0, u64::wrapping_add));
        // Strings past any inline size, grown piecewise, moved as their vector grows.
        let mut names: Vec<String> = Vec::new();
        for i in 0..384 {
            seed = mix(seed);
            let mut s = String::new();
            let parts = 3 + (seed % 9) as usize;
            for p in 0..parts {
                s.push_str(["entity/", "level_", "spawner.", "0123456789abcdef"][p % 4]);
                s.push_str(&(i * 31 + p).to_string());
            }
            names.push(s);
        }
        names.sort_unstable();
        sum = sum.wrapping_add(names.iter().map(|s| s.len() as u64).sum::<u64>());
        sum = sum.wrapping_add(u64::from(names[names.len() / 2].as_bytes()[0]));
    }
    sum
}

/// Times `run` on a fresh `setup()` value `reps` times after one warm-up run (setup untimed;
/// what `run` returns is dropped after the clock stops) and prints `workload <name> <median
/// ns> <allocations per run>` (allocations: the core domain's traffic, 0 in a `raw` child).
/// Skipped unless `LUDUS_WHOLE_ONLY` is unset or names it.
fn time<S, R>(name: &str, reps: usize, mut setup: impl FnMut() -> S, mut run: impl FnMut(S) -> R) {
    if std::env::var("LUDUS_WHOLE_ONLY").is_ok_and(|only| only != name) {
        return;
    }
    let mut times = Vec::with_capacity(reps);
    let mut allocations = 0;
    for rep in 0..=reps {
        let input = setup();
        let before = AllocationDomain::core().usage().allocations;
        let start = Instant::now();
        let out = black_box(run(black_box(input)));
        let t = start.elapsed().as_nanos() as u64;
        allocations = AllocationDomain::core().usage().allocations - before;
        drop(out);
        if rep > 0 {
            times.push(t);
        }
    }
    times.sort_unstable();
    println!("workload {name} {} {allocations}", times[times.len() / 2]);
}

// The measured runs, out of line so that callgrind can collect them alone
// (`--toggle-collect=*measured_*`).

#[inline(never)]
fn measured_world_init(n: usize) {
    drop(black_box(fresh(n)));
}

#[inline(never)]
fn measured_restore(bytes: &[u8], mut w: content::Level) -> content::Level {
    restore_world_from_slice(Path::new("bench"), bytes, instance(), &mut w).unwrap();
    w
}

#[inline(never)]
fn measured_containers(scale: usize) -> u64 {
    containers(scale)
}

/// A child: every workload, timed.
fn child(n: usize, reps: usize, scale: usize) {
    let only = std::env::var("LUDUS_WHOLE_ONLY").ok();
    let bytes = if only.as_deref().is_none_or(|o| o == "restore_100k") {
        record(n).to_bytes()
    } else {
        Vec::new()
    };
    drop(only);
    time("world_init", reps, || (), |()| measured_world_init(n));
    time(
        "restore_100k",
        reps,
        || fresh(n),
        |w| measured_restore(&bytes, w),
    );
    time("containers", reps, || (), |()| measured_containers(scale));
}

/// One workload's reports: per round, the `raw` and the `domain` child's medians.
#[derive(Default)]
struct Rows {
    raw: Vec<f64>,
    domain: Vec<f64>,
    allocations: u64,
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Runs one child in `mode` and parses its reports into `rows`.
fn run_child(mode: &str, reps: usize, full: bool, rows: &mut Vec<(String, Rows)>) {
    let exe = std::env::current_exe().unwrap();
    let mut cmd = Command::new(exe);
    cmd.env("LUDUS_ACCOUNTING", mode)
        .env("LUDUS_WHOLE_REPS", reps.to_string());
    if full {
        cmd.arg("--bench");
    }
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{mode} child failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    for line in String::from_utf8(out.stdout).unwrap().lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        let ["workload", name, ns, allocations] = f[..] else {
            continue;
        };
        let i = match rows.iter().position(|(n, _)| n == name) {
            Some(i) => i,
            None => {
                rows.push((name.to_string(), Rows::default()));
                rows.len() - 1
            }
        };
        let r = &mut rows[i].1;
        let ns: f64 = ns.parse().unwrap();
        if mode == "domain" {
            r.domain.push(ns);
            r.allocations = allocations.parse().unwrap();
        } else {
            r.raw.push(ns);
        }
    }
}

/// `LUDUS_WHOLE_CALLGRIND=1`: each workload in each mode in its own child under callgrind,
/// collecting only the measured runs (a warm-up and one run); prints instructions per run.
fn instruction_counts(full: bool) {
    let exe = std::env::current_exe().unwrap();
    let dir = std::env::temp_dir();
    println!(
        "backend {}, instructions per run (callgrind, the measured function only)",
        if cfg!(feature = "mimalloc") {
            "mimalloc"
        } else {
            "system"
        }
    );
    for name in ["world_init", "restore_100k", "containers"] {
        let mut ir = [0f64; 2];
        let mut allocations = 0;
        for (m, mode) in ["raw", "domain"].into_iter().enumerate() {
            let file = dir.join(format!("ludus-whole-{name}-{mode}.out"));
            let mut cmd = Command::new("valgrind");
            cmd.arg("--tool=callgrind")
                .arg(format!("--callgrind-out-file={}", file.display()))
                .arg("--collect-atstart=no")
                .arg(format!(
                    "--toggle-collect=*measured_{}*",
                    name.split('_').next().unwrap()
                ))
                .arg(&exe)
                .env("LUDUS_ACCOUNTING", mode)
                .env("LUDUS_WHOLE_REPS", "1")
                .env("LUDUS_WHOLE_ONLY", name);
            if full {
                cmd.arg("--bench");
            }
            let out = cmd.output().expect("valgrind");
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            let stdout = String::from_utf8(out.stdout).unwrap();
            if let Some(a) = stdout
                .lines()
                .find_map(|l| l.strip_prefix(&format!("workload {name} ")))
            {
                allocations = a
                    .split_whitespace()
                    .nth(1)
                    .unwrap()
                    .parse::<u64>()
                    .unwrap()
                    .max(allocations);
            }
            let text = std::fs::read_to_string(&file).unwrap();
            let total: f64 = text
                .lines()
                .find_map(|l| l.strip_prefix("totals: "))
                .or_else(|| text.lines().find_map(|l| l.strip_prefix("summary: ")))
                .expect("callgrind totals")
                .trim()
                .parse()
                .unwrap();
            // The warm-up and the one measured run.
            ir[m] = total / 2.0;
            std::fs::remove_file(&file).ok();
        }
        println!(
            "{name}: raw {:.0} Ir, domain {:.0} Ir, ratio {:.4}, {allocations} allocations per \
             run, {:+.1} Ir per allocation",
            ir[0],
            ir[1],
            ir[1] / ir[0],
            (ir[1] - ir[0]) / allocations.max(1) as f64
        );
    }
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test` runs one small round.
    let full = std::env::args().any(|a| a == "--bench");
    let (n, scale) = if full { (100_000, 64) } else { (1_000, 1) };
    if let Ok(mode) = std::env::var("LUDUS_ACCOUNTING") {
        let reps = std::env::var("LUDUS_WHOLE_REPS").map_or(5, |r| r.parse().unwrap());
        // Stdout's buffer is allocated on its first line and lives until exit: before the
        // window.
        println!("child {mode}");
        if mode == "domain" {
            enable_domain();
        }
        let live = AllocationDomain::core().usage().live_bytes;
        child(n, reps, scale);
        // Every block the window allocated was freed in it, through the domain, and no block
        // from before it was: either would move the domain's live bytes.
        let after = AllocationDomain::core().usage();
        DOMAIN.store(false, Relaxed);
        assert!(
            after.valid && after.live_bytes == live,
            "blocks crossed the domain window: {} live bytes before, {} after",
            live,
            after.live_bytes
        );
        return;
    }
    if std::env::var_os("LUDUS_WHOLE_CALLGRIND").is_some() {
        instruction_counts(full);
        return;
    }
    let rounds = if full {
        std::env::var("LUDUS_WHOLE_ROUNDS").map_or(7, |r| r.parse().unwrap())
    } else {
        1
    };
    let reps = if full { 5 } else { 1 };
    let mut rows: Vec<(String, Rows)> = Vec::new();
    for round in 0..rounds {
        let order = if round % 2 == 0 {
            ["raw", "domain"]
        } else {
            ["domain", "raw"]
        };
        for mode in order {
            run_child(mode, reps, full, &mut rows);
        }
    }
    let backend = if cfg!(feature = "mimalloc") {
        "mimalloc"
    } else {
        "system"
    };
    println!(
        "backend {backend}, {rounds} rounds × {reps} runs, medians (domain ÷ raw: median of the \
         per-round ratios, min..max)"
    );
    for (name, r) in &mut rows {
        let mut ratios: Vec<f64> = r.domain.iter().zip(&r.raw).map(|(d, w)| d / w).collect();
        let (lo, hi) = ratios
            .iter()
            .fold((f64::MAX, 0f64), |(lo, hi), &x| (lo.min(x), hi.max(x)));
        let ratio = median(&mut ratios);
        let (raw, domain) = (median(&mut r.raw), median(&mut r.domain));
        let per = (domain - raw) / r.allocations.max(1) as f64;
        println!(
            "{name}: raw {:.3} ms, domain {:.3} ms, ratio {ratio:.4} ({lo:.4}..{hi:.4}), \
             {} allocations per run, {per:+.1} ns per allocation",
            raw / 1e6,
            domain / 1e6,
            r.allocations
        );
    }
}
