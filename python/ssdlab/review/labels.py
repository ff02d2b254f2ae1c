"""How a procedure's figures and runs are labelled for people: the unit of each summary key,
the drive state each procedure starts from, and a run's parameters as one line."""

from __future__ import annotations


# The unit of every fixed summary key, declared (issue 73 item 1: a name's substring is no
# unit: "steady_write_amplification" is not in W). "" for figures without a unit (a count of
# requests, a text).
UNITS = {
    # consistency (steady.py)
    "peak_iops": "IOPS", "cliff_s": "s", "steady_mean_iops": "IOPS", "steady_floor_iops": "IOPS",
    "steady_median_iops": "IOPS", "steady_p1_iops": "IOPS", "steady_p5_iops": "IOPS", "steady_p99_iops": "IOPS",
    "steady_stddev_iops": "IOPS", "steady_cv": "ratio", "steady_below_half_median_pct": "%",
    "steady_above_twice_median_pct": "%", "steady_latency_band_pct": "%", "steady_window_s": "s",
    "write_amplification": "x", "steady_write_amplification": "x", "warning": "",
    # transfer-size
    "read_mb_per_s_max": "MB/s", "write_mb_per_s_max": "MB/s",
    # endurance
    "workload": "", "wear_leveling_factor": "x", "mean_pe_cycles_measured": "P/E cycles",
    "mean_pe_cycles_total": "P/E cycles", "pe_cycles_rated": "P/E cycles", "projected_tbw": "TB", "rated_tbw": "TB",
    "replica": "",
    # power, when the drive has no power model
    "power model": "",
    # flash-cache (placement.py)
    "utilisation_pct": "%", "soc_pct": "%", "handles": "", "tenants": "", "waf_steady": "x", "waf_first_round": "x",
    "small_write_p99_us_steady": "us", "cache_writes": "cache writes", "small_objects_waf_steady": "x",
    "small_objects_waf_model": "x",
}

# Keys made from a label (four-corners, sequential-qd, qd-scaling, trim, storage-bench, power)
# end in their unit: "128K sequential write QD1 (MB/s)", "pass 1 MB/s", "idle (W)".
_LABEL_UNITS = {"(IOPS)": "IOPS", "(MB/s)": "MB/s", "MB/s": "MB/s", "(W)": "W", "WAF": "x"}


def rate_summary(rows: list[dict]) -> dict:
    """The summary of a table of tests (each with `test`, `mb_per_s`, `iops`) as reviews quote
    them: MB/s for the sequential ones, IOPS for the random ones, the unit in the key."""
    out = {}
    for r in rows:
        unit, key = ("MB/s", "mb_per_s") if "sequential" in r["test"] else ("IOPS", "iops")
        out[f"{r['test']} ({unit})"] = r[key]
    return out


def unit_of(key: str) -> str:
    """The unit of a summary figure: declared in UNITS, or the unit a label key ends in; None
    for a key neither declares (a test keeps every procedure's keys declared)."""
    if key in UNITS:
        return UNITS[key]
    last = key.rsplit(" ", 1)[-1]
    return _LABEL_UNITS.get(last)


# The drive state each procedure starts from (the code above: secure erase, then what it writes).
PRECONDITIONS = {
    "consistency": "secure erase + sequential fill of the span (fill=drive: of every LBA); precondition=steady-state: "
                   "+ untimed 4 KiB random writes",
    "four-corners": "secure erase; reads of a filled span, writes on an empty drive",
    "sequential-qd": "secure erase; reads of a filled reach, writes on an empty drive",
    "transfer-size": "secure erase, test file written first",
    "trim": "secure erase + sequential fill",
    "qd-scaling": "secure erase + sequential fill + random writes",
    "endurance": "secure erase + sequential fill + 2 drive writes of the workload",
    "storage-bench": "secure erase + sequential fill",
    "power": "secure erase (idle, sequential write), sequential fill (random write)",
    "flash-cache": "secure erase + untimed fill of the cache's LBAs (the rest trimmed)",
    "zns-vs-conventional": "a new drive each: the zoned one empty, the conventional ones after a sequential fill",
}


def describe_params(o) -> str:
    """The parameters of a run (a procedure's `Outcome`) as one line for a chart or table
    (duration, span, QD, ..., the precondition, the spare-area variant, quick mode)."""
    skip = {"spare", "quick"} | ({"precondition", "steady_drive_writes"} if o.procedure == "consistency" else set())
    parts = [f"{k}={v}" for k, v in o.params.items() if v is not None and k not in skip]
    if o.procedure == "consistency" and o.source == "model":
        # The one this run had, not every alternative.
        state = "secure erase + sequential fill of " + ("every LBA" if o.params.get("fill") == "drive" else "the span")
        if o.params.get("precondition") == "steady-state":
            state += f" + {o.params.get('steady_drive_writes', 2):g} drive writes of untimed 4 KiB random writes"
        parts.append(f"precondition: {state}")
    elif o.procedure in PRECONDITIONS and o.source == "model":
        parts.append(f"precondition: {PRECONDITIONS[o.procedure]}")
    if o.variant:
        parts.append(o.variant)
    if o.procedure == "storage-bench":
        from ..synth import TRACES
        if any(t in TRACES for t in o.params.get("traces", [])):
            parts.append("traces: synthetic look-alikes of the reviews' traces, not the recordings")
    if o.params.get("quick"):
        parts.append("quick mode")
    return ", ".join(parts)
