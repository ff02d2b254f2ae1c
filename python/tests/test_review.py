"""The review suite: each procedure on a small drive (short parameters), parameter errors, the
report with its buttons in a real headless Chromium, and procedures on a real file via fio."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pandas as pd
import ssdlab
import pytest

from ssdlab.errors import SsdlabError
from ssdlab.review import resolve_params, run_procedure
from ssdlab.review.runner import review

SHORT = {
    "consistency": dict(duration_s=60, spare=[0, 25], steady_window_s=20),
    "four-corners": dict(span="256m", random_s=5, seq_s=3),
    "sequential-qd": dict(duration_s=3),
    "transfer-size": dict(span="16m", max_bs="1m"),
    "trim": dict(random_s=40, positions=10),
    "qd-scaling": dict(precondition_s=30, topup_s=5, step_s=2, qds=[1, 4, 32]),
    "endurance": dict(cycles=3),
    "storage-bench": dict(fraction=0.002),
}


def ssdlab_cli(*args, **kw):
    return subprocess.run([sys.executable, "-m", "ssdlab.cli", *args], capture_output=True, text=True, timeout=600, **kw)


def test_consistency_shows_peak_cliff_steady_state_and_spare_area_lifts_it(small_toml):
    a, b = run_procedure("consistency", str(small_toml), SHORT["consistency"])
    assert (a.variant, b.variant) == ("spare 0%", "spare 25%")
    s = a.summary
    assert s["peak_iops"] > 2 * s["steady_mean_iops"], s
    assert s["cliff_s"] is not None and s["cliff_s"] < 30
    assert s["steady_floor_iops"] <= s["steady_mean_iops"] <= s["steady_p99_iops"]
    assert b.summary["steady_mean_iops"] > 1.5 * s["steady_mean_iops"]
    assert b.summary["write_amplification"] < s["write_amplification"]
    # The steady window's write amplification leaves out the fresh burst (about 1): higher
    # than the run's, and lower with the extra spare.
    assert s["steady_write_amplification"] > s["write_amplification"], s
    assert b.summary["steady_write_amplification"] < s["steady_write_amplification"]
    assert len(a.tables["iops"]) == 60


def test_spare_left_holding_data_is_no_spare(small_toml):
    """fill=drive fills every LBA before the random writes over the span: the unwritten quarter
    holds data instead of serving as spare, so the drive copies more and runs slower than with
    the methodology's trimmed quarter."""
    p = dict(duration_s=60, spare=[25], steady_window_s=20)
    trimmed = run_procedure("consistency", str(small_toml), p)[0].summary
    out = run_procedure("consistency", str(small_toml), {**p, "fill": "drive"})[0]
    assert out.variant == "spare 25% (filled)"
    filled = out.summary
    assert filled["steady_write_amplification"] > 1.2 * trimmed["steady_write_amplification"], (trimmed, filled)
    assert filled["steady_mean_iops"] < trimmed["steady_mean_iops"]


def test_window_write_amplification_is_the_drives_own_over_those_seconds(small_toml):
    """Over a whole run's series, the window figure is the drive's write amplification for the
    run (NAND pages programmed x page size / host bytes), counted from the per-second series."""
    from ssdlab.review.procedures import window_write_amplification
    d = ssdlab.Drive.from_toml(small_toml)
    d.secure_erase()
    d.fill()
    d.run(ssdlab.Job(name="burst", rw="randwrite", bs="4k", iodepth=32, runtime_s=20, time_based=True))
    r = d.run(ssdlab.Job(name="gc", rw="randwrite", bs="4k", iodepth=32, runtime_s=10, time_based=True))
    everything = np.ones(len(r.series), dtype=bool)
    got = window_write_amplification(r.series, everything, d.geometry, 4096)
    assert r.summary["write_amplification"] > 1.5
    # The summary also counts the queue's drain after the last whole second (32 IOs of
    # about 29K here, and the programs they cause).
    assert got == pytest.approx(r.summary["write_amplification"], rel=0.01)


def test_consistency_is_deterministic(small_toml):
    p = dict(duration_s=20, spare=[0])
    x = run_procedure("consistency", str(small_toml), p)[0].tables["iops"]
    y = run_procedure("consistency", str(small_toml), p)[0].tables["iops"]
    pd.testing.assert_frame_equal(x, y)


