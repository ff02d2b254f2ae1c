"""Jobs: fio-like descriptions of a workload, and the fio job-file reader for their subset."""

from __future__ import annotations

import dataclasses
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from ._job_table import ROWS, JobFields
from .errors import SsdlabError


@dataclass
class Job(JobFields):
    """One fio-style job: the fields of the one table of job options (`JobFields`, generated
    from the model's table by tools/gen_job_table.py) and `origin`."""

    origin: FioOrigin | None = field(default=None, repr=False, compare=False, metadata={"model": False})

    def model_dict(self) -> dict:
        """The fields the model runs (the Rust `Job`'s), by name: everything but `origin`."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.metadata.get("model", True)}

    def asks_fdp(self) -> bool:
        """Its writes carry FDP placement identifiers (fio's fdp=1 or dataplacement=fdp)."""
        return bool(self.fdp) or self.dataplacement == "fdp"

    def asks_zbd(self) -> bool:
        """It runs on a zoned namespace (fio's zonemode=zbd)."""
        return self.zonemode == "zbd"

    def to_json(self) -> str:
        """The job for the model; ValueError ("field: why") for a count out of its range."""
        for name in _COUNTS:
            v = getattr(self, name)
            if not isinstance(v, int) or not 0 <= v < 2**32:
                raise ValueError(f"{name}: {v} is out of range; accepted: a whole number below 2^32")
        return json.dumps(self.model_dict())

    @staticmethod
    def from_fio(path: str | Path) -> list["Job"]:
        """Read a fio job file (the subset ssdlab models). Raises SsdlabError naming the file,
        line and option for anything outside it."""
        try:
            data = Path(path).read_bytes()
        except OSError as e:
            raise SsdlabError(f"{path}: cannot read: {e.strerror}") from None
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as e:
            line = data[: e.start].count(b"\n") + 1
            raise SsdlabError(f"{path}:{line}: byte {e.start} is not UTF-8 text; accepted: a fio job file (text)") from None
        return parse_fio(text, str(path))


Job.__doc__ = (JobFields.__doc__ or "").rstrip() + """
    origin : what a job file or the command line said of the job beyond these fields
        (`FioOrigin`; None for a job made in Python); the model never sees it
    """


def _bool(value: str) -> bool:
    return value.strip().lower() not in ("0", "false", "no", "off")


def _seconds(value: str) -> float:
    """fio time: a number with an optional unit (default seconds): us, ms, s, m, h."""
    m = re.fullmatch(r"\s*([0-9.]+)\s*(us|ms|s|m|h|)\s*", value.lower())
    if not m:
        raise ValueError(f"'{value}' is not a time; accepted: a number with an optional unit us, ms, s, m, h")
    scale = {"us": 1e-6, "ms": 1e-3, "s": 1.0, "": 1.0, "m": 60.0, "h": 3600.0}[m.group(2)]
    return float(m.group(1)) * scale


def _log_avg_msec(value: str) -> float:
    """fio's log_avg_msec as seconds per interval of the series. 0 is fio's default, one log
    line per IO (what ssdlab's logs then hold: ssdlab.fio_logs); the series keeps its 1 s."""
    ms = _int(value)
    if ms < 0:
        raise ValueError("accepted: 0 (a log line per IO, fio's default) or a number of milliseconds")
    return ms / 1000.0 if ms else 1.0


def _int(value: str) -> int:
    v = value.strip().lower()
    mult = 1
    for suffix, m in (("k", 1000), ("m", 1000**2), ("g", 1000**3)):
        if v.endswith(suffix):
            v, mult = v[: -len(suffix)], m
    if not v.isdigit():
        raise ValueError(f"'{value}' is not a whole number; accepted: digits with an optional k, m or g (x1000)")
    return int(v) * mult


# How each kind of field and each fio reading turns text into the field's value (the kinds
# and readings of the table, ssdlab_core::workload::{FieldKind, Reading}).
def _count(value: str) -> int:
    n = _int(value)
    if n >= 2**32:
        raise ValueError(f"{n} is out of range; accepted: a whole number below 2^32")
    return n


READERS = {"text": str, "count": _count, "whole": _int, "seconds": _seconds, "flag": _bool}
def _complement(value: str) -> int:
    """fio's rwmixwrite: the percentage of writes, so 100 minus the field's reads."""
    n = _int(value)
    if n > 100:
        raise ValueError(f"{n} is not a percentage; accepted: 0 to 100")
    return 100 - n


def _microseconds(value: str) -> float:
    """fio's thinktime, thinktime_spin and flow_sleep: a bare number is microseconds."""
    return _seconds(value + "us") if re.fullmatch(r"\s*[0-9.]+\s*", value) else _seconds(value)


def _file_text(value: str) -> str:
    """fio's dp_scheme: the file named (as fio opens it, from the current directory); its text is
    the field."""
    path = Path(value.strip())
    try:
        data = path.read_bytes()
    except OSError as e:
        raise ValueError(f"cannot read {path}: {e.strerror}") from None
    if len(data) > 1 << 20:
        raise ValueError(f"{path} is {len(data):,} bytes; accepted: a scheme file of at most 1 MiB")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError(f"{path} is not text; accepted: START,END,PID lines") from None


_READINGS = {"complement": _complement, "log_avg_msec": _log_avg_msec, "microseconds": _microseconds,
             "file_text": _file_text}
# fio option -> (Job field, converter), from the table. Options that change nothing in the
# model are accepted and ignored (direct, ioengine, ...): they describe the host side of a run.
_OPTIONS = {name: (row.name, _READINGS.get(reading, READERS[row.kind]))
            for row in ROWS for name, reading in row.spellings}
_KINDS = {row.name: row.kind for row in ROWS}
_COUNTS = tuple(row.name for row in ROWS if row.kind == "count")
# What the job-file reader takes beside the table's fields (README's list and run's --help).
PARSER_OPTIONS = {
    "zonemode": "strided (with zonesize), none, or zbd (a zoned namespace: writes at the zones' write pointers; "
        "a drive without one takes zones of the job's zonesize)",
    "fill_device, fill_fs": "the span runs to the end of the drive and the job writes all of it",
    "latency_target, latency_window, latency_percentile": "the deepest queue that keeps the percentile "
        "within the target, found in windows as fio does (`Drive.find_latency_depth`)",
    "write_lat_log, write_bw_log, write_iops_log, log_offset": "fio's logs: as fio, a line per IO, one "
        "file per clone; with log_avg_msec, interval means",
    "stonewall, new_group, wait_for": "where the job runs among the file's others (the sections of a "
        "file run at once otherwise, as in fio) and fio's groupid",
}
_IGNORED = {
    "direct", "ioengine", "filename", "group_reporting", "buffered", "norandommap",
    "randrepeat", "thread", "refill_buffers", "buffer_compress_percentage",
    "invalidate", "write_bw_log", "write_iops_log", "write_lat_log",
    "per_job_logs", "log_offset", "lat_percentiles", "clat_percentiles", "percentile_list",
    "description", "kb_base", "unit_base", "zero_buffers", "directory",
}
# Host-side options that change nothing the drive sees (timing bookkeeping, CPU placement,
# logging, file handling on a file system): accepted and ignored.
_IGNORED |= {
    "gtod_reduce", "disable_lat", "disable_clat", "disable_slat", "disable_bw_measurement", "log_prio",
    "threads", "cpus_allowed", "cpus_allowed_policy", "cpumask", "numa_cpu_nodes",
    "numa_mem_policy", "exitall", "exitall_on_error", "continue_on_error", "create_on_open", "nrfiles",
    "filename_format", "random_generator", "iodepth_batch", "iodepth_batch_submit", "iodepth_batch_complete",
    "iodepth_batch_complete_min", "iodepth_batch_complete_max", "iodepth_low", "unlink", "fsync_on_close",
    "overwrite", "allow_file_create", "fadvise_hint", "ramp_time_log", "hugepage-size",
    "iomem", "mem", "iomem_align", "write_hist_log", "log_hist_msec", "write_lat_log", "log_compression",
    "group_reporting", "sqthread_poll", "hipri", "fixedbufs", "registerfiles", "nonvectored", "uncached",
    "clat_percentiles", "slat_percentiles", "significant_figures", "steadystate_check_interval",
    # What the host does about errors: a modelled drive returns none to ignore.
    "ignore_error", "error_dump",
    # How the host reaches the one device: NVMe passthrough (io_uring_cmd on /dev/ngXnY, whose
    # only cmd_type is nvme) or libblkio's drivers; the drive sees the same commands.
    "cmd_type", "libblkio_driver", "libblkio_path", "sqthread_poll_cpu",
    # Command priorities (ioprio classes, NCQ priority): the modelled drives serve every
    # command alike, as a drive without priority support does; the options change nothing.
    "prio", "prioclass", "priohint", "cmdprio", "cmdprio_class", "cmdprio_hint", "cmdprio_percentage",
    "cmdprio_bssplit",
    # When the host creates its files: serialised or in parallel (files, not the drive).
    "create_serialize", "create_fsync",
}
# Options ssdlab refuses, by why.
_ENGINE = "belongs to an I/O engine's own target (network, GPU, cloud or passthrough); ssdlab runs on one modelled drive"
_REFUSED = {
    **{k: _ENGINE for k in ("port", "hostname", "http_verbose", "http_host", "http_user", "http_pass",
                             "http_mode", "http_s3_key", "http_s3_keyid", "http_s3_region", "uri", "protocol",
                             "nfs_url", "pool", "volume", "clientname",
                             "gpu_dev_ids", "cuda_io", "rdma_op", "bindname", "namespace", "busy_poll")},
    **{k: "`ssdlab run` models timing, not data; check data through `ssdlab serve` with fio's verify"
       for k in ("verify", "verify_pattern", "verify_fatal", "do_verify", "verify_only", "verify_interval",
                 "verify_offset", "verify_backlog", "verify_async", "buffer_pattern",
                 "dedupe_percentage", "dedupe_mode", "buffer_compress_chunk")},
    **{k: "belongs to the cpuio engine (it burns CPU time and does no IO)" for k in ("cpuload", "cpuchunks")},
    "thinkcycles": "a stall in CPU cycles has no simulated length; use thinktime (a time)",
    "latency_run": "fio's continuous queue-depth adjustment is not modelled; latency_target alone finds the depth and "
                   "stops, as fio does by default",
    "program": "runs an external program",
}
_UNSUPPORTED_VALUES: dict = {}
# I/O engines whose operations are not block IO, by what they do instead.
_FS = "it performs file-system operations (allocate, truncate, create, stat or delete files and directories)"
_NOT_BLOCK_IO = {
    **{e: _FS for e in ("falloc", "ftruncate", "filecreate", "filestat", "filedelete", "dircreate", "dirstat",
                        "dirdelete")},
    "cpuio": "it burns CPU time and does no IO",
    "exec": "it runs an external program",
}


def _expand(line: str) -> str:
    """fio's substitutions: ${VAR} from the environment (KeyError if unset), and the
    keywords $ncpus, $pagesize and $mb_memory of the machine running ssdlab."""
    import os

    line = re.sub(r"\$\{(\w+)\}", lambda m: os.environ[m.group(1)], line)
    if "$" in line:
        pagesize = os.sysconf("SC_PAGE_SIZE")
        keywords = {"ncpus": os.cpu_count() or 1, "pagesize": pagesize,
                    "mb_memory": os.sysconf("SC_PHYS_PAGES") * pagesize // 2**20}
        line = re.sub(r"\$(ncpus|pagesize|mb_memory)\b", lambda m: str(keywords[m.group(1)]), line)
    return line


# Options that place a job among the others of its file rather than describe its IO.
_PLACEMENT = {"stonewall", "wait_for_previous", "new_group", "wait_for"}


@dataclass(frozen=True)
class Placement:
    """Where a job of a fio file runs among the others, as fio reads it: `stonewall` (it
    waits for every job before it to end; so does everything after it), `new_group` (it
    starts a new reporting group; a stonewall implies one), `wait_for` (it starts when that
    earlier job ends). Without any, fio starts every job of a file at once."""

    stonewall: bool = False
    new_group: bool = False
    wait_for: str | None = None


@dataclass
class FioOrigin:
    """What a job file or the command line said of a job, beside the fields the model runs: the
    job's own options and its file's [global] ones as written (fio's JSON "job options", and the
    logs they ask for), where it runs among the file's jobs, the latency-target search's
    settings, and which file:line set each field (for errors found later)."""

    given: dict = field(default_factory=dict)
    global_options: dict = field(default_factory=dict)
    placement: Placement = field(default_factory=Placement)
    latency: dict = field(default_factory=dict)
    where: dict = field(default_factory=dict)

    def options(self) -> dict:
        """The [global] options with the job's own over them."""
        return {**self.global_options, **self.given}


@dataclass
class Step:
    """Jobs that run together on the drive (fio's jobs between two stonewalls): for each,
    the index in `jobs` of the job it waits for (or None) and fio's reporting group id."""

    jobs: list[Job]
    after: list[int | None]
    groupids: list[int]


def expand_clones(jobs: list[Job]) -> list[Job]:
    """fio's numjobs without group_reporting: each clone is a job of its own in the report (fio's
    JSON lists them one by one, with the same name, and each writes its own logs); with
    group_reporting (in the job's section or its global options) they stay one job reported
    together. The clones start together, where the job starts (issue 73 item 9)."""
    import dataclasses
    out: list[Job] = []
    for job in jobs:
        if job.origin is None or job.numjobs <= 1:
            out.append(job)
            continue
        options = job.origin.options()
        if "group_reporting" in options and options["group_reporting"] not in ("0", "false"):
            out.append(job)
            continue
        place = job.origin.placement
        for i in range(job.numjobs):
            clone = dataclasses.replace(job, numjobs=1)
            if i:  # the first clone carries the job's place; the others start with it
                clone.origin = dataclasses.replace(job.origin, placement=Placement(wait_for=place.wait_for))
            out.append(clone)
    return out


def schedule(jobs: list[Job]) -> list[Step]:
    """The jobs of a file in fio's order of execution: runs of jobs started together, a new
    run at each stonewall; `wait_for` within a run delays a job until the named one ends (a
    job before the last stonewall has ended already). Jobs made in Python (no placement) all
    run together, as fio runs the sections of a file."""
    steps: list[Step] = []
    groupid, in_group = 0, 0
    for job in jobs:
        place = job.origin.placement if job.origin else Placement()
        if (place.stonewall or place.new_group) and in_group:
            groupid, in_group = groupid + 1, 0
        if place.stonewall or not steps:
            steps.append(Step([], [], []))
        step = steps[-1]
        after = None
        if place.wait_for is not None:
            names = [j.name for j in step.jobs]
            after = names.index(place.wait_for) if place.wait_for in names else None
        step.jobs.append(job)
        step.after.append(after)
        step.groupids.append(groupid)
        in_group += 1
    return steps


_ARITHMETIC = re.compile(r"[0-9.\s+\-*/%^()]+")


def _arithmetic(value: str) -> str:
    """fio's arithmetic in numeric values ("(4096*8)", page_fault.fio's "5*1024*1024*16000/8"):
    + - * / % ^ and parentheses, evaluated as fio does; a value that is not such an expression
    (or only a range such as bsrange's 512-4096) is returned as it is."""
    import ast
    v = value.strip()
    if not v or not _ARITHMETIC.fullmatch(v) or not (v.startswith("(") or any(op in v for op in "*/%^")):
        return value
    try:
        tree = ast.parse(v.replace("^", "**"), mode="eval")
    except SyntaxError:
        return value
    ops = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
           ast.Div: lambda a, b: a / b, ast.Mod: lambda a, b: a % b,
           ast.Pow: lambda a, b: a ** b if abs(b) <= 64 else float("inf")}

    def ev(n):
        if isinstance(n, ast.Expression):
            return ev(n.body)
        if isinstance(n, ast.Constant) and isinstance(n.value, (int, float)):
            return n.value
        if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.USub):
            return -ev(n.operand)
        if isinstance(n, ast.BinOp) and type(n.op) in ops:
            return ops[type(n.op)](ev(n.left), ev(n.right))
        raise ValueError(v)
    try:
        result = ev(tree)
    except (ValueError, ZeroDivisionError, OverflowError):
        return value
    if result != result or abs(result) == float("inf"):
        return value
    return str(int(result)) if float(result).is_integer() else f"{result:g}"


