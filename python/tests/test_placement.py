"""Host-directed placement (issue 99): NVMe FDP as a user reaches it, through fio's job files
(fdp, fdp_pli/plids, plid_select), the Python API and the results' statistics log."""

import json
import subprocess
import sys

import pandas as pd
import pytest

from ssdlab import Drive, Job
from ssdlab.errors import SsdlabError

# fio's examples/uring-cmd-fdp.fio (fio 3.34 and later): three jobs over different ranges, each
# with its own placement identifiers and write intensity. As fio ships it, but for its runtime
# (1000 s), which the test shortens with --runtime.
URING_CMD_FDP = """\
[global]
filename=/dev/ng0n1
ioengine=io_uring_cmd
cmd_type=nvme
iodepth=32
bs=4K
fdp=1
time_based=1
runtime=1000

[write-heavy]
rw=randrw
rwmixwrite=90
fdp_pli=0,1,2,3
offset=0%
size=30%

[write-mid]
rw=randrw
rwmixwrite=30
fdp_pli=4,5
offset=30%
size=30%

[write-light]
rw=randrw
rwmixwrite=10
fdp_pli=6
offset=60%
size=30%
"""


def _run_json(tmp_path, drive: str, text: str, *extra: str):
    path = tmp_path / "j.fio"
    path.write_text(text)
    p = subprocess.run([sys.executable, "-m", "ssdlab.cli", "run", "--drive", drive, str(path),
                        "--output-format", "json", *extra], capture_output=True, text=True)
    return p


def test_fio_s_fdp_example_runs_on_a_preset_with_the_default_configuration(tmp_path):
    p = _run_json(tmp_path, "crucial-m500-120", URING_CMD_FDP, "--runtime", "0.3")
    assert p.returncode == 0, p.stderr
    # One line says the drive took the default configuration.
    said = [line for line in p.stderr.splitlines() if "[placement]" in line]
    assert len(said) == 1 and "8 initially isolated handles" in said[0], p.stderr
    jobs = json.loads(p.stdout)["jobs"]
    assert [j["jobname"] for j in jobs] == ["write-heavy", "write-mid", "write-light"]
    last = jobs[-1]["ssdlab"]["placement"]
    handles = [h["host_bytes_written"] for h in last["handles"]]
    written = sum(j["write"]["io_bytes"] for j in jobs)
    # Every write went through the handle its job's index named: 0-3 share write-heavy's
    # writes in turn, 4-5 write-mid's, 6 write-light's, 7 none.
    assert sum(handles) == last["statistics"]["host_bytes_written"] == written
    heavy, mid, light = (j["write"]["io_bytes"] for j in jobs)
    assert abs(sum(handles[0:4]) - heavy) <= 0 and max(handles[0:4]) - min(handles[0:4]) <= 4096
    assert sum(handles[4:6]) == mid and handles[6] == light and handles[7] == 0
    assert last["events"] == [] or all(e["kind"] == "implicitly_modified_ruh" for e in last["events"])
    assert last["statistics"]["media_bytes_written"] >= written


def test_an_fdp_job_on_a_drive_opened_without_placement_is_a_clear_error():
    d = Drive.open("crucial-m500-120")
    with pytest.raises(SsdlabError, match=r"asks for FDP, and crucial-m500-120 has no \[placement\] table; "
                                          r"accepted: Drive.open\(\.\.\., placement=\"fdp\"\)"):
        d.run(Job(rw="randwrite", fdp=True, runtime_s=0.01, time_based=True))


def test_a_drive_s_own_placement_table_is_kept_and_bad_values_name_their_field(tmp_path):
    from ssdlab.configs import preset_path
    text = preset_path("crucial-m500-120").read_text()
    own = tmp_path / "fdp.toml"
    own.write_text(text + '\n[placement]\nmode = "fdp"\nhandles = ["persistently-isolated", "initially-isolated"]\n')
    d = Drive.open(str(own), placement="fdp")
    r = d.run(Job(rw="randwrite", bs="4k", fdp=True, plids="0-1", size="8m", iodepth=4))
    p = r.summary["placement"]
    assert [h["host_bytes_written"] for h in p["handles"]] == [4 << 20, 4 << 20]
    assert [s["pid"] for s in p["ruh_status"]] == [0, 1]
    bad = tmp_path / "bad.toml"
    bad.write_text(text + '\n[placement]\nmode = "fdp"\nhandles = ["initially-isolated", "initially-isolated"]\n'
                   'pids = [0, 3]\n')
    with pytest.raises(SsdlabError, match=r"field `placement.pids\[1\]`: handle 3; accepted: a reclaim unit "
                                          r"handle, 0 to 1"):
        Drive.open(str(bad))


