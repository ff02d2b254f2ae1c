"""Power-cut testing: `ssdlab crashtest --drive NAME --cycles N --seed S`.

Each cycle runs seeded writes, overwrites, TRIMs, FLUSH and FUA on the modelled drive (timed,
several commands in flight) with its data in an on-disk store, cuts the power at a random
instant, applies what the drive's `controller.power_loss_protection` says survives (full: all
acknowledged writes; map: running programs finish, buffered host data is lost; none: running
programs are lost too and an interrupted upper-page program corrupts its paired lower page;
a lost write falls back to the copy it superseded, which the drive keeps until that write is
programmed, so data a FLUSH or FUA made durable survives), rebuilds the drive from the store as
its firmware does at power-on, and checks every unit against a shadow copy (zeros where
flushed data was are a violation). Violations are classified as in Zheng et al., FAST'13. The harness
itself is Rust (crates/ssdlab-nbd/src/crash/).
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path

from . import _ssdlab
from .drive import config_text, describe_text
from .errors import SsdlabError

CLASSES = ("bit corruption", "flying write", "unserializable write", "metadata corruption", "dead device")


def crashtest(drive: str, *, cycles: int = 100, seed: int = 0, commands: int = 400, span_mib: float = 16,
              queue_depth: int = 4, prefill: bool = False, store: str | Path | None = None,
              faults: str | None = None) -> dict:
    """Run the power-cut cycles on one drive; the report as a dict (see crash/mod.rs CrashReport)."""
    for name, value, lo, hi in (("--cycles", cycles, 1, 10**9), ("--commands", commands, 1, 10**7),
                                ("--queue-depth", queue_depth, 1, 256)):
        if not lo <= value <= hi:
            raise SsdlabError(f"{name} {value}: accepted: {lo}..{hi}")
    if not 0.0625 <= span_mib <= 1 << 20:
        raise SsdlabError(f"--span-mib {span_mib}: accepted: 0.0625 (16 units) to 1048576")
    text, source = config_text(drive, faults)
    d = describe_text(text, source)
    name = d["name"] or source
    span_units = int(span_mib * 2**20) // 4096
    if span_units * 4096 > d["user_bytes"]:
        raise SsdlabError(f"--span-mib {span_mib:g}: larger than {name}'s {d['user_bytes'] / 2**20:,.0f} MiB; "
                          f"accepted: 0.0625 to the drive's user capacity")
    with tempfile.TemporaryDirectory(prefix="ssdlab-crash-") as tmp:
        where = Path(store) if store is not None else Path(tmp) / "store"
        t0 = time.perf_counter()
        try:
            out = _ssdlab.crashtest(text, name, str(where), cycles, seed, commands, span_units, queue_depth,
                                    prefill)
        except ValueError as e:
            raise SsdlabError(f"{source or name}: {e}") from None
        except RuntimeError as e:
            raise SsdlabError(f"crashtest {name}: {e}") from None
        report = json.loads(out)
        report["wall_s"] = time.perf_counter() - t0
    return report
