"""`ssdlab sweep SPEC.toml --out DIR` and `ssdlab sweep report DIR`."""

from __future__ import annotations

import argparse
import sys

from ..errors import SsdlabError


def _workers(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--workers '{text}': expected a whole number") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"--workers {n}: must be at least 1")
    return n


def _run(args: argparse.Namespace) -> int:
    from ..sweeps.run import sweep

    if args.spec == "report":
        raise SsdlabError("ssdlab sweep report DIR: give the sweep's output directory")
    if not args.out:
        raise SsdlabError("--out DIR is needed: where the results go")
    backend = "ray" if args.ray is not None else "local"
    r = sweep(args.spec, args.out, backend=backend, ray_address=args.ray or None, workers=args.workers,
              force=args.force, progress=not args.quiet)
    print(f"sweep {args.spec}: {len(r.points)} points, {r.ran} run, {r.skipped} already done, "
          f"{len(r.failed)} failed, {r.wall_s:.1f} s wall ({backend}); results in {r.out}")
    for n in r.notes:
        print(f"ssdlab: note: {n}", file=sys.stderr)
    if r.retried:
        print(f"  {r.retried} points run again after their worker died")
    for key, err in r.failed.items():
        p = next(p for p in r.points if p.key == key)
        axes = ", ".join(f"{k}={v}" for k, v in p.axes.items())
        print(f"  failed {key} ({p.drive}{', ' + axes if axes else ''}, seed {p.seed}): {err}")
    return 1 if r.failed else 0


def _report(args: argparse.Namespace) -> int:
    from ..sweeps.report import write_sweep_report

    paths = write_sweep_report(args.dir, png=args.png)
    print(f"wrote {', '.join(str(p) for p in paths)}")
    return 0


def add_parser(sub) -> None:
    s = sub.add_parser("sweep", help="run a grid of drives x parameters x procedures on a process pool or a Ray cluster",
                       description="Expand a sweep spec (drives, a procedure or job, [params], [grid] and [zip] axes over "
                                   "drive fields by dotted path or params.NAME, seeds) into points and run those not "
                                   "finished yet. Results: Parquet under DIR (summary/ and series/, hive-partitioned by "
                                   "procedure) and DIR/catalog.duckdb. `ssdlab sweep report DIR` draws the comparisons.",
                       epilog="example spec:\n  drives = [\"crucial-m500-120\"]\n  procedure = \"consistency\"\n"
                              "  [params]\n  duration_s = 600\n  [grid]\n  \"params.spare\" = [0, 10, 20]",
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    s.add_argument("spec", help="sweep spec (.toml); or `report DIR`")
    s.add_argument("dir", nargs="?", help=argparse.SUPPRESS)
    s.add_argument("--out", help="output directory (results of earlier runs there are kept and skipped)")
    s.add_argument("--ray", nargs="?", const="", metavar="ADDRESS",
                   help="run on a Ray cluster (ADDRESS as ray.init takes it, e.g. 10.0.0.5:6379; none: RAY_ADDRESS or a local one)")
    s.add_argument("--workers", type=_workers, help="local pool size (default: all cores)")
    s.add_argument("--force", action="store_true", help="run every point again")
    s.add_argument("--png", action="store_true", help="report: also render every chart to PNG (Chromium)")
    s.add_argument("--quiet", action="store_true", help="no progress bar")
    s.set_defaults(func=_dispatch)


def _dispatch(args: argparse.Namespace) -> int:
    if args.spec == "report":
        if not args.dir:
            raise SsdlabError("ssdlab sweep report DIR: give the sweep's output directory")
        return _report(args)
    if args.dir:
        raise SsdlabError(f"unexpected argument '{args.dir}'; the output directory goes in --out")
    return _run(args)
