"""`ssdlab fit`: a model of your own drive from its measurements (issue 76, first part).

Given measured figures of a drive (the datasheet's four, 4 KiB random read and write IOPS and
sequential read and write MB/s, as its vendor rates them or as you measured them under stated
conditions; or the figures of a review procedure, e.g. from `ssdlab procedure --target`), a
starting preset and the parameters left free, it finds the values that best reproduce the
figures and writes the preset back with each fitted value, what it was fitted on and its
residual on the parameter's line, the rest of the file as it was. A procedure's figures measured
through fio are matched by running each candidate through the same fio steps
(`review.fio_target.ModelFio`), so that what fio's path does to the drive (its trims and timed
fills) is done to the model too.

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

Each fitted value comes with its standard uncertainty (`_uncertainty`: the least-squares
covariance in the logarithm of the parameters, the figures taken as no better than 1%); one
over 5% is named "weakly identified". It is the spread the figures allow under the model, not
the model's own error: a model that cannot reproduce some figure at all pulls a parameter
further than its uncertainty says.

Every trial (a point of the free parameters, run once) goes to the catalog (`Trials`: JSON
lines beside `--out`, DuckDB reads it), so a stopped fit resumes where it stopped and ends
where an unstopped one does. Trials run on the process pool, or on a Ray cluster with
`--ray ADDRESS` (`sweeps.run.connect_ray`), with the same result.

The measurements (`ssdlab.fit_input`): the datasheet's four figures, measured as
`validate.measure_figures` measures them (fresh for client drives; at steady state for drives
whose `[datasheet] segment` is "enterprise", or `steady_state = true` in the file), and figures
of the review procedures with their parameters (a trial runs the procedure on the candidate
drive with the same parameters), from a TOML file or from `ssdlab procedure --out`'s summary.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import time
import tomllib
from dataclasses import asdict, dataclass, field
from pathlib import Path

from .configs import DriveText, config_text, dump_toml
from .errors import SsdlabError
from .fit_input import DATASHEET, Measurements, label, read_measurements  # noqa: F401  (read_measurements re-exported)
from .validate import SENSITIVITY_PARAMETERS, in_pool, measure_figures

# A parameter that moves no figure by this much (percent, for a +10% move) is not identifiable.
IDENTIFIABLE_PCT = 1.0
# Columns of the sensitivity table this parallel cannot be told apart.
SEPARABLE_COSINE = 0.98
# How far a figure moves with the workload's random seed (a fit's residuals are no more exact).
FIGURE_NOISE = 0.01
# A fitted parameter whose standard uncertainty is above this is named as weakly identified.
WELL_IDENTIFIED_PCT = 5.0
PROBE = 0.10
BOUND = 5.0
FREE = {f"{sec}.{key}": why for sec, key, why in SENSITIVITY_PARAMETERS}


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


def probe_factor(p: Parameter, by: float = PROBE) -> float:
    """How far the sensitivity table moves `p`: up by `by`, or down where that would pass its
    ceiling (an efficiency's 1); an integer by at least one (a GC threshold of 3 blocks moved
    by 10% rounds back to 3, and would read as not identifiable)."""
    up = 1 + by
    if p.integer:
        up = max(up, (round(p.value) + 1) / p.value)
    if p.value * up > ceiling(p):
        return 1 - by
    return up


def log_step(p: Parameter, value: float) -> float:
    """The Jacobian's step in the logarithm of `p` at `value`: 5%, and for an integer at least
    one unit (a smaller move rounds to the same value: a zero column)."""
    step = math.log(1.05)
    if p.integer and value > 0:
        step = max(step, math.log((round(value) + 1) / value))
    return step


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
    """One trial (module-level, for the pool): every figure of the measurements, by its id, as a
    configuration gives it."""
    from .review.catalog import run_procedure

    cfg, source, groups, steady, seconds, cond = task
    text = dump_toml(cfg)
    out = {}
    for g in groups:
        if g.kind == DATASHEET:
            out.update(measure_figures(text, source, list(g.figures), steady, seconds, 1.5, cond))
            continue
        if g.measured == "fio":
            # Measured through fio: the model through the same fio steps (its fills and trims).
            from .review.fio_target import model_target, run_fio_procedure
            outs = run_fio_procedure(g.kind, model_target(text, source), g.params)
        else:
            outs = run_procedure(g.kind, DriveText(text, source), g.params)
        # A variant not named matches a procedure's only run.
        runs = [o for o in outs if o.variant == g.variant or (not g.variant and len(outs) == 1)]
        if not runs:
            raise SsdlabError(f"the model's {g.kind} has no run '{g.variant}' to compare with the measured one; its runs: "
                              + ", ".join(repr(o.variant) for o in outs))
        for k in g.figures:
            v = runs[0].summary.get(k)
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise SsdlabError(f"the model's {g.kind} has no figure '{k}'")
            out[g.figure_id(k)] = float(v)
    return out


class Trials:
    """A fit's simulations: each point (the free parameters' values) run once, on the process
    pool or on Ray, and kept in the catalog, a JSON lines file (DuckDB reads it as it is:
    `SELECT * FROM read_json_auto('FILE')`) whose first line says which fit it belongs to. A
    fit is deterministic, so run again it takes the same steps, finds the trials it had already
    run there, and goes on from the first it had not: a stopped fit resumes."""

    def __init__(self, text: str, source: str, params: list[Parameter], meas: Measurements, steady: bool,
                 seconds: float, jobs: int | None, ray_address: str | None, catalog: Path | None):
        self.text, self.source, self.params = text, source, params
        self.meas, self.steady, self.seconds, self.jobs, self.ray_address = meas, steady, seconds, jobs, ray_address
        self.catalog = catalog
        self.done: dict[tuple, dict] = {}
        self.count = 0
        self.ran = 0
        ident = json.dumps([text, [p.name for p in params], [asdict(g) for g in meas.groups], steady, seconds,
                            asdict(meas.conditions)], sort_keys=True, default=str)
        self.identity = hashlib.sha256(ident.encode()).hexdigest()[:16]
        if catalog is not None and catalog.exists() and catalog.stat().st_size > 0:
            self._load(catalog)

    def _load(self, path: Path) -> None:
        lines = path.read_text().splitlines()
        try:
            head = json.loads(lines[0])
            rows = [json.loads(line) for line in lines[1:] if line.strip()]
        except (json.JSONDecodeError, IndexError):
            raise SsdlabError(f"--catalog {path}: not a fit's catalog (JSON lines)") from None
        if not isinstance(head, dict) or head.get("ssdlab_fit") != self.identity:
            raise SsdlabError(f"--catalog {path} belongs to another fit (another drive, free parameters, figures or "
                              "--seconds): name a new file, or remove it")
        for r in rows:
            self.done[tuple(r["values"])] = r["figures"]

    def key(self, values: list[float]) -> tuple:
        return tuple(int(round(v)) if p.integer else v for p, v in zip(self.params, values))

    def run(self, points: list[list[float]]) -> list[dict]:
        keys = [self.key(pt) for pt in points]
        todo = list(dict.fromkeys(k for k in keys if k not in self.done))
        self.count += len(points)
        if todo:
            tasks = [(with_values(self.text, self.params, list(k)), self.source, self.meas.groups, self.steady,
                      self.seconds, self.meas.conditions) for k in todo]
            results = self._on_ray(tasks) if self.ray_address is not None else in_pool(_figures, tasks, self.jobs)
            self.ran += len(todo)
            for k, got in zip(todo, results):
                self.done[k] = got
            self._keep(todo)
        return [self.done[k] for k in keys]

    def _on_ray(self, tasks: list[tuple]) -> list[dict]:
        from .sweeps.run import connect_ray
        ray = connect_ray(self.ray_address or None)
        remote = ray.remote(max_retries=2)(_figures)
        try:
            return ray.get([remote.remote(t) for t in tasks])
        except ray.exceptions.RayTaskError as e:
            raise SsdlabError(f"a trial failed on Ray: {str(e).strip().splitlines()[-1]}") from None

    def _keep(self, keys: list[tuple]) -> None:
        if self.catalog is None:
            return
        new = not self.catalog.exists() or self.catalog.stat().st_size == 0
        with self.catalog.open("a") as f:
            if new:
                f.write(json.dumps({"ssdlab_fit": self.identity, "drive": self.source,
                                    "free": [p.name for p in self.params], "figures": list(self.meas.figures)}) + "\n")
            for k in keys:
                f.write(json.dumps({"values": list(k), "figures": self.done[k]}) + "\n")
            f.flush()
            os.fsync(f.fileno())


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
    uncertainty: dict[str, float] = field(default_factory=dict)  # fitted parameter: standard uncertainty, %
    ran: int = 0  # trials simulated by this call (the rest came from the catalog)

    def identified(self, name: str) -> bool:
        """Fitted, and to within WELL_IDENTIFIED_PCT."""
        return name in self.fitted and self.uncertainty.get(name, math.inf) <= WELL_IDENTIFIED_PCT

    def residual_pct(self, fig: str) -> float:
        return 100 * (self.figures[fig] / self.measured[fig] - 1)


def fit(drive: str, meas: Measurements, free: list[str] | None = None, seconds: float = 3.0, jobs: int | None = None,
        progress=None, max_trials: int = 200, catalog: Path | None = None, ray_address: str | None = None) -> FitResult:
    """Fit `free` (default: the calibrated and assumed parameters `drive` sets) to `meas`, the
    trials on the process pool (`jobs`) or on Ray (`ray_address`; "auto" or "" for a local
    instance), each kept in `catalog` if given (a stopped fit resumes from it)."""
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
    trials = Trials(text, source, params, meas, steady, seconds, jobs, ray_address, catalog)
    run = trials.run
    say = progress or (lambda text: None)
    if trials.done:
        say(f"{len(trials.done)} trials in the catalog {catalog}: taken from there")

    start = [p.value for p in params]
    # Each moved up by PROBE (an integer by at least one), or down where that would pass its
    # ceiling: the table shows the effect of +10% either way, scaled from the move made.
    probe = [probe_factor(p) for p in params]
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
        # A figure the model gives as 0 (a run that moved nothing) counts as far off, not as -inf.
        return [math.log(max(got[f], 1e-9) / meas.figures[f]) for f in wanted]

    def fun(x):
        return residuals(evaluate([list(x)])[0])

    def jac(x):
        here = residuals(evaluate([list(x)])[0])
        points = []
        for j in range(len(x)):
            y = list(x)
            step = log_step(fit_params[j], math.exp(x[j]))
            # Forward, or backward at the upper bound.
            y[j] = x[j] + step if x[j] + step <= upper[j] else x[j] - step
            points.append(y)
        cols = []
        for j, got in enumerate(evaluate(points)):
            h = points[j][j] - x[j]
            cols.append([(a - b) / h for a, b in zip(residuals(got), here)])
        say(f"  {trials.count} trials, worst figure {100 * max(abs(math.expm1(r)) for r in here):.1f}% off")
        return [[cols[j][i] for j in range(len(x))] for i in range(len(wanted))]

    # The start is the sensitivity table's base trial: exp(log(v)) need not give v back bit for bit,
    # so the optimiser's points are kept by their log coordinates here, beside `Trials`' own
    # keeping by the values simulated.
    cache[tuple(x0)] = base
    converged, message = True, "no parameter left to fit"
    x = x0
    if fit_params:
        max_nfev = max(1, max_trials // (len(fit_params) + 1))
        r = least_squares(fun, x0, jac=jac, bounds=(lower, upper), method="trf", x_scale=1.0, xtol=1e-3,
                          ftol=1e-4, max_nfev=max_nfev)
        x, converged, message = list(r.x), r.status > 0, r.message
        uncertainty = _uncertainty(r.jac, r.fun, fit_params)
    else:
        uncertainty = {}
    final = evaluate([list(x)])[0]
    values = full(x)
    fitted = {p.name: (int(round(v)) if p.integer else v) for p, v in zip(params, values) if p.name not in held}
    at_bound = [p.name for p, xi, lo, hi in zip(fit_params, x, lower, upper) if xi <= lo + 1e-6 or xi >= hi - 1e-6]
    return FitResult(cfg.get("name", drive), source, params, fitted, held, dict(meas.figures), base, final, sensitivity,
                     trials.count, time.perf_counter() - t0, converged, message, text, at_bound, uncertainty,
                     trials.ran)


def _uncertainty(jac, res, params: list[Parameter]) -> dict[str, float]:
    """Each fitted parameter's standard uncertainty, percent: the least-squares covariance
    (J^T J)^-1 s^2 in the logarithm of the parameters, `s` the residuals' root mean square but no
    less than FIGURE_NOISE (how far a figure moves with the workload's random seed)."""
    import numpy as np

    j = np.asarray(jac, dtype=float)
    r = np.asarray(res, dtype=float)
    s2 = max(float(np.mean(r * r)), FIGURE_NOISE ** 2)
    try:
        cov = np.linalg.inv(j.T @ j) * s2
    except np.linalg.LinAlgError:
        return {p.name: math.inf for p in params}
    # A parameter the figures barely see has a variance too large to express as a percentage.
    sd = [math.sqrt(max(float(cov[i, i]), 0.0)) for i in range(len(params))]
    return {p.name: 100 * math.expm1(u) if u < 20 else math.inf for p, u in zip(params, sd)}


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
    on = ", ".join(f"{label(f)} {result.measured[f]:,.4g}" for f in result.measured)
    res = ", ".join(f"{label(f)} {result.residual_pct(f):+.1f}%" for f in result.measured)
    name_line = next((i for i, line in enumerate(lines) if re.match(r"\s*name\s*=", line)), None)
    if name_line is not None:
        lines[name_line] = f'name = "{result.drive if result.drive.endswith("-fit") else result.drive + "-fit"}"'
    for p in result.params:
        if p.name not in result.fitted:
            continue
        v = result.fitted[p.name]
        g = f"{v:.6g}"
        # A float stays a TOML float (1868.2, 4.1943e+06, 2000.0).
        shown = str(v) if p.integer else g if any(c in g for c in ".e") else g + ".0"
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
           "  " + f"{'parameter':<36}" + "".join(f"{'(' + str(i + 1) + ')':>8}" for i in range(len(figs)))]
    for p in result.params:
        out.append("  " + f"{p.name:<36}" + "".join(f"{result.sensitivity[p.name][f]:>+7.1f}%" for f in figs))
    out += [f"  ({i + 1}) {label(f)}" for i, f in enumerate(figs)]
    out += ["", "parameters:"]
    for p in result.params:
        if p.name in result.fitted:
            v = result.fitted[p.name]
            u = result.uncertainty.get(p.name, math.inf)
            weak = "" if result.identified(p.name) else f"; weakly identified by these figures (over {WELL_IDENTIFIED_PCT:g}%)"
            out.append(f"  {p.name:<36} {p.value:>12,.6g} -> {v:>12,.6g} ({100 * (v / p.value - 1):+.1f}%) "
                       f"+-{u:.1f}%{weak}  [{p.why}]")
        else:
            out.append(f"  {p.name:<36} {p.value:>12,.6g}    held: {result.held[p.name]}")
    out += ["", "figures (measured, model before, model fitted, residual):"]
    for i, f in enumerate(figs):
        out.append(f"  ({i + 1}) {result.measured[f]:>14,.4g} {result.start_figures[f]:>14,.4g} "
                   f"{result.figures[f]:>14,.4g} {result.residual_pct(f):>+7.1f}%   {label(f)}")
    for f in unreached(result):
        out.append(f"\n{label(f)} is {result.residual_pct(f):+.1f}% off after the fit: these parameters cannot reach it"
                   + (f" ({', '.join(result.at_bound)} at the edge of its range, 1/{BOUND:g} to {BOUND:g}x the start)"
                      if result.at_bound else "") + "; a mechanism the preset lacks, or figures that contradict each other")
    return "\n".join(out)


# A figure further off than this after a fit is named as not reached.
REACHED_PCT = 10.0


def unreached(result: FitResult) -> list[str]:
    return [f for f in result.measured if abs(result.residual_pct(f)) > REACHED_PCT]
