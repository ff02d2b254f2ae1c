"""`ssdlab drives`, `ssdlab run`, `ssdlab synth-trace`: list drives, run jobs, write look-alike traces."""

from __future__ import annotations

import argparse
import math
import sys

from .. import fio_logs
from ..drive import FAULTS_HELP, Drive, Result, describe_preset, format_faults, preset_names
from ..errors import SsdlabError
from .._job_table import ROWS
from ..job import _IGNORED, _OPTIONS, PARSER_OPTIONS, READERS, FioOrigin, Job, _apply, expand_clones, job_error, schedule
from .common import FAULTS_SPEC, SEED, add_precondition, not_empty, out_dir, power_line


def _drives(args: argparse.Namespace) -> int:
    if args.name:
        # One preset's TOML, to copy and edit (presets live inside the installed package).
        from ..drive import preset_path
        text = preset_path(args.name).read_text()
        if args.toml:
            sys.stdout.write(text)
            return 0
        rows = [describe_preset(args.name)]
    elif args.toml:
        raise SsdlabError("--toml needs a drive name, e.g. `ssdlab drives crucial-m500-960 --toml > my-drive.toml`")
    else:
        rows = [describe_preset(name) for name in preset_names()]
    header = f"{'drive':<22} {'controller':<18} {'host':<5} {'dies':>4} {'ch':>3} {'raw GiB':>8} {'user GB':>8} {'RAIN':>6} {'OP/user':>8} {'OP/raw':>7} {'GC spare':>9}"
    print(header)
    print("-" * len(header))
    for r in rows:
        print(f"{r['name']:<22} {r['controller']:<18} {r['interface']:<5} {r['dies']:>4} {r['channels']:>3} "
              f"{r['raw_gib']:>8.0f} {r['user_gb']:>8.1f} {r['rain']:>6} {r['op_of_user_pct']:>7.1f}% {r['op_of_raw_pct']:>6.1f}% {r['gc_spare_of_user_pct']:>8.1f}%")
    return 0


def _job_from_args(args: argparse.Namespace) -> list[Job]:
    if args.jobfile:
        jobs = Job.from_fio(args.jobfile)
    else:
        # fio's default rw is read, as Job's; the job is named after the rw it ends with.
        jobs = [Job(name=args.name or "read", rw="read")]
        jobs[0].origin = FioOrigin(given={"name": jobs[0].name})
    if args.jobfile and args.name:
        raise SsdlabError("--name names the job made from the command line; a job file names its jobs by their [sections]")
    # The table's flags given (text as written, checked by argparse), read as their fields'
    # kinds; and, for fio's JSON "job options", in fio's names and spelling.
    flags = [(row, getattr(args, _dest(row))) for row in ROWS if row.flag and getattr(args, _dest(row)) is not None]
    values = {row.name: READERS[row.kind](text) for row, text in flags}
    given = {_fio_name(row): _as_given(row, text, values[row.name]) for row, text in flags}
    where = {row.name: row.flag for row, _ in flags}
    if args.seed is not None:  # the run's root seed: the drive's and the job's streams'
        values["randseed"], given["randseed"], where["randseed"] = args.seed, str(args.seed), "--seed"
    options = _fio_options(getattr(args, "fio_options", []))
    for job in jobs:
        for key, value in options:
            _apply(job, key, value, "command line")
            if job.origin is not None:
                job.origin.given[key] = "" if value is None else value
        for name, value in values.items():
            setattr(job, name, value)
        if job.origin is not None:
            job.origin.where.update(where)
            job.origin.given.update(given)
        if "runtime_s" in values:
            job.time_based = True  # --runtime runs for that long, as README's examples expect
    if not args.jobfile and not args.name:
        jobs[0].name = jobs[0].origin.given["name"] = jobs[0].rw  # --rw or --readwrite, as given
    return jobs


def _dest(row) -> str:
    return f"job_{row.name}"


