//! fio-like jobs: what to submit, how much, how deep; and the closed-loop runner that keeps
//! `iodepth` commands in flight and records what the host sees.

use crate::device::{Completion, Device, HostIo, IoKind};
use crate::record::{Recorder, Sample};
use crate::rng::Rng;
use crate::session::{Session, Source};
use crate::stats::{IntervalSeries, OpSummary};
use crate::time::{SimTime, NS_PER_S};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// A job as a user writes it, in fio's option names and units (sizes as fio strings: "4k",
/// "128KiB", "8g", offsets also as "25%").
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct Job {
    pub name: String,
    /// read, write, randread, randwrite, randrw, rw (readwrite), trim, randtrim.
    pub rw: String,
    pub bs: String,
    /// "4k/50:64k/40:128k/10": sizes and percentages; overrides bs.
    pub bssplit: Option<String>,
    pub iodepth: u32,
    /// Start of the LBA span.
    pub offset: String,
    /// Length of the LBA span (default: to the end of the drive).
    pub size: Option<String>,
    /// Total bytes to transfer (default: `size`, unless time_based or number_ios).
    pub io_size: Option<String>,
    /// Simulated seconds to run.
    pub runtime_s: Option<f64>,
    /// Keep going until runtime even after `io_size` bytes.
    pub time_based: bool,
    pub number_ios: Option<u64>,
    pub rwmixread: u32,
    /// random (uniform), zipf:theta, pareto:h.
    pub random_distribution: String,
    pub randseed: u64,
    /// Interval of the time series, simulated seconds.
    pub log_interval_s: f64,
    /// fio's ramp_time: run this many simulated seconds before measuring anything (the
    /// runtime follows it; every result, series and counter covers the measured part only).
    pub ramp_time_s: f64,
    /// fio's numjobs: this many copies of the job at once on the drive, each its own random
    /// stream and its own `iodepth` queue; results are reported together (group_reporting).
    pub numjobs: u32,
    /// fio's steady-state detection: "iops:0.3%", "iops_slope:0.1%", "bw:..." or "bw_slope:...";
    /// the job stops once the last `ss_dur_s` of per-interval figures meet it (after
    /// `ss_ramp_s`), or runs to its end.
    pub ss: Option<String>,
    pub ss_dur_s: f64,
    pub ss_ramp_s: f64,
}

/// A steady-state criterion (fio's `ss`).
#[derive(Clone, Copy, Debug, PartialEq)]
struct SteadyCriterion {
    bytes: bool,
    slope: bool,
    limit_pct: f64,
    dur_intervals: usize,
    ramp_ns: u64,
}

/// What steady-state detection found (fio's "steadystate" section).
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct SteadyState {
    pub criterion: String,
    pub attained: bool,
    /// Seconds into the measured run when it was attained (the job stopped issuing then).
    pub attained_at_s: Option<f64>,
    /// The last window's figure: max deviation from its mean, or the slope of its least
    /// squares line, in percent of the mean.
    pub value_pct: f64,
}

impl Default for Job {
    fn default() -> Self {
        Job {
            name: "job".into(),
            rw: "read".into(),
            bs: "4k".into(),
            bssplit: None,
            iodepth: 1,
            offset: "0".into(),
            size: None,
            io_size: None,
            runtime_s: None,
            time_based: false,
            number_ios: None,
            rwmixread: 50,
            random_distribution: "random".into(),
            randseed: 0,
            log_interval_s: 1.0,
            ramp_time_s: 0.0,
            numjobs: 1,
            ss: None,
            ss_dur_s: 0.0,
            ss_ramp_s: 0.0,
        }
    }
}

