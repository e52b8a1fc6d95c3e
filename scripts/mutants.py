#!/usr/bin/env python3
"""Plant small deliberate bugs (mutants) one at a time and check that the world suites catch each.

    python3 scripts/mutants.py [--keep-going] [NAME...]

Runs in a scratch git worktree (never touches your checkout), in release mode (the build that
ships). A mutant is *caught* when the suites fail with it; one that survives needs a test.
"""
import os, subprocess, sys, tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SUITES = ["--lib", "--test", "world", "--test", "soundness"]

# name: (file, original text, mutated text)
MUTANTS = {
    "batch-same-sequence": ("src/world/store/registry.rs",
        "self.sequence.extend((1..=count as u64).map(|k| base + k));",
        "self.sequence.extend((1..=count as u64).map(|_| base + 1));"),
    "resolve-ignores-epoch": ("src/world/command/buffer.rs",
        "if p.buffer != self.token || p.epoch.checked_add(1) != Some(self.epoch) {",
        "if p.buffer != self.token {"),
    "release-revives-generation": ("src/world/store/registry.rs",
        "meta.store(free(g), Relaxed);",
        "meta.store(free(g - 1), Relaxed);"),
    "reuse-keeps-old-key": ("src/world/raw/dense.rs",
        "        *stored = key;\n        *slot_value = value;",
        "        *slot_value = value;"),
    "pack-off-by-one": ("src/world/command/group.rs",
        "Direction::Pack if members.iter().all(|i| matches!(i, Some(i) if *i >= len))",
        "Direction::Pack if members.iter().all(|i| matches!(i, Some(i) if *i > len))"),
    "destroy-skips-unpack": ("src/world/world_ops.rs",
        "        if Self::Groups::LEN > 0 {\n            repack::<Self::Groups, Self::Alloc, _>(&mut pools, entity, None, false);",
        "        if Self::Groups::LEN > 99 {\n            repack::<Self::Groups, Self::Alloc, _>(&mut pools, entity, None, false);"),
    "insert-skips-revision": ("src/world/command/structural.rs",
        "        registry.advance_revision(u64::from(inserted.1));",
        "        registry.advance_revision(0);"),
    "spawn-skips-owner-check": ("src/world/command/spawn.rs",
        "        let mut bundle_pools = B::take(&mut pools)?;\n        if !B::owned_by(&bundle_pools, registry.owner()) {",
        "        let mut bundle_pools = B::take(&mut pools)?;\n        if false && !B::owned_by(&bundle_pools, registry.owner()) {"),
    "preflight-skips-destroy-target": ("src/world/command/buffer.rs",
        "                Command::Destroy(e) | Command::Replace(e) => {\n                    registry.check_alive(e)?;",
        "                Command::Destroy(e) | Command::Replace(e) => {"),
    "lookup-ignores-generation": ("src/world/raw/dense.rs",
        "    if keys.get(s) == Some(&key) {\n        return Some(s);\n    }",
        "    if keys.get(s).is_some_and(|k| k.slot() == key.slot()) {\n        return Some(s);\n    }"),
    "batch-skips-reuse": ("src/world/command/spawn.rs",
        "            n.min(registry.available() - registry.fresh_available())",
        "            0"),
    "commit-keeps-epoch": ("src/world/command/buffer.rs",
        "        self.marks = None;\n        self.epoch = self.epoch.saturating_add(1);",
        "        self.marks = None;"),
    "clear-pending-noop": ("src/world/store/registry.rs",
        "                m.store(v & !PENDING, Relaxed);",
        "                let _ = v;"),
    "remove-batch-skips-liveness": ("src/world/store/pool.rs",
        "        registry.check_all_alive(entities)?;\n        let mut dense = self.dense_mut();",
        "        let mut dense = self.dense_mut();"),
    "unpack-off-by-one": ("src/world/command/group.rs",
        "if len > 0 && members.iter()",
        "if len > 1 && members.iter()"),
    "clear-ignores-registry": ("src/world/command/buffer.rs",
        "        self.same_registry(registry)?;\n        // Marks cleared by",
        "        // Marks cleared by"),
    "destroy-skips-bound-count": ("src/world/command/structural.rs",
        "    owned.ok && owned.pools == registry.bound_pools()",
        "    owned.ok"),
    "destroy-skips-owner-check": ("src/world/command/structural.rs",
        "        self.ok &= pool.owner() == self.owner;\n        self.pools += 1;",
        "        self.pools += 1;"),
    "insert-ignores-stale-entry": ("src/world/raw/dense.rs",
        "        let Some(i) = locate_slot(self.keys(), self.sparse, key.slot()) else {\n            // SAFETY: `key`'s slot",
        "        let Some(i) = self.find(key) else {\n            // SAFETY: `key`'s slot"),
}


def run(cmd, cwd, env=None):
    return subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def main():
    names = [a for a in sys.argv[1:] if not a.startswith("--")] or list(MUTANTS)
    wt = tempfile.mkdtemp(prefix="ludus-mutants-")
    run(["git", "worktree", "add", "--detach", wt, "HEAD"], ROOT)
    env = dict(os.environ, CARGO_TARGET_DIR=os.path.join(ROOT, "target", "mutants"))
    results = []
    try:
        for name in names:
            path, old, new = MUTANTS[name]
            file = os.path.join(wt, path)
            text = open(file).read()
            if text.count(old) != 1:
                results.append((name, "NOT APPLIED (text not found once)"))
                print(f"{name:34} NOT APPLIED (text not found once)", flush=True)
                continue
            open(file, "w").write(text.replace(old, new))
            r = run(["cargo", "test", "--release", "-q"] + SUITES, wt, env)
            open(file, "w").write(text)
            if "error[" in r.stdout and "test result" not in r.stdout:
                verdict = "does not compile"
            else:
                verdict = "caught" if r.returncode != 0 else "SURVIVED"
            results.append((name, verdict))
            print(f"{name:34} {verdict}", flush=True)
    finally:
        run(["git", "worktree", "remove", "--force", wt], ROOT)
    survived = [n for n, v in results if v != "caught"]
    print(f"\n{len(results) - len(survived)} of {len(results)} caught" + (f"; not caught: {', '.join(survived)}" if survived else ""))
    return 1 if survived else 0


if __name__ == "__main__":
    sys.exit(main())