def _fio_name(row) -> str:
    """The field's name in fio's JSON "job options": its first fio spelling."""
    return row.spellings[0][0] if row.spellings else row.name


def _as_given(row, text: str, value) -> str:
    """A flag's value as fio would have been given it (under `_fio_name`)."""
    if row.kind == "flag":
        return ""
    if row.spellings and row.spellings[0][1] == "log_avg_msec":
        return str(round(value * 1000))
    return text


def _checked(flag: str, kind: str):
    """An argparse type: the text as given once the field's reader accepts it, with a clear error."""
    def parse(text: str) -> str:
        try:
            READERS[kind](text)
        except ValueError as e:
            raise argparse.ArgumentTypeError(f"{flag} {text}: {e}") from None
        return text
    return parse


def _add_job_flags(r: argparse.ArgumentParser) -> None:
    """The job table's flags (a row's `flag`), each also with fio's underscores (--ramp_time)."""
    for row in ROWS:
        if not row.flag:
            continue
        names = list(dict.fromkeys((row.flag, "--" + row.flag[2:].replace("-", "_"))))
        first = row.doc.split(". ")[0].rstrip(".")
        if row.kind == "flag":
            r.add_argument(*names, dest=_dest(row), action="store_const", const="1", help=first.replace("%", "%%"))
            continue
        # The doc's first sentence when short, then what is accepted (--help stays scannable).
        help_text = (f"{first}; accepted: " if len(first) <= 70 else "") + row.accepted + (f" ({row.unit})" if row.unit else "")
        metavar = {"seconds": "TIME", "count": "N", "whole": "N"}.get(row.kind, row.name.upper())
        r.add_argument(*names, dest=_dest(row), type=_checked(row.flag, row.kind), metavar=metavar,
                       help=help_text.replace("%", "%%"))


# fio's options that take no value (FIO_OPT_STR_SET in its options.c, getopt's optional_argument:
# a following word is never theirs); every other fio option takes one (`--direct 1`, `--bs 4k`).
_FIO_FLAGS = {"bs_unaligned", "norandommap", "time_based", "verify_only", "exitall", "exitall_on_error",
              "stonewall", "wait_for_previous", "new_group", "thread", "group_reporting", "zero_buffers",
              "refill_buffers"}


# fio's command-line options for its progress line (not job options): accepted and ignored.
_FIO_DISPLAY = {"eta", "eta_newline", "eta_interval"}


def _is_flag(key: str) -> bool:
    """A fio option that takes no value, so `--KEY WORD` leaves WORD (a job file) alone."""
    return key.replace("-", "_") in _FIO_FLAGS


def _fio_values_joined(argv: list[str], known: set[str]) -> list[str]:
    """fio's command line as getopt reads it: `--KEY VALUE` joined as `--KEY=VALUE` for an option
    of fio's that takes a value and is not one of `ssdlab run`'s own (`known`), so argparse does
    not take VALUE for the job file; a flag (`--group_reporting job.fio`) keeps its next word."""
    out: list[str] = []
    i = 0
    while i < len(argv):
        a = argv[i]
        if (a.startswith("--") and "=" not in a and a not in known and i + 1 < len(argv)
                and not argv[i + 1].startswith("-") and not _is_flag(a[2:])):
            out.append(f"{a}={argv[i + 1]}")
            i += 2
            continue
        out.append(a)
        i += 1
    return out


