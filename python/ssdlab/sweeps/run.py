"""Running a sweep's points: on a local process pool (all cores by default) or on a Ray
cluster (`backend="ray"`; Ray is an optional extra). Each point's resolved configuration
travels to the worker as text, which runs it from memory and sends the results back (a Ray
worker in its return value, a local worker through a file in a spool folder in the output
folder, see `ssdlab.pool`); the driver alone writes the sweep's outputs (a Ray cluster needs no
shared filesystem).

A point that fails (bad parameters, an error in the run) is recorded with its error and the
sweep goes on; a worker that dies (killed, out of memory) has its point run again, up to
three times.
"""

from __future__ import annotations

import os
import sys
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from .. import __version__
from ..errors import SsdlabError
from .catalog import Catalog
from .spec import Point, expand, load_spec

ATTEMPTS = 3


def run_point(point: dict) -> dict:
    """Run one point (in a worker). Returns rows, tables and wall time, or the error."""
    import tomllib

    from ..drive import Drive, DriveText
    from ..job import Job
    from ..review.catalog import run_procedure

    t0 = time.perf_counter()
    try:
        name = tomllib.loads(point["drive_toml"]).get("name") or "drive"
        # The drive travels as text and is opened from memory: running the point writes
        # nothing, so a worker killed mid-point leaves nothing behind (a local worker's
        # result file is written whole, then renamed into place).
        drive = DriveText(point["drive_toml"], f"{name}.toml")
        params = dict(point["params"])
        if point["procedure"] == "job":
            pre = params.pop("precondition", "fast-fill")
            d = Drive.open(drive, seed=point["seed"])
            if pre != "none":
                d.precondition(pre)
            r = d.run(Job(**params))
            s = {k: v for k, v in r.summary.items() if k not in ("run", "name")}
            for op in ("read", "write", "trim"):
                s.get(op, {}).pop("latency_ns_percentiles", None)
            rows = [s]
            tables = {"series": r.series}
        else:
            if "spare" in params and not isinstance(params["spare"], list):
                params["spare"] = [params["spare"]]
            outs = run_procedure(point["procedure"], drive, params, seed=point["seed"])
            rows = [{"variant": o.variant, **o.summary} for o in outs]
            tables: dict = {}
            for o in outs:
                for tname, df in o.tables.items():
                    t = df.copy()
                    t.insert(0, "variant", o.variant)
                    tables.setdefault(tname, []).append(t)
            tables = {k: pd.concat(v, ignore_index=True) for k, v in tables.items()}
        return {"key": point["key"], "rows": rows, "tables": tables, "wall_s": time.perf_counter() - t0,
                "pid": os.getpid()}
    except SsdlabError as e:
        return {"key": point["key"], "error": str(e), "wall_s": time.perf_counter() - t0}
    except Exception as e:  # noqa: BLE001 - a point's failure is reported, the sweep goes on
        tb = traceback.extract_tb(e.__traceback__)[-1]
        return {"key": point["key"], "error": f"{type(e).__name__}: {e} ({Path(tb.filename).name}:{tb.lineno})",
                "wall_s": time.perf_counter() - t0}


def _local(points: list[Point], workers: int, on_retry, spool_in: Path):
    """(point, result) as they finish, on a process pool (`ssdlab.pool`: each result comes
    through a file in a spool folder made in `spool_in`); a dead worker's points run again."""
    import multiprocessing

    from ..pool import Died, run_spooled

    calls = {p.key: (run_point, (p.as_dict(),)) for p in points}
    by_key = {p.key: p for p in points}
    for key, res in run_spooled(calls, workers, attempts=ATTEMPTS, mp_context=multiprocessing.get_context("spawn"),
                                on_retry=on_retry, spool_in=spool_in):
        yield by_key[key], ({"key": key, "error": str(res)} if isinstance(res, Died) else res)


def connect_ray(address: str | None):
    """Ray, connected to the cluster at `address` (None: a local one); the module."""
    _ray_token_auth()  # before Ray is imported: it reads the mode once
    try:
        import ray
    except ImportError:
        raise SsdlabError("--ray needs Ray: pip install 'ssdlab[ray]'") from None
    if not ray.is_initialized():
        try:
            ray.init(address=address, log_to_driver=False, include_dashboard=False, logging_level="ERROR")
        except (ConnectionError, RuntimeError, ValueError) as e:
            raise SsdlabError(f"--ray {address or ''}: cannot connect: {e}") from None
    return ray


