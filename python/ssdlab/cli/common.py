"""What the ssdlab commands share: argument types and the output directory."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

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


