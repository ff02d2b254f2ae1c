"""`ssdlab review` (the whole suite, one report) and `ssdlab procedure` (one procedure)."""

from __future__ import annotations

import json
import time
from pathlib import Path

from ..errors import SsdlabError
from ..review.catalog import PROCEDURES, resolve_params
from .common import SEED, in_range, out_dir


def parse_value(text: str, default):
    """A --set value, typed like the parameter's default (lists comma-separated)."""
    if isinstance(default, list):
        kind = type(default[0]) if default else str
        return [kind(v) for v in text.split(",") if v != ""]
    if isinstance(default, bool):
        return text.lower() in ("1", "true", "yes", "on")
    if isinstance(default, int):
        return int(text)
    if isinstance(default, float) or default is None:
        return float(text)
    return text


def parse_sets(items: list[str], procedures: list[str] | None = None) -> dict[str, dict]:
    """--set PROCEDURE.PARAM=VALUE (or PARAM=VALUE for `ssdlab procedure`)."""
    out: dict[str, dict] = {}
    for item in items or []:
        if "=" not in item:
            raise SsdlabError(f"--set {item}: expected PROCEDURE.PARAM=VALUE")
        key, value = item.split("=", 1)
        if "." in key:
            proc, param = key.split(".", 1)
        elif procedures and len(procedures) == 1:
            proc, param = procedures[0], key
        else:
            raise SsdlabError(f"--set {item}: name the procedure, e.g. consistency.{key}={value}")
        if proc not in PROCEDURES:
            raise SsdlabError(f"--set {item}: unknown procedure '{proc}'; accepted: {', '.join(PROCEDURES)}")
        spec = PROCEDURES[proc].params
        if param not in spec:
            raise SsdlabError(f"--set {item}: {proc} has no parameter '{param}'; accepted: {', '.join(spec)}")
        try:
            out.setdefault(proc, {})[param] = parse_value(value, spec[param].default)
        except ValueError:
            raise SsdlabError(f"--set {item}: '{value}' is not a valid {type(spec[param].default).__name__}") from None
    return out


def _spare(text: str) -> list[int]:
    try:
        return [int(v) for v in text.split(",") if v.strip() != ""]
    except ValueError:
        raise SsdlabError(f"--spare {text}: expected percentages like 0,12,25") from None


def _targets(args) -> list[dict]:
    if not args.target:
        return []
    from ..review.fio_target import check_target
    scale = args.target_time_scale
    if not 1 <= scale <= 1000:
        raise SsdlabError(f"--target-time-scale {scale}: accepted: a whole number from 1 to 1000")
    ts = []
    for t in args.target:
        info = check_target(t, args.yes_destroy_data, args.target_size)
        if scale > 1 and not info.get("nbd"):
            raise SsdlabError(f"--target-time-scale {scale}: applies to an NBD export of `ssdlab serve --time-scale "
                              f"{scale}` (a drive slowed down in time); {t} runs at its own speed")
        info["direct"] = not args.no_direct
        info["time_scale"] = scale
        ts.append(info)
    return ts


def _review(args) -> int:
    from ..review.runner import review

    procedures = args.procedures.split(",") if args.procedures else None
    overrides = parse_sets(args.set)
    if args.spare is not None:
        overrides.setdefault("consistency", {})["spare"] = _spare(args.spare)
    targets = _targets(args)
    args.drives = list(args.drives) + args.more_drives
    twice = sorted({d for d in args.drives if args.drives.count(d) > 1})
    if twice:
        raise SsdlabError(f"drive {', '.join(twice)} named twice; accepted: each drive once (its report would repeat it)")
    if not args.drives and not targets:
        raise SsdlabError("name at least one drive (see `ssdlab drives`) or a --target")
    if args.jobs is not None and args.jobs < 1:
        raise SsdlabError(f"--jobs {args.jobs}: at least 1")
    out_dir(args.out)  # before any simulated time is spent (issue 25 item 16)
    r = review(args.drives, args.out, procedures, overrides, quick=args.quick, jobs=args.jobs, targets=targets,
               png=not args.no_png, progress=not args.quiet, seed=args.seed or 0)
    print(f"review of {', '.join(dict.fromkeys(o.drive for o in r['outcomes']))}: {r['tasks']} runs in {r['wall_s']:.1f} s wall")
    print(f"  report {r['html']}")
    if r["pngs"]:
        print(f"  {len(r['pngs'])} PNGs in {Path(args.out) / 'png'}")
    if r["png_note"]:
        print(f"  {r['png_note']}")
    print(f"  data in {Path(args.out) / 'data'} (CSV and Parquet), summary.csv, summary.json")
    for name, drive, why in r.get("not_run", []):
        print(f"  {name} not run on {drive}: {why}")
    for o in r["outcomes"]:
        if o.summary.get("warning"):
            print(f"  warning: {o.procedure} on {o.drive}" + (f" ({o.variant})" if o.variant else "")
                  + f": {o.summary['warning']}")
    return 0


