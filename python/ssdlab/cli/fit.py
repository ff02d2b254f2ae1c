"""`ssdlab fit`: a preset fitted to a drive's measured figures (`ssdlab.fit`)."""

from __future__ import annotations

from pathlib import Path

from ..errors import SsdlabError
from .common import in_range


def _fit(args) -> int:
    from ..fit import FREE, fit, fitted_preset, read_measurements, report

    only = [k.strip() for k in args.figures.split(",") if k.strip()] if args.figures else None
    meas = read_measurements(args.measurements, only)
    drive = args.drive or meas.drive
    if not drive:
        raise SsdlabError(f"{meas.path}: no drive to start from: give --drive or `drive = ...` in the file")
    free = [n.strip() for n in args.free.split(",") if n.strip()] if args.free else None
    if free is not None and not free:
        raise SsdlabError(f"--free {args.free!r}: name at least one parameter, e.g. {next(iter(FREE))}")
    if not (0 < args.seconds < 1e6):
        raise SsdlabError(f"--seconds {args.seconds:g}: simulated seconds per figure and trial, above 0 (and finite)")
    if args.max_trials < 1:
        raise SsdlabError(f"--max-trials {args.max_trials}: at least 1")
    if args.jobs is not None and args.jobs < 1:
        raise SsdlabError(f"--jobs {args.jobs}: at least 1")
    out = Path(args.out) if args.out else None
    if out is not None and out.exists() and not args.force:
        raise SsdlabError(f"--out {out} exists; add --force to replace it")
    if out is not None and not out.parent.is_dir():
        raise SsdlabError(f"--out {out}: directory {out.parent} does not exist")
    catalog = Path(args.catalog) if args.catalog else out.with_name(out.stem + ".trials.jsonl") if out else None
    if catalog is not None and not catalog.parent.is_dir():
        raise SsdlabError(f"--catalog {catalog}: directory {catalog.parent} does not exist")
    progress = None if args.quiet else (lambda text: print(text, flush=True))
    r = fit(drive, meas, free, seconds=args.seconds, jobs=args.jobs, progress=progress, max_trials=args.max_trials,
            catalog=catalog, ray_address=args.ray)
    print(report(r))
    if catalog is not None:
        print(f"{r.ran} of the {r.trials} trials simulated now, the rest from the catalog; all kept in {catalog}")
    if not r.converged:
        raise SsdlabError(f"the fit did not converge in {r.trials} trials ({r.message}); nothing written: "
                          "raise --max-trials (the trials run so far are kept in the catalog, if any), or free fewer parameters")
    if out is not None:
        out.write_text(fitted_preset(r, meas))
        print(f"wrote {out}")
    return 0


def add_parser(sub) -> None:
    p = sub.add_parser("fit", help="fit a preset's calibrated and assumed parameters to a drive's measured figures",
                       description="Find the parameter values with which a preset reproduces a drive's measured "
                                   "figures, print how each figure moves with each parameter, name those the "
                                   "figures cannot identify, and write the fitted preset (--out). The figures: a "
                                   "TOML file ([figures] rand_read_iops, rand_write_iops, seq_read_mbps, "
                                   "seq_write_mbps under [conditions] queue_depth, workers, seq_transfer_kib; "
                                   "[[procedure]] name, parameters, variant, figures; drive = START), or the "
                                   "summary JSON of `ssdlab procedure NAME --out DIR` (of a real device through "
                                   "--target, or of a model).")
    p.add_argument("measurements", nargs="+", help="the measurement files (TOML, or a procedure's NAME-summary.json), "
                                                   "their figures fitted together")
    p.add_argument("--drive", help="the preset (or drive .toml) to start from (default: the file's `drive`)")
    p.add_argument("--free", help="comma-separated SECTION.KEY parameters to fit (default: the calibrated and "
                                  "assumed ones the drive sets, as docs/fidelity.md lists them)")
    p.add_argument("--figures", help="comma-separated figures of the file to fit (default: every one it gives; of a "
                                     "procedure's summary JSON its rates, and a consistency run's level, floor and spread)")
    p.add_argument("--out", help="write the fitted preset here (TOML)")
    p.add_argument("--force", action="store_true", help="replace --out if it exists")
    p.add_argument("--seconds", type=float, default=3.0, help="simulated seconds per figure and trial (default 3)")
    p.add_argument("--max-trials", type=int, default=200, help="simulations at most (default 200)")
    p.add_argument("--jobs", type=in_range("--jobs", 1, 1024), help="parallel processes (default: all cores)")
    p.add_argument("--ray", metavar="ADDRESS", help="run the trials on the Ray cluster at ADDRESS ('auto': the one "
                                                    "this machine joined) instead of local processes")
    p.add_argument("--catalog", help="keep every trial in this JSON lines file and take those already there (a "
                                     "stopped fit resumes; default with --out: OUT's name with .trials.jsonl)")
    p.add_argument("--quiet", action="store_true")
    p.set_defaults(func=_fit)
