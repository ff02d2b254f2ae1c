import pytest
from hypothesis import given, settings, strategies as st

from ssdlab import Job, SsdlabError, parse_fio
import ssdlab
from ssdlab.job import job_error

JOB = """\
; consistency test
[global]
ioengine=libaio
direct=1
bs=4k
iodepth=32

[fill]
rw=write
bs=128k

[randwrite]
rw=randwrite
runtime=2000
time_based
random_distribution=zipf:1.1
"""


def test_parse_standard_job_file():
    jobs = parse_fio(JOB, "c.fio")
    assert [j.name for j in jobs] == ["fill", "randwrite"]
    assert jobs[0].bs == "128k" and jobs[0].iodepth == 32 and jobs[0].rw == "write"
    assert jobs[1].bs == "4k" and jobs[1].runtime_s == 2000 and jobs[1].time_based
    assert jobs[1].random_distribution == "zipf:1.1"


def test_host_side_file_creation_options_are_ignored():
    # Issue 73 item 7: how fio creates its files changes nothing the drive sees.
    assert parse_fio("[a]\nrw=write\ncreate_serialize=0\ncreate_fsync=1\n")[0].rw == "write"


def test_end_fsync_flushes_after_a_job_that_writes_as_fio_does():
    """fio's end_fsync: a FLUSH once the writes are done (the M500, without full power-loss
    protection, then programs its partly filled program unit, padded); after a job that only
    trims fio sends none, and neither does the model."""
    import ssdlab
    padding = {}
    for text in ("[w]\nrw=write\nbs=4k\nsize=12k\nend_fsync=1\n", "[w]\nrw=write\nbs=4k\nsize=12k\n",
                 "[t]\nrw=trim\nbs=4k\nsize=12k\nend_fsync=1\n"):
        (job,) = parse_fio(text, "e.fio")
        d = ssdlab.Drive.preset("crucial-m500-120")
        d.fill((1 << 20) + 4096)  # 257 units: an open program unit for the trim to leave as it is
        before = d.counters()["ftl"]["padding_units"]
        d.run(job, progress=False)
        padding[text.split("\n")[1] + (" end_fsync" if job.end_fsync else "")] = d.counters()["ftl"]["padding_units"] - before
    assert padding["rw=write end_fsync"] > 0, padding
    assert padding["rw=write"] == 0 and padding["rw=trim end_fsync"] == 0, padding


def test_units_of_time():
    assert parse_fio("[a]\nruntime=2m\n")[0].runtime_s == 120
    assert parse_fio("[a]\nruntime=1500ms\n")[0].runtime_s == 1.5


@pytest.mark.parametrize("text,expected", [
    ("[a]\nrw=read\nverify=crc32c\n", r"c.fio:3: option 'verify' is not supported: `ssdlab run` models timing"),
    ("[a]\nrw=read\nbogus_opt=1\n", r"c.fio:3: option 'bogus_opt' is not supported; accepted:"),
    ("[a]\nioengine=falloc\n", r"c.fio:2: ioengine=falloc is not supported: it performs file-system operations"),
    # Issue 73 item 7: refused with why, not only the list of what is accepted.
    ("[a]\nrw=write\ncpuload=50\n", r"c.fio:3: option 'cpuload' is not supported: belongs to the cpuio engine"),
    ("[a]\nrw=write\nverify_interval=4k\n", r"c.fio:3: option 'verify_interval' is not supported: `ssdlab run` models timing"),
    # Item 9: in fio's words, not the internal field's (0, fio's per-IO logs, is accepted now).
    ("[a]\nrw=read\nlog_avg_msec=-5\n", r"c.fio:3: log_avg_msec=-5: '-5' is not a whole number"),
    ("rw=read\n", r"c.fio:1: option 'rw=read' before any \[section\]"),
    ("[a\n", r"c.fio:1: '\[a' is not a section header"),
    ("[global]\nbs=4k\n", r"c.fio: no job section"),
    ("[a]\nruntime=fast\n", r"c.fio:2: runtime=fast: 'fast' is not a time"),
    ("[a]\nnumjobs=four\n", r"c.fio:2: numjobs=four: 'four' is not a whole number"),
    ("[a]\niodepth\n", r"c.fio:2: option 'iodepth' needs a value"),
])
def test_errors_name_file_line_and_option(text, expected):
    with pytest.raises(SsdlabError, match=expected):
        parse_fio(text, "c.fio")


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=300))
def test_parser_never_fails_with_anything_but_a_clear_error(text):
    try:
        jobs = parse_fio(text, "fuzz.fio")
    except SsdlabError as e:
        assert str(e).startswith("fuzz.fio")
    else:
        assert all(isinstance(j, Job) for j in jobs)


