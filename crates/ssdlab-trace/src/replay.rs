//! Trace files for replay: opened (plain or compressed, format detected or given, several
//! merged in time order or sorted), read as records and mapped onto the drive by the core's
//! `replay::Mapper`, as the requests a `ssdlab_core::replay::ReplayRun` replays. File I/O
//! lives here, outside the simulation core, so any Rust driver (the Python bindings, a
//! benchmark, the NBD server) replays a trace file the same way.

use crate::input::Records;
use crate::{BlkparseArrival, ColumnSpec, OpKind, ReaderOptions, TraceFormat, TraceRecord};
use ssdlab_core::device::IoKind;
use ssdlab_core::replay::{MapCounts, MapOptions, Mapper, ReplayRequest, TraceRequest};
use std::sync::{Arc, Mutex};

#[derive(Clone, Debug, Default)]
pub struct TraceOptions {
    pub format: Option<String>,
    /// `--columns` mapping (implies the columns format).
    pub columns: Option<String>,
    pub device: Option<u32>,
    /// Wrap requests past the end of the drive (else reject them).
    pub wrap: bool,
    pub skip_bad_lines: bool,
    /// DiskSim/MQSim arrival unit in ns (`None`: decided from the trace and stated).
    pub time_unit_ns: Option<f64>,
    pub blkparse_queue_arrivals: bool,
    /// Read every record and replay them in time order.
    pub sort: bool,
    /// fio v2 `wait`: relative microseconds (fio's manual) instead of absolute ms (its source).
    pub fio_wait_relative: bool,
    /// Several files: count each one's arrivals from its own first request (files recorded
    /// with clocks of different origins, e.g. a DiskSim trace near 0 and an MSR trace in
    /// Windows ticks), instead of merging them as recorded.
    pub align_starts: bool,
}

/// First requests of merged files further apart than this are noted (and timed mode refuses
/// them without `align_starts`): a day, far beyond the files of one recording session.
pub const START_SPREAD_NOTED_NS: u64 = 86_400 * 1_000_000_000;

/// What happened while streaming, reported when the replay ends.
#[derive(Default)]
pub struct Outcome {
    pub error: Option<String>,
    pub bad_lines: u64,
    pub counts: MapCounts,
    pub notes: Vec<String>,
    pub records: u64,
    pub devices_seen: Vec<u32>,
}

/// One or more trace files as one stream of records in time order (a k-way merge; each
/// file is read in its own order).
pub struct Sources {
    files: Vec<Records>,
    /// Notes about the files as given (per-CPU files of one blktrace capture read once).
    given: Vec<String>,
    heads: Vec<Option<TraceRecord>>,
    /// Each file's first arrival (read at open), and what is taken off its arrivals.
    firsts: Vec<Option<u64>>,
    shift: Vec<u64>,
    align: bool,
    pub error: Option<String>,
    pub records: u64,
}

