import json
import subprocess
import sys
import pytest

import pandas as pd

from ssdlab.cli import main


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "ssdlab.cli", *args], capture_output=True, text=True)


def test_drives_lists_every_preset():
    p = run_cli("drives")
    assert p.returncode == 0
    assert "crucial-m500-960" in p.stdout and "micron-p420m-1400" in p.stdout
    line = next(x for x in p.stdout.splitlines() if x.startswith("crucial-m500-120 "))
    assert " 8 " in line and "15:1" in line


def test_run_with_flags_prints_summary_and_writes_outputs(tmp_path, small_toml):
    out = tmp_path / "out"
    p = run_cli("run", "--drive", str(small_toml), "--precondition", "fast-fill", "--rw", "randwrite",
                "--bs", "4k", "--iodepth", "32", "--runtime", "20", "--out", str(out), "--quiet")
    assert p.returncode == 0, p.stderr
    assert "write amplification" in p.stdout
    assert "write iops per 1 s" in p.stdout
    df = pd.read_parquet(out / "timeseries.parquet")
    assert len(df) == 20 and (df.write_iops > 0).all()
    assert (out / "summary.json").exists() and (out / "erase_counts.parquet").exists()


def test_run_job_file(tmp_path, small_toml):
    job = tmp_path / "j.fio"
    job.write_text("[global]\nbs=4k\niodepth=8\n[r]\nrw=randread\nnumber_ios=2000\n")
    p = run_cli("run", "--drive", str(small_toml), str(job), "--precondition", "fast-fill", "--quiet")
    assert p.returncode == 0, p.stderr
    assert "job r:" in p.stdout and "read" in p.stdout


def test_bad_input_is_one_clear_line(tmp_path, small_toml):
    job = tmp_path / "bad.fio"
    job.write_text("[r]\nrw=randread\nthinkcycles=10\n")
    p = run_cli("run", "--drive", str(small_toml), str(job))
    assert p.returncode == 2
    assert p.stderr.strip().startswith(f"ssdlab: error: {job}:3: option 'thinkcycles' is not supported")
    assert "Traceback" not in p.stderr
    p = run_cli("run", "--drive", "crucial-m900-1", "--rw", "read")
    assert p.returncode == 2 and "unknown drive 'crucial-m900-1'" in p.stderr
    p = run_cli("run", "--drive", str(small_toml), "--rw", "randwrite", "--bs", "4q")
    assert p.returncode == 2 and "bs: '4q': unknown size suffix" in p.stderr and "Traceback" not in p.stderr


def test_main_returns_exit_code(small_toml, capsys):
    assert main(["run", "--drive", str(small_toml), "--rw", "read", "--iodepth", "0"]) == 2
    assert "iodepth: 0 is out of range" in capsys.readouterr().err


def test_unwritable_output_is_one_clear_line(tmp_path, small_toml):
    p = run_cli("synth-trace", "heavy-2011", "--out", str(tmp_path / "no" / "such" / "x.iolog"), "--fraction", "0.0001")
    assert p.returncode == 2 and "No such file or directory" in p.stderr and "Traceback" not in p.stderr
    blocker = tmp_path / "file"
    blocker.write_text("")
    p = run_cli("run", "--drive", str(small_toml), "--rw", "read", "--number-ios", "10", "--out", str(blocker / "out"), "--quiet")
    assert p.returncode == 2 and "Traceback" not in p.stderr and str(blocker) in p.stderr


