"""Independent runs on a local process pool, each result handed over through a file.

CPython's `ProcessPoolExecutor` sends a result of more than 16 KiB to its result pipe in two
writes, and a worker killed between them (out of memory, or by hand) leaves the pool reading
half a message for ever: a sweep hung so in CI (2026-11-29, its worker killed as it sent a
point's series). Here a worker writes its result to a file in a spool folder (whole, then
renamed into place) and the pipe carries only the path, in one write of under PIPE_BUF bytes,
which a pipe takes whole or not at all. A pool whose worker died is replaced and the calls not
yet finished run again; a call that had started (a marker file says so) is charged an attempt,
and after `attempts` the caller gets `Died` for it. CPython's pool stops every worker when one
dies, so a call running beside the one that died is charged too.
Sweeps, `ssdlab validate` and `ssdlab review` run their independent runs through it.
"""

from __future__ import annotations

import os
import pickle
import shutil
import tempfile
from collections.abc import Callable, Hashable, Iterator
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Died:
    """What a call yields when its worker died `attempts` times."""

    attempts: int

    def __str__(self) -> str:
        times = "once" if self.attempts == 1 else f"{self.attempts} times"
        return f"its worker died {times} (killed, or out of memory?)"


def call_spooled(fn: Callable, args: tuple, path: str) -> str:
    """`fn(*args)` in a worker, its result written to the file `path` (whole, then renamed
    into place); returns the path, the only thing the pool's pipe then carries. The file
    `path.started` says the call began."""
    open(path + ".started", "wb").close()
    res = fn(*args)
    with open(path + ".part", "wb") as f:
        pickle.dump(res, f, protocol=pickle.HIGHEST_PROTOCOL)
    os.replace(path + ".part", path)
    return path


def take(path: str):
    """The result a worker left at `path` (the file and its start marker are removed)."""
    with open(path, "rb") as f:
        res = pickle.load(f)
    os.unlink(path)
    os.unlink(path + ".started")
    return res


def run_spooled(calls: dict[Hashable, tuple[Callable, tuple]], workers: int, *, attempts: int = 1,
                mp_context=None, on_retry: Callable[[int], None] | None = None,
                tick: Callable[[], None] | None = None, spool_in: str | Path | None = None,
                ) -> Iterator[tuple[Hashable, object]]:
    """(key, result) for each of `calls` (key -> (function, arguments)) as they finish, on a
    pool of up to `workers` processes; `Died` is the result of a call whose worker died
    `attempts` times. A call's own exception is raised here. `on_retry(n)` is told when `n`
    calls run again in a new pool; `tick()` is called at least every 0.2 s while waiting (a
    progress display). The spool folder is made in `spool_in` (the system's temporary folder
    by default) and removed at the end."""
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
    from concurrent.futures.process import BrokenProcessPool

    spool = Path(tempfile.mkdtemp(prefix=".spool-", dir=spool_in))
    pending = dict(calls)
    tries = dict.fromkeys(calls, 0)
    rounds = 0
    try:
        while pending:
            broken = False
            pool = ProcessPoolExecutor(max_workers=max(1, min(workers, len(pending))), mp_context=mp_context)
            try:
                # Each round's files have names of their own: a worker of a broken round may
                # still be finishing while the next round runs.
                paths = {key: str(spool / f"{rounds}-{i}.pickle") for i, key in enumerate(pending)}
                futures = {}
                for key, path in paths.items():
                    try:
                        futures[pool.submit(call_spooled, *pending[key], path)] = key
                    except BrokenProcessPool:
                        # A worker died while the calls were still being handed over (a call
                        # that dies at once, with many behind it): the rest wait for the next
                        # round, uncharged (they never started).
                        broken = True
                        break
                # Once the pool is broken nothing more is waited for: what finished left its
                # file (read below), and CPython's `submit` can slip a call in as the pool
                # breaks whose future is then never resolved (its work item lands after the
                # broken pool failed the pending ones; a test's run hung so): the pool's own
                # flag is read too.
                running = set(futures)
                while running and not broken:
                    done, running = wait(running, timeout=0.2, return_when=FIRST_COMPLETED)
                    if tick:
                        tick()
                    for f in done:
                        try:
                            path = f.result()
                        except BrokenProcessPool:
                            broken = True
                            continue
                        key = futures[f]
                        del pending[key]
                        yield key, take(path)
                    broken = broken or bool(getattr(pool, "_broken", False))
            finally:
                pool.shutdown(wait=not broken, cancel_futures=True)
            rounds += 1
            if broken:
                for key in list(pending):
                    if os.path.exists(paths[key]):  # finished as the pool broke
                        del pending[key]
                        yield key, take(paths[key])
                started = [key for key in pending if os.path.exists(paths[key] + ".started")]
                for key in started or list(pending):  # all, should none have started
                    tries[key] += 1
                    if tries[key] >= attempts:
                        del pending[key]
                        yield key, Died(tries[key])
                if on_retry and pending:
                    on_retry(len(pending))
    finally:
        shutil.rmtree(spool, ignore_errors=True)
