//! ssdlab-trace: streaming readers for the block-trace formats researchers hold, and writers
//! for the same formats (round trips, synthetic traces).
//!
//! [`TraceReader`] turns lines from any `BufRead` into [`TraceRecord`]s one at a time, so a
//! trace of any size streams; [`detect()`] recognises the format from the first lines. A
//! malformed line is a [`TraceError`] with the line number, the line and what was expected.
//! [`blktrace`] reads blktrace's binary per-CPU files; [`input`] opens files (plain, gzip,
//! bzip2, xz, zstd); [`stats`] summarises a trace before it is replayed.
//!
//! ```
//! use ssdlab_trace::{TraceReader, TraceFormat, ReaderOptions, OpKind};
//! let text = "0 1 2048 8 1\n1000 1 4096 16 0\n";
//! let opts = ReaderOptions { format: TraceFormat::DiskSim, ..ReaderOptions::default() };
//! let recs: Vec<_> = TraceReader::new(text.as_bytes(), opts).collect::<Result<_, _>>().unwrap();
//! assert_eq!(recs[1].kind, OpKind::Write);
//! assert_eq!(recs[1].offset_bytes, 4096 * 512);
//! ```

mod blk;
pub mod blktrace;
pub mod columns;
mod detect;
mod formats;
pub mod input;
pub mod replay;
pub mod stats;

use std::fmt;
use std::io::BufRead;

pub use columns::ColumnSpec;
pub use detect::{detect, detect_tolerant};
pub use formats::{header, write_record};

/// Trace formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TraceFormat {
    /// SNIA MSR Cambridge: `Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime`,
    /// Windows filetime (100 ns ticks), bytes; header optional.
    MsrCsv,
    /// UMass/SPC: `ASU,LBA,Size,Opcode,Timestamp[,...]`: LBA in 512 B sectors, size in bytes,
    /// timestamp in seconds.
    Spc,
    /// blkparse default text output: Q or D events are arrivals, C events completions.
    Blkparse,
    /// fio iolog version 2 (no timestamps but `wait`) or 3 (timestamp first).
    FioIolog,
    /// DiskSim/MQSim ASCII: `arrival device start_sector size_sectors type` (0 write, 1 read).
    DiskSim,
    /// Alibaba block traces (github.com/alibaba/block-traces, README):
    /// `device_id,opcode,offset,length,timestamp`, opcode R or W, offset and length in bytes,
    /// timestamp in microseconds (Unix epoch).
    Alibaba,
    /// Tencent Cloud Block Storage (SNIA IOTTA trace 27917, README.txt):
    /// `Timestamp,Offset,Size,IOType,VolumeID`, Unix seconds, offset and size in 512 B sectors,
    /// IOType 0 read, 1 write.
    Tencent,
    /// FIU SRCMap/dedup traces (SNIA IOTTA 390/391, the traces' README):
    /// `ts_ns pid process lba size_blocks W|R major minor md5`, 512 B blocks.
    Fiu,
    /// Microsoft Production Server traces (SNIA IOTTA 158, ETW dumped by xperf/tracerpt):
    /// `DiskRead|DiskWrite, TimeStamp, Process Name ( PID), ThreadID, IrpPtr, ByteOffset,
    /// IOSize, ElapsedTime, DiskNum, IrpFlags, DiskSvcTime, ...`: microseconds, hex or decimal
    /// bytes; other events skipped.
    MsProd,
    /// blktrace's binary per-CPU files (`DEV.blktrace.N`), read with [`blktrace`].
    Blktrace,
    /// Any delimited text, mapped by a [`ColumnSpec`] (`--columns`).
    Columns,
}

