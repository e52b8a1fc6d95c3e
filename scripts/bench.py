#!/usr/bin/env python3
"""Run a benchmark target and write a reproducible result file under perf-results/.

    python3 scripts/bench.py <bench-target> [-p PACKAGE] [--features F] [--name NAME]
                             [--iai] [-- <extra args passed to the bench binary>]

The package defaults to the workspace member that owns the bench target: `ludus-benches`
(benches/crate/) for identity, memory, memory_threads, world and their `_iai` twins,
`ludus-peers` for peers (found with `cargo metadata`, so a new [[bench]] needs no entry here).
Criterion output is read from `$CARGO_TARGET_DIR/criterion` when that is set, else
`target/criterion`. `--features` are that package's features (`ludus-benches` forwards `mimalloc` and `rayon`).

Criterion targets: every `benchmark_group` is a workload, every function id in it a contender.
Contenders named `ludus` or `ludus_*` are ours, `raw` is the raw-Vec limit, anything else is a
peer or baseline. For each of our contenders the file gives the ratio of its median to every other
contender, to the best (fastest) non-ludus contender and to `raw`. Ratio < 1.0 means ludus is
faster.

iai-callgrind targets (`--iai`): instruction counts (Ir) per benchmark, from the summaries that
iai-callgrind writes with `--save-summary=json`. They are stable across noisy machines: use them to
catch regressions.

Writes perf-results/<name>.json (machine, toolchain, crate versions, revision, features, figures)
and perf-results/<name>.md (a readable summary). Reads only what this run produced (files newer
than its start), so stale criterion output never leaks into a result.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TRACKED_CRATES = [
    "ludus", "uuid", "getrandom", "bytemuck", "allocator-api2", "hashbrown", "mimalloc",
    "libmimalloc-sys", "bumpalo", "criterion", "iai-callgrind", "rayon", "hecs", "bevy_ecs",
    "shipyard", "sparsey",
]


def target_dir() -> Path:
    """Cargo's target directory: `CARGO_TARGET_DIR` (relative to the root) or `target/`."""
    env = os.environ.get("CARGO_TARGET_DIR")
    return ROOT / env if env else ROOT / "target"


