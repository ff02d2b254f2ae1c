"""Independent runs on a local process pool, each result handed over through a file.

Each worker is a process of its own with a pipe to this one. A call goes down the pipe; the
worker runs it, writes its result to a file in a spool folder (whole, then renamed into place)
and sends back only the path, in one write of under PIPE_BUF bytes, which a pipe takes whole or
not at all (or the call's own exception, raised to the caller). A worker that dies (killed, out
of memory) is seen by its process sentinel: the call it was running is charged an attempt and
runs again on a new worker, and after `attempts` the caller gets `Died` for it; the other
workers go on with theirs.

CPython's `ProcessPoolExecutor` ran these before. It sends a result of more than 16 KiB to its
result pipe in two writes, and a worker killed between them left the pool reading half a
message for ever (a sweep hung so in CI, 2026-11-29); one dead worker breaks its whole pool, and
CPython 3.11's manager thread then iterates the pool's pending calls while a submission may be
adding to them ("dictionary changed size during iteration" in `terminate_broken`, a warning in
this suite's run of 2026-12-07). This pool depends on none of its internals.
Sweeps, `ssdlab validate` and `ssdlab review` run their independent runs through it.
"""

from __future__ import annotations

import os
import pickle
import shutil
import tempfile
from collections import deque
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


def _serve(conn, callers_end) -> None:
    """A worker: run each call that comes down `conn` (function, arguments, result path) until
    the pipe closes; answer ("done", path) or ("raised", the call's exception). A forked worker
    has a copy of the caller's end of its own pipe too (`callers_end`), closed first: else
    the caller closing its end would never read as the pipe's end here."""
    callers_end.close()
    while True:
        try:
            fn, args, path = conn.recv()
        except (EOFError, OSError):
            return
        try:
            reply = ("done", call_spooled(fn, args, path))
        except Exception as e:  # noqa: BLE001 - the caller raises it
            try:
                pickle.dumps(e)
                reply = ("raised", e)
            except Exception:  # noqa: BLE001 - an exception that cannot cross a pipe
                reply = ("raised", RuntimeError(f"{type(e).__name__}: {e}"))
        try:
            conn.send(reply)
        except OSError:
            return  # the caller is gone


@dataclass
class _Worker:
    process: object
    conn: object
    # The call it runs: (key, result path), or None while idle.
    running: tuple[Hashable, str] | None = None

    def stop(self, now: bool) -> None:
        """Close its pipe (an idle worker then ends); `now`: end it without waiting."""
        self.conn.close()
        if now and self.process.is_alive():
            self.process.terminate()
        self.process.join(timeout=60)
        if self.process.is_alive():
            self.process.kill()
            self.process.join()


def run_spooled(calls: dict[Hashable, tuple[Callable, tuple]], workers: int, *, attempts: int = 1,
                mp_context=None, on_retry: Callable[[int], None] | None = None,
                tick: Callable[[], None] | None = None, spool_in: str | Path | None = None,
                ) -> Iterator[tuple[Hashable, object]]:
    """(key, result) for each of `calls` (key -> (function, arguments)) as they finish, on up
    to `workers` processes; `Died` is the result of a call whose worker died `attempts` times.
    A call's own exception is raised here. `on_retry(n)` is told when `n` calls run again after
    their worker died; `tick()` is called at least every 0.2 s while waiting (a progress
    display). The spool folder is made in `spool_in` (the system's temporary folder by
    default) and removed at the end, with every worker."""
    import multiprocessing
    from multiprocessing.connection import wait

    ctx = mp_context or multiprocessing.get_context()
    spool = Path(tempfile.mkdtemp(prefix=".spool-", dir=spool_in))
    waiting = deque(calls)
    tries = dict.fromkeys(calls, 0)
    most = max(1, min(workers, len(calls)))
    pool: list[_Worker] = []
    handed = 0
    clean = False
    try:
        while waiting or any(w.running for w in pool):
            # Every idle worker takes the next call; new workers up to `most`.
            while waiting:
                worker = next((w for w in pool if w.running is None), None)
                if worker is None:
                    if len(pool) >= most:
                        break
                    ours, theirs = ctx.Pipe()
                    process = ctx.Process(target=_serve, args=(theirs, ours), name="ssdlab-pool-worker")
                    process.start()
                    theirs.close()  # only the worker holds its end: its death reads as EOF here
                    worker = _Worker(process, ours)
                    pool.append(worker)
                key = waiting.popleft()
                path = str(spool / f"{handed}.pickle")
                handed += 1
                try:
                    worker.conn.send((*calls[key], path))
                except OSError:  # it died while idle: the call goes to another
                    waiting.appendleft(key)
                    pool.remove(worker)
                    worker.stop(now=True)
                    continue
                worker.running = (key, path)
            busy = [w for w in pool if w.running]
            ready = set(wait([w.conn for w in busy] + [w.process.sentinel for w in busy], timeout=0.2))
            if tick:
                tick()
            again = 0
            for worker in busy:
                key, path = worker.running
                if worker.conn in ready:
                    try:
                        status, value = worker.conn.recv()
                    except (EOFError, OSError):
                        status = "died"
                    if status != "died":
                        worker.running = None
                        if status == "raised":
                            raise value
                        yield key, take(value)
                        continue
                elif worker.process.sentinel not in ready:
                    continue
                # The worker died running the call (killed, out of memory).
                pool.remove(worker)
                worker.stop(now=True)
                if os.path.exists(path):  # finished as it died
                    yield key, take(path)
                    continue
                tries[key] += 1
                if tries[key] >= attempts:
                    yield key, Died(tries[key])
                else:
                    waiting.append(key)
                    again += 1
            if again and on_retry:
                on_retry(again)
        clean = True
    finally:
        # Every pipe closed first: a forked worker holds copies of the pipes of those made
        # before it, so one sees the end of its own only when every later one has ended too.
        for worker in pool:
            worker.conn.close()
        for worker in pool:
            worker.stop(now=not clean)
        shutil.rmtree(spool, ignore_errors=True)
