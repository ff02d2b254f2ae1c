"""Sweeps (issue 14): a spec's errors, a local sweep with resume, its Parquet, DuckDB catalog
and report, a failed point listed, an interrupted sweep resumed, and the same sweep on a Ray
cluster started here on loopback, identical to the local one, surviving a killed worker."""

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ssdlab import SsdlabError
from ssdlab import sweep
from ssdlab.sweeps.catalog import Catalog
from ssdlab.sweeps.spec import expand

REQUIRE = os.environ.get("SSDLAB_REQUIRE_TOOLS") == "1"

SPEC = """
drives = ["crucial-m500-120", "crucial-m4-128"]
procedure = "consistency"
[params]
duration_s = {duration}
[grid]
"params.spare" = [0, 10, 25]
"""


def run_cli(*args, **kw):
    return subprocess.run([sys.executable, "-m", "ssdlab.cli", *map(str, args)], capture_output=True, text=True, **kw)


def spec_file(tmp_path, duration=6):
    p = tmp_path / "spare.toml"
    p.write_text(SPEC.format(duration=duration))
    return p


@pytest.mark.parametrize("spec, says", [
    ({"drives": ["crucial-m500-120"], "procedure": "consistency", "colour": 1}, "unknown key(s) colour"),
    ({"drives": ["crucial-m500-120"], "procedure": "consistency", "grid": {"nand.program_page_ms": [1]}},
     "no field 'program_page_ms' in [nand]; fields: part, channels"),
    ({"drives": ["crucial-m500-120"], "procedure": "consistency", "grid": {"flash.x": [1]}}, "no table 'flash'"),
    ({"drives": ["crucial-m500-120"], "procedure": "consistency", "grid": {"nand.dies": [0]}}, "nand.dies = 0"),
    ({"drives": ["crucial-m500-120"], "procedure": "consistency", "params": {"spin": 1}}, "unknown parameter 'spin'"),
    ({"drives": ["crucial-m500-120"], "procedure": "qd-dance"}, "procedure 'qd-dance' is not known"),
    ({"drives": ["crucial-m500-120"], "procedure": "consistency", "job": {"rw": "read"}}, "either procedure"),
    ({"drives": ["crucial-m500-120"], "procedure": "consistency", "zip": {"params.qd": [1, 2], "params.bs": ["4k"]}},
     "same number of values"),
    ({"drives": ["crucial-m500-120"], "job": {"rw": "read", "speed": 3}}, "accepted: precondition, name, rw"),
    ({"drives": ["no-such-drive"], "procedure": "consistency"}, "no-such-drive"),
    ({"drives": ["crucial-m500-120"], "procedure": "consistency", "grid": {"params.spare": 5}}, "non-empty list"),
])
def test_a_bad_spec_is_one_clear_error(spec, says):
    with pytest.raises(SsdlabError, match=None) as e:
        expand(spec)
    assert says in str(e.value), str(e.value)


def test_expansion_crosses_the_grid_zips_the_zip_and_keys_every_point():
    spec = {"drives": ["crucial-m500-120", "crucial-m4-128"], "procedure": "consistency", "replicates": 2,
            "grid": {"params.spare": [0, 20]},
            "zip": {"nand.read_page_us": [50.0, 100.0], "nand.program_page_us": [900.0, 1800.0]}}
    points = expand(spec)
    assert len(points) == 2 * 2 * 2 * 2
    assert {(p.axes["nand_read_page_us"], p.axes["nand_program_page_us"]) for p in points} == {(50.0, 900.0), (100.0, 1800.0)}
    assert "read_page_us = 50.0" in points[0].drive_toml and len({p.key for p in points}) == 16
    assert expand(spec)[5].key == points[5].key  # stable


def test_a_point_runs_from_memory_and_writes_no_file(monkeypatch):
    # A worker killed mid-point (out of memory, a killed Ray task) must leave nothing behind:
    # the point's drive is opened from its text, not from a file in a temporary directory.
    import tempfile

    from ssdlab.sweeps.run import run_point
    made = []
    monkeypatch.setattr(tempfile, "mkdtemp", lambda *a, **k: made.append(a or k) or pytest.fail("a temporary dir"))
    job = {"drives": ["crucial-m500-120"], "job": {"rw": "randwrite", "bs": "4k", "iodepth": 8, "runtime_s": 1,
                                                   "time_based": True, "precondition": "none"}}
    proc = {"drives": ["crucial-m500-120"], "procedure": "consistency", "params": {"duration_s": 2, "spare": 0}}
    for spec in (job, proc):
        res = run_point(expand(spec)[0].as_dict())
        assert "error" not in res, res.get("error")
        assert res["rows"] and len(res["tables"]) > 0
    assert made == []
    # A bad drive still names what was wrong, and the drive by its name (no temporary path).
    bad = expand(job)[0].as_dict()
    bad["drive_toml"] = bad["drive_toml"].replace("[nand]", "[nand]\ncolour = 1", 1)
    res = run_point(bad)
    assert res["error"].startswith("crucial-m500-120.toml: ") and "colour" in res["error"], res["error"]