def sh(*args: str, cwd: Path = ROOT) -> str:
    try:
        return subprocess.run(args, cwd=cwd, capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return ""


def machine() -> dict:
    cpu = ""
    for line in sh("lscpu").splitlines():
        if line.startswith("Model name:"):
            cpu = line.split(":", 1)[1].strip()
    return {
        "cpu": cpu or platform.processor(),
        "logical_cores": os.cpu_count(),
        "os": " ".join(platform.uname()[0:3]),
        "arch": platform.machine(),
    }


def crate_versions() -> dict:
    lock = ROOT / "Cargo.lock"
    found: dict[str, list[str]] = {}
    if lock.exists():
        for m in re.finditer(r'\[\[package\]\]\nname = "([^"]+)"\nversion = "([^"]+)"',
                             lock.read_text()):
            if m.group(1) in TRACKED_CRATES:
                found.setdefault(m.group(1), []).append(m.group(2))
    return {k: ", ".join(sorted(set(v))) for k, v in sorted(found.items())}


def bench_owner(target: str) -> str | None:
    """The workspace member with a [[bench]] target named `target` (None if none or unknown)."""
    try:
        meta = json.loads(sh("cargo", "metadata", "--no-deps", "--format-version", "1") or "{}")
    except json.JSONDecodeError:
        return None
    for pkg in meta.get("packages", []):
        if any(t["name"] == target and "bench" in t["kind"] for t in pkg["targets"]):
            return pkg["name"]
    return None


def revision() -> dict:
    rev = sh("git", "rev-parse", "HEAD").strip()
    dirty = bool(sh("git", "status", "--porcelain", "--untracked-files=no").strip())
    return {"revision": rev, "dirty": dirty}


def criterion_results(since: float, ran: set[str]) -> dict:
    """{group: {contender: figures}} from criterion's JSON files written after `since`, for the
    benchmark ids this run printed (criterion may touch files of benchmarks it did not run)."""
    groups: dict[str, dict] = {}
    base = target_dir() / "criterion"
    for bench in base.glob("**/new/benchmark.json"):
        if bench.stat().st_mtime < since:
            continue
        new = bench.parent
        meta = json.loads(bench.read_text())
        est = json.loads((new / "estimates.json").read_text())
        sample = json.loads((new / "sample.json").read_text())
        per_iter = [t / n for t, n in zip(sample["times"], sample["iters"]) if n]
        group = meta["group_id"]
        name = meta.get("function_id") or meta.get("value_str") or "default"
        if meta.get("function_id") and meta.get("value_str"):
            name = f'{meta["function_id"]}/{meta["value_str"]}'
        if meta.get("full_id", f"{group}/{name}") not in ran:
            continue
        groups.setdefault(group, {})[name] = {
            "median_ns": est["median"]["point_estimate"],
            "median_ci95_ns": [est["median"]["confidence_interval"]["lower_bound"],
                               est["median"]["confidence_interval"]["upper_bound"]],
            "mean_ns": est["mean"]["point_estimate"],
            "min_ns": min(per_iter) if per_iter else None,
            "max_ns": max(per_iter) if per_iter else None,
            "samples": len(per_iter),
        }
    return groups


def ratios(contenders: dict) -> dict:
    ours = {k: v for k, v in contenders.items() if k == "ludus" or k.startswith("ludus")}
    others = {k: v for k, v in contenders.items() if k not in ours}
    peers = {k: v for k, v in others.items() if k != "raw"}
    out = {}
    for name, fig in ours.items():
        m = fig["median_ns"]
        entry = {"to": {o: m / f["median_ns"] for o, f in sorted(others.items())}}
        if "raw" in others:
            entry["to_raw"] = m / others["raw"]["median_ns"]
        if peers:
            best = min(peers, key=lambda k: peers[k]["median_ns"])
            entry["best_peer"] = best
            entry["to_best_peer"] = m / peers[best]["median_ns"]
            entry["best_peer_to_raw"] = (peers[best]["median_ns"] / others["raw"]["median_ns"]
                                         if "raw" in others else None)
        out[name] = entry
    return out


def iai_results(since: float) -> dict:
    """{benchmark id: {"Ir": n, ...}} from iai-callgrind summary.json files written after `since`."""
    out = {}
    for summary in (target_dir() / "iai").glob("**/summary.json"):
        if summary.stat().st_mtime < since:
            continue
        data = json.loads(summary.read_text())
        bench_id = "/".join(str(p) for p in (data.get("module_path"), data.get("id")) if p)
        metrics = {}
        for prof in data.get("profiles", []):
            total = prof.get("summaries", {}).get("total", {}).get("summary", {})
            for tool_metrics in total.values():
                for key, val in tool_metrics.items():
                    left = val.get("metrics", {}).get("Left") or val.get("metrics", {}).get("Both")
                    if isinstance(left, list):
                        left = left[0]
                    if isinstance(left, dict):
                        left = left.get("Int", left.get("Float"))
                    if isinstance(left, (int, float)):
                        metrics[key] = left
        out[bench_id or str(summary.parent.relative_to(ROOT))] = metrics
    return dict(sorted(out.items()))


def fmt_ns(ns: float | None) -> str:
    if ns is None:
        return "-"
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("µs", 1e3)):
        if ns >= scale:
            return f"{ns / scale:.3g} {unit}"
    return f"{ns:.3g} ns"


