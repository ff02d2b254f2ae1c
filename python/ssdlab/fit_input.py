"""What `ssdlab fit` fits to: measured figures, read from a file and checked (every error names
the file, the field and what is accepted).

Two kinds of file. A TOML file a user writes:

    drive = "crucial-m500-120"      # the starting preset (or --drive)
    [conditions]                    # optional, as a preset's [datasheet]: QD32, 1 worker, 128 KiB
    queue_depth = 32
    [figures]                       # the datasheet's four, any of them
    rand_read_iops = 62000
    seq_write_mbps = 130

    [[procedure]]                   # and/or figures of a review procedure, as it measures them
    name = "four-corners"
    parameters = { span = "16m", random_s = 2, seq_s = 1 }
    figures = { "4K random write QD32 (IOPS)" = 10700 }

or the summary JSON `ssdlab procedure NAME --out DIR` writes (`DIR/NAME-summary.json`), of a
modelled drive or of a real one measured through fio (`--target`): each of its runs with the
procedure's parameters, its variant and its figures. From such a file the rates (IOPS, MB/s)
are fitted, and of a consistency run its level, floor and spread (steady-state mean, 1st
percentile and coefficient of variation of the per-second IOPS), not the raw series;
`only` names the figures to keep instead.
"""

from __future__ import annotations

import json
import math
import tomllib
from dataclasses import dataclass
from pathlib import Path

from .errors import SsdlabError
from .validate import FIGURES, Conditions

DATASHEET = "datasheet"
# A consistency run's level, floor and spread.
CONSISTENCY_FIGURES = ("steady_mean_iops", "steady_floor_iops", "steady_cv")
RATE_UNITS = ("IOPS", "MB/s")


@dataclass
class Group:
    """Figures one run measures: the datasheet's four (`kind` "datasheet", under the file's
    conditions) or a procedure's summary (`kind` its name) with its parameters and variant."""
    kind: str
    params: dict
    variant: str
    figures: dict[str, float]
    # How the figures were measured: "model" (a modelled drive's procedure) or "fio" (a target
    # through fio: the fit then runs its model through the same fio steps, `ModelFio`).
    measured: str = "model"

    def figure_id(self, key: str) -> str:
        if self.kind == DATASHEET:
            return key
        return f"{self.kind}{f' [{self.variant}]' if self.variant else ''}: {key}"


@dataclass
class Measurements:
    path: str
    groups: list[Group]
    conditions: Conditions
    drive: str | None = None
    steady_state: bool | None = None

    @property
    def figures(self) -> dict[str, float]:
        """Every figure by its id, measured value."""
        return {g.figure_id(k): v for g in self.groups for k, v in g.figures.items()}


def label(figure_id: str) -> str:
    """How a figure is printed: the datasheet's with its unit; a procedure's as its id says."""
    return f"{FIGURES[figure_id][0]} {FIGURES[figure_id][1]}" if figure_id in FIGURES else figure_id


def _value(path: str, where: str, v, unit: str = "") -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
        raise SsdlabError(f"{path}: {where} = {v!r}: a measured {unit + ' ' if unit else ''}figure, above 0")
    return float(v)


