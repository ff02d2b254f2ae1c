"""Instructions per operation of five standard runs, counted by callgrind (issue 26).

A speed measure that hardly moves with the machine. Wall times on a shared VM move by
20-60% from hour to hour and by 2x from one VM to the next (docs/performance.md); the
instructions a run executes repeat to within 0.001% (the same build, counted three times on
2026-11-30: crucial-m500-120's steady state 445,041,200 each time; the fill and the random writes
from empty moved by up to 22,500 of 7.8-14 billion: the threads that pre-fault the tables' pages,
run beside them, probably), and on another x86-64 machine move only where glibc picks its memcpy by the
CPU. Prints, for each run, the instructions counted in its timed part
(callgrind's --toggle-collect), per host command and, for the GC steady-state runs, per NAND unit
operation (host writes + GC copies) and per die operation (an array read or program: the calls
callgrind counted), the run's digest and the functions with the largest own share; then
crucial-m500-120's two GC steady states (0% and 25% spare: copies 88% and 58% of the unit
operations) read as a cost per host write and one per GC copy (see `split`). With --base REV the same runs of REV (built in a git worktree, given this tree's preset
files, or with --base-presets its own) come first, then the change's count against it, in the
same run. Never fails on a figure.

    python benches/bench_instructions.py [--base REV [--base-presets]] [--quick] [--only TEXT] [--jobs N] [--target DIR]

Needs valgrind (Debian's `valgrind`) and builds the Rust examples it runs (`cargo build --release
-p ssdlab-core --examples`). The five runs take about 9 minutes on two cores (each under
callgrind runs 50-100x slower than natively, its untimed preconditioning too); `--quick` counts
two shrunk drives instead, about 1.5 minutes a tree, to try a change before the five.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
from check_digests import PRESETS, last_record  # noqa: E402  (the presets, and the examples' output read as it reads it)

# (what it measures, example, preset, arguments after the preset file, function collected). The
# `steady` runs time GC steady state after untimed preconditioning; `consistency PRESET SECONDS
# timed|fast STEADY` times a fill and random writes (see each example).
RUNS = [
    ("GC steady state, 8 dies", "steady", "crucial-m500-120", "30 0.5 1", "*timed_steady*"),
    ("GC steady state, 8 dies, 25% spare", "steady", "crucial-m500-120", "30 0.5 1 25", "*timed_steady*"),
    ("GC steady state, 256 dies, 25% spare, power budget", "steady", "micron-p320h-350", "4 1.2 1 25",
     "*timed_steady*"),
    ("timed 128 KiB sequential fill", "consistency", "crucial-m500-240", "0.01 timed 0.01", "*run_job*"),
    ("4 KiB random writes from empty (no GC yet)", "consistency", "crucial-m500-240", "100 fast 0.01",
     "*run_job*"),
]

# `--quick`: two GC steady states on presets shrunk to fewer blocks a plane (the same dies,
# timing, controller and power budget; user capacity and map checkpoint shrunk with them), whose
# untimed preconditioning takes a second or two, so a change's cost on both families is counted
# in about 1.5 minutes a tree instead of 9. Representative, not the same figures: on ce4b667
# micron-p320h-350 shrunk 8x read 2,405 instructions per NAND unit op at 0% spare (the full drive's
# `2 1.2 1`: 2,412), crucial-m500-120 shrunk 4x 594 (its full drive's `30 0.5 1`: 664; write
# amplification 11.9 against 8.8, the map's blocks taking more of a smaller die).
QUICK_SHRINK = {"micron-p320h-350": 8, "crucial-m500-120": 4}
# Host-directed placement (issue 99): the shrunk M500 with 4 initially isolated FDP handles (its
# spare keeps 3 more blocks a die open, not the PM9D3's 8), its timed writes through every handle
# in turn. A base before FDP cannot read the table and the run is left out of the comparison.
FDP_TABLE = ('\n[placement]\nmode = "fdp"\nreclaim_groups = 1\nreclaim_unit_blocks = 1\n'
             'handles = ["initially-isolated", "initially-isolated", "initially-isolated", "initially-isolated"]\n')
QUICK_RUNS = [
    ("GC steady state, 256 dies, power budget, shrunk 8x", "steady", "micron-p320h-350-quick", "2 1.2 1",
     "*timed_steady*"),
    ("GC steady state, 8 dies, shrunk 4x", "steady", "crucial-m500-120-quick", "20 0.5 1", "*timed_steady*"),
    ("FDP, 4 handles in turn, GC steady state, 8 dies, shrunk 4x", "steady", "crucial-m500-120-fdp-quick",
     "20 0.5 1 0 32 fdp", "*timed_steady*"),
]


def write_quick_presets(presets: Path, into: Path) -> Path:
    """The `--quick` runs' presets: those of `presets` with blocks a plane, user capacity and map
    checkpoint journal divided by `QUICK_SHRINK`'s factor, written into `into`."""
    into.mkdir(parents=True, exist_ok=True)
    for name, factor in QUICK_SHRINK.items():
        text = (presets / f"{name}.toml").read_text()
        for key in ("blocks_per_plane", "user_capacity_bytes", "map_checkpoint_journal_pages"):
            text, n = re.subn(rf"^({key} = )(\d+)", lambda m: f"{m.group(1)}{int(m.group(2)) // factor}", text,
                              flags=re.M)
            if n != 1:
                raise SystemExit(f"bench_instructions: {name}.toml has no single '{key} = N' line to shrink")
        (into / f"{name}-quick.toml").write_text(text)
        if name == "crucial-m500-120":
            (into / f"{name}-fdp-quick.toml").write_text(text + FDP_TABLE)
    return into