def test_ruh_update_through_the_api_closes_the_unit_and_is_logged(tmp_path):
    from ssdlab.configs import preset_path
    own = tmp_path / "fdp.toml"
    own.write_text(preset_path("crucial-m500-120").read_text()
                   + '\n[placement]\nmode = "fdp"\nhandles = ["initially-isolated", "initially-isolated"]\n')
    d = Drive.open(str(own))
    full = d.placement()["ruh_status"][1]["available_media_bytes"]
    d.run(Job(rw="write", bs="4k", fdp=True, plids="1", size="64k"))
    assert d.placement()["ruh_status"][1]["available_media_bytes"] < full
    d.ruh_update(1)
    p = d.placement()
    assert p["ruh_status"][1]["available_media_bytes"] == full
    assert [(e["kind"], e["pid"]) for e in p["events"]] == [("ru_not_fully_written", 1)]
    # The drive-wide statistics log is every drive's; RUH Update needs placement.
    plain = Drive.open("crucial-m500-120")
    plain.run(Job(rw="write", bs="4k", size="64k"))
    assert plain.media_statistics()["host_bytes_written"] == 64 << 10
    assert plain.placement() is None
    with pytest.raises(SsdlabError, match=r"ruh_update\(0\): crucial-m500-120: no \[placement\] table"):
        plain.ruh_update(0)


def test_validate_s_placement_rows_are_within_theory():
    from ssdlab.validate import validate
    rows = validate(["placement"], quick=True, progress=False)
    assert all(r.group == "placement" for r in rows)
    theory = [r for r in rows if r.tolerance != "prediction"]
    # 4 FDP rows and the ZNS one, within 1.5% of theory; 4 flash-cache predictions.
    assert len(theory) == 5 and len(rows) == 9
    assert all(r.passed for r in theory), [(r.item, r.expected, r.simulated) for r in theory]
    assert any(r.item.startswith("ZNS") and r.simulated == 1.0 for r in theory)
    assert all(r.simulated >= 1.0 for r in rows if r.tolerance == "prediction")


# fio's examples/zbd-rand-write.fio and zbd-rand-write-zone-reset-gc.fio (fio 3.38), as fio
# ships them: the host-side options (filename, ioengine, direct) are ignored as for any job.
ZBD_RAND_WRITE = """\
; Using the psync ioengine, random write to a (zoned) block device,
; writing at most 32 zones at a time. Target zones are chosen randomly
; and writes directed at the write pointer of the chosen zones

[global]
name=zbd-rand-write
group_reporting
rw=randwrite
zonemode=zbd
zonesize=256M
max_open_zones=32
bs=512K
direct=1
numjobs=16
time_based
runtime=180

[dev1]
filename=/dev/sdj
ioengine=psync
"""

ZBD_RESET_GC = """\
[global]
name=zbd-rand-write-gc
group_reporting
rw=randwrite
zonemode=zbd
zonesize=256M
bs=32M
direct=1
time_based
runtime=40

[dev1]
filename=/dev/sdb
size=8z
offset=524z
ioengine=psync
zone_reset_threshold=0.7
zone_reset_frequency=0.125
"""


