"""The Python face of a simulated drive: presets, preconditioning, jobs and their results."""

from __future__ import annotations

import json
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from . import _ssdlab
from .configs import (  # noqa: F401  (re-exported: ssdlab.drive has always offered them)
    FAULTS_HELP,
    PRESET_PACKAGE,
    DriveText,
    config_text,
    describe_config,
    describe_preset,
    describe_text,
    description,
    dump_toml,
    format_faults,
    preset_names,
    preset_path,
)
from .errors import SsdlabError, read_text
from .job import Job
from .placement import FDP_HOW, PlacementLogs
from .progress import Progress, auto
from .results import JobSummary, ReplaySummary
from .series import _RATE_COLUMNS, LINK_POLICIES, LINK_STATES, _LazySeries, series_frame, series_rates  # noqa: F401
from .traces import RequestLogWriter, device_label, device_number, time_unit_ns  # noqa: F401

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

PRECONDITIONS = ("none", "secure-erase", "fill", "fast-fill", "steady-state")
# Drive writes of 4 KiB random writes the "steady-state" precondition makes after its fill: the
# steady state of uniform random writes is reached after about 1.5 (qd-scaling's default).
STEADY_STATE_DRIVE_WRITES = 2.0


# Drive.run_together's per-IO batches: the columns of `_ssdlab.Sim.take_io_log`.
_IO_LOG_COLUMNS = (("stream", "<u4"), ("time_ns", "<u8"), ("latency_ns", "<u8"), ("op", "u1"),
                   ("length_bytes", "<u8"), ("offset_bytes", "<u8"))


@dataclass
class Result:
    """What one job measured.

    Attributes
    ----------
    summary : ssdlab.results.JobSummary
        Per operation (read/write/trim): ios, bytes, iops, mb_per_s, latency_us_{mean,
        stddev, min, p50, p90, p99, p99_9, p99_99, max}; and write_amplification,
        gc_units_copied, blocks_erased, elapsed_s (every key: ssdlab.results).
    series : pandas.DataFrame
        One row per interval: time_s, read/write IOPS and MB/s, mean latencies, NAND page
        programs, GC copies, free blocks at the interval's end; on a drive with a power
        model energy_j, power_w and link_state, with a heat model temperature_c and
        throttled.
    """

    summary: JobSummary
    _series: str | pd.DataFrame = field(repr=False)
    bins: dict = field(default_factory=dict)

    series = _LazySeries()

    @staticmethod
    def _from_json(summary_json: str, series_json: str) -> "Result":
        summary = json.loads(summary_json)
        # The latency histograms (fio json+ "bins") travel beside the summary, not in it.
        bins = {op: {int(k): v for k, v in summary[op].pop("latency_ns_bins", {}).items()}
                for op in ("read", "write", "trim") if op in summary}
        return Result(summary, series_json, bins)

    def rates(self, column: str) -> tuple[list[float], list[float]]:
        """`series.time_s` and `series[column]` (`read_iops`, `write_iops` or `trim_iops`)
        as lists; before `series` is first read, without building it (nor loading pandas)."""
        if column not in _RATE_COLUMNS:
            raise SsdlabError(f"column '{column}'; accepted: {', '.join(_RATE_COLUMNS)}")
        if isinstance(self._series, str):
            return series_rates(self._series, column, self.summary.get("elapsed_s"))
        return self._series.time_s.tolist(), self._series[column].tolist()

    def plot(self, column: str | None = None, log: bool = True):
        """The per-interval IOPS as the review report draws them (dots, log axis labelled by
        decade), as a plotly Figure: `.show()`, `.write_html(path)`. `column`: any series
        column (default: write_iops or read_iops, whichever the job did more of)."""
        import plotly.graph_objects as go

        from .charts import log_iops_axis
        s = self.summary
        if column is None:
            column = "write_iops" if s["write"]["ios"] >= s["read"]["ios"] else "read_iops"
        if column not in self.series:
            raise SsdlabError(f"column '{column}'; accepted: {', '.join(self.series.columns[1:])}")
        y = self.series[column]
        fig = go.Figure(go.Scattergl(x=self.series.time_s, y=y, mode="markers", marker={"size": 3},
                                     name=column))
        positive = y[y > 0]
        yaxis = (log_iops_axis(float(positive.min()), float(positive.max())) if log and len(positive)
                 else {"title": {"text": column}})
        if log and "iops" not in column:
            yaxis["title"] = {"text": f"{column} (log scale)"}
            yaxis.pop("tickvals", None)
            yaxis.pop("ticktext", None)
        fig.update_layout(title=f"{s.get('name', 'job')}: {column} per {self.series.time_s.iloc[0]:g} s"
                          if len(self.series) else column, xaxis={"title": {"text": "time (s)"}}, yaxis=yaxis)
        return fig

    def plot_power(self):
        """Power (W) and temperature (°C) over the run, throttled seconds shaded, as a plotly
        Figure; None for a drive without a power model."""
        from .charts import power_figure
        return power_figure(self.series, f"{self.summary.get('name', 'job')}: power and temperature")

    def __repr__(self) -> str:
        s = self.summary
        ops = ", ".join(f"{op} {s[op]['iops']:,.0f} IOPS {s[op]['mb_per_s']:,.1f} MB/s"
                        for op in ("read", "write", "trim") if s.get(op, {}).get("ios"))
        return (f"Result({s.get('name', 'job')!r}: {s['elapsed_s']:.2f} simulated s, {ops or 'no IO'}, "
                f"WA {s['write_amplification']:.2f}, {len(self.series)} intervals)")

    def write(self, out_dir: str | Path, prefix: str = "") -> list[Path]:
        """Write summary JSON and the time series as Parquet (and CSV) into out_dir."""
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        paths = [out / f"{prefix}summary.json", out / f"{prefix}timeseries.parquet", out / f"{prefix}timeseries.csv"]
        paths[0].write_text(json.dumps(_stamped(self.summary), indent=2) + "\n")
        self.series.to_parquet(paths[1], index=False)
        self.series.to_csv(paths[2], index=False)
        fig = self.plot_power()
        if fig is not None:
            paths.append(out / f"{prefix}power.html")
            fig.write_html(paths[-1], include_plotlyjs=True)
        return paths


