"""The same procedures on a real file or block device, or an NBD export, through fio: generate
the fio job, run it, read fio's JSON output and its per-second IOPS log.

A file that exists and holds data, any block device and any NBD export are only written with
`yes_destroy=True` (`--yes-destroy-data`). Secure erase has no fio equivalent: a file is
recreated, a block device or an export is trimmed end to end (which a drive may or may not
honour). An NBD export is named by its URI (`nbd://HOST[:PORT][/EXPORT]`,
`nbd+unix:///EXPORT?socket=PATH`, as nbdinfo and fio take it) and reached through fio's `nbd`
engine: a modelled drive served by `ssdlab serve` (whose replies are paced to the model's
completion times) is measured exactly as a real one is."""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
import tempfile
import time
from pathlib import Path

import pandas as pd

from ..errors import SsdlabError
from ..job import parse_size
from .labels import rate_summary
from .procedures import Outcome, Tracker, qd_summary
from .steady import consistency_summary, spare_span, spare_variant

FIO_PROCEDURES = ("consistency", "four-corners", "sequential-qd", "transfer-size", "qd-scaling")
# Why the others are not run on a real device.
NOT_ON_TARGETS = {
    "trim": "needs the model's TRIM of a live span and its per-slice timing; not run through fio",
    "endurance": "needs the drive's erase counts, which a real device does not expose",
    "storage-bench": "replays traces in the model only",
    "power": "reads the model's energy accounting (a real drive's power needs a power meter)",
    "zns-vs-conventional": "builds the same media zoned and at several spares, which only the model can",
    "flash-cache": "needs FDP's placement identifiers and statistics log (fio's io_uring_cmd passthrough; not run through a block target)",
}


# The NBD URI schemes of the NBD URI specification (libnbd's nbd_connect_uri takes these).
NBD_SCHEMES = ("nbd://", "nbds://", "nbd+unix://", "nbds+unix://", "nbd+vsock://", "nbds+vsock://")


def is_nbd_uri(target: str) -> bool:
    return target.startswith(NBD_SCHEMES)


def check_target(path: str, yes_destroy: bool, size: str | None) -> dict:
    """Where fio will write, how big, and whether it may. Raises SsdlabError otherwise."""
    if shutil.which("fio") is None:
        raise SsdlabError("--target needs fio (apt-get install fio)")
    if is_nbd_uri(path):
        return _check_nbd_target(path, yes_destroy, size)
    if re.match(r"[A-Za-z][A-Za-z0-9+.-]*://", path) or path.startswith("nbd:"):
        raise SsdlabError(f"--target {path}: not a file, a block device or an NBD URI; NBD URIs start with "
                          + ", ".join(NBD_SCHEMES))
    p = Path(path)
    block = p.exists() and stat.S_ISBLK(p.stat().st_mode)
    if block:
        if not yes_destroy:
            raise SsdlabError(f"{path} is a block device: the procedures overwrite it; add --yes-destroy-data if that is what you want")
        fd = os.open(path, os.O_RDONLY)
        try:
            size_bytes = os.lseek(fd, 0, os.SEEK_END)
        finally:
            os.close(fd)
    else:
        if p.exists() and not p.is_file():
            raise SsdlabError(f"{path}: neither a regular file nor a block device")
        if p.exists() and p.stat().st_size > 0 and not yes_destroy:
            raise SsdlabError(f"{path} exists and holds {p.stat().st_size:,} bytes: the procedures overwrite it; add --yes-destroy-data, or name a new file")
        if not p.parent.is_dir():
            raise SsdlabError(f"{path}: directory {p.parent} does not exist")
        size_bytes = parse_size(size or "1g", "--target-size")
    return {"path": str(p), "block": block, "size_bytes": size_bytes // (1 << 20) * (1 << 20),
            "created": not p.exists()}


