//! Per-operation allocate and free latency (sampled operation latencies in a
//! run separate from the throughput batches, with the timer's own overhead measured).
//!
//! ```text
//! cargo bench -p ludus-benches --bench memory_latency [--features mimalloc] -- [--out FILE]
//! ```
//!
//! Each contender runs in a fresh process (see `common/fresh.rs`). Workload: a retained set of
//! 4096 slots, each holding a block of a seeded log-uniform size 16 B – 4 KiB; every operation
//! picks a random slot, frees its block and allocates a new one of a new size. The slots are
//! filled and the workload run for 50 000 unsampled operations first (warm-up), then 200 000
//! sampled operations: each free and each allocate is bracketed by two `Instant::now()` calls
//! and its elapsed nanoseconds stored (the payload is written outside the bracket).
//!
//! The timer overhead is measured the same way with nothing between the two calls (200 000
//! pairs) and reported beside the latencies; nothing is subtracted. Per contender and operation
//! the output gives the sample count, min, mean, p50, p95, p99, p99.9, max, how many samples
//! lie above p99 and p99.9 (the tail's support), and a 200-point CDF (`[quantile, ns]`) for
//! plotting. `LUDUS_BENCH_SMOKE=1` (or no `--bench` flag) divides the counts by 10.

#[path = "common/alloc.rs"]
mod common;
#[path = "common/fresh.rs"]
mod fresh;

use std::hint::black_box;
use std::process::ExitCode;
use std::time::Instant;

use common::{assert_quiescent, layout, Block, Contender, Heap, Rng};
use serde::Serialize;

/// Slots of the retained set.
const SLOTS: usize = 4096;
/// Points of each CDF.
const CDF_POINTS: usize = 200;

/// The distribution of one operation's latency.
#[derive(Debug, Serialize)]
struct Dist {
    samples: usize,
    min_ns: u64,
    mean_ns: f64,
    p50_ns: u64,
    p95_ns: u64,
    p99_ns: u64,
    p999_ns: u64,
    max_ns: u64,
    /// Samples strictly above p99 / p99.9: how many observations the tail estimate rests on.
    above_p99: usize,
    above_p999: usize,
    /// `[quantile, ns]` at `CDF_POINTS` evenly spaced quantiles from 0 (min) to 1 (max).
    cdf: Vec<(f64, u64)>,
}

/// Nearest-rank quantile of sorted `v` (`0 <= q <= 1`).
fn quantile(v: &[u64], q: f64) -> u64 {
    let rank = ((q * v.len() as f64).ceil() as usize).clamp(1, v.len());
    v[rank - 1]
}

impl Dist {
    fn of(mut v: Vec<u64>) -> Dist {
        v.sort_unstable();
        if v.is_empty() {
            v.push(0);
        }
        let p99 = quantile(&v, 0.99);
        let p999 = quantile(&v, 0.999);
        Dist {
            samples: v.len(),
            min_ns: v[0],
            mean_ns: v.iter().sum::<u64>() as f64 / v.len() as f64,
            p50_ns: quantile(&v, 0.5),
            p95_ns: quantile(&v, 0.95),
            p99_ns: p99,
            p999_ns: p999,
            max_ns: v[v.len() - 1],
            above_p99: v.len() - v.partition_point(|&x| x <= p99),
            above_p999: v.len() - v.partition_point(|&x| x <= p999),
            cdf: (0..CDF_POINTS)
                .map(|i| {
                    let q = i as f64 / (CDF_POINTS - 1) as f64;
                    (q, quantile(&v, q))
                })
                .collect(),
        }
    }
}

/// One contender's run.
#[derive(Debug, Serialize)]
struct Run {
    contender: &'static str,
    backend: &'static str,
    ludus: bool,
    smoke: bool,
    slots: usize,
    warmup_ops: usize,
    size_range: (usize, usize),
    allocate: Dist,
    free: Dist,
    /// Two back-to-back `Instant::now()` calls: the floor of every sample above.
    timer_overhead: Dist,
    checksum: u64,
}

fn ns(d: std::time::Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// The timer's own cost: `n` back-to-back `Instant::now()` pairs.
fn timer_overhead(n: usize) -> Vec<u64> {
    let mut v = Vec::with_capacity(n);
    for _ in 0..n {
        let t0 = Instant::now();
        let t1 = Instant::now();
        v.push(ns(t1.duration_since(t0)));
    }
    v
}

/// Replaces the block in a random slot `ops` times; with `samples`, records each free's and
/// each allocate's nanoseconds.
fn churn(
    h: Heap,
    slots: &mut [Block],
    rng: &mut Rng,
    ops: usize,
    mut samples: Option<(&mut Vec<u64>, &mut Vec<u64>)>,
) -> u64 {
    let mut sum = 0u64;
    for _ in 0..ops {
        let i = rng.below(slots.len());
        let old = std::mem::replace(&mut slots[i], Block::EMPTY);
        let size = rng.log_size(16, 4096);
        let l = layout(size);
        let t0 = Instant::now();
        // SAFETY: every slot's block came from `h` with `layout(size)` and leaves the set here.
        unsafe { h.free(black_box(old.ptr), layout(old.size)) };
        let t1 = Instant::now();
        let p = black_box(h.alloc(l));
        let t2 = Instant::now();
        if let Some((alloc, free)) = samples.as_mut() {
            free.push(ns(t1.duration_since(t0)));
            alloc.push(ns(t2.duration_since(t1)));
        }
        // SAFETY: `p` is a fresh live block of `size > 0` bytes (`alloc` aborts on null).
        unsafe {
            p.write_bytes(0x5A, size);
            sum = sum.wrapping_add(u64::from(p.add(size - 1).read()));
        }
        slots[i] = Block { ptr: p, size };
    }
    sum
}

fn run_contender(c: Contender, smoke: bool) -> Run {
    let div = if smoke { 10 } else { 1 };
    let (warmup, sampled) = (50_000 / div, 200_000 / div);
    let h = c.heap("bench.latency");
    let overhead = timer_overhead(sampled);
    let mut alloc = Vec::with_capacity(sampled);
    let mut free = Vec::with_capacity(sampled);
    let mut rng = Rng(0x1A7E_0C1E);
    let mut sum = 0u64;
    let mut slots: Vec<Block> = (0..SLOTS)
        .map(|_| {
            let (b, s) = Block::new_touched(h, rng.log_size(16, 4096));
            sum = sum.wrapping_add(s);
            b
        })
        .collect();
    sum = sum.wrapping_add(churn(h, &mut slots, &mut rng, warmup, None));
    sum = sum.wrapping_add(churn(
        h,
        &mut slots,
        &mut rng,
        sampled,
        Some((&mut alloc, &mut free)),
    ));
    for b in slots.drain(..) {
        // SAFETY: a block of the set, freed once.
        sum = sum.wrapping_add(unsafe { b.read_and_free(h) });
    }
    assert_quiescent(h);
    Run {
        contender: c.name(),
        backend: c.backend_name(),
        ludus: c.is_ludus(),
        smoke,
        slots: SLOTS,
        warmup_ops: warmup,
        size_range: (16, 4096),
        allocate: Dist::of(alloc),
        free: Dist::of(free),
        timer_overhead: Dist::of(overhead),
        checksum: black_box(sum),
    }
}

fn main() -> ExitCode {
    fresh::main("memory_latency", "latency", |c, smoke| {
        serde_json::to_value(run_contender(c, smoke))
    })
}
