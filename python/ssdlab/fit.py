"""`ssdlab fit`: a model of your own drive from its measurements (issue 76, first part).

Given the four datasheet figures of a drive (4 KiB random read and write IOPS, sequential read
and write MB/s, as its vendor rates them or as you measured them under stated conditions), a
starting preset and the parameters left free, it finds the values that best reproduce the
figures and writes the preset back with each fitted value, what it was fitted on and its
residual on the parameter's line, the rest of the file as it was.

The parameters free by default are the ones docs/fidelity.md lists as calibrated or assumed
(`validate.SENSITIVITY_PARAMETERS`: the controller's command time, read and write extras,
data paths, GC cost per copied unit, the effective tR and tPROG, the link efficiency, the write
buffer) that the drive sets. The objective is the sum of squared log ratios, model over
measured, one per figure (a relative error, the same weight for IOPS and MB/s); the optimiser is
scipy's bounded trust-region least squares (`scipy.optimize.least_squares`, method "trf") in
the logarithm of each parameter, within 1/5 and 5 times its starting value. Its Jacobian is
taken by forward differences whose trials run at once on the process pool (`ssdlab.pool`).

Identifiability comes first: every free parameter is moved by +10% alone, and the table of how
each figure moves is printed (the sensitivity table). A parameter that moves no figure by 1% or
more is *not identifiable* from these figures: it is held at its starting value and named, not
given an arbitrary value. Two parameters whose effects are proportional (the cosine of their
columns 0.98 or more) cannot be separated: the first is fitted, the second held and named.

Measurements, a TOML file:

    drive = "crucial-m500-120"      # the starting preset (or --drive)
    [conditions]                    # optional, as a preset's [datasheet]: QD32, 1 worker, 128 KiB
    queue_depth = 32
    [figures]                       # any of the four
    rand_read_iops = 62000
    seq_write_mbps = 130

What the figures are: `validate.measure_figures` (fresh for client drives; at steady state for
drives whose `[datasheet] segment` is "enterprise", or `steady_state = true` in the file).
"""

from __future__ import annotations

import math
import re
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from .configs import config_text
from .errors import SsdlabError
from .validate import FIGURES, SENSITIVITY_PARAMETERS, Conditions, in_pool, measure_figures

# A parameter that moves no figure by this much (percent, for a +10% move) is not identifiable.
IDENTIFIABLE_PCT = 1.0
# Columns of the sensitivity table this parallel cannot be told apart.
SEPARABLE_COSINE = 0.98
PROBE = 0.10
BOUND = 5.0
FREE = {f"{sec}.{key}": why for sec, key, why in SENSITIVITY_PARAMETERS}


@dataclass
class Measurements:
    path: str
    figures: dict[str, float]
    conditions: Conditions
    drive: str | None = None
    steady_state: bool | None = None


def read_measurements(path: str) -> Measurements:
    """A measurement file, checked: every error names the file, the field and what is accepted."""
    p = Path(path)
    try:
        data = tomllib.loads(p.read_text())
    except OSError as e:
        raise SsdlabError(f"{path}: {e.strerror or e}") from None
    except tomllib.TOMLDecodeError as e:
        raise SsdlabError(f"{path}: not TOML: {e}") from None
    known = {"drive", "conditions", "figures", "steady_state"}
    for k in data:
        if k not in known:
            raise SsdlabError(f"{path}: unknown field '{k}'; accepted: {', '.join(sorted(known))}")
    figures = data.get("figures")
    if not isinstance(figures, dict) or not figures:
        raise SsdlabError(f"{path}: no [figures] table; give at least one of {', '.join(FIGURES)}")
    out = {}
    for k, v in figures.items():
        if k not in FIGURES:
            raise SsdlabError(f"{path}: figures.{k}: not a figure; accepted: "
                              + ", ".join(f"{n} ({FIGURES[n][0]}, {FIGURES[n][1]})" for n in FIGURES))
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
            raise SsdlabError(f"{path}: figures.{k} = {v!r}: a measured {FIGURES[k][1]} figure, above 0")
        out[k] = float(v)
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
    return Measurements(str(p), out, Conditions.of({**cond, "conditions_source": f"{path} [conditions]"}), drive, steady)


@dataclass
class Parameter:
    name: str          # section.key
    value: float       # the starting value
    why: str           # what docs/fidelity.md says it is
    integer: bool

    @property
    def section(self) -> str:
        return self.name.split(".", 1)[0]

    @property
    def key(self) -> str:
        return self.name.split(".", 1)[1]


