"""The review procedures of ../shared/reference/methodology.md, run on a modelled drive.

Each procedure is a function of a drive source (preset name, .toml path or `DriveText`), its
parameters and a progress tracker, and returns an `Outcome`: scalar figures for the summary
table and the tables behind its charts. Every run starts from a new drive (same seed, same results).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..drive import Drive, DriveText, config_text, describe_text, dump_toml
from ..errors import SsdlabError
from ..job import Job, parse_size
from .labels import PRECONDITIONS, describe_params, rate_summary, unit_of  # noqa: F401  (re-exported)
from .steady import (  # noqa: F401  (re-exported)
    LATENCY_BAND,
    _round_down,
    consistency_summary,
    distribution,
    spare_span,
    spare_variant,
    steady_window,
    window_write_amplification,
)

if TYPE_CHECKING:  # pandas loads when a procedure runs, not with the command line
    import pandas as pd

KIB = 1024
MIB = 1024 * KIB
GIB = 1024 * MIB


@dataclass
class Outcome:
    procedure: str
    drive: str
    variant: str = ""
    summary: dict = field(default_factory=dict)
    tables: dict = field(default_factory=dict)  # name -> DataFrame
    wall_s: float = 0.0
    source: str = "model"  # "model" or "fio"
    # The parameters it ran with (resolved), for the charts, tables and summary.json.
    params: dict = field(default_factory=dict)


class Tracker:
    """Turns a procedure's steps into one fraction and ETA for the progress display.
    `report(fraction, text)` receives updates; steps carry relative weights."""

    def __init__(self, report=None, weights: list[float] | None = None):
        self.report = report or (lambda fraction, text: None)
        self.weights = weights or [1.0]
        self.total = sum(self.weights)
        self.done = 0.0
        self.current = 0.0
        self.index = 0
        self.label = ""

    def step(self, label: str) -> "Tracker":
        if self.index > 0:
            self.done += self.weights[min(self.index - 1, len(self.weights) - 1)]
        self.current = self.weights[min(self.index, len(self.weights) - 1)]
        self.index += 1
        self.label = label
        self.report(min(self.done / self.total, 1.0), label)
        return self

    # Drive.run's progress protocol.
    def update(self, sim_s: float, ios: int, fraction: float) -> None:
        self.report(min((self.done + self.current * fraction) / self.total, 1.0), self.label)

    def close(self) -> None:
        pass


def segment(source: str | DriveText) -> str:
    text, src = config_text(source)
    import tomllib
    return tomllib.loads(text).get("datasheet", {}).get("segment", "client") or "client"


def drive_label(source: str | DriveText) -> str:
    text, src = config_text(source)
    return describe_text(text, src)["name"] or Path(src).stem


def _new(source: str | DriveText, seed: int, placement: str | None = None) -> Drive:
    return Drive.open(source, seed=seed, placement=placement)


# ----- procedures --------------------------------------------------------------------------------

def consistency(source: str | DriveText, p: dict, tracker: Tracker, seed: int = 0) -> list[Outcome]:
    """Secure erase, fill the written span, 4 KiB random writes at QD32 for the duration, IOPS
    per second; one run per spare-area variant (the written LBA range is limited to
    100 - spare % of user capacity; the rest stays trimmed, or with fill=drive holds the fill's
    data)."""
    label = drive_label(source)
    duration = p["duration_s"] or (7200 if segment(source) == "enterprise" else 2000)
    outs = []
    for spare in p["spare"]:
        tracker.step(spare_variant(spare, p["fill"]))
        t0 = time.perf_counter()
        d = _new(source, seed)
        d.secure_erase()
        unit = d.geometry["mapping_unit_bytes"]
        span = spare_span(d.user_bytes, spare, unit)
        d.fill(span if p["fill"] == "span" else None)
        if p["precondition"] == "steady-state":
            # SNIA-style: the workload's own random writes until steady state, untimed.
            d.random_writes(p["steady_drive_writes"], span)
        r = d.run(Job(name="consistency", rw="randwrite", bs=p["bs"], iodepth=p["qd"], size=str(span),
                      runtime_s=duration, time_based=True), progress=tracker)
        power = [c for c in ("power_w", "temperature_c") if c in r.series]  # a drive with a power model
        s = r.series[["time_s", "write_iops", "write_latency_us_mean", *power]].rename(
            columns={"write_iops": "iops", "write_latency_us_mean": "latency_us"})
        s["iops"] = s["iops"].round(3)
        bs = parse_size(p["bs"], "bs")
        summary = consistency_summary(s, p["steady_window_s"], r.summary["write_amplification"],
                                      lambda steady: window_write_amplification(r.series, steady, d.geometry, bs))
        outs.append(Outcome("consistency", label, spare_variant(spare, p["fill"]), summary, {"iops": s}, time.perf_counter() - t0))
    return outs


def four_corners(source: str | DriveText, p: dict, tracker: Tracker, seed: int = 0) -> list[Outcome]:
    """The desktop Iometer set: 4 KiB random read and write over an 8 GiB span at QD3, random
    write at QD32, 128 KiB sequential read and write at QD1 over the whole span."""
    import pandas as pd

    label = drive_label(source)
    t0 = time.perf_counter()
    rows = []
    span = parse_size(p["span"], "span")

    def run(name, d, job):
        r = d.run(job, progress=tracker)
        op = "read" if "read" in job.rw else "write"
        o = r.summary[op]
        rows.append({"test": name, "mb_per_s": o["mb_per_s"], "iops": o["iops"], "latency_us_mean": o["latency_us_mean"]})

    tracker.step("4K random read")
    d = _new(source, seed)
    span = min(span, d.user_bytes)
    d.secure_erase()
    d.fill(span)
    run(f"4K random read QD{p['qd_low']}", d, Job(rw="randread", bs="4k", iodepth=p["qd_low"], size=str(span), runtime_s=p["random_s"], time_based=True))
    for qd in (p["qd_low"], p["qd_high"]):
        tracker.step(f"4K random write QD{qd}")
        d.secure_erase()
        run(f"4K random write QD{qd}", d, Job(rw="randwrite", bs="4k", iodepth=qd, size=str(span), runtime_s=p["random_s"], time_based=True))
    tracker.step("128K sequential read")
    d.secure_erase()
    whole = _round_down(d.user_bytes, 128 * KIB)
    d.fill_read_reach(p["seq_s"])
    run("128K sequential read QD1", d, Job(rw="read", bs="128k", iodepth=1, size=str(whole), runtime_s=p["seq_s"], time_based=True))
    tracker.step("128K sequential write")
    d.secure_erase()
    run("128K sequential write QD1", d, Job(rw="write", bs="128k", iodepth=1, size=str(whole), runtime_s=p["seq_s"], time_based=True))
    table = pd.DataFrame(rows)
    return [Outcome("four-corners", label, "", rate_summary(rows), {"results": table}, time.perf_counter() - t0)]


def sequential_qd(source: str | DriveText, p: dict, tracker: Tracker, seed: int = 0) -> list[Outcome]:
    """Incompressible sequential read and write of large transfers at a deep queue (AS-SSD style)."""
    import pandas as pd

    label = drive_label(source)
    t0 = time.perf_counter()
    d = _new(source, seed)
    bs = parse_size(p["bs"], "bs")
    whole = _round_down(d.user_bytes, bs)
    rows = []
    tracker.step("sequential write")
    d.secure_erase()
    r = d.run(Job(rw="write", bs=p["bs"], iodepth=p["qd"], size=str(whole), runtime_s=p["duration_s"], time_based=True), progress=tracker)
    rows.append({"test": f"sequential write {p['bs']} QD{p['qd']}", "mb_per_s": r.summary["write"]["mb_per_s"], "iops": r.summary["write"]["iops"]})
    tracker.step("sequential read")
    d.secure_erase()
    d.fill_read_reach(p["duration_s"])
    r = d.run(Job(rw="read", bs=p["bs"], iodepth=p["qd"], size=str(whole), runtime_s=p["duration_s"], time_based=True), progress=tracker)
    rows.append({"test": f"sequential read {p['bs']} QD{p['qd']}", "mb_per_s": r.summary["read"]["mb_per_s"], "iops": r.summary["read"]["iops"]})
    return [Outcome("sequential-qd", label, "", rate_summary(rows), {"results": pd.DataFrame(rows)}, time.perf_counter() - t0)]


def transfer_size(source: str | DriveText, p: dict, tracker: Tracker, seed: int = 0) -> list[Outcome]:
    """Sequential read and write throughput at transfer sizes from 512 B to 8 MiB (powers of
    two), QD4, over a small span (ATTO style: the test file is written first, then each size
    writes the span and reads it), so every size finds the span written: transfers smaller
    than a mapping unit pay read-modify-write at every size, not from the second size on."""
    import pandas as pd

    label = drive_label(source)
    t0 = time.perf_counter()
    d = _new(source, seed)
    d.secure_erase()
    span = parse_size(p["span"], "span")
    lo, hi = parse_size(p["min_bs"], "min_bs"), parse_size(p["max_bs"], "max_bs")
    sizes = []
    b = lo
    while b <= hi:
        sizes.append(b)
        b *= 2
    # ATTO's test file: the whole span, written once before the sweep.
    whole = max(_round_down(span, hi), hi * 8)
    d.run(Job(name="test file", rw="write", bs="128k", iodepth=p["qd"], size=str(whole)), progress=tracker)
    rows = []
    for bs in sizes:
        tracker.step(f"{bs} B")
        size = max(_round_down(span, bs), bs * 8)
        w = d.run(Job(rw="write", bs=str(bs), iodepth=p["qd"], size=str(size)), progress=tracker)
        r = d.run(Job(rw="read", bs=str(bs), iodepth=p["qd"], size=str(size)), progress=tracker)
        rows.append({"bs_bytes": bs, "write_mb_per_s": w.summary["write"]["mb_per_s"], "read_mb_per_s": r.summary["read"]["mb_per_s"]})
    table = pd.DataFrame(rows)
    return [Outcome("transfer-size", label, "", {"read_mb_per_s_max": float(table.read_mb_per_s.max()), "write_mb_per_s_max": float(table.write_mb_per_s.max())},
                    {"curves": table}, time.perf_counter() - t0)]


def _pass(d: Drive, positions: int, bs: int, qd: int, tracker: Tracker, name: str) -> pd.DataFrame:
    """A sequential write pass over the whole drive, MB/s in each of `positions` slices."""
    import pandas as pd

    whole = _round_down(d.user_bytes, bs)
    chunk = _round_down(whole // positions, bs)
    rows = []
    for k in range(positions):
        r = d.run(Job(rw="write", bs=str(bs), iodepth=qd, offset=str(k * chunk), size=str(chunk)))
        tracker.update(0, 0, (k + 1) / positions)
        rows.append({"pass": name, "position_pct": 100 * (k + 0.5) / positions, "mb_per_s": r.summary["write"]["mb_per_s"]})
    return pd.DataFrame(rows)


def trim(source: str | DriveText, p: dict, tracker: Tracker, seed: int = 0) -> list[Outcome]:
    """TRIM validation: fresh sequential pass, sustained random writes, a degraded pass, a
    second pass; then again from secure erase, random writes, TRIM of the whole drive and the
    pass after TRIM. MB/s along the LBA span for each pass."""
    import pandas as pd

    label = drive_label(source)
    t0 = time.perf_counter()
    bs = parse_size(p["bs"], "bs")
    d = _new(source, seed)
    passes = []
    tracker.step("fresh pass")
    d.secure_erase()
    passes.append(_pass(d, p["positions"], bs, p["qd"], tracker, "fresh"))
    tracker.step("random writes")
    d.run(Job(rw="randwrite", bs="4k", iodepth=32, runtime_s=p["random_s"], time_based=True), progress=tracker)
    tracker.step("degraded pass")
    passes.append(_pass(d, p["positions"], bs, p["qd"], tracker, "degraded (after random writes)"))
    tracker.step("second pass")
    passes.append(_pass(d, p["positions"], bs, p["qd"], tracker, "second pass"))
    tracker.step("random writes, then TRIM")
    d.secure_erase()
    d.fill()
    d.run(Job(rw="randwrite", bs="4k", iodepth=32, runtime_s=p["random_s"], time_based=True), progress=tracker)
    unit = d.geometry["mapping_unit_bytes"]
    whole_units = _round_down(d.user_bytes, unit)
    d.run(Job(rw="trim", bs=str(min(whole_units, 2 * GIB)), iodepth=1, size=str(_round_down(whole_units, min(whole_units, 2 * GIB)))))
    tracker.step("pass after TRIM")
    passes.append(_pass(d, p["positions"], bs, p["qd"], tracker, "after TRIM"))
    table = pd.concat(passes, ignore_index=True)
    means = table.groupby("pass", sort=False)["mb_per_s"].mean()
    return [Outcome("trim", label, "", {f"{k} MB/s": float(v) for k, v in means.items()}, {"passes": table}, time.perf_counter() - t0)]


QD_WORKLOADS = (
    ("4K random write", dict(rw="randwrite", bs="4k"), True),
    ("4K random read", dict(rw="randread", bs="4k"), False),
    ("4K random 70/30 read/write", dict(rw="randrw", bs="4k", rwmixread=70), True),
    ("128K sequential write", dict(rw="write", bs="128k"), True),
    ("128K sequential read", dict(rw="read", bs="128k"), False),
)


def qd_scaling(source: str | DriveText, p: dict, tracker: Tracker, seed: int = 0) -> list[Outcome]:
    """Enterprise steady state: sequential fill, random writes at QD32 to steady state, then,
    without rest, each workload at every queue depth; a top-up of random writes before each
    write workload (reads follow the write test before them). Full LBA span."""
    import pandas as pd

    label = drive_label(source)
    t0 = time.perf_counter()
    d = _new(source, seed)
    tracker.step("precondition")
    d.secure_erase()
    d.fill()
    # Steady state as methodology.md asks: `steady_drive_writes` drive writes of 4 KiB random
    # writes applied untimed (the FTL state a timed run reaches: collection decides on the
    # writes, not on time), then `precondition_s` timed so the queues and buffer settle too.
    if p["steady_drive_writes"]:
        d.random_writes(p["steady_drive_writes"])
    d.run(Job(rw="randwrite", bs="4k", iodepth=32, runtime_s=p["precondition_s"], time_based=True), progress=tracker)
    rows = []
    first = True
    for name, job, writes in QD_WORKLOADS:
        if writes and not first:
            tracker.step(f"top-up before {name}")
            d.run(Job(rw="randwrite", bs="4k", iodepth=32, runtime_s=p["topup_s"], time_based=True), progress=tracker)
        first = False
        for qd in p["qds"]:
            tracker.step(f"{name} QD{qd}")
            r = d.run(Job(iodepth=qd, runtime_s=p["step_s"], time_based=True, **job), progress=tracker)
            s = r.summary
            row = {"workload": name, "qd": qd, "iops": s["read"]["iops"] + s["write"]["iops"],
                   "mb_per_s": s["read"]["mb_per_s"] + s["write"]["mb_per_s"],
                   "latency_us_mean": _mean_latency(s)}
            # Each direction's latency percentiles at this step (NaN where it has no IO).
            for op in ("read", "write"):
                for pct in ("p50", "p99", "p99_9"):
                    row[f"{op}_latency_us_{pct}"] = s[op][f"latency_us_{pct}"] if s[op]["ios"] else float("nan")
            rows.append(row)
    table = pd.DataFrame(rows)
    return [Outcome("qd-scaling", label, "", qd_summary(table), {"curves": table}, time.perf_counter() - t0)]


def qd_summary(table) -> dict:
    """qd-scaling's figures: each workload's IOPS at QD1 and QD32 (of a model or through fio)."""
    return {f"{w} QD{q} (IOPS)": float(v) for w, q, v in table[table.qd.isin([1, 32])][["workload", "qd", "iops"]].itertuples(index=False)}


def _mean_latency(s: dict) -> float:
    n = s["read"]["ios"] + s["write"]["ios"]
    if n == 0:
        return 0.0
    return (s["read"]["latency_us_mean"] * s["read"]["ios"] + s["write"]["latency_us_mean"] * s["write"]["ios"]) / n


# JESD219's enterprise endurance payload mix (Tom's Hardware, "SSD Endurance", Seagate
# sponsored article; fio's examples/jesd219.fio): size/percent of IOs.
JESD219_BSSPLIT = "512/4:1024/1:1536/1:2048/1:2560/1:3072/1:3584/1:4k/67:8k/10:16k/7:32k/3:64k/3"


def _bssplit(text: str) -> list[tuple[int, int]]:
    from ..job import parse_size
    return [(parse_size(size, "bssplit"), int(pct)) for size, pct in (part.split("/") for part in text.split(":"))]


def endurance(source: str | DriveText, p: dict, tracker: Tracker, seed: int = 0) -> list[Outcome]:
    """TBW = user capacity x rated P/E cycles / (WAF x WLF), with WAF and the wear-levelling
    factor WLF (most-cycled block over the mean) measured under the vendors' rating workload
    (client: random writes of 4K/64K/128K in a 50/40/10 mix over 90% of the drive; enterprise:
    4 KiB random writes over the whole drive). The workload runs on a replica with the drive's
    per-die geometry, NAND, FTL policy and over-provisioning, but `replica_dies` dies, long enough
    for `cycles` mean P/E cycles. `workload="jesd219"`: JEDEC's enterprise endurance workload
    instead (JESD219; its client workload is a recorded trace JEDEC distributes, not modelled
    here)."""
    import tomllib

    import numpy as np
    import pandas as pd

    label = drive_label(source)
    t0 = time.perf_counter()
    text, src = config_text(source)
    cfg = tomllib.loads(text)
    if not cfg["nand"].get("pe_cycles_rated"):
        raise SsdlabError(f"{label}: endurance needs nand.pe_cycles_rated in the drive file")
    dies = cfg["nand"]["dies"]
    replica_dies = min(p["replica_dies"], dies)
    scale = replica_dies / dies
    cfg["nand"]["dies"] = replica_dies
    cfg["nand"]["channels"] = min(cfg["nand"]["channels"], replica_dies)
    cfg["ftl"]["user_capacity_bytes"] = int(cfg["ftl"]["user_capacity_bytes"] * scale) // 4096 * 4096
    d = Drive(dump_toml(cfg), f"{label} replica", seed)
    ent = cfg.get("datasheet", {}).get("segment") == "enterprise"
    tracker.step("fill")
    d.secure_erase()
    d.fill()
    mean_io_units = 1 if ent else (0.5 * 1 + 0.4 * 16 + 0.1 * 32)
    if p["workload"] == "jesd219":
        job = dict(rw="randrw", rwmixread=40, bssplit=JESD219_BSSPLIT, blockalign="4k",
                   random_distribution="zoned:50/5:30/15:20/80")
        workload = ("JEDEC JESD219 enterprise endurance workload (fio's examples/jesd219.fio: 40% reads, "
                    "512 B-64 KiB sizes, 50% of IOs to the first 5% of the LBAs, 30% to the next 15%)")
        # Mapping units a write touches (a write under 4 KiB still programs a whole unit), x
        # the 60% of IOs that write.
        mean_io_units = 0.6 * sum(max(1, b // 4096) * pct / 100 for b, pct in _bssplit(JESD219_BSSPLIT))
    elif ent:
        job = dict(rw="randwrite", bs="4k", size="100%")
        workload = "4 KiB random writes over the whole drive (enterprise rating workload)"
    else:
        job = dict(rw="randwrite", bssplit="4k/50:64k/40:128k/10", size="90%")
        workload = "random writes 4K/64K/128K = 50/40/10% over 90% of the drive (client rating mix, without its 25% sequential part)"
    # Warm up to steady state (2 drive writes), then measure until the mean erase count has
    # grown by `cycles`.
    tracker.step("warm-up")
    user_units = d.geometry["logical_units"]
    d.run(Job(name="warm-up", number_ios=int(2 * user_units / mean_io_units), iodepth=32, **job), progress=tracker)
    e0 = d.erase_counts().astype(np.float64)
    tracker.step("measure")
    # Run in chunks until the mean erase count has grown by `cycles`; WAF over all chunks.
    per_cycle_ios = len(e0) * d.geometry["units_per_block"] / mean_io_units / 2
    pages = host = 0.0
    e1 = e0
    for _chunk in range(1000):
        r = d.run(Job(name="measure", number_ios=int(per_cycle_ios) + 1000, iodepth=32, **job))
        units = r.summary["host_units_written"]
        pages += r.summary["write_amplification"] * units
        host += units
        e1 = d.erase_counts().astype(np.float64)
        grown = float((e1 - e0).mean())
        tracker.update(0, 0, min(grown / p["cycles"], 1.0))
        if grown >= p["cycles"]:
            break
    waf = pages / host
    used = e1 - e0
    cycled = e1[e1 > 0]  # blocks kept in reserve never cycle
    wlf = float(cycled.max() / cycled.mean()) if len(cycled) else float("nan")
    pe = cfg["nand"]["pe_cycles_rated"]
    user_bytes_full = int(cfg["ftl"]["user_capacity_bytes"] / scale)
    tbw = user_bytes_full * pe / (waf * wlf) / 1e12
    rated = cfg.get("datasheet", {}).get("endurance_tbw")
    summary = {
        "workload": workload, "write_amplification": waf, "wear_leveling_factor": wlf,
        "mean_pe_cycles_measured": float(used.mean()), "mean_pe_cycles_total": float(e1.mean()), "pe_cycles_rated": pe,
        "projected_tbw": tbw, "rated_tbw": rated,
        "replica": f"{replica_dies} of {dies} dies",
    }
    hist = pd.DataFrame({"erase_count": e1.astype(np.int64)}).value_counts().rename("blocks").reset_index().sort_values("erase_count")
    return [Outcome("endurance", label, "", summary, {"tbw": pd.DataFrame([{"drive": label, "projected_tbw": tbw, "rated_tbw": rated}]),
                                                     "erase_counts": hist}, time.perf_counter() - t0)]


# A trace file given to the storage bench has no depth of its own in an iolog: its host queue
# is bounded at SATA NCQ's 32 commands (ASSUMED: the most a SATA host can have in the drive).
STORAGE_BENCH_FILE_QD = 32


def storage_bench(source: str | DriveText, p: dict, tracker: Tracker, seed: int = 0) -> list[Outcome]:
    """Trace replay, idle removed (afap): average data rate overall/read/write, busy time,
    mean service time and its standard deviation, on look-alikes of the reviews' client traces
    (ssdlab.synth) and on any trace given. The application's IO waits on the drive, as the
    reviews' traces were recorded (methodology.md section 7: "their original queue depth
    behaviour"): the host has at most the trace's own depth outstanding (a look-alike's burst,
    STORAGE_BENCH_FILE_QD for a file), so a drive that stalls meets a bounded queue instead
    of a backlog that grows for as long as it stalls (issue 73 item 4)."""
    import tempfile

    import pandas as pd

    from ..synth import burst_size, write_fio_iolog
    label = drive_label(source)
    t0 = time.perf_counter()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        items = []
        for name in p["traces"]:
            if Path(name).exists():
                items.append((Path(name).name, Path(name)))
            else:
                items.append((name, None))
        for name, path in items:
            tracker.step(name)
            d = _new(source, seed)
            d.secure_erase()
            d.fill()
            if path is None:
                path = Path(tmp) / f"{name}.iolog"
                write_fio_iolog(path, name, fraction=p["fraction"], span_bytes=min(d.user_bytes, 128 * 10**9) // 4096 * 4096, seed=seed)
                qd = burst_size(name)
            else:
                qd = STORAGE_BENCH_FILE_QD
            r = d.replay(path, "afap", qd=qd, wrap=True)
            for cls in ("all", "read", "write"):
                c = r.summary[cls]
                rows.append({"trace": name, "class": cls, "requests": c["ios"], "data_rate_mb_per_s": c["data_rate_mb_per_s"],
                             "busy_s": c["busy_s"], "service_us_mean": c["latency_us_mean"], "service_us_stddev": c["latency_us_stddev"],
                             "host_qd_max": qd})
    table = pd.DataFrame(rows)
    summary = {f"{t} MB/s": float(v) for t, v in table[table["class"] == "all"][["trace", "data_rate_mb_per_s"]].itertuples(index=False)}
    return [Outcome("storage-bench", label, "", summary, {"results": table}, time.perf_counter() - t0)]


POWER_IDLE_STATES = (("idle, no link power management", "none"),
                     ("idle, HIPM+DIPM", "hipm+dipm"),
                     ("idle, DevSleep", "devsleep"))


def idle_states(cfg: dict) -> list[tuple[str, str]]:
    """The idle states the power procedure measures on a drive (label, link policy): SATA's link
    power states only on a SATA drive, DevSleep named as unsupported where the drive stays in
    Slumber (its DevSleep power is its Slumber power); a PCIe drive has its idle alone, its link
    power states (ASPM) not being modelled (issue 73 item 3)."""
    if cfg.get("host", {}).get("interface", "sata") != "sata":
        return [("idle (PCIe: link power states not modelled)", "none")]
    pw = cfg.get("power", {})
    states = list(POWER_IDLE_STATES)
    if pw.get("idle_devsleep_w") is not None and pw.get("idle_devsleep_w") == pw.get("idle_slumber_w"):
        states[2] = ("idle, DevSleep asserted (not supported: stays in Slumber)", "devsleep")
    return states


def power(source: str | DriveText, p: dict, tracker: Tracker, seed: int = 0) -> list[Outcome]:
    """Drive power (methodology.md section 8): idle without and with link power management
    (HIPM+DIPM, and DevSleep where the host asserts it), then average power during 128 KiB
    sequential writes and during 4 KiB random writes at QD32 on a full drive, in watts."""
    import pandas as pd

    label = drive_label(source)
    t0 = time.perf_counter()
    d = _new(source, seed)
    if d.energy_j() is None:
        # Reported as such (a review of several drives goes on): no figure is made up.
        note = "no power model (the preset has no [power] section; the SATA presets have one)"
        return [Outcome("power", label, "", {"power model": note},
                        {"results": pd.DataFrame({"state": [], "watts": []})}, time.perf_counter() - t0)]
    rows = []
    for name, policy in idle_states(d.config):
        tracker.step(name)
        d.secure_erase()
        rows.append({"state": name, "watts": d.idle_power_w(policy, p["idle_s"])})
    tracker.step("sequential write")
    d.secure_erase()
    whole = _round_down(d.user_bytes, 128 * KIB)
    r = d.run(Job(rw="write", bs="128k", iodepth=32, size=str(whole), runtime_s=p["write_s"], time_based=True), progress=tracker)
    rows.append({"state": "128K sequential write QD32", "watts": r.summary["power"]["average_w"]})
    tracker.step("random write")
    d.secure_erase()
    d.fill()
    r = d.run(Job(rw="randwrite", bs="4k", iodepth=32, runtime_s=p["write_s"], time_based=True), progress=tracker)
    rows.append({"state": "4K random write QD32", "watts": r.summary["power"]["average_w"]})
    table = pd.DataFrame(rows)
    return [Outcome("power", label, "", {f"{r['state']} (W)": r["watts"] for r in rows}, {"results": table}, time.perf_counter() - t0)]