impl Sources {
    pub fn open(
        paths: &[String],
        options: &TraceOptions,
    ) -> Result<(Sources, Vec<String>), String> {
        if paths.is_empty() {
            return Err("no trace file given".into());
        }
        let mut reader = ReaderOptions {
            disksim_time_unit_ns: options.time_unit_ns,
            blkparse_arrival: if options.blkparse_queue_arrivals {
                BlkparseArrival::Queue
            } else {
                BlkparseArrival::Issue
            },
            skip_bad_lines: options.skip_bad_lines,
            fio_wait_relative: options.fio_wait_relative,
            ..ReaderOptions::default()
        };
        let mut detect = true;
        if let Some(spec) = &options.columns {
            reader.columns = Some(ColumnSpec::parse_spec(spec)?);
            reader.format = TraceFormat::Columns;
            detect = false;
        } else if let Some(name) = &options.format {
            reader.format = TraceFormat::from_name(name).ok_or_else(|| {
                format!(
                    "--format '{name}' is not known; accepted: {}",
                    TraceFormat::NAMES
                )
            })?;
            detect = false;
        }
        let mut files = Vec::new();
        let mut formats = Vec::new();
        let mut given = Vec::new();
        // A blktrace capture is one file per CPU, and opening one reads them all: the shell's
        // `sda.blktrace.*` names each, and each used to be read again (issue 25, item 18).
        let mut captures: Vec<(Vec<std::path::PathBuf>, String)> = Vec::new();
        for p in paths {
            let path = std::path::Path::new(p);
            let blktrace = (detect || reader.format == TraceFormat::Blktrace)
                && path
                    .file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.contains(".blktrace."));
            if blktrace {
                let key: Vec<_> = crate::input::blktrace_siblings(path)
                    .iter()
                    .map(|f| f.canonicalize().unwrap_or_else(|_| f.clone()))
                    .collect();
                if let Some((_, first)) = captures.iter().find(|(k, _)| *k == key) {
                    given.push(format!(
                        "{p}: a per-CPU file of the blktrace capture {first} already reads (all {} of its files, once)",
                        key.len()
                    ));
                    continue;
                }
                captures.push((key, p.clone()));
            }
            let r = Records::open(p, reader.clone(), detect)?;
            let mut name = r.format.name().to_string();
            if r.compression != crate::input::Compression::None {
                name = format!("{name}+{}", r.compression.name());
            }
            formats.push(name);
            files.push(r);
        }
        let n = files.len();
        let mut sources = Sources {
            files,
            given,
            heads: vec![None; n],
            firsts: vec![None; n],
            shift: vec![0; n],
            align: options.align_starts,
            error: None,
            records: 0,
        };
        // The first request of each file, now: how far apart the files' clocks start.
        for k in 0..n {
            sources.pull(k);
            sources.firsts[k] = sources.heads[k].map(|r| r.arrival_ns);
        }
        if sources.align {
            for k in 0..n {
                sources.shift[k] = sources.firsts[k].unwrap_or(0);
                if let Some(h) = sources.heads[k].as_mut() {
                    h.arrival_ns -= sources.shift[k];
                }
            }
        }
        Ok((sources, formats))
    }

    /// How far apart the files' first requests are, ns (0 for one file, or once aligned).
    pub fn start_spread_ns(&self) -> u64 {
        if self.align {
            return 0;
        }
        let firsts: Vec<u64> = self.firsts.iter().flatten().copied().collect();
        match (firsts.iter().min(), firsts.iter().max()) {
            (Some(a), Some(b)) => b - a,
            _ => 0,
        }
    }

    fn pull(&mut self, k: usize) {
        if self.error.is_some() {
            return;
        }
        self.heads[k] = match self.files[k].next() {
            Some(Ok(mut r)) => {
                r.arrival_ns = r.arrival_ns.saturating_sub(self.shift[k]);
                Some(r)
            }
            Some(Err(e)) => {
                self.error = Some(e);
                None
            }
            None => None,
        };
    }

    pub fn notes(&self) -> Vec<String> {
        let many = self.files.len() > 1;
        let per_file = self.files.iter().flat_map(|f| {
            f.notes().into_iter().map(move |n| {
                if many {
                    format!("{}: {n}", f.path())
                } else {
                    n
                }
            })
        });
        let spread = self.start_spread_ns();
        let clocks = if self.align && self.files.len() > 1 {
            Some(
                "each file's arrivals are counted from its own first request (--align-starts)"
                    .to_string(),
            )
        } else if spread > START_SPREAD_NOTED_NS {
            Some(format!(
                "the files' first requests are {:.1} days apart (clocks of different origins?): merged as recorded; --align-starts counts each file from its own first request",
                spread as f64 / START_SPREAD_NOTED_NS as f64
            ))
        } else {
            None
        };
        self.given
            .iter()
            .cloned()
            .chain(clocks)
            .chain(per_file)
            .collect()
    }

    pub fn bad_lines(&self) -> u64 {
        self.files.iter().map(|f| f.bad_lines()).sum()
    }
}

