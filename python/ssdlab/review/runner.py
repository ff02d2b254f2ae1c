"""Run procedures on several drives at once (one process per core), with a progress line per
procedure and drive, then write the report."""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass
from multiprocessing import Manager
from pathlib import Path

from ..errors import SsdlabError
from ..pool import Died, run_spooled
from .catalog import PROCEDURES, resolve_params, run_procedure
from .procedures import Outcome, drive_label

# Shorter settings for a first look (`--quick`): the same procedures, minutes of simulated time
# instead of the methodology's hours. The report says when they were used.
QUICK = {
    "consistency": {"duration_s": 600, "steady_window_s": 200},
    "four-corners": {"random_s": 30, "seq_s": 20},
    "sequential-qd": {"duration_s": 20},
    "transfer-size": {"span": "64m"},
    "trim": {"random_s": 300, "positions": 20},
    "qd-scaling": {"steady_drive_writes": 0.5, "precondition_s": 60, "topup_s": 60, "step_s": 20},
    "endurance": {"cycles": 5},
    "power": {"idle_s": 10, "write_s": 20},
    "storage-bench": {"fraction": 0.01},
}


@dataclass
class Task:
    id: int
    procedure: str
    source: str
    params: dict
    label: str
    target: dict | None = None  # fio target options
    weight: float = 1.0


def not_run(procedures: list[str], targets: list[dict]) -> list[tuple[str, str, str]]:
    """(procedure, target, why) for each procedure a target does not take."""
    from .fio_target import FIO_PROCEDURES, NOT_ON_TARGETS
    return [(name, f"target {t['path']}", NOT_ON_TARGETS.get(name, "not run through fio"))
            for name in procedures for t in targets if name not in FIO_PROCEDURES]


def plan(drives: list[str], procedures: list[str], overrides: dict[str, dict], quick: bool,
         targets: list[dict] = ()) -> list[Task]:
    tasks = []
    for name in procedures:
        if name not in PROCEDURES:
            raise SsdlabError(f"unknown procedure '{name}'; accepted: {', '.join(PROCEDURES)}")
    for name in procedures:
        p = dict(QUICK.get(name, {})) if quick else {}
        p.update(overrides.get(name, {}))
        resolved = resolve_params(name, p)  # errors before anything runs
        for src in drives:
            label = drive_label(src)
            variants = [[s] for s in resolved["spare"]] if name == "consistency" else [None]
            for v in variants:
                q = dict(p, spare=v) if v is not None else dict(p)
                tasks.append(Task(len(tasks), name, src, q, label + (f" spare {v[0]}%" if v else "")))
        for t in targets:
            from .fio_target import FIO_PROCEDURES
            if name not in FIO_PROCEDURES:
                continue
            variants = [[s] for s in resolved["spare"]] if name == "consistency" else [None]
            for v in variants:
                q = dict(p, spare=v) if v is not None else dict(p)
                tasks.append(Task(len(tasks), name, t["path"], q, f"target {t['path']}" + (f" spare {v[0]}%" if v else ""), target=t))
    # Longest first, so the pool ends together.
    order = {"consistency": 0, "qd-scaling": 1, "trim": 2, "endurance": 3, "four-corners": 4, "storage-bench": 5,
             "sequential-qd": 6, "transfer-size": 7}
    tasks.sort(key=lambda t: (t.target is not None, order.get(t.procedure, 9), t.id))
    return tasks


def _run(task: Task, queue, seed: int) -> list[Outcome]:
    report = (lambda f, text: queue.put((task.id, f, text))) if queue is not None else None
    if task.target is not None:
        from .fio_target import run_fio_procedure
        return run_fio_procedure(task.procedure, task.target, task.params, report)
    return run_procedure(task.procedure, task.source, task.params, report, seed)


class Board:
    """One progress line per task: fraction, ETA; redrawn in place on a terminal, printed every
    15 s (and at each finish) otherwise."""

    def __init__(self, tasks: list[Task], enabled: bool, stream=None):
        self.tasks = {t.id: t for t in tasks}
        self.state = {t.id: (0.0, "waiting", None) for t in tasks}
        self.enabled = enabled
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty()
        self.drawn = 0
        self.last = 0.0

    def update(self, tid: int, fraction: float, text: str) -> None:
        _, _, started = self.state[tid]
        self.state[tid] = (fraction, text, started or time.monotonic())

    def line(self, tid: int) -> str:
        t = self.tasks[tid]
        f, text, started = self.state[tid]
        bar = "#" * int(20 * f) + "-" * (20 - int(20 * f))
        if started and 0 < f < 1:
            el = time.monotonic() - started
            eta = f"ETA {el * (1 - f) / f:5.0f} s"
        elif f >= 1:
            eta = "done"
        else:
            eta = ""
        return f"{t.procedure:<14} {t.label:<34} [{bar}] {100 * f:5.1f}% {eta:<10} {text[:40]}"

    def draw(self, force: bool = False) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if not force and now - self.last < (0.5 if self.tty else 15.0):
            return
        self.last = now
        lines = [self.line(tid) for tid in self.tasks]
        if self.tty:
            if self.drawn:
                self.stream.write(f"\x1b[{self.drawn}F")
            self.stream.write("".join(f"\x1b[2K{line}\n" for line in lines))
            self.drawn = len(lines)
        else:
            self.stream.write("\n".join(lines) + "\n\n")
        self.stream.flush()


