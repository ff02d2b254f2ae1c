"""The shapes of what a run returns, as the model writes them (TypedDicts, for editors and type
checkers): `JobSummary` is `Result.summary`, `ReplaySummary` is `ReplayResult.summary`. The
fields mirror the Rust structs they come from (`ssdlab_core::workload::JobSummary`,
`ssdlab_core::replay::ReplaySummary`, `stats::OpSummary`, `faults::FaultCounters`);
python/tests/test_schema.py checks that a real run's keys are exactly these."""

from __future__ import annotations

from typing import TypedDict


class OpSummary(TypedDict):
    """One operation kind (read, write, trim): counts, rates and completion latency."""

    ios: int
    bytes: int
    iops: float
    mb_per_s: float
    latency_us_mean: float
    latency_us_stddev: float
    latency_us_min: float
    latency_us_p50: float
    latency_us_p90: float
    latency_us_p99: float
    latency_us_p99_9: float
    latency_us_p99_99: float
    latency_us_max: float
    #: fio's clat_ns percentiles, keyed as fio keys them ("99.900000"), ns.
    latency_ns_percentiles: dict[str, int]


class FaultCounters(TypedDict):
    """What seeded NAND faults did (all zero without `[faults]`)."""

    read_retries: int
    read_retry_reads: int
    uncorrectable_pages: int
    rain_rebuilds: int
    rain_rebuild_reads: int
    failed_reads: int
    unreadable_units: int
    program_failures: int
    erase_failures: int
    grown_bad_blocks: int
    failed_dies: int
    die_rebuilds: int


class SteadyState(TypedDict):
    """fio's steady-state detection (`ss`): whether and when it was attained."""

    criterion: str
    attained: bool
    attained_at_s: float | None
    value_pct: float


class _JobSummary(TypedDict):
    name: str
    elapsed_s: float
    read: OpSummary
    write: OpSummary
    trim: OpSummary
    write_amplification: float
    gc_units_copied: int
    blocks_erased: int
    nand_page_programs: int
    host_units_written: int
    faults: FaultCounters
    #: drive, drive_source, faults, job, seed, ssdlab_version; for jobs run together span_s (the
    #: job's [start, end] from the group's start) and ran_with (the jobs whose spans overlap it).
    run: dict


class PowerSummary(TypedDict):
    """A run's power on a drive with a power model (ssdlab_core::power::PowerSummary)."""

    energy_j: float
    average_w: float
    peak_w: float
    #: None for a job run at once with others (`shared_with`): the drive's energy over its span
    #: is theirs too, so per this job's bytes or IOs it would count their work as its own.
    joules_per_gb: float | None
    iops_per_w: float | None


class MediaStatistics(TypedDict):
    """NVMe FDP's statistics log (HBMW, MBMW, MBE), bytes; write_amplification = media / host."""

    host_bytes_written: int
    media_bytes_written: int
    media_bytes_erased: int
    write_amplification: float


class HandleStatistics(MediaStatistics):
    """One reclaim unit handle's statistics log, and the reclaim units it has taken."""

    reclaim_units: int


class PlacementReport(TypedDict):
    """FDP's logs at a job's end: the statistics log of the drive and of each reclaim unit
    handle (`shared`: copies out of units collection shared between initially isolated handles),
    the RUH status (per placement identifier: pid, reclaim_unit_handle, reclaim_group,
    available_media_bytes) and the latest 63 events (kind, pid, reclaim_unit_handle,
    reclaim_group, host_units_written), with counts of each kind."""

    statistics: MediaStatistics
    handles: list[HandleStatistics]
    shared: HandleStatistics
    ruh_status: list[dict]
    events: list[dict]
    event_counts: list[list]


class JobSummary(_JobSummary, total=False):
    """`Result.summary`: everything one job measured, and what produced it (`run`);
    `steady_state` when the job asked for steady-state detection, `power` on a drive with
    a power model, `placement` on a drive with `[placement]` (FDP's logs)."""

    steady_state: SteadyState
    power: PowerSummary
    placement: PlacementReport


class ClassSummary(OpSummary):
    """One class of a replay (reads and writes, reads, writes, trims): service times, busy time."""

    busy_s: float
    data_rate_mb_per_s: float


class _ReplaySummary(TypedDict):
    requests: int
    elapsed_s: float
    all: ClassSummary
    read: ClassSummary
    write: ClassSummary
    trim: ClassSummary
    trim_requests: int
    write_amplification: float
    final_flush_s: float
    nand_page_programs: int
    gc_units_copied: int
    blocks_erased: int
    host_units_written: int
    #: Trace format(s) read, replay mode, what the reader assumed or noticed.
    format: str
    mode: str
    notes: list[str]
    bad_lines_skipped: int
    other_devices_skipped: int
    requests_wrapped: int
    out_of_order: int
    faults: FaultCounters
    #: drive, drive_source, faults, seed, ssdlab_version, trace, scale, qd, sort, time_unit_ns.
    run: dict


class ReplaySummary(_ReplaySummary, total=False):
    """`ReplayResult.summary`: storage-bench metrics of a replay; `per_request` when the
    replay wrote one row per request; `power` on a drive with a power model."""

    per_request: str
    power: PowerSummary
