//! Interleaved peer comparison: the contenders of a workload are timed in rounds, the order
//! rotated every round, so drift of the machine (clock frequency, neighbours on the host) lands on
//! every contender alike instead of on whichever criterion happened to time during it. Prints a
//! markdown report: per contender the median time per `run` over all rounds, and ludus ÷ each.
//!
//! `cargo run --release -p ludus-peers --example interleaved [rounds [workload-substring]] > perf-results/peers-interleaved.md`
//!
//! Single-threaded workloads only, timed with the thread-CPU clock (as `PEERS_CLOCK=thread-cpu`).

use std::time::Duration;

use ludus_peers::clock::thread_cpu_now;
use ludus_peers::*;

/// One contender of one workload, type-erased.
trait Timed {
    fn name(&self) -> &'static str;
    /// Thread-CPU time of `reps` runs (fresh state before each when the workload needs it).
    fn sample(&mut self, reps: usize) -> Duration;
}

struct Contender<W: Workload> {
    name: &'static str,
    state: W,
}

impl<W: Workload> Timed for Contender<W> {
    fn name(&self) -> &'static str {
        self.name
    }
    fn sample(&mut self, reps: usize) -> Duration {
        std::hint::black_box(&self.state);
        if !W::FRESH_STATE {
            // One clock pair per sample: a clock read costs more than the smallest workloads.
            let start = thread_cpu_now();
            for _ in 0..reps {
                self.state.run();
            }
            return thread_cpu_now() - start;
        }
        let mut total = Duration::ZERO;
        for _ in 0..reps {
            self.state = W::setup();
            let start = thread_cpu_now();
            self.state.run();
            total += thread_cpu_now() - start;
        }
        total
    }
}

fn boxed<W: Workload + 'static>(name: &'static str) -> Box<dyn Timed> {
    Box::new(Contender {
        name,
        state: W::setup(),
    })
}

macro_rules! contenders {
    (joins; $w:ident) => {
        vec![
            boxed::<joins::ludus::$w>("ludus"),
            boxed::<joins::ludus_clustered::$w>("ludus_clustered"),
            boxed::<joins::raw::$w>("raw"),
            boxed::<joins::hecs::$w>("hecs"),
            boxed::<joins::bevy::$w>("bevy"),
            boxed::<joins::shipyard::$w>("shipyard"),
            boxed::<joins::sparsey::$w>("sparsey"),
        ]
    };
    ($w:ident $(, $extra:ident as $extra_name:literal)?) => {
        vec![
            boxed::<ludus_c::$w>("ludus"),
            $( boxed::<ludus_c::$extra>($extra_name), )?
            boxed::<raw::$w>("raw"),
            boxed::<hecs_c::$w>("hecs"),
            boxed::<bevy_c::$w>("bevy"),
            boxed::<shipyard_c::$w>("shipyard"),
            boxed::<sparsey_c::$w>("sparsey"),
        ]
    };
}

/// Medians of the per-run time of every contender over `rounds` rotated rounds.
fn measure(mut cs: Vec<Box<dyn Timed>>, rounds: usize) -> Vec<(&'static str, f64)> {
    // Warm up and calibrate: ~0.3 s per contender, then enough runs per sample for ~2 ms of
    // CPU time (at least one).
    let reps: Vec<usize> = cs
        .iter_mut()
        .map(|c| {
            let (mut runs, mut spent) = (0usize, Duration::ZERO);
            while spent < Duration::from_millis(300) {
                spent += c.sample(1);
                runs += 1;
            }
            let one = spent.as_secs_f64() / runs as f64;
            ((2e-3 / one.max(1e-9)) as usize).clamp(1, 1_000_000)
        })
        .collect();
    let mut times: Vec<Vec<f64>> = vec![Vec::with_capacity(rounds); cs.len()];
    for round in 0..rounds {
        for k in 0..cs.len() {
            let i = (round + k) % cs.len();
            let t = cs[i].sample(reps[i]);
            times[i].push(t.as_secs_f64() * 1e9 / reps[i] as f64);
        }
    }
    cs.iter()
        .zip(times)
        .map(|(c, mut t)| {
            t.sort_by(f64::total_cmp);
            (c.name(), t[t.len() / 2])
        })
        .collect()
}

fn pretty(ns: f64) -> String {
    if ns >= 1e6 {
        format!("{:.3} ms", ns / 1e6)
    } else if ns >= 1e3 {
        format!("{:.2} µs", ns / 1e3)
    } else {
        format!("{ns:.1} ns")
    }
}