def free_parameters(cfg: dict, names: list[str] | None, source: str) -> list[Parameter]:
    """The parameters to fit: `names` (section.key, each set in the drive to a number above 0),
    or by default every calibrated or assumed one the drive sets."""
    out = []
    for name in names if names is not None else list(FREE):
        sec, _, key = name.partition(".")
        if not key:
            raise SsdlabError(f"--free {name}: a parameter is SECTION.KEY, e.g. controller.command_ns")
        table = cfg.get(sec)
        value = table.get(key) if isinstance(table, dict) else None
        if name == "host.link_protocol_efficiency" and value is None:
            value = 0.95  # the model's default (validate's sensitivity moves it the same way)
        if names is not None:
            if value is None:
                raise SsdlabError(f"--free {name}: {source} does not set it; free parameters are numbers the drive "
                                  f"sets, by default: {', '.join(FREE)}")
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
                raise SsdlabError(f"--free {name} = {value!r} in {source}: only a number above 0 can be fitted")
        elif isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
            continue  # not set (0 = no limit): nothing to fit
        out.append(Parameter(name, float(value), FREE.get(name, "named with --free"), isinstance(value, int)))
    if not out:
        raise SsdlabError(f"{source}: no parameter to fit")
    return out


def ceiling(p: Parameter) -> float:
    """The largest value the model accepts for `p` (an efficiency is at most 1)."""
    return 1.0 if p.key.endswith("efficiency") else math.inf


def with_values(text: str, params: list[Parameter], values: list[float]) -> dict:
    """The drive's configuration with `params` set to `values` (integers rounded)."""
    cfg = tomllib.loads(text)
    for p, v in zip(params, values):
        cfg.setdefault(p.section, {})[p.key] = int(round(v)) if p.integer else float(v)
    return cfg


def _figures(task: tuple) -> dict:
    """One trial (module-level, for the pool): the figures of a configuration."""
    from .configs import dump_toml
    cfg, source, wanted, steady, seconds, cond = task
    return measure_figures(dump_toml(cfg), source, wanted, steady, seconds, 1.5, cond)


@dataclass
class FitResult:
    drive: str
    source: str
    params: list[Parameter]
    fitted: dict[str, float]
    held: dict[str, str]                          # name: why it was not fitted
    measured: dict[str, float]
    start_figures: dict[str, float]
    figures: dict[str, float]                     # the fitted model's
    sensitivity: dict[str, dict[str, float]]      # parameter: figure: percent for +10%
    trials: int
    wall_s: float
    converged: bool
    message: str
    text: str = field(repr=False, default="")
    at_bound: list[str] = field(default_factory=list)  # fitted parameters that ended at a bound

    def residual_pct(self, fig: str) -> float:
        return 100 * (self.figures[fig] / self.measured[fig] - 1)