def _fio_options(extra: list[str]) -> list[tuple[str, str | None]]:
    """fio options given on the command line beyond ssdlab's own flags: --key=value, --key value
    or --key (a flag); anything else is a clear error."""
    out: list[tuple[str, str | None]] = []
    i = 0
    while i < len(extra):
        item = extra[i]
        if not item.startswith("--") or len(item) < 3:
            raise SsdlabError(f"command line: '{item}' is not an option; accepted: fio options as --name=value")
        key, sep, value = item[2:].partition("=")
        if not sep and i + 1 < len(extra) and not extra[i + 1].startswith("--") and not _is_flag(key):
            value, sep, i = extra[i + 1], "=", i + 1
        if key.replace("-", "_") in _FIO_DISPLAY:
            i += 1  # fio's own progress display: ssdlab shows its own
            continue
        known = key.replace("-", "_")
        out.append((known if known in _OPTIONS or known in _IGNORED else key, value if sep else None))
        i += 1
    return out


def _chart(result: Result, rows: int = 24, width: int = 50, column: str = "write_iops") -> str:
    """Per-second IOPS as a text chart (log scale): one row per time slice, the bar at the
    slice's mean, '|' marks its min and max. Empty for fewer than two intervals or no IO.
    Built from the series' lists (`Result.rates`): numpy and pandas stay unloaded."""
    time_s, values = result.rates(column)
    if len(values) < 2 or max(values) <= 0:
        return ""
    n = len(values)
    rows = min(rows, n)
    top = math.log10(max(max(values), 10))
    bottom = max(top - 3, 0)
    def pos(v):
        if v <= 0:
            return 0
        return int(round((min(max(math.log10(v), bottom), top) - bottom) / (top - bottom) * (width - 1)))
    lines = [f"{column.replace('_', ' ')} per {time_s[0]:g} s (log scale, {10**bottom:,.0f} .. {10**top:,.0f}); bar = mean, | = min and max of the slice"]
    for r in range(rows):
        a, b = r * n // rows, (r + 1) * n // rows
        chunk = values[a:b]
        lo, hi, mean = min(chunk), max(chunk), math.fsum(chunk) / len(chunk)
        line = [" "] * width
        for i in range(pos(mean) + 1):
            line[i] = "#"
        line[pos(lo)] = "|"
        line[pos(hi)] = "|"
        t0, t1 = time_s[a] - time_s[0], time_s[b - 1]
        lines.append(f"{t0:7.0f}-{t1:<7.0f}s {''.join(line)} {mean:>10,.0f}")
    return "\n".join(lines)


def _group_line(results: list[Result]) -> str:
    """fio's "Run status group" line for jobs run together: each direction's bytes of every job
    over the span from the first start to the last end (per-job MB/s of concurrent jobs on one
    drive do not add up to the drive's)."""
    spans = [r.summary["run"].get("span_s", [0.0, r.summary["elapsed_s"]]) for r in results]
    t0, t1 = min(s[0] for s in spans), max(s[1] for s in spans)
    span = max(t1 - t0, 1e-12)
    parts = []
    for op in ("read", "write", "trim"):
        b = sum(r.summary[op]["mb_per_s"] * r.summary["elapsed_s"] for r in results)
        if b > 0:
            parts.append(f"{op.upper()}: {b / span:.1f} MB/s ({b:,.1f} MB)")
    return f"group: {len(results)} jobs over {span:.2f} simulated s: " + ", ".join(parts)