def _ray(points: list[Point], address: str | None, on_retry):
    ray = connect_ray(address)
    # Ray retries a task whose worker died (max_retries); a Python error is a result, not a retry.
    task = ray.remote(max_retries=ATTEMPTS - 1, retry_exceptions=False)(run_point)
    refs = {task.remote(p.as_dict()): p for p in points}
    while refs:
        done, _ = ray.wait(list(refs), num_returns=1)
        for r in done:
            p = refs.pop(r)
            try:
                res = ray.get(r)
            except ray.exceptions.RayError as e:
                res = {"key": p.key, "error": f"{type(e).__name__}: {str(e).splitlines()[0]}"}
            yield p, res


def _ray_token_auth() -> None:
    """Send the Ray authentication token when there is one. `ray start` enables token auth
    whenever a token exists (~/.ray/auth_token, written by any earlier local `ray.init()`), but
    a client joining a cluster only sends it with RAY_AUTH_MODE=token; a cluster without auth
    accepts a client that sends one."""
    if "RAY_AUTH_MODE" in os.environ:
        return
    path = os.environ.get("RAY_AUTH_TOKEN_PATH") or str(Path.home() / ".ray" / "auth_token")
    if os.environ.get("RAY_AUTH_TOKEN") or Path(path).exists():
        os.environ["RAY_AUTH_MODE"] = "token"


@dataclass
class SweepResult:
    out: Path
    points: list[Point]
    ran: int = 0
    skipped: int = 0
    failed: dict = field(default_factory=dict)  # key -> error
    retried: int = 0
    wall_s: float = 0.0
    notes: list[str] = field(default_factory=list)

    @property
    def summary(self) -> pd.DataFrame:
        return Catalog(self.out).summary()

    def series(self, procedure: str, table: str = "iops") -> pd.DataFrame:
        return Catalog(self.out).series(procedure, table)


class _Bar:
    """Points done / total with an ETA from the wall time per point so far."""

    def __init__(self, total: int, enabled: bool):
        self.total, self.enabled = total, enabled
        self.done = self.failed = 0
        self.start = time.monotonic()
        self.tty = sys.stderr.isatty()
        self.last = 0.0

    def step(self, failed: bool) -> None:
        self.done += 1
        self.failed += failed
        if not self.enabled:
            return
        now = time.monotonic()
        if not self.tty and now - self.last < 10 and self.done < self.total:
            return
        self.last = now
        wall = now - self.start
        eta = wall / self.done * (self.total - self.done)
        width = 24
        bar = "#" * int(width * self.done / max(self.total, 1))
        text = (f"sweep [{bar:<{width}}] {self.done}/{self.total} points"
                f"{f', {self.failed} failed' if self.failed else ''}  wall {wall:6.1f} s  ETA {eta:6.1f} s")
        sys.stderr.write(("\r" + text) if self.tty else text + "\n")
        if self.tty and self.done == self.total:
            sys.stderr.write("\n")
        sys.stderr.flush()


def sweep(spec: "str | Path | dict", out: "str | Path", *, backend: str = "local", ray_address: str | None = None,
          workers: int | None = None, force: bool = False, progress: bool = False) -> SweepResult:
    """Run every point of `spec` not finished yet under `out` (all of them with `force`)."""
    spec = load_spec(spec)
    points = expand(spec)
    if backend not in ("local", "ray"):
        raise SsdlabError(f"backend '{backend}': accepted: local, ray")
    out = Path(out)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise SsdlabError(f"--out {out}: cannot make it: {e.strerror}") from None
    catalog = Catalog(out)
    todo = [p for p in points if force or not catalog.done(p)]
    result = SweepResult(out, points, skipped=len(points) - len(todo))
    states = {p.key: {"state": "done"} for p in points if p not in todo}
    t0 = time.monotonic()
    bar = _Bar(len(todo), progress)

    def on_retry(n: int) -> None:
        result.retried += n
        if progress:
            print(f"sweep: a worker died; {n} unfinished points run again", file=sys.stderr)

    # The local workers' results come through a spool folder in `out` (removed at the end).
    runner = (_local(todo, workers or os.cpu_count() or 1, on_retry, out) if backend == "local"
              else _ray(todo, ray_address, on_retry))
    try:
        for p, res in runner:
            if "error" in res:
                result.failed[p.key] = res["error"]
                states[p.key] = {"state": "failed", "error": res["error"], "wall_s": res.get("wall_s")}
            else:
                catalog.write(p, res)
                result.ran += 1
                states[p.key] = {"state": "done", "wall_s": res["wall_s"], "backend": backend}
            bar.step("error" in res)
    finally:
        runner.close()  # the local pool shuts down and its spool goes
        result.wall_s = time.monotonic() - t0
        for p in points:
            states.setdefault(p.key, {"state": "not run"})
        catalog.write_manifest(spec | {"ssdlab_version": __version__}, points, states)
        note = catalog.write_duckdb()
        if note:
            result.notes.append(note)
    return result
