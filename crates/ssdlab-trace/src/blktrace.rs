//! blktrace's binary output read directly (no blkparse needed): one file per CPU
//! (`DEV.blktrace.0`, `DEV.blktrace.1`, ...), each a sequence of `struct blk_io_trace` records
//! (include/uapi/linux/blktrace_api.h) followed by `pdu_len` bytes of payload:
//!
//! ```text
//! u32 magic (0x65617400 | version 7)  u32 sequence  u64 time (ns)  u64 sector
//! u32 bytes  u32 action  u32 pid  u32 device (dev_t: major << 20 | minor)
//! u32 cpu  u16 error  u16 pdu_len                                   = 48 bytes
//! ```
//!
//! in the byte order of the machine that traced (the magic tells which). The action's low 16
//! bits are the event (`__BLK_TA_QUEUE` 1, `REQUEUE` 6, `ISSUE` 7, `COMPLETE` 8, ...); its high
//! 16 bits the categories (`BLK_TC_WRITE` 1<<1, `BLK_TC_PC` 1<<9, `BLK_TC_NOTIFY` 1<<10,
//! `BLK_TC_DISCARD` 1<<13). Events of the CPUs are merged in time order and tracked as
//! blkparse's text is.

use crate::blk::{Action, Event, Tracker};
use crate::{BlkparseArrival, OpKind, TraceError, TraceRecord};
use std::collections::{BinaryHeap, VecDeque};
use std::io::Read;

pub const MAGIC: u32 = 0x6561_7400;
const VERSION: u32 = 0x07;
const HEADER_BYTES: usize = 48;
const TA_QUEUE: u32 = 1;
const TA_REQUEUE: u32 = 6;
const TA_ISSUE: u32 = 7;
const TA_COMPLETE: u32 = 8;
const TC_WRITE: u32 = 1 << 1;
const TC_PC: u32 = 1 << 9;
const TC_NOTIFY: u32 = 1 << 10;
const TC_DISCARD: u32 = 1 << 13;

/// Whether the first bytes of a file are a blktrace record (either byte order).
pub fn is_blktrace(head: &[u8]) -> bool {
    head.len() >= 4 && {
        let b = [head[0], head[1], head[2], head[3]];
        (u32::from_le_bytes(b) & 0xFFFF_FF00) == MAGIC
            || (u32::from_be_bytes(b) & 0xFFFF_FF00) == MAGIC
    }
}

/// One raw record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RawEvent {
    pub time_ns: u64,
    pub sector: u64,
    pub bytes: u32,
    pub action: u32,
    pub device: u32,
    pub cpu: u32,
}

impl RawEvent {
    /// The record in blktrace's layout, little-endian (tests, samples).
    pub fn encode(&self, sequence: u32) -> Vec<u8> {
        let mut b = Vec::with_capacity(HEADER_BYTES);
        b.extend((MAGIC | VERSION).to_le_bytes());
        b.extend(sequence.to_le_bytes());
        b.extend(self.time_ns.to_le_bytes());
        b.extend(self.sector.to_le_bytes());
        b.extend(self.bytes.to_le_bytes());
        b.extend(self.action.to_le_bytes());
        b.extend(4242u32.to_le_bytes());
        b.extend(self.device.to_le_bytes());
        b.extend(self.cpu.to_le_bytes());
        b.extend(0u16.to_le_bytes());
        b.extend(0u16.to_le_bytes());
        b
    }

    /// An action word: event code and categories.
    pub fn action(event: u32, kind: OpKind) -> u32 {
        let category = match kind {
            OpKind::Read => 1,
            OpKind::Write => TC_WRITE,
            OpKind::Trim => TC_DISCARD | TC_WRITE,
        };
        event | (category << 16)
    }
    pub const QUEUE: u32 = TA_QUEUE;
    pub const REQUEUE: u32 = TA_REQUEUE;
    pub const ISSUE: u32 = TA_ISSUE;
    pub const COMPLETE: u32 = TA_COMPLETE;
}

struct Stream {
    input: Box<dyn Read + Send + Sync>,
    name: String,
    big_endian: Option<bool>,
    records: u64,
}

