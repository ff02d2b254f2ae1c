//! Jobs as users write them (fio's option names and units), checked against a drive and
//! turned into numbers ([`super::CompiledJob`], in `compile.rs`); fio's size syntax ([`parse_size`]).

use crate::power::LinkPolicy;
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
