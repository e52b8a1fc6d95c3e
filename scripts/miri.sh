#!/usr/bin/env bash
# Miri over every test that touches unsafe code (library unit tests and the integration tests
# listed here). Tests that need the OS (fork, real entropy) are ignored under miri in the tests
# themselves; proptest case counts shrink under cfg(miri). Doctests (the arena's compile_fail
# proofs among them) do not run here: they exercise rustc, not unsafe code.
#
# Miri interprets on one thread, and cargo holds its build directory while tests run: the runs
# are split into two queues that run at once, each in its own copy of the built target
# directory (everything is built once, first). `MIRI_JOBS=1` runs one queue after the other.
set -euo pipefail
cd "$(dirname "$0")/.."
export MIRIFLAGS="${MIRIFLAGS:--Zmiri-strict-provenance}"
root="${CARGO_TARGET_DIR:-target}"

# Every integration test binary: tests/<name>/main.rs (tests/support/ is a module they share,
# not a binary) and tests/<name>.rs. The content binary (tests/content/) is skipped: src/content
# has no unsafe code, and the world paths it drives are covered by the world binaries.
names=()
for t in tests/*/main.rs tests/*.rs; do
  [ -e "$t" ] || continue
  case "$t" in */main.rs) name="$(basename "$(dirname "$t")")" ;; *) name="$(basename "$t" .rs)" ;; esac
  case "$name" in content) continue ;; esac
  names+=("$name")
done

# The runs, as "features|cargo test arguments|test filter arguments". The world binary (the
# longest) is split in two by module: the models and groups, and the rest (the filters match
# substrings: `model::` takes `pool_model::` too).
world_a="model:: groups:: exact_sparse::"
world_b="--skip model:: --skip groups:: --skip exact_sparse::"
# src/content has no unsafe code (its serializers only call safe world APIs): skipped in --lib.
# The validation ledger is feature-gated: its unit tests and the memory binary's validation
# module (its other modules run unfeatured) with the feature on; activity capture too (its
# observer pointer is the unsafe part).
queue_a=("|--test world|$world_a" "|--lib|--skip content::" "validation|--lib|memory::"
  "validation|--test memory|validation::" "capture|--test memory|capture::")
queue_b=("|--test world|$world_b")
for n in "${names[@]}"; do
  case "$n" in
    world) ;;
    durable | identity | process_wide | soundness) queue_a+=("|--test $n|") ;;
    *) queue_b+=("|--test $n|") ;;
  esac
done
runs=("${queue_a[@]}" "${queue_b[@]}")

run() { # features, target args, filter args
  local features=()
  [ -n "$1" ] && features=(--features "$1")
  # shellcheck disable=SC2086 # the argument strings are split on purpose
  cargo +nightly miri test "${features[@]}" $2 -- $3
}

# Build everything once (the test filters do not matter to the build).
for r in "${runs[@]}"; do
  IFS='|' read -r features targets _ <<<"$r"
  features_args=()
  [ -n "$features" ] && features_args=(--features "$features")
  # shellcheck disable=SC2086
  cargo +nightly miri test --no-run "${features_args[@]}" $targets
done

if [ "${MIRI_JOBS:-2}" = 1 ]; then
  for r in "${runs[@]}"; do IFS='|' read -r f t a <<<"$r"; run "$f" "$t" "$a"; done
  exit 0
fi

second="$root/miri-queue-b"
rm -rf "$second"
mkdir -p "$second"
cp -a "$root/miri" "$second/miri"

log_a="$(mktemp)" log_b="$(mktemp)"
(
  for r in "${queue_a[@]}"; do IFS='|' read -r f t a <<<"$r"; run "$f" "$t" "$a" || exit 1; done
) >"$log_a" 2>&1 &
pid_a=$!
(
  export CARGO_TARGET_DIR="$second"
  for r in "${queue_b[@]}"; do IFS='|' read -r f t a <<<"$r"; run "$f" "$t" "$a" || exit 1; done
) >"$log_b" 2>&1 &
pid_b=$!
status=0
wait "$pid_a" || status=1
wait "$pid_b" || status=1
echo "---- miri queue a: ${queue_a[*]}"
cat "$log_a"
echo "---- miri queue b: ${queue_b[*]}"
cat "$log_b"
rm -f "$log_a" "$log_b"
rm -rf "$second"
exit "$status"
