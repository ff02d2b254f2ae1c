//! The NAND side of the device: per-die operation queues and what the FTL's decisions cost in
//! time.
//!
//! Each die runs its operations one after another. An operation is timed when the die can
//! start it (`DieReady`), not when it is decided, so bus transfers are reserved near the
//! current time and a burst of garbage collection queued on one die does not block the channel
//! for the others. Host reads go ahead of queued programs, erases and GC reads, as
//! controllers prioritise them.

use super::Event;
use crate::ftl::{NandSink, ProgramKind};
use crate::nand::Nand;
use crate::time::SimTime;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

#[derive(Clone, Copy, Debug)]
pub(super) enum NandOp {
    Program {
        kind: ProgramKind,
        host_units: u32,
        data_ready: SimTime,
    },
    GcRead {
        planes: u32,
        bytes: u64,
    },
    HostRead {
        planes: u32,
        bytes: u64,
        slot: u32,
    },
    Erase,
}

#[derive(Clone, Debug, Default)]
struct DieQueue {
    /// Host reads, served first.
    reads: VecDeque<NandOp>,
    /// Everything else, in decision order.
    ops: VecDeque<NandOp>,
    /// The die can start its next operation from then on.
    ready_at: SimTime,
    /// A DieReady event for this die is in the event queue.
    wakeup_pending: bool,
    /// Host programs queued so far, and completed so far (FLUSH and FUA wait on these).
    host_programs_queued: u64,
    host_programs_done: u64,
}

/// Host reads waiting for their NAND reads.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct ReadWait {
    pub pending: u32,
    pub ready: SimTime,
}

pub(super) struct Backend {
    pub nand: Nand,
    pub now: SimTime,
    pub planes: u32,
    pub unit_bytes: u64,
    events: BinaryHeap<Reverse<(SimTime, u64, Event)>>,
    monotone: VecDeque<(SimTime, u64, Event)>,
    sequence: u64,
    dies: Vec<DieQueue>,
    /// Per slot: host data reads outstanding on the NAND.
    pub read_waits: Vec<ReadWait>,
    /// When the host data being placed now has arrived in DRAM.
    pub host_data_ready: SimTime,
}

impl Backend {
    pub fn new(nand: Nand, dies: u32, planes: u32, unit_bytes: u64) -> Self {
        Backend {
            nand,
            now: SimTime::ZERO,
            planes,
            unit_bytes,
            events: BinaryHeap::new(),
            monotone: VecDeque::new(),
            sequence: 0,
            dies: vec![DieQueue::default(); dies as usize],
            read_waits: Vec::new(),
            host_data_ready: SimTime::ZERO,
        }
    }

    pub fn push(&mut self, at: SimTime, event: Event) {
        debug_assert!(at >= self.now);
        self.sequence += 1;
        self.events.push(Reverse((at, self.sequence, event)));
    }

    /// Queue an event whose time is not earlier than that of any event queued this way before
    /// (the controller's FIFO dispatches): a plain FIFO, merged with the heap by (time, seq),
    /// so the order is exactly what the heap alone would give.
    pub fn push_monotone(&mut self, at: SimTime, event: Event) {
        debug_assert!(at >= self.now);
        debug_assert!(self.monotone.back().is_none_or(|&(t, _, _)| t <= at));
        self.sequence += 1;
        self.monotone.push_back((at, self.sequence, event));
    }

