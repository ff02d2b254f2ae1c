"""The review procedures by name: each one's parameters (defaults, help, checks), the table the
CLI, the report, sweeps and `--target` read, and `run_procedure`.

The procedures themselves (what each one measures, on a modelled drive) are in procedures.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..drive import DriveText
from ..errors import SsdlabError
from ..job import parse_size
from .placement import flash_cache, zns_vs_conventional
from .procedures import (
    Outcome,
    Tracker,
    consistency,
    endurance,
    four_corners,
    power,
    qd_scaling,
    sequential_qd,
    storage_bench,
    transfer_size,
    trim,
)

def _positive(name):
    def check(v):
        if v is None or v <= 0:
            raise SsdlabError(f"{name} {v}: must be > 0")
        return v
    return check


def _choice(name, accepted):
    def check(v):
        if v not in accepted:
            raise SsdlabError(f"{name} {v!r}: accepted: {', '.join(accepted)}")
        return v
    return check


def _nonnegative(name):
    def check(v):
        if not (isinstance(v, (int, float)) and v >= 0):
            raise SsdlabError(f"{name} {v}: must be >= 0")
        return v
    return check


def _qd_list(name):
    def check(v):
        for q in v:
            if not isinstance(q, int) or q < 1 or q > 4096:
                raise SsdlabError(f"{name}: queue depth {q}: accepted: integers 1..4096")
        return v
    return check


def _spare_list(v):
    for s in v:
        if not 0 <= s < 100:
            raise SsdlabError(f"spare {s}%: accepted: 0 <= spare < 100 (percent of user capacity left unwritten)")
    if len(set(v)) != len(v):
        raise SsdlabError(f"spare {v}: each percentage once")
    return v


def _size(name):
    def check(v):
        b = parse_size(v, name) if isinstance(v, str) else int(v)
        if b <= 0:
            raise SsdlabError(f"{name} {v}: must be > 0")
        return v
    return check


@dataclass
class Param:
    default: object
    help: str
    check: object = None



def _trace_list(v):
    from ..synth import TRACES
    for t in v:
        if t not in TRACES and not Path(t).exists():
            raise SsdlabError(f"trace '{t}': neither a look-alike ({', '.join(TRACES)}) nor an existing file")
    return v


@dataclass
class Procedure:
    name: str
    run: object
    params: dict
    weights: object  # params -> list of step weights
    description: str = ""
    check: object = None  # params -> None, or SsdlabError for values that do not go together


def _size_order(p: dict, low: str, high: str) -> None:
    """`p[low]` is no larger than `p[high]` (both sizes)."""
    if parse_size(p[low], low) > parse_size(p[high], high):
        raise SsdlabError(f"{low} {p[low]} is larger than {high} {p[high]}; accepted: {low} <= {high}")


def _pct_list(name, low, high):
    def check(v):
        if not isinstance(v, list) or not v or any(not isinstance(x, (int, float)) or not low < x <= high for x in v):
            raise SsdlabError(f"{name} {v}: accepted: a list of percentages, each in ({low}, {high}]")
        return v
    return check


def _count(name, low, high):
    def check(v):
        if not isinstance(v, int) or not low <= v <= high:
            raise SsdlabError(f"{name} {v}: accepted: a whole number {low} to {high}")
        return v
    return check


def _handles(v):
    if not isinstance(v, list) or not v or any(h not in (1, 2) for h in v):
        raise SsdlabError(f"handles {v}: accepted: a list of 1 (every region on one placement handle) and/or 2 (each region its own)")
    return v


def _share_list(v):
    if not isinstance(v, list) or any(not isinstance(x, (int, float)) or not 0 < x <= 10 for x in v):
        raise SsdlabError(f"rate_steps {v}: accepted: a list (possibly empty) of shares, each in (0, 10]")
    return v


def _frac(v):
    if not 0 < v <= 1:
        raise SsdlabError(f"fraction {v}: accepted: 0 < fraction <= 1")
    return v


PROCEDURES: dict[str, Procedure] = {
    "consistency": Procedure("consistency", consistency, {
        "duration_s": Param(None, "seconds of random writes (default 2000; 7200 for enterprise presets)", lambda v: v if v is None else _positive("duration_s")(v)),
        "spare": Param([0], "extra spare area, % of user capacity left unwritten (list)", _spare_list),
        "qd": Param(32, "queue depth", _positive("qd")),
        "bs": Param("4k", "transfer size", _size("bs")),
        "steady_window_s": Param(600, "the last seconds summarised as steady state", _positive("steady_window_s")),
        "fill": Param("span", "span: fill only the written span, the rest stays trimmed (methodology.md); drive: fill "
                      "every LBA, so the unwritten share holds data instead of serving as spare", _choice("fill", ("span", "drive"))),
        "precondition": Param("fill", "fill: secure erase and the fill, then the test (methodology.md); steady-state: "
                              "after the fill, steady_drive_writes drive writes of untimed 4 KiB random writes over the span "
                              "(SNIA-style, the state the published hours-long enterprise runs reach)",
                              _choice("precondition", ("fill", "steady-state"))),
        "steady_drive_writes": Param(2.0, "drive writes of the steady-state precondition", _nonnegative("steady_drive_writes")),
    }, lambda p: [1.0] * len(p["spare"])),
    "four-corners": Procedure("four-corners", four_corners, {
        "span": Param("8g", "LBA span of the random tests", _size("span")),
        "qd_low": Param(3, "queue depth of the random tests", _positive("qd_low")),
        "qd_high": Param(32, "queue depth of the second random write test", _positive("qd_high")),
        "random_s": Param(180, "seconds per random test", _positive("random_s")),
        "seq_s": Param(60, "seconds per sequential test", _positive("seq_s")),
    }, lambda p: [1, 1, 1, 0.5, 0.5]),
    "sequential-qd": Procedure("sequential-qd", sequential_qd, {
        "bs": Param("128k", "transfer size", _size("bs")),
        "qd": Param(32, "queue depth", _positive("qd")),
        "duration_s": Param(60, "seconds per direction", _positive("duration_s")),
    }, lambda p: [1, 1]),
    "transfer-size": Procedure("transfer-size", transfer_size, {
        "span": Param("256m", "LBA span written then read at each size", _size("span")),
        "min_bs": Param("512", "smallest transfer", _size("min_bs")),
        "max_bs": Param("8m", "largest transfer", _size("max_bs")),
        "qd": Param(4, "queue depth", _positive("qd")),
    }, lambda p: [1.0], check=lambda p: _size_order(p, "min_bs", "max_bs")),
    "trim": Procedure("trim", trim, {
        "random_s": Param(1200, "seconds of 4 KiB QD32 random writes (methodology: 20-30 minutes)", _positive("random_s")),
        "positions": Param(50, "slices of the LBA span the passes are measured in", _positive("positions")),
        "bs": Param("128k", "transfer size of the sequential passes", _size("bs")),
        "qd": Param(1, "queue depth of the sequential passes", _positive("qd")),
    }, lambda p: [0.5, 1, 0.5, 0.5, 1.2, 0.5]),
    "qd-scaling": Procedure("qd-scaling", qd_scaling, {
        "steady_drive_writes": Param(1.5, "drive writes of 4 KiB random writes (untimed) to reach steady state first; 0 for none", _nonnegative("steady_drive_writes")),
        "precondition_s": Param(300, "seconds of timed QD32 random writes after them", _positive("precondition_s")),
        "topup_s": Param(300, "seconds of QD32 random writes before each later write workload", _positive("topup_s")),
        "step_s": Param(180, "seconds at each queue depth", _positive("step_s")),
        "qds": Param([1, 2, 4, 8, 16, 32, 64, 128], "queue depths", _qd_list("qds")),
    }, lambda p: [2.0] + [0.15] * (len(p["qds"]) * 5 + 3)),
    "endurance": Procedure("endurance", endurance, {
        "cycles": Param(10, "mean P/E cycles the measurement runs for", _positive("cycles")),
        "replica_dies": Param(2, "dies of the replica the wear is measured on", _positive("replica_dies")),
        "workload": Param("rating", "rating (the vendors' rating workload of the drive's segment) or jesd219 "
                          "(JEDEC's enterprise endurance workload)", _choice("workload", ("rating", "jesd219"))),
    }, lambda p: [0.1, 1, 3]),
    "power": Procedure("power", power, {
        "idle_s": Param(60, "seconds of each idle measurement", _positive("idle_s")),
        "write_s": Param(60, "seconds of each write measurement", _positive("write_s")),
    }, lambda p: [0.05, 0.05, 0.05, 1, 0.3, 1]),
    "flash-cache": Procedure("flash-cache", flash_cache, {
        "utilisation": Param([50, 100], "% of the drive's LBAs the cache uses; the rest stays trimmed (list)", _pct_list("utilisation", 0, 100)),
        "soc_pct": Param([4, 16, 64], "% of the cache in the small-object region (list)", _pct_list("soc_pct", 0, 90)),
        "handles": Param([1, 2], "placement handles: 1, every region on one; 2, each region its own (list)", _handles),
        "tenants": Param(1, "caches on the drive, side by side (methodology 13's two tenants: 2)", _count("tenants", 1, 2)),
        "soc_write_share": Param(50.0, "% of the bytes written that go to the small objects", lambda v: _pct_list("soc_write_share", 0, 100)([v])[0]),
        "drive_writes": Param(3.0, "writes of the cache's size after the fill", _positive("drive_writes")),
        "samples": Param(12, "rounds, each one sample of the statistics log", _count("samples", 2, 1000)),
        "qd": Param(8, "queue depth of each region's writes", _positive("qd")),
    }, lambda p: [float(p["tenants"])] * (len(p["utilisation"]) * len(p["soc_pct"]) * len(p["handles"])),
        "methodology.md 13: CacheLib's small- and large-object regions on an FDP drive, device write amplification over time"),
    "zns-vs-conventional": Procedure("zns-vs-conventional", zns_vs_conventional, {
        "spares": Param([7, 28], "over-provisioning of the conventional drives, % of the data space (list)", _pct_list("spares", 0, 90)),
        "overwrites": Param(4, "passes over the capacity (the last one measured)", _count("overwrites", 1, 100)),
        "threads": Param(4, "writers, each at QD1", _count("threads", 1, 64)),
        "bs": Param("64k", "write size", _size("bs")),
        "zone_size": Param("256m", "the zoned drive's zone size (a power of two)", _size("zone_size")),
        "max_open_zones": Param(14, "the zoned drive's open and active zones (the ZN540's 14)", _count("max_open_zones", 1, 4096)),
        "rate_steps": Param([0.25, 0.5, 0.75, 1.0, 1.25], "the second set-up's target write rates (64 KiB writes to 4 zones, "
                            "4 KiB random reads beside them), as shares of the zoned drive's MB/s in the first (list; [] skips it)",
                            _share_list),
        "rate_window_s": Param(10.0, "simulated seconds at each target rate", _positive("rate_window_s")),
    }, lambda p: [1.0 + 0.3 * len(p["rate_steps"])] * (len(p["spares"]) + 1),
        "methodology.md 13: the same media zoned and conventional at each spare, MB/s and WAF overwriting the capacity"),
    "storage-bench": Procedure("storage-bench", storage_bench, {
        "traces": Param(["heavy-2011", "light-2011"], "look-alike names or trace files", _trace_list),
        "fraction": Param(0.05, "share of each look-alike's published length", _frac),
    }, lambda p: [1.0] * len(p["traces"])),
}


def resolve_params(procedure: str, overrides: dict | None = None) -> dict:
    """Defaults of `procedure` with `overrides` applied and checked. Unknown procedure or
    parameter names and bad values raise SsdlabError."""
    if procedure not in PROCEDURES:
        raise SsdlabError(f"unknown procedure '{procedure}'; accepted: {', '.join(PROCEDURES)}")
    spec = PROCEDURES[procedure].params
    p = {k: v.default for k, v in spec.items()}
    for k, v in (overrides or {}).items():
        if k not in spec:
            raise SsdlabError(f"{procedure}: unknown parameter '{k}'; accepted: {', '.join(spec)}")
        p[k] = v
    for k, v in p.items():
        if spec[k].check is not None:
            try:
                p[k] = spec[k].check(v)
            except SsdlabError as e:
                raise SsdlabError(f"{procedure}: {e}") from None
    if PROCEDURES[procedure].check is not None:
        try:
            PROCEDURES[procedure].check(p)
        except SsdlabError as e:
            raise SsdlabError(f"{procedure}: {e}") from None
    return p


def run_procedure(procedure: str, source: str | DriveText, params: dict | None = None, report=None, seed: int = 0) -> list[Outcome]:
    """Run one procedure on a modelled drive (preset name, .toml path or `DriveText`)."""
    p = resolve_params(procedure, params)
    proc = PROCEDURES[procedure]
    tracker = Tracker(report, proc.weights(p))
    outs = proc.run(source, p, tracker, seed)
    tracker.report(1.0, "done")
    for o in outs:
        o.params = dict(p)
    return outs
