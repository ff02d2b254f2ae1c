"""Trace replay a researcher can trust (issue 13): each failure seen on real traces, on a small
trace written here; the cloud-era and SNIA layouts and blktrace's binary files written in their
published layouts; per-request output and `ssdlab trace stats` checked against counts made
here independently."""

import bz2
import gzip
import json
import lzma
import struct
import subprocess
import sys

import pyarrow.parquet as pq
import pytest

import ssdlab
from ssdlab import Drive, SsdlabError
from ssdlab import trace_stats


def run_cli(*args, timeout=120):
    return subprocess.run([sys.executable, "-m", "ssdlab.cli", *map(str, args)], capture_output=True, text=True,
                          timeout=timeout)


def write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text) if isinstance(text, str) else p.write_bytes(text)
    return p


def test_timed_mode_runs_through_long_idle_gaps(tmp_path):
    # The repro of the hang: two reads 1.1 s apart (MQSim ns), and 1100 s apart.
    short = write(tmp_path, "p.trace", "0 0 1000 8 1\n1100000000 0 2000 8 1\n")
    long = write(tmp_path, "q.trace", "0 0 1000 8 1\n1100000000000 0 2000 8 1\n")
    for trace, at_least in ((short, 1.1), (long, 1100.0)):
        # (the timeout only stops a hang; it is far above the second this takes)
        p = run_cli("replay", "--drive", "crucial-m500-120", trace, "--mode", "timed", "--quiet",
                    "--output-format", "json", timeout=300)
        assert p.returncode == 0, p.stderr
        job = json.loads(p.stdout)["jobs"][0]
        assert job["ssdlab"]["elapsed_s"] >= at_least


def test_offsets_near_2_64_and_queue_depths_out_of_range_are_clear_errors(tmp_path):
    far = write(tmp_path, "o.csv", "128166372003061629,hm,0,Write,18446744073709551000,4096,100\n")
    p = run_cli("replay", "--drive", "crucial-m500-120", far)
    assert p.returncode == 2 and "beyond the drive" in p.stderr and "Traceback" not in p.stderr
    p = run_cli("replay", "--drive", "crucial-m500-120", far, "--wrap", "--quiet")
    assert p.returncode == 0 and "1 requests wrapped" in p.stdout, p.stderr
    # Issue 25, item 22: its end lies beyond 2^64 bytes; trace stats said nothing of the cap.
    p = run_cli("trace", "stats", far, "--json")
    assert p.returncode == 0, p.stderr
    assert any("1 requests end beyond 2^64 bytes" in n for n in json.loads(p.stdout)["notes"]), p.stdout
    for qd in ("-1", "5000000000", "abc"):
        p = run_cli("replay", "--drive", "crucial-m500-120", far, "--mode", "qd", "--qd", qd)
        assert p.returncode == 2 and "--qd" in p.stderr and "Traceback" not in p.stderr, p.stderr


def test_out_of_order_timestamps_are_noted_and_sort_replays_in_time_order(tmp_path, small_toml):
    # 400 writes, 1 ms apart, written to the file in reverse time order.
    lines = [f"{i * 1_000_000} 0 {i * 64} 8 0" for i in range(400)][::-1]
    trace = write(tmp_path, "rev.trace", "\n".join(lines) + "\n")
    d = Drive.from_toml(small_toml)
    d.precondition("fast-fill")
    as_is = d.replay(trace, "timed", time_unit="ns").summary
    d2 = Drive.from_toml(small_toml)
    d2.precondition("fast-fill")
    ordered = d2.replay(trace, "timed", time_unit="ns", sort=True).summary
    assert as_is["out_of_order"] == 399 and any("out of order" in n and "--sort" in n for n in as_is["notes"])
    assert ordered["out_of_order"] == 0
    # In file order they collapse into one burst; in time order each arrives to an idle drive.
    assert as_is["write"]["latency_us_mean"] > 5 * ordered["write"]["latency_us_mean"]
    assert ordered["elapsed_s"] > 0.399


