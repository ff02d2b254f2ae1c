//! A job checked against a drive and turned into numbers ([`CompiledJob`]), one concern at a
//! time: the direction and its offset modifier, the block sizes, alignment, the span, the
//! random distribution, how long the job runs, strided zones, the steady-state criterion, and
//! the limits on counts and times. Checks run in that order; each error names its option.

use super::distribution::Distribution;
use super::fdp::PlacementChoice;
use super::job::{parse_size, Job, SteadyCriterion, MAX_INTERVALS, MIN_LOG_INTERVAL_S};
use super::pacing::PaceOptions;
use super::zbd::ZbdOptions;
use crate::power::LinkPolicy;
use crate::time::NS_PER_S;

#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Pattern {
    Sequential,
    Random,
}

/// A job checked against a drive and turned into numbers.
#[derive(Clone, Debug)]
pub struct CompiledJob {
    pub job: Job,
    pub(super) pattern: Pattern,
    /// Percent of IOs that are reads (0 for pure writes, 100 for pure reads).
    pub(super) read_pct: u32,
    pub(super) trim: bool,
    /// (bytes, cumulative weight out of 100).
    pub(super) sizes: Vec<(u64, u32)>,
    /// bs=READ,WRITE,TRIM or bssplit=READ,WRITE,TRIM: the write and trim sizes (bytes,
    /// cumulative weight) where they differ from the read ones.
    pub(super) write_sizes: Option<Vec<(u64, u32)>>,
    pub(super) trim_sizes: Option<Vec<(u64, u32)>>,
    pub(super) align_bytes: u64,
    /// zonemode=strided: (zonesize, zonerange, zoneskip) in bytes.
    pub(super) zones: Option<(u64, u64, u64)>,
    /// bsrange: (smallest, largest) size; each IO draws one (a multiple of the smallest).
    pub(super) bs_range: Option<(u64, u64)>,
    /// fio's `rw=...:nr` (sequential): bytes added to each next offset.
    pub(super) seq_add: i64,
    /// fio's `rw=rand...:nr`: IOs in a row from each random offset.
    pub(super) ios_per_offset: u64,
    pub(super) span_start: u64,
    pub(super) span_bytes: u64,
    pub(super) io_bytes_max: Option<u64>,
    pub(super) runtime_ns: Option<u64>,
    pub(super) ramp_ns: u64,
    pub(super) startdelay_ns: u64,
    pub(super) steady: Option<SteadyCriterion>,
    pub(super) number_ios: Option<u64>,
    pub(super) distribution: Distribution,
    pub(super) interval_ns: u64,
    pub(super) link_power: LinkPolicy,
    /// fio's loops: passes of the job (`number_ios` and `io_bytes_max` are per pass).
    pub(super) loops: u64,
    /// fio's fdp / dataplacement=fdp: the placement identifier indices its writes take.
    pub(super) placement: Option<PlacementChoice>,
    /// fio's zonemode=zbd: how the job's IOs meet the zones.
    pub(super) zbd: Option<ZbdOptions>,
    /// fio's rate caps, think time, flow and minimum rates; None: issued as fast as the
    /// drive completes.
    pub(super) pace: Option<Box<PaceOptions>>,
}

impl CompiledJob {
    /// Does the job draw random numbers (offsets, sizes or read/write mix)? Only such jobs
    /// take a job ordinal, so a sequential fill, timed or not, leaves the streams of later
    /// jobs as they would be after the untimed fill.
    /// The job writes (fio's td_write: write, randwrite, rw, randrw).
    pub fn writes(&self) -> bool {
        !self.trim && self.read_pct < 100
    }

    pub fn uses_random_stream(&self) -> bool {
        self.pattern == Pattern::Random
            || self.sizes.len() > 1
            || [&self.write_sizes, &self.trim_sizes]
                .iter()
                .any(|l| l.as_ref().is_some_and(|l| l.len() > 1))
            || (self.read_pct > 0 && self.read_pct < 100)
    }
}

/// What `rw` says: the pattern, the share of reads, TRIM, and fio's offset modifier (bytes
/// added to each sequential offset, IOs per random offset).
struct Direction {
    pattern: Pattern,
    read_pct: u32,
    trim: bool,
    seq_add: i64,
    ios_per_offset: u64,
}