def _print_summary(result: Result) -> None:
    s = result.summary
    if s.get("latency_target"):
        lt = s["latency_target"]
        print(f"latency target: {lt['percentile']:g}% of IOs within {lt['target_us']:,.0f} us "
              f"{'met up to' if lt['met'] else 'not met even at'} iodepth {lt['depth']} "
              f"({len(lt['probes'])} windows of {lt['window_s']:g} s)")
    together = s.get("run", {}).get("ran_with")
    print(f"job {s['name']}: {s['elapsed_s']:.2f} simulated s" + (f" (at once with {', '.join(together)})" if together else ""))
    for op in ("read", "write", "trim"):
        o = s[op]
        if o["ios"] == 0:
            continue
        print(f"  {op:<5} {o['ios']:>12,} IOs  {o['iops']:>10,.0f} IOPS  {o['mb_per_s']:>8.1f} MB/s  "
              f"lat us: mean {o['latency_us_mean']:.1f}  p50 {o['latency_us_p50']:.1f}  p90 {o['latency_us_p90']:.1f}  "
              f"p99 {o['latency_us_p99']:.1f}  p99.9 {o['latency_us_p99_9']:.1f}  p99.99 {o['latency_us_p99_99']:.1f}  max {o['latency_us_max']:.1f}")
    if s["host_units_written"]:
        print(f"  write amplification {s['write_amplification']:.2f}  (GC copied {s['gc_units_copied']:,} units, {s['blocks_erased']:,} blocks erased)")
    if power_line(s):
        print(power_line(s))
    if "placement" in s:
        print(placement_line(s["placement"]))
    if "zones" in s:
        print(zones_line(s["zones"]))
    faults = format_faults(s.get("faults", {}))
    if faults:
        print(faults)
    if s.get("error"):
        print(f"  error: {s['error']} (the job stopped there, as fio's does)")


def placement_line(p: dict) -> str:
    """FDP's statistics log in a line: the drive's write amplification since it was made, each
    handle's host MB written and write amplification, and the events by kind."""
    st = p["statistics"]
    handles = ", ".join(f"{i}: {h['host_bytes_written'] / 1e6:,.1f} MB x{h['write_amplification']:.2f}"
                        for i, h in enumerate(p["handles"]) if h["host_bytes_written"])
    events = ", ".join(f"{kind} {n:,}" for kind, n in p["event_counts"] if n)
    return (f"  FDP (the drive's, since it was made): media/host bytes written {st['write_amplification']:.2f}; "
            f"handles {handles or 'none written'}; events {events or 'none'}")


def zones_line(z: dict) -> str:
    """A zoned namespace at a job's end in a line: zones by state, what the zones did since the
    drive was made."""
    states = ", ".join(f"{n:,} {k.replace('_', ' ')}" for k in ("empty", "implicitly_opened", "explicitly_opened",
                                                             "closed", "full") if (n := z[k]))
    c = z["counters"]
    return (f"  zones: {z['zones']:,} of {z['zone_bytes'] / 2**20:,.0f} MiB (capacity {z['capacity_bytes'] / 2**20:,.1f} MiB, "
            f"at most {z['max_open']} open, {z['max_active']} active): {states}; {c['resets']:,} resets, "
            f"{c['finishes']:,} finishes, {c['implicit_closes']:,} implicit closes, {c['refused']:,} commands refused")