def test_inline_comments_and_substitutions_as_fio_reads_them(monkeypatch):
    monkeypatch.setenv("SSDLAB_TEST_QD", "16")
    job = parse_fio("[a]\nruntime=3600  # an hour at most\nsize=1g ; the span\niodepth=${SSDLAB_TEST_QD}\n"
                    "numjobs=$ncpus\n", "c.fio")[0]
    assert (job.runtime_s, job.size, job.iodepth) == (3600, "1g", 16)
    assert job.numjobs >= 1
    monkeypatch.delenv("SSDLAB_TEST_QD")
    with pytest.raises(SsdlabError, match=r"c.fio:2: .*SSDLAB_TEST_QD.*not set"):
        parse_fio("[a]\niodepth=${SSDLAB_TEST_QD}\n", "c.fio")


# Issue 25 item 9: fio starts every section of a file at once unless stonewall/wait_for says
# otherwise (fio's examples/aio-read.fio: four readers of one drive).
AIO_READ = """\
[global]
ioengine=libaio
buffered=0
rw=randread
bs=128k
size=64m
{extra}
[file1]
iodepth=4
[file2]
iodepth=32
[file3]
iodepth=8
[file4]
iodepth=16
"""


def _fio_json(tmp_path, small_toml, text):
    import json
    import subprocess
    import sys
    path = tmp_path / "j.fio"
    path.write_text(text)
    p = subprocess.run([sys.executable, "-m", "ssdlab.cli", "run", "--drive", str(small_toml), str(path),
                        "--precondition", "fast-fill", "--output-format", "json"], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)["jobs"]


def test_sections_of_a_file_run_at_once_and_share_the_drive(tmp_path, small_toml):
    together = _fio_json(tmp_path, small_toml, AIO_READ.format(extra=""))
    apart = _fio_json(tmp_path, small_toml, AIO_READ.format(extra="stonewall"))
    bw = lambda jobs: [j["read"]["bw_bytes"] for j in jobs]  # noqa: E731
    assert [j["groupid"] for j in together] == [0, 0, 0, 0]
    assert [j["groupid"] for j in apart] == [0, 1, 2, 3]
    # One after another, the deep readers each get the drive to themselves; at once, the
    # four share what one gets: their sum is about the drive's rate, not four times it.
    alone = max(bw(apart))
    moved = sum(j["read"]["io_bytes"] for j in together) / (max(j["read"]["runtime"] for j in together) / 1e3)
    assert 0.7 * alone < moved < 1.1 * alone, (moved, bw(apart))
    assert all(b < 0.8 * a for b, a in zip(bw(together), bw(apart))), (bw(together), bw(apart))


# fio's examples/sequence-distribution.fio (issue 73 item 10), as its comments describe it.
SEQUENCE = """[global]
ioengine=libaio
rw=randread
bs=4k
size=48k
io_size=24k

[repeating_sequence]
random_distribution=sequence:2,0,1
random_sequence_stride=0

[strided_sequence]
stonewall
random_distribution=sequence:2,0,1
random_sequence_stride=1
"""


def test_fios_sequence_distribution_example_runs_as_fio_runs_it(tmp_path, small_toml):
    jobs = parse_fio(SEQUENCE, "sequence-distribution.fio")
    assert [j.random_sequence_stride for j in jobs] == [False, True]
    assert [j["read"]["total_ios"] for j in _fio_json(tmp_path, small_toml, SEQUENCE)] == [6, 6]
    # Without io_size the strided pattern runs to the span's end (12 blocks) and ends the job.
    strided = SEQUENCE.replace("io_size=24k\n", "")
    assert [j["read"]["total_ios"] for j in _fio_json(tmp_path, small_toml, strided)][1] == 12
    with pytest.raises(AssertionError, match=r"j.fio:9: job 'repeating_sequence': random_distribution: "
                                             r"sequence block 12 lies beyond the job's span \(12 blocks"):
        _fio_json(tmp_path, small_toml, SEQUENCE.replace("2,0,1", "12,0"))


