#!/usr/bin/env python3
"""The layer check: reads every `use` line and inline `crate::` / `super::` path in `src/`,
resolves each to the file that defines the name (following re-exports), and fails on

- an import from a lower layer into a higher one (the table below, `docs/architecture.md`);
- a cycle between files (any strongly connected component of more than one file);
- a `macro_rules!` body longer than MAX_MACRO_LINES (macros are thin shells).

Unit-test modules (`#[cfg(test)] mod tests`) are left out: a test may use the whole crate.
Run from anywhere: `python3 scripts/layers.py` (`-v` prints every edge).
"""
import os
import re
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src")

# Lowest first. A file belongs to the first entry whose module path is a prefix of its own.
LAYERS = [
    ("base", ["sync", "hint"]),
    ("identity", ["identity"]),
    ("memory", ["memory"]),
    ("uuid buckets", ["buckets"]),
    ("raw storage", ["world::raw"]),
    ("pools and registry", ["world::store"]),
    ("queries and joins", ["world::query"]),
    ("groups, spawn, commands", ["world::command"]),
    ("world facade", ["world"]),
    ("durable layer", ["durable"]),
    ("content", ["content"]),
    ("crate root", [""]),
]
MAX_MACRO_LINES = 100


def module_of(path):
    rel = os.path.relpath(path, ROOT)[:-3].split(os.sep)
    if rel[-1] in ("mod", "lib"):
        rel = rel[:-1]
    return tuple(rel)


def layer_of(module):
    name = "::".join(module)
    for i, (_, prefixes) in enumerate(LAYERS):
        for p in prefixes:
            if p == "" or name == p or name.startswith(p + "::"):
                return i
    raise SystemExit(f"layers.py: no layer for {name}")