def _run_to_output(args: argparse.Namespace) -> int:
    """`_run`, its output into `--output FILE` when given (as fio writes it); errors and the
    progress bar stay on stderr. The file is opened first: a typo costs no run."""
    if not args.output:
        return _run(args)
    import contextlib

    try:
        f = open(args.output, "w")
    except OSError as e:
        raise SsdlabError(f"--output {args.output}: cannot write it: {e.strerror}") from None
    with f, contextlib.redirect_stdout(f):
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    jobs = _job_from_args(args)
    placement = "fdp" if any(j.asks_fdp() for j in jobs) else None
    zbd = [j for j in jobs if j.asks_zbd() and j.zonesize]
    if zbd and placement is None:
        j = zbd[0]
        placement = f"zns:{j.zonesize}:{j.max_open_zones or ''}:{j.zonecapacity or ''}"
    drive = Drive.open(args.drive, seed=args.seed or 0, faults=args.faults, placement=placement)
    for job in jobs:  # check every job before spending time on any
        try:
            drive._sim.check_job(job.to_json())
        except ValueError as e:
            raise job_error(job, str(e)) from None
    out_dir(args.out)  # before any simulated time is spent
    as_json = args.output_format in ("json", "json+")
    progress = not (args.quiet or as_json)
    if args.precondition != "none":
        pre = drive.precondition(args.precondition, progress=progress, drive_writes=args.precondition_drive_writes)
        if pre is not None and progress:
            print(f"precondition {args.precondition}: {pre.summary['elapsed_s']:.1f} simulated s, "
                  f"{pre.summary['write']['mb_per_s']:.1f} MB/s")
    out = out_dir(args.out)
    fio_jobs = []
    failed = False
    i = 0
    log_number = 0  # fio's job number of the last clone logged
    for step in schedule(expand_clones(jobs)):
        for job in step.jobs:
            _warn_unwritten_reads(drive, job)
        latency = [j for j in step.jobs if j.origin and j.origin.latency.get("latency_target")]
        if latency and len(step.jobs) > 1:
            raise SsdlabError(f"job '{latency[0].name}': latency_target probes queue depths one job at a time; "
                              "give it a stonewall so it runs alone")
        if latency:
            lt = latency[0].origin.latency
            results = [drive.find_latency_depth(latency[0], lt["latency_target"], lt.get("latency_window", 1.0),
                                                lt.get("latency_percentile", 100.0), progress=progress)]
        else:
            # fio's per-IO logs: each clone of each job a stream, numbered as fio numbers threads.
            streams = []
            for job in step.jobs:
                options = job.origin.options() if job.origin else {}
                for _ in range(job.numjobs):
                    streams.append((options, job.name, log_number + len(streams) + 1))
            writer = fio_logs.IoLogWriter(streams) if any(fio_logs.per_io(o) for o, _, _ in streams) else None
            try:
                results = drive.run_together(step.jobs, step.after, progress=progress,
                                             on_ios=writer.add if writer else None)
            finally:
                per_io_paths = writer.close() if writer else []
        failed = failed or any(r.summary.get("error") for r in results)
        for job, result, groupid in zip(step.jobs, results, step.groupids):
            prefix = f"{i:02d}-{job.name}-" if len(jobs) > 1 else ""
            i += 1
            options = job.origin.options() if job.origin else {}
            first = log_number + 1
            log_number += job.numjobs if not latency else 1
            if fio_logs.wanted(options):
                if fio_logs.per_io(options) and not latency:
                    logs = [p for p in per_io_paths
                            if any(p.name.endswith(f".{n}.log") for n in range(first, log_number + 1))]
                else:
                    logs = fio_logs.write_fio_logs(result, options, job.name, first)
                if not as_json:
                    print(f"  wrote fio logs {', '.join(str(p) for p in logs)}")
            if as_json:
                from ..fio_json import fio_job
                fio_jobs.append(fio_job(result, job, drive.name, plus=args.output_format == "json+", groupid=groupid))
                if out:
                    result.write(out, prefix)
                continue
            _print_summary(result)
            if args.intervals == "all":
                print(result.series.to_string(index=False, float_format=lambda x: f"{x:.1f}"))
            elif args.intervals == "chart":
                main = "write_iops" if result.summary["write"]["ios"] >= result.summary["read"]["ios"] else "read_iops"
                chart = _chart(result, column=main)
                if chart:
                    print(chart)
            if out:
                paths = result.write(out, prefix)
                print(f"  wrote {', '.join(str(p) for p in paths)}")
        if not as_json and len(results) > 1:
            print(_group_line(results))
    if out:
        drive.erase_count_histogram().to_parquet(out / "erase_counts.parquet", index=False)
    if as_json:
        import json

        from ..fio_json import fio_output
        print(json.dumps(fio_output(fio_jobs, jobs[0].origin.global_options if jobs[0].origin else None), indent=2))
    # fio exits 1 when a job failed (a minimum rate not met).
    return 1 if failed else 0