/// The block sizes of each direction ((bytes, cumulative weight) lists) and bsrange's range.
struct BlockSizes {
    sizes: Vec<(u64, u32)>,
    write_sizes: Option<Vec<(u64, u32)>>,
    trim_sizes: Option<Vec<(u64, u32)>>,
    bs_range: Option<(u64, u64)>,
}

impl BlockSizes {
    fn all(&self) -> impl Iterator<Item = u64> + '_ {
        self.sizes
            .iter()
            .chain(self.write_sizes.iter().flatten())
            .chain(self.trim_sizes.iter().flatten())
            .map(|&(b, _)| b)
    }

    /// The smallest size of each direction (read, write, trim): fio's min_bs.
    fn smallest(&self) -> [u64; 3] {
        let min = |l: &[(u64, u32)]| l.iter().map(|&(b, _)| b).min().unwrap_or(4096);
        let r = min(&self.sizes);
        let w = self.write_sizes.as_deref().map_or(r, min);
        [r, w, self.trim_sizes.as_deref().map_or(w, min)]
    }
}

/// How long a job runs: a runtime, a count of IOs, a byte limit (per pass).
struct RunLength {
    runtime_ns: Option<u64>,
    number_ios: Option<u64>,
    io_bytes_max: Option<u64>,
}

impl Job {
    /// Check the job against a drive of `user_bytes`; errors name the option.
    pub fn compile(&self, user_bytes: u64) -> Result<CompiledJob, String> {
        let Direction {
            pattern,
            read_pct,
            trim,
            seq_add,
            ios_per_offset,
        } = self.direction()?;
        let bs = self.block_sizes()?;
        let bs_max = bs.all().max().unwrap();
        let bs_min = bs.all().min().unwrap();
        let align_bytes = self.alignment(bs_min)?;
        if self.iodepth == 0 || self.iodepth > 65_536 {
            return Err(format!(
                "iodepth: {} is out of range; accepted: 1 to 65536",
                self.iodepth
            ));
        }
        let (span_start, span_bytes) = self.span(user_bytes, align_bytes, bs_max)?;
        let distribution = self.distribution(span_bytes, align_bytes, bs_min)?;
        let RunLength {
            runtime_ns,
            number_ios,
            io_bytes_max,
        } = self.run_length(span_bytes)?;
        let zbd = self.zbd_options(bs_max)?;
        let zones = if zbd.is_some() {
            None
        } else {
            self.zones(bs_max, span_bytes)?
        };
        // fio counts the bytes a strided job skips toward its size: it ends when what it
        // transferred and skipped covers the limit.
        let io_bytes_max = match (io_bytes_max, zones) {
            (Some(limit), Some((size, _, skip))) if skip > 0 => {
                let zones_whole = limit / (size + skip);
                let rest = limit - zones_whole * (size + skip);
                Some(zones_whole * size + rest.min(size))
            }
            (limit, _) => limit,
        };
        let steady = self.steady()?;
        self.check_counts_and_times(runtime_ns)?;
        let pace = self
            .pace_options(bs.smallest(), self.bssplit.is_some())?
            .map(Box::new);
        let link_power = LinkPolicy::parse(&self.link_power).ok_or_else(|| {
            format!(
                "link_power: '{}' is not a policy; accepted: {}",
                self.link_power,
                LinkPolicy::NAMES
            )
        })?;
        Ok(CompiledJob {
            job: self.clone(),
            pattern,
            read_pct,
            trim,
            sizes: bs.sizes,
            write_sizes: bs.write_sizes,
            trim_sizes: bs.trim_sizes,
            align_bytes,
            zones,
            bs_range: bs.bs_range,
            seq_add,
            ios_per_offset,
            span_start,
            span_bytes,
            io_bytes_max,
            runtime_ns,
            ramp_ns: (self.ramp_time_s * NS_PER_S as f64) as u64,
            startdelay_ns: (self.startdelay_s * NS_PER_S as f64) as u64,
            steady,
            number_ios,
            distribution,
            interval_ns: (self.log_interval_s * NS_PER_S as f64) as u64,
            link_power,
            loops: u64::from(self.loops),
            placement: self.placement_choice()?,
            zbd,
            pace,
        })
    }

