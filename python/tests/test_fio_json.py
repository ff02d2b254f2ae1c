"""`ssdlab run --output-format json|json+`: results in fio's JSON layout, read as fio's own
tooling reads it (fio_jsonplus_clat2csv, shipped with fio, converts and validates json+)."""
import json
import os
import shutil
import subprocess
import sys

import pytest


def run(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "ssdlab.cli", "run", *args], capture_output=True, text=True,
                          timeout=600, cwd=cwd)


JOB = ["--drive", "crucial-m4-128", "--precondition", "fast-fill", "--rw", "randrw", "--bs", "4k", "--iodepth", "8",
       "--number-ios", "20000", "--seed", "3"]


def test_json_has_fios_layout_and_the_runs_figures(tmp_path):
    p = run(*JOB, "--output-format", "json", "--out", str(tmp_path / "o"))
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)  # only JSON on stdout
    assert doc["fio version"].startswith("ssdlab-") and len(doc["jobs"]) == 1
    job = doc["jobs"][0]
    assert job["jobname"] == "randrw" and job["error"] == 0
    assert job["job options"]["rw"] == "randrw" and job["job options"]["iodepth"] == "8"
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    for op in ("read", "write"):
        j, s = job[op], summary[op]
        assert j["total_ios"] == s["ios"] and j["io_bytes"] == s["bytes"]
        assert j["iops"] == pytest.approx(s["iops"])
        assert j["bw"] == round(s["bytes"] / s["ios"] * s["iops"] / 1024)  # KiB/s, as fio reports it
        pct = j["clat_ns"]["percentile"]
        assert list(pct)[:3] == ["1.000000", "5.000000", "10.000000"] and "99.990000" in pct
        assert pct["50.000000"] == pytest.approx(s["latency_us_p50"] * 1e3, rel=0.02)
        assert j["clat_ns"]["N"] == s["ios"] and j["slat_ns"]["N"] == 0
        assert j["iops_samples"] >= 1
    assert job["trim"]["total_ios"] == 0
    assert json.loads(run(*JOB, "--output-format", "json").stdout) == doc  # same seed, same file


def test_json_plus_is_read_and_validated_by_fios_own_tool(tmp_path):
    tool = shutil.which("fio_jsonplus_clat2csv")
    if tool is None:
        if os.environ.get("SSDLAB_REQUIRE_TOOLS"):
            pytest.fail("fio_jsonplus_clat2csv (from the fio package) is not installed")
        pytest.skip("fio's tools not installed")
    p = run(*JOB, "--output-format", "json+")
    assert p.returncode == 0, p.stderr
    src = tmp_path / "out.json"
    src.write_text(p.stdout)
    doc = json.loads(p.stdout)
    for op in ("read", "write"):
        bins = doc["jobs"][0][op]["clat_ns"]["bins"]
        assert sum(bins.values()) == doc["jobs"][0][op]["total_ios"]
    made = subprocess.run([tool, str(src), str(tmp_path / "lat.csv")], capture_output=True, text=True, timeout=300)
    assert made.returncode == 0 and "generated" in made.stdout, made.stderr
    checked = subprocess.run([tool, str(src), str(tmp_path / "lat.csv"), "--validate"], capture_output=True, text=True,
                             timeout=300)
    assert checked.returncode == 0 and "validated" in checked.stdout, checked.stderr
    rows = (tmp_path / "lat_job0.csv").read_text().splitlines()
    assert rows[0].startswith("nsec,") and len(rows) > 10


def test_replay_prints_fio_json_too(tmp_path):
    from pathlib import Path
    trace = Path(__file__).resolve().parents[3] / "shared" / "traces" / "mqsim-tpcc-small.trace"
    if not trace.exists():
        pytest.skip("shared traces not present")
    p = subprocess.run([sys.executable, "-m", "ssdlab.cli", "replay", "--drive", "crucial-m500-120", str(trace),
                        "--wrap", "--precondition", "fast-fill", "--output-format", "json", "--out", str(tmp_path / "o")],
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr
    job = json.loads(p.stdout)["jobs"][0]
    summary = json.loads((tmp_path / "o" / "replay-summary.json").read_text())
    assert job["read"]["total_ios"] == summary["read"]["ios"] > 0
    assert job["write"]["clat_ns"]["percentile"]["99.000000"] > 0
    assert job["ssdlab"]["read_busy_s"] == summary["read"]["busy_s"]
    assert "latency_ns_bins" not in summary["read"]  # histograms travel beside the summary