def test_wait_for_starts_a_job_when_the_named_one_ends(tmp_path, small_toml):
    text = ("[global]\nrw=randread\nbs=4k\niodepth=32\nnumber_ios=20000\n"
            "[a]\n[b]\nwait_for=a\n[c]\n")
    jobs = {j["jobname"]: j for j in _fio_json(tmp_path, small_toml, text)}
    # b runs alone after a and c (which ran together): faster than either of them.
    assert jobs["b"]["read"]["iops"] > 1.5 * jobs["a"]["read"]["iops"]
    assert jobs["b"]["read"]["iops"] > 1.5 * jobs["c"]["read"]["iops"]
    assert {j["groupid"] for j in jobs.values()} == {0}


def test_wait_for_names_an_earlier_job():
    with pytest.raises(SsdlabError, match=r"c.fio:4: wait_for=b: no job 'b' before this one"):
        parse_fio("[a]\nrw=read\n[c]\nwait_for=b\n[b]\n", "c.fio")


def test_every_rejected_option_of_a_file_is_reported_at_once():
    text = "[global]\nverify=crc32c\n[a]\nrw=read\nbogus=1\n[b]\nthinkcycles=10\nruntime=fast\n"
    with pytest.raises(SsdlabError) as e:
        parse_fio(text, "c.fio")
    msg = str(e.value)
    assert msg.startswith("c.fio: 4 options are not accepted")
    for line in ("c.fio:2: option 'verify'", "c.fio:5: option 'bogus'", "c.fio:7: option 'thinkcycles'",
                 "c.fio:8: runtime=fast"):
        assert line in msg
    assert msg.count("option 'verify'") == 1  # once, though [global] applies it to both jobs


def test_loops_run_a_job_s_passes_as_one_job_while_the_others_run(tmp_path, small_toml):
    """fio's loops=N (examples/fsx.fio: loops=500000, page_fault.fio): the job's passes run
    one after another and are reported as one job, as fio reports them; a job beside it runs
    meanwhile."""
    from ssdlab.job import schedule
    jobs = parse_fio("[a]\nrw=randread\nnumber_ios=1000\nloops=3\n[b]\nrw=randwrite\nnumber_ios=1000\n", "c.fio")
    assert [(j.name, j.loops) for j in jobs] == [("a", 3), ("b", 1)]
    assert schedule(jobs)[0].after == [None, None]
    # A count past 2^32 is the reader's to refuse; no pass at all is the model's, at its line.
    with pytest.raises(SsdlabError, match=r"c.fio:2: loops=5g: 5000000000 is out of range; accepted: a whole number below 2\^32"):
        parse_fio("[a]\nloops=5g\n", "c.fio")
    none = parse_fio("[a]\nloops=0\n", "c.fio")[0]
    with pytest.raises(ValueError) as e:
        ssdlab.Drive.open(str(small_toml))._sim.check_job(none.to_json())
    assert str(job_error(none, str(e.value))) == "c.fio:2: job 'a': loops: 0; accepted: 1 or more"
    ran = _fio_json(tmp_path, small_toml, "[a]\nrw=randread\nnumber_ios=1000\nloops=3\n")
    assert [j["read"]["total_ios"] for j in ran] == [3000]
    fsx = _fio_json(tmp_path, small_toml, "[file]\niodepth=1\nrw=randrw\nsize=256k\nbs=4k\nnorandommap\n"
                    "loops=500000\nruntime=2\n")[0]
    assert fsx["read"]["total_ios"] + fsx["write"]["total_ios"] > 64 * 10


def test_latency_target_finds_the_deepest_queue_within_the_target(tmp_path, small_toml):
    """fio's latency_target (examples/latency-profile.fio): the highest iodepth at which the
    percentile of a window's latencies stays within the target; a looser target allows a
    deeper queue, and fio's JSON says which depth."""
    text = ("[global]\nbs=4k\nrw=randread\niodepth=64\nlatency_target={t}\nlatency_window=200000\n"
            "latency_percentile=99\n[device]\n")
    tight = _fio_json(tmp_path, small_toml, text.format(t=400))[0]
    loose = _fio_json(tmp_path, small_toml, text.format(t=5000))[0]
    assert 1 <= tight["latency_depth"] < loose["latency_depth"] <= 64, (tight["latency_depth"], loose["latency_depth"])
    assert tight["latency_target"] == 400_000 and tight["latency_window"] == 200_000
    assert tight["latency_percentile"] == 99.0
    # The window kept (at the depth found) met the target.
    assert tight["read"]["clat_ns"]["percentile"]["99.000000"] <= 400_000
    with pytest.raises(SsdlabError, match="latency_percentile=200"):
        parse_fio("[a]\nlatency_target=1000\nlatency_percentile=200\n", "c.fio")


