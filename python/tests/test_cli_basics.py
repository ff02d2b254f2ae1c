"""The command's basics a new user meets first: --version, one preset's TOML to edit, --out
checked before a run, run provenance in summary.json, and useful reprs."""
import json
import subprocess
import sys

from ssdlab import Drive, Job, __version__


def cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "ssdlab.cli", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=600)


def test_version():
    p = cli("--version")
    assert p.returncode == 0 and p.stdout.strip() == f"ssdlab {__version__}"


def test_one_preset_as_toml_to_edit_and_use(tmp_path):
    p = cli("drives", "crucial-m500-120", "--toml")
    assert p.returncode == 0 and 'name = "crucial-m500-120"' in p.stdout
    mine = tmp_path / "mine.toml"
    mine.write_text(p.stdout.replace('name = "crucial-m500-120"', 'name = "my-m500"'))
    r = cli("run", "--drive", str(mine), "--rw", "randread", "--number-ios", "2000", "--quiet", "--intervals", "none")
    assert r.returncode == 0, r.stderr
    one = cli("drives", "crucial-m500-120")
    assert one.returncode == 0 and len(one.stdout.splitlines()) == 3  # header, rule, the drive
    bad = cli("drives", "--toml")
    assert bad.returncode == 2 and "needs a drive name" in bad.stderr
    unknown = cli("drives", "no-such-drive", "--toml")
    assert unknown.returncode == 2 and "unknown drive 'no-such-drive'" in unknown.stderr


def test_out_is_checked_before_the_run(tmp_path):
    f = tmp_path / "a-file"
    f.write_text("")
    # A 2000 s job on the largest drive would take a while: the error must come first.
    p = cli("run", "--drive", "crucial-m500-960", "--precondition", "fill", "--rw", "randwrite", "--runtime", "2000",
            "--quiet", "--out", str(f))
    assert p.returncode == 2 and "is a file" in p.stderr, p.stderr
    assert "simulated s" not in p.stdout


def test_summary_json_says_what_produced_it(tmp_path):
    p = cli("run", "--drive", "crucial-m4-128", "--rw", "randread", "--bs", "4k", "--iodepth", "8",
            "--number-ios", "5000", "--seed", "7", "--quiet", "--intervals", "none", "--out", str(tmp_path / "o"))
    assert p.returncode == 0, p.stderr
    s = json.loads((tmp_path / "o" / "summary.json").read_text())
    run = s["run"]
    assert run["ssdlab_version"] == __version__ and run["drive"] == "crucial-m4-128" and run["seed"] == 7
    assert run["job"]["rw"] == "randread" and run["job"]["iodepth"] == 8 and run["job"]["number_ios"] == 5000


def test_drive_and_result_say_what_they_are():
    d = Drive.open("crucial-m4-128", seed=3)
    assert repr(d).startswith("Drive('crucial-m4-128', 128.0 GB") and "seed=3" in repr(d)
    r = d.run(Job(rw="randread", number_ios=1000))
    assert repr(r).startswith("Result('job'") and "read" in repr(r) and "IOPS" in repr(r)