def parse_fio(text: str, source: str = "<job file>") -> list[Job]:
    """Parse fio's INI job format: [global] applies to every job; each other section is a job.
    Every option the model does not take is reported at once, each with its line. Where each
    job runs among the others (stonewall, new_group, wait_for) is kept with it for
    `schedule`."""
    global_opts: list[tuple[int, str, str | None]] = []
    jobs: list[tuple[str, int, list[tuple[int, str, str | None]]]] = []
    current: list | None = None
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line[0] in ";#":
            continue
        # Inline comments, as fio strips them: "runtime=3600  # one hour", "size=1g ; note".
        line = re.split(r"\s+[;#]", line, maxsplit=1)[0].strip()
        try:
            line = _expand(line)
        except KeyError as e:
            raise SsdlabError(f"{source}:{lineno}: '{raw.strip()}' uses ${{{e.args[0]}}}, which is not set in "
                              "the environment; accepted: a set variable, or a value") from None
        if line.startswith("["):
            if not line.endswith("]") or len(line) < 3:
                raise SsdlabError(f"{source}:{lineno}: '{raw}' is not a section header; expected [name]")
            name = line[1:-1].strip()
            if name == "global":
                current = global_opts
            else:
                current = []
                jobs.append((name, lineno, current))
            continue
        if current is None:
            raise SsdlabError(f"{source}:{lineno}: option '{line}' before any [section]")
        key, sep, value = line.partition("=")
        key = key.strip()
        current.append((lineno, key, _arithmetic(value.strip()) if sep else None))
    if not jobs:
        raise SsdlabError(f"{source}: no job section; expected at least one [jobname] section")
    result: list[Job] = []
    problems: list[str] = []  # every problem of the file, once each, in line order
    for name, _lineno, opts in jobs:
        job = Job(name=name)
        job.origin = FioOrigin()
        place: dict = {}
        for opt_line, key, value in global_opts + opts:
            where = f"{source}:{opt_line}"
            try:
                if key in _PLACEMENT:
                    _place(place, key, value, where, [j.name for j in result])
                else:
                    _apply(job, key, value, where)
            except SsdlabError as e:
                if str(e) not in problems:
                    problems.append(str(e))
                continue
            if key in _OPTIONS:
                job.origin.where[_OPTIONS[key][0]] = where
        zoning = _zonemode(job, global_opts + opts, source)
        if zoning:
            problems.append(zoning)
            continue
        job.origin.placement = Placement(**place)
        # The options as written, for fio's JSON ("job options", "global options").
        job.origin.given = {key: "" if value is None else value for _l, key, value in opts}
        job.origin.global_options = {key: "" if value is None else value for _l, key, value in global_opts}
        result.append(job)
    if len(problems) == 1:
        raise SsdlabError(problems[0])
    if problems:
        problems.sort(key=_line_of)
        raise SsdlabError(f"{source}: {len(problems)} options are not accepted:\n  " + "\n  ".join(problems))
    return result