def read_measurements(paths: str | list[str], only: list[str] | None = None) -> Measurements:
    """The figures of one or several measurement files as one set (a figure given twice must be
    given the same; the datasheet figures are measured under one set of conditions), kept to
    `only` if given."""
    parts = [_read_one(p) for p in ([paths] if isinstance(paths, str) else paths)]
    seen: dict[str, tuple[float, str]] = {}
    for m in parts:
        for fid, v in m.figures.items():
            if fid in seen and seen[fid][0] != v:
                raise SsdlabError(f"{m.path}: {label(fid)} = {v:g} contradicts {seen[fid][0]:g} in {seen[fid][1]}")
            seen[fid] = (v, m.path)
    sheets = [m for m in parts if any(g.kind == DATASHEET for g in m.groups)]
    shape = lambda c: (c.queue_depth, c.workers, c.seq_transfer_kib)
    for m in sheets[1:]:
        if shape(m.conditions) != shape(sheets[0].conditions):
            raise SsdlabError(f"{m.path}: its [conditions] contradict {sheets[0].path}'s: the datasheet figures are "
                              "measured under one set of conditions")
    steady = {m.steady_state for m in parts if m.steady_state is not None}
    if len(steady) > 1:
        raise SsdlabError(f"{', '.join(m.path for m in parts)}: steady_state is true in one file and false in another")
    groups, ids = [], set()
    for m in parts:
        for g in m.groups:
            keep = {k: v for k, v in g.figures.items() if g.figure_id(k) not in ids}
            ids |= {g.figure_id(k) for k in keep}
            if keep:
                groups.append(Group(g.kind, g.params, g.variant, keep, g.measured))
    merged = Measurements(", ".join(m.path for m in parts), groups, (sheets[0] if sheets else parts[0]).conditions,
                          next((m.drive for m in parts if m.drive), None), next(iter(steady), None))
    if only is not None:
        have = {k for g in merged.groups for k in g.figures}
        for k in only:
            if k not in have:
                raise SsdlabError(f"--figures {k}: not a figure of {merged.path}; there are: {', '.join(sorted(have))}")
        for g in merged.groups:
            g.figures = {k: v for k, v in g.figures.items() if k in only}
        merged.groups = [g for g in merged.groups if g.figures]
    if not merged.groups:
        raise SsdlabError(f"{merged.path}: no figure to fit")
    return merged


def _read_one(path: str) -> Measurements:
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as e:
        raise SsdlabError(f"{path}: {e.strerror or e}") from None
    except UnicodeDecodeError as e:
        raise SsdlabError(f"{path}: not a text file (byte {e.start} is not UTF-8); a measurement file is TOML or "
                          "the JSON `ssdlab procedure --out` writes") from None
    return _read_json(path, text) if p.suffix == ".json" else _read_toml(path, text)


def _read_toml(path: str, text: str) -> Measurements:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise SsdlabError(f"{path}: not TOML: {e}") from None
    known = {"drive", "conditions", "figures", "steady_state", "procedure"}
    for k in data:
        if k not in known:
            raise SsdlabError(f"{path}: unknown field '{k}'; accepted: {', '.join(sorted(known))}")
    groups = []
    figures = data.get("figures")
    if figures is not None:
        if not isinstance(figures, dict):
            raise SsdlabError(f"{path}: figures: a table of {', '.join(FIGURES)}")
        out = {}
        for k, v in figures.items():
            if k not in FIGURES:
                raise SsdlabError(f"{path}: figures.{k}: not a figure; accepted: "
                                  + ", ".join(f"{n} ({FIGURES[n][0]}, {FIGURES[n][1]})" for n in FIGURES))
            out[k] = _value(path, f"figures.{k}", v, FIGURES[k][1])
        if out:
            groups.append(Group(DATASHEET, {}, "", out))
    procedures = data.get("procedure", [])
    if not isinstance(procedures, list) or not all(isinstance(t, dict) for t in procedures):
        raise SsdlabError(f"{path}: procedure: [[procedure]] tables (name, parameters, variant, figures)")
    for i, t in enumerate(procedures):
        groups.append(_procedure_group(path, f"procedure[{i}]", t.get("name"), t.get("parameters", {}),
                                       t.get("variant", ""), t.get("figures"),
                                       set(t) - {"name", "parameters", "variant", "figures", "measured"},
                                       t.get("measured", "model")))
    if not groups:
        raise SsdlabError(f"{path}: no [figures] table and no [[procedure]]; give at least one of {', '.join(FIGURES)}")
    cond = data.get("conditions", {})
    if not isinstance(cond, dict):
        raise SsdlabError(f"{path}: conditions: a table (queue_depth, workers, seq_transfer_kib)")
    for k, v in cond.items():
        if k not in ("queue_depth", "workers", "seq_transfer_kib"):
            raise SsdlabError(f"{path}: conditions.{k}: unknown; accepted: queue_depth, workers, seq_transfer_kib")
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise SsdlabError(f"{path}: conditions.{k} = {v!r}: a whole number, 1 or more")
    drive = data.get("drive")
    if drive is not None and not isinstance(drive, str):
        raise SsdlabError(f"{path}: drive = {drive!r}: a preset name or drive .toml file")
    steady = data.get("steady_state")
    if steady is not None and not isinstance(steady, bool):
        raise SsdlabError(f"{path}: steady_state = {steady!r}: true or false")
    return Measurements(path, groups, Conditions.of({**cond, "conditions_source": f"{path} [conditions]"}), drive, steady)


