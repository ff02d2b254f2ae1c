import json

import pytest

import ssdlab
from ssdlab import Drive, Job, SsdlabError


def test_every_preset_builds_and_matches_reference_geometry():
    names = ssdlab.preset_names()
    # Every drive of drives.toml at every capacity.
    for family, caps in {
        "crucial-m4": [128, 256], "crucial-m500": [120, 240, 480, 960],
        "crucial-m550": [128, 256, 512, 1024], "micron-m500dc": [120, 240, 480, 800],
        "micron-p400m": [100, 200, 400], "micron-p400e": [50, 100, 200, 400],
        "micron-p320h": [175, 350, 700], "micron-p420m": [350, 700, 1400],
    }.items():
        for c in caps:
            assert f"{family}-{c}" in names
    # Geometry facts straight from drives.toml.
    from ssdlab.drive import describe_preset
    assert describe_preset("crucial-m500-960") == Drive.preset("crucial-m500-960").describe()
    m500 = describe_preset("crucial-m500-120")
    assert m500["dies"] == 8 and m500["raw_gib"] == 128
    dc = describe_preset("micron-m500dc-120")
    assert dc["dies"] == 12
    # drives.toml worked example: M500DC 120GB effective over-provisioning 33.5% of raw.
    assert dc["op_of_raw_pct"] == pytest.approx(33.5, abs=0.2)
    m550 = describe_preset("crucial-m550-128")
    assert m550["op_of_raw_pct"] == pytest.approx(6.1, abs=0.1)  # drives.toml over_provisioning_pct
    # The metadata blocks count in the vendor's figure but cannot serve garbage collection.
    assert 0 < m550["gc_spare_of_user_pct"] < m550["op_of_user_pct"]
    # The M500 960GB's 1 GiB of DRAM (drives.toml) holds its flat map: 4 bytes per 4 KiB.
    m500 = describe_preset("crucial-m500-960")
    assert m500["dram_mib"] == 1024 and 894 < m500["map_dram_mib"] < 900


def test_from_toml_errors_name_file_and_field(tmp_path, small_toml):
    bad = tmp_path / "bad.toml"
    bad.write_text(small_toml.read_text().replace("planes_per_die = 2", "planes_per_die = 2\nplane_count = 2"))
    with pytest.raises(SsdlabError) as e:
        Drive.from_toml(bad)
    msg = str(e.value)
    assert str(bad) in msg and "unknown field `plane_count`" in msg and "line" in msg
    big = tmp_path / "big.toml"
    big.write_text(small_toml.read_text().replace("user_capacity_bytes = 460000000", "user_capacity_bytes = 900000000"))
    with pytest.raises(SsdlabError, match=r"big.toml: field `ftl.user_capacity_bytes`.*accepted: at most"):
        Drive.from_toml(big)
    geom = tmp_path / "geom.toml"
    geom.write_text(small_toml.read_text().replace("page_size_bytes = 16384", "page_size_bytes = 10000"))
    with pytest.raises(SsdlabError, match="nand.page_size_bytes"):
        Drive.from_toml(geom)
    with pytest.raises(SsdlabError, match="unknown drive 'nope'.*crucial-m500-960"):
        Drive.preset("nope")
    with pytest.raises(SsdlabError, match="cannot read"):
        Drive.from_toml(tmp_path / "missing.toml")


def test_bad_job_is_a_clear_error(small_toml):
    d = Drive.from_toml(small_toml)
    with pytest.raises(SsdlabError, match="rw: 'randomwrite' is not supported; accepted"):
        d.run(Job(rw="randomwrite"))
    with pytest.raises(SsdlabError, match="size: offset 0 \\+ size"):
        d.run(Job(rw="read", size="2g"))
    with pytest.raises(SsdlabError, match="precondition 'full' is not known"):
        d.precondition("full")


