#!/usr/bin/env bash
# Every memory workload result file and its plots, in order (run on a quiet machine):
#   perf-results/memory-threads{,-mimalloc}.{json,md}   thread scaling + remote frees (criterion)
#   perf-results/memory-fragmentation.{json,md}         fragmentation stress, fresh process each
#   perf-results/memory-latency.{json,md}               sampled allocate/free latency
#   perf-results/*.svg                                  tools/plot (ludus-plot)
# The fragmentation and latency runs use the mimalloc build, which holds all four contenders
# (raw_, ludus_ and ludus_exact_ over system and mimalloc). LUDUS_BENCH_MAX_THREADS (default 4)
# adds the 8- and 16-thread scaling groups. Extra arguments go to the criterion runs.
set -euo pipefail
cd "$(dirname "$0")/.."
CRITERION_ARGS=(--warm-up-time 1 --measurement-time 2 "$@")

python3 scripts/bench.py memory_threads --name memory-threads -- "${CRITERION_ARGS[@]}"
python3 scripts/bench.py memory_threads --features mimalloc --name memory-threads-mimalloc \
    -- "${CRITERION_ARGS[@]}"
python3 scripts/memory_workloads.py frag --features mimalloc
python3 scripts/memory_workloads.py latency --features mimalloc
cargo run -p ludus-plot --release -- perf-results
