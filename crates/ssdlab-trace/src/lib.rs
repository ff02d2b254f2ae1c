//! ssdlab-trace: streaming readers for the block-trace formats researchers hold, and writers
//! for the same formats (round trips, synthetic traces).
//!
//! [`TraceReader`] turns lines from any `BufRead` into [`TraceRecord`]s one at a time, so a
//! trace of any size streams; [`detect`] recognises the format from the first lines. A
//! malformed line is a [`TraceError`] with the line number, the line and what was expected.
//!
//! ```
//! use ssdlab_trace::{TraceReader, TraceFormat, ReaderOptions, OpKind};
//! let text = "0 1 2048 8 1\n1000 1 4096 16 0\n";
//! let opts = ReaderOptions { format: TraceFormat::DiskSim, ..ReaderOptions::default() };
//! let recs: Vec<_> = TraceReader::new(text.as_bytes(), opts).collect::<Result<_, _>>().unwrap();
//! assert_eq!(recs[1].kind, OpKind::Write);
//! assert_eq!(recs[1].offset_bytes, 4096 * 512);
//! ```

mod formats;

use std::fmt;
use std::io::BufRead;

pub use formats::{detect, header, write_record};

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
    /// fio iolog version 2 (no timestamps) or 3 (timestamp first).
    FioIolog,
    /// DiskSim/MQSim ASCII: `arrival device start_sector size_sectors type` (0 write, 1 read).
    DiskSim,
}

impl TraceFormat {
    pub fn name(self) -> &'static str {
        match self {
            TraceFormat::MsrCsv => "msr",
            TraceFormat::Spc => "spc",
            TraceFormat::Blkparse => "blkparse",
            TraceFormat::FioIolog => "fio-iolog",
            TraceFormat::DiskSim => "disksim",
        }
    }

    pub fn from_name(name: &str) -> Option<TraceFormat> {
        Some(match name {
            "msr" | "msr-csv" => TraceFormat::MsrCsv,
            "spc" | "umass" => TraceFormat::Spc,
            "blkparse" => TraceFormat::Blkparse,
            "fio" | "fio-iolog" | "iolog" => TraceFormat::FioIolog,
            "disksim" | "mqsim" => TraceFormat::DiskSim,
            _ => return None,
        })
    }

    pub const ALL: [TraceFormat; 5] = [
        TraceFormat::MsrCsv,
        TraceFormat::Spc,
        TraceFormat::Blkparse,
        TraceFormat::FioIolog,
        TraceFormat::DiskSim,
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
}

/// Where blkparse arrivals come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlkparseArrival {
    /// Q: queued by the block layer.
    Queue,
    /// D: issued to the driver.
    Issue,
}

#[derive(Clone, Copy, Debug)]
pub struct ReaderOptions {
    pub format: TraceFormat,
    /// DiskSim/MQSim arrival unit, nanoseconds per unit (MQSim: 1; DiskSim: 1e6, ms).
    pub disksim_time_unit_ns: f64,
    pub blkparse_arrival: BlkparseArrival,
    /// Count malformed lines instead of stopping at the first.
    pub skip_bad_lines: bool,
}

impl Default for ReaderOptions {
    fn default() -> Self {
        ReaderOptions {
            format: TraceFormat::DiskSim,
            disksim_time_unit_ns: 1.0,
            blkparse_arrival: BlkparseArrival::Issue,
            skip_bad_lines: false,
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

impl fmt::Display for TraceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line_number == 0 {
            write!(f, "{}", self.message)
        } else {
            write!(
                f,
                "line {}: {}\n  {}",
                self.line_number,
                self.message,
                self.line.trim_end()
            )
        }
    }
}

impl std::error::Error for TraceError {}

/// Streams records out of a trace, one line at a time.
pub struct TraceReader<R: BufRead> {
    input: R,
    options: ReaderOptions,
    line: String,
    line_number: u64,
    /// Lines skipped as malformed (with `skip_bad_lines`).
    pub bad_lines: u64,
    /// fio iolog: version seen in the header (2 or 3), 0 before it.
    fio_version: u32,
    /// blkparse: arrivals waiting for their completion event, by (device, sector).
    pending: formats::Pending,
    /// Records ready to hand out (blkparse completions release several at once).
    ready: std::collections::VecDeque<TraceRecord>,
    finished: bool,
}

impl<R: BufRead> TraceReader<R> {
    pub fn new(input: R, options: ReaderOptions) -> Self {
        TraceReader {
            input,
            options,
            line: String::new(),
            line_number: 0,
            bad_lines: 0,
            fio_version: 0,
            pending: formats::Pending::default(),
            ready: std::collections::VecDeque::new(),
            finished: false,
        }
    }

    pub fn lines_read(&self) -> u64 {
        self.line_number
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
            self.line.clear();
            match self.input.read_line(&mut self.line) {
                Ok(0) => {
                    self.finished = true;
                    // blkparse arrivals that never completed still happened.
                    self.ready.extend(self.pending.drain());
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
            match formats::parse_line(self) {
                Ok(()) => {}
                Err(message) => {
                    if self.options.skip_bad_lines {
                        self.bad_lines += 1;
                        continue;
                    }
                    self.finished = true;
                    return Some(Err(TraceError {
                        line_number: self.line_number,
                        line: self.line.clone(),
                        message,
                    }));
                }
            }
        }
    }
}
