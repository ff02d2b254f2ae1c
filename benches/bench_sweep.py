"""Sweep speed: the same points run serially (one worker), on the local pool (all cores), and
on Ray (a local Ray instance, if Ray is installed). Prints the pool's speed-up over serial and
Ray's overhead per task (wall time beyond the points' own compute, per point, at the same
parallelism). Never fails.

    python benches/bench_sweep.py [--points 8] [--duration 20]
"""

import argparse
import json
import os
import tempfile
import time

from ssdlab.sweeps import sweep


def spec(points: int, duration: float) -> dict:
    return {"drives": ["crucial-m500-120"], "procedure": "consistency", "params": {"duration_s": duration},
            "grid": {"params.spare": list(range(0, 5 * points, 5))}}


def timed(s: dict, **kw) -> tuple[float, float]:
    with tempfile.TemporaryDirectory() as out:
        t = time.perf_counter()
        r = sweep(s, out, force=True, **kw)
        wall = time.perf_counter() - t
        doc = json.loads(open(os.path.join(out, "sweep.json")).read())
        compute = sum(p.get("wall_s") or 0 for p in doc["points"])
        assert r.ran == len(r.points), r.failed
        return wall, compute


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--points", type=int, default=8)
    ap.add_argument("--duration", type=float, default=20)
    args = ap.parse_args()
    s = spec(args.points, args.duration)
    cores = os.cpu_count() or 1
    serial, serial_compute = timed(s, workers=1)
    pool, pool_compute = timed(s, workers=cores)
    out = {"points": args.points, "cores": cores, "serial_wall_s": round(serial, 2), "pool_wall_s": round(pool, 2),
           "pool_speedup": round(serial / pool, 2), "point_compute_s_mean": round(serial_compute / args.points, 3),
           "pool_overhead_s_per_point": round((pool * min(cores, args.points) - pool_compute) / args.points, 3)}
    try:
        import ray
        ray.init(num_cpus=cores, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
        timed(spec(cores, 1), backend="ray")  # warm the workers (imports), as a long sweep amortises them
        wall, compute = timed(s, backend="ray")
        out |= {"ray_wall_s": round(wall, 2), "ray_speedup": round(serial / wall, 2),
                "ray_overhead_s_per_task": round((wall * min(cores, args.points) - compute) / args.points, 3)}
        ray.shutdown()
    except ImportError:
        out["ray"] = "not installed (pip install 'ssdlab[ray]')"
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
