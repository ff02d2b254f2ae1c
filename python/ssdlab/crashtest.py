"""Power-cut testing: `ssdlab crashtest --drive NAME --cycles N --seed S`.

Each cycle runs seeded writes, overwrites, TRIMs, FLUSH and FUA on the modelled drive (timed,
several commands in flight) with its data in an on-disk store, cuts the power at a random
instant, applies what the drive's `controller.power_loss_protection` says survives (full: all
acknowledged writes; map: running programs finish, buffered host data is lost; none: running
programs are lost too and an interrupted upper-page program corrupts its paired lower page),
rebuilds the drive from the store as its firmware does at power-on, and checks every unit
against a shadow copy. Violations are classified as in Zheng et al., FAST'13. The harness
itself is Rust (crates/ssdlab-nbd/src/crash.rs).
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

from . import _ssdlab
from .drive import FAULTS_HELP, config_text, describe_text
from .errors import SsdlabError

CLASSES = ("bit corruption", "flying write", "unserializable write", "metadata corruption", "dead device")


def crashtest(drive: str, *, cycles: int = 100, seed: int = 0, commands: int = 400, span_mib: float = 16,
              queue_depth: int = 4, prefill: bool = False, store: str | Path | None = None,
              faults: str | None = None) -> dict:
    """Run the power-cut cycles on one drive; the report as a dict (see crash.rs CrashReport)."""
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


def format_table(reports: list[dict]) -> str:
    head = (f"{'drive':<22} {'protection':<10} {'RAIN':<4} {'cycles':>7} {'commands':>9} {'lost':>6} "
            f"{'fell back':>9} {'corrupted':>9} {'by RAIN':>7} {'det. err':>8} {'mount ms':>8} {'violations':>10}")
    lines = [head, "-" * len(head)]
    for r in reports:
        lines.append(
            f"{r['drive']:<22} {r['protection']:<10} {'yes' if r['rain'] else 'no':<4} {r['cycles']:>7,} "
            f"{r['commands']:>9,} {r['lost_units']:>6,} {r['fell_back_units']:>9,} {r['corrupted_units']:>9,} "
            f"{r['repaired_by_rain_units']:>7,} {r['detected_errors']:>8,} {r['mount_ms_mean']:>8.1f} "
            f"{r['violations']:>10,}")
    for r in reports:
        for cls, n in r["violations_by_class"].items():
            lines.append(f"  {r['drive']}: {n:,} {cls}")
        for ex in r["examples"]:
            lines.append(f"    {ex}")
    lines.append("lost: acknowledged or in-flight host copies the cuts lost (allowed by the drive's protection); "
                 "fell back: of those, units that returned to an older copy still on the NAND; corrupted: units "
                 "of paired lower pages of interrupted programs; det. err: reads answered with a detected error.")
    return "\n".join(lines)


def run_cli(args) -> int:
    reports = []
    for drive in args.drive:
        r = crashtest(drive, cycles=args.cycles, seed=args.seed, commands=args.commands, span_mib=args.span_mib,
                      queue_depth=args.queue_depth, prefill=args.prefill,
                      store=args.store if len(args.drive) == 1 else None, faults=args.faults)
        faults = (f" (faults: {r['program_failures']:,} program and {r['erase_failures']:,} erase failures, "
                  f"{r['grown_bad_blocks']:,} grown bad blocks)" if args.faults else "")
        print(f"ssdlab crashtest: {r['drive']}: {r['cycles']:,} cycles in {r['wall_s']:.1f} s, "
              f"{r['violations']:,} violations{faults}", file=sys.stderr, flush=True)
        reports.append(r)
    print(format_table(reports))
    if args.json:
        Path(args.json).write_text(json.dumps(reports, indent=2) + "\n")
    return 1 if any(r["violations"] for r in reports) else 0


def add_parser(sub) -> None:
    c = sub.add_parser("crashtest", help="cut the power at random points and check what each drive keeps",
                       description=__doc__.split("\n\n")[1].replace("\n", " "))
    c.add_argument("--drive", action="append", required=True, help="preset name or drive .toml (repeat for several)")
    c.add_argument("--cycles", type=int, default=100, help="power cuts (default 100)")
    c.add_argument("--seed", type=int, default=0)
    c.add_argument("--commands", type=int, default=400, help="commands per cycle; the cut falls at a random one (default 400)")
    c.add_argument("--span-mib", type=float, default=16, help="MiB of the drive written from offset 0 (default 16)")
    c.add_argument("--queue-depth", type=int, default=4, help="commands in flight (default 4)")
    c.add_argument("--prefill", action="store_true", help="start with every unit written, so garbage collection runs from the first cycle")
    c.add_argument("--store", help="directory for the drive's store (default: a temporary one; one drive only)")
    c.add_argument("--json", help="write the reports here as JSON")
    c.add_argument("--faults", metavar="SPEC", help=FAULTS_HELP + " (program and erase failures move data; the check is unchanged)")
    c.set_defaults(func=run_cli)