/// Parse a fio size: a number with an optional suffix (k, m, g, t, p; KiB, MiB...; powers of
/// 1024 as fio's default kb_base; kB/MB with a capital B... are also 1024-based in fio unless
/// kb_base=1000, which is not supported).
pub fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, suffix) = t.split_at(split);
    if num.is_empty() {
        return Err(format!("'{text}' is not a size; accepted: a number with an optional k/m/g/t suffix, e.g. 4k, 128KiB, 8g"));
    }
    let value: f64 = num.parse().map_err(|_| format!("'{text}' is not a size"))?;
    let shift = match suffix.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        "p" | "pb" | "pib" => 50,
        other => return Err(format!("'{text}': unknown size suffix '{other}'; accepted: k, m, g, t, p (optionally with B or iB)")),
    };
    let bytes = value * (1u64 << shift) as f64;
    if bytes.fract() != 0.0 {
        return Err(format!("'{text}' is not a whole number of bytes"));
    }
    Ok(bytes as u64)
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Pattern {
    Sequential,
    Random,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Distribution {
    Uniform,
    /// Zipf with exponent theta, sampled by inverting the continuous approximation of its CDF.
    Zipf(f64),
    /// fio's pareto:h: rank = (n - 1) * u^(ln h / ln(1 - h)).
    Pareto(f64),
}

/// A job checked against a drive and turned into numbers.
#[derive(Clone, Debug)]
pub struct CompiledJob {
    pub job: Job,
    pattern: Pattern,
    /// Percent of IOs that are reads (0 for pure writes, 100 for pure reads).
    read_pct: u32,
    trim: bool,
    /// (bytes, cumulative weight out of 100).
    sizes: Vec<(u64, u32)>,
    /// bs=READ,WRITE,TRIM: the write and trim sizes where they differ from the read size.
    write_size: Option<u64>,
    trim_size: Option<u64>,
    align_bytes: u64,
    span_start: u64,
    span_bytes: u64,
    io_bytes_max: Option<u64>,
    runtime_ns: Option<u64>,
    ramp_ns: u64,
    steady: Option<SteadyCriterion>,
    number_ios: Option<u64>,
    distribution: Distribution,
    interval_ns: u64,
}

impl CompiledJob {
    /// Does the job draw random numbers (offsets, sizes or read/write mix)? Only such jobs
    /// take a job ordinal, so a sequential fill, timed or not, leaves the streams of later
    /// jobs as they would be after the untimed fill.
    pub fn uses_random_stream(&self) -> bool {
        self.pattern == Pattern::Random
            || self.sizes.len() > 1
            || (self.read_pct > 0 && self.read_pct < 100)
    }
}

impl Job {
    /// Check the job against a drive of `user_bytes`; errors name the option.
    pub fn compile(&self, user_bytes: u64) -> Result<CompiledJob, String> {
        let (pattern, read_pct, trim) = match self.rw.as_str() {
            "read" => (Pattern::Sequential, 100, false),
            "write" => (Pattern::Sequential, 0, false),
            "randread" => (Pattern::Random, 100, false),
            "randwrite" => (Pattern::Random, 0, false),
            "randrw" => (Pattern::Random, self.rwmixread, false),
            "rw" | "readwrite" => (Pattern::Sequential, self.rwmixread, false),
            "trim" => (Pattern::Sequential, 0, true),
            "randtrim" => (Pattern::Random, 0, true),
            other => {
                return Err(format!(
                    "rw: '{other}' is not supported; accepted: read, write, randread, randwrite, randrw, rw, readwrite, trim, randtrim"
                ))
            }
        };
        if self.rwmixread > 100 {
            return Err(format!(
                "rwmixread: {} is not a percentage (0..100)",
                self.rwmixread
            ));
        }
        let mut sizes = Vec::new();
        match &self.bssplit {
            Some(split) => {
                let mut total = 0;
                for part in split.split(':').filter(|p| !p.is_empty()) {
                    let (size, pct) = part
                        .split_once('/')
                        .ok_or_else(|| format!("bssplit: '{part}' is not size/percent"))?;
                    let bytes = parse_size(size).map_err(|e| format!("bssplit: {e}"))?;
                    let pct: u32 = pct
                        .trim()
                        .parse()
                        .map_err(|_| format!("bssplit: '{pct}' is not a whole percentage"))?;
                    total += pct;
                    sizes.push((bytes, total));
                }
                if total != 100 {
                    return Err(format!("bssplit: percentages add up to {total}, not 100"));
                }
            }
            None if !self.bs.contains(',') => {
                sizes.push((parse_size(&self.bs).map_err(|e| format!("bs: {e}"))?, 100))
            }
            None => {}
        }
        // fio's bs=READ,WRITE[,TRIM]: an empty place takes fio's default (4k); a missing
        // one takes the place before it.
        let (mut write_size, mut trim_size) = (None, None);
        if self.bssplit.is_none() && self.bs.contains(',') {
            let parts: Vec<&str> = self.bs.split(',').map(str::trim).collect();
            if parts.len() > 3 {
                return Err(format!(
                    "bs: '{}' has {} sizes; accepted: READ[,WRITE[,TRIM]]",
                    self.bs,
                    parts.len()
                ));
            }
            let size = |p: &str| -> Result<u64, String> {
                parse_size(if p.is_empty() { "4k" } else { p }).map_err(|e| format!("bs: {e}"))
            };
            let read = size(parts[0])?;
            let write = parts.get(1).map(|p| size(p)).transpose()?.unwrap_or(read);
            let trim = parts.get(2).map(|p| size(p)).transpose()?.unwrap_or(write);
            sizes.push((read, 100));
            write_size = (write != read).then_some(write);
            trim_size = (trim != read).then_some(trim);
        }
        let all_sizes = || {
            sizes
                .iter()
                .map(|&(b, _)| b)
                .chain(write_size)
                .chain(trim_size)
        };
        if all_sizes().any(|b| b == 0 || b % 512 != 0) {
            return Err("bs: every block size must be a positive multiple of 512 bytes".into());
        }
        let bs_max = all_sizes().max().unwrap();
        let align_bytes = all_sizes().min().unwrap();
        if self.iodepth == 0 || self.iodepth > 65_536 {
            return Err(format!(
                "iodepth: {} is out of range; accepted: 1 to 65536",
                self.iodepth
            ));
        }
        let span_start = if let Some(pct) = self.offset.trim().strip_suffix('%') {
            let p: f64 = pct
                .trim()
                .parse()
                .map_err(|_| format!("offset: '{}' is not a percentage", self.offset))?;
            if !(0.0..100.0).contains(&p) {
                return Err(format!("offset: {p}% is outside 0..100%"));
            }
            ((user_bytes as f64 * p / 100.0) as u64) / align_bytes * align_bytes
        } else {
            parse_size(&self.offset).map_err(|e| format!("offset: {e}"))?
        };
        if span_start >= user_bytes {
            return Err(format!(
                "offset: {span_start} bytes is beyond the drive's {user_bytes} bytes"
            ));
        }
        let span_bytes = match &self.size {
            Some(s) => {
                let v = if let Some(pct) = s.trim().strip_suffix('%') {
                    let p: f64 = pct
                        .trim()
                        .parse()
                        .map_err(|_| format!("size: '{s}' is not a percentage"))?;
                    (user_bytes as f64 * p / 100.0) as u64
                } else {
                    parse_size(s).map_err(|e| format!("size: {e}"))?
                };
                if span_start + v > user_bytes {
                    return Err(format!("size: offset {span_start} + size {v} bytes exceeds the drive's {user_bytes} bytes"));
                }
                v
            }
            None => user_bytes - span_start,
        };
        let span_bytes = span_bytes / align_bytes * align_bytes;
        if span_bytes < bs_max {
            return Err(format!(
                "size: the span ({span_bytes} bytes) is smaller than the block size ({bs_max})"
            ));
        }
        let distribution = match self.random_distribution.split_once(':') {
            None if self.random_distribution == "random" => Distribution::Uniform,
            Some(("zipf", v)) => {
                let theta: f64 = v.parse().map_err(|_| format!("random_distribution: '{v}' is not a number"))?;
                if theta.is_nan() || theta <= 0.0 || theta == 1.0 {
                    return Err("random_distribution: zipf theta must be > 0 and not 1".into());
                }
                Distribution::Zipf(theta)
            }
            Some(("pareto", v)) => {
                let h: f64 = v.parse().map_err(|_| format!("random_distribution: '{v}' is not a number"))?;
                if !(h > 0.0 && h < 1.0) {
                    return Err("random_distribution: pareto h must be in (0, 1)".into());
                }
                Distribution::Pareto(h)
            }
            _ => {
                return Err(format!(
                    "random_distribution: '{}' is not supported; accepted: random, zipf:THETA, pareto:H",
                    self.random_distribution
                ))
            }
        };
        let runtime_ns = match self.runtime_s {
            Some(r) if !(r > 0.0 && r.is_finite()) => {
                return Err(format!("runtime: {r} must be a positive number of seconds"))
            }
            Some(r) => Some((r * NS_PER_S as f64) as u64),
            None => None,
        };
        if self.time_based && runtime_ns.is_none() {
            return Err("time_based: needs runtime".into());
        }
        let io_bytes_max = match &self.io_size {
            Some(s) => Some(parse_size(s).map_err(|e| format!("io_size: {e}"))?),
            None if self.time_based || self.number_ios.is_some() => None,
            None => Some(span_bytes),
        };
        let steady = match &self.ss {
            None => None,
            Some(spec) => {
                let (metric, limit) = spec.split_once(':').ok_or_else(|| {
                    format!("ss: '{spec}'; accepted: iops:P%, iops_slope:P%, bw:P%, bw_slope:P%")
                })?;
                let (bytes, slope) = match metric.trim() {
                    "iops" => (false, false),
                    "iops_slope" => (false, true),
                    "bw" => (true, false),
                    "bw_slope" => (true, true),
                    m => {
                        return Err(format!(
                            "ss: '{m}'; accepted: iops, iops_slope, bw, bw_slope (each :P%)"
                        ))
                    }
                };
                let limit_pct: f64 = limit
                    .trim()
                    .trim_end_matches('%')
                    .parse()
                    .ok()
                    .filter(|p: &f64| *p > 0.0 && p.is_finite())
                    .ok_or_else(|| {
                        format!("ss: '{limit}' is not a positive percentage, e.g. 0.3%")
                    })?;
                if !(self.ss_dur_s > 0.0 && self.ss_dur_s.is_finite()) {
                    return Err("ss_dur: needed with ss, a positive time (e.g. 300s)".into());
                }
                if !(self.ss_ramp_s >= 0.0 && self.ss_ramp_s.is_finite()) {
                    return Err("ss_ramp: must be 0 or more seconds".into());
                }
                let dur = (self.ss_dur_s / self.log_interval_s).round().max(2.0) as usize;
                Some(SteadyCriterion {
                    bytes,
                    slope,
                    limit_pct,
                    dur_intervals: dur,
                    ramp_ns: (self.ss_ramp_s * NS_PER_S as f64) as u64,
                })
            }
        };
        if self.numjobs == 0 || self.numjobs > 1024 {
            return Err(format!(
                "numjobs: {} is out of range; accepted: 1 to 1024",
                self.numjobs
            ));
        }
        if self.numjobs as u64 * self.iodepth as u64 > 65_536 {
            return Err(format!(
                "numjobs: {} jobs x iodepth {} exceed 65536 commands in flight",
                self.numjobs, self.iodepth
            ));
        }
        if !(self.ramp_time_s >= 0.0 && self.ramp_time_s.is_finite()) {
            return Err(format!(
                "ramp_time: {} must be 0 or more seconds",
                self.ramp_time_s
            ));
        }
        if self.log_interval_s.is_nan() || self.log_interval_s <= 0.0 {
            return Err("log_interval: must be a positive number of seconds".into());
        }
        Ok(CompiledJob {
            job: self.clone(),
            pattern,
            read_pct,
            trim,
            sizes,
            write_size,
            trim_size,
            align_bytes,
            span_start,
            span_bytes,
            io_bytes_max,
            runtime_ns,
            ramp_ns: (self.ramp_time_s * NS_PER_S as f64) as u64,
            steady,
            number_ios: self.number_ios,
            distribution,
            interval_ns: (self.log_interval_s * NS_PER_S as f64) as u64,
        })
    }
}

/// Produces the job's IOs in order.
struct Generator {
    rng: Rng,
    cursor: u64,
    slots: u64,
    /// An odd multiplier coprime with `slots`: rank -> slot scattering for skewed
    /// distributions, so hot blocks are spread over the span as fio does.
    scatter: u64,
}

impl Generator {
    /// `ordinal` counts the random jobs run on the drive before this one: back-to-back jobs with the
    /// same randseed get fresh streams (a repeated stream would rewrite LBAs in the order they
    /// were last written, an unrealistically kind pattern for the FTL).
    fn new(job: &CompiledJob, seed: u64, ordinal: u64) -> Self {
        let slots = job.span_bytes / job.align_bytes;
        let mut scatter = (0x9E37_79B9_7F4A_7C15u64 % slots.max(1)) | 1;
        while gcd(scatter, slots) != 1 {
            scatter += 2;
        }
        Generator {
            rng: Rng::derive(seed, &format!("workload/{}/{ordinal}", job.job.randseed)),
            cursor: 0,
            slots,
            scatter,
        }
    }

    fn next(&mut self, job: &CompiledJob) -> (IoKind, u64, u64) {
        let size = if job.sizes.len() == 1 {
            job.sizes[0].0
        } else {
            let r = self.rng.below(100) as u32;
            job.sizes.iter().find(|&&(_, cum)| r < cum).unwrap().0
        };
        let kind = if job.trim {
            IoKind::Trim
        } else if job.read_pct == 100
            || (job.read_pct > 0 && (self.rng.below(100) as u32) < job.read_pct)
        {
            IoKind::Read
        } else {
            IoKind::Write
        };
        let size = match kind {
            IoKind::Write => job.write_size.unwrap_or(size),
            IoKind::Trim => job.trim_size.unwrap_or(size),
            _ => size,
        };
        let offset = match job.pattern {
            Pattern::Sequential => {
                if self.cursor + size > job.span_bytes {
                    self.cursor = 0;
                }
                let o = self.cursor;
                self.cursor += size;
                o
            }
            Pattern::Random => {
                let slot = match job.distribution {
                    Distribution::Uniform => self.rng.below(self.slots),
                    Distribution::Zipf(theta) => {
                        let n = self.slots as f64;
                        let u = self.rng.unit_f64();
                        let a = 1.0 - theta;
                        let rank = (1.0 + u * (n.powf(a) - 1.0)).powf(1.0 / a) as u64;
                        self.scattered(rank.saturating_sub(1))
                    }
                    Distribution::Pareto(h) => {
                        let power = h.ln() / (1.0 - h).ln();
                        let rank =
                            ((self.slots - 1) as f64 * self.rng.unit_f64().powf(power)) as u64;
                        self.scattered(rank)
                    }
                };
                (slot * job.align_bytes).min(job.span_bytes - size) / job.align_bytes
                    * job.align_bytes
            }
        };
        (kind, job.span_start + offset, size)
    }

    fn scattered(&self, rank: u64) -> u64 {
        ((rank.min(self.slots - 1) as u128 * self.scatter as u128) % self.slots as u128) as u64
    }
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

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

    fn completed(&mut self, c: &Completion, _now: SimTime) -> bool {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_like_fio() {
        assert_eq!(parse_size("4k"), Ok(4096));
        assert_eq!(parse_size("128KiB"), Ok(131072));
        assert_eq!(parse_size("8g"), Ok(8 << 30));
        assert_eq!(parse_size("512"), Ok(512));
        assert!(parse_size("4q")
            .unwrap_err()
            .contains("unknown size suffix"));
        assert!(parse_size("k").is_err());
    }

    #[test]
    fn compile_rejects_bad_options() {
        let j = |f: &dyn Fn(&mut Job)| {
            let mut job = Job::default();
            f(&mut job);
            job.compile(1 << 30).unwrap_err()
        };
        assert!(j(&|x| x.rw = "randomwrite".into()).starts_with("rw:"));
        assert!(j(&|x| x.iodepth = 0).starts_with("iodepth:"));
        assert!(j(&|x| x.bssplit = Some("4k/50:8k/40".into())).contains("add up to 90"));
        assert!(j(&|x| x.size = Some("2g".into())).starts_with("size:"));
        assert!(j(&|x| x.random_distribution = "gauss".into()).starts_with("random_distribution:"));
        assert!(j(&|x| x.bs = "1000".into()).starts_with("bs:"));
    }

    #[test]
    fn zipf_is_skewed_and_in_range() {
        let job = Job {
            rw: "randread".into(),
            random_distribution: "zipf:1.2".into(),
            number_ios: Some(1),
            ..Job::default()
        };
        let c = job.compile(1 << 30).unwrap();
        let mut g = Generator::new(&c, 1, 0);
        let mut counts = std::collections::BTreeMap::new();
        for _ in 0..100_000 {
            let (_, off, len) = g.next(&c);
            assert!(off + len <= 1 << 30);
            *counts.entry(off).or_insert(0u32) += 1;
        }
        let mut v: Vec<u32> = counts.into_values().collect();
        v.sort_unstable_by(|a, b| b.cmp(a));
        let top: u32 = v.iter().take(100).sum();
        assert!(
            top > 30_000,
            "top 100 of 262144 blocks took {top} of 100000 IOs"
        );
    }
}
