"""The size ratchet (issue 74, item 3), as TigerBeetle's tidy keeps one: a source file over
700 lines, or a function over 100, fails `make lint` unless tools/size_ratchet.txt lists it
with a size it does not exceed. Listed sizes may only shrink: a file or function that got
smaller is reported so that its line can be lowered (`--write` rewrites the list from the
tree as it is, which is also how an entry is first made: a deliberate, reviewed change).

Counted: the Rust crates' sources and the Python package, tools and benches, but not test
files (`tests.rs`, `*_tests.rs`, python/tests); a file's lines are all of them (an inline test
module too), its functions those before a `#[cfg(test)] mod`. A Rust function runs
from its `fn` line to the `}` at its indentation (rustfmt's layout); a Python function from
its `def` to its last line (`ast`).

    python tools/check_sizes.py [--write] [--root DIR]
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from pathlib import Path

FILE_MAX = 700
FUNCTION_MAX = 100
RATCHET = "tools/size_ratchet.txt"
_RUST_FN = re.compile(r"^(\s*)(?:pub(?:\([^)]*\))?\s+)?(?:const\s+)?(?:async\s+)?(?:unsafe\s+)?(?:extern\s+\"[^\"]*\"\s+)?fn\s+(\w+)")


def sources(root: Path) -> list[Path]:
    out = [p for p in (root / "crates").rglob("*.rs")
           if "target" not in p.parts and p.name != "tests.rs" and not p.name.endswith("_tests.rs")
           and "tests" not in p.relative_to(root / "crates").parts]
    for sub in ("python/ssdlab", "tools", "benches"):
        out += [p for p in (root / sub).rglob("*.py") if "tests" not in p.relative_to(root).parts]
    return sorted(out)


def _rust_lines(text: str) -> list[str]:
    """The file's lines up to its test module, if any."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.strip() == "#[cfg(test)]" and i + 1 < len(lines) and re.match(r"\s*(pub\s+)?mod\s", lines[i + 1]):
            return lines[:i]
    return lines


def rust_functions(text: str) -> dict[str, int]:
    """Function name (`Type::name` where it is in an impl's body is not told apart) -> lines."""
    lines = _rust_lines(text)
    out: dict[str, int] = {}
    for i, line in enumerate(lines):
        m = _RUST_FN.match(line)
        if not m:
            continue
        indent, name = m.group(1), m.group(2)
        # A declaration without a body (a trait's) ends with `;` before any `{`.
        j = i
        while j < len(lines) and "{" not in lines[j] and not lines[j].rstrip().endswith(";"):
            j += 1
        if j >= len(lines) or "{" not in lines[j]:
            continue
        if lines[j].rstrip().endswith("}") and lines[j].count("{") == lines[j].count("}"):
            n = j - i + 1  # a body on one line
        else:
            end = next((k for k in range(j + 1, len(lines)) if lines[k] == indent + "}"), len(lines) - 1)
            n = end - i + 1
        key = name
        k = 2
        while key in out:  # the same name twice in a file (impls of different types)
            key = f"{name}~{k}"
            k += 1
        out[key] = n
    return out


def python_functions(text: str, path: Path) -> dict[str, int]:
    out: dict[str, int] = {}
    for node in ast.walk(ast.parse(text, str(path))):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            key = node.name
            k = 2
            while key in out:
                key = f"{node.name}~{k}"
                k += 1
            out[key] = node.end_lineno - node.lineno + 1
    return out


def measure(root: Path) -> dict[str, int]:
    """Every file and function over its limit: `path` or `path::function` -> lines."""
    sizes: dict[str, int] = {}
    for p in sources(root):
        rel = p.relative_to(root).as_posix()
        text = p.read_text()
        n = len(text.splitlines())
        if n > FILE_MAX:
            sizes[rel] = n
        fns = rust_functions(text) if p.suffix == ".rs" else python_functions(text, p)
        for name, m in fns.items():
            if m > FUNCTION_MAX:
                sizes[f"{rel}::{name}"] = m
    return sizes


def read_ratchet(path: Path) -> dict[str, int]:
    out = {}
    if path.exists():
        for k, line in enumerate(path.read_text().splitlines(), 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            try:
                name, n = line.rsplit(None, 1)
                out[name] = int(n)
            except ValueError:
                raise SystemExit(f"{path}:{k}: '{line}': accepted: PATH[::FUNCTION] LINES") from None
    return out


def check(root: Path) -> tuple[list[str], list[str]]:
    """(failures, notes): what is over its limit or listed size; what shrank below it."""
    listed = read_ratchet(root / RATCHET)
    now = measure(root)
    failures, notes = [], []
    for name, n in sorted(now.items()):
        limit = FUNCTION_MAX if "::" in name else FILE_MAX
        if name not in listed:
            failures.append(f"{name}: {n} lines, over the limit of {limit}: split it along its concerns "
                            f"(or, reviewed, list it in {RATCHET})")
        elif n > listed[name]:
            failures.append(f"{name}: {n} lines, {RATCHET} allows {listed[name]}: listed sizes may only shrink")
        elif n < listed[name]:
            notes.append(f"{name}: {n} lines, listed {listed[name]}: lower its line in {RATCHET}")
    for name in sorted(set(listed) - set(now)):
        notes.append(f"{name}: now within its limit: take its line out of {RATCHET}")
    return failures, notes


def write(root: Path) -> None:
    now = measure(root)
    text = ("# The size ratchet (tools/check_sizes.py): files over 700 lines and functions over 100,\n"
            "# with their size when listed. A size may only shrink; a new entry is a reviewed change.\n")
    text += "".join(f"{name} {n}\n" for name, n in sorted(now.items()))
    (root / RATCHET).write_text(text)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--write", action="store_true", help=f"rewrite {RATCHET} from the tree")
    ap.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent)
    args = ap.parse_args(argv)
    if args.write:
        write(args.root)
        return 0
    failures, notes = check(args.root)
    for line in notes:
        print(f"check_sizes: note: {line}")
    for line in failures:
        print(f"check_sizes: {line}", file=sys.stderr)
    if not failures:
        print(f"check_sizes: no file over {FILE_MAX} lines or function over {FUNCTION_MAX} beyond {RATCHET}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
