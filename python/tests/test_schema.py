"""One source of truth: what Python knows of jobs, sizes and drive figures comes from the model."""

import dataclasses
import json
from pathlib import Path

import pytest

import ssdlab
from ssdlab import Job, _ssdlab
from ssdlab.drive import describe_preset, description
from ssdlab.errors import SsdlabError
from ssdlab.job import parse_size
from ssdlab.validate import _cfg, ceilings


def test_the_python_job_has_the_models_fields_and_defaults():
    model = json.loads(_ssdlab.job_defaults())
    python = {f.name: f.default for f in dataclasses.fields(Job) if f.metadata.get("model", True)}
    assert python == model
    # The schema: the same fields in the same order, each with its unit and accepted values.
    schema = json.loads(_ssdlab.job_schema())
    assert [f["name"] for f in schema] == [f.name for f in dataclasses.fields(Job) if f.metadata.get("model", True)]
    # Nothing else on a Job: what a job file said of it is its one declared `origin`.
    assert [f.name for f in dataclasses.fields(Job) if not f.metadata.get("model", True)] == ["origin"]
    assert all(f["accepted"] and f["default"] == model[f["name"]] for f in schema)
    assert {f["name"]: f["unit"] for f in schema}["runtime_s"] == "s (simulated)"


def test_sizes_are_read_by_the_models_parser():
    assert parse_size("4k", "bs") == 4096
    assert parse_size("128KiB", "bs") == 128 * 1024
    assert parse_size("1.5g", "span") == 3 * 2**29
    with pytest.raises(SsdlabError, match="span: '4q': unknown size suffix 'q'"):
        parse_size("4q", "span")
    with pytest.raises(SsdlabError, match="is not a size"):
        parse_size("abc", "--target-size")


def test_drive_figures_come_from_the_models_description():
    d = ssdlab.Drive.preset("crucial-m500-120")
    model = json.loads(_ssdlab.describe_config(ssdlab.drive.config_text("crucial-m500-120")[0]))
    row = d.describe()
    assert row == describe_preset("crucial-m500-120")
    assert row["op_of_raw_pct"] == 100 * model["over_provisioning_of_raw"]
    assert row["gc_spare_of_user_pct"] == 100 * model["gc_spare_of_user"] < row["op_of_user_pct"]
    assert d.geometry == model["geometry"]
    # SATA 6 Gb/s with 8b/10b: 600 MB/s on the wire; the NAND, bus and link ceilings.
    c = ceilings(_cfg("crucial-m500-120"))
    assert c["parts"]["link"] == 600e6 == description(_cfg("crucial-m500-120"))["link_line_bytes_per_s"]
    assert c["seq_read"] == min(c["parts"]["nand_read"], c["parts"]["bus"], c["parts"]["link"])


def _check_shape(value: dict, shape, where: str) -> None:
    """`value` has every required key of the TypedDict `shape`, and no key it does not name."""
    keys = set(value)
    required, optional = set(shape.__required_keys__), set(shape.__optional_keys__)
    assert required <= keys, f"{where}: missing {sorted(required - keys)}"
    assert keys <= required | optional, f"{where}: not in ssdlab.results: {sorted(keys - required - optional)}"


def test_results_have_the_shapes_ssdlab_results_states(tmp_path):
    from ssdlab import results

    d = ssdlab.Drive.preset("crucial-m500-120")
    d.precondition("fast-fill")
    r = d.run(Job(rw="randrw", iodepth=4, number_ios=2000, ss="iops:5%", ss_dur_s=1))
    _check_shape(r.summary, results.JobSummary, "job summary")
    for op in ("read", "write", "trim"):
        _check_shape(r.summary[op], results.OpSummary, op)
    _check_shape(r.summary["faults"], results.FaultCounters, "faults")
    _check_shape(r.summary["steady_state"], results.SteadyState, "steady_state")
    trace = tmp_path / "t.trace"
    trace.write_text("".join(f"{i * 100_000} 0 {i * 64} 8 {i % 2}\n" for i in range(200)))
    rr = d.replay([str(trace)], "afap")
    _check_shape(rr.summary, results.ReplaySummary, "replay summary")
    for cls in ("all", "read", "write", "trim"):
        _check_shape(rr.summary[cls], results.ClassSummary, cls)


