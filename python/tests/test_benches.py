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


def _part(wall_s: float, sim_s: float, iops: float) -> dict:
    return {"wall_s": wall_s, "sim_s": sim_s, "iops": iops, "wall_per_sim_s": wall_s / sim_s}


def test_the_enterprise_run_pays_the_tables_first_touch_once():
    extrapolate = _bench("bench_enterprise_consistency").extrapolate
    # 2 simulated s that took 7.2 s wall where the fresh rate is 0.1 s per s: 7.0 s once.
    fresh = _part(2.0, 20.0, 400_000)
    x = extrapolate(90_000.0, 0.0, _part(7.2, 2.0, 400_000), fresh, _part(12.0, 100.0, 200_000),
                    spare_bytes=400_000 * 4096 * 100.0)
    assert x["startup_s"] == pytest.approx(7.0)
    assert x["fob_s"] == pytest.approx(100.0)
    assert x["estimate_s"] == pytest.approx(7.0 + 100 * 0.1 + 89_900 * 0.12)
    assert x["bound_s"] == pytest.approx(7.0 + 90_000 * 0.12)
    # Twice the fresh part's length adds its seconds at the fresh rate, not the startup again.
    y = extrapolate(90_000.0, 0.0, _part(7.2, 2.0, 400_000), fresh, _part(12.0, 100.0, 200_000),
                    spare_bytes=400_000 * 4096 * 200.0)
    assert y["estimate_s"] - x["estimate_s"] == pytest.approx(100 * (0.1 - 0.12))


def test_the_quick_presets_are_the_shipped_ones_shrunk_and_still_drives(tmp_path):
    import ssdlab

    bench = _bench("bench_instructions")
    out = bench.write_quick_presets(bench.PRESETS, tmp_path)
    for name, factor in bench.QUICK_SHRINK.items():
        full = ssdlab.Drive.from_toml(str(bench.PRESETS / f"{name}.toml")).geometry
        small = ssdlab.Drive.from_toml(str(out / f"{name}-quick.toml")).geometry
        assert small["dies"] == full["dies"]
        assert small["logical_units"] == pytest.approx(full["logical_units"] / factor, rel=1e-6)