impl TraceFormat {
    pub fn name(self) -> &'static str {
        match self {
            TraceFormat::MsrCsv => "msr",
            TraceFormat::Spc => "spc",
            TraceFormat::Blkparse => "blkparse",
            TraceFormat::FioIolog => "fio-iolog",
            TraceFormat::DiskSim => "disksim",
            TraceFormat::Alibaba => "alibaba",
            TraceFormat::Tencent => "tencent",
            TraceFormat::Fiu => "fiu",
            TraceFormat::MsProd => "msprod",
            TraceFormat::Blktrace => "blktrace",
            TraceFormat::Columns => "columns",
        }
    }

    pub fn from_name(name: &str) -> Option<TraceFormat> {
        Some(match name {
            "msr" | "msr-csv" => TraceFormat::MsrCsv,
            "spc" | "umass" => TraceFormat::Spc,
            "blkparse" => TraceFormat::Blkparse,
            "fio" | "fio-iolog" | "iolog" => TraceFormat::FioIolog,
            "disksim" | "mqsim" => TraceFormat::DiskSim,
            "alibaba" => TraceFormat::Alibaba,
            "tencent" | "cbs" => TraceFormat::Tencent,
            "fiu" => TraceFormat::Fiu,
            "msprod" | "ms-prod" | "etw" => TraceFormat::MsProd,
            "blktrace" => TraceFormat::Blktrace,
            "columns" => TraceFormat::Columns,
            _ => return None,
        })
    }

    /// Names `from_name` accepts, for error messages.
    pub const NAMES: &'static str =
        "msr, spc, blkparse, fio-iolog, disksim, alibaba, tencent, fiu, msprod, blktrace";

    /// The line formats (every format but the binary and the user-mapped one).
    pub const ALL: [TraceFormat; 9] = [
        TraceFormat::MsrCsv,
        TraceFormat::Spc,
        TraceFormat::Blkparse,
        TraceFormat::FioIolog,
        TraceFormat::DiskSim,
        TraceFormat::Alibaba,
        TraceFormat::Tencent,
        TraceFormat::Fiu,
        TraceFormat::MsProd,
    ];
}

/// What a request does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum OpKind {
    Read,
    Write,
    Trim,
}

/// One request of a trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraceRecord {
    /// Arrival, nanoseconds from the trace's own origin (not shifted to start at 0).
    pub arrival_ns: u64,
    /// Disk, device or ASU number (0 when the format has none).
    pub device: u32,
    pub kind: OpKind,
    pub offset_bytes: u64,
    pub length_bytes: u64,
    /// Service (response) time recorded in the trace, if it has one.
    pub service_ns: Option<u64>,
    /// A write's NVMe FDP placement identifier (a `pid` column, `--columns`), or
    /// [`NO_PLACEMENT`].
    pub placement: u16,
}

/// No placement identifier (the write carries no directive).
pub const NO_PLACEMENT: u16 = ssdlab_core::ftl::NO_PLACEMENT;

/// Where blkparse arrivals come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlkparseArrival {
    /// Q: queued by the block layer.
    Queue,
    /// D: issued to the driver.
    Issue,
}

/// A time unit given by name: `ns`, `us`, `ms`, `s` (and `ticks`, Windows' 100 ns).
pub fn time_unit_ns(name: &str) -> Option<f64> {
    Some(match name {
        "ns" => 1.0,
        "us" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        "ticks" => 100.0,
        _ => return None,
    })
}

#[derive(Clone, Debug)]
pub struct ReaderOptions {
    pub format: TraceFormat,
    /// DiskSim/MQSim arrival unit, nanoseconds per unit (MQSim: 1; DiskSim: 1e6, ms). `None`:
    /// decided from the first record (a decimal point: DiskSim's ms; integers: MQSim's ns) and
    /// stated in [`TraceReader::notes`].
    pub disksim_time_unit_ns: Option<f64>,
    pub blkparse_arrival: BlkparseArrival,
    /// Count malformed lines instead of stopping at the first.
    pub skip_bad_lines: bool,
    /// The column mapping of `TraceFormat::Columns`.
    pub columns: Option<ColumnSpec>,
    /// fio v2 `wait N`: false (default), N milliseconds after the job started, as fio's source
    /// replays it (iolog.c read_iolog2); true, N microseconds after the previous wait, as fio's
    /// manual describes it (waits under 100 us discarded).
    pub fio_wait_relative: bool,
}

impl Default for ReaderOptions {
    fn default() -> Self {
        ReaderOptions {
            format: TraceFormat::DiskSim,
            disksim_time_unit_ns: Some(1.0),
            blkparse_arrival: BlkparseArrival::Issue,
            skip_bad_lines: false,
            columns: None,
            fio_wait_relative: false,
        }
    }
}

/// A malformed line: where, what, and what was expected.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceError {
    /// 1-based line number (0: not about one line).
    pub line_number: u64,
    pub line: String,
    pub message: String,
}

/// At most `n` characters of `text`, with " ..." when cut (garbage or endless lines and the
/// fields quoted from them are shown by their start only).
fn shortened(text: &str, n: usize) -> String {
    match text.char_indices().nth(n) {
        Some((i, _)) => format!("{} ...", &text[..i]),
        None => text.to_string(),
    }
}

impl fmt::Display for TraceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let message = shortened(&self.message, 240);
        if self.line_number == 0 {
            write!(f, "{message}")
        } else {
            write!(
                f,
                "line {}: {message}\n  {}",
                self.line_number,
                shortened(self.line.trim_end(), 160)
            )
        }
    }
}

impl std::error::Error for TraceError {}

