//! Opening trace files for replay: plain or gzip, format detected or given, records mapped
//! onto the drive. File I/O lives here, outside the simulation core.

use ssdlab_core::device::IoKind;
use ssdlab_core::replay::ReplayRequest;
use ssdlab_trace::{detect, BlkparseArrival, OpKind, ReaderOptions, TraceFormat, TraceReader};
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::sync::{Arc, Mutex};

pub struct TraceOptions {
    pub format: Option<String>,
    pub device: Option<u32>,
    /// Wrap requests past the end of the drive (else reject them).
    pub wrap: bool,
    pub skip_bad_lines: bool,
    pub disksim_time_unit_ns: f64,
    pub blkparse_queue_arrivals: bool,
}

/// What went wrong while streaming, reported when the replay ends.
#[derive(Default)]
pub struct Outcome {
    pub error: Option<String>,
    pub bad_lines: u64,
    pub skipped_other_devices: u64,
    pub wrapped: u64,
    /// Requests whose recorded queue depth was unknown (no service time).
    pub without_service_time: u64,
}

/// Trace records as replay requests; stops at the first error (kept in `outcome`).
pub struct TraceRequests {
    reader: TraceReader<Box<dyn BufRead + Send + Sync>>,
    options: TraceOptions,
    user_bytes: u64,
    path: String,
    pub outcome: Arc<Mutex<Outcome>>,
    /// Recorded completion times of earlier requests still outstanding at the last arrival.
    recorded_completions: std::collections::BinaryHeap<std::cmp::Reverse<u64>>,
}

fn open(path: &str) -> Result<Box<dyn BufRead + Send + Sync>, String> {
    let mut file = File::open(path).map_err(|e| format!("{path}: cannot open: {e}"))?;
    let mut magic = [0u8; 2];
    let n = file
        .read(&mut magic)
        .map_err(|e| format!("{path}: cannot read: {e}"))?;
    let file = File::open(path).map_err(|e| format!("{path}: cannot open: {e}"))?;
    if n == 2 && magic == [0x1f, 0x8b] {
        Ok(Box::new(BufReader::with_capacity(
            1 << 20,
            flate2::read::MultiGzDecoder::new(file),
        )))
    } else {
        Ok(Box::new(BufReader::with_capacity(1 << 20, file)))
    }
}

impl TraceRequests {
    pub fn open(
        path: &str,
        options: TraceOptions,
        user_bytes: u64,
    ) -> Result<(TraceRequests, TraceFormat), String> {
        let format = match &options.format {
            Some(name) => TraceFormat::from_name(name)
                .ok_or_else(|| format!("--format '{name}' is not known; accepted: msr, spc, blkparse, fio-iolog, disksim"))?,
            None => {
                let mut head = open(path)?;
                let mut lines = Vec::new();
                let mut line = String::new();
                while lines.len() < 20 {
                    line.clear();
                    match head.read_line(&mut line) {
                        Ok(0) => break,
                        Ok(_) => lines.push(line.trim_end().to_string()),
                        Err(e) => return Err(format!("{path}: cannot read: {e} (a truncated or corrupt file?)")),
                    }
                }
                if lines.iter().all(|l| l.trim().is_empty()) {
                    return Err(format!("{path}: the trace is empty"));
                }
                let refs: Vec<&str> = lines.iter().map(|s| s.as_str()).collect();
                detect(&refs).ok_or_else(|| {
                    format!("{path}: cannot tell the trace format from its first lines; give --format (msr, spc, blkparse, fio-iolog, disksim)")
                })?
            }
        };
        let reader_options = ReaderOptions {
            format,
            disksim_time_unit_ns: options.disksim_time_unit_ns,
            blkparse_arrival: if options.blkparse_queue_arrivals {
                BlkparseArrival::Queue
            } else {
                BlkparseArrival::Issue
            },
            skip_bad_lines: options.skip_bad_lines,
        };
        let reader = TraceReader::new(open(path)?, reader_options);
        Ok((
            TraceRequests {
                reader,
                options,
                user_bytes,
                path: path.to_string(),
                outcome: Arc::default(),
                recorded_completions: Default::default(),
            },
            format,
        ))
    }

    fn fail(&mut self, message: String) -> Option<ReplayRequest> {
        self.outcome.lock().expect("not poisoned").error = Some(message);
        None
    }
}

impl Iterator for TraceRequests {
    type Item = ReplayRequest;

    fn next(&mut self) -> Option<ReplayRequest> {
        loop {
            let next = self.reader.next();
            self.outcome.lock().expect("not poisoned").bad_lines = self.reader.bad_lines;
            let record = match next? {
                Ok(r) => r,
                Err(e) => {
                    let path = self.path.clone();
                    return self.fail(format!("{path}: {e}"));
                }
            };
            if self.options.device.is_some_and(|d| d != record.device) {
                self.outcome
                    .lock()
                    .expect("not poisoned")
                    .skipped_other_devices += 1;
                continue;
            }
            let (mut offset, length) = (record.offset_bytes, record.length_bytes);
            if length > self.user_bytes {
                let (path, line) = (self.path.clone(), self.reader.lines_read());
                return self.fail(format!("{path}: line {line}: a {length}-byte request is larger than the drive ({} bytes)", self.user_bytes));
            }
            if offset + length > self.user_bytes {
                if !self.options.wrap {
                    let (path, line) = (self.path.clone(), self.reader.lines_read());
                    return self.fail(format!(
                        "{path}: line {line}: request at byte {offset} + {length} is beyond the drive's {} bytes; use --wrap to fold the trace onto the drive",
                        self.user_bytes
                    ));
                }
                offset = (offset % (self.user_bytes - length + 1)) / 512 * 512;
                self.outcome.lock().expect("not poisoned").wrapped += 1;
            }
            // Depth of the recorded run at this arrival: earlier requests not yet completed.
            while self
                .recorded_completions
                .peek()
                .is_some_and(|c| c.0 <= record.arrival_ns)
            {
                self.recorded_completions.pop();
            }
            let recorded_depth = match record.service_ns {
                Some(s) => {
                    self.recorded_completions
                        .push(std::cmp::Reverse(record.arrival_ns + s));
                    self.recorded_completions.len() as u32
                }
                None => {
                    self.outcome
                        .lock()
                        .expect("not poisoned")
                        .without_service_time += 1;
                    0
                }
            };
            let kind = match record.kind {
                OpKind::Read => IoKind::Read,
                OpKind::Write => IoKind::Write,
                OpKind::Trim => IoKind::Trim,
            };
            return Some(ReplayRequest {
                arrival_ns: record.arrival_ns,
                kind,
                offset_bytes: offset,
                length_bytes: length,
                recorded_depth,
            });
        }
    }
}