def test_fio_s_zbd_examples_run_on_a_preset_with_the_default_zones(tmp_path):
    p = _run_json(tmp_path, "crucial-m500-240", ZBD_RAND_WRITE, "--runtime", "2")
    assert p.returncode == 0, p.stderr
    said = [line for line in p.stderr.splitlines() if "[placement]" in line]
    assert len(said) == 1 and "zones of 256M" in said[0] and "at most 32 open" in said[0], p.stderr
    job = json.loads(p.stdout)["jobs"][0]
    z = job["ssdlab"]["zones"]
    # Random offsets open zones up to max_open_zones (fio's write zones), each written at its
    # write pointer; nothing refused.
    assert z["zone_bytes"] == 256 << 20 and z["max_open"] == 32
    assert z["implicitly_opened"] == 32 and z["counters"]["refused"] == 0
    assert z["written_bytes"] == job["write"]["io_bytes"]
    assert job["ssdlab"]["gc_units_copied"] == 0

    p = _run_json(tmp_path, "crucial-m500-240", ZBD_RESET_GC)
    assert p.returncode == 0, p.stderr
    job = json.loads(p.stdout)["jobs"][0]
    z = job["ssdlab"]["zones"]
    # 8 zones from zone 524: 40 s of 32 MiB writes at about the drive's 250 MB/s is several
    # drive-fills of the 8 zones, so zones are reset (the threshold's and full zones').
    assert z["counters"]["resets"] >= 10 and z["counters"]["refused"] == 0
    assert z["implicitly_opened"] + z["full"] <= 8 and z["empty"] >= z["zones"] - 8
    assert job["ssdlab"]["gc_units_copied"] == 0 and job["ssdlab"]["blocks_erased"] > 0


def test_zones_through_the_api_and_bad_zone_input_name_their_field(tmp_path):
    from ssdlab.configs import preset_path
    text = preset_path("crucial-m500-120").read_text()
    path = tmp_path / "zoned.toml"
    path.write_text(text + '\n[placement]\nmode = "zns"\nzone_bytes = 67108864\nmax_open_zones = 4\n')
    d = Drive.from_toml(path)
    zones = d.zone_report()
    assert len(zones) == d.zones()["zones"] and zones[0]["state"] == "empty"
    d.run(Job(rw="write", bs="128k", size="2z", zonemode="zbd", zonesize="64m", iodepth=4), progress=False)
    first, second = d.zone_report(0, 2)
    assert first["state"] == "full" and second["state"] == "full"
    d.zone_manage(0, "reset")
    assert d.zone_report(0, 1)[0]["write_pointer_bytes"] == 0
    with pytest.raises(SsdlabError, match="Zone Invalid State Transition"):
        d.zone_manage(0, "close")
    # A zone command to a conventional namespace.
    with pytest.raises(SsdlabError, match="Invalid Command Opcode"):
        Drive.open("crucial-m500-120").zone_manage(0, "reset")
    # A job's limit above the drive's, without ignore_zone_limits.
    with pytest.raises(SsdlabError, match="max_open_zones: 8 is above the drive's 4"):
        d.run(Job(rw="randwrite", zonemode="zbd", zonesize="64m", max_open_zones=8), progress=False)
    for bad, field in (("zone_bytes = 100000000", "placement.zone_bytes"),
                       ("zone_bytes = 1048576", "placement.zone_bytes")):
        path.write_text(text + f'\n[placement]\nmode = "zns"\n{bad}\n')
        with pytest.raises(SsdlabError, match=field.replace(".", r"\.")):
            Drive.from_toml(path)


def test_flash_cache_procedure_reports_write_amplification_over_time_and_draws_it(tmp_path):
    from test_review import _chromium

    from ssdlab.review.runner import review
    exe = _chromium()
    from ssdlab.placement_checks import shrunk_preset
    drive = tmp_path / "m500-small.toml"
    drive.write_text(shrunk_preset("crucial-m500-120", 16, 22).text)
    drive = str(drive)
    out = tmp_path / "report"
    params = {"utilisation": [100], "soc_pct": [10, 40], "handles": [1, 2], "drive_writes": 3.0, "samples": 6}
    r = review([drive], out, ["flash-cache"], {"flash-cache": params}, progress=False)
    assert r["tasks"] == 1
    rows = [o for o in json.loads((out / "summary.json").read_text()) if o["procedure"] == "flash-cache"]
    assert len(rows) == 4
    assert all(None not in o["units"].values() for o in rows)
    for o in rows:
        s = o["summary"]
        # Media bytes are at least host bytes: the device's write amplification is >= 1, and
        # the cache was written as many times as asked (to the 4 KiB and 16 MiB granules).
        assert s["waf_steady"] >= 1.0 and abs(s["cache_writes"] - 3.0) < 0.02, s
    by = {(o["summary"]["soc_pct"], o["summary"]["handles"]): o["summary"] for o in rows}
    # A bigger small-object region, more random data to collect: write amplification rises.
    assert by[(40, 1)]["waf_steady"] > by[(10, 1)]["waf_steady"]
    # The small objects on their own handle against the EuroSys '25 appendix model (greedy at
    # their own share of the space). Their handle's figure leaves out copies out of shared
    # units (a lower bound), the run is short: within 15%.
    for soc in (10, 40):
        s = by[(soc, 2)]
        assert abs(s["small_objects_waf_steady"] / s["small_objects_waf_model"] - 1) < 0.15, s
    pngs = sorted(p.name for p in (out / "png").glob("*.png"))
    assert any(p.startswith("flash-cache") for p in pngs), pngs
    assert exe
    # Two tenants, each region on its own handle: four handles written, each at least once.
    from ssdlab.review.catalog import PROCEDURES, resolve_params
    from ssdlab.review.procedures import Tracker
    two = resolve_params("flash-cache", {**params, "soc_pct": [10], "handles": [2], "tenants": 2})
    (o,) = PROCEDURES["flash-cache"].run(shrunk_preset("crucial-m500-120", 16, 22), two, Tracker())
    t = o.tables["waf"]
    assert [c for c in t.columns if c.startswith("handle")] == [f"handle{h}_waf" for h in range(4)]
    assert (t[[f"handle{h}_waf" for h in range(4)]].iloc[1:] >= 1.0).all().all(), t
    assert o.summary["tenants"] == 2 and o.variant.endswith("2 tenants")


