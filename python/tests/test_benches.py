"""The benchmarks' own arithmetic (their figures are printed, never asserted: see docs/performance.md)."""

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _bench(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "benches" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _run(host_writes: int, copies: int, per_write: float, per_copy: float) -> dict:
    return {"commands": host_writes, "ops": host_writes + copies,
            "instructions": round(host_writes * per_write + copies * per_copy)}


def test_the_split_recovers_a_cost_per_host_write_and_per_copy():
    split = _bench("bench_instructions").split
    # crucial-m500-120's two mixes (2026-12-05): 0% and 25% spare.
    x, y = split(_run(82_184, 591_458, 1961.0, 484.0), _run(315_448, 436_255, 1961.0, 484.0))
    assert x == pytest.approx(1961.0, abs=0.01)
    assert y == pytest.approx(484.0, abs=0.01)


def test_the_split_refuses_two_runs_of_the_same_mix():
    split = _bench("bench_instructions").split
    assert split(_run(100_000, 500_000, 2000.0, 500.0), _run(200_000, 1_000_000, 2000.0, 500.0)) is None
    assert split(_run(100_000, 500_000, 2000.0, 500.0), _run(105_000, 500_000, 2000.0, 500.0)) is None