def test_seeds_and_binary_drive_files_are_one_clear_line(tmp_path, small_toml):
    """Issue 25, item 17: a negative seed, a seed beyond 64 bits and a binary file given as
    --drive were tracebacks; each is one line naming what is accepted."""
    for seed in ("-1", str(2**70)):
        p = run_cli("run", "--drive", str(small_toml), "--rw", "randread", "--number-ios", "10", "--seed", seed)
        assert p.returncode == 2 and f"--seed {int(seed)}: must be between 0 and" in p.stderr, p.stderr
        assert "Traceback" not in p.stderr
    binary = tmp_path / "drive.toml"
    binary.write_bytes(bytes([0x1f, 0x8b, 0x08, 0x00]) + bytes(range(256)))
    p = run_cli("run", "--drive", str(binary), "--rw", "randread", "--number-ios", "10")
    assert p.returncode == 2 and "not a text file" in p.stderr and "accepted: a preset name" in p.stderr, p.stderr
    assert "Traceback" not in p.stderr
    from ssdlab.drive import Drive
    from ssdlab.errors import SsdlabError
    with pytest.raises(SsdlabError, match="seed -1: accepted: a whole number from 0 to"):
        Drive(small_toml.read_text(), "small", seed=-1)


def test_review_checks_out_before_running_anything(tmp_path):
    """Issue 25 item 16: a review whose --out cannot be written fails at once, not after the
    runs (a file where the directory should be)."""
    f = tmp_path / "taken"
    f.write_text("x")
    p = run_cli("review", "crucial-m500-960", "--out", str(f))
    assert p.returncode == 2 and "--out" in p.stderr and "is a file" in p.stderr, p.stderr
    p = run_cli("procedure", "consistency", "--drive", "crucial-m500-960", "--out", str(f))
    assert p.returncode == 2 and "is a file" in p.stderr, p.stderr


@pytest.mark.parametrize("args, message", [
    (["run", "--drive", "SMALL", "--rw", "randwrite", "--runtime", "1", "--interval", "nan"], "--interval nan: 'nan' is not a time"),
    (["run", "--drive", "SMALL", "--rw", "randwrite", "--runtime", "1", "--interval", "inf"], "--interval inf: 'inf' is not a time"),
    # A typo that grew the series to 9.8 GB in 50 s: the shortest interval is fio's millisecond.
    (["run", "--drive", "SMALL", "--rw", "randwrite", "--runtime", "1", "--interval", "0.0000001"], "accepted: a finite number of seconds of at least 0.001"),
    (["run", "--drive", "SMALL", "--rw", "randwrite", "--runtime", "1", "--interval", "0"], "--interval: job 'randwrite': log_interval: 0 s"),
    (["run", "--drive", "SMALL", "--rw", "randwrite", "--runtime", "2000", "--interval", "0.001"], "accepted: at most 1000000"),
    (["sweep", "BINARY", "--out", "OUT"], "not a text file (byte 0xe1 at offset 0"),
    (["procedure", "transfer-size", "--drive", "SMALL", "--set", "min_bs=8m", "--set", "max_bs=512"], "min_bs 8m is larger than max_bs 512"),
    (["serve", "--drive", "SMALL", "--store", "", "--port", "1"], "--store '': empty (an unset shell variable?)"),
    (["crypto-erase", "--store", ""], "--store '': empty"),
    (["run", "--drive", "SMALL", "--rw", "read", "--number-ios", "10", "--faults", ""], "--faults '': empty"),
    (["validate", "--groups", "theory", "--out", "/proc/v"], "--out /proc/v: cannot make it"),
    # Item 7: a negative value reaches the option's own check (was argparse's "expected one argument").
    (["run", "--drive", "SMALL", "--rw", "randwrite", "--bs", "-4k"], "bs"),
    (["run", "--drive", "SMALL", "--rw", "randwrite", "--size", "-1g"], "size"),
    (["run", "--drive", "SMALL", "--rw", "randrw", "--rwmixread", "-5"], "--rwmixread -5: '-5' is not a whole number"),
    (["run", "--drive", "SMALL", "--rw", "randrw", "--rwmixread", "150"], "--rwmixread: job 'randrw': rwmixread: 150 is not a percentage"),
])
def test_issue_73_bad_inputs_are_one_clear_line(tmp_path, small_toml, monkeypatch, args, message):
    """Issue 73 items 5, 6, 13, 18: tracebacks, a bound on the series, an empty --store that
    wrote the store over the current directory, an empty --faults taken silently, and
    validate's --out checked only after the whole group."""
    binary = tmp_path / "spec.toml"
    binary.write_bytes(b"\xe1\x00\xff")
    here = tmp_path / "here"
    here.mkdir()
    monkeypatch.chdir(here)
    subs = {"SMALL": str(small_toml), "BINARY": str(binary), "OUT": str(tmp_path / "o")}
    p = run_cli(*[subs.get(a, a) for a in args])
    assert p.returncode == 2, (p.returncode, p.stdout[-500:], p.stderr[-500:])
    assert message in p.stderr and "Traceback" not in p.stderr, p.stderr
    # Nothing was written where the user stands, nor an output directory.
    assert not list(here.iterdir()) and not (tmp_path / "o").exists()