def build(src: Path, target: Path) -> Path:
    """The examples of the tree at `src`, built into `target`; their directory."""
    subprocess.run(["cargo", "build", "--release", "-q", "-p", "ssdlab-core", "--examples", "--target-dir", str(target)],
                   cwd=src, check=True)
    return target / "release" / "examples"


def top_functions(profile: Path, n: int = 5) -> list[tuple[float, str]]:
    """The `n` functions with the largest own share of the instructions, as (percent, name):
    callgrind lists a function's code inlined from other files apart, summed here."""
    text = subprocess.run(["callgrind_annotate", "--inclusive=no", "--threshold=100", "--auto=no", str(profile)],
                          capture_output=True, text=True).stdout
    share: dict[str, float] = {}
    for line in text.splitlines():
        m = re.match(r"\s*[\d,]+ \(\s*([\d.]+)%\)\s+(\S.*)$", line)
        if not m or "PROGRAM TOTALS" in line:
            continue
        name = m.group(2).split(":", 1)[-1].split(" [")[0]
        name = re.sub(r"ssdlab_core::|<impl ssdlab_core::[^>]*>::", "", name)
        share[name] = share.get(name, 0.0) + float(m.group(1))
    return sorted(((pct, name) for name, pct in share.items()), reverse=True)[:n]


def die_operations(profile: Path) -> int:
    """The NAND array reads and programs the run started (a multi-plane one once; erases,
    inlined, are not counted, a fraction of a percent of the operations): the calls of
    `Nand::read` and `Nand::program` callgrind recorded. 0 if they were inlined."""
    text = subprocess.run(["callgrind_annotate", "--tree=calling", "--threshold=100", "--auto=no", str(profile)],
                          capture_output=True, text=True).stdout
    calls = re.findall(r"^\s*[\d,]+ \(\s*[\d.]+%\)\s+>\s+\S*nand::Nand::(?:read|program) \(([\d,]+)x\)", text, re.M)
    return sum(int(c.replace(",", "")) for c in calls)


def count(examples: Path, run: tuple, work: Path, presets: Path = PRESETS) -> dict:
    """One run under callgrind (the preset from `presets`): instructions collected, commands,
    NAND unit ops, digest."""
    what, example, preset, args, toggle = run
    profile = work / f"{example}-{preset}-{args.replace(' ', '_')}.callgrind"
    cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={profile}", f"--toggle-collect={toggle}",
           str(examples / example), str(presets / f"{preset}.toml"), *args.split()]
    t = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t
    m = re.search(r"Collected : (\d+)", p.stderr)
    if p.returncode != 0 or not m:
        return {"error": (p.stderr.strip().splitlines() or ["no output"])[-1]}
    r = last_record(p.stdout)
    if example == "steady":
        commands = r.get("host_writes", 0)
        ops = commands + r.get("gc_copies", 0)
    else:
        commands = sum(r.get(k, 0) for k in ("fill_ios", "randwrite_ios", "steady_ios"))
        ops = 0
    return {"instructions": int(m.group(1)), "commands": commands, "ops": ops, "die_ops": die_operations(profile),
            "digest": r.get("digest", "?"), "top": top_functions(profile), "wall_s": wall}


def split(a: dict, b: dict) -> tuple[float, float] | None:
    """The instructions of two GC steady-state runs of one drive at two spare areas read as
    `x` per host write plus `y` per GC copy (host writes and copies in different proportions:
    write amplification 8.8 and 2.6 on crucial-m500-120 at 0% and 25% spare): (x, y), or None
    if the two mixes are too alike to tell them apart. A linear reading, not a measurement of
    either path alone: what per NAND unit op hides (the P320h's 25% run is mostly host writes,
    the M500's 0% run mostly copies)."""
    h1, g1, h2, g2 = a["commands"], a["ops"] - a["commands"], b["commands"], b["ops"] - b["commands"]
    det = h1 * g2 - h2 * g1
    if abs(det) < 0.05 * h1 * g2 + 0.05 * h2 * g1:
        return None
    i1, i2 = a["instructions"], b["instructions"]
    return (i1 * g2 - i2 * g1) / det, (h1 * i2 - h2 * i1) / det


