//! Peer comparison: one criterion group per workload, one function per contender, all
//! interleaved in one run. Group names are workloads, function ids are contenders (`raw` is the
//! limit, `ludus*` is ours). Checksums are verified before anything is timed.

use criterion::measurement::WallTime;
use criterion::{criterion_group, criterion_main, BatchSize, BenchmarkGroup, Criterion};
use ludus_peers::*;

/// Times `W::run`: on a state set up once, or on a fresh state per run when `W::FRESH_STATE`.
fn bench<W: Workload>(g: &mut BenchmarkGroup<'_, WallTime>, contender: &str) {
    if W::FRESH_STATE {
        g.bench_function(contender, |b| {
            b.iter_batched(
                W::setup,
                |mut w| {
                    w.run();
                    w
                },
                BatchSize::LargeInput,
            )
        });
    } else {
        let mut w = W::setup();
        g.bench_function(contender, |b| b.iter(|| w.run()));
    }
}

macro_rules! group {
    ($c:expr, $name:literal, $w:ident) => {{
        let mut g = $c.benchmark_group($name);
        bench::<ludus_c::$w>(&mut g, "ludus");
        bench::<raw::$w>(&mut g, "raw");
        bench::<hecs_c::$w>(&mut g, "hecs");
        bench::<bevy_c::$w>(&mut g, "bevy");
        bench::<shipyard_c::$w>(&mut g, "shipyard");
        bench::<sparsey_c::$w>(&mut g, "sparsey");
        g.finish();
    }};
}

fn peers(c: &mut Criterion) {
    if let Err(e) = verify() {
        panic!("checksum mismatch, refusing to time unequal work: {e}");
    }
    group!(c, "simple_insert", SimpleInsert);
    group!(c, "simple_iter", SimpleIter);
    group!(c, "frag_iter", FragIter);
    group!(c, "heavy_compute", HeavyCompute);
    group!(c, "heavy_compute_parallel", HeavyComputeParallel);
    group!(c, "add_remove", AddRemove);
    group!(c, "handle_get", HandleGet);
    group!(c, "churn", Churn);
}

criterion_group!(benches, peers);
criterion_main!(benches);
