"""What trace files hold, before replaying them (`ssdlab trace stats` from Python)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from . import _ssdlab
from .errors import SsdlabError


def trace_stats(paths: "str | os.PathLike | list", *, format: str | None = None, columns: str | None = None,
                device: "int | str | None" = None, skip_bad_lines: bool = False,
                time_unit: "str | float | None" = None, blkparse_arrivals: str = "D",
                fio_wait: str = "absolute", align_starts: bool = False) -> dict:
    """What trace files hold: counts, bytes, size mix, sequentiality, inter-arrival times,
    recorded queue depth, time span, LBA span and footprint (ssdlab_trace::stats). `paths`:
    one file (a str or path, as `Drive.replay` takes it) or a list of them."""
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    if blkparse_arrivals not in ("D", "Q"):
        raise SsdlabError(f"blkparse arrivals '{blkparse_arrivals}'; accepted: D, Q")
    try:
        return json.loads(_ssdlab.trace_stats(
            [str(p) for p in paths], format=format, columns=columns, device=device_number(device),
            skip_bad_lines=skip_bad_lines, time_unit_ns=time_unit_ns(time_unit),
            blkparse_queue_arrivals=blkparse_arrivals == "Q", fio_wait_relative=fio_wait == "relative",
            align_starts=align_starts))
    except ValueError as e:
        raise SsdlabError(str(e)) from None


TIME_UNITS = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}


def time_unit_ns(unit: "str | float | None") -> float | None:
    """A time unit by name (ns, us, ms, s) or as ns per unit; None: decided from the trace."""
    if unit is None:
        return None
    if isinstance(unit, str):
        if unit in TIME_UNITS:
            return TIME_UNITS[unit]
        try:
            unit = float(unit)
        except ValueError:
            raise SsdlabError(f"--time-unit '{unit}': accepted: ns, us, ms, s, or nanoseconds per unit") from None
    if not unit > 0 or unit == float("inf"):
        raise SsdlabError(f"--time-unit {unit}: must be positive")
    return float(unit)


def device_number(device: "int | str | None") -> int | None:
    """A device filter: a number, or "MAJ,MIN" as blkparse prints it (major << 20 | minor)."""
    if device is None:
        return None
    text = str(device).strip()
    if "," in text or ":" in text:
        major, _, minor = text.replace(":", ",").partition(",")
        try:
            ma, mi = int(major), int(minor)
        except ValueError:
            raise SsdlabError(f"--device '{device}': expected a number or MAJ,MIN (e.g. 8,16)") from None
        if not (0 <= ma < 4096 and 0 <= mi < 2**20):
            raise SsdlabError(f"--device {device}: major must be below 4096 and minor below 2^20")
        return (ma << 20) | mi
    try:
        n = int(text)
    except ValueError:
        raise SsdlabError(f"--device '{device}': expected a number or MAJ,MIN (e.g. 8,16)") from None
    if not 0 <= n < 2**32:
        raise SsdlabError(f"--device {device}: must be between 0 and {2**32 - 1}")
    return n


def device_label(device: int) -> str:
    """A device number as a trace names it: MAJ,MIN when it has a major (blkparse, FIU)."""
    return str(device) if device < 1 << 20 else f"{device >> 20},{device & 0xFFFFF}"


class RequestLogWriter:
    """One Parquet row per replayed request, written in batches as the replay goes."""

    OPS = ("read", "write", "trim")

    def __init__(self, path: "str | Path"):
        import pyarrow as pa
        import pyarrow.parquet as pq

        self.path = Path(path)
        if self.path.parent and not self.path.parent.exists():
            raise SsdlabError(f"--per-request {path}: directory {self.path.parent} does not exist")
        self._pa = pa
        self.schema = pa.schema([
            ("arrival_us", pa.float64()), ("submit_us", pa.float64()), ("complete_us", pa.float64()),
            ("offset_bytes", pa.uint64()), ("length_bytes", pa.uint64()),
            ("op", pa.dictionary(pa.int8(), pa.string())), ("latency_us", pa.float64()),
        ])
        try:
            self.writer = pq.ParquetWriter(self.path, self.schema, compression="zstd")
        except OSError as e:
            raise SsdlabError(f"--per-request {path}: cannot write: {e}") from None
        self.rows = 0

    def add(self, columns: list) -> None:
        import numpy as np

        arrival = np.frombuffer(columns[0], dtype="<i8")  # signed: recorded before the first request
        submit, complete, offset, length = (np.frombuffer(c, dtype="<u8") for c in columns[1:5])
        op = np.frombuffer(columns[5], dtype=np.uint8)
        if len(op) == 0:
            return
        pa = self._pa
        table = pa.table({
            "arrival_us": arrival / 1e3, "submit_us": submit / 1e3, "complete_us": complete / 1e3,
            "offset_bytes": offset, "length_bytes": length,
            "op": pa.DictionaryArray.from_arrays(pa.array(op.astype(np.int8)), pa.array(self.OPS)),
            "latency_us": (complete - submit) / 1e3,
        }, schema=self.schema)
        self.writer.write_table(table)
        self.rows += len(op)

    def close(self) -> None:
        self.writer.close()