def _zonemode(job: Job, opts: list, source: str) -> str | None:
    """fio's zonemode for a parsed job: strided (zonesize given, or named) keeps the zone
    fields; none must not come with a zonesize (zbd and unknown modes are _place's to
    refuse). The problem as a message, or None."""
    given = [(line, v) for line, k, v in opts if k == "zonemode"]
    line, mode = given[-1] if given else (None, None)
    mode = (mode or "").strip() or None
    if not job.zonesize and mode != "strided":
        job.zonerange = job.zoneskip = None  # no zones: fio ignores them
    if mode is None:
        return None  # zonesize alone means strided, as fio reads it
    where = f"{source}:{line}"
    if mode == "strided":
        return None if job.zonesize else f"{where}: zonemode=strided needs zonesize (the bytes per zone)"
    if mode == "none":
        if job.zonesize:
            return f"{where}: zonemode=none and zonesize are not compatible (as in fio); drop one"
        job.zonerange = job.zoneskip = None
        return None
    return None  # zbd: the model's (zonesize is the zones' size); unknown modes: _apply's


def _line_of(message: str) -> int:
    m = re.match(r".*?:(\d+): ", message)
    return int(m.group(1)) if m else 0


def _place(place: dict, key: str, value: str | None, where: str, earlier: list[str]) -> None:
    """A placement option into `place` (Placement's fields)."""
    if key == "wait_for":
        if not value:
            raise SsdlabError(f"{where}: wait_for needs a job name (wait_for=NAME)")
        if value not in earlier:
            raise SsdlabError(f"{where}: wait_for={value}: no job '{value}' before this one; "
                              f"accepted: the name of an earlier section ({', '.join(earlier) or 'none yet'}), "
                              "as fio requires")
        place["wait_for"] = value
        return
    on = True if value is None else _bool(value)
    place["new_group" if key == "new_group" else "stonewall"] = on