impl Iterator for Sources {
    type Item = TraceRecord;

    fn next(&mut self) -> Option<TraceRecord> {
        if self.error.is_some() {
            return None;
        }
        // The earliest head (ties: the file given first). Few files: a scan beats a heap.
        let k = (0..self.heads.len())
            .filter(|&k| self.heads[k].is_some())
            .min_by_key(|&k| (self.heads[k].expect("some").arrival_ns, k))?;
        let r = self.heads[k].take();
        self.pull(k);
        self.records += 1;
        r
    }
}

/// Trace records as replay requests; stops at the first error (kept in `outcome`).
pub struct TraceRequests {
    sources: Sources,
    /// With `--sort`: every record, read at open, in time order.
    sorted: Option<std::vec::IntoIter<TraceRecord>>,
    mapper: Mapper,
    /// The files, for messages.
    label: String,
    pub outcome: Arc<Mutex<Outcome>>,
}

pub fn kind(k: OpKind) -> IoKind {
    match k {
        OpKind::Read => IoKind::Read,
        OpKind::Write => IoKind::Write,
        OpKind::Trim => IoKind::Trim,
    }
}

impl TraceRequests {
    pub fn open(
        paths: &[String],
        options: TraceOptions,
        user_bytes: u64,
    ) -> Result<(TraceRequests, Vec<String>), String> {
        let (mut sources, formats) = Sources::open(paths, &options)?;
        let sorted = if options.sort {
            let mut all: Vec<TraceRecord> = sources.by_ref().collect();
            if let Some(e) = sources.error.take() {
                return Err(e);
            }
            all.sort_by_key(|r| r.arrival_ns); // stable: ties keep file order
            Some(all.into_iter())
        } else {
            None
        };
        Ok((
            TraceRequests {
                sources,
                sorted,
                mapper: Mapper::new(MapOptions {
                    user_bytes,
                    device: options.device,
                    wrap: options.wrap,
                }),
                label: paths.join(" + "),
                outcome: Arc::default(),
            },
            formats,
        ))
    }

    /// How far apart the files' first requests are, ns (0 for one file).
    pub fn start_spread_ns(&self) -> u64 {
        self.sources.start_spread_ns()
    }

    /// The stream ended (or failed): publish what it saw.
    fn close(&mut self, error: Option<String>) {
        let mut o = self.outcome.lock().expect("not poisoned");
        o.counts = self.mapper.counts;
        o.devices_seen = self.mapper.devices_seen.iter().copied().collect();
        let s = &mut self.sources;
        o.error = error.or_else(|| s.error.take());
        o.notes = s.notes();
        o.bad_lines = s.bad_lines();
        o.records = s.records;
    }
}

impl Iterator for TraceRequests {
    type Item = ReplayRequest;

    fn next(&mut self) -> Option<ReplayRequest> {
        loop {
            let next = match &mut self.sorted {
                Some(all) => all.next(),
                None => self.sources.next(),
            };
            let Some(r) = next else {
                self.close(None);
                return None;
            };
            let request = TraceRequest {
                arrival_ns: r.arrival_ns,
                device: r.device,
                kind: kind(r.kind),
                offset_bytes: r.offset_bytes,
                length_bytes: r.length_bytes,
                service_ns: r.service_ns,
                placement: r.placement,
            };
            match self.mapper.map(request) {
                Ok(Some(q)) => return Some(q),
                Ok(None) => continue,
                Err(e) => {
                    let at = format!(
                        "{}: request {} (arriving at {} ns)",
                        self.label,
                        self.mapper.counts.mapped + self.mapper.counts.other_devices_skipped + 1,
                        r.arrival_ns
                    );
                    self.close(Some(format!("{at}: {e}")));
                    return None;
                }
            }
        }
    }
}

