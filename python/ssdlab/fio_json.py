"""Results in fio's JSON output format (`--output-format json`), so fio's tooling and the
scripts users already have for fio read them unchanged.

The layout follows fio 3.x's `--output-format=json` (fio's stat.c `show_thread_status_json`):
top-level "fio version", "timestamp", "global options", "jobs" and "disk_util"; per job
"jobname", "groupid", "error", "job options", then "read", "write" and "trim", each with
io_bytes, io_kbytes, bw_bytes, bw (KiB/s), iops, runtime (ms), total_ios, slat_ns, clat_ns
(with "percentile" at fio's default list), lat_ns, and the per-interval bw_*/iops_* statistics.
A simulated command has no submission latency: slat_ns is zero and lat_ns equals clat_ns.
Per job also fio's `iodepth_level` (ssdlab keeps exactly `iodepth` commands in flight per
stream), `iodepth_submit`/`iodepth_complete` (one command per submission, as fio's default
iodepth_batch), the `latency_ns`/`latency_us`/`latency_ms` buckets (percent of completions by
total latency, from the latency histogram), fio's latency-target keys (unused), and
`steadystate` in fio's layout. "timestamp" is the wall-clock time the document was written
(SOURCE_DATE_EPOCH when set, for byte-identical files); "job options" and "global options" are
the options as given in the job file or on the command line."""

from __future__ import annotations

import math
import os
import time

from . import __version__
from ._job_table import ROWS

# Job fields -> fio option names where they differ (a field's first fio spelling, from the table).
_OPTION_NAMES = {row.name: row.spellings[0][0] for row in ROWS if row.spellings and row.spellings[0][0] != row.name}


def _lat(o: dict, percentiles: bool) -> dict:
    ns = 1e3
    n = o["ios"]
    lat = {"min": round(o["latency_us_min"] * ns) if n else 0, "max": round(o["latency_us_max"] * ns) if n else 0,
           "mean": o["latency_us_mean"] * ns if n else 0.0, "stddev": o["latency_us_stddev"] * ns if n else 0.0, "N": n}
    if percentiles:
        lat["percentile"] = dict(sorted(o.get("latency_ns_percentiles", {}).items(), key=lambda kv: float(kv[0])))
    return lat


def _samples(values) -> dict:
    v = [float(x) for x in values if x == x]
    if not v:
        return {"min": 0, "max": 0, "mean": 0.0, "dev": 0.0, "samples": 0}
    mean = sum(v) / len(v)
    dev = math.sqrt(sum((x - mean) ** 2 for x in v) / (len(v) - 1)) if len(v) > 1 else 0.0
    return {"min": min(v), "max": max(v), "mean": mean, "dev": dev, "samples": len(v)}


def _percentiles(bins: dict, wanted: list[float]) -> dict:
    """fio's percentile_list from a latency histogram (bucket midpoint ns -> completions): for
    each percentile, the first bucket at which that share of completions is reached."""
    total = sum(bins.values())
    out = {}
    for p in wanted:
        need, seen, value = total * p / 100.0, 0, 0
        for ns, n in sorted(bins.items()):
            seen += n
            value = ns
            if seen >= need:
                break
        out[f"{p:f}"] = value if total else 0
    return out


def _op(o: dict, elapsed_s: float, iops_series=None, mb_series=None, bins: dict | None = None,
        percentiles: list[float] | None = None, all_bins: dict | None = None) -> dict:
    bw_bytes = o["bytes"] / elapsed_s if elapsed_s > 0 else 0.0
    out = {
        "io_bytes": o["bytes"], "io_kbytes": o["bytes"] // 1024, "bw_bytes": round(bw_bytes),
        "bw": round(bw_bytes / 1024), "iops": o["iops"], "runtime": round(elapsed_s * 1000),
        "total_ios": o["ios"], "short_ios": 0, "drop_ios": 0,
        "slat_ns": {"min": 0, "max": 0, "mean": 0.0, "stddev": 0.0, "N": 0},
        "clat_ns": _lat(o, True), "lat_ns": _lat(o, False),
    }
    if percentiles:  # the job's percentile_list instead of fio's default list
        out["clat_ns"]["percentile"] = _percentiles(all_bins or {}, percentiles)
    if bins:  # json+, as fio writes it: only where there were completions
        out["clat_ns"]["bins"] = {str(k): v for k, v in sorted(bins.items())}
    bw = _samples([] if mb_series is None else [x * 1e6 / 1024 for x in mb_series])
    iops = _samples([] if iops_series is None else list(iops_series))
    out.update({"bw_min": round(bw["min"]), "bw_max": round(bw["max"]), "bw_agg": 100.0 if o["ios"] else 0.0,
                "bw_mean": bw["mean"], "bw_dev": bw["dev"], "bw_samples": bw["samples"],
                "iops_min": round(iops["min"]), "iops_max": round(iops["max"]), "iops_mean": iops["mean"],
                "iops_stddev": iops["dev"], "iops_samples": iops["samples"]})
    return out


