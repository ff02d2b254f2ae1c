"""Seeded NAND faults (`--faults`): read retry, uncorrectable reads rebuilt by RAIN or failed,
program and erase failures retiring blocks, through the API, the CLI and a real NBD client."""
import json
import subprocess
import sys

import pytest

from ssdlab import Drive, Job
from ssdlab.errors import SsdlabError

from test_serve import TINY_TOML, Served, _need, run, tiny_toml  # noqa: F401 (fixture)

READS = Job(rw="randread", bs="4k", iodepth=4, number_ios=20_000)


def _summary(drive: str, faults: str | None, job: Job = READS, seed: int = 0) -> dict:
    d = Drive.open(drive, seed=seed, faults=faults)
    d.precondition("fast-fill")
    return d.run(job).summary


def test_same_seed_same_faults_and_a_clean_drive_has_none():
    a = _summary("crucial-m500-120", "read_retry=0.05,uncorrectable=1e-3,seed=3")
    b = _summary("crucial-m500-120", "read_retry=0.05,uncorrectable=1e-3,seed=3")
    assert json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)
    c = _summary("crucial-m500-120", "read_retry=0.05,uncorrectable=1e-3,seed=4")
    assert c["faults"] != a["faults"]
    assert a["faults"]["read_retries"] > 0
    clean = _summary("crucial-m500-120", None)
    assert not any(clean["faults"].values())
    # Retries and rebuilds cost NAND time: reads are slower on the faulty drive.
    assert a["read"]["latency_us_mean"] > clean["read"]["latency_us_mean"]


def test_rain_rebuilds_what_a_drive_without_rain_loses():
    # The M500 has RAIN (15:1): every uncorrectable page is rebuilt from its stripe.
    m500 = _summary("crucial-m500-120", "uncorrectable=2e-3,seed=1")["faults"]
    assert m500["uncorrectable_pages"] > 10
    assert m500["rain_rebuilds"] == m500["uncorrectable_pages"]
    assert m500["rain_rebuild_reads"] == 15 * m500["rain_rebuilds"]
    assert m500["failed_reads"] == 0
    # The m4 has none: those reads fail, for their units only.
    m4 = _summary("crucial-m4-128", "uncorrectable=2e-3,seed=1")["faults"]
    assert m4["uncorrectable_pages"] > 10 and m4["rain_rebuilds"] == 0
    assert m4["failed_reads"] >= m4["uncorrectable_pages"]
    assert m4["unreadable_units"] >= m4["uncorrectable_pages"]


def test_program_and_erase_failures_retire_blocks_and_the_drive_goes_on():
    # A small drive with room to retire blocks, so that garbage collection erases hundreds.
    text = TINY_TOML.replace("user_capacity_bytes = 100000000", "user_capacity_bytes = 70000000") + '\n[faults]\nprogram_fail = 2e-3\nerase_fail = 0.02\nseed = 2\n'
    d = Drive(text, "tiny-faulty")
    d.precondition("fast-fill")
    s = d.run(Job(rw="randwrite", bs="4k", iodepth=32, number_ios=200_000)).summary
    f = s["faults"]
    assert f["program_failures"] > 0 and f["erase_failures"] > 0, (f, s["blocks_erased"])
    assert f["grown_bad_blocks"] > 0
    assert s["write"]["ios"] > 10_000
    d.verify()  # every FTL invariant holds
    assert d.fault_counters()["grown_bad_blocks"] == f["grown_bad_blocks"]


def test_a_failed_die_is_rebuilt_from_the_stripe_across_dies_or_its_reads_fail():
    # The M500DC's RAIN (11:1) is striped across dies: reads of the failed die are rebuilt.
    dc = _summary("micron-m500dc-120", "die_fail=3@0.5")
    f = dc["faults"]
    assert f["failed_dies"] == 1 and f["die_rebuilds"] > 100 and f["failed_reads"] == 0, f
    assert f["rain_rebuild_reads"] == 11 * f["die_rebuilds"]
    # The m4 has no RAIN: those reads fail.
    m4 = _summary("crucial-m4-128", "die_fail=3@0.5")["faults"]
    assert m4["failed_dies"] == 1 and m4["die_rebuilds"] == 0 and m4["failed_reads"] > 100, m4
    with pytest.raises(SsdlabError, match="faults.die"):
        Drive.open("crucial-m4-128", faults="die_fail=99@1")


@pytest.mark.parametrize("spec, says", [
    ("uncorrectable=2", "not a probability"),
    ("bogus=1", "unknown key 'bogus'"),
    ("read_retry", "expected key=value"),
    ("program_fail=0.5", "at most 0.1"),
])
def test_a_bad_spec_is_one_clear_error(spec, says):
    with pytest.raises(SsdlabError, match=says):
        Drive.open("crucial-m4-128", faults=spec)
    p = subprocess.run([sys.executable, "-m", "ssdlab.cli", "run", "--drive", "crucial-m4-128", "--rw", "randread",
                        "--runtime", "1", "--quiet", "--faults", spec], capture_output=True, text=True)
    assert p.returncode == 2 and says in p.stderr and "Traceback" not in p.stderr, p.stderr


def test_run_prints_what_the_faults_did():
    p = subprocess.run([sys.executable, "-m", "ssdlab.cli", "run", "--drive", "crucial-m4-128", "--precondition",
                        "fast-fill", "--rw", "randread", "--number-ios", "20000", "--intervals", "none", "--quiet",
                        "--faults", "uncorrectable=1e-3,seed=5"], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert "uncorrectable pages" in p.stdout and "reads failed" in p.stdout


def test_served_drive_answers_eio_for_an_uncorrectable_read_only(tmp_path, tiny_toml):  # noqa: F811
    """qemu-io over NBD: on a drive without RAIN, reads of pages the drive cannot correct fail
    with EIO; writes still work and rewritten data reads back."""
    _need("qemu-io")
    s = Served(tmp_path, str(tiny_toml), "--pace", "none", "--faults", "uncorrectable=0.02,seed=1")
    q = run(["qemu-io", "-f", "raw", s.uri, "-c", "write -P 0x11 0 8M"])
    assert q.returncode == 0, q.stdout + q.stderr
    # Many 4 KiB reads: some hit an uncorrectable page (the written data is on the NAND: the
    # write buffer is far smaller than 8 MiB).
    failed = 0
    for off in range(0, 4 << 20, 64 << 10):
        r = run(["qemu-io", "-f", "raw", s.uri, "-c", f"read -P 0x11 {off} 64k"])
        if "Input/output error" in r.stdout + r.stderr:
            failed += 1
        else:
            assert r.returncode == 0 and "Pattern verification failed" not in r.stdout, r.stdout
    stats = s.stop()
    assert failed > 0
    assert stats["uncorrectable_reads"] == failed
    assert stats["faults"]["failed_reads"] == failed