def test_local_sweep_catalog_resume_and_report(tmp_path):
    out = tmp_path / "out"
    r = sweep(spec_file(tmp_path), out, workers=2)
    assert (r.ran, r.skipped, r.failed) == (6, 0, {})
    s = r.summary
    assert len(s) == 6 and set(s["spare_pct"]) == {0, 10, 25} and set(s["drive"]) == {"crucial-m500-120", "crucial-m4-128"}
    assert (s["steady_mean_iops"] > 1000).all() and str(s["spare_pct"].dtype) == "int64"
    assert len(r.series("consistency")) == 6 * 6
    again = sweep(spec_file(tmp_path), out, workers=2)
    assert (again.ran, again.skipped) == (0, 6)
    import duckdb
    con = duckdb.connect(str(out / "catalog.duckdb"), read_only=True)
    rows = con.execute("select procedure, drive, count(*), min(spare_pct), max(spare_pct) from summary "
                       "group by all order by drive").fetchall()
    assert rows == [("consistency", "crucial-m4-128", 3, 0, 25), ("consistency", "crucial-m500-120", 3, 0, 25)]
    assert con.execute("select count(*) from series where \"table\" = 'iops'").fetchone()[0] == 36
    con.close()
    if shutil.which("duckdb") or REQUIRE:
        p = subprocess.run(["duckdb", "-csv", str(out / "catalog.duckdb"), "select count(*) as n from summary"],
                           capture_output=True, text=True)
        assert p.returncode == 0 and p.stdout.split() == ["n", "6"], p.stderr
    moved = tmp_path / "moved"
    out.rename(moved)  # the report rebuilds the catalog's views for the new place
    p = run_cli("sweep", "report", moved)
    assert p.returncode == 0, p.stderr
    con = duckdb.connect(str(moved / "catalog.duckdb"), read_only=True)
    assert con.execute("select count(*) from summary").fetchone()[0] == 6
    con.close()
    _check_report(moved / "report.html", drives=2)


def _check_report(page: Path, drives: int) -> None:
    from ssdlab.charts import chromium_path
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        if REQUIRE:
            raise
        pytest.skip("playwright not installed")
    exe = chromium_path()
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=exe, args=["--no-sandbox"]) if exe else p.chromium.launch()
        tab = browser.new_page()
        tab.goto(page.resolve().as_uri())
        tab.wait_for_function("document.body.dataset.ready === '1'")
        charts = tab.evaluate("""() => Array.from(document.querySelectorAll('.chart')).map(d => ({
            id: d.id, traces: d.data.length, points: d.data.map(t => t.x.length),
            xtitle: d.layout.xaxis.title.text, svg: d.querySelectorAll('svg').length}))""")
        browser.close()
    by_id = {c["id"]: c for c in charts}
    steady = by_id["consistency-steady-mean-iops-vs-spare-pct"]
    assert steady["traces"] == drives and steady["points"] == [3] * drives and steady["xtitle"] == "spare_pct"
    assert by_id["consistency-iops-series"]["traces"] == 3 * drives
    assert all(c["svg"] > 0 for c in charts)


def test_a_failed_point_is_listed_and_the_rest_run(tmp_path):
    spec = tmp_path / "job.toml"
    spec.write_text('drives = ["crucial-m500-120"]\n[job]\nrw = "randwrite"\nbs = "4k"\niodepth = 8\n'
                    'runtime_s = 1\ntime_based = true\n[grid]\n"job.size" = ["1g", "999t"]\n')
    p = run_cli("sweep", spec, "--out", tmp_path / "out", "--workers", "2", "--quiet")
    assert p.returncode == 1, p.stderr
    assert "1 run" in p.stdout and "1 failed" in p.stdout and "job_size=999t" in p.stdout
    s = Catalog(tmp_path / "out").summary()
    assert len(s) == 1 and s["job_size"].iloc[0] == "1g" and s["write_iops"].iloc[0] > 0
    states = [q["state"] for q in json.loads((tmp_path / "out" / "sweep.json").read_text())["points"]]
    assert sorted(states) == ["done", "failed"]


def _finished(out: Path) -> int:
    return len(list((out / "summary").glob("*/*.parquet"))) if (out / "summary").exists() else 0


