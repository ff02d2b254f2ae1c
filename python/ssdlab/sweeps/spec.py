"""A sweep specification (TOML or a dict) and its expansion into points.

    drives = ["crucial-m500-120", "crucial-m550-128"]    # presets or drive .toml files
    procedure = "consistency"                            # a review procedure ...
    seeds = [0]                                          # or: replicates = 3 (seeds 0, 1, 2)

    [params]                                             # ... and its fixed parameters
    duration_s = 60

    [grid]                                               # crossed axes
    "params.spare" = [0, 10, 20]                         # a procedure (or job) parameter
    "nand.program_page_us" = [1300, 1600]                # any drive field, by dotted path

    [zip]                                                # axes varied together, crossed with the grid
    "nand.read_page_us" = [50, 115]
    "nand.program_page_us" = [900, 1600]

Instead of `procedure`, a `[job]` table runs a fio-like job (`Job` fields, plus `precondition`);
grid keys `job.FIELD` vary it. Every point is one task: the drive's configuration with the
point's values applied (checked by the core before anything runs), the procedure or job with
its parameters, and a seed. Its key hashes all of that and the ssdlab version, so a rerun
skips finished points and a changed point runs again.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from .. import __version__, _ssdlab
from ..drive import config_text, dump_toml
from ..errors import SsdlabError, read_text
from ..job import Job

TOP_KEYS = {"drives", "procedure", "job", "params", "seeds", "replicates", "grid", "zip", "name"}
PRECONDITIONS = ("none", "secure-erase", "fill", "fast-fill")
# Procedure parameters whose names carry no unit get one in their column name.
UNIT_NAMES = {"spare": "spare_pct"}


@dataclass(frozen=True)
class Point:
    """One task of a sweep."""
    key: str
    drive: str            # as the spec names it (preset or file)
    drive_toml: str       # the resolved configuration
    procedure: str        # a review procedure, or "job"
    params: dict          # procedure parameters, or the job's fields
    seed: int
    axes: dict = field(default_factory=dict)  # column name -> value, for the summary row

    def as_dict(self) -> dict:
        return {"key": self.key, "drive": self.drive, "drive_toml": self.drive_toml, "procedure": self.procedure,
                "params": self.params, "seed": self.seed, "axes": self.axes}


def load_spec(spec: "str | Path | dict") -> dict:
    if isinstance(spec, dict):
        return spec
    text = read_text(spec, "a sweep spec TOML file (the README's Sweeps section)")
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise SsdlabError(f"{spec}: not valid TOML: {e}") from None


def column_name(key: str) -> str:
    """The summary column of an axis: `params.spare` -> spare_pct, `nand.program_page_us` ->
    nand_program_page_us, `job.iodepth` -> job_iodepth."""
    if key.startswith("params."):
        name = key[len("params."):]
        return UNIT_NAMES.get(name, name)
    return key.replace(".", "_")


def _axes(spec: dict, where: str) -> dict[str, list]:
    table = spec.get(where, {})
    if not isinstance(table, dict):
        raise SsdlabError(f"[{where}]: expected a table of KEY = [values]")
    for k, v in table.items():
        if not isinstance(v, list) or not v:
            raise SsdlabError(f"[{where}] {k}: expected a non-empty list of values, got {v!r}")
    return table


def _set_dotted(cfg: dict, key: str, value, drive: str) -> None:
    parts = key.split(".")
    node = cfg
    for i, part in enumerate(parts[:-1]):
        if part not in node or not isinstance(node[part], dict):
            sections = ", ".join(k for k, v in node.items() if isinstance(v, dict))
            raise SsdlabError(f"grid key '{key}': {drive} has no table '{'.'.join(parts[:i + 1])}'; "
                              f"tables: {sections}; procedure or job parameters are params.NAME or job.FIELD")
        node = node[part]
    last = parts[-1]
    if last not in node:
        raise SsdlabError(f"grid key '{key}': {drive} has no field '{last}' in [{'.'.join(parts[:-1])}]; "
                          f"fields: {', '.join(k for k in node if not isinstance(node[k], dict))}")
    old = node[last]
    if isinstance(old, bool) != isinstance(value, bool) or (isinstance(old, str) != isinstance(value, str)):
        raise SsdlabError(f"grid key '{key}': value {value!r} is not of the field's type ({type(old).__name__})")
    node[last] = float(value) if isinstance(old, float) and isinstance(value, int) else value


def expand(spec: dict) -> list[Point]:
    """The points of a spec, in a stable order; a bad spec raises SsdlabError naming the key."""
    from ..review.catalog import PROCEDURES, resolve_params

    unknown = set(spec) - TOP_KEYS
    if unknown:
        raise SsdlabError(f"unknown key(s) {', '.join(sorted(unknown))}; accepted: {', '.join(sorted(TOP_KEYS))}")
    drives = spec.get("drives")
    if not isinstance(drives, list) or not drives or not all(isinstance(d, str) for d in drives):
        raise SsdlabError("drives: expected a non-empty list of preset names or drive .toml files")
    if ("procedure" in spec) == ("job" in spec):
        raise SsdlabError(f"give either procedure = NAME (one of {', '.join(PROCEDURES)}) or a [job] table")
    if "seeds" in spec and "replicates" in spec:
        raise SsdlabError("give seeds = [...] or replicates = N, not both")
    if "replicates" in spec:
        n = spec["replicates"]
        if not isinstance(n, int) or n < 1:
            raise SsdlabError(f"replicates: expected a positive whole number, got {n!r}")
        seeds = list(range(n))
    else:
        seeds = spec.get("seeds", [0])
        if not isinstance(seeds, list) or not seeds or not all(isinstance(s, int) and 0 <= s < 2**63 for s in seeds):
            raise SsdlabError(f"seeds: expected a list of whole numbers >= 0, got {seeds!r}")
    grid = _axes(spec, "grid")
    zipped = _axes(spec, "zip")
    lengths = {len(v) for v in zipped.values()}
    if len(lengths) > 1:
        raise SsdlabError(f"[zip]: every axis needs the same number of values; got {', '.join(f'{k}: {len(v)}' for k, v in zipped.items())}")
    both = set(grid) & set(zipped)
    if both:
        raise SsdlabError(f"{', '.join(sorted(both))}: in both [grid] and [zip]")
    procedure = spec.get("procedure", "job")
    if procedure != "job" and procedure not in PROCEDURES:
        raise SsdlabError(f"procedure '{procedure}' is not known; accepted: {', '.join(PROCEDURES)}")
    base = dict(spec.get("params", {}) if procedure != "job" else spec.get("job", {}))
    if procedure == "job" and "params" in spec:
        raise SsdlabError("[params] is for a procedure; a job's fields go in [job]")
    prefix = "params." if procedure != "job" else "job."
    for k in list(grid) + list(zipped):
        if k.startswith("params." if procedure == "job" else "job."):
            raise SsdlabError(f"grid key '{k}': this sweep runs {'a job: use job.FIELD' if procedure == 'job' else 'a procedure: use params.NAME'}")
    names = list(grid)
    combos = list(itertools.product(*(grid[k] for k in names))) or [()]
    rows = list(zip(*zipped.values())) if zipped else [()]
    znames = list(zipped)
    points = []
    texts: dict[str, tuple[dict, str]] = {}
    for drive in drives:
        if drive not in texts:
            text, _ = config_text(drive)
            try:
                texts[drive] = (tomllib.loads(text), text)
            except tomllib.TOMLDecodeError as e:
                raise SsdlabError(f"{drive}: {e}") from None
        cfg0, _ = texts[drive]
        for combo in combos:
            for row in rows:
                values = dict(zip(names, combo)) | dict(zip(znames, row))
                cfg = json.loads(json.dumps(cfg0))
                params = json.loads(json.dumps(base))
                for k, v in values.items():
                    if k.startswith(prefix):
                        params[k[len(prefix):]] = v
                    else:
                        _set_dotted(cfg, k, v, drive)
                toml = dump_toml(cfg)
                try:
                    _ssdlab.validate_config(toml)
                except ValueError as e:
                    where = ", ".join(f"{k} = {v!r}" for k, v in values.items())
                    raise SsdlabError(f"{drive} with {where or 'no changes'}: {e}") from None
                if procedure == "job":
                    params = _check_job(params)
                else:
                    resolve_params(procedure, {k: ([v] if k == "spare" and not isinstance(v, list) else v)
                                               for k, v in params.items()})
                for seed in seeds:
                    key = point_key(toml, procedure, params, seed)
                    axes = {column_name(k): v for k, v in values.items()}
                    points.append(Point(key, drive, toml, procedure, params, seed, axes))
    keys = [p.key for p in points]
    if len(set(keys)) != len(keys):
        raise SsdlabError("two points of the sweep are the same (an axis repeats a value?)")
    return points


def _check_job(fields: dict) -> dict:
    fields = dict(fields)
    pre = fields.get("precondition", "fast-fill")
    if pre not in PRECONDITIONS:
        raise SsdlabError(f"job.precondition '{pre}': accepted: {', '.join(PRECONDITIONS)}")
    fields["precondition"] = pre
    job_fields = {k: v for k, v in fields.items() if k != "precondition"}
    try:
        Job(**job_fields)
    except TypeError as e:
        accepted = ", ".join(Job.__dataclass_fields__)
        raise SsdlabError(f"[job]: {e}; accepted: precondition, {accepted}") from None
    return fields


def point_key(drive_toml: str, procedure: str, params: dict, seed: int) -> str:
    blob = json.dumps({"drive": drive_toml, "procedure": procedure, "params": params, "seed": seed,
                       "version": __version__}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]
