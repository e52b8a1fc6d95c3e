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
# The content suites (tests/content_*.rs) are skipped: src/content has no unsafe code, and the
# world paths they drive are covered by the world suites below.
for t in tests/*.rs; do
  name="$(basename "$t" .rs)"
  case "$name" in content_*) continue ;; esac
  cargo +nightly miri test --test "$name"
done
# The validation ledger is feature-gated: run its unit and integration tests with the feature on.
cargo +nightly miri test --features validation --lib memory::
cargo +nightly miri test --features validation --test memory_validation
# Activity capture is feature-gated too (its observer pointer is the unsafe part).
cargo +nightly miri test --features capture --test memory_capture
