"""Trace replay speed: a heavy-2011 look-alike replayed (idle removed) on a preset.
Prints simulated requests per wall second; parse rates per format come from
`cargo run --release -p ssdlab-trace --example parse_rate`. Never fails.

    python benches/bench_trace.py [--drive crucial-m500-480] [--fraction 0.25]
"""

import argparse
import json
import tempfile
import time
from pathlib import Path

import ssdlab
from ssdlab.synth import write_fio_iolog


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--drive", default="crucial-m500-480")
    ap.add_argument("--fraction", type=float, default=0.25)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "heavy.iolog"
        t = time.perf_counter()
        n = write_fio_iolog(log, "heavy-2011", fraction=args.fraction, span_bytes=400 * 10**9, seed=1)
        synth_s = time.perf_counter() - t
        drive = ssdlab.Drive.preset(args.drive)
        drive.precondition("fast-fill")
        t = time.perf_counter()
        r = drive.replay(log, "afap")
        replay_s = time.perf_counter() - t
    print(json.dumps({
        "drive": args.drive, "requests": n, "synth_wall_s": round(synth_s, 2),
        "replay_wall_s": round(replay_s, 2), "replay_requests_per_wall_s": round(n / replay_s),
        "simulated_s": round(r.summary["elapsed_s"], 2), "data_rate_mb_per_s": round(r.summary["all"]["data_rate_mb_per_s"], 1),
        "service_us_mean": round(r.summary["all"]["latency_us_mean"], 1), "waf": round(r.summary["write_amplification"], 3),
    }, indent=2))


if __name__ == "__main__":
    main()
