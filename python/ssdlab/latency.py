"""`ssdlab validate --groups latency`: every published latency rating of every preset, measured
under the rating's own conditions ([[datasheet.latency]]: operation, statistic, queue depth,
transfer size, fresh or steady state, posted or not), and QD1-QD32 curves of 4 KiB random reads
and writes, fresh and at steady state, for every preset (predictions: no rating to compare).

A rating of a mean, typical or minimum figure passes within 15%; an upper bound ("<47 us", a
MAX) passes when the model's figure is at most 15% above it.
"""

from __future__ import annotations

import math
import tomllib

from .configs import dump_toml
from .drive import Drive, config_text
from .job import Job

LATENCY_TOLERANCE = 0.15
CURVE_QDS = (1, 2, 4, 8, 16, 32)
# The curves of each preset, in the tables' and the charts' order.
CURVES = ("write fresh", "read fresh", "write steady", "read steady")
# The statistic each rating names, as fio's summary gives it.
STATISTIC = {"typ": "latency_us_mean", "mean": "latency_us_mean", "min": "latency_us_min", "max": "latency_us_max"}


def _drive(text: str, source: str, state: str, steady_drive_writes: float, posted: bool = True) -> Drive:
    """A drive in the rating's state: fresh out of box (secure-erased: reads of it touch no
    NAND, as an Iometer run on a new drive reads), or at random-write steady state (the
    sequential fill, then `steady_drive_writes` drive writes of 4 KiB random writes, untimed)."""
    if not posted:
        cfg = tomllib.loads(text)
        cfg.setdefault("controller", {})["write_cache"] = False
        text = dump_toml(cfg)
    d = Drive(text, source)
    if state == "steady":
        d.fill()
        d.random_writes(steady_drive_writes)
    return d


def _run(d: Drive, op: str, bs: int, qd: int, seconds: float) -> dict:
    rw = "randread" if op == "read" else "randwrite"
    return d.run(Job(rw=rw, bs=str(bs), iodepth=qd, runtime_s=seconds, time_based=True)).summary[op]


def rating_rows(name: str, quick: bool = False) -> list[dict]:
    """The latency rows of one preset, one per published rating, as the fields of
    `ssdlab.validate.Row`."""
    text, source = config_text(name)
    cfg = tomllib.loads(text)
    rows = []
    for r in cfg.get("datasheet", {}).get("latency", []):
        seconds = (0.5 if quick else 2.0) if r["queue_depth"] > 1 else (0.3 if quick else 1.0)
        d = _drive(text, source, r["state"], 0.5 if quick else 1.5, r.get("posted", True))
        got = _run(d, r["op"], r["transfer_bytes"], r["queue_depth"], seconds)[STATISTIC[r["figure"]]]
        want = r["us"]
        bound = r.get("bound", False)
        passed = got <= want * (1 + LATENCY_TOLERANCE) if bound else abs(got - want) <= LATENCY_TOLERANCE * want
        size = f"{r['transfer_bytes'] // 1024}K" if r["transfer_bytes"] >= 1024 else f"{r['transfer_bytes']}B"
        what = (f"{cfg.get('name', name)}: {r['op']} latency {r['figure'].upper()}{' bound' if bound else ''}, "
                f"{size} QD{r['queue_depth']} {r['state']}{'' if r.get('posted', True) else ' nonposted'}")
        rows.append({"group": "latency", "item": what, "expected": want, "simulated": got, "unit": "us",
                     "tolerance": "<= +15%" if bound else "15%", "passed": passed, "note": r.get("source", "")})
    return rows


def curve(name: str, quick: bool = False) -> dict:
    """Mean, p99 latency (us) and IOPS of 4 KiB random reads and writes at QD1-QD32, fresh
    (writes: secure-erased; reads: after the sequential fill) and at steady state."""
    text, source = config_text(name)
    seconds = 0.3 if quick else 1.0
    out: dict = {}
    for state in ("fresh", "steady"):
        for op in ("write", "read"):
            d = _drive(text, source, state, 0.5 if quick else 1.5)
            if state == "fresh" and op == "read":
                d.fill()
            points = []
            for qd in CURVE_QDS:
                s = _run(d, op, 4096, qd, seconds)
                points.append({"qd": qd, "iops": s["iops"], "mean_us": s["latency_us_mean"], "p99_us": s["latency_us_p99"]})
            out[f"{op} {state}"] = points
    return out


def latency_preset(args: tuple) -> tuple[list, dict]:
    """Ratings and curves of one preset (module-level, so processes can run it)."""
    name, quick, curves = args
    return rating_rows(name, quick), (curve(name, quick) if curves else {})