fn command_line(program: &str, args: &[&str]) -> String {
    std::process::Command::new(program)
        .args(args)
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default()
}

fn main() {
    if let Err(e) = verify() {
        panic!("checksum mismatch, refusing to time unequal work: {e}");
    }
    let rounds: usize = std::env::args()
        .nth(1)
        .map_or(31, |s| s.parse().expect("rounds"));
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_owned())
        })
        .unwrap_or_default();
    println!("# peers-interleaved\n");
    println!(
        "- revision: {}",
        command_line("git", &["rev-parse", "HEAD"])
    );
    println!(
        "- machine: {cpu}, {} logical cores",
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    println!("- toolchain: {}", command_line("rustc", &["-V"]));
    println!("- command: `cargo run --release -p ludus-peers --example interleaved {rounds}`");
    println!(
        "- method: 0.3 s warm-up per contender, then {rounds} rounds with the contender order \
         rotated each round, ~2 ms of thread-CPU time per sample; medians of the per-run time \
         over the rounds\n"
    );
    type Make = Box<dyn Fn() -> Vec<Box<dyn Timed>>>;
    let workloads: Vec<(&str, Make)> = vec![
        ("simple_insert", Box::new(|| contenders!(SimpleInsert))),
        ("simple_iter", Box::new(|| contenders!(SimpleIter))),
        ("frag_iter", Box::new(|| contenders!(FragIter))),
        ("heavy_compute", Box::new(|| contenders!(HeavyCompute))),
        (
            "add_remove",
            Box::new(|| contenders!(AddRemove, AddRemoveSingle as "ludus_single")),
        ),
        ("handle_get", Box::new(|| contenders!(HandleGet))),
        ("churn", Box::new(|| contenders!(Churn))),
        ("join_aligned", Box::new(|| contenders!(joins; JoinAligned))),
        ("join_half", Box::new(|| contenders!(joins; JoinHalf))),
        ("join_sparse3", Box::new(|| contenders!(joins; JoinSparse3))),
        ("join_mixed4", Box::new(|| contenders!(joins; JoinMixed4))),
        (
            "frame",
            Box::new(|| {
                vec![
                    boxed::<frame::ludus::Frame>("ludus"),
                    boxed::<frame::raw::Frame>("raw"),
                    boxed::<frame::hecs::Frame>("hecs"),
                ]
            }),
        ),
        (
            "tick",
            Box::new(|| {
                vec![
                    boxed::<tick::ludus::Tick>("ludus"),
                    boxed::<tick::hecs::Tick>("hecs"),
                ]
            }),
        ),
    ];
    println!("| workload | ludus | raw | best peer | ludus ÷ raw | ludus ÷ best peer |");
    println!("| --- | ---: | ---: | --- | ---: | ---: |");
    let mut every = Vec::new();
    let only = std::env::args().nth(2).unwrap_or_default();
    for (name, make) in workloads {
        if !name.contains(only.as_str()) {
            continue;
        }
        let medians = measure(make(), rounds);
        let of = |n: &str| medians.iter().find(|(c, _)| *c == n).map(|&(_, t)| t);
        let ours = of("ludus").expect("ludus");
        let raw = of("raw").unwrap_or(f64::NAN);
        let (best, best_t) = medians
            .iter()
            .filter(|(c, _)| !c.starts_with("ludus") && *c != "raw")
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .copied()
            .expect("peers");
        println!(
            "| {name} | {} | {} | {best} {} | {:.3}× | {:.3}× |",
            pretty(ours),
            pretty(raw),
            pretty(best_t),
            ours / raw,
            ours / best_t
        );
        every.push((name, medians.clone()));
        if let Some(single) = of("ludus_single") {
            println!(
                "| {name} (ludus_single) | {} | {} | {best} {} | {:.3}× | {:.3}× |",
                pretty(single),
                pretty(raw),
                pretty(best_t),
                single / raw,
                single / best_t
            );
        }
    }
    println!("\nEvery contender (median per run; ludus ÷ it in parentheses):\n");
    println!("| workload | contenders |");
    println!("| --- | --- |");
    for (name, medians) in every {
        let ours = medians
            .iter()
            .find(|(c, _)| *c == "ludus")
            .map_or(f64::NAN, |m| m.1);
        let cells: Vec<String> = medians
            .iter()
            .map(|(c, t)| format!("{c} {} ({:.2}×)", pretty(*t), ours / t))
            .collect();
        println!("| {name} | {} |", cells.join(", "));
    }
}