def _procedure(args) -> int:
    from ..review.fio_target import run_fio_procedure
    from ..review.catalog import run_procedure
    from ..review.runner import Board, Task, _Direct

    name = args.name
    overrides = parse_sets(args.set, [name]).get(name, {})
    if args.spare is not None:
        if name != "consistency":
            raise SsdlabError("--spare applies to consistency only")
        overrides["spare"] = _spare(args.spare)
    p = resolve_params(name, overrides)
    out_dir(args.out)  # before any simulated time is spent
    targets = _targets(args)
    if bool(args.drive) == bool(targets):
        raise SsdlabError("give one of --drive or --target")
    task = Task(0, name, args.drive or targets[0]["path"], p, args.drive or f"target {targets[0]['path']}")
    board = Board([task], not args.quiet)
    t0 = time.perf_counter()
    if targets:
        outs = run_fio_procedure(name, targets[0], p, lambda f, text: _Direct(board).put((0, f, text)))
    else:
        outs = run_procedure(name, args.drive, p, lambda f, text: _Direct(board).put((0, f, text)), seed=args.seed or 0)
    for o in outs:
        print(f"{o.procedure} on {o.drive}{' [' + o.variant + ']' if o.variant else ''}:")
        for k, v in o.summary.items():
            print(f"  {k:<40} {v:,.2f}" if isinstance(v, float) else f"  {k:<40} {v}")
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        for o in outs:
            stem = f"{o.procedure}" + (f"-{o.variant.replace(' ', '').replace('%', 'pct')}" if o.variant else "")
            for tname, df in o.tables.items():
                df.to_csv(out / f"{stem}-{tname}.csv", index=False)
                df.to_parquet(out / f"{stem}-{tname}.parquet", index=False)
        # With the procedure and its parameters: what `ssdlab fit` needs to run it again on a model.
        # `measured`: "fio" for a target: the fit then measures its model through fio's steps too.
        runs = [{"procedure": name, "drive": o.drive, "variant": o.variant, "parameters": p, "measured": o.source,
                 "summary": o.summary} for o in outs]
        (out / f"{name}-summary.json").write_text(json.dumps(runs, indent=2, default=str) + "\n")
        print(f"wrote tables to {out}")
    print(f"{time.perf_counter() - t0:.1f} s wall")
    return 0


def _target_args(p) -> None:
    p.add_argument("--target", action="append",
                   help="a file, a block device or an NBD URI (nbd://HOST:PORT, nbd+unix:///?socket=PATH; a drive "
                        "`ssdlab serve` exports, for one) to run the procedures on through fio (repeatable)")
    p.add_argument("--target-size", help="size of a target file (default 1g)")
    p.add_argument("--yes-destroy-data", action="store_true",
                   help="allow overwriting a block device, an NBD export or an existing file")
    p.add_argument("--target-time-scale", type=int, default=1, metavar="N",
                   help="the target is a drive served N times slower than real time (`ssdlab serve --time-scale N`): "
                        "fio runs each step N times as long, and its rates are taken N times and its latencies 1/N, "
                        "in the drive's own time (default 1)")
    p.add_argument("--no-direct", action="store_true", help="buffered I/O on the target (for file systems without O_DIRECT)")


def _defaults_text() -> str:
    def show(v):
        return "auto" if v is None else v
    return "; ".join(f"{n}: " + ", ".join(f"{k}={show(v.default)}" for k, v in proc.params.items())
                     for n, proc in PROCEDURES.items())


def add_parsers(sub) -> None:
    names = ", ".join(PROCEDURES)
    r = sub.add_parser("review", help="run the review suite on drives and write one report (HTML, PNG, CSV/Parquet)",
                       description=f"Run the review procedures ({names}) on each drive, in parallel, and write report.html, png/, data/ and summary.csv into --out.")
    r.add_argument("drives", nargs="*", help="preset names or drive .toml files")
    r.add_argument("--drive", action="append", default=[], dest="more_drives", metavar="DRIVE",
                   help="a drive, as every other command takes it (repeatable; with the positional ones)")
    r.add_argument("--out", required=True, help="report directory")
    r.add_argument("--procedures", help=f"comma-separated subset (default all: {names})")
    r.add_argument("--spare", help="spare-area variants of the consistency test, e.g. 0,12,25 (default 0)")
    r.add_argument("--set", action="append", metavar="PROC.PARAM=VALUE", help="override a parameter (repeatable), e.g. consistency.duration_s=600")
    r.add_argument("--quick", action="store_true", help="shorter durations for a first look (marked in the report)")
    r.add_argument("--jobs", type=in_range("--jobs", 1, 1024), help="parallel processes (default: all cores)")
    r.add_argument("--no-png", action="store_true", help="skip the PNGs (they need Playwright and Chromium)")
    r.add_argument("--seed", type=SEED)
    r.add_argument("--quiet", action="store_true")
    _target_args(r)
    r.set_defaults(func=_review)
    p = sub.add_parser("procedure", help="run one review procedure on a drive (or a real device through fio)",
                       description="Run one procedure by name. Parameters (see --set) default to methodology.md's: "
                                   + _defaults_text())
    p.add_argument("name", help=names)
    p.add_argument("--drive", help="preset name or drive .toml")
    p.add_argument("--spare", help="consistency: spare-area variants, e.g. 0,25")
    p.add_argument("--set", action="append", metavar="PARAM=VALUE", help="override a parameter (repeatable)")
    p.add_argument("--out", help="directory for the tables (CSV, Parquet) and summary JSON")
    p.add_argument("--seed", type=SEED)
    p.add_argument("--quiet", action="store_true")
    _target_args(p)
    p.set_defaults(func=_procedure)