def fit(drive: str, meas: Measurements, free: list[str] | None = None, seconds: float = 3.0, jobs: int | None = None,
        progress=None, max_trials: int = 200) -> FitResult:
    """Fit `free` (default: the calibrated and assumed parameters `drive` sets) to `meas`."""
    try:
        from scipy.optimize import least_squares
    except ImportError:
        raise SsdlabError("ssdlab fit needs scipy: pip install scipy (or pip install 'ssdlab[fit]')") from None
    t0 = time.perf_counter()
    text, source = config_text(drive)
    cfg = tomllib.loads(text)
    steady = meas.steady_state
    if steady is None:
        steady = cfg.get("datasheet", {}).get("segment") == "enterprise"
    params = free_parameters(cfg, free, source)
    wanted = list(meas.figures)
    trials = [0]
    say = progress or (lambda text: None)

    def run(points: list[list[float]]) -> list[dict]:
        tasks = [(with_values(text, params, pt), source, wanted, steady, seconds, meas.conditions) for pt in points]
        trials[0] += len(tasks)
        return in_pool(_figures, tasks, jobs)

    start = [p.value for p in params]
    # Each moved up by PROBE, or down where that would pass its ceiling (an efficiency's 1): the
    # table shows the effect of +10% either way.
    probe = [1 - PROBE if p.value * (1 + PROBE) > ceiling(p) else 1 + PROBE for p in params]
    say(f"{len(params)} free parameters, {len(wanted)} figures: the sensitivity table ({len(params) + 1} trials)")
    base, *moved = run([start] + [[v * probe[i] if i == j else v for j, v in enumerate(start)] for i in range(len(params))])
    sensitivity = {p.name: {f: 100 * (m[f] / base[f] - 1) * PROBE / (k - 1) for f in wanted}
                   for p, m, k in zip(params, moved, probe)}
    held = unidentifiable(params, sensitivity, wanted)
    fit_params = [p for p in params if p.name not in held]
    index = [params.index(p) for p in fit_params]
    x0 = [math.log(p.value) for p in fit_params]
    upper = [math.log(min(p.value * BOUND, ceiling(p))) for p in fit_params]
    lower = [math.log(p.value / BOUND) for p in fit_params]
    x0 = [min(max(x, lo), hi) for x, lo, hi in zip(x0, lower, upper)]
    cache: dict[tuple, dict] = {}

    def full(x) -> list[float]:
        values = list(start)
        for i, xi in zip(index, x):
            values[i] = math.exp(xi)
        return values

    def evaluate(xs: list) -> list[dict]:
        new = [tuple(x) for x in xs if tuple(x) not in cache]
        for x, got in zip(new, run([full(x) for x in new]) if new else []):
            cache[x] = got
        return [cache[tuple(x)] for x in xs]

    def residuals(got: dict) -> list[float]:
        return [math.log(got[f] / meas.figures[f]) for f in wanted]

    def fun(x):
        return residuals(evaluate([list(x)])[0])

    step = math.log(1.05)

    def jac(x):
        here = residuals(evaluate([list(x)])[0])
        points = []
        for j in range(len(x)):
            y = list(x)
            # Forward, or backward at the upper bound.
            y[j] = x[j] + step if x[j] + step <= upper[j] else x[j] - step
            points.append(y)
        cols = []
        for j, got in enumerate(evaluate(points)):
            h = points[j][j] - x[j]
            cols.append([(a - b) / h for a, b in zip(residuals(got), here)])
        say(f"  {trials[0]} trials, worst figure {100 * max(abs(math.expm1(r)) for r in here):.1f}% off")
        return [[cols[j][i] for j in range(len(x))] for i in range(len(wanted))]

    cache[tuple(x0)] = base  # the held parameters stay at their starting values, the rest start there
    converged, message = True, "no parameter left to fit"
    x = x0
    if fit_params:
        max_nfev = max(1, max_trials // (len(fit_params) + 1))
        r = least_squares(fun, x0, jac=jac, bounds=(lower, upper), method="trf", x_scale=1.0, xtol=1e-3,
                          ftol=1e-4, max_nfev=max_nfev)
        x, converged, message = list(r.x), r.status > 0, r.message
    final = evaluate([list(x)])[0]
    values = full(x)
    fitted = {p.name: (int(round(v)) if p.integer else v) for p, v in zip(params, values) if p.name not in held}
    at_bound = [p.name for p, xi, lo, hi in zip(fit_params, x, lower, upper) if xi <= lo + 1e-6 or xi >= hi - 1e-6]
    return FitResult(cfg.get("name", drive), source, params, fitted, held, dict(meas.figures), base, final, sensitivity,
                     trials[0], time.perf_counter() - t0, converged, message, text, at_bound)


def unidentifiable(params: list[Parameter], sensitivity: dict, wanted: list[str]) -> dict[str, str]:
    """The parameters these figures cannot identify, each with why: one that moves no figure by
    IDENTIFIABLE_PCT for a 10% move, or the later of two whose columns of the sensitivity table
    are proportional (the figures see only their product)."""
    held: dict[str, str] = {}
    for p in params:
        if max(abs(x) for x in sensitivity[p.name].values()) < IDENTIFIABLE_PCT:
            held[p.name] = f"not identifiable from these figures (a 10% move changes none by {IDENTIFIABLE_PCT:g}%)"
    kept = [p for p in params if p.name not in held]
    for i, a in enumerate(kept):
        for b in kept[i + 1:]:
            if b.name in held or a.name in held:
                continue
            va, vb = [sensitivity[a.name][f] for f in wanted], [sensitivity[b.name][f] for f in wanted]
            cos = sum(x * y for x, y in zip(va, vb)) / math.sqrt(sum(x * x for x in va) * sum(y * y for y in vb))
            if abs(cos) >= SEPARABLE_COSINE:
                held[b.name] = (f"cannot be separated from {a.name} by these figures (their effects are proportional): "
                                f"held, {a.name} fitted")
    return held


def fitted_preset(result: FitResult, meas: Measurements) -> str:
    """The starting preset's text with each fitted value in place, its line's comment saying
    what it was fitted on, from what, and the residuals; every other line as it was."""
    lines = result.text.splitlines()
    on = ", ".join(f"{FIGURES[f][0]} {result.measured[f]:,.0f} {FIGURES[f][1]}" for f in result.measured)
    res = ", ".join(f"{FIGURES[f][0]} {result.residual_pct(f):+.1f}%" for f in result.measured)
    name_line = next((i for i, line in enumerate(lines) if re.match(r"\s*name\s*=", line)), None)
    if name_line is not None:
        lines[name_line] = f'name = "{result.drive}-fit"'
    for p in result.params:
        if p.name not in result.fitted:
            continue
        v = result.fitted[p.name]
        shown = str(v) if p.integer else f"{v:.6g}" if "." in f"{v:.6g}" or "e" in f"{v:.6g}" else f"{v:.6g}.0"
        comment = f"# fitted by ssdlab fit on {meas.path} ({on}): was {p.value:g}; residuals {res}"
        lines = _set_line(lines, p.section, p.key, f"{p.key} = {shown}    {comment}")
    text = "\n".join(lines) + "\n"
    check = tomllib.loads(text)
    for name, v in result.fitted.items():
        sec, key = name.split(".", 1)
        assert math.isclose(check[sec][key], v, rel_tol=1e-5), (name, check[sec][key], v)
    return text


def _set_line(lines: list[str], section: str, key: str, new: str) -> list[str]:
    """`key = ...` of `[section]` replaced by `new`, or added at the section's end (the section
    added at the end of the file if there is none)."""
    start = next((i for i, line in enumerate(lines) if line.strip() == f"[{section}]"), None)
    if start is None:
        return [*lines, "", f"[{section}]", new]
    end = next((i for i in range(start + 1, len(lines)) if lines[i].lstrip().startswith("[")), len(lines))
    for i in range(start + 1, end):
        if re.match(rf"\s*{re.escape(key)}\s*=", lines[i]):
            return [*lines[:i], new, *lines[i + 1:]]
    last = end
    while last > start + 1 and not lines[last - 1].strip():
        last -= 1
    return [*lines[:last], new, *lines[last:]]


def report(result: FitResult) -> str:
    """The fit as text: the sensitivity table, what was fitted or held and why, the figures."""
    figs = list(result.measured)
    out = [f"ssdlab fit of {result.source}: {result.trials} trials in {result.wall_s:.1f} s wall",
           "", "sensitivity: how each figure moves when one parameter moves by +10%",
           "  " + f"{'parameter':<36}" + "".join(f"{FIGURES[f][0]:>24}" for f in figs)]
    for p in result.params:
        out.append("  " + f"{p.name:<36}" + "".join(f"{result.sensitivity[p.name][f]:>+23.1f}%" for f in figs))
    out += ["", "parameters:"]
    for p in result.params:
        if p.name in result.fitted:
            v = result.fitted[p.name]
            out.append(f"  {p.name:<36} {p.value:>12,.6g} -> {v:>12,.6g} ({100 * (v / p.value - 1):+.1f}%)  [{p.why}]")
        else:
            out.append(f"  {p.name:<36} {p.value:>12,.6g}    held: {result.held[p.name]}")
    out += ["", "figures (measured, model before, model fitted, residual):"]
    for f in figs:
        label, unit = FIGURES[f]
        out.append(f"  {label + ' ' + unit:<28} {result.measured[f]:>12,.1f} {result.start_figures[f]:>12,.1f} "
                   f"{result.figures[f]:>12,.1f} {result.residual_pct(f):>+7.1f}%")
    for f in unreached(result):
        out.append(f"\n{FIGURES[f][0]} is {result.residual_pct(f):+.1f}% off after the fit: these parameters cannot reach it"
                   + (f" ({', '.join(result.at_bound)} at the edge of its range, 1/{BOUND:g} to {BOUND:g}x the start)"
                      if result.at_bound else "") + "; a mechanism the preset lacks, or figures that contradict each other")
    return "\n".join(out)


# A figure further off than this after a fit is named as not reached.
REACHED_PCT = 10.0


def unreached(result: FitResult) -> list[str]:
    return [f for f in result.measured if abs(result.residual_pct(f)) > REACHED_PCT]
