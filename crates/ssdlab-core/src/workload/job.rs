//! Jobs as users write them (fio's option names and units), checked against a drive and
//! turned into numbers ([`super::CompiledJob`], in `compile.rs`); fio's size syntax ([`parse_size`]).

use crate::power::LinkPolicy;
use serde::{Deserialize, Serialize};

/// The shortest interval of the per-interval series, seconds (fio's `log_avg_msec` unit).
pub const MIN_LOG_INTERVAL_S: f64 = 0.001;
/// The most intervals a timed job's series may have (one row each, kept in memory).
pub const MAX_INTERVALS: u64 = 1_000_000;

/// What a field's value is: its JSON type and how a job file's or a flag's text is read.
#[derive(Clone, Copy, Debug, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum FieldKind {
    /// Text as written (sizes stay fio strings; the compile step reads them).
    Text,
    /// A whole number below 2^32, with fio's k/m/g (x1000).
    Count,
    /// A whole number below 2^64, with fio's k/m/g (x1000).
    Whole,
    /// A time: a number with an optional unit us, ms, s (default), m, h.
    Seconds,
    /// A boolean: 0, false, no, off are false; anything else, or the option alone, true.
    Flag,
}

/// How the value of one fio spelling becomes its field's.
#[derive(Clone, Copy, Debug, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Reading {
    /// Read as the field's kind.
    AsWritten,
    /// 100 minus the percentage given (fio's rwmixwrite for rwmixread).
    Complement,
    /// fio's log_avg_msec: whole milliseconds per interval; 0 (fio's default, a log line per
    /// IO) keeps the series at 1 s.
    LogAvgMsec,
    /// A time whose bare number is microseconds (fio's thinktime, thinktime_spin, flow_sleep).
    Microseconds,
    /// A file's name whose text is the field (fio's dp_scheme); the core reads no files.
    FileText,
}

/// One name a job file (and `ssdlab run --NAME=VALUE`) may give a field, as fio spells it.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Spelling {
    pub name: &'static str,
    pub reading: Reading,
}

const fn opt(name: &'static str) -> Spelling {
    Spelling {
        name,
        reading: Reading::AsWritten,
    }
}

/// One field of [`Job`] as data: what it is, how users write it and what it accepts. With
/// [`Job::default`] (the defaults) this is the job schema (`_ssdlab.job_schema`) from which
/// `tools/gen_job_table.py` writes the Python `Job`'s fields, the job-file spellings, the
/// `ssdlab run` flags and README's option list.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct JobField {
    pub name: &'static str,
    pub kind: FieldKind,
    /// "" for names and counts without a unit.
    pub unit: &'static str,
    pub accepted: &'static str,
    /// The field's documentation (its doc comment), one line per source line.
    pub doc: &'static str,
    /// fio's names for it in a job file, first the one fio's JSON reports; none: only from
    /// Python or the flag.
    pub fio: &'static [Spelling],
    /// The `ssdlab run` flag listed in its --help (read as the field's kind; `_` or `-` both
    /// work); "": none (every fio spelling still works as `--NAME=VALUE`).
    pub flag: &'static str,
}

