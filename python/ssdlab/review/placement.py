"""The placement procedures of methodology.md section 13 on a modelled drive: a flash cache laid
out as CacheLib lays it on an FDP drive (Allison et al., "Towards Efficient Flash Caches with
Emerging NVMe Flexible Data Placement SSDs", EuroSys '25), with the device's write
amplification over time (the statistics log sampled as the paper samples it)."""

from __future__ import annotations

import time

from ..configs import config_text
from ..drive import DriveText
from ..job import Job
from .procedures import Outcome, Tracker, _new, drive_label

REGION = 16 << 20  # the large-object region's unit: CacheLib's 16 MiB regions (EuroSys '25, 2.2)
BUCKET = 4096  # the small-object region's bucket: one 4 KiB page rewritten per insertion


def _down(v: float, unit: int) -> int:
    return int(v) // unit * unit


def flash_cache(source: str | DriveText, p: dict, tracker: Tracker, seed: int = 0) -> list[Outcome]:
    """methodology.md 13, Flash cache: CacheLib's layout on an FDP drive (the drive's own
    `[placement]`, or the default one: Samsung's PM9D3). Of the drive's LBAs, `utilisation`%
    hold the cache and the rest stays trimmed; of the cache, `soc_pct`% is the small-object
    region (uniform random 4 KiB bucket rewrites) and the rest the large-object region (a
    circular log of 16 MiB regions written sequentially), both filled first. Then
    `drive_writes` of the cache's size are written in `samples` rounds, `soc_write_share` of
    the bytes to the small objects, both regions at once, through one placement handle or two
    (the small objects on 0, the log on 1). After each round the statistics log gives the
    device's write amplification over that round (media / host bytes written), the drive's
    and each handle's. Reads are not run (the paper's read latency needs its trace's lookups)."""
    import pandas as pd

    label = drive_label(source)
    # The drive's own [placement], or the default one (said once, not at every run).
    text, name = config_text(source, placement="fdp")
    source = DriveText(text, name)
    outs = []
    for used_pct in p["utilisation"]:
        for soc_pct in p["soc_pct"]:
            for handles in p["handles"]:
                variant = f"{used_pct}% used, small objects {soc_pct}%, {handles} handle{'s' if handles > 1 else ''}"
                tracker.step(variant)
                t0 = time.perf_counter()
                d = _new(source, seed)
                d.secure_erase()
                used = _down(d.user_bytes * used_pct / 100, REGION)
                soc = max(_down(used * soc_pct / 100, REGION), REGION)
                log_len = used - soc
                if log_len < 2 * REGION:
                    raise ValueError(f"{variant}: the large-object region ({log_len} bytes) is under two 16 MiB regions; "
                                     "accepted: a larger utilisation or a smaller soc_pct")
                d.fill(used)  # both regions hold data; the LBAs past them stay trimmed
                per_round = p["drive_writes"] * used / p["samples"]
                soc_round = max(_down(per_round * p["soc_write_share"] / 100, BUCKET), BUCKET)
                log_round = max(_down(per_round * (1 - p["soc_write_share"] / 100), REGION), REGION)
                log_pid = "1" if handles > 1 else "0"
                head = 0
                before = d.placement()
                rows = []
                host0 = before["statistics"]["host_bytes_written"]
                for r in range(p["samples"]):
                    jobs = [Job(name="small objects", rw="randwrite", bs="4k", iodepth=p["qd"], size=str(soc),
                                io_size=str(soc_round), fdp=True, plids="0")]
                    wait: list[int | None] = [None]
                    # The log goes on from its head and wraps at the region's end.
                    left, at = log_round, head
                    while left > 0:
                        n = min(left, log_len - at)
                        jobs.append(Job(name="large objects", rw="write", bs="16m", iodepth=p["qd"],
                                        offset=str(soc + at), size=str(n), fdp=True, plids=log_pid))
                        wait.append(None if len(jobs) == 2 else len(jobs) - 2)
                        left -= n
                        at = (at + n) % log_len
                    head = at
                    res = d.run_together(jobs, wait_for=wait, progress=tracker)
                    after = d.placement()
                    s0, s1 = before["statistics"], after["statistics"]
                    host = s1["host_bytes_written"] - s0["host_bytes_written"]
                    row = {"round": r + 1, "time_s": d.now_s,
                           "cache_writes": (s1["host_bytes_written"] - host0) / used,
                           "waf": (s1["media_bytes_written"] - s0["media_bytes_written"]) / host if host else 0.0,
                           "small_write_p99_us": res[0].summary["write"]["latency_us_p99"],
                           "large_write_p99_us": max(x.summary["write"]["latency_us_p99"] for x in res[1:])}
                    for h in range(handles):
                        hb, ha = before["handles"][h], after["handles"][h]
                        hh = ha["host_bytes_written"] - hb["host_bytes_written"]
                        row[f"handle{h}_waf"] = (ha["media_bytes_written"] - hb["media_bytes_written"]) / hh if hh else 0.0
                    rows.append(row)
                    before = after
                table = pd.DataFrame(rows)
                last = table.iloc[len(table) // 2:]
                summary = {
                    "utilisation_pct": used_pct, "soc_pct": soc_pct, "handles": handles,
                    "waf_steady": float(last.waf.mean()), "waf_first_round": float(table.waf.iloc[0]),
                    "small_write_p99_us_steady": float(last.small_write_p99_us.mean()),
                    "cache_writes": float(table.cache_writes.iloc[-1]),
                }
                if handles > 1:
                    summary["small_objects_waf_steady"] = float(last.handle0_waf.mean())
                    model = small_objects_model(d, soc, log_len)
                    if model is not None:
                        summary["small_objects_waf_model"] = model
                outs.append(Outcome("flash-cache", label, variant, summary, {"waf": table}, time.perf_counter() - t0))
    return outs


def small_objects_model(d, soc: int, log_len: int) -> float | None:
    """The EuroSys '25 appendix model of the small-object region on its own handle: uniform
    random writes under greedy collection (the mean field, `theory::greedy_waf`) at the region's
    own share of the space, alpha = (the drive's data space - the log's data) / the region's
    data (the log's blocks hold only valid data or none; the trimmed LBAs are spare). None for a
    drive whose collection is not greedy."""
    from .. import _ssdlab

    if d.config["ftl"].get("gc_policy", "greedy") != "greedy":
        return None
    g = d.describe()
    space = g["user_gb"] * 1e9 * (1 + g["gc_spare_of_user_pct"] / 100)
    alpha = (space - log_len) / soc
    n = d.config["nand"]
    units = n["pages_per_block"] * n["planes_per_die"] * n["page_size_bytes"] // d.config["ftl"]["mapping_unit_bytes"]
    if alpha <= 1:
        return None
    waf = _ssdlab.theory_waf("greedy", alpha, units, 0)
    # Past the mean field's range (so much space that victims hold nothing valid): 1.
    return waf if waf == waf and waf != float("inf") else 1.0


def zns_vs_conventional(source: str | DriveText, p: dict, tracker: Tracker, seed: int = 0) -> list[Outcome]:
    """methodology.md 13, ZNS against conventional (Bjorling et al., ATC '21): the same media as
    a zoned drive and as conventional drives at `spares`% over-provisioning (of the drive's data
    space: the ZN540's hardware shipped at 7% and 28%). Each is written `overwrites` times its
    capacity by `threads` writers of `bs` random writes at QD1 each (on the zoned drive, fio's
    zonemode=zbd: each write at a zone's write pointer, a full zone picked again reset by the
    host), the conventional ones after a sequential fill; reported: MB/s and the device's write
    amplification over the last pass. The second set-up of the paper (a write rate limit with
    4 KiB reads beside it) needs rate-limited jobs, which are not modelled yet."""
    import pandas as pd
    import tomllib

    from ..configs import dump_toml

    label = drive_label(source)
    text, name = config_text(source)
    cfg = tomllib.loads(text)
    cfg.pop("placement", None)
    data_bytes = _new(DriveText(dump_toml(cfg), name), seed).describe()["usable_gib"] * 2**30
    t0 = time.perf_counter()
    rows = []

    own = cfg["ftl"]["user_capacity_bytes"]

    def drive(spare: float, placement: str | None = None):
        """A new drive of this media at `spare`% over-provisioning, or at the drive's own where
        that is less (its collection reserve needs it): the drive and the spare it has."""
        user = min(own, _down(data_bytes / (1 + spare / 100), 1 << 20))
        c = dict(cfg, ftl=dict(cfg["ftl"], user_capacity_bytes=user))
        return _new(DriveText(dump_toml(c), name), seed, placement=placement), 100 * (data_bytes / user - 1)

    for spare in [None, *p["spares"]]:
        if spare is None:
            d, _ = drive(min(p["spares"]), f"zns:{p['zone_size']}:{p['max_open_zones']}")
            variant = "zoned"
            span = d.zones()["zones"] * d.zones()["capacity_bytes"]
            job = dict(zonemode="zbd", zonesize=p["zone_size"], max_open_zones=p["max_open_zones"])
        else:
            d, got = drive(spare)
            variant = f"conventional, {spare:g}% spare" + (f" ({got:.1f}%: the drive's own)" if got - spare > 0.05 else "")
            d.fill()
            span = d.user_bytes
            job = {}
        tracker.step(variant)
        last = None
        for k in range(p["overwrites"]):
            last = d.run(Job(name=f"pass {k + 1}", rw="randwrite", bs=p["bs"], iodepth=1, numjobs=p["threads"],
                             io_size=str(_down(span / p["threads"], 1 << 20)), **job), progress=tracker)
        s = last.summary
        rows.append({"test": variant, "mb_per_s": s["write"]["mb_per_s"], "write_amplification": s["write_amplification"],
                     "capacity_gb": span / 1e9, "gc_units_copied": s["gc_units_copied"]})
    table = pd.DataFrame(rows)
    summary = {f"{r['test']} (MB/s)": r["mb_per_s"] for r in rows}
    summary.update({f"{r['test']} WAF": r["write_amplification"] for r in rows})
    return [Outcome("zns-vs-conventional", label, "", summary, {"results": table}, time.perf_counter() - t0)]
