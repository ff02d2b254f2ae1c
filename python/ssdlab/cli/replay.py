"""`ssdlab replay` and `ssdlab trace stats`: block traces on a drive, and what a trace holds."""

from __future__ import annotations

import argparse
import json
import sys

from ..drive import FAULTS_HELP, LINK_POLICIES, Drive, device_label, format_faults
from ..errors import SsdlabError
from ..traces import trace_stats
from .common import FAULTS_SPEC, SEED, add_precondition, in_range, out_dir, positive, power_line

FORMATS = ("msr, spc, blkparse, blktrace (binary, per-CPU files read together), fio-iolog, disksim, "
           "alibaba, tencent, fiu, msprod")
COLUMNS_HELP = ("map the columns of any other delimited trace: time=COL[:ns|us|ms|s|ticks],op=COL[:READ/WRITE[/TRIM]],"
                "offset=COL[:bytes|sectors|kib|4k],size=COL[:unit][,device=COL][,service=COL:unit][,pid=COL]"
                "[,sep=comma|space|tab|semicolon][,skip=N]; columns count from 0; pid: each write's FDP placement "
                "identifier (a drive without [placement] takes the default FDP configuration); "
                "e.g. time=0:us,op=3:0/1,offset=1:sectors,size=2:sectors")


def _print_notes(notes: list[str]) -> None:
    for n in notes:
        print(f"ssdlab: note: {n}", file=sys.stderr)


def _replay(args: argparse.Namespace) -> int:
    # A trace whose writes carry placement identifiers asks for FDP, as an FDP job does.
    pids = bool(args.columns) and any(p.split("=")[0].strip() == "pid" for p in args.columns.split(","))
    drive = Drive.open(args.drive, seed=args.seed or 0, faults=args.faults, placement="fdp" if pids else None)
    out_dir(args.out)
    unit = args.time_unit if args.time_unit is not None else args.time_unit_ns
    if args.precondition != "none":
        drive.precondition(args.precondition, progress=not args.quiet, drive_writes=args.precondition_drive_writes)
    as_json = args.output_format in ("json", "json+")
    drive.set_link_power(args.link_power)
    r = drive.replay(
        args.trace, args.mode, format=args.format, columns=args.columns, scale=args.scale, qd=args.qd,
        device=args.device, wrap=args.wrap, skip_bad_lines=args.skip_bad_lines, time_unit=unit,
        sort=args.sort, blkparse_arrivals=args.blkparse_arrivals, per_request=args.per_request,
        progress=not (args.quiet or as_json), fio_wait=args.fio_wait, align_starts=args.align_starts,
    )
    s = r.summary
    _print_notes(s["notes"])
    refused = (s.get("zones") or {}).get("counters", {}).get("refused", 0)
    if refused:
        _print_notes([f"{refused:,} commands refused by the zoned namespace (writes off a write pointer, across a "
                      "zone's end, or beyond the namespace; a trace not written for zones)"])
    name = " + ".join(args.trace)
    if as_json:
        from ..fio_json import fio_output, fio_replay_job
        if args.out:
            r.write(args.out)
        print(json.dumps(fio_output([fio_replay_job(r, name, drive.name, args.output_format == "json+")]), indent=2))
        return 0
    waf = (f"write amplification {s['write_amplification']:.2f} (after a final flush of {s['final_flush_s'] * 1e3:.2f} ms)"
           if s["write"]["ios"] else "no writes")
    if s.get("trim_map_pages"):
        waf += f"; the trims' map journalling took {s['trim_map_pages']:,} NAND pages (not counted in it)"
    print(f"replay of {name} ({s['format']}, mode {s['mode']}) on {drive.name}: {s['requests']:,} requests, "
          f"{s['elapsed_s']:.3f} simulated s, {waf}")
    for key, label in (("bad_lines_skipped", "malformed lines skipped"),
                       ("other_devices_skipped", "requests of other devices skipped"),
                       ("requests_wrapped", "requests wrapped onto the drive")):
        if s[key]:
            print(f"  {s[key]:,} {label}")
    faults = format_faults(s["faults"])
    if faults:
        print(faults)
    if power_line(s):
        print(power_line(s))
    table = r.table()
    table["requests"] = table["requests"].astype(int)
    print(table.to_string(float_format=lambda x: f"{x:,.1f}", formatters={"requests": "{:,}".format}))
    if args.per_request:
        print(f"wrote {s['requests']:,} rows to {args.per_request}")
    if args.out:
        paths = r.write(args.out)
        print(f"wrote {', '.join(str(p) for p in paths)}")
    return 0


def _size(b: float) -> str:
    for unit, k in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if b >= k:
            return f"{b / k:,.2f} {unit}"
    return f"{b:,.0f} B"


