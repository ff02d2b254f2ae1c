"""Rate-limited and open-loop jobs (issue 103 item 2): fio's rate, rate_iops, rate_process,
io_submit_mode, thinktime, flow and rate_min, through fio's own examples as a user runs them."""

import json
import subprocess
import sys

import pytest

from ssdlab import Drive, Job
from ssdlab.job import parse_fio

# fio's examples, as fio ships them (examples/*.fio in fio 3.38).
FIXED_RATE = """\
[fixed-rate-submit]
size=128m
rw=read
ioengine=libaio
iodepth=32
direct=1
# by setting the submit mode to offload, we can guarantee a fixed rate of
# submission regardless of what the device completion rate is.
io_submit_mode=offload
rate_iops=1000
"""
POISSON_RATE = """\
[poisson-rate-submit]
size=128m
rw=randread
ioengine=libaio
iodepth=32
direct=1
# by setting the submit mode to offload, we can guarantee a fixed rate of
# submission regardless of what the device completion rate is.
io_submit_mode=offload
rate_iops=50
# Real world random request flow follows Poisson process. To give better
# insight on latency distribution, we simulate request flow under Poisson
# process.
rate_process=poisson
"""
FLOW = """\
# Example usage of flows. The below will have roughly a 1:8 difference
# between job2 and job1.
[global]
norandommap
thread
time_based
runtime=30
direct=1
ioengine=libaio
iodepth=256
size=100g
bs=8k
filename=/tmp/testfile
flow_sleep=1000

[job2]
numjobs=1
rw=write
flow=1

[job1]
numjobs=1
rw=randread
flow=8
"""
# examples/1mbs_clients.fio: 32 readers, one every 4 s, each capped at rate=1250 (bytes per
# second since fio 3: the file's comment predates that) with ratemin=1024.
MBS_CLIENTS = "; Keep adding 1024kb/s reading clients at 4 seconds\n[global]\nsize=32m\nrw=read\n" \
    "directory=tmp\nrate=1250\nratemin=1024\n\n" + "".join(f"[file{i + 1}]\nstartdelay={4 * i}\n\n" for i in range(32))


def _run(tmp_path, text: str, *extra: str):
    path = tmp_path / "j.fio"
    path.write_text(text)
    p = subprocess.run([sys.executable, "-m", "ssdlab.cli", "run", "--drive", "crucial-m500-120", "--precondition",
                        "fast-fill", str(path), "--output-format", "json", *extra], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)["jobs"]


def test_fio_s_rate_examples_meet_their_rates(tmp_path):
    job = _run(tmp_path, FIXED_RATE)[0]
    assert job["read"]["total_ios"] == 32768
    assert abs(job["read"]["iops"] / 1000 - 1) < 0.02, job["read"]["iops"]
    job = _run(tmp_path, POISSON_RATE)[0]
    assert abs(job["read"]["iops"] / 50 - 1) < 0.02, job["read"]["iops"]
    # Open-loop arrivals now and then meet one in flight: the tail is above the lone read's.
    clat = job["read"]["clat_ns"]["percentile"]
    assert clat["99.990000"] > clat["50.000000"]


def test_fio_s_flow_example_keeps_its_ratio(tmp_path):
    job2, job1 = _run(tmp_path, FLOW)
    ratio = job1["read"]["total_ios"] / job2["write"]["total_ios"]
    assert abs(ratio / 8 - 1) < 0.02, ratio


def test_fio_s_clients_example_adds_a_reader_every_4_s(tmp_path):
    jobs = _run(tmp_path, MBS_CLIENTS)
    assert len(jobs) == 32
    for job in jobs:
        assert job["error"] == 0 and abs(job["read"]["bw_bytes"] / 1250 - 1) < 0.02, job["read"]["bw_bytes"]


def test_think_time_and_rate_min(tmp_path):
    d = Drive.open("crucial-m500-120")
    d.precondition("fast-fill", progress=False)
    # 500 us after every completed read at QD4: the depth collapses to one, each read then the
    # stall (fio: thinktime_blocks defaults to 1).
    r = d.run(Job(rw="randread", iodepth=4, runtime_s=2, time_based=True, thinktime_s=500e-6))
    lat = r.summary["read"]["latency_us_mean"]
    assert abs(r.summary["read"]["iops"] / (1e6 / (500 + lat)) - 1) < 0.01
    # A minimum the drive cannot reach fails the job after fio's 2 s settle and one cycle.
    job = parse_fio("[a]\nrw=randread\nrate_min=1g\nruntime=10\ntime_based\n")[0]
    r = d.run(job)
    assert r.summary["error"].startswith("a: rate_min=1073741824B/s not met (read), got ")
    assert r.summary["elapsed_s"] == pytest.approx(3.0, abs=0.01)
    path = tmp_path / "m.fio"
    path.write_text("[a]\nrw=randread\nrate_min=1g\nruntime=10\ntime_based\n")
    p = subprocess.run([sys.executable, "-m", "ssdlab.cli", "run", "--drive", "crucial-m500-120", str(path)],
                       capture_output=True, text=True)
    assert p.returncode == 1 and "error: a: rate_min=1073741824B/s not met" in p.stdout, p.stdout + p.stderr


@pytest.mark.parametrize("text,expected", [
    ("[a]\nrate_process=zipf\n", "rate_process: 'zipf'; accepted: linear, poisson"),
    ("[a]\nrate=1m,2m,3m,4m\n", "rate: '1m,2m,3m,4m' has 4 values; accepted: READ[,WRITE[,TRIM]]"),
    ("[a]\nio_submit_mode=later\n", "io_submit_mode: 'later'; accepted: inline, offload"),
    ("[a]\nthinktime=5x\n", "thinktime=5x: '5x' is not a time"),
    ("[a]\nthinkcycles=100\n", "option 'thinkcycles' is not supported: a stall in CPU cycles"),
    ("[a]\nrate_process=poisson\nrate=100\n", "rate_process: poisson at 100 bytes/s is below one command"),
])
def test_bad_pacing_names_its_option(tmp_path, text, expected):
    from ssdlab.errors import SsdlabError
    path = tmp_path / "b.fio"
    path.write_text(text)
    with pytest.raises(SsdlabError, match=expected.replace("[", r"\[").replace("]", r"\]")):
        d = Drive.open("crucial-m500-120")
        for job in Job.from_fio(path):
            d.run(job)
