//! What a job measured: its summary (rates, latencies, write amplification, GC, faults,
//! steady state, power) and its per-interval series, taken from its meter at its end.

use super::compile::CompiledJob;
use super::job::SteadyState;
use crate::device::Device;
use crate::record::Sample;
use crate::session::Meter;
use crate::stats::{IntervalSeries, OpSummary};
use crate::time::NS_PER_S;
use serde::Serialize;

/// Everything a job measured.
#[derive(Clone, Debug, Serialize)]
pub struct JobSummary {
    pub name: String,
    pub elapsed_s: f64,
    pub read: OpSummary,
    pub write: OpSummary,
    pub trim: OpSummary,
    /// NAND bytes the FTL programmed (data, GC, parity, padding, map persistence of writes) /
    /// host bytes written, during the job; TRIMs' map pages are apart (`trim_map_pages`).
    pub write_amplification: f64,
    /// NAND pages that journalled TRIMs' map changes (not in write amplification).
    #[serde(skip_serializing_if = "crate::stats::is_zero")]
    pub trim_map_pages: u64,
    pub gc_units_copied: u64,
    pub blocks_erased: u64,
    pub nand_page_programs: u64,
    pub host_units_written: u64,
    /// What seeded NAND faults did during the job (all zero without `[faults]`).
    pub faults: crate::faults::FaultCounters,
    /// Steady-state detection (`ss`), when the job asked for it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub steady_state: Option<SteadyState>,
    /// Energy and power (on a drive with a power model).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub power: Option<crate::power::PowerSummary>,
    /// FDP's logs at the job's end (a drive with `[placement]`): the statistics log, drive-wide
    /// and per handle, the RUH status and the events (the drive's, since it was made).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub placement: Option<crate::ftl::PlacementReport>,
    /// A zoned namespace's zones at the job's end (a drive with mode = "zns").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub zones: Option<ZonesSummary>,
    /// Why the job stopped early, as fio reports it (rate_min or rate_iops_min not met).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// A zoned namespace at a job's end: zones by state, and what the zones did since the drive
/// was made (resets, finishes, implicit closes, appends, commands refused).
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct ZonesSummary {
    pub zones: u32,
    pub zone_bytes: u64,
    pub capacity_bytes: u64,
    pub max_open: u32,
    pub max_active: u32,
    pub empty: u32,
    pub implicitly_opened: u32,
    pub explicitly_opened: u32,
    pub closed: u32,
    pub full: u32,
    pub counters: crate::zones::ZoneCounters,
    /// Bytes below the write pointers.
    pub written_bytes: u64,
}

impl ZonesSummary {
    pub fn of(dev: &Device) -> Option<ZonesSummary> {
        let z = dev.zones()?;
        let n = z.state_counts();
        let written_bytes = (0..z.geometry.zones)
            .map(|q| {
                let d = z.zone(q);
                d.write_pointer_bytes - d.start_bytes
            })
            .sum();
        Some(ZonesSummary {
            zones: z.geometry.zones,
            zone_bytes: z.zone_bytes(),
            capacity_bytes: z.zone(0).capacity_bytes,
            max_open: z.geometry.max_open,
            max_active: z.geometry.max_active,
            empty: n[0],
            implicitly_opened: n[1],
            explicitly_opened: n[2],
            closed: n[3],
            full: n[4],
            counters: z.counters,
            written_bytes,
        })
    }
}

pub struct JobResult {
    pub summary: JobSummary,
    pub series: IntervalSeries,
}

/// What a job measured, from its meter, at its end.
pub(super) fn slot_result(
    job: &CompiledJob,
    meter: Meter,
    steady: Option<SteadyState>,
    error: Option<String>,
    dev: &Device,
) -> JobResult {
    let mut rec = meter.rec;
    let elapsed_ns = rec.elapsed_ns();
    let n = (elapsed_ns.div_ceil(job.interval_ns)).max(1) as usize;
    rec.close_all(dev);
    // A time-based job's series covers its runtime; commands in flight at the end still
    // complete (and count in the summary) but do not open a last, partial interval.
    if let Some(runtime) = job.runtime_ns.filter(|_| job.job.time_based) {
        rec.series
            .truncate((runtime.div_ceil(job.interval_ns) as usize).min(n));
    }
    let s = Sample::of(dev);
    let at_start = rec.at_start;
    let elapsed_s = elapsed_ns as f64 / NS_PER_S as f64;
    let host_units = s.host_units_written - at_start.host_units_written;
    let trim_pages = s.trim_pages - at_start.trim_pages;
    let pages = s.pages_committed - at_start.pages_committed - trim_pages;
    JobResult {
        summary: JobSummary {
            name: job.job.name.clone(),
            elapsed_s,
            read: rec.read.summary(elapsed_s),
            write: rec.write.summary(elapsed_s),
            trim: rec.trim.summary(elapsed_s),
            write_amplification: dev.write_amplification(pages, host_units),
            trim_map_pages: trim_pages,
            gc_units_copied: s.gc_units - at_start.gc_units,
            blocks_erased: s.erases - at_start.erases,
            nand_page_programs: pages,
            host_units_written: host_units,
            faults: s.faults.since(&at_start.faults),
            steady_state: steady,
            power: crate::power::PowerSummary::of(&rec.series, dev.has_power_model(), elapsed_s),
            placement: dev.ftl.placement_report(),
            zones: ZonesSummary::of(dev),
            error,
        },
        series: rec.series,
    }
}