def test_trim_passes_degrade_recover_and_trim_restores(small_toml):
    o = run_procedure("trim", str(small_toml), SHORT["trim"])[0]
    m = o.tables["passes"].groupby("pass", sort=False)["mb_per_s"].mean()
    fresh, degraded, second, trimmed = m.iloc[0], m.iloc[1], m.iloc[2], m.iloc[3]
    assert degraded < 0.7 * fresh, m
    assert second > degraded and trimmed > degraded
    assert trimmed > 0.85 * fresh, m
    assert len(o.tables["passes"]) == 4 * 10


def _units_declared(outcome):
    """Every figure of an outcome's summary has its declared unit (issue 73 item 1): a unit
    from the table or from the label, never one guessed from a substring of the name."""
    from ssdlab.review.labels import unit_of
    units = {k: unit_of(k) for k, v in outcome.summary.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
    assert all(units.values()), {k: u for k, u in units.items() if not u}
    return units


def test_every_summary_unit_is_declared():
    from ssdlab.review.labels import unit_of
    # The three a substring match got wrong.
    assert unit_of("steady_write_amplification") == "x"
    assert unit_of("read_mb_per_s_max") == unit_of("write_mb_per_s_max") == "MB/s"
    assert unit_of("4K random write QD32 (IOPS)") == "IOPS" and unit_of("idle (W)") == "W"
    assert unit_of("pass 2 MB/s") == "MB/s" and unit_of("no_such_figure") is None


def test_four_corners_sequential_and_transfer_size(small_toml):
    o = run_procedure("four-corners", str(small_toml), SHORT["four-corners"])[0]
    assert _units_declared(o)["4K random write QD32 (IOPS)"] == "IOPS"
    fc = o.tables["results"]
    assert list(fc.test) == ["4K random read QD3", "4K random write QD3", "4K random write QD32",
                             "128K sequential read QD1", "128K sequential write QD1"]
    assert (fc.mb_per_s > 0).all()
    sq = run_procedure("sequential-qd", str(small_toml), SHORT["sequential-qd"])[0].tables["results"]
    assert len(sq) == 2 and (sq.mb_per_s > 0).all()
    # SATA 6 Gb/s carries at most 600 MB/s.
    assert sq.mb_per_s.max() < 600
    o = run_procedure("transfer-size", str(small_toml), SHORT["transfer-size"])[0]
    assert _units_declared(o) == {"read_mb_per_s_max": "MB/s", "write_mb_per_s_max": "MB/s"}
    ts = o.tables["curves"]
    assert list(ts.bs_bytes) == [512 * 2**k for k in range(12)]
    assert ts.read_mb_per_s.iloc[-1] > 5 * ts.read_mb_per_s.iloc[0]
    # The span is written before the sweep: writes smaller than a mapping unit pay
    # read-modify-write at every size, so the curve rises with the size (it dipped at 1K before).
    small = ts[ts.bs_bytes <= 4096].write_mb_per_s.to_list()
    assert small == sorted(small), small


def test_qd_scaling_endurance_and_storage_bench(small_toml):
    q = run_procedure("qd-scaling", str(small_toml), SHORT["qd-scaling"])[0].tables["curves"]
    assert set(q.workload) == {"4K random write", "4K random read", "4K random 70/30 read/write",
                               "128K sequential write", "128K sequential read"}
    rr = q[q.workload == "4K random read"].set_index("qd").iops
    assert rr[32] > 3 * rr[1]
    # Latency percentiles per step and direction: reads' p99 grows with the queue; a
    # read-only step has no write percentiles.
    r = q[q.workload == "4K random read"].set_index("qd")
    assert r.read_latency_us_p50[1] <= r.read_latency_us_p99[1] <= r.read_latency_us_p99_9[1]
    assert r.read_latency_us_p99[32] > r.read_latency_us_p99[1]
    assert r.write_latency_us_p99.isna().all()
    e = run_procedure("endurance", str(small_toml), SHORT["endurance"])[0]
    assert _units_declared(e)["projected_tbw"] == "TB"
    e = e.summary
    assert e["write_amplification"] > 1 and e["wear_leveling_factor"] >= 1
    assert e["mean_pe_cycles_measured"] >= 3
    assert e["projected_tbw"] > 0
    # JEDEC's enterprise endurance workload by name (issue 25 item 10): hot LBAs (50% of IOs to
    # 5% of the span) wear the drive differently from the uniform rating workload.
    j = run_procedure("endurance", str(small_toml), dict(SHORT["endurance"], workload="jesd219"))[0].summary
    assert "JESD219" in j["workload"] and j["write_amplification"] > 1
    assert j["mean_pe_cycles_measured"] >= 3 and j["write_amplification"] != e["write_amplification"]
    with pytest.raises(SsdlabError, match="workload 'jedec': accepted: rating, jesd219"):
        resolve_params("endurance", {"workload": "jedec"})
    sb = run_procedure("storage-bench", str(small_toml), SHORT["storage-bench"])[0].tables["results"]
    assert len(sb) == 6 and (sb.data_rate_mb_per_s > 0).all()
    # The host's queue is bounded at each look-alike's own burst depth (issue 73 item 4).
    from ssdlab.synth import burst_size
    assert set(sb.host_qd_max) == {burst_size("heavy-2011")} == {19}


@pytest.mark.parametrize("proc, params, message", [
    ("consistency", {"spare": [100]}, "spare 100%"),
    ("consistency", {"qd": 0}, "qd 0"),
    ("consistency", {"fill": "half"}, "consistency: fill 'half': accepted: span, drive"),
    ("qd-scaling", {"qds": [1, 0]}, "queue depth 0"),
    ("nonsense", {}, "unknown procedure 'nonsense'"),
    ("trim", {"colour": 1}, "unknown parameter 'colour'"),
    ("storage-bench", {"traces": ["no-such-trace"]}, "trace 'no-such-trace'"),
    ("transfer-size", {"min_bs": "8m", "max_bs": "512"}, "min_bs 8m is larger than max_bs 512"),
])
def test_parameters_are_validated(proc, params, message):
    with pytest.raises(SsdlabError, match=message):
        resolve_params(proc, params)


@pytest.mark.parametrize("args, message", [
    (["review", "crucial-m500-120", "--out", "OUT", "--spare", "0,100"], "spare 100%"),
    (["review", "crucial-m500-120", "--out", "OUT", "--procedures", "consistency,bogus"], "unknown procedure 'bogus'"),
    (["review", "crucial-m500-120", "--out", "OUT", "--set", "qd-scaling.qds=1,0"], "queue depth 0"),
    (["review", "crucial-m500-120", "--out", "OUT", "--set", "consistency.qd=x"], "'x' is not a valid int"),
    (["procedure", "four-corners", "--drive", "crucial-m500-120", "--set", "qd_low=0"], "four-corners: qd_low 0"),
    (["procedure", "nope", "--drive", "crucial-m500-120"], "unknown procedure 'nope'"),
])
def test_cli_parameter_errors_are_one_line(tmp_path, args, message):
    p = ssdlab_cli(*[a.replace("OUT", str(tmp_path / "r")) for a in args])
    assert p.returncode == 2, p.stderr
    assert message in p.stderr and "Traceback" not in p.stderr, p.stderr


@pytest.fixture
def two_drives(tmp_path, small_toml):
    other = tmp_path / "other.toml"
    other.write_text(small_toml.read_text().replace('name = "test-small"', 'name = "test-other"')
                     .replace("program_page_us = 1600.0", "program_page_us = 900.0"))
    return [str(small_toml), str(other)]


def _chromium():
    exe = shutil.which("chromium")
    try:
        import playwright  # noqa: F401
    except ImportError:
        exe = None
    if exe is None and not os.environ.get("SSDLAB_REQUIRE_TOOLS"):
        pytest.skip("Playwright and Chromium not installed (.ci/run installs them)")
    assert exe, "CI must have chromium and playwright"
    return exe


def test_review_report_and_buttons_in_a_real_browser(tmp_path, two_drives):
    exe = _chromium()
    out = tmp_path / "report"
    r = review(two_drives, out, ["consistency", "four-corners", "trim"],
               {"consistency": {"duration_s": 40, "spare": [0, 25], "steady_window_s": 10},
                "four-corners": SHORT["four-corners"], "trim": {"random_s": 20, "positions": 5}},
               progress=False)
    assert r["tasks"] == 2 * 2 + 2 + 2
    html = (out / "report.html").read_text()
    assert "Plotly.newPlot" in html and "<script src=" not in html  # plotly.js embedded
    pngs = sorted(p.name for p in (out / "png").glob("*.png"))
    assert "consistency-full-test-small-spare-25.png" in pngs and "four-corners.png" in pngs
    assert "trim-test-other.png" in pngs
    # Per-drive charts also with the drives overlaid (issue 25 item 15): 4 consistency charts
    # (three scatters, the distribution of issue 71) x (2 drives + all) x 2 spares, the four
    # corners' bars, trim x (2 drives + all).
    assert "consistency-full-all-spare-25.png" in pngs and "trim-all.png" in pngs
    assert "consistency-distribution-all-spare-25.png" in pngs
    assert len(pngs) == 4 * 3 * 2 + 1 + 3
    full = pd.read_parquet(out / "data" / "consistency-full.parquet")
    assert set(full.drive) == {"test-small", "test-other"} and set(full.variant) == {"spare 0%", "spare 25%"}
    summary = pd.read_csv(out / "summary.csv", index_col=0)
    assert list(summary.columns) == ["unit", "test-small", "test-other"] and summary.index.name == "metric"
    # A unit on every row (issue 25 item 14): the four corners' sequential rows are MB/s, the
    # random ones IOPS, and say so.
    assert summary.unit.notna().all() and (summary.unit != "").all(), summary[summary.unit.isna()]
    assert summary.loc["four-corners: 128K sequential write QD1 (MB/s)", "unit"] == "MB/s"
    summary = summary.drop(columns="unit")
    # Figures carry the digits that matter, not a float's 16.
    assert all(len(f"{v}".replace("-", "").replace(".", "").lstrip("0")) <= 8 for v in summary.stack())
    rows = json.loads((out / "summary.json").read_text())
    assert {r["spare_pct"] for r in rows if r["procedure"] == "consistency"} == {0.0, 25.0}
    assert all(r["run"]["ssdlab_version"] == ssdlab.__version__ and "seed" in r["run"] for r in rows)
    # The conditions each figure was measured under, in summary.json and on every chart.
    assert all(r["conditions"] and "precondition:" in r["conditions"] for r in rows)
    assert any("quick" in r["conditions"] for r in rows) == bool(rows[0]["run"].get("quick"))
    assert "Conditions:" in html and html.count("precondition: ") >= len({r["procedure"] for r in rows})

    from playwright.sync_api import sync_playwright
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=exe, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1200, "height": 900})
        fetched = []
        page.route("http*://**", lambda route: (fetched.append(route.request.url), route.abort()))  # offline
        page.goto((out / "report.html").as_uri())
        page.wait_for_function("document.body.dataset.ready === '1'")

        def shown(chart):
            return page.evaluate("(id) => document.getElementById(id).data.filter(t => t.visible !== false).map(t => t.name)", chart)

        assert shown("consistency-full") == ["test-small (spare 0%)"]
        # As the reviews draw it: per-second dots, decades labelled 1K/10K/100K on the log axis.
        modes = page.evaluate("() => document.getElementById('consistency-full').data.map(t => t.mode)")
        assert set(modes) == {"markers"}
        ticks = page.evaluate("() => [...document.querySelectorAll('#consistency-full .ytick text')].map(t => t.textContent)")
        assert ticks and set(ticks) <= {"1", "10", "100", "1K", "10K", "100K", "1M", "10M"}, ticks
        assert any(t.endswith("K") for t in ticks), ticks  # 40K reads as 10K..100K, not "4"
        page.click("button[data-spare='spare 25%']")
        assert shown("consistency-full") == ["test-small (spare 25%)"]
        page.click("button[data-drive='test-other']")
        assert shown("consistency-full") == ["test-other (spare 25%)"]
        assert all(n.startswith("test-other:") for n in shown("trim"))
        assert shown("four-corners") == ["test-small", "test-other"]  # bars compare all drives
        page.click("button[data-drive='all']")
        assert shown("consistency-full") == ["test-small (spare 25%)", "test-other (spare 25%)"]
        assert page.locator(".controls button.active").all_inner_texts() == ["all", "spare 25%"]
        # The plotted data really changed: the y values differ between the two drives.
        ys = page.evaluate("() => document.getElementById('consistency-full').data.map(t => t.y.slice(-5).join())")
        assert len(set(ys)) == 4
        page.screenshot(path=str(tmp_path / "report.png"), full_page=False)
        browser.close()
    assert fetched == []
    assert (tmp_path / "report.png").stat().st_size > 10_000


