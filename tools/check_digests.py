"""The golden digests a speed change must keep: runs the Rust examples `steady` and
`consistency` on the presets and arguments below and compares the digest each prints (its last
JSON line) with the one recorded, results bit for bit as before (issue 26). Build the examples
first (`cargo build --release -p ssdlab-core --examples`); 4.5 minutes on a 2-vCPU VM.

    python tools/check_digests.py [--target DIR] [--only SUBSTRING]

Exit 1 names every run whose digest moved. A change that moves them on purpose (another issue
changed the model and says so) records the new digests here in the same commit.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PRESETS = ROOT / "python" / "ssdlab" / "presets"

# (example, preset, arguments after the preset file, digest). Issue 71 (the nominal GC pace
# of the M500 presets, docs/fidelity.md) moved six of the M500 runs: recorded anew with it; its
# second round (the enterprise presets collect in whole-victim bites with two candidate dies
# for host data) moved the nine P320h and P420m runs: recorded anew with it. Issue 72 (the
# command path in parts: writes acknowledged from DRAM, the AHCI stack's 6 us in place of the
# ASSUMED 20 us) moved all 17: recorded anew with it. Issue 75 (dies waiting for a place under
# the power budget as a line served in turn) moved the seven runs whose budget binds (the P320h
# 350GB/700GB, the P420m 700GB; host writes within 0.33%, docs/performance.md): recorded anew.
# Its second step (the line woken only where a place frees, and after the other events of its
# nanosecond: a die that takes its next operation as its array ends keeps its place) moved five
# of them (host writes: P320h 350GB `20 0.5 1` 3,216,468 -> 3,273,416, +1.8%; the others
# within 0.32%): recorded anew. The same five digests come from the line woken at every end
# with that order, so the order alone moved them. Issue 100's page types (the MLC parts' lower
# and upper pages at their own tR and tPROG, the part's mean kept) moved every MLC run (the
# P320h's SLC has one type): host writes P420m 700GB `20 0.5 1` 1,283,441 -> 1,282,833, M500
# 960GB `600 0.5 3` 2,398,970 -> 2,399,235, `30 0.5 3` 120,120 -> 119,968, M500 120GB `30 0.5 3`
# 81,136 -> 80,744 (-0.5%), `30 0.5 1` 82,184 -> 81,824; the consistency runs' WAF within
# 0.015: recorded anew.
# `consistency PRESET SECONDS timed|fast FILL` and `steady PRESET SECONDS DRIVE_WRITES WINDOWS [SPARE%]` (see each example).
DIGESTS = [
    ("consistency", "crucial-m500-240", "0.01 timed 0.01", "44c7759b5a8a775a"),
    ("consistency", "crucial-m500-240", "100 fast 0.01", "bbcf80f42ba59fcd"),
    ("consistency", "crucial-m500-960", "1 timed 1", "6621c5c9fb89a2c6"),
    ("consistency", "crucial-m500-960", "2000 timed 0.01", "160da9aca01bc423"),
    ("steady", "micron-p320h-175", "10 0.5 1", "8d0073387a7d7617"),
    ("steady", "micron-p320h-175", "20 0.5 1", "31906b7562c3ee82"),
    ("steady", "micron-p320h-350", "20 0.5 1", "4731c17091181191"),
    ("steady", "micron-p320h-350", "4 0.5 1", "a1d9fc283d8bec40"),
    ("steady", "micron-p320h-350", "4 1.2 1 25", "b8f6e806b7a86255"),
    ("steady", "micron-p320h-350", "20 1.2 1 25", "b4d15c8d08d7d265"),
    ("steady", "micron-p320h-700", "20 0.5 1", "b36de34a030e0082"),
    ("steady", "micron-p320h-700", "4 1.2 1 25", "46e84e9cbb3a51c2"),
    ("steady", "micron-p420m-700", "20 0.5 1", "728a0182ab0e7df5"),
    ("steady", "crucial-m500-960", "30 0.5 3", "ea004111ebbb1a03"),
    ("steady", "crucial-m500-960", "600 0.5 3", "8647514128d32888"),
    ("steady", "crucial-m500-120", "30 0.5 3", "fe9989a37fb553ca"),
    ("steady", "crucial-m500-120", "30 0.5 1", "195c3a70ff682f57"),
]


def last_record(output: str) -> dict:
    """An example's figures: the last line of its output that parses as a JSON object with a
    digest ({} if none does). benches/bench_instructions.py reads the examples through it too."""
    for line in reversed(output.splitlines()):
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and "digest" in record:
            return record
    return {}


def digest_of(output: str) -> str | None:
    """The digest in an example's output."""
    record = last_record(output)
    return str(record["digest"]) if record else None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", type=Path, default=ROOT / "target", help="cargo's target directory")
    ap.add_argument("--only", default="", help="run only the lines containing this text (e.g. a preset)")
    args = ap.parse_args()
    moved = []
    for example, preset, rest, want in DIGESTS:
        line = f"{example} {preset} {rest}"
        if args.only not in line:
            continue
        binary = args.target / "release" / "examples" / example
        if not binary.exists():
            print(f"check_digests: {binary} is missing: build it with "
                  "`cargo build --release -p ssdlab-core --examples`", file=sys.stderr)
            return 2
        t0 = time.perf_counter()
        run = subprocess.run([str(binary), str(PRESETS / f"{preset}.toml"), *rest.split()],
                             capture_output=True, text=True)
        got = digest_of(run.stdout) if run.returncode == 0 else None
        ok = got == want
        print(f"{'ok  ' if ok else 'MOVED'} {line}: {got} ({time.perf_counter() - t0:.1f} s)"
              + ("" if ok else f", recorded {want}" + (f"; exit {run.returncode}: {run.stderr.strip()[-300:]}"
                                                       if run.returncode else "")))
        if not ok:
            moved.append(line)
    if moved:
        print(f"check_digests: {len(moved)} moved: {'; '.join(moved)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
