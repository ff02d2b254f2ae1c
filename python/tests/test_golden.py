"""Golden figures through the Python API: results a refactor must leave bit for bit as they are
(issue 22, "Guards"). A change that moves them changes the model's results: it fails here and
the new figures go in with the commit that explains why. The Rust side pins the steady-state
digests and the 960 GB consistency run (crates/ssdlab-core/tests/golden.rs).

The files under golden/ were written at f4e983d, the last commit before the renovation:
golden/validate_quick.json is `ssdlab validate` (theory, physics, datasheet, --quick) of two
presets, one client and one enterprise drive. Changed since, each with its reason: issue 23
made a self-encrypting drive's secure erase a crypto erase (no block erased; the collector
erases them as it reclaims them), so the M500 120GB's fresh random write row moved from
37,164 to 37,160 IOPS (-0.01%). Issue 24 (fidelity, second round) moved the physics and
datasheet rows of both presets, the theory rows not at all: the 128 Gbit part's effective
array times (M500 120GB sequential write 152 -> 131 MB/s, random read 55.3K -> 62.0K), the P320h
built as its datasheet has it (16 Gb dies, RAIN 7:1), PCIe command frames of 100 ns instead of
1 us (random reads at QD256 442K -> 735K), rating conditions per preset (QD256 for the P320h)
and garbage collection's copies on the write data path. Issue 71 (second round) moved the
P320h 175GB's steady-state rows: the enterprise presets collect a victim whole in one bite,
host data placed on the next die or the one after it (docs/fidelity.md, "The enterprise
drives' spread"). Issue 100 (page types: the MLC part's lower and upper pages at their own
times, the part's mean kept) moved the M500 120GB's rows (random read 62.2K -> 62.6K IOPS, QD1
reads now half on the faster lower pages; sequential write 131.3 -> 131.4 MB/s); the P320h's
SLC has one page type, and its steady-state random read moved 734.6K -> 734.8K IOPS with
validate's first second of enterprise random reads after the writes no longer measured (the
collection the writes left queued)."""

import json
from dataclasses import asdict
from pathlib import Path

from ssdlab.validate import validate

GOLDEN = Path(__file__).parent / "golden"


def test_validate_rows_are_unchanged():
    rows = validate(["theory", "physics", "datasheet"], ["crucial-m500-120", "micron-p320h-175"], quick=True,
                    progress=False)
    got = json.dumps([asdict(r) | {"error_pct": r.error_pct} for r in rows], indent=2)
    want = (GOLDEN / "validate_quick.json").read_text()
    if got != want:
        changed = [f"{a['group']} {a['item']}: {a['simulated']} (was {b['simulated']})"
                   for a, b in zip(json.loads(got), json.loads(want)) if a != b]
        raise AssertionError(f"validate rows moved ({len(changed)} of {len(rows)}): " + "; ".join(changed[:10]))
