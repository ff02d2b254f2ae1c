"""The local process pool that sweeps, validate and review run on (`ssdlab.pool`)."""

import multiprocessing
import os

import pytest

from ssdlab.pool import Died, run_spooled

FORK = multiprocessing.get_context("fork")


def _big(n: int) -> bytes:
    return bytes([n % 251]) * 100_000  # over the 16 KiB CPython's pool sends in one write


def _dies_first(marker: str, n: int) -> int:
    if not os.path.exists(marker):
        open(marker, "w").close()
        os._exit(9)  # as the OOM killer would: no exception, no result
    return n * n


def _always_dies() -> None:
    os._exit(9)


def _fails(n: int) -> int:
    raise ValueError(f"bad point {n}")


def test_every_result_comes_back_whole_and_the_spool_goes(tmp_path):
    got = dict(run_spooled({n: (_big, (n,)) for n in range(6)}, 2, mp_context=FORK, spool_in=tmp_path))
    assert got == {n: _big(n) for n in range(6)}
    assert list(tmp_path.iterdir()) == []


def test_a_dead_worker_has_its_unfinished_calls_run_again(tmp_path):
    retried, ticks = [], []
    marker = str(tmp_path / "died")
    got = dict(run_spooled({n: (_dies_first, (marker, n)) for n in range(4)}, 2, attempts=2, mp_context=FORK,
                           on_retry=retried.append, tick=lambda: ticks.append(1)))
    assert got == {n: n * n for n in range(4)}
    assert retried and 1 <= retried[0] <= 4 and ticks


def test_a_call_whose_worker_always_dies_yields_died_and_the_rest_finish():
    calls = {"dies": (_always_dies, ()), **{n: (_big, (n,)) for n in range(3)}}
    got = dict(run_spooled(calls, 1, attempts=2, mp_context=FORK))
    assert got["dies"] == Died(2) and "died 2 times" in str(got["dies"])
    # One worker: the calls after the dying one ran on the worker that took its place.
    assert {k: v for k, v in got.items() if k != "dies"} == {n: _big(n) for n in range(3)}


def _slow_square(n: int) -> int:
    import time
    time.sleep(0.2)
    return n * n


def test_only_the_dead_worker_s_call_is_charged():
    # One attempt each: a call running beside the one whose worker died finishes (CPython's
    # pool broke as a whole and charged those too).
    calls = {"dies": (_always_dies, ()), **{n: (_slow_square, (n,)) for n in range(6)}}
    got = dict(run_spooled(calls, 3, attempts=1, mp_context=FORK))
    assert got.pop("dies") == Died(1)
    assert got == {n: n * n for n in range(6)}


def _square(n: int) -> int:
    return n * n


def test_a_worker_that_dies_while_the_calls_are_still_handed_over_breaks_nothing():
    # The first call's worker dies at once while 2,000 calls are still to be handed out (with
    # CPython's pool, 7 of 20 such runs raised BrokenProcessPool from `submit` before
    # 2026-12-06, and its manager thread raced the submissions: issue 101).
    for _ in range(5):
        calls = {"dies": (_always_dies, ()), **{n: (_square, (n,)) for n in range(2000)}}
        got = dict(run_spooled(calls, 1, attempts=2, mp_context=FORK))
        assert got.pop("dies") == Died(2)
        assert got == {n: n * n for n in range(2000)}


def test_a_calls_own_error_is_raised_to_the_caller():
    with pytest.raises(ValueError, match="bad point 3"):
        dict(run_spooled({3: (_fails, (3,))}, 1, mp_context=FORK))


def _dies_in_task(task: tuple) -> None:
    os._exit(9)


def test_validate_names_the_run_whose_worker_kept_dying():
    from ssdlab.errors import SsdlabError
    from ssdlab.validate import in_pool

    with pytest.raises(SsdlabError, match=r"the run of crucial-m500-120 at 7% spare did not finish: its worker died 2 times"):
        in_pool(_dies_in_task, [("crucial-m500-120", 7)], 1, label=lambda t: f"{t[0]} at {t[1]}% spare")