def run_all(tasks: list[Task], jobs: int | None = None, progress: bool = True, seed: int = 0) -> list[Outcome]:
    jobs = jobs or os.cpu_count() or 1
    board = Board(tasks, progress)
    outcomes: dict[int, list[Outcome]] = {}
    if jobs == 1 or len(tasks) == 1:
        for t in tasks:
            board.update(t.id, 0.0, "running")
            outcomes[t.id] = _run(t, _Direct(board), seed)
            board.update(t.id, 1.0, "done")
            board.draw(force=True)
    else:
        by_id = {t.id: t for t in tasks}
        with Manager() as manager:
            queue = manager.Queue()

            def tick():
                while not queue.empty():
                    board.update(*queue.get())
                board.draw()

            # A procedure's error is raised here; a run whose worker died is run again once.
            calls = {t.id: (_run, (t, queue, seed)) for t in tasks}
            for tid, res in run_spooled(calls, min(jobs, len(tasks)), attempts=2, tick=tick):
                if isinstance(res, Died):
                    raise SsdlabError(f"review: {by_id[tid].procedure} on {by_id[tid].label} did not finish: {res}")
                outcomes[tid] = res
                board.update(tid, 1.0, "done")
                board.draw(force=True)
    return [o for t in sorted(tasks, key=lambda t: t.id) for o in outcomes[t.id]]


class _Direct:
    """The queue protocol, in process."""

    def __init__(self, board: Board):
        self.board = board

    def put(self, item):
        self.board.update(*item)
        self.board.draw()


def provenance_note(simulated: bool, targets: list[str], version: str, quick: bool, seed: int) -> str:
    """How the page's figures were made: simulated drives by ssdlab (with the seed), targets
    measured through fio (the procedures run by ssdlab), and with which settings."""
    settings = " using --quick settings (shorter than methodology.md)" if quick else " with the methodology.md defaults"
    on = ", ".join(targets)
    if not simulated:
        return f"Measured through fio on {on}{settings} (procedures run by ssdlab {version})."
    if not targets:
        return f"Simulated with ssdlab {version}{settings}; seed {seed}."
    return f"Drives simulated with ssdlab {version}, targets measured through fio on {on}{settings}; seed {seed}."


def review(drives: list[str], out: str | Path, procedures: list[str] | None = None, overrides: dict | None = None,
           quick: bool = False, jobs: int | None = None, targets: list[dict] = (), png: bool = True,
           progress: bool = True, seed: int = 0) -> dict:
    """Run the suite and write the report into `out`. Returns paths and wall time."""
    out = Path(out)
    procedures = procedures or list(PROCEDURES)
    t0 = time.perf_counter()
    tasks = plan(drives, procedures, overrides or {}, quick, list(targets))
    if not tasks:
        raise SsdlabError("nothing to run: no drive or target takes these procedures")
    outcomes = run_all(tasks, jobs, progress, seed)
    if quick:
        for o in outcomes:
            o.params = {**o.params, "quick": True}
    from .report import write_pngs, write_report
    from .. import __version__
    note = (provenance_note(bool(drives), [t["path"] for t in targets], __version__, quick, seed)
            + " Buttons switch the drive shown in per-drive charts and the spare-area variant of the consistency test.")
    provenance = {"ssdlab_version": __version__, "seed": seed, "quick": quick, "procedures": procedures,
                  "overrides": overrides or {}}
    skipped = not_run(procedures, list(targets))
    info = write_report(outcomes, out, "ssdlab review: " + ", ".join(dict.fromkeys(o.drive for o in outcomes)), note,
                        provenance, skipped)
    pngs = []
    png_note = ""
    if png:
        try:
            pngs = write_pngs(info, out)
        except ImportError:
            png_note = "PNGs skipped: Playwright is not installed (pip install playwright; apt-get install chromium)"
        except Exception as e:  # no browser on this machine
            png_note = f"PNGs skipped: no headless Chromium could start ({str(e).splitlines()[0]})"
    return {"html": info["html"], "pngs": pngs, "png_note": png_note, "outcomes": outcomes, "not_run": skipped,
            "wall_s": time.perf_counter() - t0, "tasks": len(tasks)}