@dataclass
class ReplayResult:
    """Storage-bench metrics of a replay.

    summary : ssdlab.results.ReplaySummary: "all" (reads and writes), "read", "write" and "trim", each: ios,
        bytes, iops, mb_per_s, latency_us_* (service time: mean, stddev, percentiles), busy_s,
        data_rate_mb_per_s; and requests, elapsed_s, write_amplification (after a final
        flush), final_flush_s, format, mode, notes (what the reader assumed or noticed).
    series : pandas.DataFrame, one row per interval (IOPS over time).
    """

    summary: ReplaySummary
    _series: str | pd.DataFrame = field(repr=False)
    bins: dict = field(default_factory=dict)

    series = _LazySeries()

    def table(self) -> pd.DataFrame:
        rows = {}
        for cls in ("all", "read", "write", "trim"):
            c = self.summary[cls]
            if cls == "trim" and not c["ios"]:
                continue
            rows["reads+writes" if cls == "all" else cls] = {
                "requests": c["ios"],
                "data rate MB/s": c["data_rate_mb_per_s"],
                "busy s": c["busy_s"],
                "service us mean": c["latency_us_mean"],
                "service us stddev": c["latency_us_stddev"],
                "p99 us": c["latency_us_p99"],
                "p99.9 us": c["latency_us_p99_9"],
            }
        import pandas as pd

        return pd.DataFrame(rows).T

    def write(self, out_dir: str | Path, prefix: str = "replay-") -> list[Path]:
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        paths = [out / f"{prefix}summary.json", out / f"{prefix}timeseries.parquet"]
        paths[0].write_text(json.dumps(_stamped(self.summary), indent=2) + "\n")
        self.series.to_parquet(paths[1], index=False)
        return paths


