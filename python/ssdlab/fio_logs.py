"""fio's log files from a run: `write_bw_log`, `write_iops_log` and `write_lat_log` write
`PREFIX_bw.N.log`, `PREFIX_iops.N.log` and `PREFIX_lat/clat/slat.N.log` in fio's format
(HOWTO "Log File Formats": `time (ms), value, data direction, block size, [offset,] priority`;
bw in KiB/s, latency in ns), which fio2gnuplot and fio's other tools read.

Without `log_avg_msec` (or with 0), as fio: one line per IO at its completion (time since the
job's start, its latency, its direction, its length; its offset with `log_offset=1`; iops 1,
bw its bytes over its latency), one file per clone of a job (N counts every job's clones, as
fio numbers its threads); `IoLogWriter` writes them as the run goes. With `log_avg_msec`, one
line per direction per interval of the job's series, the mean over that interval (block size
0, as in fio's windowed logs): `write_fio_logs`. A simulated command has no submission
latency: slat is 0 and lat equals clat."""

from __future__ import annotations

from pathlib import Path

# fio option -> the logs it writes.
_LOGS = {"write_bw_log": ("bw",), "write_iops_log": ("iops",), "write_lat_log": ("lat", "clat", "slat")}
_DIRECTIONS = (("read", 0), ("write", 1))


def wanted(options: dict) -> bool:
    return any(k in options for k in _LOGS)


def per_io(options: dict) -> bool:
    """The logs `options` ask for hold a line per IO (no `log_avg_msec`, or 0)."""
    return wanted(options) and str(options.get("log_avg_msec") or "0").strip() == "0"


def _paths(options: dict, jobname: str, jobnum: int, directory: Path) -> list[tuple[str, Path]]:
    out = []
    for option, kinds in _LOGS.items():
        if option not in options:
            continue
        prefix = options[option] or jobname  # fio: the job's name when no prefix is given
        for kind in kinds:
            path = Path(prefix) if Path(prefix).is_absolute() else directory / prefix
            out.append((kind, path.with_name(f"{path.name}_{kind}.{jobnum}.log")))
    return out


class IoLogWriter:
    """Per-IO log files for the streams of a group of jobs run together: `streams[k]` is
    (options, job name, fio job number) of stream k (a job's clones are consecutive streams).
    `add` takes a batch of completions (ssdlab.Drive.run_together's `on_ios`); `close` ends
    the files and returns their paths."""

    def __init__(self, streams: list[tuple[dict, str, int]], directory: Path = Path(".")):
        self.files: dict[int, list[tuple[str, bool, object]]] = {}
        self.paths: list[Path] = []
        for k, (options, name, jobnum) in enumerate(streams):
            if not per_io(options):
                continue
            offset = str(options.get("log_offset", "0")).strip() not in ("0", "", "false")
            opened = []
            for kind, path in _paths(options, name, jobnum, directory):
                opened.append((kind, offset, path.open("w")))
                self.paths.append(path)
            self.files[k] = opened

    def add(self, ios: dict) -> None:
        import numpy as np
        for k, files in self.files.items():
            rows = np.flatnonzero(ios["stream"] == k)
            if not len(rows):
                continue
            t_ms = ios["time_ns"][rows] // 1_000_000
            lat = ios["latency_ns"][rows]
            op, length, offset = ios["op"][rows], ios["length_bytes"][rows], ios["offset_bytes"][rows]
            for kind, with_offset, f in files:
                if kind == "iops":
                    value = np.ones(len(rows), dtype=np.int64)
                elif kind == "bw":
                    value = np.round(length * 1e9 / np.maximum(lat, 1) / 1024).astype(np.int64)
                elif kind == "slat":
                    value = np.zeros(len(rows), dtype=np.int64)
                else:
                    value = lat
                cols = [t_ms, value, op, length] + ([offset] if with_offset else [])
                f.write("".join(", ".join(map(str, row)) + ", 0\n" for row in zip(*(c.tolist() for c in cols))))

    def close(self) -> list[Path]:
        for files in self.files.values():
            for _, _, f in files:
                f.close()
        return self.paths


def write_fio_logs(result, options: dict, jobname: str, jobnum: int, directory: Path = Path(".")) -> list[Path]:
    """The windowed log files `options` (a job's fio options as given, with `log_avg_msec`)
    ask for, for job number `jobnum` (1-based, as fio numbers them), from the job's series. A
    prefix without a directory goes to `directory`."""
    s = result.series
    paths = []
    for kind, path in _paths(options, jobname, jobnum, directory):
        lines = []
        for row in s.itertuples(index=False):
            t_ms = round(row.time_s * 1000)
            for op, ddir in _DIRECTIONS:
                iops = getattr(row, f"{op}_iops")
                if not iops:
                    continue
                if kind == "bw":
                    value = getattr(row, f"{op}_mb_per_s") * 1e6 / 1024
                elif kind == "iops":
                    value = iops
                elif kind == "slat":
                    value = 0
                else:
                    value = getattr(row, f"{op}_latency_us_mean") * 1e3
                lines.append(f"{t_ms}, {round(value)}, {ddir}, 0, 0\n")
        path.write_text("".join(lines))
        paths.append(path)
    return paths
