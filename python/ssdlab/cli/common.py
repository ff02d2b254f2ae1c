"""What the ssdlab commands share: argument types and the output directory."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from ..drive import PRECONDITIONS, STEADY_STATE_DRIVE_WRITES
from ..errors import SsdlabError
from ..job import _int


def whole(flag: str):
    """An argparse type: a whole number (with fio's k/m/g), with a clear error."""
    def parse(text: str) -> int:
        try:
            return _int(text)
        except ValueError as e:
            raise argparse.ArgumentTypeError(f"{flag}: {e}") from None
    return parse


def in_range(flag: str, low: int, high: int):
    """An argparse type: an integer in [low, high], checked before Python's int meets Rust's."""
    def parse(text: str) -> int:
        try:
            v = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{flag} '{text}': expected a whole number") from None
        if not low <= v <= high:
            raise argparse.ArgumentTypeError(f"{flag} {v}: must be between {low} and {high:,}")
        return v
    return parse


def _number(flag: str, zero_ok: bool):
    """An argparse type: a finite number above 0 (or of 0 or more), with a clear error."""
    accepted = "a number of 0 or more" if zero_ok else "a positive number"

    def parse(text: str) -> float:
        try:
            v = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{flag} '{text}': expected a number") from None
        if not ((v >= 0 if zero_ok else v > 0) and v != float("inf")):
            raise argparse.ArgumentTypeError(f"{flag} {text}: accepted: {accepted}")
        return v
    return parse


def nonnegative(flag: str):
    """An argparse type: a number of 0 or more (fractions allowed)."""
    return _number(flag, True)


def positive(flag: str):
    """An argparse type: a number above 0 (fractions allowed)."""
    return _number(flag, False)


def not_empty(flag: str, accepted: str):
    """An argparse type: any text but an empty one (`--store "$DIR"` with DIR unset), which
    would otherwise mean something the user did not ask for."""
    def parse(text: str) -> str:
        if not text.strip():
            raise argparse.ArgumentTypeError(f"{flag} {text!r}: empty (an unset shell variable?); accepted: {accepted}")
        return text
    return parse


FAULTS_SPEC = not_empty("--faults", "key=value pairs, e.g. uncorrectable=1e-5,seed=7 (leave --faults out for the drive's own)")
STORE_DIR = not_empty("--store", "the path of a directory")


def add_precondition(parser: argparse.ArgumentParser, what: str) -> None:
    """`--precondition` and `--precondition-drive-writes` (the drive state before `what`)."""
    parser.add_argument("--precondition", default="none", choices=PRECONDITIONS,
                        help=f"drive state before {what} (default none): secure-erase, fill (timed sequential fill), "
                             "fast-fill (the same state untimed), steady-state (SNIA-style: purge, fill, then untimed "
                             "4 KiB random writes)")
    parser.add_argument("--precondition-drive-writes", type=nonnegative("--precondition-drive-writes"),
                        default=STEADY_STATE_DRIVE_WRITES,
                        help="steady-state precondition: drive writes of 4 KiB random writes after the fill "
                             f"(default {STEADY_STATE_DRIVE_WRITES:g})")


# Every command's --seed: the simulator's generators take 64 bits.
SEED = in_range("--seed", 0, 2**64 - 1)


def out_dir(path: str | None) -> Path | None:
    """The output directory, made (or found writable) now: a typo must not cost a long run."""
    if path is None:
        return None
    out = Path(path)
    if out.exists() and not out.is_dir():
        raise SsdlabError(f"--out {path}: is a file; accepted: a directory (made if missing)")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise SsdlabError(f"--out {path}: cannot make it: {e.strerror}") from None
    if not os.access(out, os.W_OK):
        raise SsdlabError(f"--out {path}: not writable")
    return out


def power_line(summary: dict) -> str | None:
    """The power figures of a run's summary on one line (None for a drive without a power model)."""
    p = summary.get("power")
    if not p:
        return None
    if p.get("shared_with"):
        # Concurrent jobs: the drive's power while this job ran, which the others' IO shares.
        line = (f"  power (the drive's, shared with {', '.join(p['shared_with'])}): average {p['average_w']:.2f} W, "
                f"peak {p['peak_w']:.2f} W, {p['energy_j']:,.1f} J over this job's span")
    else:
        line = (f"  power: average {p['average_w']:.2f} W, peak {p['peak_w']:.2f} W, {p['energy_j']:,.1f} J, "
                f"{p['joules_per_gb']:.2f} J/GB moved, {p['iops_per_w']:,.0f} IOPS/W")
    if p.get("temperature_c_max") is not None:
        line += f"; up to {p['temperature_c_max']:.1f} C, throttled {p['throttled_s']:.0f} s"
    return line