def test_consistency_shape_peak_cliff_steady_state(small_toml):
    d = Drive.from_toml(small_toml)
    pre = d.precondition("fill")
    assert pre.summary["write"]["bytes"] >= d.user_bytes - 128 * 1024
    free_after_fill = d.counters()["free_blocks"]
    r = d.run(Job(rw="randwrite", bs="4k", iodepth=32, runtime_s=60, time_based=True))
    iops = r.series.write_iops.to_numpy()
    # This drive's spare area (about 75 MB) lasts under a second at its peak.
    peak = iops[0]
    steady = iops[-20:]
    assert peak > 3 * steady.mean(), (peak, steady.mean())
    # Noisy: the per-second values vary in the steady state.
    assert steady.std() > 0.02 * steady.mean()
    assert r.summary["write_amplification"] > 2
    assert (r.series.free_blocks.iloc[-10:] < free_after_fill).all()
    d.verify()


def test_timed_and_fast_fill_reach_the_same_ftl_state(small_toml):
    timed = Drive.from_toml(small_toml)
    timed.precondition("fill")
    fast = Drive.from_toml(small_toml)
    fast.precondition("fast-fill")
    assert timed._sim.state_digest() == fast._sim.state_digest()
    assert timed.counters()["ftl"] == fast.counters()["ftl"]
    # And they behave the same afterwards (same seed, same job).
    job = Job(rw="randwrite", iodepth=8, number_ios=20000)
    a, b = timed.run(job), fast.run(job)
    assert a.summary["write_amplification"] == b.summary["write_amplification"]


def test_same_seed_bit_identical(small_toml):
    def once(seed):
        d = Drive.from_toml(small_toml, seed=seed)
        d.precondition("fast-fill")
        r = d.run(Job(rw="randrw", bssplit="4k/60:64k/40", iodepth=16, number_ios=30000, randseed=seed))
        return json.dumps(r.summary, sort_keys=True), r.series.to_json(), d._sim.state_digest()
    assert once(5) == once(5)
    assert once(5)[2] != once(6)[2]


def test_results_and_outputs(tmp_path, small_toml):
    d = Drive.from_toml(small_toml)
    d.precondition("fast-fill")
    r = d.run(Job(rw="randread", iodepth=4, runtime_s=3, time_based=True))
    s = r.summary["read"]
    assert s["latency_us_p50"] <= s["latency_us_p90"] <= s["latency_us_p99"] <= s["latency_us_p99_9"] <= s["latency_us_max"]
    assert len(r.series) == 3
    paths = r.write(tmp_path / "out")
    import pandas as pd
    back = pd.read_parquet(paths[1])
    assert list(back.columns) == list(r.series.columns)
    assert json.loads(paths[0].read_text())["read"]["ios"] == s["ios"]
    hist = d.erase_count_histogram()
    assert hist.blocks.sum() == len(d.erase_counts())


def test_trim_then_reads_touch_no_nand(small_toml):
    d = Drive.from_toml(small_toml)
    d.precondition("fast-fill")
    d.run(Job(rw="trim", bs="1m", iodepth=8, size="100m"))
    reads_before = d.counters()["nand"]["page_reads"]
    d.run(Job(rw="randread", size="100m", iodepth=4, number_ios=500))
    assert d.counters()["nand"]["page_reads"] == reads_before
    d.verify()


def test_nand_write_ceiling_m500_120():
    # A 120GB M500 has 8 dies: 8 x 2 planes x 16 KiB per tPROG (the part's effective 1860 us,
    # +2% two-plane), times 15/16 for RAIN parity: the sequential-write NAND ceiling before
    # host limits.
    d = Drive.preset("crucial-m500-120")
    assert d.config["nand"]["program_page_us"] == 1860.0
    d.secure_erase()
    r = d.run(Job(rw="write", bs="128k", iodepth=32, size="2g"))
    ceiling = 8 * 2 * 16384 / (1860e-6 * 1.02) * 15 / 16 / 1e6
    mbps = r.summary["write"]["mb_per_s"]
    assert mbps <= ceiling * 1.01
    assert mbps > 0.9 * ceiling, (mbps, ceiling)