def test_trace_stats_and_replay_count_out_of_order_requests_alike(tmp_path, small_toml):
    """Issue 25, item 20: `trace stats` counted requests earlier than the one before them,
    the replay those earlier than the latest arrival before them (144 vs 1,297 on one trace).
    One definition now (the latest arrival before it), stated in both."""
    arrivals = [0, 100_000, 50_000, 60_000, 70_000, 200_000]  # 3 arrive before 100 us
    trace = write(tmp_path, "ooo.trace", "".join(f"{t} 0 {i * 64} 8 0\n" for i, t in enumerate(arrivals)))
    p = run_cli("trace", "stats", trace, "--json", "--time-unit", "ns")
    assert p.returncode == 0, p.stderr
    stats = json.loads(p.stdout)["stats"]
    d = Drive.from_toml(small_toml)
    replay = d.replay(trace, "timed", time_unit="ns").summary
    assert stats["out_of_order"] == replay["out_of_order"] == 3
    assert any("latest arrival above them" in n for n in replay["notes"]), replay["notes"]


def test_time_units_are_stated_and_chosen(tmp_path, small_toml):
    d = Drive.from_toml(small_toml)
    disksim = write(tmp_path, "d.trace", "0.000 0 100 8 1\n2.500 0 200 8 1\n")  # DiskSim: ms with decimals
    r = d.replay(disksim, "timed").summary
    assert any("read as ms" in n for n in r["notes"]) and r["elapsed_s"] >= 0.0025
    r = d.replay(disksim, "timed", time_unit="us").summary
    assert r["notes"] == [] and r["elapsed_s"] < 0.0001
    p = run_cli("replay", "--drive", "crucial-m500-120", disksim, "--quiet")
    assert "note: DiskSim/MQSim arrival times read as ms" in p.stderr
    p = run_cli("replay", "--drive", "crucial-m500-120", disksim, "--time-unit", "fortnights")
    assert p.returncode == 2 and "invalid choice" in p.stderr
    v2 = write(tmp_path, "v2.log", "fio version 2 iolog\n/dev/x add\n/dev/x open\n/dev/x write 0 4096\n/dev/x read 4096 4096\n")
    assert any("no timestamps" in n for n in d.replay(v2).summary["notes"])
    v2w = write(tmp_path, "v2w.log", "fio version 2 iolog\n/dev/x add\n/dev/x write 0 4096\n/dev/x wait 30 0\n/dev/x read 4096 4096\n")
    r = d.replay(v2w, "timed").summary
    # The one note says how the wait was read (issue 25 item 23).
    assert len(r["notes"]) == 1 and "milliseconds since the job started" in r["notes"][0] and r["elapsed_s"] >= 0.030


BLK = "  8,16   0 {seq:8d} {t:14.9f}  {pid:5d}  {act}  {rwbs} {sector} + {n} [{comm}]\n"


def test_blkparse_requeues_are_not_new_arrivals_and_devices_are_maj_min(tmp_path, small_toml):
    # 10 writes on 8,16; three of them requeued and issued again; one 8,0 write besides.
    text, seq, t = "", 0, 0.0
    for i in range(10):
        for act in (("D", "R", "D", "C") if i % 3 == 0 and i < 9 else ("D", "C")):
            seq += 1
            t += 0.0001
            text += BLK.format(seq=seq, t=t, pid=100, act=act, rwbs="W", sector=1000 + 8 * i, n=8, comm="caf\u00e9")
    text += "  8,0    0      999 1.000000000    100  D   W 5000 + 8 [x]\n"
    trace = write(tmp_path, "blk.txt", text.encode("latin-1"))  # a Latin-1 process name, as seen
    d = Drive.from_toml(small_toml)
    r = d.replay(trace, device="8,16").summary
    assert r["write"]["ios"] == 10 and r["other_devices_skipped"] == 1
    assert any("requeued" in n for n in r["notes"])
    p = run_cli("replay", "--drive", "crucial-m500-120", trace, "--device", "16")
    assert p.returncode == 2 and "no requests for device 16" in p.stderr and "8,16" in p.stderr


