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
    hold the cache (with `tenants` 2, two caches side by side, each on half of them) and the
    rest stays trimmed; of a cache, `soc_pct`% is the small-object region (uniform random 4 KiB
    bucket rewrites) and the rest the large-object region (a circular log of 16 MiB regions
    written sequentially), both filled first. Then `drive_writes` of the caches' size are
    written in `samples` rounds, `soc_write_share` of the bytes to the small objects, every
    region at once, all on placement handle 0 (`handles` 1) or each region on a handle of its
    own (2: a cache's small objects on 2t, its log on 2t + 1). After each round the statistics
    log gives the device's write amplification over that round (media / host bytes written),
    the drive's and each handle's. Reads are not run (the paper's read latency needs its
    trace's lookups)."""
    import pandas as pd

    label = drive_label(source)
    # The drive's own [placement], or the default one (said once, not at every run).
    text, name = config_text(source, placement="fdp")
    source = DriveText(text, name)
    outs = []
    tenants = p["tenants"]
    for used_pct in p["utilisation"]:
        for soc_pct in p["soc_pct"]:
            for handles in p["handles"]:
                variant = (f"{used_pct}% used, small objects {soc_pct}%, {handles} handle{'s' if handles > 1 else ''}"
                           + (f", {tenants} tenants" if tenants > 1 else ""))
                tracker.step(variant)
                t0 = time.perf_counter()
                d = _new(source, seed)
                d.secure_erase()
                space = _down(d.user_bytes * used_pct / 100 / tenants, REGION)
                soc = max(_down(space * soc_pct / 100, REGION), REGION)
                log_len = space - soc
                if log_len < 2 * REGION:
                    raise ValueError(f"{variant}: the large-object region ({log_len} bytes) is under two 16 MiB regions; "
                                     "accepted: a larger utilisation or a smaller soc_pct")
                used = space * tenants
                d.fill(used)  # every region holds data; the LBAs past them stay trimmed
                table = pd.DataFrame(_cache_rounds(d, p, tracker, space, soc, handles))
                last = table.iloc[len(table) // 2:]
                summary = {
                    "utilisation_pct": used_pct, "soc_pct": soc_pct, "handles": handles, "tenants": tenants,
                    "waf_steady": float(last.waf.mean()), "waf_first_round": float(table.waf.iloc[0]),
                    "small_write_p99_us_steady": float(last.small_write_p99_us.mean()),
                    "cache_writes": float(table.cache_writes.iloc[-1]),
                }
                if handles > 1:
                    soc_handles = [f"handle{2 * t}_waf" for t in range(tenants)]
                    summary["small_objects_waf_steady"] = float(last[soc_handles].mean(axis=1).mean())
                    model = small_objects_model(d, soc * tenants, log_len * tenants)
                    if model is not None:
                        summary["small_objects_waf_model"] = model
                outs.append(Outcome("flash-cache", label, variant, summary, {"waf": table}, time.perf_counter() - t0))
    return outs


def _cache_rounds(d, p: dict, tracker: Tracker, space: int, soc: int, handles: int) -> list[dict]:
    """`samples` rounds of the caches' writes on `d` (each cache `space` bytes from its own
    start, its small objects the first `soc` of them): a row per round, from the statistics log."""
    tenants = p["tenants"]
    log_len = space - soc
    per_round = p["drive_writes"] * space / p["samples"]
    soc_round = max(_down(per_round * p["soc_write_share"] / 100, BUCKET), BUCKET)
    log_round = max(_down(per_round * (1 - p["soc_write_share"] / 100), REGION), REGION)
    pids = [(str(2 * t), str(2 * t + 1)) if handles > 1 else ("0", "0") for t in range(tenants)]
    heads = [0] * tenants
    before = d.placement()
    host0 = before["statistics"]["host_bytes_written"]
    rows = []
    for r in range(p["samples"]):
        jobs, wait, small = [], [], []
        for t in range(tenants):
            base = t * space
            small.append(len(jobs))
            jobs.append(Job(name=f"small objects {t}", rw="randwrite", bs="4k", iodepth=p["qd"], offset=str(base),
                            size=str(soc), io_size=str(soc_round), fdp=True, plids=pids[t][0]))
            wait.append(None)
            # The log goes on from its head and wraps at the region's end.
            left, at, previous = log_round, heads[t], None
            while left > 0:
                n = min(left, log_len - at)
                jobs.append(Job(name=f"large objects {t}", rw="write", bs="16m", iodepth=p["qd"],
                                offset=str(base + soc + at), size=str(n), fdp=True, plids=pids[t][1]))
                wait.append(previous)
                previous = len(jobs) - 1
                left -= n
                at = (at + n) % log_len
            heads[t] = at
        res = d.run_together(jobs, wait_for=wait, progress=tracker)
        after = d.placement()
        s0, s1 = before["statistics"], after["statistics"]
        host = s1["host_bytes_written"] - s0["host_bytes_written"]
        row = {"round": r + 1, "time_s": d.now_s,
               "cache_writes": (s1["host_bytes_written"] - host0) / (space * tenants),
               "waf": (s1["media_bytes_written"] - s0["media_bytes_written"]) / host if host else 0.0,
               "small_write_p99_us": max(res[i].summary["write"]["latency_us_p99"] for i in small),
               "large_write_p99_us": max(x.summary["write"]["latency_us_p99"]
                                         for i, x in enumerate(res) if i not in small)}
        for h in range(2 * tenants if handles > 1 else 1):
            hb, ha = before["handles"][h], after["handles"][h]
            hh = ha["host_bytes_written"] - hb["host_bytes_written"]
            row[f"handle{h}_waf"] = (ha["media_bytes_written"] - hb["media_bytes_written"]) / hh if hh else 0.0
        rows.append(row)
        before = after
    return rows


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
    amplification over the last pass. Then the paper's second set-up on each (`_rates`): 64 KiB
    writes to 4 zones at rising target rates with 4 KiB random reads beside them."""
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

    rate_rows: list[dict] = []
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
        # The target rates are shares of what the zoned drive wrote in the first set-up (it runs first).
        rate_rows += _rates(d, p, tracker, variant, rows[0]["mb_per_s"], job)
    table = pd.DataFrame(rows)
    summary = {f"{r['test']} (MB/s)": r["mb_per_s"] for r in rows}
    summary.update({f"{r['test']} WAF": r["write_amplification"] for r in rows})
    rates = pd.DataFrame(rate_rows)
    for variant, g in (rates.groupby("test", sort=False) if len(rates) else []):
        held = g[g.sustained]
        summary[f"{variant}: highest write rate sustained with reads (MB/s)"] = float(held.target_mb_per_s.max()) if len(held) else 0.0
    return [Outcome("zns-vs-conventional", label, "", summary, {"results": table, "rates": rates}, time.perf_counter() - t0)]


def _rates(d, p: dict, tracker: Tracker, variant: str, base_mb_s: float, zoned: dict) -> list[dict]:
    """ATC '21's second set-up on drive `d` (after the first's passes): for each target rate
    (`rate_steps` x `base_mb_s`), a writer of 64 KiB random writes capped at it (fio's rate,
    submitted on schedule: io_submit_mode=offload, up to 4 in flight; on the zoned drive at
    most 4 zones open, job_max_open_zones) beside a reader of 4 KiB random reads at QD1, for
    `rate_window_s`: the write MB/s reached (sustained: within 5% of the target) and the
    reads' latency."""
    out = []
    window = p["rate_window_s"]
    for step in p["rate_steps"]:
        target = step * base_mb_s
        tracker.step(f"{variant}: writes at {target:.0f} MB/s with reads")
        if zoned:
            # The host finishes the zones it left open (their open and active resources), as
            # fio requires of a job with fewer zones of its own (job_max_open_zones).
            for z in d.zone_report():
                if z["state"] in ("implicitly-opened", "explicitly-opened", "closed"):
                    d.zone_manage(z["zone"], "finish")
        own = dict(zoned, job_max_open_zones=4) if zoned else {}
        w = Job(name="writer", rw="randwrite", bs="64k", iodepth=4, rate=str(int(target * 1e6)), io_submit_mode="offload",
                runtime_s=window, time_based=True, **own)
        r = Job(name="reader", rw="randread", bs="4k", iodepth=1, runtime_s=window, time_based=True, **zoned)
        ws, rs = (x.summary for x in d.run_together([w, r], progress=tracker))
        out.append({"test": variant, "target_mb_per_s": target, "write_mb_per_s": ws["write"]["mb_per_s"],
                    "sustained": ws["write"]["mb_per_s"] >= 0.95 * target, "read_iops": rs["read"]["iops"],
                    "read_p50_us": rs["read"]["latency_us_p50"], "read_p99_us": rs["read"]["latency_us_p99"],
                    "read_p99_9_us": rs["read"]["latency_us_p99_9"], "write_amplification": ws["write_amplification"]})
    return out
