"""The training run of the profile-guided build (ssdlab_build.py): the instrumented extension
does the work users give the simulator most, so the compiler inlines and lays out the paths
they run. It drives the extension module alone (`import _ssdlab`, found on PYTHONPATH): the
build's Python has none of the package's dependencies.

A client SATA drive as the review tests take it (timed sequential fill, random writes well into
garbage collection, random and mixed reads and writes, sequential reads, trims, queue depth 1),
an enterprise PCIe drive in steady state preconditioned without time as validate does it, and
a trace replay (code that never runs in training is laid out as cold, so replay is trained too).
The enterprise drive is micron-p320h-350, whose power budget binds (25 W for 126 of its 256
dies): its waits for a place (`ActiveDies`, `PowerWaits`) run in training, as they do in
validate's longest runs (micron-p320h-350 and -700, micron-p420m). micron-p320h-175's budget
never binds; trained on it, callgrind's branch simulation counted 57.6M conditional
mispredictions in 10 simulated seconds of micron-p320h-350's random writes, 28.1M of them in
`JobRun::advance`, against 34.4M (2.0M) trained on the 350GB (docs/performance.md).

    PYTHONPATH=DIR_WITH__ssdlab python tools/build/pgo_train.py PRESETS_DIR
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

import _ssdlab


def drive(presets: Path, name: str) -> _ssdlab.Simulation:
    sim = _ssdlab.Simulation((presets / f"{name}.toml").read_text(), 1)
    sim.secure_erase()
    return sim


def run(sim: _ssdlab.Simulation, **job) -> int:
    """One job to its end (the Job fields not given take their defaults); its IOs."""
    sim.start_jobs([json.dumps({"rwmixread": 70, **job})], [None])
    while not sim.advance(10.0):
        sim.progress()
    summary = json.loads(sim.finish_job()[0][0])
    return summary["read"]["ios"] + summary["write"]["ios"]


def timed(sim: _ssdlab.Simulation, rw: str, bs: str, iodepth: int, seconds: float) -> int:
    return run(sim, rw=rw, bs=bs, iodepth=iodepth, runtime_s=seconds, time_based=True)


def replay(sim: _ssdlab.Simulation, path: Path) -> int:
    sim.start_replay([str(path)], "afap", 1.0, 32, format="msr")
    while not sim.advance_replay(10.0):
        sim.replay_progress()
    summary = json.loads(sim.finish_replay()[0])
    return summary["read"]["ios"] + summary["write"]["ios"]


def msr_trace(path: Path, requests: int, span_bytes: int) -> None:
    """A synthetic MSR Cambridge CSV trace: a deterministic mix of reads and writes, 4-64 KiB."""
    x, lines = 12345, []
    for i in range(requests):
        x = (x * 6364136223846793005 + 1442695040888963407) % 2**64
        size = 4096 << ((x >> 20) % 5)
        offset = (x >> 24) % (span_bytes // 4096) * 4096
        kind = "Read" if (x >> 60) % 10 < 6 else "Write"
        lines.append(f"{128166372000000000 + i * 2000},host,0,{kind},{offset},{size},100")
    path.write_text("\n".join(lines) + "\n")


def main() -> None:
    presets = Path(sys.argv[1])
    ios = 0
    sim = drive(presets, "crucial-m500-240")
    sim.expect_sequential_fill()
    whole = sim.user_bytes() // (128 << 10) * (128 << 10)
    ios += run(sim, rw="write", bs="128k", iodepth=32, size=str(whole))
    ios += timed(sim, "randwrite", "4k", 32, 150.0)
    ios += timed(sim, "randread", "4k", 32, 5.0)
    ios += timed(sim, "randrw", "4k", 32, 10.0)
    ios += timed(sim, "read", "128k", 32, 5.0)
    ios += timed(sim, "randtrim", "64k", 4, 2.0)
    ios += timed(sim, "randwrite", "4k", 1, 5.0)
    with tempfile.TemporaryDirectory() as tmp:
        trace = Path(tmp) / "train.csv"
        msr_trace(trace, 200_000, 8 << 30)
        ios += replay(sim, trace)
    sim = drive(presets, "micron-p320h-350")
    units = json.loads(sim.geometry_json())["logical_units"]
    sim.fill_untimed(0, units)
    sim.random_writes_untimed(0, units, units // 2, 7)
    ios += timed(sim, "randwrite", "4k", 256, 5.0)
    ios += timed(sim, "randread", "4k", 256, 1.0)
    print(f"pgo_train: {ios:,} IOs")


if __name__ == "__main__":
    main()