def _procedure_group(path: str, where: str, name, params, variant, figures, extra, measured="model") -> Group:
    from .review.catalog import PROCEDURES, resolve_params
    from .review.fio_target import FIO_PROCEDURES

    if extra:
        raise SsdlabError(f"{path}: {where}: unknown field '{sorted(extra)[0]}'; accepted: name, parameters, variant, "
                          "figures, measured")
    if measured not in ("model", "fio"):
        raise SsdlabError(f"{path}: {where}.measured = {measured!r}: accepted: \"model\" (a modelled drive's "
                          "procedure) or \"fio\" (a device through fio: `ssdlab procedure --target`)")
    if measured == "fio" and name not in FIO_PROCEDURES:
        raise SsdlabError(f"{path}: {where}: {name} is not run through fio; measured through fio: {', '.join(FIO_PROCEDURES)}")
    if name not in PROCEDURES:
        raise SsdlabError(f"{path}: {where}.name = {name!r}: accepted: {', '.join(PROCEDURES)}")
    if not isinstance(params, dict):
        raise SsdlabError(f"{path}: {where}.parameters: a table of the procedure's parameters")
    try:
        resolved = resolve_params(name, params)
    except SsdlabError as e:
        raise SsdlabError(f"{path}: {where}.parameters: {e}") from None
    if not isinstance(variant, str):
        raise SsdlabError(f"{path}: {where}.variant = {variant!r}: the run's variant as the procedure names it (e.g. 'spare 0%')")
    if not isinstance(figures, dict) or not figures:
        raise SsdlabError(f"{path}: {where}.figures: a table of the procedure's summary figures and their measured values")
    return Group(name, resolved, variant, {k: _value(path, f"{where}.figures.{k}", v) for k, v in figures.items()},
                 measured)


def _read_json(path: str, text: str) -> Measurements:
    """The summary JSON of `ssdlab procedure --out`: a list of runs."""
    from .review.labels import unit_of

    try:
        runs = json.loads(text)
    except json.JSONDecodeError as e:
        raise SsdlabError(f"{path}: not JSON: {e}") from None
    if not isinstance(runs, list) or not runs or not all(isinstance(r, dict) for r in runs):
        raise SsdlabError(f"{path}: not the summary of `ssdlab procedure NAME --out DIR` (a list of runs)")
    groups = []
    for i, r in enumerate(runs):
        if "procedure" not in r or "parameters" not in r:
            raise SsdlabError(f"{path}: run {i} does not say its procedure and parameters: written by an older ssdlab; "
                              "run `ssdlab procedure ... --out DIR` again")
        summary = r.get("summary")
        if not isinstance(summary, dict):
            raise SsdlabError(f"{path}: run {i}: no summary")
        name = r["procedure"]
        if name == "consistency":
            keys = [k for k in CONSISTENCY_FIGURES if k in summary]
        else:
            keys = [k for k, v in summary.items() if unit_of(k) in RATE_UNITS]
        figures = {k: summary[k] for k in keys if isinstance(summary[k], (int, float)) and not isinstance(summary[k], bool)
                   and math.isfinite(summary[k]) and summary[k] > 0}
        if figures:
            groups.append(_procedure_group(path, f"run {i}", name, r["parameters"], r.get("variant", ""), figures, set(),
                                           r.get("measured", "model")))
    return Measurements(path, groups, Conditions())