def _need_fio():
    if shutil.which("fio") is None and not os.environ.get("SSDLAB_REQUIRE_TOOLS"):
        pytest.skip("fio not installed")


def test_fio_backed_procedure_on_a_file(tmp_path):
    _need_fio()
    target = tmp_path / "target.img"
    p = ssdlab_cli("procedure", "four-corners", "--target", str(target), "--target-size", "64m", "--no-direct",
                   "--set", "span=16m", "--set", "random_s=1", "--set", "seq_s=1", "--out", str(tmp_path / "o"), "--quiet")
    assert p.returncode == 0, p.stderr
    t = pd.read_csv(tmp_path / "o" / "four-corners-results.csv")
    assert len(t) == 5 and (t.mb_per_s > 0).all() and (t.iops > 0).all()
    assert not target.exists()  # created for the run, removed after
    # Consistency through fio's per-second IOPS log.
    p = ssdlab_cli("procedure", "consistency", "--target", str(target), "--target-size", "32m", "--no-direct",
                   "--set", "duration_s=3", "--set", "steady_window_s=2", "--out", str(tmp_path / "c"), "--quiet")
    assert p.returncode == 0, p.stderr
    s = pd.read_csv(tmp_path / "c" / "consistency-spare0pct-iops.csv")
    assert len(s) >= 2 and (s.iops > 0).all()
    # QD scaling through fio gives the figures the model's run gives (each workload at QD1 and
    # QD32), marked as measured through fio: what `ssdlab fit` takes from it.
    p = ssdlab_cli("procedure", "qd-scaling", "--target", str(target), "--target-size", "32m", "--no-direct",
                   "--set", "precondition_s=1", "--set", "topup_s=1", "--set", "step_s=1", "--set", "qds=1,32",
                   "--out", str(tmp_path / "q"), "--quiet")
    assert p.returncode == 0, p.stderr
    from ssdlab.fit_input import read_measurements
    from ssdlab.review.procedures import QD_WORKLOADS
    run = json.loads((tmp_path / "q" / "qd-scaling-summary.json").read_text())[0]
    assert run["measured"] == "fio"
    assert set(run["summary"]) == {f"{w} QD{q} (IOPS)" for w, _, _ in QD_WORKLOADS for q in (1, 32)}
    (g,) = read_measurements([str(tmp_path / "q" / "qd-scaling-summary.json")]).groups
    assert g.measured == "fio" and len(g.figures) == 2 * len(QD_WORKLOADS) and min(g.figures.values()) > 0


