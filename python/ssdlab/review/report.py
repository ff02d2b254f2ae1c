"""The review report: one self-contained HTML page (plotly.js embedded, works offline) with
buttons to switch drive and spare-area variant, PNGs of every chart, the data behind each chart
as CSV and Parquet, and a summary table comparing the drives."""

from __future__ import annotations

import html
import json
from pathlib import Path

import numpy as np
import pandas as pd

from ..charts import bar, chromium_path, dots, figure, line, log_iops_axis, slug
from .procedures import Outcome

LINEAR_ZOOM_MAX = 40_000  # methodology.md: zoom "linear y up to 40K IOPS"


def linear_zoom_top(zoomed_iops: pd.Series) -> int:
    """The linear zoom's top: methodology.md's 40K IOPS, or, when the zoomed seconds go above
    it (an enterprise drive's steady state at 40-200K), the next 10K above their highest, so no
    run is cut off."""
    high = float(zoomed_iops.max()) if len(zoomed_iops) else 0.0
    return LINEAR_ZOOM_MAX if high <= LINEAR_ZOOM_MAX else int(-(-high * 1.05 // 10_000) * 10_000)


# The procedures drawn as bars of a `results` table's `mb_per_s` by `test`: (procedure, title, unit).
BAR_CHARTS = (("four-corners", "Desktop Iometer: the four corners", "MB/s"),
              ("sequential-qd", "Incompressible sequential at high queue depth", "MB/s"),
              ("zns-vs-conventional", "Overwriting the capacity: zoned against conventional", "MB/s"))


def _transfer_size_chart(outs: list, charts: list, data: dict) -> None:
    """The transfer-size procedure's chart: MB/s against the transfer size, read and write."""
    if not outs:
        return
    sizes = sorted({int(b) for o in outs for b in o.tables["curves"].bs_bytes})
    fig = figure("Sequential throughput vs transfer size, QD4", {"title": {"text": "transfer size (bytes, log scale)"}, "type": "log",
               "tickvals": sizes, "ticktext": [_size_label(b) for b in sizes]}, {"title": {"text": "MB/s"}})
    frames = []
    for o in outs:
        t = o.tables["curves"]
        fig["data"].append(line(t.bs_bytes, t.read_mb_per_s, f"{o.drive} read", o.drive, mode="lines+markers"))
        fig["data"].append(line(t.bs_bytes, t.write_mb_per_s, f"{o.drive} write", o.drive, mode="lines+markers"))
        frames.append(t.assign(drive=o.drive, source=o.source))
    charts.append(("transfer-size", "Performance vs transfer size", fig))
    data["transfer-size"] = pd.concat(frames, ignore_index=True)


def _legend_below(height: int, bottom: int) -> dict:
    """A chart's layout with its legend one entry a line below the plot (long entry names)."""
    return {"legend": {"orientation": "v", "x": 0, "y": -0.2, "xanchor": "left", "yanchor": "top"},
            "height": height, "margin": {"l": 70, "r": 20, "t": 50, "b": bottom}}


def _flash_cache_chart(outs: list, charts: list, data: dict) -> None:
    """The flash-cache procedure's chart, as the EuroSys '25 paper draws it: the device's write
    amplification (media / host bytes, the statistics log) over time, a line per layout."""
    if not outs:
        return
    fig = figure("Flash cache on FDP: device write amplification over time",
                 {"title": {"text": "writes of the cache's size since the fill"}},
                 {"title": {"text": "device write amplification (media / host bytes)"}, "rangemode": "tozero"},
                 **_legend_below(520, 170))
    frames = []
    for o in outs:
        t = o.tables["waf"]
        m = o.summary
        name = f"{o.drive} ({o.variant}): steady {m['waf_steady']:.2f}"
        if "small_objects_waf_model" in m:
            name += f"; small objects {m['small_objects_waf_steady']:.2f}, model {m['small_objects_waf_model']:.2f}"
        fig["data"].append(line(t.cache_writes, t.waf, name, o.drive, o.variant, mode="lines+markers"))
        frames.append(t.assign(drive=o.drive, variant=o.variant, source=o.source))
    charts.append(("flash-cache", "Flash cache (FDP)", fig))
    data["flash-cache"] = pd.concat(frames, ignore_index=True)


def _zns_rates_chart(outs: list, charts: list, data: dict) -> None:
    """zns-vs-conventional's second set-up as ATC '21 draws it: the reads' p99 latency against
    the writes' target rate, a line per layout (a hollow marker: the writes fell short of it)."""
    frames = [o.tables["rates"].assign(drive=o.drive, source=o.source) for o in outs
              if len(o.tables.get("rates", []))]
    if not frames:
        return
    fig = figure("4 KiB random reads beside rate-limited 64 KiB writes: read p99 latency",
                 {"title": {"text": "target write rate (MB/s)"}},
                 {"title": {"text": "read p99 latency (us, log scale)"}, "type": "log"},
                 **_legend_below(480, 130))
    for t in frames:
        for variant, g in t.groupby("test", sort=False):
            drive = str(g.drive.iloc[0])
            held = g[g.sustained]
            name = (f"{drive} ({variant}): sustained up to "
                    f"{held.target_mb_per_s.max() if len(held) else 0:.0f} MB/s")
            trace = line(g.target_mb_per_s, g.read_p99_us, name, drive, str(variant), mode="lines+markers")
            trace["marker"] = {"symbol": ["circle" if v else "circle-open" for v in g.sustained], "size": 9}
            fig["data"].append(trace)
    charts.append(("zns-rates", "Overwriting the capacity: zoned against conventional", fig))
    data["zns-rates"] = pd.concat(frames, ignore_index=True)


def build_charts(outcomes: list[Outcome]) -> tuple[list[tuple[str, str, dict]], dict[str, pd.DataFrame]]:
    """(chart id, section, plotly figure) in page order, and the data behind each chart."""
    by = {}
    for o in outcomes:
        by.setdefault(o.procedure, []).append(o)
    charts: list[tuple[str, str, dict]] = []
    data: dict[str, pd.DataFrame] = {}

    if "consistency" in by:
        outs = by["consistency"]
        from .steady import steady_window
        end = max(float(o.tables["iops"].time_s.max()) for o in outs)
        lo = max(0.0, end - steady_window(600, end))  # methodology.md: the 1400-2000 s zoom
        iops = pd.concat([o.tables["iops"].iops for o in outs])
        span = (float(iops[iops > 0].min()) if (iops > 0).any() else 1.0, float(iops.max()) if len(iops) else 1.0)
        full = figure("4 KiB random write IOPS, QD32, each second of the whole run (log scale)",
                    {"title": {"text": "time (s)"}}, log_iops_axis(*span))
        zl = figure(f"Zoom t = {lo:.0f}..{end:.0f} s (log scale)", {"title": {"text": "time (s)"}, "range": [lo, end]},
                  log_iops_axis(*span))
        top = linear_zoom_top(pd.concat([o.tables["iops"][o.tables["iops"].time_s >= lo].iops for o in outs]))
        zn = figure(f"Zoom t = {lo:.0f}..{end:.0f} s (linear, to {top / 1000:.0f}K IOPS)",
                    {"title": {"text": "time (s)"}, "range": [lo, end]}, {"title": {"text": "IOPS"}, "range": [0, top]})
        frames = []
        for o in outs:
            s = o.tables["iops"]
            name = f"{o.drive} ({o.variant})"
            full["data"].append(dots(s.time_s, s.iops.clip(lower=1), name, o.drive, o.variant))
            z = s[s.time_s >= lo]
            zl["data"].append(dots(z.time_s, z.iops.clip(lower=1), name, o.drive, o.variant))
            zn["data"].append(dots(z.time_s, z.iops, name, o.drive, o.variant))
            frames.append(s.assign(drive=o.drive, variant=o.variant, source=o.source))
        # The distribution of the steady window's seconds (issue 71): the share of seconds at or
        # below each IOPS, with the summary's median, floor and spread in each curve's name.
        dist = figure("Distribution of the per-second IOPS over each run's steady-state window",
                      {**log_iops_axis(*span), "title": {"text": "IOPS (log scale)"}},
                      {"title": {"text": "share of seconds at or below (%)"}, "range": [0, 100]})
        dist_frames = []
        for o in outs:
            z = o.tables["iops"]
            # Each run's own window (a client run of 2000 s beside an enterprise one of 7200 s).
            run_end = float(z.time_s.max()) if len(z) else 0.0
            window = o.summary.get("steady_window_s") or steady_window(600, run_end)
            v = np.sort(z[z.time_s > run_end - window].iops.to_numpy())
            if not len(v):
                continue
            share = 100.0 * np.arange(1, len(v) + 1) / len(v)
            m = o.summary
            name = (f"{o.drive} ({o.variant}, {run_end - window:.0f}-{run_end:.0f} s): median {m.get('steady_median_iops', 0):,.0f}, p1 {m.get('steady_p1_iops', 0):,.0f}, "
                    f"p99 {m.get('steady_p99_iops', 0):,.0f}, {m.get('steady_above_twice_median_pct', 0):.0f}% of seconds "
                    f"> 2x median, {m.get('steady_below_half_median_pct', 0):.0f}% < median/2")
            dist["data"].append(line(np.clip(v, 1, None), share, name, o.drive, o.variant, mode="lines"))
            dist_frames.append(pd.DataFrame({"iops": v, "share_pct": share, "drive": o.drive, "variant": o.variant,
                                             "source": o.source}))
        dist["layout"]["legend"] = {"orientation": "v", "x": 0, "y": -0.2, "xanchor": "left", "yanchor": "top"}
        dist["layout"]["height"] = 480
        dist["layout"]["margin"] = {"l": 70, "r": 20, "t": 50, "b": 130}
        charts += [("consistency-full", "Performance consistency", full),
                   ("consistency-zoom-log", "Performance consistency", zl),
                   ("consistency-zoom-linear", "Performance consistency", zn),
                   ("consistency-distribution", "Performance consistency", dist)]
        df = pd.concat(frames, ignore_index=True)
        for c in ("consistency-full", "consistency-zoom-log", "consistency-zoom-linear"):
            data[c] = df if c == "consistency-full" else df[df.time_s >= lo]
        if dist_frames:
            data["consistency-distribution"] = pd.concat(dist_frames, ignore_index=True)

    for proc, title, unit in BAR_CHARTS:
        if proc in by:
            fig = figure(title, {"title": {"text": ""}}, {"title": {"text": unit}}, barmode="group")
            frames = []
            for o in by[proc]:
                t = o.tables["results"]
                fig["data"].append(bar(t.test, t.mb_per_s, o.drive))
                frames.append(t.assign(drive=o.drive, source=o.source))
            charts.append((proc, title, fig))
            data[proc] = pd.concat(frames, ignore_index=True)

    if "power" in by:
        # As the reviews draw it: horizontal bars, one group per state, a bar per drive.
        fig = figure("Drive power (W)", {"title": {"text": "W"}, "rangemode": "tozero"},
                     {"title": {"text": ""}, "autorange": "reversed"}, barmode="group", height=460,
                     margin={"l": 230, "r": 20, "t": 50, "b": 50})
        frames = []
        for o in by["power"]:
            t = o.tables["results"]
            if t.empty:
                continue  # a drive without a power model
            fig["data"].append({**bar(t.state, t.watts, o.drive), "x": [float(v) for v in t.watts],
                                "y": list(t.state), "orientation": "h"})
            frames.append(t.assign(drive=o.drive, source=o.source))
        charts.append(("power", "Power", fig))
        data["power"] = pd.concat(frames, ignore_index=True)

    for proc, draw in (("transfer-size", _transfer_size_chart), ("flash-cache", _flash_cache_chart), ("zns-vs-conventional", _zns_rates_chart)):
        draw(by.get(proc, []), charts, data)
    if "trim" in by:
        # The legend beside the plot: a row of passes per drive below it ran into the axis title.
        fig = figure("Sequential write passes along the LBA span", {"title": {"text": "position in the LBA span (%)"}},
                   {"title": {"text": "MB/s"}, "rangemode": "tozero"},
                   legend={"orientation": "v", "x": 1.02, "y": 1, "xanchor": "left"},
                   margin={"l": 70, "r": 260, "t": 50, "b": 50})
        frames = []
        for o in by["trim"]:
            t = o.tables["passes"]
            for name, g in t.groupby("pass", sort=False):
                fig["data"].append(line(g.position_pct, g.mb_per_s, f"{o.drive}: {name}", o.drive, mode="lines+markers"))
            frames.append(t.assign(drive=o.drive, source=o.source))
        charts.append(("trim", "TRIM validation", fig))
        data["trim"] = pd.concat(frames, ignore_index=True)

    if "qd-scaling" in by:
        allc = pd.concat([o.tables["curves"].assign(drive=o.drive, source=o.source) for o in by["qd-scaling"]], ignore_index=True)
        for w, g in allc.groupby("workload", sort=False):
            metric, unit = ("mb_per_s", "MB/s") if "128K" in w else ("iops", "IOPS")
            qds = sorted(int(q) for q in g.qd.unique())
            fig = figure(f"{w}: steady state vs queue depth", {"title": {"text": "queue depth"}, "type": "log",
                       "tickvals": qds, "ticktext": [str(q) for q in qds]},
                       {"title": {"text": unit}, "rangemode": "tozero"})
            for drive, gd in g.groupby("drive", sort=False):
                fig["data"].append(line(gd.qd, gd[metric], drive, drive, mode="lines+markers"))
            cid = f"qd-scaling-{slug(w)}"
            charts.append((cid, "Queue-depth scaling at steady state", fig))
            data[cid] = g
    if "endurance" in by:
        fig = figure("Endurance: projected and rated TBW", {"title": {"text": ""}}, {"title": {"text": "TB written"}}, barmode="group")
        t = pd.DataFrame([{"drive": o.drive, "projected_tbw": o.summary["projected_tbw"], "rated_tbw": o.summary["rated_tbw"],
                           "write_amplification": o.summary["write_amplification"], "wear_leveling_factor": o.summary["wear_leveling_factor"]}
                          for o in by["endurance"]])
        fig["data"].append(bar(t.drive, t.projected_tbw, "projected (measured WAF x WLF)"))
        fig["data"].append(bar(t.drive, t.rated_tbw.fillna(0), "rated (datasheet)"))
        charts.append(("endurance", "Endurance", fig))
        data["endurance"] = t
    if "storage-bench" in by:
        allt = pd.concat([o.tables["results"].assign(drive=o.drive, source=o.source) for o in by["storage-bench"]], ignore_index=True)
        for trace, g in allt.groupby("trace", sort=False):
            fig = figure(f"Storage bench, {trace}: average data rate", {"title": {"text": ""}}, {"title": {"text": "MB/s"}}, barmode="group")
            for drive, gd in g.groupby("drive", sort=False):
                fig["data"].append(bar(gd["class"], gd.data_rate_mb_per_s, drive))
            cid = f"storage-bench-{slug(trace)}"
            charts.append((cid, "Storage bench (trace replay)", fig))
            data[cid] = g
    _state_parameters(charts, by)
    return charts, data


def _state_parameters(charts: list[tuple[str, str, dict]], by: dict[str, list[Outcome]]) -> None:
    """Every chart says what its test ran with (issue 25 item 14): the procedure's parameters,
    its precondition, the spare-area variants and quick mode, under the plot."""
    from .labels import describe_params
    for cid, _, fig in charts:
        proc = next((p for p in sorted(by, key=len, reverse=True) if cid.startswith(p)), None)
        if proc is None:
            continue
        # One line for the runs drawn; their spare-area variants named once.
        from dataclasses import replace
        lines = list(dict.fromkeys(describe_params(replace(o, variant="")) for o in by[proc]))
        variants = list(dict.fromkeys(o.variant for o in by[proc] if o.variant))
        if variants:
            lines = [f"{line}, {' / '.join(variants)}" for line in lines]
        text = "<br>".join(_wrap(line, 150) for line in lines if line)
        if not text:
            continue
        n = text.count("<br>") + 1
        layout = fig["layout"]
        margin = dict(layout.get("margin", {}))
        margin["t"] = margin.get("t", 50) + 14 * n + 10
        layout["margin"] = margin
        layout["height"] = layout.get("height", 420) + 14 * n + 10
        # Between the title and the plot, clear of the legend and the axis titles below.
        layout.setdefault("annotations", []).append({
            "text": text, "xref": "paper", "yref": "paper", "x": 0, "xanchor": "left",
            "y": 1, "yanchor": "bottom", "yshift": 6, "showarrow": False,
            "align": "left", "font": {"size": 10, "color": "#555"}})


def _wrap(text: str, width: int) -> str:
    """A long parameter line broken at commas for a chart annotation."""
    out, line = [], ""
    for part in text.split(", "):
        if line and len(line) + len(part) + 2 > width:
            out.append(line + ",")
            line = part
        else:
            line = f"{line}, {part}" if line else part
    out.append(line)
    return "<br>".join(out)


def _size_label(b: int) -> str:
    for unit, div in (("M", 1 << 20), ("K", 1 << 10)):
        if b >= div:
            return f"{b // div}{unit}"
    return str(b)


def summary_table(outcomes: list[Outcome]) -> pd.DataFrame:
    """One row per figure (procedure, variant, key), one column per drive, and its unit."""
    from .labels import unit_of
    rows = {}
    units = {}
    for o in outcomes:
        col = rows.setdefault(o.drive, {})
        pre = o.procedure + (f" [{o.variant}]" if o.variant else "")
        for k, v in o.summary.items():
            if isinstance(v, (int, float)) and v is not None and not isinstance(v, bool):
                col[f"{pre}: {k}"] = v
                units[f"{pre}: {k}"] = unit_of(k)
    table = pd.DataFrame(rows)
    table.insert(0, "unit", [units[k] for k in table.index])
    return table


PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 1.5em; color: #222; }}
h1 {{ font-size: 1.5em; }} h2 {{ margin-top: 2em; border-bottom: 1px solid #ccc; }}
.controls {{ position: sticky; top: 0; background: #fff; padding: .5em 0; z-index: 10; border-bottom: 1px solid #ddd; }}
.controls button {{ margin: .15em; padding: .3em .8em; border: 1px solid #888; background: #f4f4f4; border-radius: 4px; cursor: pointer; }}
.controls button.active {{ background: #1f77b4; color: #fff; border-color: #1f77b4; }}
table {{ border-collapse: collapse; font-size: .85em; }} td, th {{ border: 1px solid #ccc; padding: .2em .5em; text-align: right; }}
th:first-child, td:first-child {{ text-align: left; }}
.note {{ color: #555; font-size: .9em; }}
</style>
<script>{plotlyjs}</script>
</head><body>
<h1>{title}</h1>
<p class="note">{note}</p>
<div class="controls">
 <span>Drive:</span> {drive_buttons}
 <span style="margin-left:1.5em">Spare area:</span> {spare_buttons}
</div>
{body}
<script>
const CHARTS = {charts_json};
const DRIVES = {drives_json};
const SPARES = {spares_json};
const state = {{drive: DRIVES[0], spare: SPARES[0]}};
function visibleFor(t) {{
  const m = t.meta || {{}};
  if (m.compare) return true;
  const driveOk = state.drive === "all" || m.drive === state.drive;
  const variantOk = !m.variant || SPARES.length === 0 || m.variant === state.spare;
  return driveOk && variantOk;
}}
function apply() {{
  for (const id of Object.keys(CHARTS)) {{
    const div = document.getElementById(id);
    Plotly.restyle(div, {{visible: div.data.map(visibleFor)}});
  }}
  document.querySelectorAll("button[data-drive]").forEach(b => b.classList.toggle("active", b.dataset.drive === state.drive));
  document.querySelectorAll("button[data-spare]").forEach(b => b.classList.toggle("active", b.dataset.spare === state.spare));
  document.body.dataset.drive = state.drive;
  document.body.dataset.spare = state.spare || "";
}}
window.ssdlabSelect = function(drive, spare) {{
  if (drive !== null && drive !== undefined) state.drive = drive;
  if (spare !== null && spare !== undefined) state.spare = spare;
  apply();
}};
document.querySelectorAll("button[data-drive]").forEach(b => b.addEventListener("click", () => window.ssdlabSelect(b.dataset.drive, null)));
document.querySelectorAll("button[data-spare]").forEach(b => b.addEventListener("click", () => window.ssdlabSelect(null, b.dataset.spare)));
for (const [id, fig] of Object.entries(CHARTS)) {{
  Plotly.newPlot(id, fig.data, fig.layout, {{responsive: true, displaylogo: false}});
}}
apply();
document.body.dataset.ready = "1";
</script>
</body></html>
"""


def _number(v: float) -> str:
    """A table figure with the digits that matter: 55,262 / 303.9 / 1.086."""
    a = abs(v)
    if a >= 1000:
        return f"{v:,.0f}"
    if a >= 10:
        return f"{v:,.1f}"
    return f"{v:.4g}"


def _spare_pct(variant: str) -> float | None:
    """The spare-area variant's percentage ("spare 25%" -> 25.0), None for none."""
    import re
    m = re.search(r"spare\s+([0-9.]+)\s*%", variant or "")
    return float(m.group(1)) if m else None


def write_report(outcomes: list[Outcome], out: Path, title: str = "ssdlab review", note: str = "",
                 provenance: dict | None = None, not_run: list[tuple[str, str, str]] = ()) -> dict:
    """Write report.html, data/*.csv|parquet, summary.csv|json into `out`. Returns the paths
    and the chart list (for the PNG step)."""
    import plotly.offline

    from .labels import describe_params, unit_of
    out.mkdir(parents=True, exist_ok=True)
    charts, data = build_charts(outcomes)
    drives = list(dict.fromkeys(o.drive for o in outcomes))
    spares = list(dict.fromkeys(o.variant for o in outcomes if o.procedure == "consistency" and o.variant))
    (out / "data").mkdir(exist_ok=True)
    for cid, df in data.items():
        df.to_csv(out / "data" / f"{cid}.csv", index=False)
        df.to_parquet(out / "data" / f"{cid}.parquet", index=False)
    table = summary_table(outcomes)
    # Six significant digits: a measurement's precision, not a float's.
    table.apply(lambda col: col if col.name == "unit" else col.map(lambda v: float(f"{v:.6g}") if pd.notna(v) else v)).to_csv(
        out / "summary.csv", index_label="metric")
    (out / "summary.json").write_text(json.dumps([{"procedure": o.procedure, "drive": o.drive, "variant": o.variant,
                                                   "spare_pct": _spare_pct(o.variant),
                                                   "source": o.source, "wall_s": o.wall_s, "summary": o.summary,
                                                   "units": {k: unit_of(k) for k in o.summary},
                                                   "parameters": o.params, "conditions": describe_params(o),
                                                   "run": provenance or {}}
                                                  for o in outcomes], indent=2, default=_jsonable) + "\n")
    body = []
    section = None
    for cid, sec, _ in charts:
        if sec != section:
            body.append(f"<h2>{html.escape(sec)}</h2>")
            section = sec
            proc = cid.split("-zoom")[0].split("-full")[0]
            for name, drive, why in not_run:
                if proc.startswith(name):
                    body.append(f'<p class="note skipped">{html.escape(name)} was not run on {html.escape(drive)}: '
                                f"{html.escape(why)}.</p>")
        body.append(f'<div class="chart" id="{cid}"></div>')
    body.append("<h2>Summary</h2>")
    body.append(table.to_html(float_format=_number, na_rep="", border=0))
    conditions = dict.fromkeys(f"{o.procedure}: {describe_params(o)}" for o in outcomes if describe_params(o))
    if conditions:
        body.append('<p class="note">Conditions: ' + "<br>".join(html.escape(c) for c in conditions) + "</p>")
    drive_buttons = " ".join(f'<button data-drive="{html.escape(d)}">{html.escape(d)}</button>' for d in drives)
    if len(drives) > 1:
        drive_buttons += ' <button data-drive="all">all</button>'
    spare_buttons = " ".join(f'<button data-spare="{html.escape(s)}">{html.escape(s)}</button>' for s in spares) or "<span>-</span>"
    page = PAGE.format(
        title=html.escape(title), note=html.escape(note), plotlyjs=plotly.offline.get_plotlyjs(),
        drive_buttons=drive_buttons, spare_buttons=spare_buttons, body="\n".join(body),
        charts_json=json.dumps({cid: fig for cid, _, fig in charts}, default=_jsonable).replace("</", "<\\/"),
        drives_json=json.dumps(drives), spares_json=json.dumps(spares))
    (out / "report.html").write_text(page)
    return {"html": out / "report.html", "charts": [c for c, _, _ in charts], "drives": drives, "spares": spares,
            "per_drive": {cid: any(not t.get("meta", {}).get("compare") for t in fig["data"]) for cid, _, fig in charts},
            "per_spare": {cid: any(t.get("meta", {}).get("variant") for t in fig["data"]) for cid, _, fig in charts}}


def _jsonable(v):
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (np.floating,)):
        return float(v)
    if isinstance(v, np.ndarray):
        return v.tolist()
    raise TypeError(type(v))


def write_pngs(info: dict, out: Path) -> list[Path]:
    """Render every chart to PNG in a headless Chromium (Playwright driving the system's
    chromium): per drive, and per spare-area variant where the chart has them."""
    from playwright.sync_api import sync_playwright

    exe = chromium_path()
    png = out / "png"
    png.mkdir(exist_ok=True)
    paths = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=exe, args=["--no-sandbox"]) if exe else p.chromium.launch()
        page = browser.new_page(viewport={"width": 1200, "height": 900})
        page.goto(info["html"].resolve().as_uri())
        page.wait_for_function("document.body.dataset.ready === '1'")
        for cid in info["charts"]:
            drives = info["drives"] if info["per_drive"][cid] else [None]
            if info["per_drive"][cid] and len(info["drives"]) > 1:
                drives = drives + ["all"]  # the drives compared, as the page's "all" button shows them
            spares = info["spares"] if info["per_spare"][cid] and info["spares"] else [None]
            for d in drives:
                for s in spares:
                    page.evaluate("([d, s]) => window.ssdlabSelect(d, s)", [d or info["drives"][0], s])
                    suffix = ", ".join(x for x in (d, s) if x)
                    url = page.evaluate("""([id, suffix]) => {
                        const div = document.getElementById(id);
                        const title = div.layout.title.text;
                        const copy = {data: div.data, layout: Object.assign({}, div.layout,
                            {title: {text: suffix ? title + " (" + suffix + ")" : title}})};
                        return Plotly.toImage(copy, {format: 'png', width: 1000, height: div.layout.height || 450});
                    }""", [cid, suffix])
                    name = "-".join(x for x in (cid, slug(d), slug(s)) if x) + ".png"
                    import base64
                    (png / name).write_bytes(base64.b64decode(url.split(",", 1)[1]))
                    paths.append(png / name)
        browser.close()
    return paths