    /// Time of the next event, if any.
    #[inline]
    pub fn peek_time(&self) -> Option<SimTime> {
        let heap = self.events.peek().map(|Reverse((t, _, _))| *t);
        let fifo = self.monotone.front().map(|&(t, _, _)| t);
        match (heap, fifo) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Remove and return the next event.
    #[inline]
    pub fn pop(&mut self) -> Option<(SimTime, Event)> {
        let take_fifo = match (self.events.peek(), self.monotone.front()) {
            (Some(Reverse((t, seq, _))), Some(&(ft, fseq, _))) => (ft, fseq) < (*t, *seq),
            (None, Some(_)) => true,
            _ => false,
        };
        if take_fifo {
            self.monotone.pop_front().map(|(t, _, e)| (t, e))
        } else {
            self.events.pop().map(|Reverse((t, _, e))| (t, e))
        }
    }

    pub fn enqueue(&mut self, die: u32, op: NandOp) {
        let d = &mut self.dies[die as usize];
        match op {
            NandOp::HostRead { .. } => d.reads.push_back(op),
            NandOp::Program {
                kind: ProgramKind::Host,
                ..
            } => {
                d.host_programs_queued += 1;
                d.ops.push_back(op)
            }
            _ => d.ops.push_back(op),
        }
        if !d.wakeup_pending {
            if self.now >= d.ready_at {
                self.start_next(die);
            } else {
                d.wakeup_pending = true;
                let at = d.ready_at;
                self.push(at, Event::DieReady(die));
            }
        }
    }

    /// The die is ready (event): start its next operation, if any.
    pub fn die_ready(&mut self, die: u32) {
        self.dies[die as usize].wakeup_pending = false;
        self.start_next(die);
    }

    fn start_next(&mut self, die: u32) {
        let d = &mut self.dies[die as usize];
        let Some(op) = d.reads.pop_front().or_else(|| d.ops.pop_front()) else {
            return;
        };
        let now = self.now;
        let ready_at = match op {
            NandOp::Program {
                kind,
                host_units,
                data_ready,
            } => {
                let (next, end) = self.nand.program(now, data_ready, die, self.planes);
                if kind == ProgramKind::Host {
                    self.push(end, Event::ProgramDone(die, host_units));
                }
                next
            }
            NandOp::GcRead { planes, bytes } => self.nand.read(now, die, planes, bytes),
            NandOp::HostRead {
                planes,
                bytes,
                slot,
            } => {
                let end = self.nand.read(now, die, planes, bytes);
                let w = &mut self.read_waits[slot as usize];
                w.ready = w.ready.max(end);
                w.pending -= 1;
                if w.pending == 0 {
                    let ready = w.ready;
                    self.push(ready, Event::ReadReady(slot));
                }
                end
            }
            NandOp::Erase => self.nand.erase(now, die),
        };
        let d = &mut self.dies[die as usize];
        d.ready_at = ready_at;
        if !d.reads.is_empty() || !d.ops.is_empty() {
            d.wakeup_pending = true;
            self.push(ready_at, Event::DieReady(die));
        }
    }

    /// A host program on `die` finished.
    pub fn host_program_done(&mut self, die: u32) {
        self.dies[die as usize].host_programs_done += 1;
    }

    /// Per die, the count of host programs queued so far (a FLUSH waits until each is done).
    pub fn host_programs_queued(&self) -> Vec<u64> {
        self.dies.iter().map(|d| d.host_programs_queued).collect()
    }

    pub fn host_programs_done_reach(&self, targets: &[u64]) -> bool {
        self.dies
            .iter()
            .zip(targets)
            .all(|(d, &t)| d.host_programs_done >= t)
    }

    /// Nothing queued on `die` and its array free: when background work could start.
    pub fn die_idle_from(&self, die: u32) -> Option<SimTime> {
        let d = &self.dies[die as usize];
        (d.reads.is_empty() && d.ops.is_empty() && !d.wakeup_pending)
            .then(|| d.ready_at.max(self.nand.die_free_at(die)))
    }

    /// Start collecting the NAND reads of `slot`. A guard count is held until `end_wait`, so
    /// reads that start (and count down) while they are being queued cannot finish the wait.
    pub fn begin_wait(&mut self, slot: u32) {
        let s = slot as usize;
        if self.read_waits.len() <= s {
            self.read_waits.resize(s + 1, ReadWait::default());
        }
        self.read_waits[s] = ReadWait {
            pending: 1,
            ready: self.now,
        };
    }

    /// All reads of `slot` are queued: drop the guard. True if none is outstanding (the data
    /// is ready at `read_waits[slot].ready`, and no ReadReady event will come).
    pub fn end_wait(&mut self, slot: u32) -> bool {
        let w = &mut self.read_waits[slot as usize];
        w.pending -= 1;
        w.pending == 0
    }
}

impl NandSink for Backend {
    #[inline]
    fn program(&mut self, die: u32, kind: ProgramKind, host_units: u32) {
        let data_ready = if kind == ProgramKind::Host {
            self.host_data_ready
        } else {
            self.now
        };
        self.enqueue(
            die,
            NandOp::Program {
                kind,
                host_units,
                data_ready,
            },
        );
    }

    #[inline]
    fn gc_read(&mut self, die: u32, planes: u32, units: u32) {
        let bytes = units as u64 * self.unit_bytes;
        self.enqueue(die, NandOp::GcRead { planes, bytes });
    }

    #[inline]
    fn erase(&mut self, die: u32) {
        self.enqueue(die, NandOp::Erase);
    }
}