def test_latency_target_probes_within_the_jobs_runtime(small_toml):
    """A latency_target job with a runtime probes within it, as fio's job does (issue 73 item
    9): 0.5 s with 0.2 s windows is three probes (the last cut to 0.1 s), not a search that
    runs past it."""
    from ssdlab import Drive
    d = Drive.from_toml(str(small_toml))
    d.precondition("fast-fill")
    t0 = d.now_s
    r = d.find_latency_depth(Job(rw="randread", bs="4k", iodepth=64, runtime_s=0.5, time_based=True), 400e-6, 0.2, 99.0)
    probes = r.summary["latency_target"]["probes"]
    assert len(probes) == 3, probes
    assert d.now_s - t0 == pytest.approx(0.5, abs=0.01)
    unbounded = Drive.from_toml(str(small_toml))
    unbounded.precondition("fast-fill")
    r = unbounded.find_latency_depth(Job(rw="randread", bs="4k", iodepth=64), 400e-6, 0.2, 99.0)
    assert len(r.summary["latency_target"]["probes"]) > 3


def test_arithmetic_in_values_as_fio_reads_it(monkeypatch):
    """fio evaluates + - * / % ^ in numeric values (page_fault.fio: size=5*1024*1024*$mb_memory/8);
    a range such as bsrange's 512-4096 stays a range."""
    job = parse_fio("[a]\nsize=5*1024*1024*16/8\niodepth=(2^4)\nbsrange=512-4096\nruntime=(60*2)\n", "c.fio")[0]
    assert (job.size, job.iodepth, job.bsrange, job.runtime_s) == (str(10 * 2**20), 16, "512-4096", 120)
    assert parse_fio("[a]\nsize=4k\n", "c.fio")[0].size == "4k"


def test_strided_zones_and_per_direction_bssplit_run_as_fio_reads_them(tmp_path, small_toml):
    """fio's zonemode=strided (examples/disk-zone-profile.fio: read zonesize, skip zoneskip)
    and bssplit lists per direction (cmdprio-bssplit.fio); the host-side options of the
    NVMe passthrough, libblkio and priority examples are accepted."""
    from ssdlab import Drive
    span = Drive.from_toml(small_toml).user_bytes
    stride, zone = 8 << 20, 1 << 20
    whole, rest = divmod(span, stride)
    expected = (whole * zone + min(rest, zone)) // (64 << 10)
    text = "[global]\nbs=64k\nrw=read\nzonemode=strided\nzonesize=1m\nzoneskip=7m\n[profile]\n"
    assert _fio_json(tmp_path, small_toml, text)[0]["read"]["total_ios"] == expected
    mixed = _fio_json(tmp_path, small_toml, "[m]\nrw=randrw\nbssplit=64k/40:1024k/60,1024k/100\nnumber_ios=2000\n"
                      "cmdprio_bssplit=64k/100:1024k/0,1024k/0\ncmdprio_class=1\nprioclass=3\n")[0]
    assert mixed["write"]["bw_bytes"] / mixed["write"]["iops"] == pytest.approx(1 << 20)
    assert 0.55 * (1 << 20) < mixed["read"]["bw_bytes"] / mixed["read"]["iops"] < 0.75 * (1 << 20)
    for text in ("[a]\nioengine=io_uring_cmd\ncmd_type=nvme\nsqthread_poll_cpu=0\n",
                 "[a]\nioengine=libblkio\nlibblkio_driver=io_uring\nlibblkio_path=/dev/nvme0n1\n"):
        assert parse_fio(text, "c.fio")[0].rw == "read"
    with pytest.raises(SsdlabError, match=r"c.fio:2: zonemode=none and zonesize are not compatible"):
        parse_fio("[a]\nzonemode=none\nzonesize=1m\n", "c.fio")
    with pytest.raises(SsdlabError, match=r"c.fio:2: zonemode=strided needs zonesize"):
        parse_fio("[a]\nzonemode=strided\n", "c.fio")


def test_rwmixwrite_is_the_complement_of_rwmixread_and_a_percentage():
    """fio's rwmixwrite sets the reads' share to 100 minus it; more than 100 is refused at its
    line, naming the option as written (was the model's 'rwmixread: -200 is out of range')."""
    assert parse_fio("[a]\nrw=randrw\nrwmixwrite=30\n", "w.fio")[0].rwmixread == 70
    with pytest.raises(SsdlabError, match=r"w.fio:3: rwmixwrite=300: 300 is not a percentage; accepted: 0 to 100"):
        parse_fio("[a]\nrw=randrw\nrwmixwrite=300\n", "w.fio")
