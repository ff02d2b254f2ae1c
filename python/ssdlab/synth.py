"""Synthetic look-alikes of the reviews' client traces, from their published statistics
(../shared/reference/methodology.md, section 7), written as fio iolog v3 so that both ssdlab
and a real fio can replay them.

How each statistic is met (and what is assumed where the table is silent):

- operation mix: reads / (reads + writes) from the table, drawn per request;
- sizes: the listed sizes at their listed shares; the unlisted remainder is split between
  8 KiB and 128 KiB so that the mean transfer of each class (GB / operations) matches the
  table where it gives GB. Where it does not (light), ASSUMED: a quarter of the remainder
  is 128 KiB ("fewer large transfers than heavy");
- sequential share: that fraction of requests starts where the previous one of the same class
  ended; the rest start at a uniform 4 KiB-aligned offset in the span;
- queue depth: a share of requests arrives alone (QD 1), the rest in bursts issued at the same
  instant, of a size chosen so that the IO-weighted mean QD matches (a burst of B requests
  sees depths B..1, mean (B+1)/2). Destroyer gives only the mean QD: ASSUMED 50% alone;
- gaps between arrival groups: exponential, mean 1 ms (ASSUMED; replay with idle removed
  does not depend on it).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .errors import SsdlabError

if TYPE_CHECKING:  # numpy loads when a trace is made, not with the command line
    import numpy as np

KIB = 1024


@dataclass(frozen=True)
class TraceStats:
    reads: int
    writes: int
    gb_read: float | None
    gb_written: float | None
    size_mix: dict[int, float]
    sequential_share: float
    mean_qd: float
    qd1_share: float
    source: str


# methodology.md, section 7, "Published statistics of the reference client traces".
TRACES = {
    "heavy-2011": TraceStats(2_168_893, 1_783_447, 48.63, 106.32, {4 * KIB: 0.28, 16 * KIB: 0.10, 32 * KIB: 0.10, 64 * KIB: 0.04},
                             0.42, 4.625, 0.59, "methodology.md: heavy 2011"),
    "light-2011": TraceStats(372_630, 459_709, None, None, {4 * KIB: 0.27, 16 * KIB: 0.08, 32 * KIB: 0.06, 64 * KIB: 0.05},
                             0.42, 4.625, 0.59, "methodology.md: light 2011 (sequential share and QD ASSUMED as heavy)"),
    "destroyer-2013": TraceStats(38_830_000, 10_980_000, 1583.02, 875.62, {4 * KIB: 0.28, 16 * KIB: 0.10, 32 * KIB: 0.10, 64 * KIB: 0.04},
                                 0.42, 5.5, 0.50, "methodology.md: destroyer 2013 (size mix and sequential share ASSUMED as heavy)"),
}


def _size_table(stats: TraceStats, mean_bytes: float | None) -> tuple[np.ndarray, np.ndarray]:
    import numpy as np

    sizes = list(stats.size_mix)
    probs = list(stats.size_mix.values())
    rest = 1.0 - sum(probs)
    small, large = 8 * KIB, 128 * KIB
    if mean_bytes is None:
        large_share = rest / 4
    else:
        listed = sum(s * p for s, p in stats.size_mix.items())
        # listed + (rest - x) * small + x * large = mean  ->  x
        large_share = (mean_bytes - listed - rest * small) / (large - small)
        large_share = float(np.clip(large_share, 0.0, rest))
    sizes += [small, large]
    probs += [rest - large_share, large_share]
    return np.asarray(sizes, dtype=np.int64), np.asarray(probs) / sum(probs)


def burst_size(name: str) -> int:
    """The requests a look-alike issues at once (its bursts): the most it ever has outstanding
    as recorded, so the depth a replay's host queue is bounded to (issue 73 item 4)."""
    st = TRACES[name]
    return max(2, int(round(2 * (st.mean_qd - st.qd1_share) / (1 - st.qd1_share) - 1)))


def synthesize(name: str, *, fraction: float = 0.01, span_bytes: int = 128 * 10**9, seed: int = 0):
    """Requests of a look-alike: (timestamps_us, is_write, offsets, lengths) as numpy arrays.

    fraction : share of the original length (1.0 = as many requests as the original).
    span_bytes : LBA span the trace touches.
    """
    import numpy as np

    if name not in TRACES:
        raise SsdlabError(f"unknown trace '{name}'; accepted: {', '.join(TRACES)}")
    if not (0 < fraction <= 1):
        raise SsdlabError(f"fraction {fraction}: accepted (0, 1]")
    st = TRACES[name]
    rng = np.random.default_rng(seed)
    n = max(1, int((st.reads + st.writes) * fraction))
    is_write = rng.random(n) < st.writes / (st.reads + st.writes)
    lengths = np.empty(n, dtype=np.int64)
    for cls, count, gb in ((False, st.reads, st.gb_read), (True, st.writes, st.gb_written)):
        mean = gb * 1e9 / count if gb else None
        sizes, probs = _size_table(st, mean)
        idx = np.flatnonzero(is_write == cls)
        lengths[idx] = rng.choice(sizes, size=idx.size, p=probs)
    align = 4 * KIB
    slots = (span_bytes - 128 * KIB) // align
    if slots <= 0:
        raise SsdlabError(f"span {span_bytes} bytes is too small")
    offsets = rng.integers(0, slots, size=n, dtype=np.int64) * align
    sequential = rng.random(n) < st.sequential_share
    for cls in (False, True):
        idx = np.flatnonzero(is_write == cls)
        for j in range(1, idx.size):
            if sequential[idx[j]]:
                o = offsets[idx[j - 1]] + lengths[idx[j - 1]]
                offsets[idx[j]] = o if o + lengths[idx[j]] <= span_bytes else 0
    # Arrival groups: singles (QD 1) and bursts of B at the same instant.
    burst = burst_size(name)
    group_sizes = []
    remaining = n
    while remaining > 0:
        size = 1 if rng.random() < st.qd1_share / (st.qd1_share + (1 - st.qd1_share) / burst) else burst
        size = min(size, remaining)
        group_sizes.append(size)
        remaining -= size
    gaps_us = rng.exponential(1000.0, size=len(group_sizes)).astype(np.int64) + 1
    group_times = np.cumsum(gaps_us) - gaps_us[0]
    timestamps = np.repeat(group_times, group_sizes)
    return timestamps, is_write, offsets, lengths


def write_fio_iolog(path: str | Path, name: str, *, fraction: float = 0.01, span_bytes: int = 128 * 10**9,
                    seed: int = 0, filename: str = "ssdlab.dat") -> int:
    """Write a look-alike as fio iolog v3 (timestamps in microseconds). Returns requests written."""
    import numpy as np

    t, w, off, ln = synthesize(name, fraction=fraction, span_bytes=span_bytes, seed=seed)
    with open(path, "w") as f:
        f.write(f"fio version 3 iolog\n0 {filename} add\n0 {filename} open\n")
        actions = np.where(w, "write", "read")
        for ti, a, o, n in zip(t.tolist(), actions.tolist(), off.tolist(), ln.tolist()):
            f.write(f"{ti} {filename} {a} {o} {n}\n")
        f.write(f"{int(t[-1]) if len(t) else 0} {filename} close\n")
    return len(t)
