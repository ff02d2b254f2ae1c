"""A run's per-interval series as the core writes it (JSON), read as lists or a DataFrame."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd


# The series' columns `Result.rates` gives without the DataFrame.
_RATE_COLUMNS = ("read_iops", "write_iops", "trim_iops")


def _interval_lengths(s: dict, elapsed_s: float | None) -> tuple[float, float]:
    """Seconds of a whole interval of the core's series `s` and of its last one (shorter
    when the run ended inside it: it is then `partial`)."""
    full_s = s["interval_ns"] / 1e9
    n = len(s["read_ios"])
    if n and elapsed_s is not None and (n - 1) * full_s < elapsed_s < n * full_s - 1e-9:
        return full_s, elapsed_s - (n - 1) * full_s
    return full_s, full_s


def series_rates(series_json: str, column: str, elapsed_s: float | None = None) -> tuple[list[float], list[float]]:
    """`time_s` and one of `read_iops`, `write_iops` or `trim_iops` of `series_frame`, as
    lists and without loading numpy or pandas (their import is most of a short command's
    time): the same values, the same arithmetic."""
    s = json.loads(series_json)
    full_s, last_s = _interval_lengths(s, elapsed_s)
    ios = s[column.removesuffix("_iops") + "_ios"]
    lengths = [full_s] * len(ios)
    if lengths:
        lengths[-1] = last_s
    return [i * full_s + d for i, d in enumerate(lengths)], [k / d for k, d in zip(ios, lengths)]


def series_frame(series_json: str, elapsed_s: float | None = None) -> pd.DataFrame:
    """The core's interval series (JSON) as a DataFrame, one row per interval. With the run's
    `elapsed_s`, a last interval the run did not fill is marked `partial`, ends at the run's
    end (time_s) and has its rates over the time it covered, not over a whole interval."""
    import numpy as np
    import pandas as pd

    s = json.loads(series_json)
    full_s, last_s = _interval_lengths(s, elapsed_s)
    n = len(s["read_ios"])
    interval_s = np.full(n, full_s)
    partial = np.zeros(n, dtype=bool)
    if last_s != full_s:
        interval_s[-1] = last_s
        partial[-1] = True
    read_ios = np.asarray(s["read_ios"], dtype=np.float64)
    write_ios = np.asarray(s["write_ios"], dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        df = pd.DataFrame(
            {
                "time_s": np.arange(n) * full_s + interval_s,
                "read_iops": read_ios / interval_s,
                "write_iops": write_ios / interval_s,
                "read_mb_per_s": np.asarray(s["read_bytes"], dtype=np.float64) / interval_s / 1e6,
                "write_mb_per_s": np.asarray(s["write_bytes"], dtype=np.float64) / interval_s / 1e6,
                "read_latency_us_mean": np.where(read_ios > 0, np.asarray(s["read_latency_ns_sum"]) / 1e3 / np.maximum(read_ios, 1), np.nan),
                "write_latency_us_mean": np.where(write_ios > 0, np.asarray(s["write_latency_ns_sum"]) / 1e3 / np.maximum(write_ios, 1), np.nan),
                "trim_iops": np.asarray(s["trim_ios"], dtype=np.float64) / interval_s,
                "nand_page_programs": np.asarray(s["nand_page_programs"], dtype=np.int64),
                "gc_units_copied": np.asarray(s["gc_units_copied"], dtype=np.int64),
                "free_blocks": np.asarray(s["free_blocks"], dtype=np.int64),
                "partial": partial,
            }
        )
    energy_uj = np.asarray(s.get("energy_uj", []), dtype=np.float64)
    if energy_uj.size == n and n > 0 and energy_uj.any():  # a drive with a power model
        df["energy_j"] = energy_uj / 1e6
        df["power_w"] = energy_uj / 1e6 / interval_s
        df["link_state"] = [LINK_STATES[int(k)] for k in s["link_state"]]
        temperature_mc = np.asarray(s.get("temperature_mc", []), dtype=np.float64)
        if temperature_mc.size == n and temperature_mc.any():  # a drive with a heat model
            df["temperature_c"] = temperature_mc / 1e3
            df["throttled"] = np.asarray(s["throttled"], dtype=bool)
    return df


class _LazySeries:
    """A result's `series`: the core's JSON until first read, then its DataFrame
    (`series_frame`). pandas is loaded only then, so a command that prints only the summary
    never pays its import (0.3-0.5 s)."""

    def __get__(self, result, owner=None) -> pd.DataFrame:
        if result is None:
            return self
        if isinstance(result._series, str):
            result._series = series_frame(result._series, result.summary.get("elapsed_s"))
        return result._series


# The host link's power states, by the code the series carries (ssdlab_core::power::LinkState).
LINK_STATES = ("active", "partial", "slumber", "devsleep")
# The host's link power management policies (ssdlab_core::power::LinkPolicy; a job's link_power).
LINK_POLICIES = ("none", "hipm", "dipm", "hipm+dipm", "devsleep")