def _now_utc():
    """Now, or SOURCE_DATE_EPOCH when set (byte-identical outputs for a fixed date)."""
    import datetime
    import os
    epoch = os.environ.get("SOURCE_DATE_EPOCH", "")
    if epoch.isdigit():
        return datetime.datetime.fromtimestamp(int(epoch), datetime.timezone.utc)
    return datetime.datetime.now(datetime.timezone.utc)


def _stamped(summary: dict) -> dict:
    """The summary as a summary.json holds it: with when it was written (in the file only, so
    a result stays the same for the same configuration and seed)."""
    if "run" not in summary:
        return summary
    return {**summary, "run": {**summary["run"], "written_at": _now_utc().isoformat(timespec="seconds")}}


def _checked_dicts(jobs):
    """Jobs given as dicts become Jobs; a dict with a field Job lacks is a clear error."""
    out = []
    for j in jobs:
        if isinstance(j, dict):
            try:
                j = Job(**j)
            except TypeError as e:
                raise SsdlabError(f"job: {e}") from None
        out.append(j)
    return out


class Drive(PlacementLogs):
    """A simulated drive.

    Examples
    --------
    >>> d = Drive.preset("crucial-m500-120")
    >>> d.precondition("fast-fill")
    >>> r = d.run(Job(rw="randwrite", bs="4k", iodepth=32, runtime_s=5, time_based=True))
    >>> r.summary["write"]["iops"] > 0
    True
    """

    def __init__(self, toml_text: str, source: str = "<config>", seed: int = 0):
        self.source = source
        try:
            self.config = tomllib.loads(toml_text)
        except tomllib.TOMLDecodeError as e:
            raise SsdlabError(f"{source}: {e}") from None
        check_seed(seed)
        try:
            self._sim = _ssdlab.Simulation(toml_text, seed)
        except ValueError as e:
            raise SsdlabError(f"{source}: {e}") from None
        self.seed = seed
        self.name = self.config.get("name", source)
        self.geometry = json.loads(self._sim.geometry_json())
        # What the model derives from the configuration (ssdlab_core::describe), read once.
        self.description = json.loads(_ssdlab.describe_config(toml_text))
        self._preconditioned = "none"

    @classmethod
    def preset(cls, name: str, seed: int = 0) -> "Drive":
        path = preset_path(name)
        return cls(path.read_text(), name, seed)

    @classmethod
    def from_toml(cls, path: str | Path, seed: int = 0) -> "Drive":
        return cls(read_text(path, "a drive TOML file"), str(path), seed)

    @classmethod
    def open(cls, name_or_path: str | DriveText, seed: int = 0, faults: str | None = None,
             placement: str | None = None) -> "Drive":
        """A preset by name, a TOML file by path, or a `DriveText`; `faults`: a `--faults` spec (`ssdlab run
        --help`); `placement`: "fdp" or "zns:SIZE[:MAX_OPEN[:CAP]]", the default if the file has none."""
        text, source = config_text(name_or_path, faults, placement)
        return cls(text, source, seed)

    @property
    def user_bytes(self) -> int:
        return self._sim.user_bytes()

    @property
    def now_s(self) -> float:
        return self._sim.now_s()

    def secure_erase(self) -> None:
        """Every block erased, the mapping empty."""
        self._sim.secure_erase()

    def precondition(self, kind: str = "fill", progress: bool | None = None,
                     drive_writes: float = STEADY_STATE_DRIVE_WRITES) -> Result | None:
        """Bring the drive to a known state.

        kind : "none"; "secure-erase"; "fill" (secure erase, then a timed sequential 128 KiB
            QD32 write of every LBA, as a real drive would take it; returns its Result);
            "fast-fill" (secure erase, then the same FTL state without simulating time);
            "steady-state" (random-write steady state as SNIA's Performance Test
            Specification reaches it: purge (secure erase), the workload-independent
            sequential fill of every LBA, then the workload-dependent 4 KiB random writes,
            `drive_writes` times the drive, all without simulating time: the FTL state an
            hours-long timed run reaches, as enterprise drives are rated).
        """
        if kind not in PRECONDITIONS:
            raise SsdlabError(f"precondition '{kind}' is not known; accepted: {', '.join(PRECONDITIONS)}")
        if not drive_writes >= 0:
            raise SsdlabError(f"precondition drive_writes {drive_writes}: accepted: 0 or more")
        if kind == "none":
            return None
        self._preconditioned = kind
        self.secure_erase()
        unit = self.geometry["mapping_unit_bytes"]
        units = self.geometry["logical_units"]
        if kind == "secure-erase":
            return None
        if kind in ("fast-fill", "steady-state"):
            self._sim.fill_untimed(0, units)
            if kind == "steady-state":
                self.random_writes(drive_writes)
            return None
        bs = 128 * 1024
        whole = self.user_bytes // bs * bs
        self._sim.expect_sequential_fill()
        result = self.run(Job(name="precondition-fill", rw="write", bs="128k", iodepth=32, size=str(whole)), progress=progress)
        rest = units * unit - whole
        if rest:
            self.run(Job(name="precondition-fill-tail", rw="write", bs=str(rest), iodepth=1, offset=str(whole), size=str(rest)))
        return result

    def fill(self, size_bytes: int | None = None, offset_bytes: int = 0) -> None:
        """Write the mapping units covering `offset_bytes .. offset_bytes + size_bytes` (default:
        the whole drive) in order, without simulating time: the FTL state of a sequential fill."""
        unit = self.geometry["mapping_unit_bytes"]
        first = offset_bytes // unit
        end = self.geometry["logical_units"] if size_bytes is None else min(
            self.geometry["logical_units"], -(-(offset_bytes + size_bytes) // unit))
        if end > first:
            self._sim.fill_untimed(first, end - first)

    def random_writes(self, drive_writes: float, size_bytes: int | None = None, seed: int | None = None) -> None:
        """`drive_writes` x the span's units of uniform 4 KiB random writes over the first
        `size_bytes` (default: the whole drive), without simulating time: the FTL state such a
        run reaches (steady state after about 1.5 drive writes), in a fraction of the time."""
        unit = self.geometry["mapping_unit_bytes"]
        span = self.geometry["logical_units"] if size_bytes is None else min(self.geometry["logical_units"], size_bytes // unit)
        self._sim.random_writes_untimed(0, span, int(drive_writes * span), self.seed if seed is None else seed)

    def fill_read_reach(self, seconds: float) -> None:
        """Fill what a sequential read from LBA 0 can reach in `seconds`: it can move no more
        than the host link's line rate carries, and reads nothing beyond (filling the rest of
        a large drive would only cost time)."""
        self.fill(int(self.description["link_line_bytes_per_s"] * seconds * 1.05) + (1 << 20))

    def run(self, job: Job | dict, progress: bool | None = None) -> Result:
        """Run one job to its end and return what it measured. `progress`: True for a progress
        line on stderr, or an object with update(sim_s, ios, fraction) and close(); by default
        (None) shown in a terminal or notebook once the run has taken more than 2 wall
        seconds, silent when stderr goes to a file or pipe."""
        return self.run_together([job], progress=progress)[0]

    def run_together(self, jobs: "list[Job | dict]", wait_for: "list[int | None] | None" = None,
                     progress: bool | None = None, on_ios=None) -> list[Result]:
        """Run `jobs` at once on the drive, as fio runs the jobs of a file between two
        stonewalls, and return what each measured (its own IOs over its own span; the
        drive-wide figures of each summary, such as write amplification, are the drive's over
        that span). `wait_for[i]`: the index of an earlier job whose end starts job i (fio's
        wait_for), or None; each job's `startdelay_s` counts from there (or from now).
        `on_ios(ios)`: called as the run goes with each batch of measured completions, a dict
        of numpy arrays: stream (a job's `numjobs` clones are consecutive streams, in the
        jobs' order), time_ns (from the job's start), latency_ns, op (0 read, 1 write, 2 trim),
        length_bytes, offset_bytes (fio's per-IO logs)."""
        jobs = _checked_dicts(jobs)
        after = list(wait_for) if wait_for is not None else [None] * len(jobs)
        if len(after) != len(jobs):
            raise SsdlabError(f"wait_for: {len(after)} entries for {len(jobs)} jobs; give one per job")
        texts = []
        for job in jobs:
            try:
                text = job.to_json()
                self._sim.check_job(text)
            except ValueError as e:
                raise SsdlabError(f"job '{job.name}': {e}") from None
            if job.asks_fdp() and "placement" not in self.config:
                raise SsdlabError(f"job '{job.name}': asks for FDP, and {self.source} has no [placement] table; {FDP_HOW}")
            texts.append(text)
        try:
            self._sim.start_jobs(texts, after, io_log=on_ios is not None)
        except (ValueError, TypeError, OverflowError) as e:
            raise SsdlabError(f"jobs {', '.join(j.name for j in jobs)}: {e}") from None
        names = " + ".join(j.name for j in jobs)
        bar = progress if hasattr(progress, "update") else Progress(f"{self.name} {names}", enabled=auto(progress))

        def hand_over():
            if on_ios is None:
                return
            import numpy as np
            cols = self._sim.take_io_log()
            ios = {name: np.frombuffer(b, dtype=t) for (name, t), b in zip(_IO_LOG_COLUMNS, cols)}
            if len(ios["stream"]):
                on_ios(ios)
        try:
            while not self._sim.advance(1.0):
                bar.update(*self._sim.progress())
                hand_over()
            hand_over()
        finally:
            bar.close()
        results = []
        for job, (summary, series) in zip(jobs, self._sim.finish_job()):
            result = Result._from_json(summary, series)
            # What produced it, so a summary.json stands on its own.
            result.summary["run"] = self._provenance() | {"job": json.loads(job.to_json())}
            results.append(result)
        # Which jobs ran at the same time as which: each job's span from its start (its
        # startdelay after the group's start, or after the end of the job it waits for) over
        # its own elapsed time; jobs staggered so as never to overlap did not run together.
        spans: list[tuple[float, float]] = []
        for i, (job, r) in enumerate(zip(jobs, results)):
            start = (spans[after[i]][1] if after[i] is not None else 0.0) + (job.startdelay_s or 0.0)
            spans.append((start, start + r.summary["elapsed_s"]))
        for i, r in enumerate(results):
            together = [jobs[k].name for k, (s0, s1) in enumerate(spans)
                        if k != i and s0 < spans[i][1] and spans[i][0] < s1]
            if len(jobs) > 1:
                r.summary["run"]["span_s"] = list(spans[i])
            if together:
                r.summary["run"]["ran_with"] = together
                if r.summary.get("power"):
                    # The drive's energy over this job's span is every job's: per this job's own
                    # bytes or IOs it would count the others' work as its own.
                    r.summary["power"] |= {"shared_with": together, "joules_per_gb": None, "iops_per_w": None}
        return results

    def find_latency_depth(self, job: Job, target_s: float, window_s: float = 1.0, percentile: float = 100.0,
                           progress: bool | None = None) -> Result:
        """fio's latency_target: the highest queue depth, 1 to `job.iodepth`, at which
        `percentile`% of a window's IOs complete within `target_s`. Each probe runs the job for
        `window_s` simulated seconds at one depth (doubling from 1, then bisecting between the
        last depth that met the target and the first that did not), on the drive as the probes
        before left it. A job with a runtime probes within it, as fio's job does (issue 73 item
        9): the search stops, with the best depth so far, when the probes have used it up (the
        last window cut to what is left). Returns the last window run at the depth found, its
        summary's "latency_target" holding the depth, whether it met the target and every
        probe."""
        import dataclasses
        from .fio_json import _percentiles
        probes, results = [], {}
        left = [job.runtime_s if job.runtime_s else float("inf")]

        class _OutOfTime(Exception):
            pass

        def meets(depth: int) -> bool:
            window = min(window_s, left[0])
            if window <= 1e-9:
                raise _OutOfTime
            left[0] -= window
            r = self.run(dataclasses.replace(job, iodepth=depth, runtime_s=window, time_based=True, number_ios=None,
                                             io_size=None), progress=progress)
            bins: dict = {}
            for op in r.bins.values():
                for k, v in op.items():
                    bins[k] = bins.get(k, 0) + v
            lat_s = _percentiles(bins, [percentile])[f"{percentile:f}"] / 1e9
            probes.append({"iodepth": depth, "latency_us": lat_s * 1e6, "met": lat_s <= target_s})
            results[depth] = r
            return lat_s <= target_s

        top, best = max(1, job.iodepth), 0
        try:
            d = 1
            while d <= top and meets(d):
                best, d = d, d * 2
            hi = d  # the first depth that missed (or past the top)
            if best and d > top:
                hi = top + 1
                if best < top:
                    if meets(top):
                        best = top
                    else:
                        hi = top
            while best and hi - best > 1:  # bisect between the last depth met and the first missed
                mid = (best + hi) // 2
                if meets(mid):
                    best = mid
                else:
                    hi = mid
        except _OutOfTime:
            pass  # the job's runtime is used up: the best depth found so far
        depth = best or 1
        r = results[depth] if depth in results else results[min(results)]
        r.summary["latency_target"] = {"depth": depth, "met": bool(best), "target_us": target_s * 1e6,
                                       "window_s": window_s, "percentile": percentile, "probes": probes}
        return r

    def _provenance(self) -> dict:
        from . import __version__
        import hashlib
        config = json.dumps(self.config, sort_keys=True, default=str).encode()
        return {"ssdlab_version": __version__, "drive": self.name, "drive_source": self.source,
                "seed": self.seed, "faults": self.config.get("faults", {}),
                # The state the drive was brought to before this (the last precondition given).
                "precondition": self._preconditioned,
                # The resolved drive configuration (preset or file, with --set and faults).
                "config_sha256": hashlib.sha256(config).hexdigest()}

    def __repr__(self) -> str:
        g = self.geometry
        return (f"Drive({self.name!r}, {self.user_bytes / 1e9:.1f} GB, {g.get('dies', '?')} dies, "
                f"seed={self.seed}, at {self.now_s:.3f} simulated s)")

    def replay(
        self,
        trace: "str | Path | list[str | Path]",
        mode: str = "afap",
        *,
        format: str | None = None,
        columns: str | None = None,
        scale: float = 1.0,
        qd: int = 0,
        device: "int | str | None" = None,
        wrap: bool = False,
        skip_bad_lines: bool = False,
        time_unit: "str | float | None" = None,
        sort: bool = False,
        blkparse_arrivals: str = "D",
        interval_s: float = 1.0,
        per_request: "str | Path | None" = None,
        progress: bool | None = None,
        fio_wait: str = "absolute",
        align_starts: bool = False,
    ) -> "ReplayResult":
        """Replay block traces (plain, gzip, bzip2, xz or zstd; format detected unless given).

        trace : a file, or several merged in time order.
        mode : "afap" (idle gaps removed, the storage benches' way; with qd > 0 the host has
            at most `qd` requests outstanding: one held back goes when one completes and the
            recorded gaps after it count from then), "timed" (recorded arrival times, gaps x
            `scale`) or "qd" (closed loop at `qd` outstanding; with qd=0, at the queue depth
            the trace recorded, from its service times).
        format : msr, spc, blkparse, blktrace, fio-iolog, disksim, alibaba, tencent, fiu, msprod.
        columns : a column map for any other delimited text, e.g.
            "time=0:us,op=1,offset=2:bytes,size=3:sectors" (see `ssdlab replay --help`).
        device : replay only this disk/device/ASU/volume number, or "MAJ,MIN" for blkparse,
            blktrace and FIU traces (default: all, merged).
        wrap : fold requests past the end of the drive onto it (default: stop with an error).
        time_unit : DiskSim/MQSim arrival unit, "ns", "us", "ms", "s" or ns per unit (default:
            decided from the trace and stated in summary["notes"]).
        sort : read the whole trace and replay it in time order (default: file order, with
            a note when timestamps go backwards).
        blkparse_arrivals : "D" (issue) or "Q" (queue) events as arrivals.
        fio_wait : fio v2 iolog "wait N" lines: "absolute" (N ms since the job started, as
            fio's replay reads them) or "relative" (N us after the previous wait, as fio's
            manual says); the one used is stated in summary["notes"].
        align_starts : several files: count each one's arrivals from its own first request
            (files recorded with clocks of different origins); without it, files whose first
            requests are more than a day apart get a note (and timed mode refuses them).
        per_request : a Parquet file for one row per request (arrival, submit, complete,
            offset, length, op, latency), written as the replay goes (bounded memory).
        """
        if blkparse_arrivals not in ("D", "Q"):
            raise SsdlabError(f"blkparse arrivals '{blkparse_arrivals}'; accepted: D, Q")
        if fio_wait not in ("absolute", "relative"):
            raise SsdlabError(f"fio_wait '{fio_wait}'; accepted: absolute, relative")
        paths = [str(t) for t in trace] if isinstance(trace, (list, tuple)) else [str(trace)]
        unit_ns = time_unit_ns(time_unit)
        dev = device_number(device)
        try:
            formats = self._sim.start_replay(
                paths, mode, scale, qd, format=format, columns=columns, device=dev, wrap=wrap,
                skip_bad_lines=skip_bad_lines, time_unit_ns=unit_ns,
                blkparse_queue_arrivals=blkparse_arrivals == "Q", sort=sort,
                per_request=per_request is not None, interval_s=interval_s,
                fio_wait_relative=fio_wait == "relative", align_starts=align_starts,
            )
        except ValueError as e:
            raise SsdlabError(str(e)) from None
        except OverflowError:
            raise SsdlabError(f"--qd {qd}: must be between 0 and {2**32 - 1}") from None
        faults_before = self.fault_counters()
        bar = Progress(f"{self.name} replay", enabled=auto(progress))
        log = RequestLogWriter(per_request) if per_request is not None else None
        try:
            while not self._sim.advance_replay(1.0):
                sim_s, n = self._sim.replay_progress()
                bar.update(sim_s, n, 0.0)
                if log is not None:
                    log.add(self._sim.take_request_log())
            if log is not None:
                log.add(self._sim.take_request_log())
        except BaseException:
            if log is not None:
                log.close()
            raise
        finally:
            bar.close()
        try:
            summary_json, series_json, outcome_json = self._sim.finish_replay()
        except ValueError as e:
            if log is not None:
                log.close()
            raise SsdlabError(str(e)) from None
        if log is not None:
            log.close()
        outcome = json.loads(outcome_json)
        summary = json.loads(summary_json)
        mapping = outcome["mapping"]
        if mapping["mapped"] == 0:
            if dev is not None and mapping["other_devices_skipped"]:
                seen = ", ".join(map(device_label, outcome["devices_seen"]))
                raise SsdlabError(f"{' + '.join(paths)}: no requests for device {device} "
                                  f"({mapping['other_devices_skipped']:,} requests of devices {seen}; "
                                  "blkparse, blktrace and FIU devices are MAJ,MIN, e.g. --device 8,16)")
            raise SsdlabError(f"{' + '.join(paths)}: no requests in the trace ({outcome['records']:,} records read)")
        notes = list(outcome["notes"])
        if mapping["out_of_order"]:
            notes.append(f"{mapping['out_of_order']:,} requests arrive earlier than the latest arrival above them "
                         "(timestamps out of order; `trace stats` counts the same): they are replayed in file order "
                         "(timed mode restarts its clock at each step back, keeping the recorded gaps after it); the "
                         "per-request log keeps each recorded arrival (negative: before the first request); --sort "
                         "replays the trace in time order")
        faults = {k: v - faults_before[k] for k, v in self.fault_counters().items()}
        summary.update({
            "format": "+".join(dict.fromkeys(formats)), "mode": mode,
            "bad_lines_skipped": outcome["bad_lines_skipped"],
            "other_devices_skipped": mapping["other_devices_skipped"],
            "requests_wrapped": mapping["wrapped"], "out_of_order": mapping["out_of_order"],
            "notes": notes, "faults": faults,
            "run": self._provenance() | {"trace": paths if len(paths) > 1 else paths[0], "scale": scale,
                                         "qd": qd, "sort": sort, "time_unit_ns": unit_ns},
        })
        if per_request is not None:
            summary["per_request"] = str(per_request)
        # The latency histograms (fio json+ "bins") travel beside the summary, not in it.
        bins = {op: {int(k): v for k, v in summary[op].pop("latency_ns_bins", {}).items()}
                for op in ("all", "read", "write", "trim") if op in summary}
        return ReplayResult(summary, series_json, bins)

    def idle(self, seconds: float) -> None:
        """Leave the drive idle for `seconds`: background garbage collection may use the time,
        the link drops to its power states, the drive cools; the next job starts after it."""
        self._sim.idle(seconds)

    def flush(self) -> float:
        """One host FLUSH, waited for (NVMe Flush, SATA FLUSH CACHE): what the write buffer
        holds goes to the NAND and, on a drive without full power-loss protection, its partly
        filled program units are programmed, padded (a drive with full protection acknowledges
        it at once). Returns the simulated seconds it took."""
        return self._sim.flush()

    def set_link_power(self, policy: str) -> None:
        """The host's link power management from now on: none, hipm, dipm, hipm+dipm or
        devsleep (a job's ``link_power`` sets it for the job). Only a drive with a ``[power]``
        section changes link state."""
        self._sim.set_link_power(policy)

    def idle_power_w(self, policy: str = "none", seconds: float = 10.0) -> float | None:
        """Leave the drive idle for `seconds` with the host's link power policy `policy` and
        return its average power, watts (None for a drive without a power model)."""
        return self._sim.idle_power_w(policy, seconds)

    def crypto_erase(self) -> float:
        """Crypto erase a self-encrypting drive (``controller.self_encrypting``): a new media
        key, every LBA reads as zeros, no block erased (the collector erases them as it goes).
        Returns the simulated seconds it took; SsdlabError for a drive without encryption."""
        try:
            return self._sim.crypto_erase()
        except ValueError as e:
            raise SsdlabError(str(e)) from None

    def energy_j(self) -> float | None:
        """The drive's energy since power-on, joules; None for a drive without a power model."""
        return self._sim.energy_j()

    def fault_counters(self) -> dict:
        """What seeded NAND faults did so far: read retries, uncorrectable pages, RAIN
        rebuilds, failed reads, program and erase failures, grown bad blocks."""
        return self.counters()["faults"]

    def counters(self) -> dict:
        """Lifetime counters: FTL (host/GC units, programs, erases) and NAND operations."""
        return json.loads(self._sim.counters_json())

    def erase_counts(self) -> np.ndarray:
        import numpy as np

        return np.asarray(self._sim.erase_counts(), dtype=np.uint32)

    def erase_count_histogram(self) -> pd.DataFrame:
        import numpy as np
        import pandas as pd

        counts = self.erase_counts()
        values, freq = np.unique(counts, return_counts=True)
        return pd.DataFrame({"erase_count": values, "blocks": freq})

    def verify(self) -> None:
        """Check every FTL invariant (maps agree, valid counts, free pool); raises if broken."""
        self._sim.verify()

    def describe(self) -> dict:
        """Name, controller, dies, raw/usable/user capacity and over-provisioning."""
        return describe_config(self.config, self.description)


SEED_MAX = 2**64 - 1


def check_seed(seed) -> None:
    """A seed is a whole number the simulator's 64-bit generator takes; anything else is a
    clear error, not an overflow deep in the bindings."""
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= SEED_MAX:
        raise SsdlabError(f"seed {seed!r}: accepted: a whole number from 0 to {SEED_MAX}")
