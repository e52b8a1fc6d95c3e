#!/usr/bin/env bash
# Miri over every test that touches unsafe code (library unit tests and the integration tests
# listed here). Tests that need the OS (fork, real entropy) or trybuild are ignored under miri in
# the tests themselves; proptest case counts shrink under cfg(miri).
set -euo pipefail
cd "$(dirname "$0")/.."
export MIRIFLAGS="${MIRIFLAGS:--Zmiri-strict-provenance}"
cargo +nightly miri test --lib
for t in tests/*.rs; do
  name=$(basename "$t" .rs)
  case "$name" in
    *compile_fail*) continue ;;  # trybuild needs rustc, not miri
  esac
  cargo +nightly miri test --test "$name"
done