def _stats(args: argparse.Namespace) -> int:
    out = trace_stats(args.trace, format=args.format, columns=args.columns, device=args.device,
                      skip_bad_lines=args.skip_bad_lines, time_unit=args.time_unit,
                      blkparse_arrivals=args.blkparse_arrivals, fio_wait=args.fio_wait, align_starts=args.align_starts)
    _print_notes(out["notes"])
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    s = out["stats"]
    if s["requests"] == 0:
        raise SsdlabError(f"{' + '.join(args.trace)}: no requests in the trace")
    print(f"{' + '.join(args.trace)} ({', '.join(out['formats'])})")
    rows = [
        ("requests", f"{s['requests']:,}"),
        ("reads", f"{s['read']['requests']:,} ({_size(s['read']['bytes'])})"),
        ("writes", f"{s['write']['requests']:,} ({_size(s['write']['bytes'])})"),
        ("trims", f"{s['trim']['requests']:,} ({_size(s['trim']['bytes'])} trimmed)"),
        ("read share", f"{s['read_pct']:.1f}% of reads and writes"),
        ("sizes", ", ".join(f"{x['size_bytes'] // 1024 if x['size_bytes'] % 1024 == 0 else x['size_bytes']}"
                           f"{'K' if x['size_bytes'] % 1024 == 0 else ' B'} {x['pct']:.0f}%" for x in s["sizes"][:6])),
        ("mean size", f"{s['size_bytes_mean'] / 1024:,.1f} KiB"),
        ("sequential", f"{s['sequential_pct']:.1f}% start where the device's previous request ended"),
        ("time span", f"{s['span_s']:,.3f} s from {s['first_arrival_s']:,.6f} s"),
        ("inter-arrival", f"mean {s['interarrival_us_mean']:,.1f} us, p50 {s['interarrival_us_p50']:,.1f} us, "
                          f"p99 {s['interarrival_us_p99']:,.1f} us"),
        ("out of order", f"{s['out_of_order']:,} requests arrive earlier than the latest arrival above them"),
    ]
    if s["recorded_qd_mean"] is not None:
        rows += [("recorded QD", f"mean {s['recorded_qd_mean']:.2f}, max {s['recorded_qd_max']}, "
                                 f"{s['recorded_qd1_pct']:.0f}% of IOs at QD 1 ({s['with_service_time']:,} with service times)"),
                 ("recorded service", f"mean {s['service_us_mean']:,.1f} us")]
    else:
        rows.append(("recorded QD", "unknown (no service times in this format)"))
    rows += [
        ("LBA span", f"bytes {s['lba_first_byte']:,} to {s['lba_end_byte']:,} ({_size(s['lba_end_byte'] - s['lba_first_byte'])})"),
        ("footprint", f"{_size(s['footprint_bytes'])} touched, {_size(s['write_footprint_bytes'])} written"),
        ("devices", ", ".join(map(device_label, s["devices"][:12]))
         + (" ..." if len(s["devices"]) > 12 else "")),
    ]
    if out["bad_lines_skipped"]:
        rows.append(("malformed lines", f"{out['bad_lines_skipped']:,} skipped"))
    width = max(len(k) for k, _ in rows)
    for k, v in rows:
        print(f"  {k:<{width}}  {v}")
    if args.compare:
        _compare(s, args.compare)
    return 0


def _compare(s: dict, name: str) -> None:
    """The trace beside a review trace's published statistics (methodology.md, section 7)."""
    from ..synth import TRACES

    p = TRACES[name]
    data = s["read"]["requests"] + s["write"]["requests"]
    share = {x["size_bytes"]: x["pct"] for x in s["sizes"]}
    rows = [("read share %", s["read_pct"], 100 * p.reads / (p.reads + p.writes))]
    for size, pub in p.size_mix.items():
        rows.append((f"{size // 1024}K share %", share.get(size, 0.0), 100 * pub))
    if p.gb_read and s["read"]["requests"]:
        rows.append(("mean read KiB", s["read"]["bytes"] / s["read"]["requests"] / 1024, p.gb_read * 1e9 / p.reads / 1024))
    if p.gb_written and s["write"]["requests"]:
        rows.append(("mean write KiB", s["write"]["bytes"] / s["write"]["requests"] / 1024,
                     p.gb_written * 1e9 / p.writes / 1024))
    rows.append(("sequential % (same kind)", s["sequential_same_op_pct"], 100 * p.sequential_share))
    if s["recorded_qd_mean"] is not None:
        rows += [("mean QD", s["recorded_qd_mean"], p.mean_qd), ("QD 1 %", s["recorded_qd1_pct"], 100 * p.qd1_share)]
    print(f"\nbeside {name} ({p.source}; {data:,} reads and writes here, {p.reads + p.writes:,} there):")
    print(f"  {'':<26}{'this trace':>12}{'published':>12}")
    for label, mine, pub in rows:
        print(f"  {label:<26}{mine:>12.2f}{pub:>12.2f}")


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--format", help=f"{FORMATS} (default: detected)")
    p.add_argument("--columns", metavar="MAP", help=COLUMNS_HELP)
    p.add_argument("--device", help="only this disk/device/ASU/volume number, or MAJ,MIN as blkparse prints it (e.g. 8,16)")
    p.add_argument("--skip-bad-lines", action="store_true", help="count and skip malformed lines instead of stopping")
    p.add_argument("--time-unit", choices=("ns", "us", "ms", "s"),
                   help="DiskSim/MQSim arrival unit (default: ms if the times have decimals, as DiskSim's do; ns if integers, as MQSim's; stated in a note)")
    p.add_argument("--blkparse-arrivals", default="D", choices=("D", "Q"), help="blkparse/blktrace events used as arrivals")
    p.add_argument("--fio-wait", default="absolute", choices=("absolute", "relative"),
                   help="fio v2 iolog 'wait N': absolute = N ms since the job started, as fio's replay reads it "
                        "(default); relative = N us after the previous wait, as fio's manual says")
    p.add_argument("--align-starts", action="store_true",
                   help="several files: count each one's arrivals from its own first request (files whose clocks "
                        "start at different origins, e.g. a DiskSim trace near 0 and an MSR trace in Windows ticks)")


