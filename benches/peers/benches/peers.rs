//! Peer comparison: one criterion group per workload, one function per contender, all
//! interleaved in one run. Group names are workloads, function ids are contenders (`raw` is the
//! limit, `ludus*` is ours). Checksums are verified before anything is timed.
//!
//! `PEERS_CLOCK=thread-cpu` times the single-threaded groups in thread CPU time instead of wall
//! time (see `ludus_peers::clock`); `heavy_compute_parallel` is always wall time.

use criterion::measurement::{Measurement, WallTime};
use criterion::{BatchSize, BenchmarkGroup, Criterion};
use ludus_peers::clock::ThreadCpuTime;
use ludus_peers::*;

/// Times `W::run`: on a state set up once, or on a fresh state per run when `W::FRESH_STATE`.
fn bench<W: Workload, M: Measurement>(g: &mut BenchmarkGroup<'_, M>, contender: &str) {
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
    ($c:expr, $name:literal, joins::$w:ident) => {{
        let mut g = $c.benchmark_group($name);
        bench::<joins::ludus::$w, _>(&mut g, "ludus");
        bench::<joins::ludus_clustered::$w, _>(&mut g, "ludus_clustered");
        bench::<joins::raw::$w, _>(&mut g, "raw");
        bench::<joins::hecs::$w, _>(&mut g, "hecs");
        bench::<joins::bevy::$w, _>(&mut g, "bevy");
        bench::<joins::shipyard::$w, _>(&mut g, "shipyard");
        bench::<joins::sparsey::$w, _>(&mut g, "sparsey");
        g.finish();
    }};
    ($c:expr, $name:literal, $w:ident $(, $extra:ident as $extra_name:literal)?) => {{
        let mut g = $c.benchmark_group($name);
        bench::<ludus_c::$w, _>(&mut g, "ludus");
        $( bench::<ludus_c::$extra, _>(&mut g, $extra_name); )?
        bench::<raw::$w, _>(&mut g, "raw");
        bench::<hecs_c::$w, _>(&mut g, "hecs");
        bench::<bevy_c::$w, _>(&mut g, "bevy");
        bench::<shipyard_c::$w, _>(&mut g, "shipyard");
        bench::<sparsey_c::$w, _>(&mut g, "sparsey");
        g.finish();
    }};
}

fn single_threaded<M: Measurement>(c: &mut Criterion<M>) {
    group!(c, "simple_insert", SimpleInsert);
    group!(c, "simple_iter", SimpleIter);
    group!(c, "frag_iter", FragIter);
    group!(c, "heavy_compute", HeavyCompute);
    group!(c, "add_remove", AddRemove, AddRemoveSingle as "ludus_single");
    group!(c, "handle_get", HandleGet);
    group!(c, "churn", Churn);
    group!(c, "join_aligned", joins::JoinAligned);
    group!(c, "join_half", joins::JoinHalf);
    group!(c, "join_sparse3", joins::JoinSparse3);
    group!(c, "join_mixed4", joins::JoinMixed4);
    {
        let mut g = c.benchmark_group("frame");
        bench::<frame::ludus::Frame, _>(&mut g, "ludus");
        bench::<frame::raw::Frame, _>(&mut g, "raw");
        bench::<frame::hecs::Frame, _>(&mut g, "hecs");
        g.finish();
    }
}

fn parallel(c: &mut Criterion<WallTime>) {
    group!(c, "heavy_compute_parallel", HeavyComputeParallel);
}

fn main() {
    if let Err(e) = verify() {
        panic!("checksum mismatch, refusing to time unequal work: {e}");
    }
    if std::env::var("PEERS_CLOCK").as_deref() == Ok("thread-cpu") {
        let mut c = Criterion::default()
            .with_measurement(ThreadCpuTime)
            .configure_from_args();
        single_threaded(&mut c);
        c.final_summary();
    } else {
        let mut c = Criterion::default().configure_from_args();
        single_threaded(&mut c);
        c.final_summary();
    }
    let mut c = Criterion::default().configure_from_args();
    parallel(&mut c);
    c.final_summary();
}
