//! Jobs as users write them (fio's option names and units), checked against a drive and
//! turned into numbers ([`CompiledJob`]); fio's size syntax ([`parse_size`]).

use super::distribution::Distribution;
use crate::power::LinkPolicy;
use crate::time::NS_PER_S;
use serde::{Deserialize, Serialize};

/// The shortest interval of the per-interval series, seconds (fio's `log_avg_msec` unit).
pub const MIN_LOG_INTERVAL_S: f64 = 0.001;
/// The most intervals a timed job's series may have (one row each, kept in memory).
pub const MAX_INTERVALS: u64 = 1_000_000;

/// A job as a user writes it, in fio's option names and units (sizes as fio strings: "4k",
/// "128KiB", "8g", offsets also as "25%").
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct Job {
    pub name: String,
    /// read, write, randread, randwrite, randrw, rw (readwrite), trim, randtrim; fio's
    /// `:<nr>` suffix too: a sequential job adds nr bytes to each next offset (holes, or
    /// backwards when negative: `read:-8k`), a random one issues nr IOs in a row from each
    /// random offset (`randread:8`).
    pub rw: String,
    pub bs: String,
    /// "4k/50:64k/40:128k/10": sizes and percentages; overrides bs.
    pub bssplit: Option<String>,
    /// fio's bsrange "MIN-MAX": each IO's size drawn uniformly in the range, a multiple of MIN.
    pub bsrange: Option<String>,
    /// fio's blockalign: random offsets align to this (default: the smallest block size).
    pub blockalign: Option<String>,
    /// fio's zonemode=strided: `zonesize` bytes are transferred in a zone of `zonerange`
    /// bytes (default: zonesize), then the next zone starts `zonerange + zoneskip` further on
    /// (back to the start past the end); the job ends when what it transferred and skipped
    /// covers its span. None: no zones.
    pub zonesize: Option<String>,
    pub zonerange: Option<String>,
    pub zoneskip: Option<String>,
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
    /// Stop after this many IOs per stream; 0 means no limit, as in fio.
    pub number_ios: Option<u64>,
    pub rwmixread: u32,
    /// random (uniform), zipf:theta, pareto:h, zoned, zoned_abs, sequence:B,B,...
    pub random_distribution: String,
    /// fio's random_sequence_stride: `sequence:...` as a pattern relative to a block group that
    /// advances by the sequence's length after each cycle (the job ends at the span's end),
    /// instead of the same absolute blocks again and again.
    pub random_sequence_stride: bool,
    pub randseed: u64,
    /// Interval of the time series, simulated seconds.
    pub log_interval_s: f64,
    /// fio's ramp_time: run this many simulated seconds before measuring anything (the
    /// runtime follows it; every result, series and counter covers the measured part only).
    pub ramp_time_s: f64,
    /// fio's startdelay: simulated seconds after the start of its group (or after the job it
    /// waits for) before the job issues anything; the other jobs of its group run meanwhile.
    pub startdelay_s: f64,
    /// fio's numjobs: this many copies of the job at once on the drive, each its own random
    /// stream and its own `iodepth` queue; results are reported together (group_reporting).
    pub numjobs: u32,
    /// fio's steady-state detection: "iops:0.3%", "iops_slope:0.1%", "bw:..." or "bw_slope:...";
    /// the job stops once the last `ss_dur_s` of per-interval figures meet it (after
    /// `ss_ramp_s`), or runs to its end.
    pub ss: Option<String>,
    pub ss_dur_s: f64,
    pub ss_ramp_s: f64,
    /// The host's link power management during the job (`crate::power::LinkPolicy`): none,
    /// hipm, dipm, hipm+dipm, devsleep. Matters only on a drive with a power model.
    pub link_power: String,
    /// fio's loops: the job runs this many times, one after another, as one job (its
    /// results over all of them); each pass starts at the span's start once the pass before
    /// it has completed every IO. 1: once.
    pub loops: u32,
}

/// One field of [`Job`] as data: its unit and what it accepts. With [`Job::default`] (the
/// defaults) this is the job schema the Python API is checked against (`_ssdlab.job_schema`).
#[derive(Clone, Copy, Debug, Serialize)]
pub struct JobField {
    pub name: &'static str,
    /// "" for names and counts without a unit.
    pub unit: &'static str,
    pub accepted: &'static str,
}

