"""`ssdlab sweep report DIR`: the standard comparisons of a sweep, one self-contained HTML page
in the review report's style (plotly.js embedded, works offline): each figure of a procedure
against each swept parameter, one line per drive (and per value of the other swept axes),
and the per-second series of each point overlaid."""

from __future__ import annotations

import html
import json
from pathlib import Path

import pandas as pd

from ..errors import SsdlabError
from ..charts import chromium_path, figure, line, log_iops_axis, slug
from .catalog import META, Catalog

PAGE = """<!DOCTYPE html><html><head><meta charset="utf-8"><title>{title}</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 1.5em auto; max-width: 1100px; color: #222; }}
h2 {{ border-bottom: 1px solid #ccc; padding-bottom: .2em; margin-top: 2em; }}
.chart {{ width: 100%; height: 420px; }} .note {{ color: #555; font-size: .9em; }}
table {{ border-collapse: collapse; font-size: .8em; }} td, th {{ border: 1px solid #ccc; padding: .15em .4em; text-align: right; }}
</style>
<script>{plotlyjs}</script></head><body>
<h1>{title}</h1><p class="note">{note}</p>
{body}
<script>
const CHARTS = {charts_json};
for (const [id, fig] of Object.entries(CHARTS)) {{
  Plotly.newPlot(id, fig.data, fig.layout, {{responsive: true, displaylogo: false}});
}}
document.body.dataset.ready = "1";
</script></body></html>
"""


def _axes_of(manifest: dict) -> list[str]:
    names: list[str] = []
    for p in manifest["points"]:
        for k in p["axes"]:
            if k not in names:
                names.append(k)
    return names


def _label(row: pd.Series, others: list[str]) -> str:
    return ", ".join([str(row["drive"])] + [f"{k}={row[k]}" for k in others])


def build(out: Path) -> tuple[list[tuple[str, str, dict]], str]:
    cat = Catalog(out)
    try:
        manifest = json.loads((out / "sweep.json").read_text())
    except (OSError, ValueError):
        raise SsdlabError(f"{out}: not a sweep's output directory (no sweep.json)") from None
    summary = cat.summary()
    if summary.empty:
        raise SsdlabError(f"{out}: no finished points yet")
    axes = [a for a in _axes_of(manifest) if a in summary.columns]
    charts: list[tuple[str, str, dict]] = []
    for proc, s in summary.groupby("procedure", sort=True):
        swept = [a for a in axes if s[a].nunique() > 1] or axes[:1]
        metrics = [c for c in s.columns if c not in META and c not in axes and c != "procedure"
                   and pd.api.types.is_numeric_dtype(s[c]) and s[c].notna().any() and s[c].nunique() > 1]
        for x in swept:
            others = [a for a in swept if a != x]
            for m in metrics:
                fig = figure(f"{proc}: {m} vs {x}", {"title": {"text": x}}, {"title": {"text": m}})
                groups = s.groupby(["drive"] + others, sort=True, dropna=False)
                for _, g in groups:
                    name = _label(g.iloc[0], others)
                    g = g.groupby(x, as_index=False)[m].mean().sort_values(x)  # replicates averaged
                    fig["data"].append(line(g[x], g[m], name, name, mode="lines+markers"))
                charts.append((slug(f"{proc}-{m}-vs-{x}"), proc, fig))
            if {"steady_median_iops", "steady_p1_iops", "steady_p99_iops"} <= set(s.columns):
                charts.append((slug(f"{proc}-steady-distribution-vs-{x}"), proc, _distribution_chart(s, proc, x, others)))
        # Per-second series overlaid (consistency's IOPS, a job's IOPS).
        for table, ycol in (("iops", "iops"), ("series", "write_iops")):
            t = cat.series(proc, table)
            if t.empty or ycol not in t.columns:
                continue
            positive = t[ycol][t[ycol] > 0]
            yaxis = log_iops_axis(float(positive.min()), float(positive.max())) if len(positive) else {}
            fig = figure(f"{proc}: {ycol} per second, every point", {"title": {"text": "time (s)"}}, yaxis)
            label_axes = [a for a in swept if a in t.columns]
            for _, g in t.groupby(["drive"] + label_axes + ["point_key"], sort=True):
                row = g.iloc[0]
                name = _label(row, label_axes)
                fig["data"].append(line(g["time_s"], g[ycol], name, name, mode="markers", marker={"size": 3}))
            charts.append((slug(f"{proc}-{table}-series"), proc, fig))
    failed = sum(1 for p in manifest["points"] if p.get("state") == "failed")
    note = (f"{len(summary['point_key'].unique())} finished points of {len(manifest['points'])}"
            f"{f', {failed} failed' if failed else ''}; ssdlab {manifest['spec'].get('ssdlab_version', '')}")
    return charts, note