/// The one table of job options: each row declares a field of [`Job`] (its doc, type and
/// default) and its [`JobField`] (kind, unit, accepted values, fio spellings, flag).
macro_rules! job_table {
    ($(
        $(#[doc = $doc:literal])*
        $name:ident: $ty:ty = $default:expr;
            $kind:ident, unit $unit:literal, accepted $accepted:expr,
            fio [$($spelling:expr),* $(,)?], flag $flag:literal;
    )*) => {
        /// A job as a user writes it, in fio's option names and units (sizes as fio strings:
        /// "4k", "128KiB", "8g", offsets also as "25%"). Declared by the one table of job
        /// options (`job_table!` in job.rs), which [`JOB_FIELDS`] describes.
        #[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
        #[serde(deny_unknown_fields, default)]
        pub struct Job {
            $( $(#[doc = $doc])* pub $name: $ty, )*
        }

        impl Default for Job {
            fn default() -> Self {
                Job { $( $name: $default, )* }
            }
        }

        /// Every field of [`Job`], in declaration order.
        pub const JOB_FIELDS: &[JobField] = &[$(
            JobField {
                name: stringify!($name),
                kind: FieldKind::$kind,
                unit: $unit,
                accepted: $accepted,
                doc: concat!($($doc, "\n"),*),
                fio: &[$($spelling),*],
                flag: $flag,
            },
        )*];
    };
}

job_table! {
    /// The job's label (a job file's `[section]`).
    name: String = "job".into();
        Text, unit "", accepted "any text (the job's label)",
        fio [opt("name")], flag "";
    /// read, write, randread, randwrite, randrw, rw (readwrite), trim, randtrim; fio's
    /// `:<nr>` suffix too: a sequential job adds nr bytes to each next offset (holes, or
    /// backwards when negative: `read:-8k`), a random one issues nr IOs in a row from each
    /// random offset (`randread:8`).
    rw: String = "read".into();
        Text, unit "", accepted "read, write, randread, randwrite, randrw, rw, readwrite, trim, randtrim; each with an optional :NR",
        fio [opt("rw"), opt("readwrite")], flag "--rw";
    /// The block size of every IO, or one per direction (`READ,WRITE[,TRIM]`).
    bs: String = "4k".into();
        Text, unit "bytes (fio size)", accepted "a size (4k, 128KiB), or READ,WRITE[,TRIM] sizes",
        fio [opt("bs"), opt("blocksize")], flag "--bs";
    /// A mix of block sizes, "4k/50:64k/40:128k/10": sizes and percentages; overrides bs.
    bssplit: Option<String> = None;
        Text, unit "bytes/percent", accepted "SIZE/PCT pairs joined by ':' (4k/50:64k/50; a blank PCT shares what is left evenly), one list or READ,WRITE[,TRIM] lists; overrides bs",
        fio [opt("bssplit")], flag "--bssplit";
    /// fio's bsrange "MIN-MAX": each IO's size drawn uniformly in the range, a multiple of MIN.
    bsrange: Option<String> = None;
        Text, unit "bytes", accepted "MIN-MAX (512-64k), multiples of 512; overrides bs",
        fio [opt("bsrange"), opt("blocksize_range")], flag "";
    /// fio's blockalign: random offsets align to this (default: the smallest block size).
    blockalign: Option<String> = None;
        Text, unit "bytes", accepted "a multiple of 512 (default: the smallest block size)",
        fio [opt("blockalign"), opt("ba")], flag "";
    /// fio's zonemode=strided: `zonesize` bytes are transferred in a zone of `zonerange`
    /// bytes (default: zonesize), then the next zone starts `zonerange + zoneskip` further on
    /// (back to the start past the end); the job ends when what it transferred and skipped
    /// covers its span. None: no zones.
    zonesize: Option<String> = None;
        Text, unit "bytes", accepted "a size, a multiple of the block size (fio's zonemode=strided); unset: no zones",
        fio [opt("zonesize")], flag "";
    /// The zone's length with zonesize (default: zonesize).
    zonerange: Option<String> = None;
        Text, unit "bytes", accepted "a size (default: zonesize); only with zonesize",
        fio [opt("zonerange")], flag "";
    /// The bytes skipped after each zone with zonesize.
    zoneskip: Option<String> = None;
        Text, unit "bytes", accepted "a size (default 0); only with zonesize",
        fio [opt("zoneskip")], flag "";
    /// Commands kept in flight (per copy of the job).
    iodepth: u32 = 1;
        Count, unit "commands", accepted "1 or more",
        fio [opt("iodepth")], flag "--iodepth";
    /// Start of the LBA span.
    offset: String = "0".into();
        Text, unit "bytes (fio size) or percent", accepted "a size or N% of the drive",
        fio [opt("offset"), opt("fileoffset")], flag "--offset";
    /// Length of the LBA span (default: to the end of the drive).
    size: Option<String> = None;
        Text, unit "bytes (fio size) or percent", accepted "a size or N% of the drive; none: to the end",
        fio [opt("size"), opt("filesize")], flag "--size";
    /// Total bytes to transfer (default: `size`, unless time_based or number_ios).
    io_size: Option<String> = None;
        Text, unit "bytes (fio size)", accepted "a size; none: size (unless time_based or number_ios)",
        fio [opt("io_size"), opt("io_limit")], flag "--io-size";
    /// Simulated seconds to run (on the command line it implies time_based).
    runtime_s: Option<f64> = None;
        Seconds, unit "s (simulated)", accepted "a positive number; none: until io_size",
        fio [opt("runtime"), opt("timeout")], flag "--runtime";
    /// Keep going until runtime even after `io_size` bytes.
    time_based: bool = false;
        Flag, unit "", accepted "true, false",
        fio [opt("time_based")], flag "--time-based";
    /// Stop after this many IOs per stream; 0 means no limit, as in fio.
    number_ios: Option<u64> = None;
        Whole, unit "commands", accepted "1 or more; 0 or none: no limit",
        fio [opt("number_ios")], flag "--number-ios";
    /// Percent reads of randrw and rw (rwmixwrite: its complement).
    rwmixread: u32 = 50;
        Count, unit "percent", accepted "0 to 100",
        fio [opt("rwmixread"), Spelling { name: "rwmixwrite", reading: Reading::Complement }],
        flag "--rwmixread";
    /// random (uniform), zipf:theta, pareto:h, zoned, zoned_abs (with `READ,WRITE[,TRIM]` lists
    /// after commas), sequence:B,B,...
    random_distribution: String = "random".into();
        Text, unit "", accepted "random, zipf:THETA, pareto:H, zoned:A/S:..., zoned_abs:A/SIZE:..., sequence:B,B,... (up to 64 block indices)",
        fio [opt("random_distribution")], flag "--random-distribution";
    /// fio's random_sequence_stride: `sequence:...` as a pattern relative to a block group that
    /// advances by the sequence's length after each cycle (the job ends at the span's end),
    /// instead of the same absolute blocks again and again.
    random_sequence_stride: bool = false;
        Flag, unit "", accepted "true, false",
        fio [opt("random_sequence_stride")], flag "";
    /// The job's random streams' seed (`ssdlab run --seed` sets it and the drive's).
    randseed: u64 = 0;
        Whole, unit "", accepted "a whole number",
        fio [opt("randseed")], flag "";
    /// Interval of the time series, simulated seconds.
    log_interval_s: f64 = 1.0;
        Seconds, unit "s (simulated)", accepted "a positive number",
        fio [Spelling { name: "log_avg_msec", reading: Reading::LogAvgMsec }], flag "--interval";
    /// fio's ramp_time: run this many simulated seconds before measuring anything (the
    /// runtime follows it; every result, series and counter covers the measured part only).
    ramp_time_s: f64 = 0.0;
        Seconds, unit "s (simulated)", accepted "0 or more",
        fio [opt("ramp_time")], flag "--ramp-time";
    /// fio's startdelay: simulated seconds after the start of its group (or after the job it
    /// waits for) before the job issues anything; the other jobs of its group run meanwhile.
    startdelay_s: f64 = 0.0;
        Seconds, unit "s (simulated)", accepted "0 or more",
        fio [opt("startdelay")], flag "";
    /// fio's numjobs: this many copies of the job at once on the drive, each its own random
    /// stream and its own `iodepth` queue; results are reported together (group_reporting).
    numjobs: u32 = 1;
        Count, unit "copies", accepted "1 or more",
        fio [opt("numjobs")], flag "--numjobs";
    /// fio's steady-state detection: "iops:0.3%", "iops_slope:0.1%", "bw:..." or "bw_slope:...";
    /// the job stops once the last `ss_dur_s` of per-interval figures meet it (after
    /// `ss_ramp_s`), or runs to its end.
    ss: Option<String> = None;
        Text, unit "", accepted "iops:P%, iops_slope:P%, bw:P%, bw_slope:P%, lat:P%, lat_slope:P%; none: off",
        fio [opt("ss"), opt("steadystate")], flag "";
    /// The window steady-state detection judges.
    ss_dur_s: f64 = 0.0;
        Seconds, unit "s (simulated)", accepted "a positive number with ss",
        fio [opt("ss_dur"), opt("steadystate_duration")], flag "";
    /// Seconds before steady-state detection starts judging.
    ss_ramp_s: f64 = 0.0;
        Seconds, unit "s (simulated)", accepted "0 or more",
        fio [opt("ss_ramp"), opt("steadystate_ramp_time")], flag "";
    /// The host's link power management during the job (`crate::power::LinkPolicy`): none,
    /// hipm, dipm, hipm+dipm, devsleep. Matters only on a drive with a power model.
    link_power: String = "none".into();
        Text, unit "", accepted LinkPolicy::NAMES,
        fio [], flag "--link-power";
    /// fio's loops: the job runs this many times, one after another, as one job (its
    /// results over all of them); each pass starts at the span's start once the pass before
    /// it has completed every IO. 1: once.
    loops: u32 = 1;
        Count, unit "passes", accepted "1 or more (fio's loops: the whole job again, reported as one)",
        fio [opt("loops")], flag "";
    /// fio's end_fsync: once the IOs of a job that writes have completed, one FLUSH (NVMe
    /// Flush, SATA FLUSH CACHE, NBD_CMD_FLUSH), and the job ends when it has: what the write
    /// buffer holds goes to NAND and, without full power-loss protection, the partly filled
    /// program units are programmed (padded). Not measured as an IO of the job. A job that
    /// only reads or trims sends none, as in fio.
    end_fsync: bool = false;
        Flag, unit "", accepted "true, false",
        fio [opt("end_fsync")], flag "";
    /// fio's zonemode: "zbd" for a zoned namespace (writes at each zone's write pointer,
    /// "random" picking zones, trims as zone resets, as fio's zbd.c); "strided" and "none"
    /// are read by the job file parser (zonesize alone means strided).
    zonemode: String = "none".into();
        Text, unit "", accepted "none, strided, zbd",
        fio [opt("zonemode")], flag "";
    /// fio's zonecapacity (3.22): a zbd job's zone capacity where a drive without a zoned
    /// namespace takes the default one; unset: the whole erase blocks that fit in a zone.
    zonecapacity: Option<String> = None;
        Text, unit "bytes", accepted "a size up to zonesize",
        fio [opt("zonecapacity")], flag "";
    /// fio's max_open_zones: zones the job's writes keep open at once (all jobs); 0: the
    /// drive's limit. Above the drive's needs ignore_zone_limits.
    max_open_zones: u32 = 0;
        Count, unit "zones", accepted "0 (the drive's limit) or more",
        fio [opt("max_open_zones")], flag "";
    /// fio's job_max_open_zones (3.20): zones this job keeps open at once; 0: no own limit.
    job_max_open_zones: u32 = 0;
        Count, unit "zones", accepted "0 or more",
        fio [opt("job_max_open_zones")], flag "";
    /// fio's ignore_zone_limits (3.28): allow max_open_zones above the drive's (the drive
    /// then closes implicitly opened zones to open others).
    ignore_zone_limits: bool = false;
        Flag, unit "", accepted "true, false",
        fio [opt("ignore_zone_limits")], flag "";
    /// fio's zone_reset_threshold: with zone_reset_frequency, once the zones' written bytes
    /// exceed this share of the job's span, reset the zone written to every 1/frequency writes.
    zone_reset_threshold: Option<String> = None;
        Text, unit "", accepted "a fraction 0 to 1",
        fio [opt("zone_reset_threshold")], flag "";
    /// fio's zone_reset_frequency: see zone_reset_threshold.
    zone_reset_frequency: Option<String> = None;
        Text, unit "", accepted "a fraction 0 to 1",
        fio [opt("zone_reset_frequency")], flag "";
    /// fio's write_mode (io_uring_cmd): "write", or "zone_append" with zonemode=zbd (each
    /// write a Zone Append to its zone's start; the drive places it at the write pointer).
    write_mode: String = "write".into();
        Text, unit "", accepted "write, zone_append (with zonemode=zbd)",
        fio [opt("write_mode")], flag "";
    /// fio's read_beyond_wp: zbd reads may go past a zone's write pointer (unwritten data).
    read_beyond_wp: bool = false;
        Flag, unit "", accepted "true, false",
        fio [opt("read_beyond_wp")], flag "";
    /// fio's fdp (3.34): the job's writes carry NVMe FDP placement identifiers (as
    /// `dataplacement = "fdp"`). A drive without a `[placement]` table takes the default
    /// configuration (one reclaim group, 8 initially isolated handles, superblock reclaim
    /// units) and says so.
    fdp: bool = false;
        Flag, unit "", accepted "true, false",
        fio [opt("fdp")], flag "";
    /// fio's dataplacement (3.38): "fdp" as `fdp`; "none" no directive.
    dataplacement: String = "none".into();
        Text, unit "", accepted "none, fdp",
        fio [opt("dataplacement")], flag "";
    /// fio's plids / fdp_pli: the placement identifier indices the writes use (indices into
    /// the drive's RUH status list: "0,2,5" or ranges "0-3"); none: every one.
    plids: Option<String> = None;
        Text, unit "", accepted "indices and ranges, e.g. 0,2,4-7",
        fio [opt("plids"), opt("fdp_pli")], flag "";
    /// fio's plid_select / fdp_pli_select: how each write takes its index, in turn
    /// ("roundrobin"), drawn ("random"), or by its offset ("scheme", from dp_scheme).
    plid_select: String = "roundrobin".into();
        Text, unit "", accepted "roundrobin, random, scheme",
        fio [opt("plid_select"), opt("fdp_pli_select")], flag "";
    /// fio's dp_scheme (3.38): with plid_select=scheme, each write's placement identifier by
    /// its offset, `START,END,PID` a line (the first line whose START <= offset < END; none:
    /// PID 0, the default handle; at most 32 lines, as fio). A job file names the file; its
    /// text is the field.
    dp_scheme: Option<String> = None;
        Text, unit "", accepted "START,END,PID lines (byte offsets, a placement identifier), at most 32",
        fio [Spelling { name: "dp_scheme", reading: Reading::FileText }], flag "";
    /// fio's rate: each copy of the job issues at most this many bytes per second, one cap
    /// for every direction or `READ,WRITE[,TRIM]` (an empty place: no cap; `500k,` caps
    /// reads only); the schedule is fio's (the next IO is due when the bytes issued so far
    /// would have taken that long).
    rate: Option<String> = None;
        Text, unit "bytes/s", accepted "a size per second (1m, 500k), or READ,WRITE[,TRIM] with empty places uncapped",
        fio [opt("rate")], flag "--rate";
    /// fio's rate_iops: as `rate` in commands per second (a direction with both takes
    /// `rate`); bytes per second at the smallest block size, or one command per period with
    /// bssplit, as fio.
    rate_iops: Option<String> = None;
        Text, unit "commands/s", accepted "a whole number per second, or READ,WRITE[,TRIM]",
        fio [opt("rate_iops")], flag "--rate-iops";
    /// fio's rate_process: "linear" (fixed gaps, catching up when behind) or "poisson"
    /// (exponential gaps of mean 1/IOPS from the job's own random stream: an open-loop
    /// arrival process).
    rate_process: String = "linear".into();
        Text, unit "", accepted "linear, poisson",
        fio [opt("rate_process")], flag "--rate-process";
    /// fio's io_submit_mode: "inline" (the job waits for its commands in flight to complete
    /// before it sleeps for its rate or think time) or "offload" (it submits on schedule
    /// whatever the drive has completed, up to iodepth in flight: fixed-rate submission).
    io_submit_mode: String = "inline".into();
        Text, unit "", accepted "inline, offload",
        fio [opt("io_submit_mode")], flag "";
    /// fio's rate_min (ratemin): the job fails, as fio's does, when a direction's completed
    /// bytes per `rate_cycle` fall below this after its first 2 s.
    rate_min: Option<String> = None;
        Text, unit "bytes/s", accepted "a size per second, or READ,WRITE[,TRIM]",
        fio [opt("rate_min"), opt("ratemin")], flag "";
    /// fio's rate_iops_min: as rate_min in completed commands per second.
    rate_iops_min: Option<String> = None;
        Text, unit "commands/s", accepted "a whole number per second, or READ,WRITE[,TRIM]",
        fio [opt("rate_iops_min")], flag "";
    /// fio's rate_cycle: the window rate_min and rate_iops_min average over, milliseconds.
    rate_cycle_ms: u32 = 1000;
        Count, unit "ms", accepted "1 or more",
        fio [opt("rate_cycle"), opt("ratecycle")], flag "";
    /// fio's rate_ignore_thinktime: after a think time the rate schedule moves on by what it
    /// would have issued meanwhile, instead of catching up.
    rate_ignore_thinktime: bool = false;
        Flag, unit "", accepted "true, false",
        fio [opt("rate_ignore_thinktime")], flag "";
    /// fio's thinktime: after `thinktime_blocks` IOs, the job waits for its commands in flight
    /// and then stalls this long (a bare number is microseconds, as in fio).
    thinktime_s: f64 = 0.0;
        Seconds, unit "s (simulated)", accepted "0 or more (a bare number: microseconds)",
        fio [Spelling { name: "thinktime", reading: Reading::Microseconds }], flag "";
    /// fio's thinktime_spin: the part of the think time the host spends on its CPU (the drive
    /// sees the same stall; a spin longer than thinktime lengthens it).
    thinktime_spin_s: f64 = 0.0;
        Seconds, unit "s (simulated)", accepted "0 or more (a bare number: microseconds)",
        fio [Spelling { name: "thinktime_spin", reading: Reading::Microseconds }], flag "";
    /// fio's thinktime_blocks: IOs between think times (unset: 1).
    thinktime_blocks: Option<u64> = None;
        Whole, unit "commands", accepted "1 or more (unset: 1)",
        fio [opt("thinktime_blocks")], flag "";
    /// fio's thinktime_blocks_type: count completed IOs ("complete") or issued ones ("issue").
    thinktime_blocks_type: String = "complete".into();
        Text, unit "", accepted "complete, issue",
        fio [opt("thinktime_blocks_type")], flag "";
    /// fio's thinktime_iotime: also think once the job has issued for this long since its
    /// last think time (alone, without thinktime_blocks: only then).
    thinktime_iotime_s: f64 = 0.0;
        Seconds, unit "s (simulated)", accepted "0 or more",
        fio [opt("thinktime_iotime")], flag "";
    /// fio's flow: this job's weight among the jobs of its flow_id; each holds back while its
    /// share of the flow's issued IOs is above its share of the weights.
    flow: u32 = 0;
        Count, unit "", accepted "0 (no flow control) or a weight",
        fio [opt("flow")], flag "";
    /// fio's flow_id: the jobs that share a flow.
    flow_id: u32 = 0;
        Count, unit "", accepted "a whole number",
        fio [opt("flow_id")], flag "";
    /// fio's flow_sleep: a job over its share waits for its commands in flight and sleeps
    /// this long before it asks again (0: it asks again whenever another job issues).
    flow_sleep_s: f64 = 0.0;
        Seconds, unit "s (simulated)", accepted "0 or more (a bare number: microseconds)",
        fio [Spelling { name: "flow_sleep", reading: Reading::Microseconds }], flag "";
}

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