def test_fio_target_next_to_a_model_in_one_report(tmp_path, small_toml):
    _need_fio()
    out = tmp_path / "r"
    p = ssdlab_cli("review", str(small_toml), "--out", str(out), "--procedures", "sequential-qd",
                   "--set", "sequential-qd.duration_s=1", "--target", str(tmp_path / "t.img"), "--target-size", "32m",
                   "--no-direct", "--no-png", "--quiet")
    assert p.returncode == 0, p.stderr
    rows = json.loads((out / "summary.json").read_text())
    assert {(r["drive"], r["source"]) for r in rows} == {("test-small", "model"), (f"target {tmp_path / 't.img'}", "fio")}
    # The page says which figures were simulated and which measured.
    page = (out / "report.html").read_text()
    assert f"Drives simulated with ssdlab {ssdlab.__version__}, targets measured through fio on {tmp_path / 't.img'}" in page
    # TRIM is not run through fio: said, not drawn as an empty chart.
    p = ssdlab_cli("review", str(small_toml), "--out", str(tmp_path / "t"), "--procedures", "trim",
                   "--set", "trim.random_s=5", "--set", "trim.positions=4", "--target", str(tmp_path / "t.img"),
                   "--target-size", "32m", "--no-direct", "--no-png", "--quiet")
    assert p.returncode == 0, p.stderr
    assert f"trim not run on target {tmp_path / 't.img'}" in p.stdout
    page = (tmp_path / "t" / "report.html").read_text()
    assert "trim was not run on target" in page