def markdown(result: dict) -> str:
    lines = [f"# {result['name']}", "",
             f"- date: {result['date']}",
             f"- revision: {result['revision']}{' (dirty)' if result['dirty'] else ''}",
             f"- machine: {result['machine']['cpu']}, {result['machine']['logical_cores']} "
             f"logical cores, {result['machine']['os']}",
             f"- toolchain: {result['toolchain'].splitlines()[0] if result['toolchain'] else '?'}",
             f"- features: {', '.join(result['features']) or '(default)'}; "
             f"backend: {result['backend']}",
             f"- command: `{result['command']}`"
             + "".join(f" with `{k}={v}`" for k, v in result.get("env", {}).items()), ""]
    for group, data in result.get("groups", {}).items():
        lines += [f"## {group}", "", "| contender | median | min | max | samples |",
                  "| --- | ---: | ---: | ---: | ---: |"]
        for name, f in sorted(data["contenders"].items(), key=lambda kv: kv[1]["median_ns"]):
            lines.append(f"| {name} | {fmt_ns(f['median_ns'])} | {fmt_ns(f['min_ns'])} | "
                         f"{fmt_ns(f['max_ns'])} | {f['samples']} |")
        for name, r in data["ratios"].items():
            parts = [f"{o} {v:.3f}×" for o, v in r["to"].items()]
            lines += ["", f"**{name}** median ÷ other: " + ", ".join(parts)]
            if "to_best_peer" in r:
                lines.append(f"— vs best peer ({r['best_peer']}): **{r['to_best_peer']:.3f}×**")
            if "to_raw" in r:
                lines.append(f"— vs raw: **{r['to_raw']:.3f}×**")
        lines.append("")
    if result.get("instructions"):
        lines += ["## Instruction counts (iai-callgrind)", "", "| benchmark | Ir |", "| --- | ---: |"]
        for bench_id, m in result["instructions"].items():
            lines.append(f"| {bench_id} | {m.get('Ir', '-')} |")
        lines.append("")
    return "\n".join(lines)


def main() -> int:
    argv = sys.argv[1:]
    extra: list[str] = []
    if "--" in argv:
        i = argv.index("--")
        argv, extra = argv[:i], argv[i + 1:]
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("target", help="the [[bench]] target to run")
    ap.add_argument("-p", "--package", default=None,
                    help="the package (default: the workspace member that owns the target)")
    ap.add_argument("--features", default="")
    ap.add_argument("--name", default=None, help="result file stem (default: the target)")
    ap.add_argument("--iai", action="store_true", help="an iai-callgrind target")
    args = ap.parse_args(argv)

    features = [f for f in re.split(r"[ ,]+", args.features) if f]
    name = args.name or (args.target + ("-" + "-".join(features) if features else ""))
    package = args.package or bench_owner(args.target)
    cmd = ["cargo", "bench"]
    if package:
        cmd += ["-p", package]
    cmd += ["--bench", args.target]
    if features:
        cmd += ["--features", ",".join(features)]
    bench_args = list(extra)
    if args.iai and not any(a.startswith("--save-summary") for a in bench_args):
        bench_args.append("--save-summary=json")
    if bench_args:
        cmd += ["--"] + bench_args

    start = time.time() - 1
    print("+", " ".join(cmd), flush=True)
    ran: set[str] = set()
    with subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, text=True, bufsize=1) as proc:
        assert proc.stdout is not None
        prev = ""
        for line in proc.stdout:  # criterion prints "<id>  time: [...]", or the id on its own line
            sys.stdout.write(line)
            m = re.match(r"^(\S.*?)\s+time:\s+\[", line)
            if m:
                ran.add(m.group(1))
            elif re.match(r"^\s+time:\s+\[", line) and prev:
                ran.add(prev)
            if line.strip() and not line[0].isspace():
                prev = line.strip()
    if proc.returncode != 0:
        print("bench run failed; no result written", file=sys.stderr)
        return 1

    result = {
        "schema": "ludus.perf-result.v1",
        "name": name,
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "command": " ".join(cmd),
        "machine": machine(),
        "toolchain": sh("rustc", "-vV").strip(),
        "crates": crate_versions(),
        "features": features,
        "backend": "mimalloc" if "mimalloc" in features else "system",
        "env": {k: v for k, v in sorted(os.environ.items())
                if k.startswith(("PEERS_", "RAYON_", "LUDUS_"))},
        **revision(),
    }
    if args.iai:
        result["instructions"] = iai_results(start)
        if not result["instructions"]:
            print("no iai-callgrind summaries found", file=sys.stderr)
            return 1
    else:
        groups = criterion_results(start, ran)
        if not groups:
            print("no criterion results found", file=sys.stderr)
            return 1
        result["groups"] = {g: {"contenders": c, "ratios": ratios(c)}
                            for g, c in sorted(groups.items())}

    out = ROOT / "perf-results"
    out.mkdir(exist_ok=True)
    (out / f"{name}.json").write_text(json.dumps(result, indent=2, sort_keys=False) + "\n")
    (out / f"{name}.md").write_text(markdown(result))
    print(f"wrote perf-results/{name}.json and perf-results/{name}.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