def _check_nbd_target(uri: str, yes_destroy: bool, size: str | None) -> dict:
    """An NBD export: fio's `nbd` engine must be there, and nbdinfo (libnbd-bin) to ask the
    export's size and flags; it must be writable, and is overwritten only with the flag."""
    if size is not None:
        raise SsdlabError(f"--target-size {size}: an NBD export has the size its server gives it; drop --target-size")
    engines = subprocess.run(["fio", "--enghelp"], capture_output=True, text=True).stdout
    if "nbd" not in engines.split():
        raise SsdlabError(f"--target {uri}: this fio has no nbd engine (Debian's fio has it; fio --enghelp lists the engines)")
    missing = [t for t in ("nbdinfo", "nbdcopy") if shutil.which(t) is None]
    if missing:
        raise SsdlabError(f"--target {uri}: an NBD target needs {' and '.join(missing)} (apt-get install libnbd-bin)")
    try:
        p = subprocess.run(["nbdinfo", "--json", uri], capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        raise SsdlabError(f"--target {uri}: nbdinfo had no answer from the server in 60 s") from None
    if p.returncode != 0:
        why = (p.stderr or p.stdout).strip().splitlines()
        raise SsdlabError(f"--target {uri}: nbdinfo could not open it: {why[-1] if why else f'exit {p.returncode}'}")
    try:
        export = json.loads(p.stdout)["exports"][0]
        size_bytes = int(export["export-size"])
    except (ValueError, KeyError, IndexError, TypeError):
        raise SsdlabError(f"--target {uri}: nbdinfo's answer has no export size") from None
    if export.get("is_read_only"):
        raise SsdlabError(f"--target {uri}: the export is read-only; the procedures write")
    if not yes_destroy:
        raise SsdlabError(f"--target {uri} is an NBD export: the procedures overwrite it; add --yes-destroy-data if that is what you want")
    if size_bytes < 1 << 20:
        raise SsdlabError(f"--target {uri}: the export holds {size_bytes:,} bytes; the procedures need at least 1 MiB")
    return {"path": uri, "nbd": True, "block": True, "can_trim": bool(export.get("can_trim")),
            "size_bytes": size_bytes // (1 << 20) * (1 << 20), "created": False}


# The drive's idle time after each end-to-end TRIM, seconds of its own time, so its idle-time
# collection has reclaimed the trimmed blocks before the next step whatever the host's own gap
# between two fio runs (ASSUMED, as reviewers let a drive rest after a TRIM): a served
# P400e-like drive wrote 4 KiB at QD32 3.8% faster and 128 KiB sequentially 3.7% faster after
# the gap fio's start leaves (10x time scale) than with none, the same from 50 ms on (issue 101).
SETTLE_S = 0.2


class Fio:
    def __init__(self, target: dict, workdir: Path):
        self.t = target
        self.dir = workdir
        self.n = 0

    def fresh(self) -> None:
        if self.t.get("nbd") and not self.t.get("can_trim"):
            return  # the server takes no TRIM: the export stays as it is
        if self.t["block"]:
            # 32 MiB: within what NBD servers take in one request (ssdlab serve, nbdkit).
            self.run(rw="trim", bs="32m" if self.t.get("nbd") else "64m", iodepth=1, size=self.t["size_bytes"])
            self.flush()
            self.idle(SETTLE_S)
        else:
            Path(self.t["path"]).unlink(missing_ok=True)

    def flush(self) -> None:
        """A FLUSH: a drive without power-loss protection programs its partly filled program
        units then (padded), so what follows starts on empty ones whatever the step before
        wrote; without it the fill of a served M500 read back as far as 0.2% apart by how many
        4 KiB writes came before (issue 101). A drive with full protection acknowledges it at
        once and keeps them open (four-corners orders its steps for that). fio sends none after
        a job that only trims (its end_fsync needs a job that writes): an NBD export gets it
        from nbdcopy --flush copying nothing (libnbd, as fio's nbd engine), a block device
        from fsync, which the kernel passes on as the drive's cache flush."""
        if self.t.get("nbd"):
            empty = self.dir / "flush-nothing"
            empty.touch()
            try:
                p = subprocess.run(["nbdcopy", "--flush", str(empty), self.t["path"]], capture_output=True, text=True,
                                   timeout=600)
            except subprocess.TimeoutExpired:
                raise SsdlabError(f"{self.t['path']}: the NBD server did not answer a FLUSH in 600 s") from None
            if p.returncode != 0:
                err = (p.stderr or p.stdout).strip().splitlines()
                raise SsdlabError(f"{self.t['path']}: nbdcopy --flush failed: {err[-1] if err else p.returncode}")
        elif self.t["block"]:
            fd = os.open(self.t["path"], os.O_WRONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)

    def idle(self, seconds: float) -> None:
        """Send nothing for `seconds` of the drive's time (its idle-time work goes on)."""
        time.sleep(seconds * self.t.get("time_scale", 1))

    def fill(self, size: int) -> None:
        # One 1 MiB write at a time: the data lands in LBA order, as the model's own fill lays
        # it. Eight at once through NBD interleave by when each arrives on the wall clock, and
        # the sequential reads after it vary with that layout.
        self.run(rw="write", bs="1m", iodepth=1, size=max(size, 1 << 20))

    def run(self, *, rw: str, bs: str, iodepth: int, size: int, offset: int = 0, runtime_s: float | None = None,
            rwmixread: int | None = None, iops_log: bool = False, io_size: int | None = None) -> tuple[dict, pd.DataFrame | None]:
        self.n += 1
        out = self.dir / f"fio-{self.n}.json"
        log = self.dir / f"log-{self.n}"
        if self.t.get("nbd"):
            where = ["--ioengine=nbd", f"--uri={self.t['path']}"]
        else:
            where = [f"--filename={self.t['path']}", "--ioengine=libaio", f"--direct={int(self.t.get('direct', True))}"]
        args = ["fio", f"--name=ssdlab{self.n}", *where, f"--size={size}", f"--offset={offset}",
                f"--rw={rw}", f"--bs={bs}", f"--iodepth={iodepth}",
                "--randrepeat=0", "--norandommap", "--refill_buffers", "--output-format=json", f"--output={out}"]
        if rwmixread is not None:
            args.append(f"--rwmixread={rwmixread}")
        if io_size is not None:
            args.append(f"--io_size={io_size}")
        # A drive served `scale` times slower than real time: its second is `scale` on the wall.
        scale = self.t.get("time_scale", 1)
        if runtime_s is not None:
            args += [f"--runtime={runtime_s * scale}", "--time_based"]
        if iops_log:
            args += [f"--write_iops_log={log}", f"--log_avg_msec={1000 * scale}"]
        # In the run's directory: fio may leave state files where it runs.
        p = subprocess.run(args, capture_output=True, text=True, cwd=self.dir)
        if p.returncode != 0 or not out.exists():
            err = (p.stderr or p.stdout).strip().splitlines()
            direct = not self.t.get("nbd") and any("direct" in e.lower() or "Invalid argument" in e for e in err)
            hint = " (the file system may not support O_DIRECT: try --no-direct)" if direct else ""
            raise SsdlabError(f"fio failed on {self.t['path']}: {err[-1] if err else p.returncode}{hint}")
        text = out.read_text()
        result = json.loads(text[text.index("{"):])
        series = None
        if iops_log:
            logs = sorted(self.dir.glob(f"log-{self.n}_iops*.log"))
            if logs:
                series = _iops_log(logs[0])
                series["time_s"] /= scale
                series["iops"] *= scale
        job = result["jobs"][0]
        if scale != 1:
            _in_drive_time(job, scale)
        return job, series


class ModelFio(Fio):
    """The same steps on a modelled drive, as `ssdlab fit` measures its model of a drive that
    was measured through fio: each fio run (and the trims and fills between) as the Job it
    spells, on a drive served as `ssdlab serve` exports it (trimmed end to end where fio's path
    trims). The model's own procedures differ where fio cannot follow them (a secure erase, an
    untimed fill): a timed 1 MiB fill leaves another layout on the dies than the untimed one,
    3.4% slower 128 KiB reads at QD1 on a P400e and an M500 (2026-12-04)."""

    def __init__(self, target: dict, workdir: Path):
        super().__init__(target, workdir)
        from ..drive import Drive
        self.drive = Drive(target["model"].text, target["model"].name)

    def flush(self) -> None:
        self.drive.flush()

    def idle(self, seconds: float) -> None:
        self.drive.idle(seconds)

    def run(self, *, rw: str, bs: str, iodepth: int, size: int, offset: int = 0, runtime_s: float | None = None,
            rwmixread: int | None = None, iops_log: bool = False, io_size: int | None = None) -> tuple[dict, pd.DataFrame | None]:
        from ..job import Job
        job = Job(rw=rw, bs=bs, iodepth=iodepth, size=str(size), offset=str(offset), runtime_s=runtime_s,
                  time_based=runtime_s is not None, **({"rwmixread": rwmixread} if rwmixread is not None else {}),
                  **({"io_size": str(io_size)} if io_size is not None else {}), **({"log_interval_s": 1.0} if iops_log else {}))
        r = self.drive.run(job, progress=False)
        out = {op: {"iops": o["iops"], "bw_bytes": o["mb_per_s"] * 1e6, "clat_ns": {"mean": o["latency_us_mean"] * 1e3}}
               for op in ("read", "write", "trim") if (o := r.summary.get(op)) and o.get("ios")}
        for op in ("read", "write", "trim"):
            out.setdefault(op, {"iops": 0.0, "bw_bytes": 0.0})
        series = None
        if iops_log:
            s = r.series
            series = pd.DataFrame({"time_s": s.time_s, "iops": s.read_iops + s.write_iops + s.trim_iops})
        return out, series


def model_target(text: str, source: str) -> dict:
    """A modelled drive as a target of [`run_fio_procedure`]: an export of `ssdlab serve`."""
    from ..configs import DriveText
    from ..drive import Drive
    size = Drive(text, source).user_bytes
    return {"path": source, "nbd": True, "block": True, "can_trim": True, "size_bytes": size // (1 << 20) * (1 << 20),
            "created": False, "model": DriveText(text, source)}


def _in_drive_time(job: dict, scale: int) -> None:
    """fio's figures of a drive served `scale` times slower than real time, in the drive's own
    time: rates `scale` times, latencies 1/`scale`."""
    for op in ("read", "write", "trim"):
        d = job.get(op)
        if not d:
            continue
        for k in ("iops", "iops_mean", "bw", "bw_bytes", "bw_mean"):
            if k in d:
                d[k] *= scale
        for lat in ("slat_ns", "clat_ns", "lat_ns"):
            for k in ("min", "max", "mean", "stddev"):
                if k in d.get(lat, {}):
                    d[lat][k] /= scale
            pct = d.get(lat, {}).get("percentile")
            if pct:
                d[lat]["percentile"] = {q: v / scale for q, v in pct.items()}


def _iops_log(path: Path) -> pd.DataFrame:
    """fio's averaged log: time (ms), value (IOPS in the interval), direction, bs[, offset]."""
    rows = []
    for line in path.read_text().splitlines():
        parts = [x.strip() for x in line.split(",")]
        if len(parts) >= 2 and parts[0].isdigit():
            rows.append((int(parts[0]) / 1000.0, float(parts[1])))
    df = pd.DataFrame(rows, columns=["time_s", "iops"])
    return df.groupby("time_s", as_index=False)["iops"].sum()


def _mbps(job: dict, op: str) -> float:
    return job[op]["bw_bytes"] / 1e6


def _rates(procedure: str, f: Fio, p: dict, size: int, tracker: Tracker) -> list[dict]:
    """four-corners' or sequential-qd's runs through fio: one row of rates per test."""
    rows: list[dict] = []

    def add(name, job, op):
        rows.append({"test": name, "mb_per_s": _mbps(job, op), "iops": job[op]["iops"],
                     "latency_us_mean": job[op]["clat_ns"]["mean"] / 1e3 if "clat_ns" in job[op] else float("nan")})

    if procedure == "four-corners":
        span = min(parse_size(p["span"], "span"), size)
        tracker.step("4K random read")
        f.fresh()
        f.fill(span)
        add(f"4K random read QD{p['qd_low']}", f.run(rw="randread", bs="4k", iodepth=p["qd_low"], size=span, runtime_s=p["random_s"])[0], "read")
        # Each test from a trimmed drive, as the model's four-corners runs each from an erased
        # one; the sequential reads before the random writes: a drive that acknowledges a FLUSH
        # without programming (full power-loss protection) keeps its program units as open as
        # the step before left them, and the fill after a time-based run of 4 KiB writes lay
        # across them by however many the wall clock let through (a served P400e read 213 or
        # 245 MB/s by that count modulo 4, issue 101). After the fills alone it is aligned.
        tracker.step("128K sequential read")
        f.fresh()
        f.fill(size)
        seq_read = f.run(rw="read", bs="128k", iodepth=1, size=size, runtime_s=p["seq_s"])[0]
        for qd in (p["qd_low"], p["qd_high"]):
            tracker.step(f"4K random write QD{qd}")
            f.fresh()
            add(f"4K random write QD{qd}", f.run(rw="randwrite", bs="4k", iodepth=qd, size=span, runtime_s=p["random_s"])[0], "write")
        add("128K sequential read QD1", seq_read, "read")
        tracker.step("128K sequential write")
        f.fresh()
        add("128K sequential write QD1", f.run(rw="write", bs="128k", iodepth=1, size=size, runtime_s=p["seq_s"])[0], "write")
    else:
        tracker.step("sequential write")
        f.fresh()
        add(f"sequential write {p['bs']} QD{p['qd']}", f.run(rw="write", bs=p["bs"], iodepth=p["qd"], size=size, runtime_s=p["duration_s"])[0], "write")
        tracker.step("sequential read")
        f.fill(size)
        add(f"sequential read {p['bs']} QD{p['qd']}", f.run(rw="read", bs=p["bs"], iodepth=p["qd"], size=size, runtime_s=p["duration_s"])[0], "read")
    return rows


def run_fio_procedure(procedure: str, target: dict, params: dict, report=None) -> list[Outcome]:
    from .catalog import PROCEDURES, resolve_params

    if procedure not in FIO_PROCEDURES:
        raise SsdlabError(f"{procedure} does not run on a real device through fio; these do: {', '.join(FIO_PROCEDURES)}")
    p = resolve_params(procedure, params)
    tracker = Tracker(report, PROCEDURES[procedure].weights(p))
    label = f"target {target['path']}" + (f" ({target['time_scale']}x slower than real time)"
                                          if target.get("time_scale", 1) > 1 else "")
    size = target["size_bytes"]
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        f = (ModelFio if "model" in target else Fio)(target, Path(tmp))
        outs: list[Outcome] = []
        if procedure == "consistency":
            duration = p["duration_s"] or 2000
            for spare in p["spare"]:
                tracker.step(spare_variant(spare, p["fill"]))
                f.fresh()
                span = spare_span(size, spare, 4096)
                f.fill(span if p["fill"] == "span" else size)
                if p["precondition"] == "steady-state":
                    f.run(rw="randwrite", bs="4k", iodepth=32, size=span, io_size=max(int(span * p["steady_drive_writes"]) // 4096 * 4096, 4096))
                job, series = f.run(rw="randwrite", bs=p["bs"], iodepth=p["qd"], size=span, runtime_s=duration, iops_log=True)
                if series is None or series.empty:
                    series = pd.DataFrame({"time_s": [float(duration)], "iops": [job["write"]["iops"]]})
                outs.append(Outcome("consistency", label, spare_variant(spare, p["fill"]), consistency_summary(series, p["steady_window_s"], None),
                                    {"iops": series}, time.perf_counter() - t0, "fio"))
        elif procedure in ("four-corners", "sequential-qd"):
            rows = _rates(procedure, f, p, size, tracker)
            table = pd.DataFrame(rows)
            outs.append(Outcome(procedure, label, "", rate_summary(rows), {"results": table}, time.perf_counter() - t0, "fio"))
        elif procedure == "transfer-size":
            span = min(parse_size(p["span"], "span"), size)
            lo, hi = parse_size(p["min_bs"], "min_bs"), parse_size(p["max_bs"], "max_bs")
            rows = []
            f.fresh()
            tracker.step("sizes")
            b = lo
            sizes = []
            while b <= hi:
                sizes.append(b)
                b *= 2
            for k, bs in enumerate(sizes):
                n = max(span // bs * bs, bs * 8)
                w = f.run(rw="write", bs=str(bs), iodepth=p["qd"], size=n)[0]
                r = f.run(rw="read", bs=str(bs), iodepth=p["qd"], size=n)[0]
                rows.append({"bs_bytes": bs, "write_mb_per_s": _mbps(w, "write"), "read_mb_per_s": _mbps(r, "read")})
                tracker.update(0, 0, (k + 1) / len(sizes))
            table = pd.DataFrame(rows)
            outs.append(Outcome("transfer-size", label, "", {"read_mb_per_s_max": float(table.read_mb_per_s.max()),
                                                             "write_mb_per_s_max": float(table.write_mb_per_s.max())},
                                {"curves": table}, time.perf_counter() - t0, "fio"))
        elif procedure == "qd-scaling":
            from .procedures import QD_WORKLOADS
            tracker.step("precondition")
            f.fresh()
            f.fill(size)
            f.run(rw="randwrite", bs="4k", iodepth=32, size=size, runtime_s=p["precondition_s"] or 2000)
            rows = []
            for i, (name, job, writes) in enumerate(QD_WORKLOADS):
                if writes and i > 0:
                    tracker.step(f"top-up before {name}")
                    f.run(rw="randwrite", bs="4k", iodepth=32, size=size, runtime_s=p["topup_s"])
                for qd in p["qds"]:
                    tracker.step(f"{name} QD{qd}")
                    j, _ = f.run(rw=job["rw"], bs=job["bs"], iodepth=qd, size=size, runtime_s=p["step_s"], rwmixread=job.get("rwmixread"))
                    rows.append({"workload": name, "qd": qd, "iops": j["read"]["iops"] + j["write"]["iops"],
                                 "mb_per_s": _mbps(j, "read") + _mbps(j, "write"), "latency_us_mean": float("nan")})
            table = pd.DataFrame(rows)
            outs.append(Outcome("qd-scaling", label, "", qd_summary(table), {"curves": table}, time.perf_counter() - t0, "fio"))
        if not target["block"] and target.get("created"):
            Path(target["path"]).unlink(missing_ok=True)
    if report:
        report(1.0, "done")
    return outs