def test_destructive_targets_need_the_flag(tmp_path):
    _need_fio()
    f = tmp_path / "data.bin"
    f.write_bytes(b"keep me")
    p = ssdlab_cli("procedure", "sequential-qd", "--target", str(f), "--quiet")
    assert p.returncode == 2 and "--yes-destroy-data" in p.stderr, p.stderr
    assert f.read_bytes() == b"keep me"
    p = ssdlab_cli("procedure", "endurance", "--target", str(tmp_path / "new.bin"), "--quiet")
    assert p.returncode == 2 and "does not run on a real device" in p.stderr, p.stderr


def test_a_short_consistency_run_warns_and_keeps_the_peak_out_of_its_steady_state():
    from ssdlab.review.procedures import consistency_summary
    t = np.arange(1, 101, dtype=float)
    iops = np.where(t <= 20, 40_000.0, 2_000.0)  # fresh peak, then the cliff
    s = consistency_summary(pd.DataFrame({"time_s": t, "iops": iops}), 600, 3.0)
    assert s["steady_window_s"] == 30 and "the window is at most the last 30%" in s["warning"]
    assert s["steady_p99_iops"] == 2_000.0  # not the fresh peak
    full = consistency_summary(pd.DataFrame({"time_s": np.arange(1, 2001, dtype=float),
                                             "iops": np.full(2000, 2_000.0)}), 600, 3.0)
    assert full["steady_window_s"] == 600 and "warning" not in full