/// `ssdlab trace stats`: what the trace files hold, as JSON.
pub fn stats_json(paths: &[String], options: TraceOptions) -> Result<String, String> {
    let (mut sources, formats) = Sources::open(paths, &options)?;
    let mut b = crate::stats::StatsBuilder::default();
    let mut other = 0u64;
    for r in sources.by_ref() {
        if options.device.is_some_and(|d| d != r.device) {
            other += 1;
            continue;
        }
        b.add(&r);
    }
    if let Some(e) = sources.error.take() {
        return Err(e);
    }
    let beyond = b.ends_beyond_2_64;
    let stats = b.finish();
    let mut notes = sources.notes();
    if beyond > 0 {
        // They used to be capped silently (issue 25, item 22).
        notes.push(format!(
            "{beyond} requests end beyond 2^64 bytes: counted as ending at 2^64 in the footprint and sequentiality; a replay refuses them (beyond any drive) unless --wrap"
        ));
    }
    if stats.requests == 0 {
        // Nothing to describe: say why, instead of a table of zeros and exit 0 (issue 25, 22).
        let why = match (sources.bad_lines(), other) {
            (0, 0) => "no request lines (a header only, or nothing but comments)".to_string(),
            (bad, 0) => format!(
                "every one of its {bad} request lines was malformed and skipped (--skip-bad-lines)"
            ),
            (0, o) => format!("all {o} of its requests are on other devices than --device"),
            (bad, o) => format!("{bad} malformed lines skipped and {o} requests on other devices"),
        };
        return Err(format!(
            "{}: no requests to describe: {why}; accepted: a trace with at least one request",
            paths.join(", ")
        ));
    }
    Ok(serde_json::json!({
        "files": paths,
        "formats": formats,
        "notes": notes,
        "bad_lines_skipped": sources.bad_lines(),
        "other_devices_skipped": other,
        "stats": stats,
    })
    .to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use ssdlab_core::config::DriveConfig;
    use ssdlab_core::device::Device;
    use ssdlab_core::replay::{ReplayMode, ReplayRun};
    use ssdlab_core::time::{SimTime, NS_PER_S};

    /// A trace file replays from Rust alone: read, mapped, replayed on a drive to its end.
    #[test]
    fn a_trace_file_replays_without_python() {
        let dir = std::env::temp_dir().join(format!("ssdlab-replay-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("small.trace");
        // DiskSim/MQSim: arrival (ns), device, sector, sectors, type (0 write, 1 read).
        let mut text = String::new();
        for i in 0..400u64 {
            let op = if i % 3 == 0 { 1 } else { 0 };
            text.push_str(&format!(
                "{} 0 {} 8 {}\n",
                i * 50_000,
                (i * 7919 % 4096) * 8,
                op
            ));
        }
        std::fs::write(&path, text).unwrap();
        let cfg = DriveConfig::from_toml_str(ssdlab_core::EXAMPLE_DRIVE_TOML).unwrap();
        let mut dev = Device::new(&cfg, 1).unwrap();
        let paths = vec![path.to_string_lossy().into_owned()];
        let (requests, formats) =
            TraceRequests::open(&paths, TraceOptions::default(), dev.user_bytes()).unwrap();
        let outcome = requests.outcome.clone();
        let mut run = ReplayRun::new(
            &dev,
            requests,
            ReplayMode::Afap { max_outstanding: 0 },
            NS_PER_S,
        );
        let mut until = dev.now();
        loop {
            until = SimTime(until.ns() + NS_PER_S);
            if run.advance(&mut dev, until) {
                break;
            }
        }
        let (summary, _) = run.finish(&dev);
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(formats, vec!["disksim".to_string()]);
        assert_eq!(summary.requests, 400);
        assert_eq!((summary.read.ops.ios, summary.write.ops.ios), (134, 266));
        let o = outcome.lock().unwrap();
        assert_eq!((o.records, o.error.clone()), (400, None));
    }
}
