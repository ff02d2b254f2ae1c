import pytest
from hypothesis import given, settings, strategies as st

from ssdlab import Job, SsdlabError, parse_fio

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


def test_units_of_time():
    assert parse_fio("[a]\nruntime=2m\n")[0].runtime_s == 120
    assert parse_fio("[a]\nruntime=1500ms\n")[0].runtime_s == 1.5


@pytest.mark.parametrize("text,expected", [
    ("[a]\nrw=read\nverify=crc32c\n", r"c.fio:3: option 'verify' is not supported: `ssdlab run` models timing"),
    ("[a]\nrw=read\nbogus_opt=1\n", r"c.fio:3: option 'bogus_opt' is not supported; accepted:"),
    ("[a]\nzonemode=zbd\n", r"c.fio:2: option 'zonemode' is not supported: zoned block devices"),
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