def test_the_distribution_figures_of_a_scatter():
    """Issue 71: the spread of the per-second values, as the reviews read a scatter."""
    from ssdlab.review.procedures import distribution
    # 80 seconds at 4,000 and 20 bursts at 80,000; latency 8 ms and 0.4 ms.
    iops = np.r_[np.full(80, 4_000.0), np.full(20, 80_000.0)]
    lat = 32 / iops * 1e6
    d = distribution(iops, lat)
    assert d["steady_median_iops"] == 4_000 and d["steady_p1_iops"] == 4_000 and d["steady_p99_iops"] == 80_000
    assert d["steady_above_twice_median_pct"] == 20 and d["steady_below_half_median_pct"] == 0
    assert d["steady_latency_band_pct"] == 80
    assert d["steady_cv"] == pytest.approx(iops.std() / iops.mean())
    flat = distribution(np.full(50, 3_000.0), prefix="")
    assert flat["cv"] == 0 and flat["above_twice_median_pct"] == 0 and "latency_band_pct" not in flat
    # Stalls: seconds below half the median.
    stalls = distribution(np.r_[np.full(90, 2_000.0), np.zeros(10)], prefix="")
    assert stalls["below_half_median_pct"] == 10 and stalls["p5_iops"] == 0
    assert distribution(np.zeros(0)) == {}


def test_consistency_summary_carries_the_distribution(small_toml):
    (a,) = run_procedure("consistency", str(small_toml), {**SHORT["consistency"], "spare": [0]})
    assert _units_declared(a)["steady_stddev_iops"] == "IOPS"
    s = a.summary
    for k in ("steady_median_iops", "steady_p1_iops", "steady_p5_iops", "steady_p99_iops", "steady_cv",
              "steady_below_half_median_pct", "steady_above_twice_median_pct", "steady_latency_band_pct"):
        assert k in s, k
    assert s["steady_p1_iops"] <= s["steady_p5_iops"] <= s["steady_median_iops"] <= s["steady_p99_iops"]
    assert 0 <= s["steady_latency_band_pct"] <= 100


def test_consistency_from_random_write_steady_state(small_toml):
    """precondition=steady-state: the untimed random writes leave nothing of the fresh burst."""
    fresh, = run_procedure("consistency", str(small_toml), {**SHORT["consistency"], "spare": [0]})
    steady, = run_procedure("consistency", str(small_toml), {**SHORT["consistency"], "spare": [0],
                                                               "precondition": "steady-state"})
    assert steady.summary["peak_iops"] < 0.5 * fresh.summary["peak_iops"], (steady.summary, fresh.summary)
    with pytest.raises(SsdlabError, match="precondition"):
        run_procedure("consistency", str(small_toml), {"precondition": "purge"})


def test_the_linear_zoom_keeps_methodologys_40k_unless_a_run_goes_above_it():
    """methodology.md's zoom is linear to 40K IOPS; an enterprise drive's steady state above it
    (the M500DC 480GB's halo at 37-41K, the P420m at 80K+) is not cut off: the top goes to the
    next 10K above the highest second."""
    import pandas as pd

    from ssdlab.review.report import linear_zoom_top
    assert linear_zoom_top(pd.Series([2_600.0, 39_000.0])) == 40_000
    assert linear_zoom_top(pd.Series([37_500.0, 40_756.0])) == 50_000
    assert linear_zoom_top(pd.Series([82_447.0, 83_428.0])) == 90_000
    assert linear_zoom_top(pd.Series([], dtype=float)) == 40_000
