"""Chart helpers shared by the API (`Result.plot`), the review report and the sweep report:
plotly figure dicts in the reviews' style (per-second samples as dots, log IOPS axes labelled by
decade), names for ids and files, and the Chromium that renders PNGs."""

from __future__ import annotations


# Log IOPS axes label decades as the reviews do (1K, 10K, 100K), never minor ticks ("2, 3, 4").
DECADES = [10.0 ** k for k in range(0, 8)]
DECADE_LABELS = ["1", "10", "100", "1K", "10K", "100K", "1M", "10M"]


def log_iops_axis(lo: float = 1e3, hi: float = 1e5) -> dict:
    """A log IOPS axis over whole decades around lo..hi, so at least two decades are labelled."""
    import math
    a = math.floor(math.log10(max(lo, 1.0)))
    b = max(math.ceil(math.log10(max(hi, 1.0))), a + 2)
    return {"title": {"text": "IOPS (log scale)"}, "type": "log", "tickvals": DECADES, "ticktext": DECADE_LABELS,
            "range": [a, b]}


def dots(x, y, name, drive, variant=""):
    """Per-second samples as dots, as the reviews draw them (lines of two drives tangle)."""
    return line(x, y, name, drive, variant, mode="markers", marker={"size": 3})


def figure(title, xaxis, yaxis, **layout):
    return {"data": [], "layout": {"title": {"text": title}, "xaxis": xaxis, "yaxis": yaxis,
                                   "margin": {"l": 70, "r": 20, "t": 50, "b": 50}, "height": 420,
                                   "legend": {"orientation": "h", "y": -0.2}, **layout}}


def line(x, y, name, drive, variant="", **kw):
    return {"type": "scattergl" if len(x) > 2000 else "scatter", "mode": kw.pop("mode", "lines"),
            "x": list(map(float, x)), "y": [None if (v != v) else float(v) for v in y],
            "name": name, "meta": {"drive": drive, "variant": variant}, **kw}


def bar(x, y, name, **kw):
    """Bars with their values on them (a reader compares figures, not bar heights)."""
    values = [float(v) for v in y]
    labels = [f"{v:,.0f}" if abs(v) >= 100 else f"{v:.3g}" for v in values]
    return {"type": "bar", "x": list(x), "y": values, "name": name, "meta": {"compare": True},
            "text": labels, "textposition": "outside", "cliponaxis": False, **kw}


def slug(s: str | None) -> str:
    """A name for an id or a file: letters, digits, '-' and '.' kept, runs of anything else one '-'."""
    if not s:
        return ""
    return "".join(c if c.isalnum() or c in "-." else "-" for c in s).strip("-").replace("--", "-")


def chromium_path() -> str | None:
    import shutil
    for name in ("chromium", "chromium-browser", "google-chrome", "chrome"):
        p = shutil.which(name)
        if p:
            return p
    return None


def screenshot_html(html, png, width: int, height: int):
    """`html` (a page of plotly charts) as a PNG at `png`, rendered in a headless Chromium
    (Playwright driving the system's chromium): its path, or None with the reason printed when
    Playwright or a browser is missing (the HTML is still there)."""
    try:
        from playwright.sync_api import sync_playwright

        exe = chromium_path()
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=exe, args=["--no-sandbox"]) if exe else p.chromium.launch()
            page = browser.new_page(viewport={"width": width, "height": height})
            page.goto(html.resolve().as_uri())
            page.wait_for_selector(".main-svg")
            page.screenshot(path=str(png), full_page=True)
            browser.close()
        return png
    except Exception as e:  # no Playwright or no browser
        print(f"{png.name} not written ({type(e).__name__}: {e}); {html.name} has the charts")
        return None


def power_figure(series, title: str):
    """Power and temperature over time of a run's series (a plotly Figure), or None when the
    drive has no power model: watts on the left axis, °C on the right, throttled seconds shaded."""
    if "power_w" not in series:
        return None
    import plotly.graph_objects as go
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=series.time_s, y=series.power_w, mode="lines", name="power (W)"))
    layout = {"title": {"text": title}, "xaxis": {"title": {"text": "time (s)"}},
              "yaxis": {"title": {"text": "W"}, "rangemode": "tozero"},
              "legend": {"orientation": "h", "y": -0.2}, "height": 420}
    if "temperature_c" in series:
        fig.add_trace(go.Scatter(x=series.time_s, y=series.temperature_c, mode="lines", name="temperature (°C)",
                                 yaxis="y2", line={"dash": "dot"}))
        layout["yaxis2"] = {"title": {"text": "°C"}, "overlaying": "y", "side": "right"}
        step = float(series.time_s.iloc[0]) if len(series) else 1.0
        for t in series.time_s[series.throttled]:
            fig.add_vrect(x0=float(t) - step, x1=float(t), fillcolor="red", opacity=0.12, line_width=0)
    fig.update_layout(**layout)
    return fig
