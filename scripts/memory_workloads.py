#!/usr/bin/env python3
"""Run a plain-`main` memory bench (memory_frag, memory_latency) and write its result file.

    python3 scripts/memory_workloads.py <frag|latency> [--features F] [--name NAME]
                                        [-- <extra args passed to the bench binary>]

Runs `cargo bench -p ludus-benches --bench memory_<x> [--features F] -- --out TMP`, where the
bench runs every contender of the build in a fresh process and writes one JSON document, then
adds the same metadata as scripts/bench.py (machine, toolchain, crate versions, revision,
features, command, LUDUS_ environment) and writes perf-results/<name>.json and .md.
Default names: memory-fragmentation, memory-latency. With `--features mimalloc` the build has all
four contenders (raw_system, ludus_system, raw_mimalloc, ludus_mimalloc).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.dont_write_bytecode = True  # no scripts/__pycache__ from importing bench
sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench  # noqa: E402  (scripts/bench.py: the shared metadata helpers)

ROOT = bench.ROOT
TARGETS = {"frag": ("memory_frag", "memory-fragmentation"),
           "latency": ("memory_latency", "memory-latency")}


def mib(n: float | int | None) -> str:
    if n is None:
        return "-"
    return f"{n / (1 << 20):.2f}"


def frag_markdown(doc: dict) -> list[str]:
    lines = ["Per phase: requested live bytes (ludus: domain `live_bytes`; raw: the workload's "
             "tally), resident set (statm), RSS − requested, peak RSS (`ru_maxrss`), minor faults "
             "during the phase and since start, major faults, phase wall time. MiB = 2^20 bytes.",
             ""]
    for run in doc["runs"]:
        lines += [f"## {run['contender']} ({run['backend']})", "",
                  "| phase | requested MiB | RSS MiB | RSS − requested MiB | peak RSS MiB "
                  "| minflt (phase) | minflt (total) | majflt | wall ms |",
                  "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
        for p in run["phases"]:
            lines.append(f"| {p['phase']} | {mib(p['requested_bytes'])} | {mib(p['rss_bytes'])} | "
                         f"{mib(p['rss_minus_requested'])} | {mib(p['max_rss_bytes'])} | "
                         f"{p['minor_faults_phase']} | {p['minor_faults']} | {p['major_faults']} | "
                         f"{p['wall_ms']:.1f} |")
        lines.append("")
    return lines


def latency_markdown(doc: dict) -> list[str]:
    lines = ["Each sample is one operation bracketed by two `Instant::now()` calls; the timer's "
             "own cost (two back-to-back calls) is reported as `timer` and is NOT subtracted. "
             "`>p99.9` is the number of samples above p99.9 (the tail's support).", "",
             "| contender | op | samples | min | p50 | p95 | p99 | p99.9 | max | mean | >p99 "
             "| >p99.9 |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for run in doc["runs"]:
        for op, key in (("allocate", "allocate"), ("free", "free"), ("timer", "timer_overhead")):
            d = run[key]
            lines.append(f"| {run['contender']} | {op} | {d['samples']} | {d['min_ns']} | "
                         f"{d['p50_ns']} | {d['p95_ns']} | {d['p99_ns']} | {d['p999_ns']} | "
                         f"{d['max_ns']} | {d['mean_ns']:.1f} | {d['above_p99']} | "
                         f"{d['above_p999']} |")
    lines += ["", "All figures in ns. CDF points (200 quantiles per contender and op) are in the "
              "JSON file; `cargo run -p ludus-plot --release -- perf-results` draws them.", ""]
    return lines


def markdown(result: dict) -> str:
    smoke = " — SMOKE RUN (reduced sizes, not a result)" if result["smoke"] else ""
    lines = [f"# {result['name']}{smoke}", "",
             f"- date: {result['date']}",
             f"- revision: {result['revision']}{' (dirty)' if result['dirty'] else ''}",
             f"- machine: {result['machine']['cpu']}, {result['machine']['logical_cores']} "
             f"logical cores, {result['machine']['os']}",
             f"- toolchain: {result['toolchain'].splitlines()[0] if result['toolchain'] else '?'}",
             f"- features: {', '.join(result['features']) or '(default)'}",
             f"- contenders (run in this order, one fresh process each): "
             f"{', '.join(result['order'])}",
             f"- command: `{result['command']}`"
             + "".join(f" with `{k}={v}`" for k, v in result.get("env", {}).items()), ""]
    if result["workload"] == "fragmentation":
        lines += frag_markdown(result)
    else:
        lines += latency_markdown(result)
    return "\n".join(lines)


def main() -> int:
    argv = sys.argv[1:]
    extra: list[str] = []
    if "--" in argv:
        i = argv.index("--")
        argv, extra = argv[:i], argv[i + 1:]
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("workload", choices=sorted(TARGETS))
    ap.add_argument("--features", default="")
    ap.add_argument("--name", default=None, help="result file stem")
    args = ap.parse_args(argv)
    target, default_name = TARGETS[args.workload]
    name = args.name or default_name
    features = [f for f in args.features.replace(",", " ").split() if f]

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "run.json"
        cmd = ["cargo", "bench", "-p", "ludus-benches", "--bench", target]
        if features:
            cmd += ["--features", ",".join(features)]
        shown = " ".join(cmd + ["--"] + extra) if extra else " ".join(cmd)
        print("+", shown, flush=True)
        if subprocess.run(cmd + ["--"] + extra + ["--out", str(out)], cwd=ROOT).returncode != 0:
            print("bench run failed; no result written", file=sys.stderr)
            return 1
        try:
            doc = json.loads(out.read_text())
        except (OSError, json.JSONDecodeError) as e:
            print(f"the bench wrote no readable result: {e}", file=sys.stderr)
            return 1

    result = {
        "schema": "ludus.perf-result.memory-workload.v1",
        "name": name,
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "command": shown,
        "machine": bench.machine(),
        "toolchain": bench.sh("rustc", "-vV").strip(),
        "crates": bench.crate_versions(),
        "features": features,
        "env": {k: v for k, v in sorted(os.environ.items()) if k.startswith("LUDUS_")},
        **bench.revision(),
        **{k: v for k, v in doc.items() if k != "schema"},
    }
    dest = ROOT / "perf-results"
    dest.mkdir(exist_ok=True)
    (dest / f"{name}.json").write_text(json.dumps(result, indent=2) + "\n")
    (dest / f"{name}.md").write_text(markdown(result))
    print(f"wrote perf-results/{name}.json and perf-results/{name}.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
