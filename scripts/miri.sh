#!/usr/bin/env bash
# Miri over every test that touches unsafe code (library unit tests and the integration tests
# listed here). Tests that need the OS (fork, real entropy) are ignored under miri in the tests
# themselves; proptest case counts shrink under cfg(miri). Doctests (the arena's compile_fail
# proofs among them) do not run here: they exercise rustc, not unsafe code.
set -euo pipefail
cd "$(dirname "$0")/.."
export MIRIFLAGS="${MIRIFLAGS:--Zmiri-strict-provenance}"
# src/content has no unsafe code (its serializers only call safe world APIs): skipped here.
cargo +nightly miri test --lib -- --skip content::
# Every integration test binary: tests/<name>/main.rs (tests/support/ is a module they share,
# not a binary) and tests/<name>.rs. The content binary (tests/content/) is skipped: src/content
# has no unsafe code, and the world paths it drives are covered by the world binaries.
for t in tests/*/main.rs tests/*.rs; do
  [ -e "$t" ] || continue
  case "$t" in */main.rs) name="$(basename "$(dirname "$t")")" ;; *) name="$(basename "$t" .rs)" ;; esac
  case "$name" in content) continue ;; esac
  cargo +nightly miri test --test "$name"
done
# The validation ledger is feature-gated: run its unit tests and the memory binary's validation
# module (its other modules ran above) with the feature on.
cargo +nightly miri test --features validation --lib memory::
cargo +nightly miri test --features validation --test memory -- validation::
# Activity capture is feature-gated too (its observer pointer is the unsafe part).
cargo +nightly miri test --features capture --test memory -- capture::
