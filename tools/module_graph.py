#!/usr/bin/env python3
"""Prints the module import graph of a crate's src/ and any import cycle.

Usage: python3 tools/module_graph.py src

An edge A -> B means a file of module A names `crate::B…` (or `super::…` resolving to B) in a
`use` or a path. Names are resolved to the longest module with a file; a `mod` declaration is
not an import. Exits 1 when there is a cycle (through modules other than a parent importing
its own child, which Rust's layout makes normal).
"""
import re
import sys
from pathlib import Path


def module_of(src: Path, path: Path) -> str:
    parts = list(path.relative_to(src).with_suffix("").parts)
    if parts[-1] in ("mod", "lib", "main"):
        parts = parts[:-1]
    return "::".join(["crate", *parts]) if parts else "crate"


def main() -> int:
    src = Path(sys.argv[1] if len(sys.argv) > 1 else "src")
    files = {module_of(src, p): p for p in sorted(src.rglob("*.rs"))}
    modules = set(files)
    edges = {m: set() for m in modules}
    for module, path in files.items():
        text = path.read_text()
        # Leave out unit tests, which may import anything.
        text = text.split("#[cfg(test)]")[0]
        is_mod_file = path.name in ("mod.rs", "lib.rs", "main.rs")
        parent = module if is_mod_file else module.rsplit("::", 1)[0]
        targets = set()
        for m in re.finditer(r"\bcrate((?:::\w+)+)", text):
            targets.add("crate" + m.group(1))
        for m in re.finditer(r"\bsuper((?:::\w+)+)", text):
            base = parent.rsplit("::", 1)[0] if is_mod_file else parent
            targets.add(base + m.group(1))
        # `use super::{a, b}` and `use crate::x::{a, b}` name several modules at once.
        for m in re.finditer(r"\b(crate|super)((?:::\w+)*)::\{([^}]*)\}", text):
            base = m.group(1) + m.group(2)
            if base.startswith("super"):
                base = (parent.rsplit("::", 1)[0] if is_mod_file else parent) + base[5:]
            for name in re.findall(r"\w+", m.group(3)):
                targets.add(f"{base}::{name}")
        for t in targets:
            parts = t.split("::")
            while parts and "::".join(parts) not in modules:
                parts.pop()
            target = "::".join(parts)
            if target and target != module:
                edges[module].add(target)
    for module in sorted(edges):
        print(f"{module} -> {', '.join(sorted(edges[module])) or '-'}")

    # Cycles, ignoring a parent's edges to its own descendants.
    def is_descendant(a: str, b: str) -> bool:
        return b.startswith(a + "::") or a == "crate"

    graph = {m: {t for t in ts if not is_descendant(m, t)} for m, ts in edges.items()}
    index, low, stack, on, sccs, counter = {}, {}, [], set(), [], [0]

    def strong(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            scc = []
            while True:
                w = stack.pop()
                on.discard(w)
                scc.append(w)
                if w == v:
                    break
            if len(scc) > 1:
                sccs.append(sorted(scc))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            strong(v)
    if sccs:
        for scc in sccs:
            print("cycle:", " <-> ".join(scc))
        return 1
    print("no cycle")
    return 0


if __name__ == "__main__":
    sys.exit(main())