def show(label: str, run: tuple, c: dict) -> None:
    what, example, preset, args, _ = run
    print(f"{label} {what}: `{example} {preset} {args}`")
    if "error" in c:
        print(f"  did not run: {c['error']}")
        return
    per_op = f", {c['instructions'] / c['ops']:,.0f} per NAND unit op" if c["ops"] else ""
    if c["ops"] and c["die_ops"]:
        # A die operation (an array read or program) is what the flash scheduler times one
        # at a time; a drive of small program units needs more of them per unit moved.
        per_op += (f", {c['instructions'] / c['die_ops']:,.0f} per die operation "
                   f"({c['die_ops'] / c['ops']:.2f} die operations per unit op)")
    print(f"  {c['instructions']:,} instructions, {c['instructions'] / max(c['commands'], 1):,.0f} per host command"
          f"{per_op} ({c['commands']:,} commands); digest {c['digest']}; {c['wall_s']:.0f} s under callgrind")
    print("  own share: " + "; ".join(f"{name} {pct:.1f}%" for pct, name in c["top"]))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", help="a git revision to count too, built in a worktree, and compare against")
    ap.add_argument("--base-presets", action="store_true",
                    help="the base runs its own preset files, not this tree's (a change that moves the presets with "
                         "the model: the digests then differ, and the count compares the two models' costs)")
    ap.add_argument("--only", default="", help="only the runs whose preset or description contains this")
    ap.add_argument("--quick", action="store_true",
                    help="two GC steady states on shrunk presets instead (about 1.5 minutes a tree; see QUICK_RUNS)")
    ap.add_argument("--jobs", type=int, default=2, help="runs under callgrind at once (default: %(default)s)")
    ap.add_argument("--target", type=Path, default=ROOT / "target", help="cargo's target directory for this tree")
    a = ap.parse_args()
    if not shutil.which("valgrind"):
        print("bench_instructions: valgrind is not installed (Debian: apt-get install valgrind)", file=sys.stderr)
        return 2
    chosen = QUICK_RUNS if a.quick else RUNS
    runs = [r for r in chosen if a.only in r[0] or a.only in r[2]]
    if not runs:
        print(f"bench_instructions: no run matches '{a.only}'; the presets: {', '.join(sorted({r[2] for r in chosen}))}",
              file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="ssdlab-instr-") as tmp:
        work = Path(tmp)
        trees = []
        presets = {"this tree": write_quick_presets(PRESETS, work / "quick") if a.quick else PRESETS}
        try:
            if a.base:
                base_src = work / "base-src"
                git = subprocess.run(["git", "worktree", "add", "-q", "--detach", str(base_src), a.base], cwd=ROOT,
                                     capture_output=True, text=True)
                if git.returncode != 0:
                    print(f"bench_instructions: --base {a.base}: {git.stderr.strip() or 'git worktree add failed'}",
                          file=sys.stderr)
                    return 2
                try:
                    trees.append((f"base {a.base}", build(base_src, work / "base-target")))
                    if a.base_presets:
                        presets[f"base {a.base}"] = shutil.copytree(base_src / PRESETS.relative_to(ROOT),
                                                                    work / "base-presets")
                        if a.quick:
                            presets[f"base {a.base}"] = write_quick_presets(work / "base-presets", work / "base-quick")
                finally:
                    subprocess.run(["git", "worktree", "remove", "--force", str(base_src)], cwd=ROOT, check=False)
            trees.append(("this tree", build(ROOT, a.target)))
        except subprocess.CalledProcessError as e:
            print(f"bench_instructions: building the examples failed ({' '.join(e.cmd)}: exit {e.returncode})",
                  file=sys.stderr)
            return 2
        results = {}
        with ThreadPoolExecutor(max(1, a.jobs)) as pool:
            for label, examples in trees:
                (work / label.replace(" ", "-")).mkdir()
                for i, run in enumerate(runs):
                    results[label, i] = pool.submit(count, examples, run, work / label.replace(" ", "-"),
                                                    presets.get(label, presets["this tree"]))
            for label, _ in trees:
                for i, run in enumerate(runs):
                    show(label, run, results[label, i].result())
        pair = [i for i, r in enumerate(runs) if r[2] == "crucial-m500-120" and r[1] == "steady"]
        for label, _ in trees:
            got = [results[label, i].result() for i in pair]
            xy = split(*got) if len(got) == 2 and not any("error" in g for g in got) else None
            if xy:
                print(f"{label}: crucial-m500-120's two spare areas read as {xy[0]:,.0f} instructions per host write "
                      f"and {xy[1]:,.0f} per GC copy")
        if a.base:
            print(f"this tree against {a.base} (instructions; the same digest means the same results):")
            for i, run in enumerate(runs):
                b, c = results[trees[0][0], i].result(), results["this tree", i].result()
                if "error" in b or "error" in c:
                    continue
                same = "same results" if b["digest"] == c["digest"] else "RESULTS DIFFER"
                print(f"  {run[0]} ({run[2]}): {b['instructions']:,} -> {c['instructions']:,} "
                      f"({(c['instructions'] / b['instructions'] - 1) * 100:+.2f}%), {same}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