# fio's latency buckets (stat.c): upper bounds in ns, us and ms; the last ms bucket is ">=2000".
_LAT_BOUNDS = (2, 4, 10, 20, 50, 100, 250, 500, 750, 1000)
_LAT_MS_BOUNDS = _LAT_BOUNDS + (2000,)


def _latency_buckets(bins: dict) -> dict:
    """fio's latency_ns/us/ms: percent of completions whose latency falls in each bucket
    (a bucket holds latencies from the previous bound up to, not including, its own)."""
    total = sum(bins.values())
    out = {"latency_ns": {str(b): 0.0 for b in _LAT_BOUNDS}, "latency_us": {str(b): 0.0 for b in _LAT_BOUNDS},
           "latency_ms": {**{str(b): 0.0 for b in _LAT_MS_BOUNDS}, ">=2000": 0.0}}
    if not total:
        return out
    for ns, n in bins.items():
        pct = 100.0 * n / total
        for key, scale, bounds in (("latency_ns", 1, _LAT_BOUNDS), ("latency_us", 1e3, _LAT_BOUNDS),
                                   ("latency_ms", 1e6, _LAT_MS_BOUNDS)):
            v = ns / scale
            if key != "latency_ms" and (v >= 1000 or (key == "latency_us" and ns < 1000)):
                continue  # counted in a coarser (or finer) unit
            if key == "latency_ms" and ns < 1_000_000:
                continue
            bound = next((b for b in bounds if v < b), None)
            out[key][str(bound) if bound is not None else ">=2000"] += pct
    return out


def _depth_bucket(d: int, buckets=(1, 2, 4, 8, 16, 32)) -> str:
    """fio's iodepth_level bucket for depth d: the largest bound at or below it; >=64 above 32."""
    return ">=64" if d >= 64 else str(max(b for b in buckets if b <= d))


def _latency_keys(lt: dict | None, depth: int) -> dict:
    """fio's latency-target keys: the depth found, the target (ns), percentile and window (us)."""
    if not lt:
        return {"latency_depth": depth, "latency_target": 0, "latency_percentile": 100.0, "latency_window": 0}
    return {"latency_depth": lt["depth"], "latency_target": round(lt["target_us"] * 1e3),
            "latency_percentile": lt["percentile"], "latency_window": round(lt["window_s"] * 1e6)}


def _steadystate(st: dict, series, job) -> dict:
    """fio's "steadystate": the criterion, the window it was judged on ("data": per-interval
    iops and bw over the last ss_dur), its mean, largest deviation and slope."""
    interval = float(series["time_s"].iloc[0]) if len(series) else 1.0
    dur = max(2, round((job.ss_dur_s if job is not None else 0) / interval)) if job is not None else 2
    end = len(series) if st.get("attained_at_s") is None else min(len(series), round(st["attained_at_s"] / interval))
    window = series.iloc[max(0, end - dur):end]
    iops = [int(round(float(a) + float(b) + float(c))) for a, b, c in
            zip(window.get("read_iops", [0] * len(window)), window.get("write_iops", [0] * len(window)),
                window.get("trim_iops", [0] * len(window)))]
    bw = [int(round((float(a) + float(b)) * 1e6)) for a, b in
          zip(window.get("read_mb_per_s", [0] * len(window)), window.get("write_mb_per_s", [0] * len(window)))]
    metric = st["criterion"].split(":")[0]
    values = bw if metric.startswith("bw") else iops
    mean = sum(values) / len(values) if values else 0.0
    n = len(values)
    slope = 0.0
    if n > 1:
        xm = (n - 1) / 2
        den = sum((i - xm) ** 2 for i in range(n))
        slope = sum((i - xm) * (v - mean) for i, v in enumerate(values)) / den
    limit = st["criterion"].split(":", 1)[1] if ":" in st["criterion"] else ""
    return {"ss": f"{metric}:{float(limit.rstrip('%') or 0):f}%", "duration": round(dur * interval),
            "attained": int(st["attained"]), "criterion": f"{st['value_pct']:f}%",
            "max_deviation": max((abs(v - mean) for v in values), default=0.0), "slope": slope,
            "data": {"bw_mean": round(sum(bw) / len(bw)) if bw else 0, "iops_mean": round(sum(iops) / len(iops)) if iops else 0,
                     "iops": iops, "bw": bw},
            # When ssdlab stopped the job (fio does not say): simulated seconds into the run.
            "ssdlab_attained_at_s": st["attained_at_s"]}


