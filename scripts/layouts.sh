#!/usr/bin/env bash
# Runs eight copies of each bench binary (each copy is a new file), alternating the binaries, so
# that a comparison of builds is not a comparison of where their files happen to lie in memory
# (docs/benchmarking.md, "Reading ratios on a noisy machine").
#
#   scripts/layouts.sh NAME=BINARY [NAME=BINARY ...] -- ARGS...
#
# Each binary is copied to $LAYOUT_DIR/<name>/<k d's>/bench (k = 1..8) and run there with ARGS
# (environment variables pass through); every output line is printed prefixed with the name and
# k. Example (the content bench's save, base against new):
#   LUDUS_INTERLEAVE=11 LUDUS_CONTENT_NO_APPLY=1 scripts/layouts.sh \
#     base=/tmp/base/content-<hash> new=target/release/deps/content-<hash> -- --bench
set -euo pipefail
dir="${LAYOUT_DIR:-/tmp/ludus-layouts}"
bins=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do bins+=("$1"); shift; done
[ $# -gt 0 ] && shift
for k in 1 2 3 4 5 6 7 8; do
  d=$(printf 'd%.0s' $(seq 1 "$k"))
  for nb in "${bins[@]}"; do
    name="${nb%%=*}" bin="${nb#*=}"
    mkdir -p "$dir/$name/$d"
    cp "$bin" "$dir/$name/$d/bench"
    "$dir/$name/$d/bench" "$@" 2>&1 | sed "s|^|$name $k: |"
  done
done
