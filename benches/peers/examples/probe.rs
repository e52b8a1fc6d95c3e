//! Runs one workload of one contender in a loop, for `perf stat` / `perf record`:
//! `cargo run --release -p ludus-peers --example probe -- <workload> <contender> [iterations]`.

use ludus_peers::*;

/// Runs `W::run` `iterations` times (fresh state each time when `W::FRESH_STATE`) and prints
/// the mean wall time of `run` alone.
fn spin<W: Workload>(iterations: usize) {
    let mut w = W::setup();
    let mut timed = std::time::Duration::ZERO;
    let mut faults = 0;
    for _ in 0..iterations {
        if W::FRESH_STATE {
            w = W::setup();
        }
        let before = minor_faults();
        let start = std::time::Instant::now();
        w.run();
        timed += start.elapsed();
        faults += minor_faults() - before;
    }
    std::hint::black_box(w.checksum());
    println!(
        "mean run: {:?}, {} minor faults per run",
        timed / iterations as u32,
        faults / iterations as i64
    );
}

/// Minor page faults of this thread so far.
fn minor_faults() -> i64 {
    // SAFETY: `getrusage` writes one `rusage` into the zeroed value we pass.
    unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_THREAD, &mut usage);
        usage.ru_minflt
    }
}

macro_rules! dispatch {
    ($contender:expr, joins::$w:ident, $n:expr) => {
        match $contender {
            "ludus" => spin::<joins::ludus::$w>($n),
            "ludus_clustered" => spin::<joins::ludus_clustered::$w>($n),
            "raw" => spin::<joins::raw::$w>($n),
            "hecs" => spin::<joins::hecs::$w>($n),
            "bevy" => spin::<joins::bevy::$w>($n),
            "shipyard" => spin::<joins::shipyard::$w>($n),
            "sparsey" => spin::<joins::sparsey::$w>($n),
            other => panic!("unknown contender {other}"),
        }
    };
    ($contender:expr, $w:ident, $n:expr) => {
        match $contender {
            "ludus" => spin::<ludus_c::$w>($n),
            "raw" => spin::<raw::$w>($n),
            "hecs" => spin::<hecs_c::$w>($n),
            "bevy" => spin::<bevy_c::$w>($n),
            "shipyard" => spin::<shipyard_c::$w>($n),
            "sparsey" => spin::<sparsey_c::$w>($n),
            other => panic!("unknown contender {other}"),
        }
    };
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (workload, contender) = (args[0].as_str(), args[1].as_str());
    let n: usize = args.get(2).map_or(1000, |s| s.parse().unwrap());
    match workload {
        "simple_insert" => dispatch!(contender, SimpleInsert, n),
        "simple_iter" => dispatch!(contender, SimpleIter, n),
        "frag_iter" => dispatch!(contender, FragIter, n),
        "heavy_compute" => dispatch!(contender, HeavyCompute, n),
        "add_remove" if contender == "ludus_single" => spin::<ludus_c::AddRemoveSingle>(n),
        "add_remove" => dispatch!(contender, AddRemove, n),
        "handle_get" => dispatch!(contender, HandleGet, n),
        "churn" => dispatch!(contender, Churn, n),
        "join_aligned" => dispatch!(contender, joins::JoinAligned, n),
        "join_half" => dispatch!(contender, joins::JoinHalf, n),
        "join_sparse3" => dispatch!(contender, joins::JoinSparse3, n),
        "join_mixed4" => dispatch!(contender, joins::JoinMixed4, n),
        "frame" => match contender {
            "ludus" => spin::<frame::ludus::Frame>(n),
            "raw" => spin::<frame::raw::Frame>(n),
            "hecs" => spin::<frame::hecs::Frame>(n),
            other => panic!("unknown contender {other}"),
        },
        "tick" => match contender {
            "ludus" => spin::<tick::ludus::Tick>(n),
            "hecs" => spin::<tick::hecs::Tick>(n),
            other => panic!("unknown contender {other}"),
        },
        other => panic!("unknown workload {other}"),
    }
}
