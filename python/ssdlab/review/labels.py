"""How a procedure's figures and runs are labelled for people: the unit of each summary key,
the drive state each procedure starts from, and a run's parameters as one line."""

from __future__ import annotations


# Units of the summary's keys that do not carry theirs in the name.
_UNITS = (("_iops", "IOPS"), ("(iops)", "IOPS"), ("(mb/s)", "MB/s"), ("mb/s", "MB/s"), ("(w)", "W"), ("_s", "s"),
          ("_w", "W"), ("_tbw", "TB"), ("write_amplification", "x"), ("factor", "x"), ("pe_cycles", "P/E cycles"),
          ("_pct", "%"), ("_mb_per_s", "MB/s"), ("_us", "us"))


# Units declared by key, before the suffixes above are tried (issue 71's distribution figures).
_DECLARED_UNITS = {"steady_cv": "ratio", "cv": "ratio"}


def unit_of(key: str) -> str:
    """The unit of a summary figure, from its key ("" when it has none)."""
    if key in _DECLARED_UNITS:
        return _DECLARED_UNITS[key]
    k = key.lower()
    for suffix, unit in _UNITS:
        if suffix in k:
            return unit
    return ""


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
