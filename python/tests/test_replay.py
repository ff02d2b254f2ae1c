import gzip
import subprocess
import sys
from pathlib import Path

import pytest

from ssdlab import Drive, SsdlabError

TRACE = Path(__file__).resolve().parents[3] / "shared" / "traces" / "mqsim-tpcc-small.trace"


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "ssdlab.cli", *args], capture_output=True, text=True)


@pytest.fixture
def small_trace(tmp_path):
    # DiskSim/MQSim: arrival_ns device sector sectors type(0 write, 1 read)
    lines = [f"{i * 100_000} 0 {(i * 977) % 400_000} {8 * (1 + i % 4)} {i % 2}" for i in range(3000)]
    p = tmp_path / "t.trace"
    p.write_text("\n".join(lines) + "\n")
    return p


def test_replay_metrics_and_modes(small_toml, small_trace):
    d = Drive.from_toml(small_toml)
    d.precondition("fast-fill")
    timed = d.replay(small_trace, "timed")
    s = timed.summary
    assert s["format"] == "disksim" and s["requests"] == 3000
    assert s["read"]["ios"] == 1500 and s["write"]["ios"] == 1500
    assert s["elapsed_s"] >= 0.2999  # open loop: the last request arrives at 0.2999 s
    assert 0 < s["all"]["busy_s"] <= s["elapsed_s"]
    assert s["all"]["data_rate_mb_per_s"] == pytest.approx(s["all"]["bytes"] / s["all"]["busy_s"] / 1e6)
    qd = d.replay(small_trace, "qd", qd=1)
    assert qd.summary["all"]["busy_s"] == pytest.approx(qd.summary["elapsed_s"], rel=0.01)
    afap = d.replay(small_trace, "afap")
    assert afap.summary["elapsed_s"] <= timed.summary["elapsed_s"] + 1e-9
    assert list(afap.table().index) == ["reads+writes", "read", "write"]


def test_gzip_and_device_filter(tmp_path, small_toml, small_trace):
    gz = tmp_path / "t.trace.gz"
    gz.write_bytes(gzip.compress(small_trace.read_bytes()))
    d = Drive.from_toml(small_toml)
    assert d.replay(gz).summary["requests"] == 3000
    with pytest.raises(SsdlabError, match="no requests for device 7 .*3,000 requests of devices 0"):
        d.replay(gz, device=7)


def test_bad_traces_are_clear_errors(tmp_path, small_toml, small_trace):
    d = Drive.from_toml(small_toml)
    bad = tmp_path / "bad.trace"
    bad.write_text("0 0 100 8 1\n10 0 -5 8 1\n")
    with pytest.raises(SsdlabError, match=r"bad.trace: line 2: start_sector is negative.*\n  10 0 -5 8 1"):
        d.replay(bad)
    assert d.replay(bad, skip_bad_lines=True).summary["bad_lines_skipped"] == 1
    empty = tmp_path / "empty.trace"
    empty.write_text("")
    with pytest.raises(SsdlabError, match="the trace is empty"):
        d.replay(empty)
    far = tmp_path / "far.trace"
    far.write_text("0 0 999999999999 8 1\n")
    with pytest.raises(SsdlabError, match="beyond the drive.*--wrap"):
        d.replay(far)
    assert d.replay(far, wrap=True).summary["requests_wrapped"] == 1
    trunc = tmp_path / "trunc.trace.gz"
    trunc.write_bytes(gzip.compress(small_trace.read_bytes())[:-40])
    with pytest.raises(SsdlabError, match="gzip stream is corrupt or truncated"):
        d.replay(trunc)
    with pytest.raises(SsdlabError, match="--mode 'fast' is not known"):
        d.replay(small_trace, "fast")
    with pytest.raises(SsdlabError, match="cannot open"):
        d.replay(tmp_path / "missing.trace")


@pytest.mark.skipif(not TRACE.exists(), reason="../shared/traces not beside the checkout")
def test_cli_replays_mqsim_trace_on_two_presets():
    for drive in ("crucial-m500-120", "crucial-m550-128"):
        p = run_cli("replay", "--drive", drive, str(TRACE), "--wrap", "--precondition", "fast-fill", "--quiet")
        assert p.returncode == 0, p.stderr
        assert "6,999 requests" in p.stdout and "data rate MB/s" in p.stdout and "service us mean" in p.stdout
    p = run_cli("replay", "--drive", "crucial-m500-120", str(TRACE), "--quiet")
    assert p.returncode == 2 and "use --wrap" in p.stderr and "Traceback" not in p.stderr


def test_qd_mode_keeps_recorded_depth(tmp_path, small_toml):
    # MSR: 400 reads, each recorded with 4 outstanding (arrivals 1 us apart, service 4 us).
    lines = ["Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime"]
    lines += [f"{128166372000000000 + i * 10},hm,0,Read,{(i * 7919 % 50000) * 4096},4096,40" for i in range(400)]
    msr = tmp_path / "t.csv"
    msr.write_text("\n".join(lines) + "\n")
    d = Drive.from_toml(small_toml)
    d.precondition("fast-fill")
    recorded = d.replay(msr, "qd")
    fixed4 = d.replay(msr, "qd", qd=4)
    fixed1 = d.replay(msr, "qd", qd=1)
    assert recorded.summary["all"]["iops"] == pytest.approx(fixed4.summary["all"]["iops"], rel=0.02)
    assert recorded.summary["all"]["iops"] > 2 * fixed1.summary["all"]["iops"]
    no_service_times = tmp_path / "t.trace"  # DiskSim/MQSim records no service times
    no_service_times.write_text("0 0 100 8 1\n1000 0 200 8 0\n")
    with pytest.raises(SsdlabError, match="needs recorded service times.*give --qd N"):
        d.replay(no_service_times, "qd")
