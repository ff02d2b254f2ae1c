//! Running a job: its streams as a session's source (each completion refills its stream's
//! queue at once), steady-state detection, and what the job measured.

use super::generator::Generator;
use super::job::{CompiledJob, SteadyState};
use crate::device::{Completion, Device, HostIo};
use crate::record::{Recorder, Sample};
use crate::session::{Session, Source};
use crate::stats::{IntervalSeries, OpSummary};
use crate::time::{SimTime, NS_PER_S};
use serde::Serialize;
use std::collections::VecDeque;

/// Everything a job measured.
#[derive(Clone, Debug, Serialize)]
pub struct JobSummary {
    pub name: String,
    pub elapsed_s: f64,
    pub read: OpSummary,
    pub write: OpSummary,
    pub trim: OpSummary,
    /// NAND bytes the FTL programmed (data, GC, parity, padding) / host bytes written, during
    /// the job.
    pub write_amplification: f64,
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
}

pub struct JobResult {
    pub summary: JobSummary,
    pub series: IntervalSeries,
}

/// One copy of a job (fio's numjobs clones): its IO stream and its queue.
struct JobStream {
    generator: Generator,
    issued_ios: u64,
    issued_bytes: u64,
    outstanding: u64,
}

/// Tag bits below a stream's index (a stream issues fewer than 2^48 IOs).
const STREAM_SHIFT: u32 = 48;

/// A job in progress on a device; advance it in slices so a caller can show progress.
pub struct JobRun {
    source: JobSource,
    session: Session,
}

/// The job's streams as a session's source: each completion refills its stream's queue at
/// once, until the job's runtime, IO count or byte count is reached.
struct JobSource {
    job: CompiledJob,
    streams: Vec<JobStream>,
    start: SimTime,
    stop_issuing_at: Option<SimTime>,
    completed_ios: u64,
    /// Streams to issue for after a step's completions, in completion order.
    refill: VecDeque<usize>,
    steady: Option<SteadyState>,
}

impl JobRun {
    pub fn new(dev: &mut Device, job: &CompiledJob, seed: u64) -> JobRun {
        dev.set_link_policy(job.link_power);
        // Measurement starts after the ramp; IOs are issued from now.
        let start = dev.now() + crate::time::SimDuration(job.ramp_ns);
        let streams = (0..job.job.numjobs)
            .map(|_| JobStream {
                generator: Generator::new(
                    job,
                    seed,
                    if job.uses_random_stream() {
                        dev.next_job_ordinal()
                    } else {
                        0
                    },
                ),
                issued_ios: 0,
                issued_bytes: 0,
                outstanding: 0,
            })
            .collect();
        let mut source = JobSource {
            streams,
            job: job.clone(),
            start,
            stop_issuing_at: job.runtime_ns.map(|r| start + crate::time::SimDuration(r)),
            completed_ios: 0,
            refill: VecDeque::new(),
            steady: job.job.ss.clone().map(|criterion| SteadyState {
                criterion,
                attained: false,
                attained_at_s: None,
                value_pct: 0.0,
            }),
        };
        let session = Session::new(dev, start, job.interval_ns);
        for k in 0..source.streams.len() {
            for _ in 0..job.job.iodepth {
                if !source.issue(dev, k) {
                    break;
                }
            }
        }
        JobRun { source, session }
    }

    /// Process events until simulated time `until` or the end of the job. True when done.
    pub fn advance(&mut self, dev: &mut Device, until: SimTime) -> bool {
        self.session.advance(dev, &mut self.source, until)
    }

    /// Simulated time the run has reached: the session's clock, which moves through a slice
    /// even when the device's next event lies beyond it (a slice of `advance` measured from
    /// `dev.now()` would never reach an event more than one slice away).
    pub fn now(&self, dev: &Device) -> SimTime {
        self.session.now(dev)
    }
    pub fn progress(&self, dev: &Device) -> (f64, u64, f64) {
        let src = &self.source;
        let elapsed = dev.now().ns().saturating_sub(src.start.ns()) as f64 / NS_PER_S as f64;
        let fraction = if let Some(r) = src.job.runtime_ns {
            elapsed / (r as f64 / NS_PER_S as f64)
        } else if let Some(n) = src.job.number_ios {
            src.completed_ios as f64 / (n * src.streams.len() as u64) as f64
        } else if let Some(b) = src.job.io_bytes_max {
            let issued: u64 = src.streams.iter().map(|s| s.issued_bytes).sum();
            issued as f64 / (b * src.streams.len() as u64) as f64
        } else {
            0.0
        };
        (elapsed, src.completed_ios, fraction.min(1.0))
    }