def strip(text):
    """Comments, string and char literals blanked out; unit-test modules cut."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i)
            i = n if j < 0 else j + 2
        elif c == '"' or text.startswith('r"', i) or text.startswith('r#"', i) or text.startswith('b"', i):
            if text.startswith('r#"', i):
                j = text.find('"#', i + 3)
                i = n if j < 0 else j + 2
            else:
                j = text.find('"', i) + 1
                while j < n and text[j] != '"':
                    j += 2 if text[j] == "\\" else 1
                i = j + 1
            out.append('""')
        elif c == "'" and re.match(r"'(\\.|[^\\'])'", text[i:i + 4]):
            m = re.match(r"'(\\.|[^\\'])'", text[i:i + 4])
            i += len(m.group(0))
            out.append("' '")
        else:
            out.append(c)
            i += 1
    s = "".join(out)
    m = re.search(r"^#\[cfg\(test\)\]\s*\n\s*mod \w+\s*\{", s, re.M)
    return s[: m.start()] if m else s


def use_trees(text):
    """Yields (is_pub, [segments]) for every path a `use` item brings in."""
    for m in re.finditer(r"^\s*(pub(?:\([^)]*\))?\s+)?use\s+([^;]+);", text, re.M):
        for path in expand(m.group(2).replace("\n", " ")):
            yield bool(m.group(1)), path


def expand(tree):
    tree = tree.strip()
    brace = tree.find("{")
    if brace < 0:
        parts = [p.strip() for p in tree.split("::")]
        alias = None
        if " as " in parts[-1]:
            parts[-1], alias = [x.strip() for x in parts[-1].split(" as ")]
        return [(parts, alias)]
    prefix = [p.strip() for p in tree[:brace].split("::") if p.strip()]
    inner = tree[brace + 1: tree.rfind("}")]
    items, depth, cur = [], 0, ""
    for ch in inner:
        depth += ch == "{"
        depth -= ch == "}"
        if ch == "," and depth == 0:
            items.append(cur)
            cur = ""
        else:
            cur += ch
    items.append(cur)
    out = []
    for it in items:
        if not it.strip():
            continue
        for parts, alias in expand(it):
            if parts == ["self"]:
                out.append((prefix, alias))
            else:
                out.append((prefix + parts, alias))
    return out


def main():
    verbose = "-v" in sys.argv
    files = {}
    for dp, _, fs in os.walk(ROOT):
        for f in fs:
            if f.endswith(".rs") and not dp.endswith(os.path.join("src", "bin")):
                p = os.path.join(dp, f)
                files[module_of(p)] = p
    modules = set(files)
    texts = {m: strip(open(p).read()) for m, p in files.items()}
    raw = {m: open(p).read() for m, p in files.items()}

    defs, imports = {}, {}
    item = re.compile(
        r"^(?:pub(?:\([^)]*\))?\s+)?(?:unsafe\s+)?(?:const\s+)?"
        r"(?:fn|struct|enum|trait|type|const|static|union|mod)\s+(\w+)",
        re.M,
    )
    for m, t in texts.items():
        defs[m] = set(item.findall(t))
        imports[m] = {}

    def absolute(m, segs):
        """The path from the crate root, or None for another crate."""
        segs = list(segs)
        if not segs:
            return None
        if segs[0] == "crate":
            return segs[1:]
        if segs[0] in ("self", "super"):
            base = list(m)
            while segs and segs[0] in ("self", "super"):
                if segs.pop(0) == "super":
                    base = base[:-1]
            return base + segs
        if tuple(list(m) + [segs[0]]) in modules or segs[0] in imports[m] or segs[0] in defs[m]:
            return list(m) + segs
        return None

    for m, t in texts.items():
        for _, (segs, alias) in use_trees(t):
            if segs and segs[-1] != "*":
                a = absolute(m, segs)
                if a is not None:
                    imports[m][alias or segs[-1]] = a

    def resolve(path, depth=0):
        mod = []
        for i, s in enumerate(path):
            if tuple(mod + [s]) in modules:
                mod.append(s)
                continue
            here = tuple(mod)
            if s in defs.get(here, ()):
                return here
            if s in imports.get(here, {}) and depth < 16:
                target = imports[here][s]
                return resolve(target + path[i + 1:], depth + 1) if target else here
            return here
        return tuple(mod)

    # A module root's `pub use` lines publish its children's names: they are checked for
    # direction (a root may not re-export a higher layer) but are no dependency of its code.
    edges = {m: set() for m in modules}
    reexports = {m: set() for m in modules}
    for m, t in texts.items():
        root = files[m].endswith(("mod.rs", "lib.rs"))
        paths = [segs for pub, (segs, _) in use_trees(t) if not (root and pub)]
        for pub, (segs, _) in use_trees(t):
            a = absolute(m, segs) if root and pub and segs[-1] != "*" else None
            if a is not None and resolve(a) != m:
                reexports[m].add(resolve(a))
        body = re.sub(r"^\s*(pub(?:\([^)]*\))?\s+)?use\s+[^;]+;", "", t, flags=re.M)
        paths += [p.split("::") for p in re.findall(r"(?<![\w$])(?:crate|super)(?:::\w+)+", body)]
        for segs in paths:
            segs = [s for s in segs if s != "*"]
            a = absolute(m, segs)
            if a is None:
                continue
            target = resolve(a)
            if target != m and target in modules:
                edges[m].add(target)

    failures = []
    name = lambda m: "::".join(m) or "crate"
    for m in sorted(edges):
        for t in sorted(edges[m] | reexports[m]):
            if verbose:
                print(f"{name(m)} -> {name(t)}")
            lm, lt = layer_of(m), layer_of(t)
            if lt > lm:
                failures.append(
                    f"upward import: {name(m)} ({LAYERS[lm][0]}) uses {name(t)} ({LAYERS[lt][0]})"
                )

    # Tarjan's strongly connected components.
    index, low, stack, on, sccs, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            sccs.append(comp)

    sys.setrecursionlimit(10000)
    for v in sorted(modules):
        if v not in index:
            visit(v)
    for comp in sccs:
        if len(comp) > 1:
            failures.append("import cycle: " + ", ".join(sorted(name(c) for c in comp)))

    for m, t in raw.items():
        for mm in re.finditer(r"macro_rules!\s*(\w+)\s*\{", t):
            depth, i = 1, mm.end()
            while depth and i < len(t):
                depth += t[i] == "{"
                depth -= t[i] == "}"
                i += 1
            lines = t[mm.end():i].count("\n")
            if lines > MAX_MACRO_LINES:
                failures.append(
                    f"macro_rules! {mm.group(1)} in {files[m]} has {lines} lines (at most {MAX_MACRO_LINES})"
                )

    n_edges = sum(len(e) for e in edges.values())
    if failures:
        print("\n".join(failures))
        print(f"layers.py: {len(failures)} failure(s) over {len(modules)} files, {n_edges} imports")
        sys.exit(1)
    print(f"layers.py: {len(modules)} files, {n_edges} imports, no upward import, no cycle")


if __name__ == "__main__":
    main()
