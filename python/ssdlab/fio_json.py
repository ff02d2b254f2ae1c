"""Results in fio's JSON output format (`--output-format json`), so fio's tooling and the
scripts users already have for fio read them unchanged.

The layout follows fio 3.x's `--output-format=json` (fio's stat.c `show_thread_status_json`):
top-level "fio version", "timestamp", "global options", "jobs" and "disk_util"; per job
"jobname", "groupid", "error", "job options", then "read", "write" and "trim", each with
io_bytes, io_kbytes, bw_bytes, bw (KiB/s), iops, runtime (ms), total_ios, slat_ns, clat_ns
(with "percentile" at fio's default list), lat_ns, and the per-interval bw_*/iops_* statistics.
A simulated command has no submission latency: slat_ns is zero and lat_ns equals clat_ns.
The timestamps are zero (the run is simulated; the same seed gives the same file)."""

from __future__ import annotations

import math

from . import __version__

# Job fields -> fio option names (the Job dataclass follows fio's names otherwise).
_OPTION_NAMES = {"runtime_s": "runtime", "log_interval_s": "log_avg_msec", "ramp_time_s": "ramp_time",
                 "ss_dur_s": "ss_dur", "ss_ramp_s": "ss_ramp", "startdelay_s": "startdelay"}


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


def _op(o: dict, elapsed_s: float, iops_series=None, mb_series=None, bins: dict | None = None) -> dict:
    bw_bytes = o["bytes"] / elapsed_s if elapsed_s > 0 else 0.0
    out = {
        "io_bytes": o["bytes"], "io_kbytes": o["bytes"] // 1024, "bw_bytes": round(bw_bytes),
        "bw": round(bw_bytes / 1024), "iops": o["iops"], "runtime": round(elapsed_s * 1000),
        "total_ios": o["ios"], "short_ios": 0, "drop_ios": 0,
        "slat_ns": {"min": 0, "max": 0, "mean": 0.0, "stddev": 0.0, "N": 0},
        "clat_ns": _lat(o, True), "lat_ns": _lat(o, False),
    }
    if bins:  # json+, as fio writes it: only where there were completions
        out["clat_ns"]["bins"] = {str(k): v for k, v in sorted(bins.items())}
    bw = _samples([] if mb_series is None else [x * 1e6 / 1024 for x in mb_series])
    iops = _samples([] if iops_series is None else list(iops_series))
    out.update({"bw_min": round(bw["min"]), "bw_max": round(bw["max"]), "bw_agg": 100.0 if o["ios"] else 0.0,
                "bw_mean": bw["mean"], "bw_dev": bw["dev"], "bw_samples": bw["samples"],
                "iops_min": round(iops["min"]), "iops_max": round(iops["max"]), "iops_mean": iops["mean"],
                "iops_stddev": iops["dev"], "iops_samples": iops["samples"]})
    return out


def fio_job(result, job=None, drive=None, plus: bool = False, groupid: int = 0) -> dict:
    """One job of fio's JSON from a `Result` (and the `Job` that produced it); `plus`: json+
    (clat_ns carries its histogram as "bins")."""
    s = result.summary
    elapsed = s["elapsed_s"]
    series = result.series
    options = {}
    if job is not None:
        import dataclasses
        for k, v in dataclasses.asdict(job).items():
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
    return {
        "jobname": s.get("name", "job"), "groupid": groupid, "error": 0, "eta": 0, "elapsed": round(elapsed),
        "job options": options,
        "read": _op(s["read"], elapsed, *col["read"], bins=result.bins.get("read", {}) if plus else None),
        "write": _op(s["write"], elapsed, *col["write"], bins=result.bins.get("write", {}) if plus else None),
        "trim": _op(s["trim"], elapsed, series.get("trim_iops"), None,
                    bins=result.bins.get("trim", {}) if plus else None),
        "sync": {"total_ios": 0, "lat_ns": {"min": 0, "max": 0, "mean": 0.0, "stddev": 0.0, "N": 0}},
        "job_runtime": round(elapsed * 1000), "usr_cpu": 0.0, "sys_cpu": 0.0, "ctx": 0, "majf": 0, "minf": 0,
        **({"steadystate": {"ss": st["criterion"], "attained": int(st["attained"]),
                            "attained_at_s": st["attained_at_s"], "criterion_pct": st["value_pct"]}}
           if (st := s.get("steady_state")) else {}),
        # What only a simulation knows, under its own key (fio's readers ignore unknown keys).
        "ssdlab": {k: s[k] for k in ("write_amplification", "gc_units_copied", "blocks_erased", "faults", "run")
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
    job["ssdlab"] = {k: s[k] for k in ("requests", "elapsed_s", "trim_requests", "write_amplification", "final_flush_s",
                                       "format", "mode", "notes", "faults", "run") if k in s}
    job["ssdlab"].update({f"{op}_{k}": s[op][k] for op in ("all", "read", "write", "trim")
                          for k in ("busy_s", "data_rate_mb_per_s") if k in s.get(op, {})})
    return job


def fio_output(jobs: list[dict]) -> dict:
    """The whole document around the jobs (`fio_job`)."""
    return {"fio version": f"ssdlab-{__version__}", "timestamp": 0, "timestamp_ms": 0, "time": "",
            "global options": {}, "jobs": jobs, "disk_util": []}