    /// `rw` (with its `:` modifier) and `rwmixread`.
    fn direction(&self) -> Result<Direction, String> {
        let (rw, modifier) = match self.rw.split_once(':') {
            Some((rw, m)) => (rw.trim(), Some(m.trim())),
            None => (self.rw.trim(), None),
        };
        let (pattern, read_pct, trim) = match rw {
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
        // fio's offset modifier: bytes added to each sequential offset, or IOs per random
        // offset.
        let (seq_add, ios_per_offset) = match (modifier, pattern) {
            (None, _) => (0i64, 1u64),
            (Some(m), Pattern::Sequential) => {
                let (neg, v) = match m.strip_prefix('-') {
                    Some(v) => (true, v),
                    None => (false, m),
                };
                let bytes = parse_size(v).map_err(|e| format!("rw: the :{m} after {rw}: {e}"))?;
                let bytes = i64::try_from(bytes).map_err(|_| format!("rw: :{m} is too large"))?;
                (if neg { -bytes } else { bytes }, 1)
            }
            (Some(m), Pattern::Random) => match m.parse::<u64>() {
                Ok(n) if n >= 1 => (0, n),
                _ => {
                    return Err(format!(
                        "rw: the :{m} after {rw} is not a count; accepted: a whole number of IOs per random offset, 1 or more"
                    ))
                }
            },
        };
        if self.rwmixread > 100 {
            return Err(format!(
                "rwmixread: {} is not a percentage (0..100)",
                self.rwmixread
            ));
        }
        Ok(Direction {
            pattern,
            read_pct,
            trim,
            seq_add,
            ios_per_offset,
        })
    }

    /// bs (one size, or `READ,WRITE[,TRIM]`), bssplit and bsrange.
    fn block_sizes(&self) -> Result<BlockSizes, String> {
        let mut sizes = Vec::new();
        let mut bs_range = None;
        if let Some(range) = self.bsrange.as_deref().filter(|_| self.bssplit.is_none()) {
            let (lo, hi) = range.split_once('-').ok_or_else(|| {
                format!("bsrange: '{range}' is not MIN-MAX; accepted: e.g. 512-64k (one range for every direction)")
            })?;
            let lo = parse_size(lo).map_err(|e| format!("bsrange: {e}"))?;
            let hi = parse_size(hi).map_err(|e| format!("bsrange: {e}"))?;
            if lo > hi {
                return Err(format!("bsrange: '{range}': MIN is above MAX"));
            }
            // The largest size bounds the span check; the smallest aligns.
            sizes.push((lo, 0));
            sizes.push((hi, 100));
            bs_range = Some((lo, hi));
        }
        // fio's bssplit=READ[,WRITE[,TRIM]]: one list per direction; a missing one takes the
        // list before it.
        let (mut write_sizes, mut trim_sizes) = (None, None);
        match &self.bssplit {
            Some(split) => {
                let lists: Vec<&str> = split.split(',').map(str::trim).collect();
                if lists.len() > 3 {
                    return Err(format!(
                        "bssplit: '{split}' has {} lists; accepted: READ[,WRITE[,TRIM]]",
                        lists.len()
                    ));
                }
                sizes = parse_bssplit(lists[0])?;
                let write = lists.get(1).map(|l| parse_bssplit(l)).transpose()?;
                let trim = lists.get(2).map(|l| parse_bssplit(l)).transpose()?;
                trim_sizes = trim.or_else(|| write.clone()).filter(|t| *t != sizes);
                write_sizes = write.filter(|w| *w != sizes);
            }
            None if bs_range.is_some() => {}
            None if !self.bs.contains(',') => {
                sizes.push((parse_size(&self.bs).map_err(|e| format!("bs: {e}"))?, 100))
            }
            None => {}
        }
        // fio's bs=READ,WRITE[,TRIM]: an empty place takes fio's default (4k); a missing
        // one takes the place before it.
        if self.bssplit.is_none() && bs_range.is_none() && self.bs.contains(',') {
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
            write_sizes = (write != read).then(|| vec![(write, 100)]);
            trim_sizes = (trim != read).then(|| vec![(trim, 100)]);
        }
        let bs = BlockSizes {
            sizes,
            write_sizes,
            trim_sizes,
            bs_range,
        };
        if bs.all().any(|b| b == 0 || b % 512 != 0) {
            return Err("bs: every block size must be a positive multiple of 512 bytes".into());
        }
        Ok(bs)
    }

    /// blockalign (default: the smallest block size, `bs_min`).
    fn alignment(&self, bs_min: u64) -> Result<u64, String> {
        Ok(match &self.blockalign {
            Some(a) => {
                let a = parse_size(a).map_err(|e| format!("blockalign: {e}"))?;
                if a == 0 || a % 512 != 0 {
                    return Err(format!(
                        "blockalign: {a} bytes; accepted: a positive multiple of 512"
                    ));
                }
                a
            }
            None => bs_min,
        })
    }

    /// offset and size: where the span starts and its bytes (whole alignment units, at least
    /// the largest block).
    fn span(&self, user_bytes: u64, align_bytes: u64, bs_max: u64) -> Result<(u64, u64), String> {
        let span_start = if let Some(pct) = self.offset.trim().strip_suffix('%') {
            let p: f64 = pct
                .trim()
                .parse()
                .map_err(|_| format!("offset: '{}' is not a percentage", self.offset))?;
            if !(0.0..100.0).contains(&p) {
                return Err(format!("offset: {p}% is outside 0..100%"));
            }
            ((user_bytes as f64 * p / 100.0) as u64) / align_bytes * align_bytes
        } else if let Some(z) = self.zoned_size(&self.offset) {
            z.map_err(|e| format!("offset: {e}"))?
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
                } else if let Some(z) = self.zoned_size(s) {
                    z.map_err(|e| format!("size: {e}"))?
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
        Ok((span_start, span_bytes))
    }

    /// random_distribution (and random_sequence_stride) over the span's blocks.
    fn distribution(
        &self,
        span_bytes: u64,
        align_bytes: u64,
        bs_min: u64,
    ) -> Result<Distribution, String> {
        // A block is usable when the smallest IO fits in the span from it.
        let distribution = Distribution::parse(
            &self.random_distribution,
            self.random_sequence_stride,
            span_bytes / align_bytes,
            (span_bytes - bs_min) / align_bytes + 1,
            align_bytes,
        )?;
        if self.random_sequence_stride && !matches!(distribution, Distribution::Sequence { .. }) {
            return Err("random_sequence_stride: applies to random_distribution=sequence:...; accepted: false otherwise".into());
        }
        Ok(distribution)
    }

    /// runtime, time_based, number_ios and io_size.
    fn run_length(&self, span_bytes: u64) -> Result<RunLength, String> {
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
        let number_ios = self.number_ios.filter(|&n| n > 0);
        let io_bytes_max = match &self.io_size {
            Some(s) => Some(parse_size(s).map_err(|e| format!("io_size: {e}"))?),
            None if self.time_based || number_ios.is_some() => None,
            None => Some(span_bytes),
        };
        Ok(RunLength {
            runtime_ns,
            number_ios,
            io_bytes_max,
        })
    }

    /// zonesize, zonerange and zoneskip (fio's zonemode=strided), in bytes.
    fn zones(&self, bs_max: u64, span_bytes: u64) -> Result<Option<(u64, u64, u64)>, String> {
        Ok(match &self.zonesize {
            None => {
                if self.zonerange.is_some() || self.zoneskip.is_some() {
                    return Err(
                        "zonerange, zoneskip: only with zonesize (fio's zonemode=strided)".into(),
                    );
                }
                None
            }
            Some(z) => {
                let size = parse_size(z).map_err(|e| format!("zonesize: {e}"))?;
                let range = match &self.zonerange {
                    Some(r) => parse_size(r).map_err(|e| format!("zonerange: {e}"))?,
                    None => size,
                };
                let skip = match &self.zoneskip {
                    Some(k) => parse_size(k).map_err(|e| format!("zoneskip: {e}"))?,
                    None => 0,
                };
                if size == 0 || size % bs_max != 0 || range < bs_max || range > span_bytes {
                    return Err(format!(
                        "zonesize: {size} bytes with zonerange {range}: accepted: a zonesize that is a multiple of \
                         the largest block size ({bs_max} bytes), a zonerange of at least one block and at most \
                         the span ({span_bytes} bytes)"
                    ));
                }
                Some((size, range, skip))
            }
        })
    }

    /// ss, ss_dur and ss_ramp: fio's steady-state criterion.
    fn steady(&self) -> Result<Option<SteadyCriterion>, String> {
        Ok(match &self.ss {
            None => None,
            Some(spec) => {
                let (metric, limit) = spec.split_once(':').ok_or_else(|| {
                    format!("ss: '{spec}'; accepted: iops:P%, iops_slope:P%, bw:P%, bw_slope:P%, lat:P%, lat_slope:P%")
                })?;
                let latency = matches!(metric.trim(), "lat" | "lat_slope");
                let (bytes, slope) = match metric.trim() {
                    "lat" => (false, false),
                    "lat_slope" => (false, true),
                    "iops" => (false, false),
                    "iops_slope" => (false, true),
                    "bw" => (true, false),
                    "bw_slope" => (true, true),
                    m => {
                        return Err(format!(
                            "ss: '{m}'; accepted: iops, iops_slope, bw, bw_slope, lat, lat_slope (each :P%)"
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
                    latency,
                    slope,
                    limit_pct,
                    dur_intervals: dur,
                    ramp_ns: (self.ss_ramp_s * NS_PER_S as f64) as u64,
                })
            }
        })
    }

    /// numjobs, ramp_time, startdelay, log_interval (against the runtime) and loops.
    fn check_counts_and_times(&self, runtime_ns: Option<u64>) -> Result<(), String> {
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
        if !(self.startdelay_s >= 0.0 && self.startdelay_s < 1e9) {
            return Err(format!(
                "startdelay: {} must be 0 or more seconds (below 10^9)",
                self.startdelay_s
            ));
        }
        // The series keeps one row per interval: bounded so that a typo (1e-9) cannot grow it
        // past memory. The shortest is fio's log_avg_msec unit; a timed run has at most
        // MAX_INTERVALS of them.
        if !(self.log_interval_s >= MIN_LOG_INTERVAL_S && self.log_interval_s.is_finite()) {
            return Err(format!(
                "log_interval: {} s; accepted: a finite number of seconds of at least {MIN_LOG_INTERVAL_S} (fio's log_avg_msec is in whole milliseconds)",
                self.log_interval_s
            ));
        }
        if let Some(r) = runtime_ns {
            let intervals = r as f64 / NS_PER_S as f64 / self.log_interval_s;
            if intervals > MAX_INTERVALS as f64 {
                return Err(format!(
                    "log_interval: {} s over a {} s runtime is {intervals:.0} intervals; accepted: at most {MAX_INTERVALS} (each is a row of the series kept in memory): a longer interval",
                    self.log_interval_s,
                    r as f64 / NS_PER_S as f64
                ));
            }
        }
        if self.loops == 0 {
            return Err("loops: 0; accepted: 1 or more".into());
        }
        Ok(())
    }
}

/// One bssplit list ("4k/50:1k/:32k/"): (bytes, cumulative percent) in the order given; blank
/// percentages share what the others leave evenly, as fio fills them (the last blank takes
/// the remainder of the division).
fn parse_bssplit(list: &str) -> Result<Vec<(u64, u32)>, String> {
    let mut parts = Vec::new();
    for part in list.split(':').filter(|p| !p.trim().is_empty()) {
        let (size, pct) = part
            .split_once('/')
            .ok_or_else(|| format!("bssplit: '{part}' is not size/percent"))?;
        let bytes = parse_size(size).map_err(|e| format!("bssplit: {e}"))?;
        let pct =
            match pct.trim() {
                "" => None,
                p => Some(p.parse::<u32>().ok().filter(|&p| p <= 100).ok_or_else(|| {
                    format!("bssplit: '{p}' is not a whole percentage (0 to 100)")
                })?),
            };
        parts.push((bytes, pct));
    }
    if parts.is_empty() {
        return Err(format!(
            "bssplit: '{list}' names no size; accepted: SIZE/PCT pairs joined by ':'"
        ));
    }
    let given: u32 = parts.iter().filter_map(|p| p.1).sum();
    let blanks = parts.iter().filter(|p| p.1.is_none()).count() as u32;
    if given > 100 || (blanks == 0 && given != 100) {
        return Err(format!("bssplit: percentages add up to {given}, not 100"));
    }
    let share = (100 - given).checked_div(blanks).unwrap_or(0);
    let mut rest = (100 - given).checked_rem(blanks).unwrap_or(0);
    let mut total = 0;
    let mut out = Vec::with_capacity(parts.len());
    let mut blanks_left = blanks;
    for (bytes, pct) in parts {
        let pct = pct.unwrap_or_else(|| {
            blanks_left -= 1;
            if blanks_left == 0 {
                share + std::mem::take(&mut rest)
            } else {
                share
            }
        });
        total += pct;
        out.push((bytes, total));
    }
    Ok(out)
}