def curves_markdown(curves: dict) -> str:
    """One table per state and operation: mean latency (us) at each queue depth, per preset."""
    out = []
    for key in CURVES:
        out.append(f"#### 4 KiB random {key}: mean latency, us (IOPS at QD1 and QD32)\n")
        out.append("| preset | " + " | ".join(f"QD{q}" for q in CURVE_QDS) + " | IOPS QD1 | IOPS QD32 |")
        out.append("|---|" + "---:|" * (len(CURVE_QDS) + 2))
        for name, c in curves.items():
            pts = c.get(key, [])
            if pts:
                out.append(f"| {name} | " + " | ".join(f"{p['mean_us']:,.1f}" for p in pts)
                           + f" | {pts[0]['iops']:,.0f} | {pts[-1]['iops']:,.0f} |")
        out.append("")
    return "\n".join(out)


# The latency axes' labels: 1, 2, 3, 5, 7 in every decade from 1 us to 100 ms.
TICKS_US = [m * 10 ** e for e in range(6) for m in (1, 2, 3, 5, 7)]


def log_range(values: list) -> list | None:
    """A log axis's range (log10 bounds) from the label of `TICKS_US` at or below the least of
    `values` to the one at or above the greatest: at least two labels show, however narrow the
    values (QD1-QD32 reads of a P420m span 109-250 us, between the labels 100 and 300)."""
    if not values:
        return None
    low = max([t for t in TICKS_US if t <= min(values)], default=min(values))
    high = min([t for t in TICKS_US if t >= max(values)], default=max(values))
    return [math.log10(low) - 0.02, math.log10(high) + 0.02]


def curves_chart(curves: dict, out) -> list:
    """A QD1-QD32 latency chart per drive family (mean and p99 of 4 KiB random reads and
    writes, fresh and steady), as `latency_qd_FAMILY.html` in `out` and a PNG of it where a
    browser renders one (`charts.screenshot_html`)."""
    from pathlib import Path

    import plotly.graph_objects as go
    from plotly.colors import DEFAULT_PLOTLY_COLORS
    from plotly.subplots import make_subplots

    from .charts import screenshot_html, slug
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    # A family: the presets' names up to their capacity ("crucial-m500-240": "crucial-m500");
    # a drive file of the user's ("my/drive.toml") is a family of its own ("drive").
    families: dict = {}
    for name in curves:
        family = Path(name).stem if name.endswith(".toml") else name.rsplit("-", 1)[0]
        families.setdefault(family, []).append(name)
    paths = []
    for family, names in families.items():
        fig = make_subplots(rows=1, cols=4, subplot_titles=[f"4 KiB random {k}" for k in CURVES], horizontal_spacing=0.05)
        capacities = [name[len(family) + 1:] if name.startswith(family + "-") else family for name in names]
        for col, key in enumerate(CURVES, start=1):
            values = []
            for i, (name, capacity) in enumerate(zip(names, capacities)):
                pts = curves[name].get(key, [])
                values += [p[k] for p in pts for k in ("mean_us", "p99_us") if p[k] > 0]
                colour = DEFAULT_PLOTLY_COLORS[i % len(DEFAULT_PLOTLY_COLORS)]
                qds = [p["qd"] for p in pts]
                fig.add_trace(go.Scatter(x=qds, y=[p["mean_us"] for p in pts], mode="lines+markers", name=capacity,
                                         legendgroup=name, showlegend=col == 1, line={"color": colour}), row=1, col=col)
                fig.add_trace(go.Scatter(x=qds, y=[p["p99_us"] for p in pts], mode="lines", name=f"{capacity} p99",
                                         legendgroup=name, showlegend=False, line={"color": colour, "dash": "dot"}),
                              row=1, col=col)
            fig.update_xaxes(type="log", tickvals=list(CURVE_QDS), ticktext=[str(q) for q in CURVE_QDS],
                             title_text="queue depth", row=1, col=col)
            fig.update_yaxes(type="log", tickvals=TICKS_US, ticktext=[f"{v:,}" for v in TICKS_US],
                             range=log_range(values), row=1, col=col)
        fig.update_yaxes(title_text="latency, us (solid: mean, dotted: p99)", row=1, col=1)
        fig.update_layout(title=f"{family}: latency by queue depth (ssdlab validate --groups latency)", width=1600,
                          height=460, legend={"title": {"text": "capacity"}}, margin={"l": 70, "r": 20, "t": 80, "b": 60})
        html = out / f"latency_qd_{slug(family)}.html"
        fig.write_html(html, include_plotlyjs=True)
        paths.append(html)
        png = screenshot_html(html, html.with_suffix(".png"), 1620, 480)
        if png:
            paths.append(png)
    return paths