def _distribution_chart(s: pd.DataFrame, proc: str, x: str, others: list[str]) -> dict:
    """The steady state's per-second IOPS against `x`, as its distribution (issue 71): the
    median as a line, the band from the 1st to the 99th percentile, the mean dotted; one colour
    per drive (and value of the other swept axes); log IOPS."""
    cols = ["steady_median_iops", "steady_p1_iops", "steady_p99_iops", "steady_mean_iops"]
    values = s[[c for c in cols if c in s.columns]].to_numpy().ravel()
    values = values[values > 0]
    yaxis = log_iops_axis(float(values.min()), float(values.max())) if len(values) else {}
    fig = figure(f"{proc}: steady-state IOPS per second vs {x}: median, 1st-99th percentile band, mean",
                 {"title": {"text": x}}, yaxis)
    palette = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"]
    for i, (_, g) in enumerate(s.groupby(["drive"] + others, sort=True, dropna=False)):
        name = _label(g.iloc[0], others)
        g = g.groupby(x, as_index=False)[[c for c in cols if c in g.columns]].mean().sort_values(x)
        colour = palette[i % len(palette)]
        fig["data"].append(line(g[x], g["steady_p99_iops"], f"{name}: p99", name, mode="lines",
                                line={"width": 0, "color": colour}, showlegend=False))
        fig["data"].append(line(g[x], g["steady_p1_iops"], f"{name}: p1 to p99", name, mode="lines",
                                line={"width": 0, "color": colour}, fill="tonexty", opacity=0.3))
        fig["data"].append(line(g[x], g["steady_median_iops"], f"{name}: median", name, mode="lines+markers",
                                line={"color": colour}))
        if "steady_mean_iops" in g:
            fig["data"].append(line(g[x], g["steady_mean_iops"], f"{name}: mean", name, mode="lines+markers",
                                    line={"color": colour, "dash": "dot"}))
    return fig


def write_sweep_report(out: "str | Path", png: bool = False) -> list[Path]:
    import plotly.offline

    out = Path(out)
    charts, note = build(out)
    Catalog(out).write_duckdb()  # views with this directory's absolute paths (it may have moved)
    body = []
    section = None
    for cid, sec, _ in charts:
        if sec != section:
            body.append(f"<h2>{html.escape(sec)}</h2>")
            section = sec
        body.append(f'<div class="chart" id="{cid}"></div>')
    page = PAGE.format(title=html.escape(f"ssdlab sweep: {out.name}"), note=html.escape(note),
                       plotlyjs=plotly.offline.get_plotlyjs(), body="\n".join(body),
                       charts_json=json.dumps({cid: fig for cid, _, fig in charts}))
    path = out / "report.html"
    path.write_text(page)
    paths = [path]
    if png:
        paths += write_pngs(path, [cid for cid, _, _ in charts])
    return paths


def write_pngs(page: Path, ids: list[str]) -> list[Path]:
    import base64

    from playwright.sync_api import sync_playwright


    exe = chromium_path()
    folder = page.parent / "png"
    folder.mkdir(exist_ok=True)
    paths = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=exe, args=["--no-sandbox"]) if exe else p.chromium.launch()
        tab = browser.new_page(viewport={"width": 1200, "height": 900})
        tab.goto(page.resolve().as_uri())
        tab.wait_for_function("document.body.dataset.ready === '1'")
        for cid in ids:
            url = tab.evaluate("id => Plotly.toImage(document.getElementById(id), {format: 'png', width: 1000, height: 450})", cid)
            path = folder / f"{cid}.png"
            path.write_bytes(base64.b64decode(url.split(",", 1)[1]))
            paths.append(path)
        browser.close()
    return paths
