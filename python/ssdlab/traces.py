"""What trace files hold, before replaying them (`ssdlab trace stats` from Python)."""

from __future__ import annotations

import json

from . import _ssdlab
from .drive import device_number, time_unit_ns
from .errors import SsdlabError


def trace_stats(paths: list[str], *, format: str | None = None, columns: str | None = None,
                device: "int | str | None" = None, skip_bad_lines: bool = False,
                time_unit: "str | float | None" = None, blkparse_arrivals: str = "D",
                fio_wait: str = "absolute", align_starts: bool = False) -> dict:
    """What trace files hold: counts, bytes, size mix, sequentiality, inter-arrival times,
    recorded queue depth, time span, LBA span and footprint (ssdlab_trace::stats)."""
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
