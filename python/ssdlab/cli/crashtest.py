"""`ssdlab crashtest`: power cuts at random points, and what each drive keeps."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ..crashtest import __doc__ as crashtest_doc
from ..crashtest import crashtest
from ..drive import FAULTS_HELP
from ..errors import SsdlabError
from .common import FAULTS_SPEC, SEED, STORE_DIR


def format_table(reports: list[dict]) -> str:
    head = (f"{'drive':<22} {'protection':<10} {'RAIN':<4} {'cycles':>7} {'commands':>9} {'lost':>6} "
            f"{'fell back':>9} {'held':>6} {'corrupted':>9} {'by RAIN':>7} {'det. err':>8} {'mount ms':>8} "
            f"{'violations':>10}")
    lines = [head, "-" * len(head)]
    for r in reports:
        lines.append(
            f"{r['drive']:<22} {r['protection']:<10} {'yes' if r['rain'] else 'no':<4} {r['cycles']:>7,} "
            f"{r['commands']:>9,} {r['lost_units']:>6,} {r['fell_back_units']:>9,} {r['erases_held']:>6,} "
            f"{r['corrupted_units']:>9,} "
            f"{r['repaired_by_rain_units']:>7,} {r['detected_errors']:>8,} {r['mount_ms_mean']:>8.1f} "
            f"{r['violations']:>10,}")
    for r in reports:
        if r["erase_holds_broken"]:
            lines.append(f"  {r['drive']}: {r['erase_holds_broken']:,} held erases ended early (a die out of free "
                         "blocks): a cut then may lose flushed data")
        for cls, n in r["violations_by_class"].items():
            lines.append(f"  {r['drive']}: {n:,} {cls}")
        for ex in r["examples"]:
            lines.append(f"    {ex}")
    lines.append("lost: acknowledged or in-flight host copies the cuts lost (allowed by the drive's protection); "
                 "fell back: of those, units that returned to an older copy still on the NAND; held: victims whose "
                 "erase waited until the writes superseding their copies were programmed (map/none drives keep "
                 "the older copy for a cut); corrupted: units "
                 "of paired lower pages of interrupted programs; det. err: reads answered with a detected error.")
    return "\n".join(lines)


def run_cli(args) -> int:
    if args.store and len(args.drive) > 1:
        raise SsdlabError(f"--store {args.store}: one store holds one drive; accepted: --store with one --drive "
                          f"(given {len(args.drive)}: {', '.join(args.drive)})")
    reports = []
    for drive in args.drive:
        r = crashtest(drive, cycles=args.cycles, seed=args.seed, commands=args.commands, span_mib=args.span_mib,
                      queue_depth=args.queue_depth, prefill=args.prefill,
                      store=args.store, faults=args.faults)
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
                       description=crashtest_doc.split("\n\n")[1].replace("\n", " "))
    c.add_argument("--drive", action="append", required=True, help="preset name or drive .toml (repeat for several)")
    c.add_argument("--cycles", type=int, default=100, help="power cuts (default 100)")
    c.add_argument("--seed", type=SEED, default=0)
    c.add_argument("--commands", type=int, default=400, help="commands per cycle; the cut falls at a random one (default 400)")
    c.add_argument("--span-mib", type=float, default=16, help="MiB of the drive written from offset 0 (default 16)")
    c.add_argument("--queue-depth", type=int, default=4, help="commands in flight (default 4)")
    c.add_argument("--prefill", action="store_true", help="start with every unit written, so garbage collection runs from the first cycle")
    c.add_argument("--store", type=STORE_DIR, help="directory for the drive's store (default: a temporary one; one drive only)")
    c.add_argument("--json", help="write the reports here as JSON")
    c.add_argument("--faults", metavar="SPEC", type=FAULTS_SPEC, help=FAULTS_HELP + " (program and erase failures move data; the check is unchanged)")
    c.set_defaults(func=run_cli)
