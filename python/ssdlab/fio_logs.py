"""fio's log files from a run: `write_bw_log`, `write_iops_log` and `write_lat_log` write
`PREFIX_bw.N.log`, `PREFIX_iops.N.log` and `PREFIX_lat/clat/slat.N.log` in fio's format
(HOWTO "Log File Formats": `time (ms), value, data direction, block size, priority`; bw in
KiB/s, latency in ns), which fio2gnuplot and fio's other tools read.

ssdlab logs windowed values, as fio does with `log_avg_msec`: one line per direction per
interval of the run's series (the job's `log_avg_msec`, 1 s by default), the mean over that
interval; fio without `log_avg_msec` would log every IO. Block size and priority are 0, as in
fio's windowed logs. A simulated command has no submission latency: slat is 0 and lat equals
clat."""

from __future__ import annotations

from pathlib import Path

# fio option -> the logs it writes.
_LOGS = {"write_bw_log": ("bw",), "write_iops_log": ("iops",), "write_lat_log": ("lat", "clat", "slat")}
_DIRECTIONS = (("read", 0), ("write", 1))


def wanted(options: dict) -> bool:
    return any(k in options for k in _LOGS)


def write_fio_logs(result, options: dict, jobname: str, jobnum: int, directory: Path = Path(".")) -> list[Path]:
    """The log files `options` (a job's fio options as given) ask for, for job number `jobnum`
    (1-based, as fio numbers them). A prefix without a directory goes to `directory`."""
    s = result.series
    paths = []
    for option, kinds in _LOGS.items():
        if option not in options:
            continue
        prefix = options[option] or jobname  # fio: the job's name when no prefix is given
        for kind in kinds:
            path = Path(prefix) if Path(prefix).is_absolute() else directory / prefix
            path = path.with_name(f"{path.name}_{kind}.{jobnum}.log")
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
