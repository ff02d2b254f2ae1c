"""How long the 25-hour enterprise consistency run takes (issue 75), from a shortened version.
Prints figures; never fails.

    python benches/bench_enterprise_consistency.py [--drives micron-p320h-700,...] [--fob 60]
                                                   [--steady 60] [--hours 25] [--qd 256]

The published run: purge (secure erase), then 4 KiB random writes over the whole drive at QD256
for 25 hours, IOPS in 1-second samples. Shortened, for each drive, through the Python API
users call:
(a) the drive made and purged, then `--warm` simulated seconds of those writes, timed: the
    process's first writes fault the drive's tables in (2-3 GiB of map on these drives; on this
    project's VMs 5-9 s of wall time the first time a process touches such memory, a fraction
    of a second when it is touched again), a cost the long run pays once;
(b) `--fob` further simulated seconds, timed: the fresh-out-of-box part, where free blocks last
    and no garbage collection runs (fast in IOPS, cheap per write);
(c) the drive brought to random-write steady state without simulating time (precondition
    "steady-state": the FTL state the long run reaches), then `--steady` simulated seconds of
    the same writes, timed: the garbage-collected part (fewer IOPS, each with its copies).
The one-time cost (`startup`) is (a)'s wall time, with the drive's making and purge, less what
(a)'s seconds cost at (b)'s rate. Each part's wall seconds per simulated second give the
extrapolation: the whole run costs about `estimate`: the startup, the fresh part lasting until
the writes have used the drive's spare (usable bytes after RAIN, less what the firmware holds,
minus the user bytes) (at (b)'s rate and IOPS: no garbage collection before then), the rest at
(c)'s rate; and at most `bound`: the startup and the larger of the two rates throughout. The
transition between them is neither; both are stated, with the NAND unit operations (host
writes + GC copies) per wall second behind them. (Before 2026-12-06 the fresh rate was timed
from purge, so the startup was scaled by the fresh part's length: micron-p420m-1400's fresh
part read 0.152 wall s per simulated s, 0.027 without it.) Wall time on a shared VM moves by
20-60% (docs/performance.md): the instruction counts of benches/bench_instructions.py judge a
change, this shows where the target (under one hour on one core) stands.
"""

from __future__ import annotations

import argparse
import time

import ssdlab
from ssdlab.configs import preset_path
from ssdlab.errors import SsdlabError
from ssdlab import Job

DRIVES = ("micron-p320h-700", "micron-p420m-1400", "micron-m500dc-800")


def timed_writes(drive: ssdlab.Drive, seconds: float, qd: int) -> dict:
    t = time.perf_counter()
    r = drive.run(Job(name="rw", rw="randwrite", bs="4k", iodepth=qd, runtime_s=seconds, time_based=True))
    wall = time.perf_counter() - t
    s = r.summary
    ops = s["host_units_written"] + s["gc_units_copied"]
    return {"wall_s": wall, "sim_s": s["elapsed_s"], "iops": s["write"]["iops"], "waf": s["write_amplification"],
            "ops_per_wall_s": ops / wall, "wall_per_sim_s": wall / s["elapsed_s"]}


def extrapolate(total_s: float, setup_s: float, warm: dict, fob: dict, steady: dict, spare_bytes: float) -> dict:
    """The whole run's wall seconds from the timed parts (dicts as `timed_writes` returns): the
    startup, paid once (the making and purge, and what the warm-up cost beyond the fresh rate),
    the fresh part until the writes have used the spare, the steady part after it (`estimate`),
    and the startup with the larger rate throughout (`bound`)."""
    startup = max(setup_s + warm["wall_s"] - warm["sim_s"] * fob["wall_per_sim_s"], 0.0)
    fob_s = min(total_s, spare_bytes / max(fob["iops"] * 4096, 1.0))
    estimate = startup + fob_s * fob["wall_per_sim_s"] + (total_s - fob_s) * steady["wall_per_sim_s"]
    bound = startup + total_s * max(fob["wall_per_sim_s"], steady["wall_per_sim_s"])
    return {"startup_s": startup, "fob_s": fob_s, "estimate_s": estimate, "bound_s": bound}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--drives", default=",".join(DRIVES), help="presets, comma-separated")
    ap.add_argument("--warm", type=float, default=2.0, help="simulated seconds of (a), from purge")
    ap.add_argument("--fob", type=float, default=60.0, help="simulated seconds of (b), after (a)")
    ap.add_argument("--steady", type=float, default=60.0, help="simulated seconds of (c), in steady state")
    ap.add_argument("--hours", type=float, default=25.0, help="the published run's length")
    ap.add_argument("--qd", type=int, default=256)
    ap.add_argument("--drive-writes", type=float, default=2.0, help="untimed random writes of (c)'s precondition")
    args = ap.parse_args()
    for name in args.drives.split(","):
        try:  # every name checked before the first long run
            preset_path(name)
        except SsdlabError as e:
            ap.error(f"--drives: {e}")
    total = args.hours * 3600
    print(f"{args.hours:g} h of 4 KiB random writes at QD{args.qd} from purge, extrapolated from "
          f"{args.warm:g} + {args.fob:g} s fresh and {args.steady:g} s in steady state (ssdlab {ssdlab.__version__}, "
          f"build {ssdlab._ssdlab.BUILD})")
    for name in args.drives.split(","):
        t = time.perf_counter()
        drive = ssdlab.Drive.preset(name)
        g = drive.geometry
        drive.precondition("secure-erase")
        setup = time.perf_counter() - t
        warm = timed_writes(drive, args.warm, args.qd)
        fob = timed_writes(drive, args.fob, args.qd)
        t = time.perf_counter()
        drive.precondition("steady-state", drive_writes=args.drive_writes)
        pre = time.perf_counter() - t
        steady = timed_writes(drive, args.steady, args.qd)
        spare = g["usable_bytes"] - g["held_bytes"] - g["logical_units"] * g["mapping_unit_bytes"]
        x = extrapolate(total, setup, warm, fob, steady, spare)
        startup, fob_s, estimate, bound = x["startup_s"], x["fob_s"], x["estimate_s"], x["bound_s"]
        print(f"{name}: startup {startup:.1f} s once (making, purge, the tables faulted in: {setup:.1f} s + "
              f"{warm['wall_s']:.1f} s for the first {warm['sim_s']:g} simulated s); fresh {fob['iops']:,.0f} IOPS, "
              f"{fob['wall_per_sim_s']:.3f} wall s per simulated s ({fob['ops_per_wall_s'] / 1e6:.2f}M NAND unit ops "
              f"per wall s); steady {steady['iops']:,.0f} IOPS, WAF {steady['waf']:.2f}, "
              f"{steady['wall_per_sim_s']:.3f} wall s per simulated s ({steady['ops_per_wall_s'] / 1e6:.2f}M ops per "
              f"wall s; untimed precondition {pre:.0f} s)")
        print(f"  {args.hours:g} h run: about {estimate / 3600:.2f} h wall (fresh for {fob_s:,.0f} s, then steady), "
              f"at most {bound / 3600:.2f} h; target under 1 h")
        del drive


if __name__ == "__main__":
    main()