def test_trims_are_reported_apart_and_write_amplification_counts_the_buffer(tmp_path, small_toml):
    # fio v3 iolog: 30 x 4 KiB writes, then a 64 MiB trim (t0038-like).
    lines = ["fio version 3 iolog", "0 /dev/x add", "0 /dev/x open"]
    lines += [f"{i * 10} /dev/x write {i * 4096} 4096" for i in range(30)]
    lines += ["400 /dev/x trim 0 67108864"]
    trace = write(tmp_path, "t.log", "\n".join(lines) + "\n")
    d = Drive.from_toml(small_toml)
    r = d.replay(trace)
    s = r.summary
    assert s["trim"]["ios"] == 1 and s["all"]["ios"] == 30
    assert s["all"]["bytes"] == 30 * 4096  # the trimmed range is not data moved
    assert s["all"]["data_rate_mb_per_s"] < 10_000
    assert s["write_amplification"] >= 1.0 and s["final_flush_s"] > 0
    assert "trim" in r.table().index
    series = r.series
    for column in ("nand_page_programs", "free_blocks"):
        assert series[column].sum() > 0, column


def test_input_edges(tmp_path, small_toml):
    d = Drive.from_toml(small_toml)
    bom = write(tmp_path, "bom.csv", "\ufeffTimestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime\n"
                                    "128166372003061629,hm,0,Read,8192,4096,100\n")
    assert d.replay(bom).summary["format"] == "msr"
    header_only = write(tmp_path, "h.csv", "Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime\n")
    with pytest.raises(SsdlabError, match="no requests in the trace"):
        d.replay(header_only, format="msr")
    text = "".join(f"{i * 1000} 0 {i * 8} 8 {i % 2}\n" for i in range(5000)).encode()
    for name, data, fmt in (("t.bz2", bz2.compress(text), "disksim+bzip2"), ("t.xz", lzma.compress(text), "disksim+xz")):
        r = d.replay(write(tmp_path, name, data), time_unit="ns").summary
        assert (r["requests"], r["format"]) == (5000, fmt)
    gz = bytearray(gzip.compress(text))
    for i in range(len(gz) // 2, len(gz) // 2 + 64):
        gz[i] ^= 0x5A
    with pytest.raises(SsdlabError, match="gzip stream is corrupt or truncated"):
        d.replay(write(tmp_path, "bad.gz", bytes(gz)))


def test_per_request_parquet_and_merged_files(tmp_path, small_toml):
    a = write(tmp_path, "a.trace", "".join(f"{i * 2000} 0 {i * 8} 8 1\n" for i in range(500)))
    b = write(tmp_path, "b.trace", "".join(f"{i * 2000 + 1000} 1 {100000 + i * 8} 8 0\n" for i in range(300)))
    out = tmp_path / "req.parquet"
    d = Drive.from_toml(small_toml)
    d.precondition("fast-fill")
    r = d.replay([a, b], "timed", time_unit="ns", per_request=out)
    assert r.summary["requests"] == 800 and r.summary["read"]["ios"] == 500
    t = pq.read_table(out).to_pandas()
    assert len(t) == 800
    assert t["latency_us"].to_numpy() == pytest.approx((t["complete_us"] - t["submit_us"]).to_numpy(), abs=1e-6)
    assert (t["latency_us"] > 0).all()
    assert t["op"].astype(str).value_counts().to_dict() == {"read": 500, "write": 300}
    assert t.sort_values("submit_us")["arrival_us"].is_monotonic_increasing  # merged in time order
    assert t["latency_us"].mean() == pytest.approx(r.summary["all"]["latency_us_mean"], rel=0.02)
    p = run_cli("replay", "--drive", "crucial-m500-120", a, b, "--per-request", tmp_path / "nodir" / "x.parquet")
    assert p.returncode == 2 and "does not exist" in p.stderr


def _alibaba(recs):
    return "".join(f"{dev},{'W' if w else 'R'},{off},{n},{1577808144000000 + t}\n" for t, dev, w, off, n in recs)


def _tencent(recs):
    return "".join(f"{1538323200 + t // 1000},{off // 512},{n // 512},{1 if w else 0},{dev}\n" for t, dev, w, off, n in recs)


def _fiu(recs):
    return "".join(f"{89968195792462 + t * 1000} 20782 my proc {off // 512} {n // 512} {'W' if w else 'R'} 8 {dev} "
                   "56f11b711d91a065a2b6458eca924523\n" for t, dev, w, off, n in recs)


def _msprod(recs):
    head = ("BeginHeader\nDiskRead, TimeStamp, Process Name ( PID), ThreadID, IrpPtr, ByteOffset, IOSize, ElapsedTime, "
            "DiskNum, IrpFlags, DiskSvcTime, I/O Pri, VolSnap, FileObject, FileName\nEndHeader\n")
    return head + "".join(
        f"{'DiskWrite' if w else 'DiskRead'}, {1000 + t}, sqlservr.exe (1234), 17, 0xfffffadf3c0d5010, 0x{off:016x}, "
        f"0x{n:08x}, 120, {dev}, 0x00060043, 100, Normal, 0x0, 0xfffffadf3c0d5010, \"D:\\data.mdf\"\n"
        f"FileIoRead, {1000 + t}, sqlservr.exe (1234), 17, 0x0\n" for t, dev, w, off, n in recs)


def test_cloud_and_snia_layouts_detected_and_counted(tmp_path, small_toml):
    # (t in us, device, write?, offset, bytes): 1000 requests, 4 KiB multiples within 256 MiB.
    recs = [(i * 1000, i % 3, i % 4 == 0, (i * 7919 % 60000) * 4096, 4096 * (1 + i % 3)) for i in range(1000)]
    writes = sum(1 for r in recs if r[2])
    written = sum(r[4] for r in recs if r[2])
    d = Drive.from_toml(small_toml)
    for name, text, fmt in (("ali.csv", _alibaba(recs), "alibaba"), ("cbs.csv", _tencent(recs), "tencent"),
                            ("fiu.blkparse", _fiu(recs), "fiu"), ("prod.csv", _msprod(recs), "msprod")):
        path = write(tmp_path, name, text)
        s = d.replay(path).summary
        assert s["format"] == fmt and s["requests"] == 1000, name
        assert (s["write"]["ios"], s["write"]["bytes"]) == (writes, written), name
        st = trace_stats([path])["stats"]
        assert (st["requests"], st["write"]["requests"], st["write"]["bytes"]) == (1000, writes, written)
        assert st["devices"] == ([(8 << 20) | k for k in range(3)] if fmt == "fiu" else [0, 1, 2])
    # A layout no reader knows, mapped by columns.
    mine = write(tmp_path, "mine.txt", "".join(f"{t};{'write' if w else 'read'};{off // 4096};{n // 4096}\n"
                                              for t, _, w, off, n in recs))
    s = d.replay(mine, columns="time=0:us,op=1,offset=2:4k,size=3:4k,sep=semicolon").summary
    assert (s["format"], s["write"]["bytes"]) == ("columns", written)
    p = run_cli("replay", "--drive", "crucial-m500-120", mine, "--columns", "time=0:us,op=1,offset=2")
    assert p.returncode == 2 and "'size' is missing" in p.stderr


def _blktrace_record(seq, t, sector, nbytes, action, device, cpu):
    return struct.pack("<IIQQIIIIIHH", 0x65617407, seq, t, sector, nbytes, action, 4242, device, cpu, 0, 0)


def test_blktrace_binary_files_are_read_directly(tmp_path, small_toml):
    # include/uapi/linux/blktrace_api.h: Q=1, REQUEUE=6, ISSUE=7, COMPLETE=8; category bits << 16:
    # READ 1<<0, WRITE 1<<1. Per-CPU files sdb.blktrace.0 and .1; device 8,16.
    dev = (8 << 20) | 16
    write_act, read_act = 2 << 16, 1 << 16
    cpu0 = b"".join(_blktrace_record(i, 1000 * i, 2048 + 8 * i, 4096, 7 | write_act, dev, 0) for i in range(50))
    cpu1 = b"".join(_blktrace_record(i, 1000 * i + 500, 9000 + 16 * i, 8192, 7 | read_act, dev, 1) for i in range(50))
    cpu1 += b"".join(_blktrace_record(100 + i, 900_000 + i, 2048 + 8 * i, 4096, 8 | write_act, dev, 1) for i in range(50))
    cpu1 += b"".join(_blktrace_record(200 + i, 950_000 + i, 9000 + 16 * i, 8192, 8 | read_act, dev, 1) for i in range(50))
    write(tmp_path, "sdb.blktrace.0", cpu0)
    write(tmp_path, "sdb.blktrace.1", cpu1)
    d = Drive.from_toml(small_toml)
    s = d.replay(tmp_path / "sdb.blktrace.0").summary
    assert s["format"] == "blktrace" and (s["read"]["ios"], s["write"]["ios"]) == (50, 50)
    st = trace_stats([tmp_path / "sdb.blktrace.0"])["stats"]
    assert st["with_service_time"] == 100 and st["recorded_qd_max"] == 100
    s = d.replay(tmp_path / "sdb.blktrace.0", "qd").summary  # closed loop at the recorded depth
    assert s["requests"] == 100


def test_trace_stats_cli(tmp_path):
    # 2000 requests: 4 KiB sequential reads and 64 KiB random writes.
    lines = ["Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime"]
    lines += [f"{128166372000000000 + i * 1000},hm,0,{'Write' if i % 4 == 3 else 'Read'},"
              f"{(i * 4096) if i % 4 != 3 else (i * 7919 % 9000) * 65536},{65536 if i % 4 == 3 else 4096},50"
              for i in range(2000)]
    trace = write(tmp_path, "s.csv", "\n".join(lines) + "\n")
    p = run_cli("trace", "stats", trace, "--json")
    assert p.returncode == 0, p.stderr
    s = json.loads(p.stdout)["stats"]
    assert (s["read"]["requests"], s["write"]["requests"], s["write"]["bytes"]) == (1500, 500, 500 * 65536)
    assert s["sizes"][0] == {"size_bytes": 4096, "requests": 1500, "pct": 75.0}
    assert s["span_s"] == pytest.approx(1999 * 1e-4)
    assert s["interarrival_us_p50"] == pytest.approx(100, rel=1 / 16)
    assert s["recorded_qd_max"] == 1 and s["recorded_qd1_pct"] == 100.0
    p = run_cli("trace", "stats", trace)
    assert p.returncode == 0 and "recorded QD" in p.stdout and "4K 75%" in p.stdout
    p = run_cli("trace", "stats", tmp_path / "missing.csv")
    assert p.returncode == 2 and "cannot open" in p.stderr
    # Issue 25, item 22: nothing to describe is an error, with the reason (exit 0 before).
    header = write(tmp_path, "h.csv", lines[0] + "\n")
    p = run_cli("trace", "stats", header)
    assert p.returncode == 2 and "no requests to describe" in p.stderr and "header only" in p.stderr, p.stderr
    bad = write(tmp_path, "b.csv", lines[0] + "\n" + "x,hm,0,Read,zz,4096,1\n" * 3)
    p = run_cli("trace", "stats", bad, "--format", "msr", "--skip-bad-lines")
    assert p.returncode == 2 and "every one of its 3 request lines was malformed" in p.stderr, p.stderr
    assert "Traceback" not in p.stderr


def test_trace_stats_compares_a_look_alike_with_the_published_figures(tmp_path):
    log = tmp_path / "heavy.iolog"
    assert run_cli("synth-trace", "heavy-2011", "--out", log, "--fraction", "0.005").returncode == 0
    p = run_cli("trace", "stats", log, "--compare", "heavy-2011")
    assert p.returncode == 0, p.stderr
    rows = {line[:28].strip(): line[28:].split() for line in p.stdout.splitlines()[-9:] if line.startswith("  ")}
    mine, published = map(float, rows["sequential % (same kind)"])
    assert published == 42.0 and abs(mine - published) < 3
    mine, published = map(float, rows["4K share %"])
    assert abs(mine - published) < 2


def test_trims_are_apart_from_write_amplification(tmp_path):
    """Issue 25 item 23: fio's t0038 iolog trims 2 GiB before each 4 KiB write; on a filled
    drive the trims' map journalling had counted as the writes' amplification (206.4)."""
    lines = ["fio version 3 iolog", "30 /dev/null add", "40 /dev/null open"]
    for i in range(10):
        lines += [f"{50 + 4 * i} /dev/null trim {i * 4096} 2147483648", f"{52 + 4 * i} /dev/null write {i * 4096} 4096"]
    (tmp_path / "t.iolog").write_text("\n".join(lines) + "\n")
    d = ssdlab.Drive.preset("crucial-m500-120")
    d.precondition("fast-fill")
    s = d.replay(tmp_path / "t.iolog").summary
    assert s["trim_requests"] == 10 and s["write"]["ios"] == 10
    assert s["trim_map_pages"] > 100  # 20 GiB of mapped units unmapped: the journal pages they took
    assert 1.0 <= s["write_amplification"] < 3.0, s["write_amplification"]


def test_fio_v2_wait_lines_say_which_meaning_is_used(tmp_path):
    """Issue 25 item 23: fio's replay reads 'wait N' as N ms since the start; its manual as N us
    after the previous wait. Both offered, the one used stated."""
    text = "fio version 2 iolog\n/dev/x add\n/dev/x open\n/dev/x write 0 4096\n/dev/x wait 500\n" \
           "/dev/x write 4096 4096\n/dev/x wait 500\n/dev/x write 8192 4096\n"
    (tmp_path / "v2.log").write_text(text)
    spans = {}
    for meaning in ("absolute", "relative"):
        st = ssdlab.trace_stats([str(tmp_path / "v2.log")], fio_wait=meaning)
        assert any("'wait' lines (2)" in n and ("milliseconds since" if meaning == "absolute" else "microseconds after")
                   in n.split("(fio")[0] for n in st["notes"]), st["notes"]
        spans[meaning] = st["stats"]["span_s"]
    # Absolute: both waits say "500 ms after the start"; relative: 500 us, then 500 us more.
    assert spans["absolute"] == pytest.approx(0.5) and spans["relative"] == pytest.approx(0.001)
    # One file as a plain string or path, as Drive.replay takes it (issue 73 item 11: a string
    # was read as a list of one-character paths).
    for one in (str(tmp_path / "v2.log"), tmp_path / "v2.log"):
        assert ssdlab.trace_stats(one)["stats"] == ssdlab.trace_stats([one])["stats"]


def test_arrivals_recorded_before_the_first_request_are_kept(tmp_path):
    """Issue 25 item 19: a trace whose first line is its latest (as a Tencent sample): the
    per-request log keeps each recorded arrival (negative before the first) and timed mode
    keeps the gaps after the step back instead of sending everything at once."""
    lines = ["fio version 3 iolog", "0 /dev/x add", "0 /dev/x open", "9000000 /dev/x read 0 4096"]
    lines += [f"{1_000_000 * k} /dev/x read {k * 1048576} 4096" for k in range(1, 4)]
    (tmp_path / "t.iolog").write_text("\n".join(lines) + "\n")
    d = ssdlab.Drive.preset("crucial-m4-128")
    d.precondition("fast-fill")
    r = d.replay(tmp_path / "t.iolog", mode="timed", per_request=tmp_path / "req.parquet")
    rows = pq.read_table(tmp_path / "req.parquet").to_pandas().sort_values("arrival_us")
    arrivals = rows.arrival_us.to_list()
    assert arrivals[-1] == 0 and all(a < 0 for a in arrivals[:3]), arrivals
    submits = rows.submit_us.to_list()[:3]
    gap = arrivals[1] - arrivals[0]
    assert gap > 0 and submits[1] - submits[0] == pytest.approx(gap, rel=0.01), (submits, arrivals)
    assert any("restarts its clock" in n for n in r.summary["notes"])


def test_files_whose_clocks_start_centuries_apart_are_refused_in_timed_mode_and_can_be_aligned(tmp_path):
    """Issue 25 item 21: a DiskSim trace near 0 merged with one far out (an MSR trace's Windows
    ticks) spanned 406 years and a timed replay never progressed."""
    far = 400 * 365 * 86_400 * 1000  # ms
    (tmp_path / "near.txt").write_text("".join(f"{k}.0 0 {k * 8} 8 1\n" for k in range(3)))
    (tmp_path / "far.txt").write_text("".join(f"{far + k}.0 0 {1000 + k * 8} 8 1\n" for k in range(3)))
    files = [tmp_path / "near.txt", tmp_path / "far.txt"]
    d = ssdlab.Drive.preset("crucial-m4-128")
    with pytest.raises(SsdlabError, match=r"days apart .*--align-starts"):
        d.replay(files, mode="timed", format="disksim", time_unit="ms")
    r = d.replay(files, mode="timed", format="disksim", time_unit="ms", align_starts=True)
    assert r.summary["requests"] == 6 and r.summary["elapsed_s"] < 1.0
    assert any("own first request" in n for n in r.summary["notes"])
    afap = d.replay(files, format="disksim", time_unit="ms")
    assert any("days apart" in n for n in afap.summary["notes"])
