"""`ssdlab validate --groups placement`'s rows (issue 99), as dicts of a `validate.Row`'s
fields: FDP and ZNS where theory is exact, and the flash-cache procedure's predictions.

- FDP: on the theory drive, a uniform random stream on its own persistently isolated handle,
  beside a sequential stream on another (half the writes each), has the greedy mean field's
  write amplification at its own share of the space: alpha_r = (physical - the sequential
  data) / its data.
- ZNS: the drive never copies zone data, so the zones' data is written once: (host + copied)
  / host units = 1, whatever the host's resets (fio's zbd random writes over every zone, four
  times the namespace).
- Flash cache (methodology.md 13, EuroSys '25's layout): the device's write amplification on a
  sixteenth of crucial-m500-120, as predictions (the published figures are kept outside).
"""

from __future__ import annotations

import re

from . import _ssdlab
from .configs import DriveText, preset_path
from .drive import Drive
from .job import Job

# Placement's theory rows: (alpha, the sequential stream's share of the logical space).
PLACEMENT_CASES = ((1.25, 0.5), (1.25, 0.3), (1.5, 0.5), (1.5, 0.3))
TOLERANCE = 0.015


def shrunk_preset(name: str, blocks_div: int, user_div: int) -> DriveText:
    """Preset `name` with 1/`blocks_div` of its blocks (and of its map checkpoint's journal)
    and 1/`user_div` of its user capacity (a little less than the blocks', so FDP's default
    handles' open blocks fit): the same dies, timing and firmware, a run in seconds."""
    text = preset_path(name).read_text()
    for key, div in (("blocks_per_plane", blocks_div), ("user_capacity_bytes", user_div),
                     ("map_checkpoint_journal_pages", blocks_div)):
        text = re.sub(rf"^({key} = )(\d+)", lambda m: f"{m.group(1)}{int(m.group(2)) // div}", text, flags=re.M)
    return DriveText(text, f"{name} (1/{blocks_div} of its blocks)")


def fdp_rows(blocks: int = 1024, b: int = 64, warmup: float = 5.0, measure: float = 5.0, seed: int = 1,
             cases=PLACEMENT_CASES) -> list[dict]:
    rows = []
    for alpha, share in cases:
        _, random_waf = _ssdlab.simulate_placement_waf(b, blocks, alpha, share, 0.5, warmup, measure, seed)
        logical = int(b * blocks / alpha)
        seq = int(logical * share)
        alpha_r = (b * blocks - seq) / (logical - seq)
        expected = _ssdlab.theory_waf("greedy", alpha_r, b, 0)
        name = (f"FDP: uniform random stream isolated beside a sequential one ({share:.0%} of the space), "
                f"greedy b={b}, alpha {alpha} (its own {alpha_r:.4f})")
        rows.append(_row(name, expected, random_waf))
    return rows


def zns_row(seed: int = 1) -> dict:
    d = Drive.open(shrunk_preset("crucial-m500-120", 16, 22), seed=seed, placement="zns:64M:14")
    zones = d.zones()
    written = 4 * zones["zones"] * zones["capacity_bytes"]
    d.run(Job(rw="randwrite", bs="1m", iodepth=8, zonemode="zbd", zonesize="64m", io_size=str(written)), progress=False)
    c = d.counters()["ftl"]
    measured = (c["host_units_written"] + c["gc_units_copied"]) / c["host_units_written"]
    resets = d.zones()["counters"]["resets"]
    name = (f"ZNS: zone data is never copied: fio zbd random writes of 4x the namespace ({resets:,} zone resets) "
            f"on crucial-m500-120 with 1/16 of its blocks, 64 MiB zones; (host + copied) / host units")
    return _row(name, 1.0, measured)


def flash_cache_rows(seed: int = 0) -> list[dict]:
    from .review.catalog import resolve_params
    from .review.placement import flash_cache
    from .review.procedures import Tracker
    p = resolve_params("flash-cache", {"utilisation": [100], "soc_pct": [10, 40], "handles": [1, 2],
                                       "drive_writes": 3.0, "samples": 6})
    rows = []
    for o in flash_cache(shrunk_preset("crucial-m500-120", 16, 22), p, Tracker(), seed):
        s = o.summary
        rows.append({"group": "placement", "item": f"flash cache (CacheLib layout, FDP default), crucial-m500-120 with 1/16 "
                     f"of its blocks, {o.variant}, 3 cache writes: device WAF (steady half)",
                     "expected": float("nan"), "simulated": s["waf_steady"], "unit": "WAF", "tolerance": "prediction",
                     "passed": True})
    return rows


def _row(name: str, expected: float, measured: float) -> dict:
    err = abs(measured - expected) / expected
    return {"group": "placement", "item": name, "expected": expected, "simulated": measured, "unit": "WAF",
            "tolerance": "1.5%", "passed": err <= TOLERANCE}
