"""The steady state of a consistency run: the span a spare-area variant writes, the window
summarised, its write amplification and the distribution of its per-second values (issue 71),
shared by the modelled procedure, the real device's (through fio) and `ssdlab validate`."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # numpy and pandas load when a procedure runs, not with the command line
    import numpy as np
    import pandas as pd


def _round_down(n: int, unit: int) -> int:
    return n // unit * unit


def spare_span(user_bytes: int, spare: float, unit: int) -> int:
    """The LBA span a consistency run writes with `spare` % of user capacity left unwritten,
    in whole `unit`s."""
    return _round_down(int(user_bytes * (100 - spare) / 100), unit)


def spare_variant(spare: float, fill: str) -> str:
    """A consistency run's variant label: its spare area, and whether the unwritten share
    holds the fill's data (fill=drive) rather than staying trimmed."""
    return f"spare {spare}%" + (" (filled)" if fill == "drive" and spare else "")


def steady_window(window_s: float, run_s: float) -> float:
    """The steady-state window of a run: the last `window_s` (methodology.md: 600 of 2000 s),
    but never more than the last 30% of a shorter run, where it would take in the fresh peak."""
    return min(window_s, 0.3 * run_s) if run_s > 0 else window_s


def window_write_amplification(series: pd.DataFrame, window: np.ndarray, geometry: dict, bs: int) -> float | None:
    """Write amplification over the seconds `window` selects of a fixed-size write job's series:
    NAND bytes programmed (pages x page size) over host bytes written. The run's own figure
    takes in the fresh drive's burst at about 1; this one is what the steady state's IOPS pay
    (crucial-m500-960, 1400-2000 s: 12.7 against 3.85 over the run)."""
    host = float(series["write_iops"].to_numpy()[window].sum()) * bs
    page_bytes = geometry["units_per_page"] * geometry["mapping_unit_bytes"]
    pages = float(series["nand_page_programs"].to_numpy()[window].sum())
    return pages * page_bytes / host if host > 0 else None


# The latency band of `distribution`: a second is in it when its mean latency is within this
# share of the median second's.
LATENCY_BAND = 0.10


def distribution(iops: np.ndarray, latency_us: np.ndarray | None = None, prefix: str = "steady_") -> dict:
    """The spread of per-second values as the reviews read a consistency scatter (issue 71):
    the median, the 1st, 5th and 99th percentiles, the standard deviation and coefficient of
    variation, the share of seconds below half the median (stalls) and above twice it (bursts),
    and, given the seconds' mean latencies, the share of seconds within LATENCY_BAND of the
    median second's latency. Shares in %. Keys start with `prefix`."""
    import numpy as np

    iops = np.asarray(iops, dtype=float)
    if not len(iops):
        return {}
    median = float(np.median(iops))
    mean = float(iops.mean())
    out = {
        "median_iops": median,
        "p1_iops": float(np.percentile(iops, 1)),
        "p5_iops": float(np.percentile(iops, 5)),
        "p99_iops": float(np.percentile(iops, 99)),
        "stddev_iops": float(iops.std()),
        "cv": float(iops.std() / mean) if mean else 0.0,
        "below_half_median_pct": 100.0 * float(np.mean(iops < 0.5 * median)),
        "above_twice_median_pct": 100.0 * float(np.mean(iops > 2.0 * median)),
    }
    if latency_us is not None:
        lat = np.asarray(latency_us, dtype=float)
        lat = lat[np.isfinite(lat) & (lat > 0)]
        if len(lat):
            m = float(np.median(lat))
            out["latency_band_pct"] = 100.0 * float(np.mean(np.abs(lat - m) <= LATENCY_BAND * m))
    return {prefix + k: v for k, v in out.items()}


def consistency_summary(s: pd.DataFrame, window_s: float, waf: float | None, window_waf=None) -> dict:
    """The figures of a consistency run's per-second IOPS `s`; `window_waf`, when the drive's
    counters are known, gives the write amplification over the seconds a mask selects."""
    import numpy as np

    iops = s["iops"].to_numpy()
    t = s["time_s"].to_numpy()
    first = iops[t <= min(60, t[-1])] if len(iops) else iops
    peak = float(first.max()) if len(first) else 0.0
    asked = window_s
    window_s = steady_window(window_s, float(t[-1]) if len(t) else 0.0)
    steady = t > t[-1] - window_s if len(t) else np.zeros(0, dtype=bool)
    last = iops[steady]
    below = np.nonzero(iops < 0.5 * peak)[0]
    return {
        "peak_iops": peak,
        "cliff_s": float(t[below[0]]) if len(below) else None,
        "steady_mean_iops": float(last.mean()) if len(last) else 0.0,
        "steady_floor_iops": float(np.percentile(last, 1)) if len(last) else 0.0,
        **distribution(last, s["latency_us"].to_numpy()[steady] if "latency_us" in s else None),
        "steady_window_s": window_s,
        "write_amplification": waf,
        **({"steady_write_amplification": window_waf(steady)} if window_waf else {}),
        **({"warning": f"steady state taken over the last {window_s:.0f} s, not the {asked:.0f} s asked: in a "
                       f"{t[-1]:.0f} s run the window is at most the last 30% (earlier seconds take in the fresh "
                       "peak)"} if window_s < asked else {}),
    }
