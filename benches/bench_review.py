"""Wall time of `ssdlab review` (every procedure, methodology.md defaults, PNGs included) for one
client preset, and for the four M500 capacities together. Prints figures; never fails.

    python benches/bench_review.py [--single crucial-m500-960] [--group m500] [--skip-group]

Baseline, measured in the same run: the same review of the small example drive with `--quick`,
so figures from machines of different speed can be compared by their ratio.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GROUP = ["crucial-m500-120", "crucial-m500-240", "crucial-m500-480", "crucial-m500-960"]
TARGET_SINGLE_S = 300.0


def review(args: list[str], out: Path) -> float:
    t = time.perf_counter()
    subprocess.run([sys.executable, "-m", "ssdlab.cli", "review", *args, "--out", str(out), "--quiet"], check=True,
                   stdout=subprocess.DEVNULL)
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--single", default="crucial-m500-960")
    ap.add_argument("--skip-group", action="store_true")
    args = ap.parse_args()
    res = {}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        example = tmp / "example.toml"
        example.write_text((ROOT / "crates/ssdlab-core/src/example_drive.toml").read_text().replace(
            'bus_mb_per_s = 330.0', 'bus_mb_per_s = 330.0\npe_cycles_rated = 3000'))
        res["baseline_example_quick_wall_s"] = round(review([str(example), "--quick"], tmp / "base"), 1)
        res[f"single_{args.single}_wall_s"] = round(review([args.single], tmp / "single"), 1)
        res["single_target_s"] = TARGET_SINGLE_S
        if not args.skip_group:
            res["group_m500_120_240_480_960_wall_s"] = round(review(GROUP, tmp / "group"), 1)
        res["peak_child_rss_gib"] = round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 2**20, 2)
    print(json.dumps(res, indent=2))


if __name__ == "__main__":
    main()