def _warn_unwritten_reads(drive: Drive, job: Job) -> None:
    """Reads of LBAs never written are answered without a NAND read, as a real drive answers
    them: say so when a reading job starts on a drive mostly unwritten."""
    if job.rw in ("write", "randwrite", "trim", "randtrim") or (job.rw in ("randrw", "rw", "readwrite")
                                                              and job.rwmixread == 0):
        return
    written = drive.counters()["mapped_units"] / max(drive.geometry["logical_units"], 1)
    if written < 0.99:
        print(f"ssdlab: warning: job '{job.name}' reads a drive {100 * written:.0f}% written; reads of "
              "never-written LBAs are answered without reading the NAND (fast, as on a real drive); "
              "precondition first (--precondition fill or fast-fill) to measure NAND reads", file=sys.stderr)


def _synth(args: argparse.Namespace) -> int:
    from ..job import parse_size
    from ..synth import write_fio_iolog

    n = write_fio_iolog(args.out, args.name, fraction=args.fraction, span_bytes=parse_size(args.span, "--span"), seed=args.seed)
    print(f"wrote {n:,} requests of a {args.name} look-alike to {args.out} (fio iolog v3)")
    return 0




def add_parsers(sub) -> None:
    """`ssdlab drives`, `ssdlab run` and `ssdlab synth-trace`."""
    d = sub.add_parser("drives", help="list the preset drives with dies, capacities and over-provisioning")
    d.add_argument("name", nargs="?", type=not_empty("name", "a preset name (ssdlab drives lists them)"),
                   help="one preset only")
    d.add_argument("--toml", action="store_true", help="print the preset's TOML (to copy and edit: --drive FILE.toml)")
    d.set_defaults(func=_drives)
    r = sub.add_parser("run", help="run a job (fio job file or flags) on a drive",
                       description="Run fio-style jobs on a simulated drive. Times are simulated seconds.")
    r.add_argument("jobfile", nargs="?", help="fio job file; its sections run at once unless stonewall/wait_for says "
                   "otherwise (options: " + ", ".join(_OPTIONS) + "; and " + ", ".join(PARSER_OPTIONS) + "); any of "
                   "them also on the command line as fio spells it, e.g. --bsrange=512-4k")
    r.add_argument("--name", help="the job's name (fio's --name; default: its rw)")
    r.add_argument("--drive", required=True, help="preset name (see `ssdlab drives`) or path to a drive .toml")
    _add_job_flags(r)
    add_precondition(r, "the job")
    r.add_argument("--seed", type=SEED, help="root seed (same seed, same results)")
    r.add_argument("--faults", metavar="SPEC", type=FAULTS_SPEC, help=FAULTS_HELP)
    r.add_argument("--output-format", "--output_format", default="normal", choices=("normal", "json", "json+"),
                   help="json: print only fio's JSON output (jobs[].read/write/trim with iops, bw, clat_ns percentiles); "
                        "json+: with the latency histograms (clat_ns bins), as fio_jsonplus_clat2csv reads them")
    r.add_argument("--output", metavar="FILE", help="write what the run prints to FILE instead (fio's --output)")
    r.add_argument("--intervals", default="chart", choices=("chart", "all", "none"), help="print the per-interval series as a chart (default), in full, or not")
    r.add_argument("--out", help="directory for summary.json, timeseries.parquet/.csv and erase_counts.parquet")
    r.add_argument("--quiet", action="store_true", help="no progress bar")
    r.set_defaults(func=_run_to_output)
    y = sub.add_parser("synth-trace", help="write a look-alike of a review trace (heavy-2011, light-2011, destroyer-2013) as a fio iolog",
                       description="Synthesise a trace from the published statistics of a review's client trace (see ssdlab/synth.py for how each is met).")
    y.add_argument("name", help="heavy-2011, light-2011 or destroyer-2013")
    y.add_argument("--out", required=True, help="output file (fio iolog v3)")
    y.add_argument("--fraction", type=float, default=0.01, help="share of the original length (default 0.01)")
    y.add_argument("--span", default="128g", help="LBA span the trace touches (default 128g)")
    y.add_argument("--seed", type=SEED, default=0)
    y.set_defaults(func=_synth)