def job_error(job: Job, message: str) -> SsdlabError:
    """An error the model found in `job`'s values ("field: why"), placed at the job file's line
    that set the field when the job came from one, else named by the job."""
    field_name = message.split(":", 1)[0].strip()
    where = job.origin.where if job.origin else {}
    # The model names a field in seconds by its option ("log_interval: ..." for log_interval_s).
    where = where.get(field_name) or where.get(f"{field_name}_s")
    if where:
        return SsdlabError(f"{where}: job '{job.name}': {message}")
    return SsdlabError(f"job '{job.name}': {message}")


def _us_time(value: str) -> float:
    """A fio time whose bare number means microseconds (latency_target, latency_window), in s."""
    v = value.strip()
    return float(v) * 1e-6 if re.fullmatch(r"[0-9.]+", v) else _seconds(v)


def _apply(job: Job, key: str, value: str | None, where: str) -> None:
    if key in ("latency_target", "latency_window", "latency_percentile"):
        # fio's latency-target search (run by `Drive.find_latency_depth` and `ssdlab run`).
        try:
            v = float(value) if key == "latency_percentile" else _us_time(value or "")
            if not (0 < v <= (100 if key == "latency_percentile" else 1e6)):
                raise ValueError(f"{value} is out of range")
        except ValueError:
            raise SsdlabError(f"{where}: {key}={value}: accepted: " + (
                "a percentage in (0, 100]" if key == "latency_percentile" else
                "a time up to 10^6 s, bare numbers in us (fio's unit here), or with a unit us, ms, s, m, h")) from None
        if job.origin is None:
            job.origin = FioOrigin()
        job.origin.latency[key] = v
        return
    if key == "ioengine" and (value or "").strip() in _NOT_BLOCK_IO:
        raise SsdlabError(f"{where}: ioengine={value.strip()} is not supported: {_NOT_BLOCK_IO[value.strip()]}; "
                          "ssdlab models a drive's block reads, writes and trims (any engine that does those, such "
                          "as libaio, io_uring, psync, sync or null, is accepted)")
    if key == "percentile_list" and value is not None:
        try:
            ok = all(0 < float(x) <= 100 for x in value.split(":") if x.strip())
        except ValueError:
            ok = False
        if not ok:
            raise SsdlabError(f"{where}: percentile_list={value}: accepted: percentages in (0, 100] joined by ':', "
                              "e.g. 50:99:99.9")
    if key in ("fill_device", "fill_fs"):
        # fio writes until the device is full: the span runs to the end of the drive, and the
        # job transfers all of it.
        if value is None or _bool(value):
            job.size = None
            job.io_size = None
        return
    if key in _IGNORED:
        check = _UNSUPPORTED_VALUES.get(key)
        if check and value is not None and check(value):
            raise SsdlabError(f"{where}: {key}={value} is not supported; ssdlab runs one job at a time (numjobs=1)")
        return
    if key in _REFUSED:
        raise SsdlabError(f"{where}: option '{key}' is not supported: {_REFUSED[key]}")
    if key not in _OPTIONS:
        accepted = ", ".join(sorted(_OPTIONS))
        raise SsdlabError(f"{where}: option '{key}' is not supported; accepted: {accepted} (and host-side options such as direct, ioengine, filename, which are ignored)")
    field_name, convert = _OPTIONS[key]
    if value is None:
        if _KINDS[field_name] == "flag":  # an option alone is true, as fio reads it
            setattr(job, field_name, True)
            return
        raise SsdlabError(f"{where}: option '{key}' needs a value ({key}=...)")
    try:
        setattr(job, field_name, convert(value))
    except ValueError as e:
        raise SsdlabError(f"{where}: {key}={value}: {e}") from None


def parse_size(text: str, what: str) -> int:
    """A fio size (4k, 128KiB, 8g, 1.5g; powers of 1024) in bytes, read by the model's own
    parser (ssdlab_core::workload::parse_size), so a size means the same in a job and on the
    command line. SsdlabError naming `what` otherwise."""
    from . import _ssdlab

    try:
        return _ssdlab.parse_size(str(text))
    except ValueError as e:
        raise SsdlabError(f"{what}: {e}") from None