    pub fn finish(self, dev: &Device) -> JobResult {
        let (job, mut rec) = (self.source.job, self.session.rec);
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
        let pages = s.pages_committed - at_start.pages_committed;
        JobResult {
            summary: JobSummary {
                name: job.job.name.clone(),
                elapsed_s,
                read: rec.read.summary(elapsed_s),
                write: rec.write.summary(elapsed_s),
                trim: rec.trim.summary(elapsed_s),
                write_amplification: dev.write_amplification(pages, host_units),
                gc_units_copied: s.gc_units - at_start.gc_units,
                blocks_erased: s.erases - at_start.erases,
                nand_page_programs: pages,
                host_units_written: host_units,
                faults: s.faults.since(&at_start.faults),
                steady_state: self.source.steady,
                power: crate::power::PowerSummary::of(&rec.series, dev.has_power_model()),
            },
            series: rec.series,
        }
    }
}

impl JobSource {
    fn may_issue(&self, now: SimTime, k: usize) -> bool {
        let s = &self.streams[k];
        if self.stop_issuing_at.is_some_and(|t| now >= t) {
            return false;
        }
        if self.job.number_ios.is_some_and(|n| s.issued_ios >= n) {
            return false;
        }
        if self.job.io_bytes_max.is_some_and(|b| s.issued_bytes >= b) {
            return false;
        }
        true
    }

    /// Issue the next IO of stream `k` now, if the job still issues. True if it did.
    fn issue(&mut self, dev: &mut Device, k: usize) -> bool {
        let now = dev.now();
        if !self.may_issue(now, k) {
            return false;
        }
        let s = &mut self.streams[k];
        let (kind, offset, length) = s.generator.next(&self.job);
        dev.submit(
            HostIo {
                kind,
                offset_bytes: offset,
                length_bytes: length,
                fua: false,
                tag: ((k as u64) << STREAM_SHIFT) | s.issued_ios,
            },
            now,
        );
        s.issued_ios += 1;
        s.issued_bytes += length;
        s.outstanding += 1;
        true
    }

    /// fio's steady-state check over the closed intervals: once met, stop issuing.
    fn check_steady_state(&mut self, rec: &Recorder, now: SimTime) {
        let (Some(c), Some(state)) = (self.job.steady, self.steady.as_mut()) else {
            return;
        };
        let n = rec.intervals_closed();
        let interval = self.job.interval_ns;
        if state.attained || n < c.dur_intervals || (n as u64 * interval) < c.ramp_ns {
            return;
        }
        let s = &rec.series;
        let values: Vec<f64> = (n - c.dur_intervals..n)
            .map(|i| {
                if c.bytes {
                    (s.read_bytes[i] + s.write_bytes[i]) as f64
                } else {
                    (s.read_ios[i] + s.write_ios[i] + s.trim_ios[i]) as f64
                }
            })
            .collect();
        let k = values.len() as f64;
        let mean = values.iter().sum::<f64>() / k;
        if mean <= 0.0 {
            return;
        }
        let pct = if c.slope {
            // Least-squares slope per interval, in percent of the mean (fio's *_slope).
            let xm = (k - 1.0) / 2.0;
            let (num, den) = values
                .iter()
                .enumerate()
                .fold((0.0, 0.0), |(a, b), (i, v)| {
                    let dx = i as f64 - xm;
                    (a + dx * (v - mean), b + dx * dx)
                });
            (num / den).abs() / mean * 100.0
        } else {
            values.iter().map(|v| (v - mean).abs()).fold(0.0, f64::max) / mean * 100.0
        };
        state.value_pct = pct;
        if pct <= c.limit_pct {
            state.attained = true;
            state.attained_at_s = Some((n as u64 * interval) as f64 / NS_PER_S as f64);
            self.stop_issuing_at = Some(now);
        }
    }
}

impl Source for JobSource {
    fn next_submission(&mut self, now: SimTime) -> Option<SimTime> {
        (!self.refill.is_empty()).then_some(now)
    }

    fn submit(&mut self, dev: &mut Device, _at: SimTime) {
        let k = self.refill.pop_front().expect("a stream to refill");
        self.issue(dev, k);
    }

    fn outstanding(&self) -> u64 {
        self.streams.iter().map(|s| s.outstanding).sum()
    }

    fn completed(&mut self, c: &Completion, _dev: &Device) -> bool {
        let k = (c.io.tag >> STREAM_SHIFT) as usize;
        self.streams[k].outstanding -= 1;
        self.refill.push_back(k);
        self.completed_ios += 1;
        true
    }

    fn intervals_closed(&mut self, rec: &Recorder, now: SimTime) {
        self.check_steady_state(rec, now);
    }

    /// Every stream has nothing outstanding: the job is over (the drive's own work, such as
    /// programs still queued, goes on under the next job).
    fn finished(&self) -> bool {
        self.streams.iter().all(|s| s.outstanding == 0)
    }
}

/// Run a whole job to its end.
pub fn run_job(
    dev: &mut Device,
    job: &CompiledJob,
    progress: &mut dyn FnMut(&JobRun),
) -> JobResult {
    let mut run = JobRun::new(dev, job, 0);
    let step = SimTime(NS_PER_S);
    let mut until = dev.now();
    loop {
        until = SimTime(until.ns() + step.ns());
        if run.advance(dev, until) {
            break;
        }
        progress(&run);
    }
    run.finish(dev)
}