def test_pandas_loads_only_when_a_series_is_read():
    """`import ssdlab`, the command line's parser (every command's --help) and a run whose
    summary alone is read leave numpy and pandas unloaded (their import was most of every
    command's start: 0.9 s of `ssdlab --help`); a result's series loads them when read."""
    code = ("import sys, ssdlab\n"
            "from ssdlab.cli import build_parser\n"
            "build_parser()\n"
            "r = ssdlab.Drive.preset('crucial-m500-120').run(ssdlab.Job(rw='randwrite', number_ios=3000))\n"
            "print(sorted(m for m in ('numpy', 'pandas') if m in sys.modules), r.summary['write']['ios'])\n"
            "print(len(r.series), 'pandas' in sys.modules, round(float(r.series.write_iops.sum())) > 0)\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines() == ["[] 3000", "1 True True"]
    # Nor does `ssdlab run`'s text chart load them (0.3 s of README command 1).
    code = ("import sys\n"
            "from ssdlab.cli import main\n"
            "main(['run', '--drive', 'crucial-m500-120', '--rw', 'randwrite', '--runtime', '3'])\n"
            "print(sorted(m for m in ('numpy', 'pandas') if m in sys.modules))\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[-1] == "[]" and sum(" s #" in line for line in lines) == 3, p.stdout


def test_job_value_errors_name_the_file_and_line_and_say_what_is_accepted(tmp_path):
    for body, where, says in (
        ("[a]\nrw=randread\nbs=abc\n", ":3: job 'a': bs:", "not a size"),
        ("[a]\nrw=randread\niodepth=abc\n", ":3: iodepth=abc:", "not a whole number"),
        ("[a]\nrw=bogus\n", ":2: job 'a': rw:", "accepted: read, write"),
    ):
        f = tmp_path / "j.fio"
        f.write_text(body)
        p = cli("run", "--drive", "crucial-m4-128", str(f), "--quiet")
        assert p.returncode == 2 and f"{f}{where}" in p.stderr and says in p.stderr, p.stderr
        assert "invalid literal" not in p.stderr and "Traceback" not in p.stderr


def test_cli_takes_fio_spellings_and_time_units():
    p = cli("run", "--drive", "crucial-m4-128", "--rw", "randread", "--io_size", "1m", "--number_ios", "100",
            "--quiet", "--intervals", "none")
    assert p.returncode == 0 and "read" in p.stdout, p.stderr
    p = cli("run", "--drive", "crucial-m4-128", "--rw", "randread", "--runtime", "0.05m", "--quiet", "--intervals", "none")
    assert p.returncode == 0 and "3.00 simulated s" in p.stdout, p.stdout + p.stderr
    for flag, value, says in (("--iodepth", "abc", "not a whole number"), ("--runtime", "1x", "not a time")):
        p = cli("run", "--drive", "crucial-m4-128", flag, value)
        assert p.returncode == 2 and says in p.stderr and "Traceback" not in p.stderr, p.stderr


def test_ramp_time_is_run_but_not_measured(tmp_path):
    base = ["run", "--drive", "crucial-m4-128", "--precondition", "fast-fill", "--rw", "randwrite", "--iodepth", "32",
            "--runtime", "3", "--quiet", "--intervals", "none", "--output-format", "json"]
    plain = json.loads(cli(*base).stdout)["jobs"][0]
    ramped = json.loads(cli(*base, "--ramp-time", "2s").stdout)["jobs"][0]
    assert ramped["job options"]["ramp_time"] == "2s"  # as given, as fio echoes it
    assert abs(ramped["write"]["runtime"] - 3000) <= 5 and abs(plain["write"]["runtime"] - 3000) <= 5
    assert ramped["write"]["total_ios"] != plain["write"]["total_ios"]
    f = tmp_path / "r.fio"
    f.write_text("[r]\nrw=randwrite\nramp_time=2\nruntime=3\ntime_based\ndirectory=/mnt/x\n")
    p = cli("run", "--drive", "crucial-m4-128", str(f), "--precondition", "fast-fill", "--quiet", "--intervals", "none",
            "--output-format", "json")
    assert p.returncode == 0, p.stderr
    assert abs(json.loads(p.stdout)["jobs"][0]["write"]["runtime"] - 3000) <= 5


def job_file_json(tmp_path, text: str) -> dict:
    """Run a job file on a fast-filled m4; its one job as fio's JSON."""
    f = tmp_path / "job.fio"
    f.write_text(text)
    p = cli("run", "--drive", "crucial-m4-128", str(f), "--precondition", "fast-fill", "--quiet",
            "--output-format", "json")
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)["jobs"][0]


def test_block_size_per_direction_in_a_job_file(tmp_path):
    job = job_file_json(tmp_path, "[mixed]\nrw=randrw\nbs=4k,64k\nnumber_ios=4000\niodepth=4\n")
    assert job["read"]["io_bytes"] // job["read"]["total_ios"] == 4096
    assert job["write"]["io_bytes"] // job["write"]["total_ios"] == 65536


def test_a_result_plots_as_the_report_draws_and_a_review_runs_from_python(tmp_path):
    d = Drive.open("crucial-m4-128")
    d.precondition("fast-fill")
    r = d.run(Job(rw="randwrite", iodepth=32, runtime_s=3, time_based=True))
    fig = r.plot()
    assert fig.data[0].mode == "markers" and fig.layout.yaxis.type == "log"
    assert "1K" in fig.layout.yaxis.ticktext
    fig.write_html(tmp_path / "p.html")
    assert (tmp_path / "p.html").stat().st_size > 10_000
    import ssdlab.review
    out = ssdlab.review.review(["crucial-m4-128"], tmp_path / "rev", procedures=["four-corners"], quick=True,
                               png=False, progress=False)
    assert out["html"].exists() and out["outcomes"][0].procedure == "four-corners"


def test_reading_an_unwritten_drive_warns():
    p = cli("run", "--drive", "crucial-m4-128", "--rw", "randread", "--number-ios", "1000", "--quiet", "--intervals", "none")
    assert p.returncode == 0 and "reads a drive 0% written" in p.stderr, p.stderr
    p = cli("run", "--drive", "crucial-m4-128", "--precondition", "fast-fill", "--rw", "randread", "--number-ios", "1000",
            "--quiet", "--intervals", "none")
    assert p.returncode == 0 and "warning" not in p.stderr, p.stderr


def test_numjobs_runs_copies_together():
    f_args = ["run", "--drive", "crucial-m4-128", "--precondition", "fast-fill", "--rw", "randread",
              "--number-ios", "3000", "--quiet", "--output-format", "json"]
    four = json.loads(cli(*f_args, "--numjobs", "4", "--group_reporting").stdout)["jobs"]
    one = json.loads(cli(*f_args).stdout)["jobs"][0]
    assert len(four) == 1, "group_reporting: the copies reported together"
    four = four[0]
    assert four["read"]["total_ios"] == 4 * one["read"]["total_ios"] == 12_000
    assert four["read"]["iops"] > 2 * one["read"]["iops"]  # four queues of one, not one
    assert four["job options"]["numjobs"] == "4"
    # Without group_reporting fio reports each clone as a job of its own (issue 73 item 9):
    # three entries of one name, each with its own 3000 IOs, run at once (one group).
    three = json.loads(cli(*f_args, "--numjobs", "3").stdout)["jobs"]
    assert [j["jobname"] for j in three] == ["randread"] * 3
    assert [j["read"]["total_ios"] for j in three] == [3000] * 3
    assert {j["groupid"] for j in three} == {0}
    # At once, not one after another: each takes about the time one alone takes.
    assert all(j["read"]["runtime"] < 1.5 * one["read"]["runtime"] for j in three), [j["read"]["runtime"] for j in three]


def test_steady_state_detection_from_a_job_file(tmp_path):
    job = job_file_json(tmp_path, "[steady]\nrw=randread\niodepth=8\nruntime=60\ntime_based\nss=iops:2%\n"
                                  "ss_dur=5s\nss_ramp=2s\n")
    ss = job["steadystate"]
    assert ss["attained"] == 1 and ss["ss"] == "iops:2.000000%" and ss["duration"] == 5
    assert len(ss["data"]["iops"]) == 5 and ss["data"]["iops_mean"] > 0
    # Stopped long before its 60 s, but not before ss_ramp + ss_dur (fio judges no window
    # that starts inside the ramp).
    assert 7_000 <= job["read"]["runtime"] < 10_000


def test_garbage_and_huge_job_files_get_one_line(tmp_path):
    f = tmp_path / "bad.fio"
    f.write_bytes(b"[a]\nrw=\xff\x00\n")
    p = cli("run", "--drive", "crucial-m4-128", str(f))
    assert p.returncode == 2 and "bad.fio:2: byte" in p.stderr and "Traceback" not in p.stderr, p.stderr
    f.write_text("[a]\nnumjobs=99999999999\n")
    p = cli("run", "--drive", "crucial-m4-128", str(f))
    assert p.returncode == 2 and "bad.fio:2: numjobs=99999999999: 99999999999 is out of range" in p.stderr, p.stderr


def test_the_steady_state_precondition_from_the_command_line(tmp_path):
    """Issue 71: an enterprise steady state is one flag away (SNIA-style preconditioning)."""
    p = cli("run", "--drive", "micron-m500dc-120", "--precondition", "steady-state", "--precondition-drive-writes", "1",
            "--rw", "randwrite", "--iodepth", "32", "--runtime", "2", "--quiet", "--intervals", "none",
            "--out", str(tmp_path))
    assert p.returncode == 0, p.stderr
    s = json.loads((tmp_path / "summary.json").read_text())
    assert s["run"]["precondition"] == "steady-state" and s["write_amplification"] > 1.2
    bad = cli("run", "--drive", "micron-m500dc-120", "--precondition", "steady-state", "--precondition-drive-writes", "-2",
              "--rw", "randwrite")
    assert bad.returncode == 2 and "--precondition-drive-writes -2: accepted: a number of 0 or more" in bad.stderr, bad.stderr