def test_a_trace_s_placement_column_puts_each_write_through_its_handle(tmp_path):
    # 400 writes of 64 KiB, their PIDs 0..3 in turn, and 100 reads (no PID): replayed through
    # `ssdlab replay --columns ...,pid=4`, on a drive without [placement] (the default FDP).
    lines = ["time_us,op,offset,size,pid"]
    for i in range(500):
        w = i % 5 != 4
        lines.append(f"{i * 100},{'W' if w else 'R'},{(i * 7919 % 4096) * 65536},65536,{i % 4 if w else '-'}")
    trace = tmp_path / "placed.csv"
    trace.write_text("\n".join(lines) + "\n")
    out = tmp_path / "out"
    p = subprocess.run([sys.executable, "-m", "ssdlab.cli", "replay", "--drive", "crucial-m500-120", str(trace),
                        "--columns", "time=0:us,op=1,offset=2,size=3,pid=4,skip=1", "--out", str(out)],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert sum("[placement]" in line for line in p.stderr.splitlines()) == 1, p.stderr
    summary = json.loads((out / "replay-summary.json").read_text())
    handles = [h["host_bytes_written"] for h in summary["placement"]["handles"]]
    # Writes i with i % 5 != 4: 400 of them, PID i % 4 over the 5-cycle: 100 each.
    assert handles[:4] == [100 * 65536] * 4 and not any(handles[4:]), handles
    bad = tmp_path / "bad.csv"
    bad.write_text("0,W,0,4096,70000\n")
    p = subprocess.run([sys.executable, "-m", "ssdlab.cli", "replay", "--drive", "crucial-m500-120", str(bad),
                        "--columns", "time=0:us,op=1,offset=2,size=3,pid=4"], capture_output=True, text=True)
    assert p.returncode == 2 and "pid '70000'" in p.stderr and "Traceback" not in p.stderr, p.stderr


def test_zns_against_conventional_on_the_same_media(tmp_path):
    from test_review import _chromium

    from ssdlab.placement_checks import shrunk_preset
    from ssdlab.review.runner import review
    _chromium()
    out = tmp_path / "report"
    drive = tmp_path / "m500-quarter.toml"
    drive.write_text(shrunk_preset("crucial-m500-120", 4, 4).text)
    review([str(drive)], out, ["zns-vs-conventional"],
           {"zns-vs-conventional": {"overwrites": 1, "zone_size": "64m", "bs": "128k", "rate_steps": [0.1, 0.5],
                                    "rate_window_s": 3}}, progress=False)
    (o,) = [o for o in json.loads((out / "summary.json").read_text()) if o["procedure"] == "zns-vs-conventional"]
    assert None not in o["units"].values()
    t = pd.read_parquet(out / "data" / "zns-vs-conventional.parquet").set_index("test")
    zoned, seven, more = t.loc["zoned"], t.loc["conventional, 7% spare"], t.loc["conventional, 28% spare"]
    # The zoned drive copies nothing (its write amplification is metadata's); the conventional
    # ones collect, less with more spare, and write faster for it.
    assert zoned.gc_units_copied == 0 and zoned.write_amplification < 1.1
    assert seven.write_amplification > more.write_amplification > zoned.write_amplification
    assert zoned.mb_per_s > more.mb_per_s > seven.mb_per_s
    assert more.capacity_gb < seven.capacity_gb
    assert (out / "png" / "zns-vs-conventional.png").exists()
    # ATC '21's second set-up: rate-limited 64 KiB writes with 4 KiB reads beside them. The
    # zoned drive holds the higher rate (its writes copy nothing) and its reads wait less.
    r = pd.read_parquet(out / "data" / "zns-rates.parquet")
    assert len(r) == 6 and r.write_amplification.min() > 1.0
    held = o["summary"]
    zoned_held = held["zoned: highest write rate sustained with reads (MB/s)"]
    assert zoned_held > held["conventional, 28% spare: highest write rate sustained with reads (MB/s)"] \
        >= held["conventional, 7% spare: highest write rate sustained with reads (MB/s)"]
    low = r[r.target_mb_per_s == r.target_mb_per_s.min()].set_index("test")
    assert low.read_p99_us["zoned"] < low.read_p99_us["conventional, 7% spare"]
    assert len(list((out / "png").glob("zns-rates-*.png"))) == 1


def test_a_zoned_drive_is_not_served_or_crash_tested_through_nbd(tmp_path):
    # NBD has no zone commands: its writes off a write pointer would fail, and the store would
    # miss data the client thinks written. Both refuse in one line.
    from ssdlab.configs import preset_path
    path = tmp_path / "zoned.toml"
    path.write_text(preset_path("crucial-m500-120").read_text() + '\n[placement]\nmode = "zns"\nzone_bytes = 67108864\n')
    for args in (["serve", "--drive", str(path), "--socket", str(tmp_path / "s.sock")],
                 ["crashtest", "--drive", str(path), "--cycles", "1"]):
        p = subprocess.run([sys.executable, "-m", "ssdlab.cli", *args], capture_output=True, text=True, timeout=120)
        assert p.returncode == 2 and "cannot be served through NBD" in p.stderr and "Traceback" not in p.stderr, p.stderr


def test_the_drive_files_shaped_like_the_shipping_devices_run_fio_s_examples(tmp_path):
    # docs/placement: the ZN540's zones and the PM9D3's FDP configuration on the P420m's media.
    from pathlib import Path
    here = Path(__file__).resolve().parents[2] / "docs" / "placement"
    zoned = str(here / "zn540-like.toml")
    z = Drive.from_toml(zoned).zones()
    assert (z["zones"], z["zone_bytes"], z["capacity_bytes"], z["max_open"], z["max_active"]) == (
        904, 2 << 30, 1077 << 20, 14, 14)
    p = _run_json(tmp_path, zoned, ZBD_RAND_WRITE.replace("zonesize=256M", "zonesize=2G")
                  .replace("max_open_zones=32", "max_open_zones=14"), "--runtime", "0.5")
    assert p.returncode == 0, p.stderr
    assert "[placement]" not in p.stderr  # the drive file's own
    zones = json.loads(p.stdout)["jobs"][0]["ssdlab"]["zones"]
    assert zones["implicitly_opened"] == 14 and zones["counters"]["refused"] == 0
    p = _run_json(tmp_path, str(here / "pm9d3-like.toml"), URING_CMD_FDP, "--runtime", "0.3")
    assert p.returncode == 0 and "[placement]" not in p.stderr, p.stderr
    handles = json.loads(p.stdout)["jobs"][-1]["ssdlab"]["placement"]["handles"]
    assert len(handles) == 8 and handles[7]["host_bytes_written"] == 0 and handles[0]["host_bytes_written"] > 0


def test_a_zbd_job_takes_over_the_zones_left_open_as_fio_does():
    # fio's zbd_setup_files: zones of a writing job's range left open (or closed) count as its
    # write zones from the start; more than its limits is fio's error, and once the host
    # finishes them the job runs (and every write lands: nothing refused).
    from ssdlab.errors import SsdlabError
    d = Drive.open("crucial-m500-120", placement="zns:64m:8")
    z = dict(zonemode="zbd", zonesize="64m")
    d.run(Job(rw="randwrite", bs="128k", numjobs=8, io_size="8m", **z), progress=False)
    assert d.zones()["implicitly_opened"] == 8
    again = Job(rw="randwrite", bs="64k", runtime_s=1, time_based=True, job_max_open_zones=2, **z)
    with pytest.raises(SsdlabError, match=r"starts with 8 zones of its range open or closed on the drive, more than "
                                          r"its limit of 2 .*Number of open zones exceeds max_open_zones limit"):
        d.run(again, progress=False)
    for zone in d.zone_report():
        if zone["state"] == "implicitly-opened":
            d.zone_manage(zone["zone"], "finish")
    r = d.run(again, progress=False)
    assert r.summary["zones"]["counters"]["refused"] == 0 and r.summary["host_units_written"] > 0
    # A job allowed the open zones takes them over and writes on at their write pointers.
    d2 = Drive.open("crucial-m500-120", placement="zns:64m:8")
    d2.run(Job(rw="randwrite", bs="128k", numjobs=8, io_size="8m", **z), progress=False)
    r = d2.run(Job(rw="randwrite", bs="128k", numjobs=8, io_size="8m", **z), progress=False)
    assert r.summary["zones"]["counters"]["refused"] == 0 and r.summary["zones"]["implicitly_opened"] == 8


def test_fio_s_dp_scheme_places_writes_by_offset(tmp_path):
    # fio 3.38's plid_select=scheme with dp_scheme: each write's placement identifier from the
    # first START,END,PID line holding its offset (PID 0 outside every line).
    (tmp_path / "scheme.txt").write_text("0,1073741824,1\n1073741824,2147483648,3\n")
    text = ("[w]\nioengine=io_uring_cmd\nfdp=1\nplid_select=scheme\ndp_scheme=scheme.txt\nrw=randwrite\n"
            "bs=4k\niodepth=8\nsize=3g\nnumber_ios=3000\n")
    (tmp_path / "j.fio").write_text(text)
    p = subprocess.run([sys.executable, "-m", "ssdlab.cli", "run", "--drive", "crucial-m500-120", "j.fio",
                        "--output-format", "json"], capture_output=True, text=True, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    job = json.loads(p.stdout)["jobs"][0]
    drive = Drive.open("crucial-m500-120", placement="fdp")
    # Through Python the field is the scheme's text.
    r = drive.run(Job(rw="randwrite", bs="4k", iodepth=8, size="3g", number_ios=3000, fdp=True, plid_select="scheme",
                      dp_scheme="0,1073741824,1\n1073741824,2147483648,3\n"), progress=False)
    for summary in (job["ssdlab"], r.summary):
        written = [h["host_bytes_written"] for h in summary["placement"]["handles"]]
        # A third of the span each: handles 1 and 3 by the scheme, 0 (the default) past it.
        assert all(abs(written[h] / sum(written) - 1 / 3) < 0.05 for h in (0, 1, 3)), written
        assert written[2] == 0
    (tmp_path / "scheme.txt").write_text("0,10,1\nbad line\n")
    p = subprocess.run([sys.executable, "-m", "ssdlab.cli", "run", "--drive", "crucial-m500-120", "j.fio"],
                       capture_output=True, text=True, cwd=tmp_path)
    assert p.returncode == 2 and "dp_scheme: line 2: 'bad line'; accepted: START,END,PID" in p.stderr, p.stderr


def test_zone_append_through_fio_s_write_mode(tmp_path):
    # write_mode=zone_append (fio's io_uring_cmd): each write a Zone Append to its zone's start,
    # eight in flight per job; the drive places them at the write pointers: nothing refused,
    # every byte where the zones say.
    text = ("[a]\nioengine=io_uring_cmd\nzonemode=zbd\nzonesize=64m\nmax_open_zones=4\nwrite_mode=zone_append\n"
            "rw=randwrite\nbs=64k\niodepth=8\nnumber_ios=4000\n")
    p = _run_json(tmp_path, "crucial-m500-120", text)
    assert p.returncode == 0, p.stderr
    job = json.loads(p.stdout)["jobs"][0]
    z = job["ssdlab"]["zones"]
    assert z["counters"]["appends"] == 4000 and z["counters"]["refused"] == 0
    assert z["written_bytes"] == job["write"]["io_bytes"] == 4000 * 65536
    p = _run_json(tmp_path, "crucial-m500-120", "[a]\nrw=randwrite\nwrite_mode=zone_append\n")
    assert p.returncode == 2 and "write_mode: zone_append needs zonemode=zbd" in p.stderr, p.stderr
