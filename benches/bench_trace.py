"""Trace speed: parse rate of every format (ssdlab-trace's parse_rate example: records per
second on one core, each format holding the same requests) against a baseline measured in
the same run (Python's csv module reading the same MSR text), and replay speed (a heavy-2011
look-alike replayed, idle removed, on a preset). Prints figures; never fails. A format under
2M records/s is flagged.

    python benches/bench_trace.py [--records 2000000] [--drive crucial-m500-480] [--fraction 0.25]
"""

import argparse
import csv
import io
import json
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import ssdlab
from ssdlab.synth import write_fio_iolog

ROOT = Path(__file__).resolve().parents[1]


def csv_baseline(n: int) -> float:
    """Records/s of Python's csv module over MSR lines (parsing the fields it needs)."""
    text = "".join(f"{128166372000000000 + i * 1000},hm,{i % 4},{'Write' if i % 3 == 0 else 'Read'},"
                   f"{(i * 7919 % (1 << 28)) * 512},{512 * (1 + i % 256)},{i % 10000 * 10}\n" for i in range(n))
    t = time.perf_counter()
    count = 0
    for row in csv.reader(io.StringIO(text)):
        int(row[0]), int(row[2]), row[3] == "Read", int(row[4]), int(row[5]), int(row[6])
        count += 1
    return count / (time.perf_counter() - t)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=2_000_000)
    ap.add_argument("--drive", default="crucial-m500-480")
    ap.add_argument("--fraction", type=float, default=0.25)
    args = ap.parse_args()
    out: dict = {}
    if shutil.which("cargo"):
        p = subprocess.run(["cargo", "run", "-q", "--release", "-p", "ssdlab-trace", "--example", "parse_rate", "--",
                            str(args.records)], cwd=ROOT, capture_output=True, text=True)
        if p.returncode == 0:
            rates = json.loads(p.stdout)
            base = csv_baseline(min(args.records, 500_000))
            out["python_csv_records_per_s"] = round(base)
            out["parse"] = {name: {"records_per_s": r["records_per_s"], "x_python_csv": round(r["records_per_s"] / base, 1),
                                   **({"below_2M": True} if r["records_per_s"] < 2e6 else {})}
                            for name, r in rates.items()}
        else:
            out["parse_error"] = p.stderr[-2000:]
    else:
        out["parse"] = "cargo not found: parse rates not measured"
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
    out["replay"] = {
        "drive": args.drive, "requests": n, "synth_wall_s": round(synth_s, 2),
        "replay_wall_s": round(replay_s, 2), "replay_requests_per_wall_s": round(n / replay_s),
        "simulated_s": round(r.summary["elapsed_s"], 2), "data_rate_mb_per_s": round(r.summary["all"]["data_rate_mb_per_s"], 1),
        "service_us_mean": round(r.summary["all"]["latency_us_mean"], 1), "waf": round(r.summary["write_amplification"], 3),
    }
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
