#!/usr/bin/env python3
"""Import cycles between the modules (files) of each crate of the workspace: the guard that
`tools/test` runs before the tests (it fails on any cycle).

  python3 tools/module_graph.py src crates/*/src

An edge A -> B: a file of module A names `crate::B…`, `super::…` or `self::…` resolving to B (in
a `use` or a path, outside `#[cfg(test)]`). A name re-exported by a `mod.rs`/`lib.rs`
(`pub use x::y::Name;`) and imported through it is an edge to the module that defines it. A
parent importing its own descendant is not counted (Rust's layout makes that normal), nor a
child importing an ancestor's mod.rs: only cycles between modules neither of which contains
the other. Prints each cycle; last line `N cycles in M crates`; exit 1 if any. (The same rules
as the project's shared `rust_cycles.py`, kept here so that CI needs nothing outside the
repository.)
"""
import re
import sys
from pathlib import Path


def module_of(src, path):
    parts = list(path.relative_to(src).with_suffix("").parts)
    if parts and parts[-1] in ("mod", "lib", "main"):
        parts = parts[:-1]
    return "::".join(["crate", *parts]) if parts else "crate"


def expand(prefix, body):
    """`a::{b, c::{d, e}}` -> [a::b, a::c::d, a::c::e] (names only, no `as`)."""
    out = []
    depth, cur, items = 0, "", []
    for ch in body:
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        if ch == "," and depth == 0:
            items.append(cur); cur = ""
        else:
            cur += ch
    items.append(cur)
    for it in items:
        it = it.strip().split(" as ")[0].strip()
        if not it:
            continue
        m = re.match(r"^([\w:]*?)::\{(.*)\}$", it, re.S)
        if m:
            out += expand(prefix + "::" + m.group(1) if m.group(1) else prefix, m.group(2))
        elif it.startswith("{") and it.endswith("}"):
            out += expand(prefix, it[1:-1])
        else:
            out.append(prefix + "::" + it if it != "self" else prefix)
    return out


def crate_cycles(src):
    files = {module_of(src, p): p for p in sorted(src.rglob("*.rs"))}
    modules = set(files)
    reexports = {}
    for mod_name, mod_path in files.items():
        if mod_path.name not in ("mod.rs", "lib.rs", "main.rs"):
            continue
        text = mod_path.read_text().split("#[cfg(test)]")[0]

        def absolute(p):
            head = p.split("::")[0]
            if head == "crate":
                return p
            if head == "self":
                return mod_name + p[4:]
            if head == "super":
                return mod_name.rsplit("::", 1)[0] + p[5:]
            return mod_name + "::" + p

        for m in re.finditer(r"pub(?:\([\w:]+\))?\s+use\s+([\w:]+)::\{([^;]*)\};", text):
            for full in expand(absolute(m.group(1)), m.group(2)):
                reexports[mod_name + "::" + full.rsplit("::", 1)[-1]] = full
        for m in re.finditer(r"pub(?:\([\w:]+\))?\s+use\s+([\w:]+)::(\w+)(?:\s+as\s+(\w+))?\s*;", text):
            name = m.group(3) or m.group(2)
            reexports[mod_name + "::" + name] = absolute(m.group(1)) + "::" + m.group(2)

    def resolve(path):
        parts = path.split("::")
        for k in range(len(parts), 1, -1):
            head = "::".join(parts[:k])
            if head in reexports:
                path = "::".join([reexports[head]] + parts[k:])
                break
        parts = path.split("::")
        for k in range(len(parts), 0, -1):
            cand = "::".join(parts[:k])
            if cand in modules:
                return cand
        return None

    edges = {m: set() for m in modules}
    for module, path in files.items():
        text = path.read_text().split("#[cfg(test)]")[0]
        text = re.sub(r"//[^\n]*", "", text)
        is_mod = path.name in ("mod.rs", "lib.rs", "main.rs")
        here = module if is_mod else module.rsplit("::", 1)[0]  # what `super` is relative to... see below
        self_mod = module
        parent = module.rsplit("::", 1)[0] if module != "crate" else "crate"
        targets = []
        for m in re.finditer(r"\buse\s+((?:crate|super|self)(?:::\w+)*)::\{([^;]*)\};", text, re.S):
            targets += expand(m.group(1), m.group(2))
        for m in re.finditer(r"\b((?:crate|super|self)(?:::\w+)+)", text):
            targets.append(m.group(1))
        for t in targets:
            if t.startswith("super"):
                base = parent
                rest = t.split("::")[1:]
                while rest and rest[0] == "super":
                    base = base.rsplit("::", 1)[0]; rest = rest[1:]
                t = "::".join([base] + rest)
            elif t.startswith("self"):
                t = "::".join([self_mod] + t.split("::")[1:])
            r = resolve(t)
            if r and r != module:
                edges[module].add(r)

    def contains(a, b):
        return a == "crate" or b.startswith(a + "::")

    g = {m: {t for t in ts if not contains(m, t) and not contains(t, m)} for m, ts in edges.items()}
    # strongly connected components (Tarjan)
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def strong(v):
        index[v] = low[v] = counter[0]; counter[0] += 1
        stack.append(v); on.add(v)
        for w in g[v]:
            if w not in index:
                strong(w); low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop(); on.discard(w); comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(g):
        if v not in index:
            strong(v)
    return out


total = 0
dirs = [Path(d) for d in sys.argv[1:]]
for d in dirs:
    for comp in crate_cycles(d):
        total += 1
        print(f"cycle in {d}: {' <-> '.join(comp)}")
print(f"{total} cycles in {len(dirs)} crates")
sys.exit(1 if total else 0)
