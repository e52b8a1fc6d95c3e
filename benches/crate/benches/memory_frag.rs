//! Fragmentation stress: retained and resident memory against requested live bytes, each
//! contender in a fresh process (retention compares only between fresh processes).
//!
//! ```text
//! cargo bench -p ludus-benches --bench memory_frag [--features mimalloc] -- [--out FILE]
//! ```
//!
//! The parent re-executes itself once per contender (`--contender NAME`, in the order of
//! `Contender::all`, or `--order a,b,...`); each child runs the phases below and prints one
//! `RESULT {json}` line; the parent collects them into one JSON document (`--out FILE`, else
//! stdout) that `scripts/memory_workloads.py` wraps with the machine metadata. Phases:
//!
//! 1. `baseline`: nothing allocated (the bookkeeping vectors are reserved before it);
//! 2. `steady` / `steady_freed`: a live set of 4096 blocks of a seeded log-uniform size mix
//!    16 B – 64 KiB (~32 MiB), replaced at random 8 × 4096 times, then freed;
//! 3. `holes_filled`, `holes_punched`, `holes_large`, `holes_freed`: 65 536 blocks of 256 B,
//!    every other one freed, then 8192 blocks of 1 KiB that no 256 B hole can hold, then all
//!    freed;
//! 4. `level{k}_loaded` / `level{k}_unloaded` for k = 1..=5: a "level" of ~64 MiB of the same
//!    size mix (a different seed per level) allocated, then all freed.
//!
//! Every block is written in full. After each phase the child samples: requested live bytes
//! (ludus: the domain's `usage().live_bytes`; raw: the workload's own tally, reported for both),
//! resident set (`/proc/self/statm` resident pages × page size), peak RSS (`ru_maxrss`), minor
//! and major page faults (`getrusage`), and the phase's wall time.
//!
//! `LUDUS_BENCH_SMOKE=1` (or running without cargo bench's `--bench` flag, as `cargo test
//! --benches` does) divides every size by 16: a quick check that the target works, not a result.
//! Positional arguments are criterion-style filters: the target runs only if one of them is a
//! substring of `memory_frag` (or there is none).

#[path = "common/alloc.rs"]
mod common;
#[path = "common/fresh.rs"]
mod fresh;

use std::process::ExitCode;
use std::time::Instant;

use common::{assert_quiescent, Block, Contender, Heap, Rng};
use serde::Serialize;

/// One sample, taken at the end of a phase.
#[derive(Debug, Serialize)]
struct Sample {
    phase: String,
    /// Requested live bytes: the domain's `live_bytes` (ludus) or the workload's tally (raw).
    requested_bytes: u64,
    /// The workload's own tally of live bytes (equals `requested_bytes` for raw).
    tally_bytes: u64,
    /// Live blocks by the workload's tally.
    live_blocks: u64,
    /// Resident set: `/proc/self/statm` resident pages × page size.
    rss_bytes: u64,
    /// `rss_bytes - requested_bytes` (negative while RSS is below the requested bytes).
    rss_minus_requested: i64,
    /// `ru_maxrss` in bytes.
    max_rss_bytes: u64,
    /// Minor faults since the process started.
    minor_faults: u64,
    /// Major faults since the process started.
    major_faults: u64,
    /// Minor faults during this phase.
    minor_faults_phase: u64,
    /// Wall time of this phase in milliseconds.
    wall_ms: f64,
}

/// One contender's run.
#[derive(Debug, Serialize)]
struct Run {
    contender: &'static str,
    backend: &'static str,
    ludus: bool,
    smoke: bool,
    page_size: u64,
    phases: Vec<Sample>,
}

fn page_size() -> u64 {
    // SAFETY: `sysconf` reads a configuration value; `_SC_PAGESIZE` is always valid.
    let v = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    u64::try_from(v).unwrap_or(4096)
}

/// Resident bytes from `/proc/self/statm` (0 where it cannot be read).
fn rss_bytes(page: u64) -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
        .map_or(0, |pages| pages * page)
}

/// (minor faults, major faults, max RSS bytes) of this process.
fn rusage() -> (u64, u64, u64) {
    // SAFETY: `rusage` is plain integers; all-zero is a valid value.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `ru` is a valid, writable `rusage` for the call to fill.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    if rc != 0 {
        return (0, 0, 0);
    }
    let n = |v: libc::c_long| u64::try_from(v).unwrap_or(0);
    (n(ru.ru_minflt), n(ru.ru_majflt), n(ru.ru_maxrss) * 1024)
}

/// The workload state of one contender: its heap, live blocks and tally.
struct Work {
    heap: Heap,
    blocks: Vec<Block>,
    tally: u64,
    sum: u64,
    page: u64,
    phases: Vec<Sample>,
    phase_start: Instant,
    phase_faults: u64,
}