/// Streams records out of a trace, one line at a time.
pub struct TraceReader<R: BufRead> {
    input: R,
    options: ReaderOptions,
    /// The current line's bytes (any encoding; decoded lossily where it is not UTF-8).
    bytes: Vec<u8>,
    line_number: u64,
    /// Lines skipped as malformed (with `skip_bad_lines`).
    pub bad_lines: u64,
    /// Lines that were not UTF-8 (their other bytes read as U+FFFD; only free-text fields
    /// such as process names can hold them without an error).
    pub non_utf8_lines: u64,
    /// fio iolog: version seen in the header (2 or 3), 0 before it.
    fio_version: u32,
    /// fio v2: the last `wait` (absolute milliseconds since the job started), as ns.
    fio_wait_ns: u64,
    fio_waits: u64,
    /// DiskSim unit once decided.
    disksim_unit_ns: Option<f64>,
    /// What the reader assumed, for the user (time units, missing timestamps).
    notes: Vec<String>,
    /// blkparse: requests between arrival and completion.
    blk: blk::Tracker,
    /// Records ready to hand out (blkparse completions release several at once).
    ready: std::collections::VecDeque<TraceRecord>,
    finished: bool,
}

impl<R: BufRead> TraceReader<R> {
    pub fn new(input: R, options: ReaderOptions) -> Self {
        let arrival = options.blkparse_arrival;
        TraceReader {
            input,
            disksim_unit_ns: options.disksim_time_unit_ns,
            options,
            bytes: Vec::new(),
            line_number: 0,
            bad_lines: 0,
            non_utf8_lines: 0,
            fio_version: 0,
            fio_wait_ns: 0,
            fio_waits: 0,
            notes: Vec::new(),
            blk: blk::Tracker::new(arrival),
            ready: std::collections::VecDeque::new(),
            finished: false,
        }
    }

    pub fn lines_read(&self) -> u64 {
        self.line_number
    }

    /// The input, for reading what is left of it.
    pub fn input_mut(&mut self) -> &mut R {
        &mut self.input
    }

    /// What the reader assumed or noticed, one sentence each (time units it chose, a trace
    /// without timestamps, requeued requests dropped), once the trace is read.
    pub fn notes(&self) -> Vec<String> {
        let mut notes = self.notes.clone();
        if self.options.format == TraceFormat::FioIolog
            && self.fio_version == 2
            && self.fio_waits == 0
        {
            notes.push("fio v2 iolog without 'wait' lines has no timestamps: every request arrives at time 0 (timed and afap modes send them at once, in file order); --mode qd --qd N replays it closed loop".into());
        }
        if self.options.format == TraceFormat::FioIolog
            && self.fio_version == 2
            && self.fio_waits > 0
        {
            notes.push(if self.options.fio_wait_relative {
                format!("fio v2 'wait' lines ({}) read as fio's manual describes them: microseconds after the previous wait, waits under 100 us dropped (fio's own replay reads them as milliseconds since the start: --fio-wait absolute)", self.fio_waits)
            } else {
                format!("fio v2 'wait' lines ({}) read as fio's replay (iolog.c) does: milliseconds since the job started (fio's manual says microseconds after the previous wait: --fio-wait relative)", self.fio_waits)
            });
        }
        notes.extend(self.blk.notes());
        if self.non_utf8_lines > 0 {
            notes.push(format!(
                "{} lines were not UTF-8 text; their odd bytes were read as U+FFFD (only free-text fields such as process names may hold them)",
                self.non_utf8_lines
            ));
        }
        notes
    }
}

impl<R: BufRead> Iterator for TraceReader<R> {
    type Item = Result<TraceRecord, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(r) = self.ready.pop_front() {
                return Some(Ok(r));
            }
            if self.finished {
                return None;
            }
            self.bytes.clear();
            match self.input.read_until(b'\n', &mut self.bytes) {
                Ok(0) => {
                    self.finished = true;
                    // blkparse arrivals that never completed still happened.
                    self.blk.drain(&mut self.ready);
                    continue;
                }
                Ok(_) => {}
                Err(e) => {
                    self.finished = true;
                    return Some(Err(TraceError {
                        line_number: self.line_number + 1,
                        line: String::new(),
                        message: format!(
                            "cannot read the trace: {e} (a truncated or corrupt file?)"
                        ),
                    }));
                }
            }
            self.line_number += 1;
            let parsed = formats::parse_line(self);
            match parsed {
                Ok(()) => {}
                Err(message) => {
                    if self.options.skip_bad_lines {
                        self.bad_lines += 1;
                        continue;
                    }
                    self.finished = true;
                    return Some(Err(TraceError {
                        line_number: self.line_number,
                        line: String::from_utf8_lossy(&self.bytes).into_owned(),
                        message,
                    }));
                }
            }
        }
    }
}