def test_the_python_table_and_readme_list_are_what_the_models_table_gives(tmp_path):
    """Issue 74 item 2: python/ssdlab/_job_table.py (the `Job`'s fields, the job-file
    spellings, the run flags) and README's option list are written from the model's one table
    by tools/gen_job_table.py; `--check` passes on the tree and fails on a stale copy."""
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    tool = root / "tools" / "gen_job_table.py"
    p = subprocess.run([sys.executable, str(tool), "--check"], capture_output=True, text=True, cwd=tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr
    # A stale copy: the README's list one row short, the Python table a default off.
    for rel in ("README.md", "python/ssdlab/job.py", "python/ssdlab/_job_table.py"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(root / rel, tmp_path / rel)
    readme = tmp_path / "README.md"
    readme.write_text("".join(line for line in readme.read_text().splitlines(True) if not line.startswith("| `loops`")))
    table = tmp_path / "python/ssdlab/_job_table.py"
    table.write_text(table.read_text().replace("iodepth: int = 1", "iodepth: int = 2"))
    p = subprocess.run([sys.executable, str(tool), "--check", "--root", str(tmp_path)], capture_output=True,
                       text=True, cwd=tmp_path)
    assert p.returncode == 1 and "2 file(s) differ" in p.stderr, p.stdout + p.stderr
    assert "+| `loops` |" in p.stdout and "-    iodepth: int = 2" in p.stdout and "+    iodepth: int = 1" in p.stdout
    # Written, the copy checks clean.
    assert subprocess.run([sys.executable, str(tool), "--root", str(tmp_path)], capture_output=True).returncode == 0
    assert subprocess.run([sys.executable, str(tool), "--check", "--root", str(tmp_path)],
                          capture_output=True).returncode == 0


def test_each_job_file_spelling_and_run_flag_sets_its_field_as_the_table_reads_it():
    """The job-file reader and `ssdlab run`'s flags are the table's: each spelling of each row
    reaches its field, read by its kind (or its own reading), and so does each flag."""
    import argparse

    from ssdlab._job_table import ROWS
    from ssdlab.cli.run import _job_from_args, add_parsers
    from ssdlab.job import READERS, _apply

    import tempfile
    samples = {"text": "x", "count": "3", "whole": "7", "seconds": "2m", "flag": "1"}
    scheme = Path(tempfile.mkdtemp()) / "scheme"
    scheme.write_text("0,4096,1\n")
    # A reading's own sample and what it gives: rwmixwrite=3 is 97% reads, log_avg_msec=3 is
    # 3 ms, a bare thinktime is microseconds, dp_scheme's file is read.
    own = {"complement": ("3", 97), "log_avg_msec": ("3", 0.003), "microseconds": ("3", 3e-6),
           "file_text": (str(scheme), "0,4096,1\n")}
    for row in ROWS:
        for spelling, reading in row.spellings:
            job = Job()
            _apply(job, spelling, samples[row.kind] if reading == "as_written" else own[reading][0], "t")
            want = own[reading][1] if reading in own else READERS[row.kind](samples[row.kind])
            assert getattr(job, row.name) == want, (spelling, getattr(job, row.name))
    parser = argparse.ArgumentParser()
    add_parsers(parser.add_subparsers())
    for row in (r for r in ROWS if r.flag):
        argv = ["run", "--drive", "d", row.flag] + ([] if row.kind == "flag" else [samples[row.kind]])
        args = parser.parse_args(argv)
        args.fio_options = []
        job = _job_from_args(args)[0]
        assert getattr(job, row.name) == READERS[row.kind](samples[row.kind]), row.flag
        assert job.origin.where[row.name] == row.flag