def test_an_interrupted_sweep_resumes_where_it_stopped(tmp_path):
    # Points of a few seconds each, so the interrupt lands while the sweep is under way.
    spec, out = spec_file(tmp_path, duration=900), tmp_path / "out"
    # Ctrl-C as a terminal sends it (a test run in the background inherits SIGINT ignored).
    proc = subprocess.Popen([sys.executable, "-m", "ssdlab.cli", "sweep", str(spec), "--out", str(out),
                             "--workers", "1", "--quiet"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    # Interrupted once the first point is done, however long that takes here (the guard only
    # stops a hang); the other five take as long again each.
    _wait_until(lambda: _finished(out) >= 1, proc, "a first point finished")
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=120)
    done = _finished(out)
    assert 1 <= done < 6
    p = run_cli("sweep", spec, "--out", out, "--workers", "2", "--quiet")
    assert p.returncode == 0, p.stderr
    assert f"{6 - done} run, {done} already done" in p.stdout


def _wait_until(event, proc: subprocess.Popen, what: str, guard_s: float = 600) -> None:
    """Poll for `event()` while `proc` runs: a test waits on what it needs, never for a time
    (`guard_s` only stops a hang)."""
    deadline = time.monotonic() + guard_s
    while not event():
        assert proc.poll() is None, f"the sweep ended before {what}: {proc.communicate()}"
        assert time.monotonic() < deadline, f"no {what} in {guard_s:.0f} s"
        time.sleep(0.02)


def _kill_one(pattern: str, proc: subprocess.Popen, parent: int | None = None) -> int | None:
    """kill -9 the first process matching `pattern` (a child of `parent`) while `proc` runs."""
    for _ in range(600):
        if proc.poll() is not None:
            return None
        args = ["pgrep", "-f", pattern] + (["-P", str(parent)] if parent else [])
        pids = subprocess.run(args, capture_output=True, text=True).stdout.split()
        if pids:
            os.kill(int(pids[0]), signal.SIGKILL)
            return int(pids[0])
        time.sleep(0.05)
    return None


def test_a_killed_local_worker_has_its_point_run_again(tmp_path):
    # Killed once a worker has started a point (its marker in the sweep's spool folder; 400 s
    # points run about a second each), so the kill falls mid-sweep on any machine (a fixed
    # 2 s wait fell after the end of a sweep of 20 s points).
    spec, out = spec_file(tmp_path, duration=400), tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-m", "ssdlab.cli", "sweep", str(spec), "--out", str(out),
                             "--workers", "2"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _wait_until(lambda: any(out.glob(".spool-*/*.started")), proc, "point started")
    killed = _kill_one("spawn_main", proc, parent=proc.pid)
    stdout, stderr = proc.communicate(timeout=600)
    assert killed and proc.returncode == 0, stderr
    assert "6 run" in stdout and "run again after their worker died" in stdout
    assert _finished(out) == 6


def test_a_local_worker_hands_its_result_over_in_one_short_message(tmp_path):
    # CPython's process pool sends a result of more than 16 KiB in two writes: a worker killed
    # between them left the sweep reading half a message for ever (CI, 2026-11-29, the test
    # above). The pool now carries the path of a file holding the result, in one write of
    # under PIPE_BUF bytes, which a pipe takes whole or not at all.
    import pickle
    import select
    from concurrent.futures.process import _ResultItem

    from ssdlab.pool import call_spooled, take
    from ssdlab.sweeps.run import run_point
    from ssdlab.sweeps.spec import load_spec

    point = expand(load_spec(spec_file(tmp_path, duration=400)))[0].as_dict()  # a long series
    direct = run_point(point)
    assert "error" not in direct, direct
    assert len(pickle.dumps(_ResultItem(2**40, result=direct))) > 16384
    path = str(tmp_path / "0-0.pickle")
    sent = call_spooled(run_point, (point,), path)
    assert len(pickle.dumps(_ResultItem(2**40, result=sent))) < select.PIPE_BUF
    res = take(sent)
    assert not os.path.exists(path) and not os.path.exists(path + ".part")
    assert res["rows"] == direct["rows"] and res["key"] == direct["key"]
    assert res["tables"].keys() == direct["tables"].keys()
    for name, table in direct["tables"].items():
        assert res["tables"][name].equals(table)


def test_ray_gives_the_local_results_and_survives_a_killed_worker(tmp_path, ray_cluster):
    spec = spec_file(tmp_path)
    local = sweep(spec, tmp_path / "local", workers=2)
    p = run_cli("sweep", spec, "--out", tmp_path / "ray", "--ray", ray_cluster, "--quiet", timeout=600)
    assert p.returncode == 0, p.stderr
    a = local.summary.sort_values("point_key").reset_index(drop=True)
    b = Catalog(tmp_path / "ray").summary().sort_values("point_key").reset_index(drop=True)
    assert a.equals(b)
    # A Ray worker killed mid-point: Ray runs the point again.
    long_spec = spec_file(tmp_path, duration=40)
    proc = subprocess.Popen([sys.executable, "-m", "ssdlab.cli", "sweep", str(long_spec), "--out", str(tmp_path / "k"),
                             "--ray", ray_cluster, "--quiet"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    killed = _kill_one("ray::run_point", proc)
    stdout, stderr = proc.communicate(timeout=600)
    assert killed and proc.returncode == 0, stderr
    assert "6 run" in stdout and _finished(tmp_path / "k") == 6
