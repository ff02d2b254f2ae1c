"""No import circle anywhere: the Python package's modules, and each Rust crate's top-level
modules, must form graphs without cycles (`make lint` runs this; exit 1 names every circle).

Python: every import of a module of the package counts, at the top of a file or inside a
function (a circle broken only by a late import is still a circle); a package's `__init__`
is not a node (it gathers its modules by design). Rust: `crate::MODULE` references in code
that is not a test (a `#[cfg(test)] mod` onward, `tests.rs`) and not a comment; the crate root is
not a node, and a module that takes its parent's names with `use super::*` is not seen to use
the modules behind them (the NBD crate's engine and connection threads talk both ways over
channels by design).

    python tools/check_imports.py [--root DIR]
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def python_graph(package: Path) -> dict[str, set[str]]:
    """Module -> modules of the same package it imports."""
    base = package.parent
    modules = {}
    for f in package.rglob("*.py"):
        parts = list(f.relative_to(base).with_suffix("").parts)
        modules[".".join(parts)] = f
    graph: dict[str, set[str]] = {}
    for name, f in modules.items():
        if name.endswith("__init__") or name.endswith("__main__"):
            continue
        pkg = name.rsplit(".", 1)[0]
        deps: set[str] = set()
        for node in ast.walk(ast.parse(f.read_text(), str(f))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    anchor = pkg.split(".")
                    anchor = anchor[: len(anchor) - (node.level - 1)]
                    mod = ".".join(anchor + ([node.module] if node.module else []))
                else:
                    mod = node.module or ""
                targets = [mod] + [f"{mod}.{a.name}" for a in node.names]
            for t in targets:
                if t in modules and not t.endswith("__init__") and t != name:
                    deps.add(t)
                elif f"{t}.__init__" in modules:
                    pass  # a package: its __init__ is not a node
        graph[name] = deps
    return graph


# A test module (by convention the end of a file): `#[cfg(test)] mod NAME {` or `mod NAME;`.
TEST_MODULE = re.compile(r"#\[cfg\(test\)\]\s*(?:pub(?:\(crate\))?\s+)?mod\s+\w+\s*[{;]")


def rust_graph(src: Path) -> dict[str, set[str]]:
    """Top-level module -> top-level modules of the same crate it names."""
    names = {p.stem if p.is_file() else p.name for p in src.iterdir()
             if (p.suffix == ".rs" and p.stem not in ("lib", "main", "tests"))
             or (p.is_dir() and (p / "mod.rs").exists())}
    graph: dict[str, set[str]] = {n: set() for n in names}
    for f in src.rglob("*.rs"):
        rel = f.relative_to(src).parts
        top = rel[0].removesuffix(".rs")
        if top not in names or f.name == "tests.rs":
            continue
        text = TEST_MODULE.split(f.read_text(), 1)[0]
        code = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("//"))
        for m in re.findall(r"\bcrate::([a-z_][a-z0-9_]*)", code):
            if m in names and m != top:
                graph[top].add(m)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected component of more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
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
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def main() -> int:
    sys.setrecursionlimit(10_000)
    ap = argparse.ArgumentParser(description="No import circle in python/ssdlab or any crate's top-level modules.")
    ap.add_argument("--root", type=Path, default=ROOT, help="the tree to check (default: this one)")
    root = ap.parse_args().root
    found = []
    for label, graph in [("python/ssdlab", python_graph(root / "python" / "ssdlab"))] + [
        (f"crates/{c.name}", rust_graph(c / "src")) for c in sorted((root / "crates").iterdir()) if (c / "src").is_dir()
    ]:
        for comp in cycles(graph):
            edges = [f"{a} -> {b}" for a in comp for b in sorted(graph[a]) if b in comp]
            found.append(f"{label}: import circle among {', '.join(comp)} ({'; '.join(edges)})")
    for line in found:
        print(line)
    if not found:
        print("check_imports: no import circle (python/ssdlab, crates/*)")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