impl Stream {
    fn next(&mut self) -> Result<Option<RawEvent>, String> {
        let mut h = [0u8; HEADER_BYTES];
        match read_full(&mut self.input, &mut h) {
            Ok(0) => return Ok(None),
            Ok(n) if n < HEADER_BYTES => {
                return Err(format!(
                    "{}: record {} is cut short ({n} of {HEADER_BYTES} bytes): a truncated file?",
                    self.name,
                    self.records + 1
                ))
            }
            Ok(_) => {}
            Err(e) => return Err(format!("{}: cannot read: {e}", self.name)),
        }
        let magic_le = u32::from_le_bytes([h[0], h[1], h[2], h[3]]);
        let big = *self
            .big_endian
            .get_or_insert((magic_le & 0xFFFF_FF00) != MAGIC);
        let u32_at = |i: usize| {
            let b = [h[i], h[i + 1], h[i + 2], h[i + 3]];
            if big {
                u32::from_be_bytes(b)
            } else {
                u32::from_le_bytes(b)
            }
        };
        let u64_at = |i: usize| {
            let mut b = [0u8; 8];
            b.copy_from_slice(&h[i..i + 8]);
            if big {
                u64::from_be_bytes(b)
            } else {
                u64::from_le_bytes(b)
            }
        };
        let magic = u32_at(0);
        if magic & 0xFFFF_FF00 != MAGIC {
            return Err(format!(
                "{}: record {} has magic {magic:#010x}, not blktrace's {MAGIC:#010x}: not a blktrace file, or corrupt",
                self.name,
                self.records + 1
            ));
        }
        let pdu = if big {
            u16::from_be_bytes([h[46], h[47]])
        } else {
            u16::from_le_bytes([h[46], h[47]])
        };
        let mut skip = vec![0u8; pdu as usize];
        if read_full(&mut self.input, &mut skip).map_err(|e| format!("{}: {e}", self.name))?
            < skip.len()
        {
            return Err(format!(
                "{}: record {}'s payload is cut short: a truncated file?",
                self.name,
                self.records + 1
            ));
        }
        self.records += 1;
        Ok(Some(RawEvent {
            time_ns: u64_at(8),
            sector: u64_at(16),
            bytes: u32_at(24),
            action: u32_at(28),
            device: u32_at(36),
            cpu: u32_at(40),
        }))
    }
}

fn read_full(r: &mut dyn Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// Records of a blktrace capture: the per-CPU files merged in time order, tracked from arrival
/// to completion.
pub struct BlktraceReader {
    streams: Vec<Stream>,
    /// Next event of each stream: (time, stream) smallest first.
    heads: BinaryHeap<std::cmp::Reverse<(u64, usize)>>,
    pending: Vec<Option<RawEvent>>,
    tracker: Tracker,
    ready: VecDeque<TraceRecord>,
    started: bool,
    finished: bool,
    pub events: u64,
}

impl BlktraceReader {
    /// `inputs`: (name for messages, reader) per CPU file.
    pub fn new(
        inputs: Vec<(String, Box<dyn Read + Send + Sync>)>,
        arrival: BlkparseArrival,
    ) -> Self {
        let n = inputs.len();
        BlktraceReader {
            streams: inputs
                .into_iter()
                .map(|(name, input)| Stream {
                    input,
                    name,
                    big_endian: None,
                    records: 0,
                })
                .collect(),
            heads: BinaryHeap::new(),
            pending: vec![None; n],
            tracker: Tracker::new(arrival),
            ready: VecDeque::new(),
            started: false,
            finished: false,
            events: 0,
        }
    }

    pub fn notes(&self) -> Vec<String> {
        self.tracker.notes()
    }

    fn pull(&mut self, k: usize) -> Result<(), String> {
        if let Some(e) = self.streams[k].next()? {
            self.pending[k] = Some(e);
            self.heads.push(std::cmp::Reverse((e.time_ns, k)));
        }
        Ok(())
    }

    fn feed(&mut self, e: RawEvent) {
        self.events += 1;
        let (code, category) = (e.action & 0xFFFF, e.action >> 16);
        if category & (TC_NOTIFY | TC_PC) != 0 {
            return; // process notes and SCSI packet commands: not block requests
        }
        let action = match code {
            TA_QUEUE => Action::Queue,
            TA_ISSUE => Action::Issue,
            TA_REQUEUE => Action::Requeue,
            TA_COMPLETE => Action::Complete,
            _ => return,
        };
        let kind = if category & TC_DISCARD != 0 {
            OpKind::Trim
        } else if category & TC_WRITE != 0 {
            OpKind::Write
        } else {
            OpKind::Read
        };
        let event = Event {
            time_ns: e.time_ns,
            device: e.device,
            action,
            kind,
            sector: e.sector,
            sectors: e.bytes as u64 / 512,
        };
        self.tracker.event(event, &mut self.ready);
    }
}

impl Iterator for BlktraceReader {
    type Item = Result<TraceRecord, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        let fail = |message: String| {
            Some(Err(TraceError {
                line_number: 0,
                line: String::new(),
                message,
            }))
        };
        if !self.started {
            self.started = true;
            for k in 0..self.streams.len() {
                if let Err(m) = self.pull(k) {
                    self.finished = true;
                    return fail(m);
                }
            }
        }
        loop {
            if let Some(r) = self.ready.pop_front() {
                return Some(Ok(r));
            }
            if self.finished {
                return None;
            }
            let Some(std::cmp::Reverse((_, k))) = self.heads.pop() else {
                self.finished = true;
                self.tracker.drain(&mut self.ready);
                continue;
            };
            let e = self.pending[k].take().expect("queued");
            self.feed(e);
            if let Err(m) = self.pull(k) {
                self.finished = true;
                return fail(m);
            }
        }
    }
}