impl Work {
    fn alloc(&mut self, size: usize) -> Block {
        let (b, s) = Block::new_touched(self.heap, size);
        self.sum = self.sum.wrapping_add(s);
        self.tally += size as u64;
        b
    }

    fn free(&mut self, b: Block) {
        self.tally -= b.size as u64;
        // SAFETY: every block of `Work` came from `self.heap` and leaves the workload here.
        self.sum = self.sum.wrapping_add(unsafe { b.read_and_free(self.heap) });
    }

    /// Frees every live block and empties the list (keeping its capacity).
    fn free_all(&mut self) {
        for i in 0..self.blocks.len() {
            let b = std::mem::replace(&mut self.blocks[i], Block::EMPTY);
            if !b.ptr.is_null() {
                self.free(b);
            }
        }
        self.blocks.clear();
    }

    fn sample(&mut self, phase: impl Into<String>) {
        let wall_ms = self.phase_start.elapsed().as_secs_f64() * 1e3;
        let (minor, major, max_rss) = rusage();
        let rss = rss_bytes(self.page);
        let requested = match self.heap.domain() {
            Some(d) => d.usage().live_bytes as u64,
            None => self.tally,
        };
        let live_blocks = self.blocks.iter().filter(|b| !b.ptr.is_null()).count() as u64;
        self.phases.push(Sample {
            phase: phase.into(),
            requested_bytes: requested,
            tally_bytes: self.tally,
            live_blocks,
            rss_bytes: rss,
            rss_minus_requested: rss as i64 - requested as i64,
            max_rss_bytes: max_rss,
            minor_faults: minor,
            major_faults: major,
            minor_faults_phase: minor - self.phase_faults,
            wall_ms,
        });
        // The sample's own work is not part of the next phase.
        self.phase_faults = rusage().0;
        self.phase_start = Instant::now();
    }
}

/// Size of the mixed distribution: 16 B – 64 KiB, log-uniform.
fn mixed(rng: &mut Rng) -> usize {
    rng.log_size(16, 64 << 10)
}

/// Runs every phase for `c` in this process (a child) and returns its samples.
fn run_contender(c: Contender, smoke: bool) -> Run {
    let div = if smoke { 16 } else { 1 };
    let steady = 4096 / div;
    let holes = 65_536 / div;
    let level_bytes = (64u64 << 20) / div as u64;
    let page = page_size();
    let mut w = Work {
        heap: c.heap("bench.frag"),
        // Reserved before the baseline so the bookkeeping never allocates during a phase.
        blocks: Vec::with_capacity(holes + holes / 8 + 1024),
        tally: 0,
        sum: 0,
        page,
        phases: Vec::new(),
        phase_start: Instant::now(),
        phase_faults: 0,
    };
    w.phases.reserve(32);
    w.phase_faults = rusage().0;
    w.sample("baseline");

    // Steady mixed live set.
    let mut rng = Rng(0xF7A6_0001);
    for _ in 0..steady {
        let b = w.alloc(mixed(&mut rng));
        w.blocks.push(b);
    }
    for _ in 0..steady * 8 {
        let i = rng.below(steady);
        let old = std::mem::replace(&mut w.blocks[i], Block::EMPTY);
        w.free(old);
        let size = mixed(&mut rng);
        w.blocks[i] = w.alloc(size);
    }
    w.sample("steady");
    w.free_all();
    w.sample("steady_freed");

    // Adversarial holes: small blocks, every other one freed, then larger blocks.
    for _ in 0..holes {
        let b = w.alloc(256);
        w.blocks.push(b);
    }
    w.sample("holes_filled");
    for i in (0..holes).step_by(2) {
        let old = std::mem::replace(&mut w.blocks[i], Block::EMPTY);
        w.free(old);
    }
    w.sample("holes_punched");
    for _ in 0..holes / 8 {
        let b = w.alloc(1024);
        w.blocks.push(b);
    }
    w.sample("holes_large");
    w.free_all();
    w.sample("holes_freed");

    // Load/unload cycles.
    for k in 1..=5u64 {
        let mut rng = Rng(0x1E7E_0000 + k);
        let mut bytes = 0u64;
        while bytes < level_bytes && w.blocks.len() < w.blocks.capacity() {
            let size = mixed(&mut rng);
            bytes += size as u64;
            let b = w.alloc(size);
            w.blocks.push(b);
        }
        w.sample(format!("level{k}_loaded"));
        w.free_all();
        w.sample(format!("level{k}_unloaded"));
    }
    std::hint::black_box(w.sum);
    assert_eq!(w.tally, 0, "the workload freed every block");
    assert_quiescent(w.heap);
    Run {
        contender: c.name(),
        backend: c.backend_name(),
        ludus: c.is_ludus(),
        smoke,
        page_size: page,
        phases: w.phases,
    }
}

fn main() -> ExitCode {
    fresh::main("memory_frag", "fragmentation", |c, smoke| {
        serde_json::to_value(run_contender(c, smoke))
    })
}