/// Every field of [`Job`], in declaration order.
pub const JOB_FIELDS: &[JobField] = &[
    JobField {
        name: "name",
        unit: "",
        accepted: "any text (the job's label)",
    },
    JobField {
        name: "rw",
        unit: "",
        accepted: "read, write, randread, randwrite, randrw, rw, readwrite, trim, randtrim; each with an optional :NR",
    },
    JobField {
        name: "bs",
        unit: "bytes (fio size)",
        accepted: "a size (4k, 128KiB), or READ,WRITE[,TRIM] sizes",
    },
    JobField {
        name: "bssplit",
        unit: "bytes/percent",
        accepted: "SIZE/PCT pairs joined by ':' (4k/50:64k/50; a blank PCT shares what is left evenly), one list or READ,WRITE[,TRIM] lists; overrides bs",
    },
    JobField {
        name: "bsrange",
        unit: "bytes",
        accepted: "MIN-MAX (512-64k), multiples of 512; overrides bs",
    },
    JobField {
        name: "blockalign",
        unit: "bytes",
        accepted: "a multiple of 512 (default: the smallest block size)",
    },
    JobField {
        name: "zonesize",
        unit: "bytes",
        accepted: "a size, a multiple of the block size (fio's zonemode=strided); unset: no zones",
    },
    JobField {
        name: "zonerange",
        unit: "bytes",
        accepted: "a size (default: zonesize); only with zonesize",
    },
    JobField {
        name: "zoneskip",
        unit: "bytes",
        accepted: "a size (default 0); only with zonesize",
    },
    JobField {
        name: "iodepth",
        unit: "commands",
        accepted: "1 or more",
    },
    JobField {
        name: "offset",
        unit: "bytes (fio size) or percent",
        accepted: "a size or N% of the drive",
    },
    JobField {
        name: "size",
        unit: "bytes (fio size) or percent",
        accepted: "a size or N% of the drive; none: to the end",
    },
    JobField {
        name: "io_size",
        unit: "bytes (fio size)",
        accepted: "a size; none: size (unless time_based or number_ios)",
    },
    JobField {
        name: "runtime_s",
        unit: "s (simulated)",
        accepted: "a positive number; none: until io_size",
    },
    JobField {
        name: "time_based",
        unit: "",
        accepted: "true, false",
    },
    JobField {
        name: "number_ios",
        unit: "commands",
        accepted: "1 or more; 0 or none: no limit",
    },
    JobField {
        name: "rwmixread",
        unit: "percent",
        accepted: "0 to 100",
    },
    JobField {
        name: "random_distribution",
        unit: "",
        accepted: "random, zipf:THETA, pareto:H, zoned:A/S:..., zoned_abs:A/SIZE:..., sequence:B,B,... (up to 64 block indices)",
    },
    JobField {
        name: "random_sequence_stride",
        unit: "",
        accepted: "true, false",
    },
    JobField {
        name: "randseed",
        unit: "",
        accepted: "a whole number",
    },
    JobField {
        name: "log_interval_s",
        unit: "s (simulated)",
        accepted: "a positive number",
    },
    JobField {
        name: "ramp_time_s",
        unit: "s (simulated)",
        accepted: "0 or more",
    },
    JobField {
        name: "startdelay_s",
        unit: "s (simulated)",
        accepted: "0 or more",
    },
    JobField {
        name: "numjobs",
        unit: "copies",
        accepted: "1 or more",
    },
    JobField {
        name: "ss",
        unit: "",
        accepted: "iops:P%, iops_slope:P%, bw:P%, bw_slope:P%, lat:P%, lat_slope:P%; none: off",
    },
    JobField {
        name: "ss_dur_s",
        unit: "s (simulated)",
        accepted: "a positive number with ss",
    },
    JobField {
        name: "ss_ramp_s",
        unit: "s (simulated)",
        accepted: "0 or more",
    },
    JobField {
        name: "link_power",
        unit: "",
        accepted: LinkPolicy::NAMES,
    },
    JobField {
        name: "loops",
        unit: "passes",
        accepted: "1 or more (fio's loops: the whole job again, reported as one)",
    },
];

/// A steady-state criterion (fio's `ss`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct SteadyCriterion {
    pub(super) bytes: bool,
    /// fio's lat / lat_slope: the mean completion latency of each interval.
    pub(super) latency: bool,
    pub(super) slope: bool,
    pub(super) limit_pct: f64,
    pub(super) dur_intervals: usize,
    pub(super) ramp_ns: u64,
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
            bsrange: None,
            blockalign: None,
            zonesize: None,
            zonerange: None,
            zoneskip: None,
            iodepth: 1,
            offset: "0".into(),
            size: None,
            io_size: None,
            runtime_s: None,
            time_based: false,
            number_ios: None,
            rwmixread: 50,
            random_distribution: "random".into(),
            random_sequence_stride: false,
            randseed: 0,
            log_interval_s: 1.0,
            ramp_time_s: 0.0,
            startdelay_s: 0.0,
            numjobs: 1,
            ss: None,
            ss_dur_s: 0.0,
            ss_ramp_s: 0.0,
            link_power: "none".into(),
            loops: 1,
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
}

impl CompiledJob {
    /// Does the job draw random numbers (offsets, sizes or read/write mix)? Only such jobs
    /// take a job ordinal, so a sequential fill, timed or not, leaves the streams of later
    /// jobs as they would be after the untimed fill.
    pub fn uses_random_stream(&self) -> bool {
        self.pattern == Pattern::Random
            || self.sizes.len() > 1
            || [&self.write_sizes, &self.trim_sizes]
                .iter()
                .any(|l| l.as_ref().is_some_and(|l| l.len() > 1))
            || (self.read_pct > 0 && self.read_pct < 100)
    }
}

impl Job {
    /// Check the job against a drive of `user_bytes`; errors name the option.
    pub fn compile(&self, user_bytes: u64) -> Result<CompiledJob, String> {
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
        let all_sizes = || {
            sizes
                .iter()
                .chain(write_sizes.iter().flatten())
                .chain(trim_sizes.iter().flatten())
                .map(|&(b, _)| b)
        };
        if all_sizes().any(|b| b == 0 || b % 512 != 0) {
            return Err("bs: every block size must be a positive multiple of 512 bytes".into());
        }
        let bs_max = all_sizes().max().unwrap();
        let bs_min = all_sizes().min().unwrap();
        let align_bytes = match &self.blockalign {
            Some(a) => {
                let a = parse_size(a).map_err(|e| format!("blockalign: {e}"))?;
                if a == 0 || a % 512 != 0 {
                    return Err(format!(
                        "blockalign: {a} bytes; accepted: a positive multiple of 512"
                    ));
                }
                a
            }
            None => all_sizes().min().unwrap(),
        };
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
        let zones = match &self.zonesize {
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
        let steady = match &self.ss {
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
            sizes,
            write_sizes,
            trim_sizes,
            align_bytes,
            zones,
            bs_range,
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
        })
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
