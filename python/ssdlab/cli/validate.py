"""`ssdlab validate`: the model against theory, physics, every datasheet and the consistency test."""

from __future__ import annotations

import json
from pathlib import Path

from ..ablations import ABLATIONS, check_mechanism
from ..drive import preset_names
from ..errors import SsdlabError
from ..validate import (SENSITIVITY_PRESETS, _bar, markdown, sensitivity, sensitivity_markdown,
                        validate)
from ..validate import __doc__ as validate_doc
from .common import in_range, out_dir


def run_cli(args) -> int:
    groups = args.groups.split(",") if args.groups else ["theory", "physics", "datasheet"]
    presets = args.drives or None
    if presets:
        known = set(preset_names())
        for p in presets:
            if p not in known and not p.endswith(".toml"):
                raise SsdlabError(f"unknown drive '{p}'; accepted: preset names (see `ssdlab drives`) or .toml files")
    out_dir(args.out)  # before any simulated time is spent: a typo must not cost an hour's group
    if args.sensitivity:
        rows = sensitivity(args.drives or SENSITIVITY_PRESETS, seconds=2.0 if args.quick else 3.0,
                           progress=None if args.quiet else _bar("sensitivity"))
        text = sensitivity_markdown(rows)
        print(text)
        if args.out:
            out = Path(args.out)
            (out / "sensitivity.md").write_text(text)
            (out / "sensitivity.json").write_text(json.dumps(rows, indent=2) + "\n")
            print(f"wrote {out / 'sensitivity.md'} and sensitivity.json")
        return 0
    check_mechanism(args.ablate)
    if args.ablate and not {"consistency", "datasheet"} & set(groups):
        raise SsdlabError("--ablate applies to the consistency and datasheet groups: add --groups consistency or datasheet")
    rows = validate(groups, presets, args.out, args.quick, not args.quiet, ablate=args.ablate, jobs=args.jobs)
    print(markdown(rows))
    for g in dict.fromkeys(r.group for r in rows):
        rs = [r for r in rows if r.group == g]
        checked = [r for r in rs if r.tolerance not in ("prediction", "ASSUMED")]
        kind = "unpublished (ASSUMED)" if g == "power" else "predictions"
        predictions = f", {len(rs) - len(checked)} {kind}" if len(checked) < len(rs) else ""
        print(f"{g}: {sum(r.passed for r in checked)} of {len(checked)} pass{predictions}")
    if args.out:
        print(f"wrote {Path(args.out) / 'validation.md'} and validation.json")
    return 0


def add_parser(sub) -> None:
    v = sub.add_parser("validate", help="check the model against theory, physics and every datasheet (table of residuals)",
                       description=validate_doc.split("\n\n")[0])
    v.add_argument("drives", nargs="*", help="presets to check (default: all)")
    v.add_argument("--groups", help="comma-separated: theory, physics, datasheet, consistency, latency, power, placement (default: theory, physics, "
                                    "datasheet; consistency runs the 2000 s / 7200 s test on every preset twice: 1-1.5 h on two "
                                    "cores, 9-15 min with --quick)")
    v.add_argument("--ablate", metavar="MECHANISM",
                   help="with the consistency or datasheet group: switch one mechanism off in every preset; one of: "
                        + ", ".join(f"{k} ({v[1]})" for k, v in ABLATIONS.items()))
    v.add_argument("--jobs", type=in_range("--jobs", 1, 1024), help="parallel runs (default: all cores)")
    v.add_argument("--out", help="directory for validation.md and validation.json")
    v.add_argument("--quick", action="store_true", help="fewer theory cases, shorter measurements; enterprise consistency "
                                                         "from untimed steady state with a 300 s window")
    v.add_argument("--sensitivity", action="store_true",
                   help="instead: how each datasheet figure moves when each calibrated or assumed parameter moves by 10%% "
                        "(one preset per controller unless drives are named)")
    v.add_argument("--quiet", action="store_true")
    v.set_defaults(func=run_cli)