def fio_job(result, job=None, drive=None, plus: bool = False, groupid: int = 0) -> dict:
    """One job of fio's JSON from a `Result` (and the `Job` that produced it); `plus`: json+
    (clat_ns carries its histogram as "bins")."""
    s = result.summary
    elapsed = s["elapsed_s"]
    series = result.series
    options = {}
    if job is not None and job.origin is not None:
        options = dict(job.origin.given)
    elif job is not None:
        for k, v in job.model_dict().items():
            if v is None or k == "name":
                continue
            if k == "log_interval_s":
                v = round(v * 1000)  # fio's log_avg_msec
            elif isinstance(v, bool):
                v = int(v)
            options[_OPTION_NAMES.get(k, k)] = f"{v:g}" if isinstance(v, float) else str(v)
    if drive is not None:
        options["filename"] = f"ssdlab:{drive}"
    col = {op: (series.get(f"{op}_iops"), series.get(f"{op}_mb_per_s")) for op in ("read", "write")}
    given = job.origin.options() if job is not None and job.origin is not None else {}
    wanted = None
    if given.get("percentile_list"):
        try:
            wanted = [float(x) for x in given["percentile_list"].split(":") if x.strip()]
        except ValueError:
            wanted = None
    pct = {op: dict(percentiles=wanted, all_bins=result.bins.get(op, {})) for op in ("read", "write", "trim")}
    all_bins: dict = {}
    for op_bins in result.bins.values():
        for k, v in op_bins.items():
            all_bins[k] = all_bins.get(k, 0) + v
    depth = job.iodepth if job is not None else 1
    levels = {b: 0.0 for b in ("1", "2", "4", "8", "16", "32", ">=64")}
    if s["read"]["ios"] + s["write"]["ios"] + s["trim"]["ios"]:
        levels[_depth_bucket(depth)] = 100.0
    batches = {b: 0.0 for b in ("0", "4", "8", "16", "32", "64", ">=64")}
    submit = dict(batches, **{"4": 100.0}) if any(levels.values()) else batches
    return {
        "jobname": s.get("name", "job"), "groupid": groupid, "error": 5 if s.get("error") else 0, "eta": 0, "elapsed": round(elapsed),
        "job options": options,
        "read": _op(s["read"], elapsed, *col["read"], bins=result.bins.get("read", {}) if plus else None, **pct["read"]),
        "write": _op(s["write"], elapsed, *col["write"], bins=result.bins.get("write", {}) if plus else None,
                     **pct["write"]),
        "trim": _op(s["trim"], elapsed, series.get("trim_iops"), None,
                    bins=result.bins.get("trim", {}) if plus else None, **pct["trim"]),
        "sync": {"total_ios": 0, "lat_ns": {"min": 0, "max": 0, "mean": 0.0, "stddev": 0.0, "N": 0}},
        "job_runtime": round(elapsed * 1000), "usr_cpu": 0.0, "sys_cpu": 0.0, "ctx": 0, "majf": 0, "minf": 0,
        "iodepth_level": levels, "iodepth_submit": submit, "iodepth_complete": dict(submit),
        **_latency_buckets(all_bins),
        **_latency_keys(s.get("latency_target"), depth),
        **({"steadystate": _steadystate(st, series, job)} if (st := s.get("steady_state")) else {}),
        # What only a simulation knows, under its own key (fio's readers ignore unknown keys).
        "ssdlab": {k: s[k] for k in ("write_amplification", "gc_units_copied", "blocks_erased", "faults", "run",
                                     "placement", "zones")
                   if k in s},
    }


def fio_replay_job(replay, trace: str, drive: str | None = None, plus: bool = False) -> dict:
    """A replay (`ReplayResult`) as one fio job: reads and writes with their service times;
    the storage-bench figures (busy time, data rate) under "ssdlab"."""
    from types import SimpleNamespace
    s = replay.summary
    none = {"ios": 0, "bytes": 0, "iops": 0.0, "latency_us_mean": 0.0, "latency_us_stddev": 0.0,
            "latency_us_min": 0.0, "latency_us_max": 0.0, "latency_ns_percentiles": {}}
    job = fio_job(SimpleNamespace(summary={"name": f"replay {trace}", "elapsed_s": s["elapsed_s"], "read": s["read"],
                                           "write": s["write"], "trim": s.get("trim", none)},
                                  series=replay.series, bins=replay.bins), None, drive, plus)
    job["job options"].update({"read_iolog": str(trace), "replay_mode": s.get("mode", "")})
    job["ssdlab"] = {k: s[k] for k in ("requests", "elapsed_s", "trim_requests", "write_amplification", "trim_map_pages", "final_flush_s",
                                       "format", "mode", "notes", "faults", "run") if k in s}
    job["ssdlab"].update({f"{op}_{k}": s[op][k] for op in ("all", "read", "write", "trim")
                          for k in ("busy_s", "data_rate_mb_per_s") if k in s.get(op, {})})
    return job


def fio_output(jobs: list[dict], global_options: dict | None = None) -> dict:
    """The whole document around the jobs (`fio_job`); `global_options`: the job file's
    [global] section as given."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    now = float(epoch) if epoch and epoch.isdigit() else time.time()
    return {"fio version": f"ssdlab-{__version__}", "timestamp": int(now), "timestamp_ms": int(now * 1000),
            "time": time.strftime("%a %b %d %H:%M:%S %Y", time.localtime(now)),
            "global options": dict(global_options or {}), "jobs": jobs, "disk_util": []}
