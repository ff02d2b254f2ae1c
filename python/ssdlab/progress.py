"""A progress line on stderr: simulated time, host IOs, ETA. Shown only for runs that take
more than a couple of wall seconds."""

from __future__ import annotations

import sys
import time

SHOW_AFTER_S = 2.0


def auto(progress: bool | None) -> bool:
    """A progress setting: None (the Python API's default) means shown where someone is
    watching: stderr is a terminal, or the code runs in a Jupyter kernel."""
    if progress is not None:
        return bool(progress)
    return (hasattr(sys.stderr, "isatty") and sys.stderr.isatty()) or "ipykernel" in sys.modules


class Progress:
    def __init__(self, label: str, enabled: bool = True, stream=None):
        self.label = label
        self.enabled = enabled
        self.stream = stream or sys.stderr
        self.start = time.monotonic()
        self.last_draw = 0.0
        self.shown = False
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()

    def update(self, sim_s: float, ios: int, fraction: float) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        wall = now - self.start
        interval = 0.25 if self.tty else 15.0
        if wall < SHOW_AFTER_S or now - self.last_draw < interval:
            return
        self.last_draw = now
        eta = wall * (1 - fraction) / fraction if fraction > 0 else float("nan")
        width = 24
        filled = int(width * fraction)
        bar = "#" * filled + "-" * (width - filled)
        text = (f"{self.label} [{bar}] {fraction * 100:5.1f}%  sim {sim_s:8.1f} s  "
                f"{ios:>12,} IOs  wall {wall:6.1f} s  ETA {eta:6.1f} s")
        if self.tty:
            self.stream.write("\r" + text)
        else:
            self.stream.write(text + "\n")
        self.stream.flush()
        self.shown = True

    def close(self) -> None:
        if self.enabled and self.shown and self.tty:
            self.stream.write("\n")
            self.stream.flush()
