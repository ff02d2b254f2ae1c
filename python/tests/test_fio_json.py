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
    # Same seed, same file, but for the time it was written (fixed by SOURCE_DATE_EPOCH).
    again = json.loads(run(*JOB, "--output-format", "json").stdout)
    stamp = ("timestamp", "timestamp_ms", "time")
    assert {k: v for k, v in again.items() if k not in stamp} == {k: v for k, v in doc.items() if k not in stamp}
    env = dict(os.environ, SOURCE_DATE_EPOCH="1700000000")
    fixed = [subprocess.run([sys.executable, "-m", "ssdlab.cli", "run", *JOB, "--output-format", "json"],
                            capture_output=True, text=True, timeout=600, env=env).stdout for _ in range(2)]
    assert fixed[0] == fixed[1] and json.loads(fixed[0])["timestamp"] == 1_700_000_000


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


def _keys(d: dict) -> set:
    return set(d) if isinstance(d, dict) else set()


@pytest.mark.skipif(shutil.which("fio") is None, reason="fio not installed (.ci/run installs it)")
def test_json_keys_are_real_fios_for_the_same_job(tmp_path):
    """Issue 25 item 12: the same job through real fio (null engine) and through ssdlab, with
    fio's command-line spellings; every key real fio writes is there, at every level."""
    common = ["--name=j", "--ioengine=null", "--rw=randread", "--bs=4k", "--size=64m", "--iodepth=4",
              "--number_ios=3000", "--time_based", "--runtime=4", "--ss=iops:50%", "--ss_dur=2", "--ss_ramp=1",
              "--group_reporting", "--output-format=json"]
    real = subprocess.run(["fio", *common], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert real.returncode == 0, real.stderr
    ours = run("--drive", "crucial-m4-128", "--precondition", "fast-fill", *common[:-1], "--output-format", "json")
    assert ours.returncode == 0, ours.stderr
    real, ours = json.loads(real.stdout), json.loads(ours.stdout)
    assert _keys(real) <= _keys(ours), _keys(real) - _keys(ours)
    rj, oj = real["jobs"][0], ours["jobs"][0]
    assert _keys(rj) <= _keys(oj), _keys(rj) - _keys(oj)
    for key in ("read", "write", "trim", "sync"):
        assert _keys(rj[key]) <= _keys(oj[key]), (key, _keys(rj[key]) - _keys(oj[key]))
    for key in ("iodepth_level", "iodepth_submit", "iodepth_complete", "latency_ns", "latency_us", "latency_ms"):
        assert _keys(rj[key]) == _keys(oj[key]), key
        assert sum(oj[key].values()) == pytest.approx(100.0, abs=0.5) or key.startswith("latency_")
    # Latency buckets: every completion in one of the three tables.
    assert sum(sum(oj[k].values()) for k in ("latency_ns", "latency_us", "latency_ms")) == pytest.approx(100.0, abs=0.1)
    assert oj["iodepth_level"]["4"] == 100.0
    assert _keys(rj["steadystate"]) <= _keys(oj["steadystate"])
    assert _keys(rj["steadystate"]["data"]) == _keys(oj["steadystate"]["data"])
    assert oj["steadystate"]["ss"] == rj["steadystate"]["ss"] == "iops:50.000000%"
    # Job options as given on the command line (fio's own spelling of the names aside).
    assert {"name", "ioengine", "rw", "bs", "size", "iodepth"} <= _keys(oj["job options"])
    assert oj["job options"]["ioengine"] == "null" and ours["timestamp"] > 1_600_000_000


def test_fio_log_options_write_fios_log_files(tmp_path):
    """Issue 25 item 11: write_bw_log/write_iops_log/write_lat_log with log_avg_msec write fio's
    windowed logs (time ms, value, direction, bs, prio), and percentile_list sets the JSON's
    percentiles."""
    (tmp_path / "j.fio").write_text("[global]\nrw=randrw\niodepth=4\nnumber_ios=20000\nlog_avg_msec=100\n"
                                    "write_bw_log=m\nwrite_iops_log=m\nwrite_lat_log=m\npercentile_list=50:99.5\n[a]\n")
    p = run("--drive", "crucial-m4-128", "--precondition", "fast-fill", "j.fio", "--output-format", "json", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    job = json.loads(p.stdout)["jobs"][0]
    assert list(job["read"]["clat_ns"]["percentile"]) == ["50.000000", "99.500000"]
    names = sorted(x.name for x in tmp_path.glob("m_*.log"))
    assert names == ["m_bw.1.log", "m_clat.1.log", "m_iops.1.log", "m_lat.1.log", "m_slat.1.log"]
    rows = [[int(v) for v in line.split(", ")] for line in (tmp_path / "m_iops.1.log").read_text().splitlines()]
    assert all(len(r) == 5 and r[2] in (0, 1) and r[3:] == [0, 0] for r in rows)
    times = sorted({r[0] for r in rows})
    assert times[:3] == [100, 200, 300]
    # Per window, IOPS x its length (0.1 s; the last one as long as the run went on) is the IOs
    # completed: they add up to the job's.
    length = {t: (t - p) / 1000 for p, t in zip([0] + times[:-1], times)}
    assert sum(r[1] * length[r[0]] for r in rows) == pytest.approx(job["read"]["total_ios"] + job["write"]["total_ios"],
                                                                  rel=0.01)
    bw = [[int(v) for v in line.split(", ")] for line in (tmp_path / "m_bw.1.log").read_text().splitlines()]
    assert all(b[1] == pytest.approx(i[1] * 4, abs=4) for b, i in zip(bw, rows))  # 4 KiB IOs: KiB/s = 4 x IOPS
    lat = [int(line.split(", ")[1]) for line in (tmp_path / "m_clat.1.log").read_text().splitlines()]
    assert min(lat) > 1000  # ns, as fio logs latency


def _log_rows(path):
    return [[int(v) for v in line.split(", ")] for line in path.read_text().splitlines()]


@pytest.mark.skipif(shutil.which("fio") is None, reason="fio not installed (.ci/run installs it)")
def test_fio_logs_without_log_avg_msec_hold_a_line_per_io_as_fio_writes_them(tmp_path):
    """Issue 73 item 9: without log_avg_msec (fio's default, and log_avg_msec=0) fio logs every
    IO, one file per clone; so does ssdlab: the same files and columns as the installed fio
    writes for the same job on a file (with log_offset=1 the offset too), one line per IO
    completed, each its direction, block size, offset inside the span, latency, and its bytes
    over that latency as bw."""
    job = ("[global]\nrw=randrw\nbs=4k\niodepth=4\nnumber_ios=300\nsize=8m\nnumjobs=2\ngroup_reporting\n"
           "write_lat_log=p\nwrite_bw_log=p\nwrite_iops_log=p\nlog_offset=1\n[a]\n")
    real, model = tmp_path / "fio", tmp_path / "ssdlab"
    real.mkdir()
    model.mkdir()
    (real / "j.fio").write_text(job.replace("[a]\n", "[a]\nfilename=data\nioengine=psync\n"))
    assert subprocess.run(["fio", "j.fio", "--output-format=json"], cwd=real, capture_output=True).returncode == 0
    (model / "j.fio").write_text(job.replace("log_offset=1\n", "log_offset=1\nlog_avg_msec=0\n"))
    p = run("--drive", "crucial-m4-128", "j.fio", "--output-format", "json", cwd=model)
    assert p.returncode == 0, p.stderr
    names = sorted(x.name for x in model.glob("p_*.log"))
    assert names == sorted(x.name for x in real.glob("p_*.log")) and len(names) == 10, names
    out = json.loads(p.stdout)["jobs"][0]
    ios = out["read"]["total_ios"] + out["write"]["total_ios"]
    assert ios == 600
    total = 0
    for clone in (1, 2):
        fio_row = _log_rows(real / f"p_clat.{clone}.log")[0]
        lat, bw, iops = (_log_rows(model / f"p_{k}.{clone}.log") for k in ("clat", "bw", "iops"))
        assert len(lat) == len(bw) == len(iops) == 300
        total += len(lat)
        for r, b, i in zip(lat, bw, iops):
            assert len(r) == len(fio_row) == 6  # time, value, direction, bs, offset, prio
            assert r[2] in (0, 1) and r[3] == 4096 and 0 <= r[4] < 8 << 20 and r[4] % 4096 == 0 and r[5] == 0
            assert i[1] == 1 and b[1] == pytest.approx(4096e9 / r[1] / 1024, abs=1)
        times = [r[0] for r in lat]
        assert times == sorted(times)
        mean_us = sum(r[1] for r in lat) / len(lat) / 1e3
        assert mean_us > 1
    assert total == ios
    # The lines' latencies are the summary's: their mean is the JSON's mean (read and write).
    every = [r for c in (1, 2) for r in _log_rows(model / f"p_lat.{c}.log")]
    reads = [r[1] for r in every if r[2] == 0]
    assert sum(reads) / len(reads) == pytest.approx(out["read"]["lat_ns"]["mean"], rel=1e-6)
