"""NAND page types (issue 100 item 1): a part's lower and upper MLC pages read and program at
their own times, around the part's mean."""
import re

import pytest

from ssdlab import Drive, Job, SsdlabError
from ssdlab.configs import config_text


def qd1_read_percentiles(text: str) -> dict:
    d = Drive(text, "m500.toml")
    d.fill()
    r = d.run(Job(rw="randread", bs="4k", iodepth=1, runtime_s=0.3, time_based=True))
    return r.summary["read"]


def test_qd1_reads_show_the_lower_and_upper_pages():
    text, _ = config_text("crucial-m500-120")
    tr = float(re.search(r"(?m)^read_page_us = ([\d.]+)", text).group(1))
    lower, upper = (tr * float(f) for f in re.search(r"read_page_type_factors = \[([\d.]+), ([\d.]+)\]", text).groups())
    typed = qd1_read_percentiles(text)
    plain = qd1_read_percentiles(re.sub(r"(?m)^(read|program)_page_type_factors.*\n", "", text))
    # One tR for every page: every QD1 read takes the same time.
    assert plain["latency_us_p50"] == plain["latency_us_min"] == plain["latency_us_max"]
    # With page types: two levels, as far apart as the lower and upper pages' tR, on either
    # side of the single one.
    p = typed["latency_ns_percentiles"]
    fast, slow = p["10.000000"] / 1e3, p["90.000000"] / 1e3
    assert slow - fast == pytest.approx(upper - lower, abs=2.0)  # within fio's percentile bins
    assert fast < plain["latency_us_mean"] < slow
    # The mean moves only as much as the pages the data sits on (RAIN parity, never read by
    # the host, sits on upper pages): under 1%.
    assert typed["latency_us_mean"] == pytest.approx(plain["latency_us_mean"], rel=0.01)


def test_page_types_that_do_not_average_to_the_part_are_refused():
    text, _ = config_text("crucial-m500-120")
    bad = re.sub(r"(?m)^program_page_type_factors = .*$", "program_page_type_factors = [0.85, 2.3]", text)
    with pytest.raises(SsdlabError) as e:
        Drive(bad, "m500.toml")
    message = str(e.value)
    assert "field `nand.program_page_type_factors`" in message and "split nand.program_page_us = 1860 us" in message
    assert "\n" not in message.strip()


def test_a_one_shot_tlc_drive_reads_its_three_page_types():
    """A drive of one-shot TLC wordlines (48 KiB pages: lower, middle, upper 16 KiB each) built
    from the M500 120GB: QD1 random reads come in three levels, the types' factors of tR apart,
    and sequential reads and random writes run."""
    text, _ = config_text("crucial-m500-120")
    tr = float(re.search(r"(?m)^read_page_us = ([\d.]+)", text).group(1))
    for key, value in (("page_size_bytes", "49152"), ("pages_per_block", "170"), ("read_sector_bytes", "0")):
        text = re.sub(rf"(?m)^{key} = .*$", f"{key} = {value}", text)
    text = re.sub(r"(?m)^(read|program)_page_type_factors.*\n", "", text)
    text = text.replace("[nand]\n", "[nand]\nread_page_type_factors = [0.8, 1.0, 1.2]\none_shot_program = true\n", 1)
    d = Drive(text, "tlc.toml")
    d.fill()
    p = d.run(Job(rw="randread", bs="4k", iodepth=1, runtime_s=0.5, time_based=True)).summary["read"]
    levels = [p["latency_ns_percentiles"][k] / 1e3 for k in ("10.000000", "50.000000", "90.000000")]
    # 20.2 us apart, within fio's percentile bins (about 1.5% of the latency: 2 us here).
    assert levels[1] - levels[0] == pytest.approx(0.2 * tr, abs=2.0)
    assert levels[2] - levels[1] == pytest.approx(0.2 * tr, abs=2.0)
    assert d.run(Job(rw="read", bs="128k", iodepth=32, runtime_s=0.2, time_based=True)).summary["read"]["iops"] > 0
    assert d.run(Job(rw="randwrite", bs="4k", iodepth=32, runtime_s=0.2, time_based=True)).summary["write"]["iops"] > 0
