//! A fresh process per contender for the plain-`main` memory benches (`memory_frag.rs`,
//! `memory_latency.rs`): the parent re-executes its own binary with `--contender NAME`, the
//! child runs the workload and prints one `RESULT {json}` line, the parent collects every run
//! into one JSON document (`--out FILE`, else stdout).
//!
//! Arguments: `--bench` (passed by `cargo bench`; without it, as under `cargo test --benches`,
//! the run is a smoke run), `--out FILE`, `--order a,b` (contender order; default
//! `Contender::all`), `--contender NAME` (child), other `--flags` ignored, and positional
//! criterion-style filters: the target runs only if a filter is a substring of its name (or
//! there is none). `LUDUS_BENCH_SMOKE=1` forces a smoke run (reduced sizes, not a result).

use std::process::{Command, ExitCode};

use crate::common::Contender;

/// The parsed command line.
struct Args {
    out: Option<String>,
    child: Option<String>,
    order: Option<String>,
    filters: Vec<String>,
    bench: bool,
}

fn args() -> Args {
    let mut a = Args {
        out: None,
        child: None,
        order: None,
        filters: Vec::new(),
        bench: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--bench" => a.bench = true,
            "--out" => a.out = it.next(),
            "--contender" => a.child = it.next(),
            "--order" => a.order = it.next(),
            s if s.starts_with("--") => {}
            _ => a.filters.push(arg),
        }
    }
    a
}

/// The bench's `main`: parent or child. `run(contender, smoke)` is the child's workload.
pub fn main(
    target: &str,
    workload: &str,
    run: impl Fn(Contender, bool) -> Result<serde_json::Value, serde_json::Error>,
) -> ExitCode {
    let a = args();
    let smoke = std::env::var("LUDUS_BENCH_SMOKE").is_ok_and(|v| v != "0") || !a.bench;
    if let Some(name) = a.child {
        let Some(c) = Contender::parse(&name) else {
            eprintln!("{target}: unknown contender {name:?} in this build");
            return ExitCode::FAILURE;
        };
        return match run(c, smoke).and_then(|v| serde_json::to_string(&v)) {
            Ok(s) => {
                println!("RESULT {s}");
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("{target}: {e}");
                ExitCode::FAILURE
            }
        };
    }
    if !a.filters.is_empty() && !a.filters.iter().any(|f| target.contains(f.as_str())) {
        return ExitCode::SUCCESS;
    }
    let contenders: Vec<String> = match &a.order {
        Some(o) => o.split(',').map(str::to_owned).collect(),
        None => Contender::all()
            .iter()
            .map(|c| c.name().to_owned())
            .collect(),
    };
    let exe = match std::env::current_exe() {
        Ok(e) => e,
        Err(e) => {
            eprintln!("{target}: cannot find the executable: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut runs = Vec::new();
    for name in &contenders {
        let mut cmd = Command::new(&exe);
        cmd.args(["--contender", name]);
        if a.bench {
            cmd.arg("--bench");
        }
        let output = match cmd.output() {
            Ok(o) => o,
            Err(e) => {
                eprintln!("{target}: running {name}: {e}");
                return ExitCode::FAILURE;
            }
        };
        let stdout = String::from_utf8_lossy(&output.stdout);
        let parsed = stdout
            .lines()
            .find_map(|l| l.strip_prefix("RESULT "))
            .and_then(|l| serde_json::from_str::<serde_json::Value>(l).ok());
        match (output.status.success(), parsed) {
            (true, Some(v)) => runs.push(v),
            _ => {
                eprintln!(
                    "{target}: contender {name} failed ({}):\n{}",
                    output.status,
                    String::from_utf8_lossy(&output.stderr)
                );
                return ExitCode::FAILURE;
            }
        }
        eprintln!("{target}: {name} done");
    }
    let doc = serde_json::json!({
        "schema": "ludus.memory-workload.v1",
        "workload": workload,
        "smoke": smoke,
        "fresh_process_per_contender": true,
        "order": contenders,
        "runs": runs,
    });
    let text = match serde_json::to_string_pretty(&doc) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("{target}: {e}");
            return ExitCode::FAILURE;
        }
    };
    match a.out {
        Some(path) => match std::fs::write(&path, text + "\n") {
            Ok(()) => {
                eprintln!("{target}: wrote {path}");
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("{target}: writing {path}: {e}");
                ExitCode::FAILURE
            }
        },
        None => {
            println!("{text}");
            ExitCode::SUCCESS
        }
    }
}
