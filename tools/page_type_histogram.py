"""The latency histogram of QD1 4 KiB random reads on a filled drive, with its NAND page types
and without them (every page at the part's mean tR): docs/img/page-types-PRESET.png.

    python tools/page_type_histogram.py [PRESET] [--seconds S] [--out DIR]

A QD1 read's latency is the host path plus one array read of the page holding the unit, so
its histogram shows one peak per page type (lower and upper MLC pages: FEMU's profile of the
20 nm part, scaled to the part's mean; tools/gen_presets.py).
"""
import argparse
import re
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent


def qd1_read_latencies_us(text: str, source: str, seconds: float) -> np.ndarray:
    """Every QD1 4 KiB random read's latency (us) over `seconds` on the filled drive."""
    from ssdlab import Drive, Job

    d = Drive(text, source)
    d.fill()
    batches = []
    d.run_together([Job(rw="randread", bs="4k", iodepth=1, runtime_s=seconds, time_based=True)],
                   on_ios=lambda ios: batches.append(ios["latency_ns"].copy()))
    return np.concatenate(batches) / 1e3


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("preset", nargs="?", default="crucial-m500-120")
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "img")
    a = ap.parse_args(argv)
    import plotly.graph_objects as go

    from ssdlab.charts import screenshot_html
    from ssdlab.configs import config_text

    text, source = config_text(a.preset)
    plain = re.sub(r"(?m)^(read|program)_page_type_factors.*\n", "", text)
    runs = {"page types (lower, upper)": qd1_read_latencies_us(text, source, a.seconds),
            "one tR for every page (before)": qd1_read_latencies_us(plain, source, a.seconds)}
    fig = go.Figure()
    for name, lat in runs.items():
        fig.add_trace(go.Histogram(x=lat, name=name, xbins={"size": 1.0}, opacity=0.75))
        print(f"{name}: {len(lat):,} reads, mean {lat.mean():.1f} us, p10 {np.percentile(lat, 10):.1f}, "
              f"p50 {np.percentile(lat, 50):.1f}, p90 {np.percentile(lat, 90):.1f}")
    lo = min(float(lat.min()) for lat in runs.values())
    hi = max(float(lat.max()) for lat in runs.values())
    fig.update_xaxes(range=[lo - 5, hi + 5])
    fig.update_layout(title=f"{a.preset}, filled: QD1 4 KiB random read latency ({a.seconds:g} s each)",
                      xaxis_title="latency, us (1 us bins)", yaxis_title="reads", barmode="overlay",
                      width=900, height=460, legend={"orientation": "h", "y": -0.2})
    a.out.mkdir(parents=True, exist_ok=True)
    html = a.out / f"page-types-{a.preset}.html"
    fig.write_html(html, include_plotlyjs=True)
    png = screenshot_html(html, html.with_suffix(".png"), 920, 480)
    html.unlink()
    print(png or "no PNG (see above)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
