"""The power model through the Python API and the CLI: the power procedure's figures fall with
deeper link states and rise with write work, the series carries power for a drive with a power
model and not for one without, and a bad link policy is refused with the accepted names."""

import json
import subprocess
import sys

import pytest

import ssdlab
from ssdlab import Drive, Job


def test_the_power_procedure_orders_idle_states_and_writes_as_physics_says(tmp_path):
    p = subprocess.run([sys.executable, "-m", "ssdlab.cli", "procedure", "power", "--drive", "crucial-m500-120",
                        "--set", "idle_s=2", "--set", "write_s=2", "--out", str(tmp_path), "--quiet"],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    s = json.loads((tmp_path / "power-summary.json").read_text())
    row = s[0]["summary"] if isinstance(s, list) else s["summary"]
    idle_none, idle_lpm, idle_devsleep = (row["idle, no link power management (W)"], row["idle, HIPM+DIPM (W)"],
                                          row["idle, DevSleep (W)"])
    assert idle_none > idle_lpm > idle_devsleep > 0
    assert row["128K sequential write QD32 (W)"] > idle_none
    assert row["4K random write QD32 (W)"] > idle_none


def test_the_power_procedure_measures_only_the_idle_states_a_drive_has():
    """Issue 73 item 3: a PCIe drive showed SATA's HIPM+DIPM and DevSleep rows (8 W each); a
    drive without DevSleep showed DevSleep equal to Slumber without a word."""
    from ssdlab.review.procedures import idle_states
    pcie = Drive.preset("micron-p320h-175").config
    assert [n for n, _ in idle_states(pcie)] == ["idle (PCIe: link power states not modelled)"]
    m4 = [n for n, _ in idle_states(Drive.preset("crucial-m4-128").config)]
    assert m4[1] == "idle, HIPM+DIPM" and "not supported: stays in Slumber" in m4[2]
    m500 = [n for n, _ in idle_states(Drive.preset("crucial-m500-120").config)]
    assert m500[2] == "idle, DevSleep"


def test_a_run_on_a_drive_with_a_power_model_has_power_in_its_series_and_summary():
    d = Drive.preset("crucial-m500-120")
    r = d.run(Job(rw="randwrite", bs="4k", iodepth=32, runtime_s=2, time_based=True, link_power="hipm+dipm"))
    assert (r.series.power_w > 0).all()
    assert set(r.series.link_state) <= {"active", "partial", "slumber", "devsleep"}
    pw = r.summary["power"]
    assert pw["peak_w"] >= pw["average_w"] > 0 and pw["energy_j"] > 0
    assert pw["joules_per_gb"] > 0 and pw["iops_per_w"] > 0


def test_a_drive_without_a_power_model_reports_none_rather_than_zero_watts():
    import tomllib

    from ssdlab.drive import config_text, dump_toml
    cfg = tomllib.loads(config_text("micron-p320h-175", None)[0])
    del cfg["power"]
    d = Drive(dump_toml(cfg))
    r = d.run(Job(rw="randread", bs="4k", iodepth=8, number_ios=2000))
    assert "power_w" not in r.series.columns
    assert "power" not in r.summary
    assert d.energy_j() is None


def test_a_bad_link_policy_names_the_accepted_ones():
    d = Drive.preset("crucial-m500-120")
    with pytest.raises((ssdlab.SsdlabError, ValueError)) as e:
        d.run(Job(rw="randread", number_ios=10, link_power="sometimes"))
    assert "link_power" in str(e.value) and "hipm+dipm" in str(e.value)


def test_concurrent_jobs_share_the_drives_power_and_staggered_ones_did_not_run_together():
    """Issue 73 item 2: every concurrent job reported the whole drive's energy as its own (J/GB
    per its own bytes), and jobs staggered by startdelay so as never to overlap were labelled
    "at once with" each other."""
    d = Drive.preset("crucial-m500-120")
    jobs = [Job(name="a", rw="randread", runtime_s=0.2, time_based=True),
            Job(name="b", rw="randread", runtime_s=0.2, time_based=True, startdelay_s=0.5),
            Job(name="c", rw="randread", runtime_s=0.2, time_based=True, startdelay_s=0.1)]
    a, b, c = d.run_together(jobs)
    assert a.summary["run"]["ran_with"] == ["c"] and c.summary["run"]["ran_with"] == ["a"]
    assert "ran_with" not in b.summary["run"]
    assert b.summary["run"]["span_s"] == pytest.approx([0.5, 0.7], abs=1e-3)
    assert a.summary["power"]["shared_with"] == ["c"] and a.summary["power"]["joules_per_gb"] is None
    assert b.summary["power"]["joules_per_gb"] > 0 and "shared_with" not in b.summary["power"]


def test_the_run_prints_one_group_line_for_jobs_run_together(tmp_path):
    job = tmp_path / "two.fio"
    job.write_text("[global]\nrw=randread\nbs=4k\nruntime=0.2\ntime_based\n[a]\n[b]\n")
    p = subprocess.run([sys.executable, "-m", "ssdlab.cli", "run", "--drive", "crucial-m500-120", str(job),
                        "--precondition", "fast-fill", "--quiet", "--intervals", "none"], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    group = [line for line in p.stdout.splitlines() if line.startswith("group: 2 jobs")]
    assert len(group) == 1 and "READ: " in group[0], p.stdout
    assert p.stdout.count("power (the drive's, shared with") == 2