def test_a_read_whose_transfer_outlasts_a_progress_slice_completes():
    """Issue 25, item 13: a 500 MiB read takes over a simulated second on the link; the run
    loop, stepped a second at a time, never reached its completion and hung at 0 IOs."""
    d = Drive.preset("crucial-m500-120")
    d.precondition("fast-fill")
    r = d.run(Job(rw="read", bs="512m", iodepth=1, number_ios=2))
    assert r.summary["read"]["ios"] == 2
    assert r.summary["elapsed_s"] > 2 * 512 * 2**20 / 500e6   # at most the 500 MB/s read path


def test_summaries_say_where_they_came_from_and_the_last_interval_is_partial():
    """Issue 25 item 16: provenance in every summary (precondition, a hash of the resolved
    drive configuration, when it was written); a last interval the run did not fill is marked
    partial and its rates are over the time it covered."""
    import ssdlab
    d = ssdlab.Drive.preset("crucial-m4-128")
    d.precondition("fast-fill")
    r = d.run(ssdlab.Job(rw="randread", iodepth=8, number_ios=100_000, log_interval_s=1.0))
    run = r.summary["run"]
    assert run["precondition"] == "fast-fill" and len(run["config_sha256"]) == 64
    other = ssdlab.Drive.preset("crucial-m4-256").run(ssdlab.Job(rw="read", number_ios=10)).summary["run"]
    same = ssdlab.Drive.preset("crucial-m4-128").run(ssdlab.Job(rw="read", number_ios=10)).summary["run"]
    assert same["config_sha256"] == run["config_sha256"] != other["config_sha256"]
    assert same["precondition"] == "none"
    time_s, read_iops = r.rates("read_iops")  # from the core's series, before the DataFrame
    s = r.series
    assert time_s == s.time_s.tolist() and read_iops == s.read_iops.tolist()
    assert r.rates("read_iops") == (time_s, read_iops)  # and from the DataFrame after it
    with pytest.raises(ssdlab.SsdlabError, match="column 'iops'; accepted: read_iops, write_iops, trim_iops"):
        r.rates("iops")
    elapsed = r.summary["elapsed_s"]
    assert 1 < elapsed < 60 and elapsed % 1 > 0.01
    assert s.partial.iloc[-1] and not s.partial.iloc[:-1].any()
    assert s.time_s.iloc[-1] == pytest.approx(elapsed)
    # Every interval's IOs over its own length add up to the run's.
    lengths = s.time_s.diff().fillna(s.time_s.iloc[0])
    assert (s.read_iops * lengths).sum() == pytest.approx(100_000, rel=1e-6)
    # The partial interval runs at the job's pace, not a fraction of it.
    assert s.read_iops.iloc[-1] == pytest.approx(s.read_iops.iloc[-2], rel=0.2)


def test_a_written_summary_says_when_it_was_written(tmp_path, monkeypatch):
    """The timestamp of issue 25 item 16 is in summary.json only (SOURCE_DATE_EPOCH fixes it),
    so results stay the same for the same configuration and seed."""
    import ssdlab
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    r = ssdlab.Drive.preset("crucial-m4-128").run(ssdlab.Job(rw="read", number_ios=10))
    assert "written_at" not in r.summary["run"]
    r.write(tmp_path)
    written = json.loads((tmp_path / "summary.json").read_text())
    assert written["run"]["written_at"] == "2023-11-14T22:13:20+00:00"


def test_the_steady_state_precondition_is_random_write_steady_state(small_toml):
    """Issue 71: SNIA-style preconditioning from the API: purge, fill, random writes (untimed).
    Random writes after it run at the steady-state level at once, not at fresh speed."""
    fresh, steady = Drive.from_toml(small_toml), Drive.from_toml(small_toml)
    fresh.precondition("fast-fill")
    assert steady.precondition("steady-state", drive_writes=2) is None
    job = Job(rw="randwrite", bs="4k", iodepth=32, runtime_s=2, time_based=True)
    a, b = fresh.run(job), steady.run(job)
    assert b.summary["write"]["iops"] < 0.7 * a.summary["write"]["iops"], (a.summary["write"], b.summary["write"])
    assert b.summary["run"]["precondition"] == "steady-state"
    with pytest.raises(SsdlabError, match="drive_writes"):
        steady.precondition("steady-state", drive_writes=-1)