def test_fio_habits_output_file_and_review_drive(tmp_path, small_toml):
    """Issue 73 item 8: fio's --output=FILE (was refused as ambiguous), and --drive on review
    as every other command takes it."""
    out = tmp_path / "run.txt"
    p = run_cli("run", "--drive", str(small_toml), "--rw", "randread", "--number-ios", "200", "--quiet",
                "--intervals", "none", f"--output={out}")
    assert p.returncode == 0, p.stderr
    assert "read" in out.read_text() and "IOPS" in out.read_text() and "IOPS" not in p.stdout
    p = run_cli("run", "--drive", str(small_toml), "--rw", "randread", "--number-ios", "10", "--output",
                str(tmp_path / "no" / "such" / "f"))
    assert p.returncode == 2 and "--output" in p.stderr and "Traceback" not in p.stderr, p.stderr
    taken = tmp_path / "taken"
    taken.write_text("x")
    p = run_cli("review", "--drive", str(small_toml), "--out", str(taken))
    assert p.returncode == 2 and "is a file" in p.stderr, p.stderr  # --drive taken; --out checked first


def test_fio_flags_leave_the_job_file_alone(tmp_path):
    # Issue 103 item 1: fio's options without a value (group_reporting) never take the next
    # word; those with one take it (--direct 1, --ioengine libaio), as fio's getopt reads them;
    # fio's progress options are ignored. The job file's jobs run.
    job = tmp_path / "two.fio"
    job.write_text("[first]\nrw=randread\nsize=64m\nnumber_ios=50\n[second]\nrw=randwrite\nsize=64m\nnumber_ios=50\n")
    for extra in (["--group_reporting"], ["--direct", "1", "--ioengine", "libaio"], ["--eta", "never"],
                  ["--group-reporting", "--thread"]):
        p = run_cli("run", "--drive", "crucial-m500-120", *extra, str(job), "--output-format", "json")
        assert p.returncode == 0, (extra, p.stderr)
        assert [j["jobname"] for j in json.loads(p.stdout)["jobs"]] == ["first", "second"], extra
    # Without --rw the command line runs fio's default, read, and names the job after its rw.
    for extra, name in (([], "read"), (["--readwrite=randrw"], "randrw"), (["--rw", "randwrite", "--name", "w"], "w")):
        p = run_cli("run", "--drive", "crucial-m500-120", *extra, "--runtime", "0.1", "--output-format", "json")
        assert p.returncode == 0, p.stderr
        j = json.loads(p.stdout)["jobs"][0]
        assert j["jobname"] == name and j["job options"].get("rw", "read") in ("read", "randrw", "randwrite"), j


def test_small_traps_are_refused_in_one_line():
    # Issue 103 item 8: each of these ran (or listed everything) before.
    for args, said in ((["validate", "--jobs", "0"], "--jobs 0: must be between 1 and 1,024"),
                       (["drives", ""], "name '': empty (an unset shell variable?)"),
                       (["review", "crucial-m500-120", "crucial-m500-120", "--out", "unused"],
                        "drive crucial-m500-120 named twice"),
                       (["fit", "--jobs", "-1", "x"], "--jobs -1: must be between 1 and 1,024")):
        p = run_cli(*args)
        assert p.returncode == 2 and said in p.stderr and "Traceback" not in p.stderr, (args, p.stderr)
