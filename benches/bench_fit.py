"""`ssdlab fit`'s optimiser against two others on the same problems (issue 76: "a well-kept
optimiser, chosen by measurement on this problem"). Prints figures; never fails.

    python benches/bench_fit.py [--budget 80] [--jobs 2]

The problems are docs/fidelity.md's hand fits started far off, whose answers are known: the
20nm 128Gbit part's tR and tPROG on the M500 120GB's ratings (from 150 us and 1,200 us), and the
88SS9187's command time and the M500 write path on the M500 480GB's random reads and sequential
writes (from 9,000 ns and 300 MB/s). Each method minimises the same objective (the sum of
squared log ratios, model over measured) in the same bounds (1/5 to 5 times the start, in log
space), each trial a simulation of the same figures: `ssdlab fit`'s bounded least squares
(scipy `least_squares`, trf, its Jacobian's trials in parallel), scipy's Nelder-Mead
(`minimize`, bounded, one trial at a time) and, when it is installed, optuna's TPE sampler
(`pip install optuna`; one trial at a time). For each: trials, wall seconds, the worst
parameter error against the calibrated value and the worst figure residual.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
import tomllib
from pathlib import Path

from ssdlab.configs import config_text
from ssdlab.fit import Trials, fit, free_parameters
from ssdlab.fit_input import read_measurements

ROOT = Path(__file__).resolve().parent.parent

PROBLEMS = [
    ("M500 120GB tR, tPROG", "crucial-m500-120", {"read_page_us": "150.0", "program_page_us": "1200.0"},
     "m500-120-ratings.toml", None, {"nand.read_page_us": 101.0, "nand.program_page_us": 1860.0}),
    ("88SS9187 command_ns, M500 write path", "crucial-m500-480", {"command_ns": "9000", "write_mb_per_s": "300"},
     "m500-480-ratings.toml", ["rand_read_iops", "seq_write_mbps"],
     {"controller.command_ns": 12500, "controller.write_mb_per_s": 400}),
]


def start_text(preset: str, changes: dict) -> str:
    text = config_text(preset)[0]
    lines = []
    for line in text.splitlines():
        key = line.split("=", 1)[0].strip()
        if key in changes and "=" in line:
            line = f"{key} = {changes[key]}"
        lines.append(line)
    return "\n".join(lines) + "\n"


def objective(trials: Trials, meas, params, lower, upper):
    """(f(x) = sum of squared log ratios, count of simulations) for x in log space."""
    wanted = list(meas.figures)

    def f(x) -> float:
        x = [min(max(v, lo), hi) for v, lo, hi in zip(x, lower, upper)]
        got = trials.run([[math.exp(v) for v in x]])[0]
        return sum(math.log(max(got[k], 1e-9) / meas.figures[k]) ** 2 for k in wanted)
    return f


def worst_figure(trials: Trials, meas, values: dict) -> float:
    """The largest |model / measured - 1| at `values` (a trial already run)."""
    got = trials.run([[values[p.name] for p in trials.params]])[0]
    return max(abs(got[k] / v - 1) for k, v in meas.figures.items())


def report(name: str, values: dict, want: dict, figures: float, n: int, wall: float) -> None:
    worst = max(abs(values[k] / v - 1) for k, v in want.items()) * 100
    print(f"  {name:<28} {n:>4} trials {wall:>6.1f} s   worst parameter {worst:5.1f}% off   worst figure "
          f"{figures * 100:5.1f}% off   " + ", ".join(f"{k.split('.')[1]} {values[k]:,.4g}" for k in want))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--budget", type=int, default=80, help="trials at most per method (default %(default)s)")
    ap.add_argument("--jobs", type=int, default=2)
    a = ap.parse_args()
    import tempfile
    from scipy.optimize import minimize
    try:
        import optuna
        optuna.logging.set_verbosity(optuna.logging.WARNING)
    except ImportError:
        optuna = None
    with tempfile.TemporaryDirectory() as tmp:
        for title, preset, changes, file, only, want in PROBLEMS:
            print(f"{title} (start {', '.join(f'{k} {v}' for k, v in changes.items())}):")
            start = Path(tmp) / f"{preset}-off.toml"
            start.write_text(start_text(preset, changes))
            meas = read_measurements(str(ROOT / "docs" / "fits" / file), only)
            free = list(want)
            t = time.perf_counter()
            r = fit(str(start), meas, free, seconds=3.0, jobs=a.jobs, max_trials=a.budget)
            worst_fig = max(abs(r.residual_pct(f)) for f in r.measured) / 100
            report("least squares (ssdlab fit)", r.fitted, want, worst_fig, r.trials, time.perf_counter() - t)
            text = start.read_text()
            cfg = tomllib.loads(text)
            params = free_parameters(cfg, free, str(start))
            x0 = [math.log(p.value) for p in params]
            lower = [math.log(p.value / 5) for p in params]
            upper = [math.log(p.value * 5) for p in params]

            def values_of(x):
                return {p.name: math.exp(min(max(v, lo), hi)) for p, v, lo, hi in zip(params, x, lower, upper)}

            tr = Trials(text, str(start), params, meas, False, 3.0, 1, None, None)
            f = objective(tr, meas, params, lower, upper)
            t = time.perf_counter()
            nm = minimize(f, x0, method="Nelder-Mead", bounds=list(zip(lower, upper)),
                          options={"maxfev": a.budget, "xatol": 1e-3, "fatol": 1e-6})
            wall = time.perf_counter() - t
            n = tr.count
            report("Nelder-Mead", values_of(nm.x), want, worst_figure(tr, meas, values_of(nm.x)), n, wall)
            if optuna is None:
                print("  optuna: not installed (pip install optuna)")
                continue
            tr = Trials(text, str(start), params, meas, False, 3.0, 1, None, None)
            f = objective(tr, meas, params, lower, upper)
            t = time.perf_counter()
            study = optuna.create_study(sampler=optuna.samplers.TPESampler(seed=1))
            study.optimize(lambda trial: f([trial.suggest_float(p.name, lo, hi) for p, lo, hi in zip(params, lower, upper)]),
                           n_trials=a.budget)
            wall = time.perf_counter() - t
            n = tr.count
            best = values_of([study.best_params[p.name] for p in params])
            report("optuna TPE", best, want, worst_figure(tr, meas, best), n, wall)
    return 0


if __name__ == "__main__":
    sys.exit(main())