def add_parsers(sub) -> None:
    t = sub.add_parser("replay", help="replay block traces on a drive, with storage-bench metrics",
                       description="Replay block traces (MSR Cambridge CSV, UMass/SPC, blkparse text or blktrace binary, "
                                   "fio iolog v2/v3, DiskSim/MQSim ASCII, Alibaba, Tencent CBS, FIU, MS Production Server, "
                                   "or any CSV through --columns; plain, gzip, bzip2, xz or zstd). Several files are merged in "
                                   "time order. Reads, writes and trims are reported apart; the write amplification is taken "
                                   "after a final flush.")
    t.add_argument("trace", nargs="+", help="trace files (merged in time order; compressed files are read as they are)")
    t.add_argument("--drive", required=True, help="preset name or drive .toml")
    _common(t)
    t.add_argument("--time-unit-ns", type=positive("--time-unit-ns"), help=argparse.SUPPRESS)
    t.add_argument("--mode", default="afap", choices=("afap", "timed", "qd"),
                   help="afap (idle removed, default), timed (recorded arrivals), qd (closed loop)")
    t.add_argument("--scale", type=positive("--scale"), default=1.0, help="timed mode: multiply recorded gaps by this")
    t.add_argument("--qd", type=in_range("--qd", 0, 2**32 - 1), default=0,
                   help="qd mode: requests kept outstanding (default: the depth the trace recorded; needs service times, as in MSR, blkparse and blktrace traces); afap mode: the most the host has outstanding (a request waits for a completion, the recorded gaps after it count from then; default 0: no bound)")
    t.add_argument("--sort", action="store_true",
                   help="read the whole trace and replay it in time order (default: file order; a note says when timestamps go backwards)")
    t.add_argument("--wrap", action="store_true", help="fold requests past the end of the drive onto it (default: stop with an error)")
    t.add_argument("--per-request", metavar="FILE.parquet",
                   help="one row per request: arrival_us (recorded), submit_us, complete_us, offset_bytes, length_bytes, op, latency_us (streamed)")
    t.add_argument("--link-power", default="none", choices=LINK_POLICIES,
                   help="the host's link power management during the replay (a drive with a power model sleeps its link in idle gaps; timed mode)")
    add_precondition(t, "the replay")
    t.add_argument("--seed", type=SEED)
    t.add_argument("--faults", metavar="SPEC", type=FAULTS_SPEC, help=FAULTS_HELP)
    t.add_argument("--output-format", "--output_format", default="normal", choices=("normal", "json", "json+"),
                   help="json: print only fio's JSON output (the replay as one job: reads and writes with their service times)")
    t.add_argument("--out", help="directory for replay-summary.json and replay-timeseries.parquet")
    t.add_argument("--quiet", action="store_true")
    t.set_defaults(func=_replay)
    tr = sub.add_parser("trace", help="look at block traces before replaying them",
                        description="Tools for block traces.")
    tsub = tr.add_subparsers(dest="trace_command", required=True)
    st = tsub.add_parser("stats", help="counts, bytes, size mix, sequentiality, inter-arrival, recorded queue depth, spans and footprint",
                         description="What a trace holds: the figures review methodologies quote for their traces (reads, writes, "
                                     "GB read and written, size mix, % sequential, mean QD and % at QD 1), time span, LBA span "
                                     "and footprint. Several files are merged in time order.")
    st.add_argument("trace", nargs="+", help="trace files (merged in time order; compressed files are read as they are)")
    _common(st)
    st.add_argument("--json", action="store_true", help="print the figures as JSON")
    from ..synth import TRACES

    st.add_argument("--compare", choices=sorted(TRACES),
                    help="print the trace beside a review trace's published statistics (to check a look-alike)")
    st.set_defaults(func=_stats)
