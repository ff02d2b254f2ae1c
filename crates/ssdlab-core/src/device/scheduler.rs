//! The flash scheduler: per-die operation queues, and what the FTL's decisions cost in time on
//! dies, channel buses and the controller's processor.
//!
//! Each die runs its operations one after another. An operation is timed when the die can
//! start it (`DieReady`), not when it is decided, so bus transfers are reserved near the
//! current time and a burst of garbage collection queued on one die does not block the channel
//! for the others. Host reads go ahead of queued programs, erases and GC reads, as
//! controllers prioritise them. A garbage-collection copy passes through the controller
//! (bus out, processor, bus in) unless the NAND does it on the die (`nand.copyback`).

use super::controller::Processor;
use super::kernel::EventQueue;
use super::Event;
use crate::ftl::{NandSink, Program, ProgramKind};
use crate::nand::Nand;
use crate::time::SimTime;
use std::collections::VecDeque;

#[derive(Clone, Copy, Debug)]
pub(super) enum NandOp {
    Program(Program),
    GcRead { planes: u32, bytes: u64, units: u32 },
    HostRead { planes: u32, bytes: u64, slot: u32 },
    Erase { gc_victim: bool },
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
    /// When the data of the GC copies read so far has been processed by the controller (a GC
    /// program of this die may start its data-in then).
    gc_data_ready: SimTime,
    /// Programs started on the die and when their array time ends (pruned as time passes):
    /// what a power cut would interrupt.
    started: VecDeque<(Program, SimTime)>,
}

/// Host reads waiting for their NAND reads.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct ReadWait {
    pub pending: u32,
    pub ready: SimTime,
}

pub(super) struct Scheduler {
    pub kernel: EventQueue,
    pub nand: Nand,
    pub processor: Processor,
    pub unit_bytes: u64,
    copyback: bool,
    dies: Vec<DieQueue>,
    /// Per slot: host data reads outstanding on the NAND.
    pub read_waits: Vec<ReadWait>,
}

impl Scheduler {
    pub fn new(
        nand: Nand,
        processor: Processor,
        dies: u32,
        unit_bytes: u64,
        copyback: bool,
    ) -> Self {
        Scheduler {
            kernel: EventQueue::default(),
            nand,
            processor,
            unit_bytes,
            copyback,
            dies: vec![DieQueue::default(); dies as usize],
            read_waits: Vec::new(),
        }
    }

    pub fn enqueue(&mut self, die: u32, op: NandOp) {
        let d = &mut self.dies[die as usize];
        match op {
            NandOp::HostRead { .. } => d.reads.push_back(op),
            NandOp::Program(Program {
                kind: ProgramKind::Host,
                ..
            }) => {
                d.host_programs_queued += 1;
                d.ops.push_back(op)
            }
            _ => d.ops.push_back(op),
        }
        if !d.wakeup_pending {
            if self.kernel.now >= d.ready_at {
                self.start_next(die);
            } else {
                d.wakeup_pending = true;
                let at = d.ready_at;
                self.kernel.push(at, Event::DieReady(die));
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
        let gc_data_ready = d.gc_data_ready;
        let now = self.kernel.now;
        let ready_at = match op {
            NandOp::Program(p) => {
                let copied = p.kind == ProgramKind::Gc && self.copyback;
                let data_ready = match p.kind {
                    ProgramKind::Host => p.data_ready,
                    ProgramKind::Gc => gc_data_ready,
                    _ => now,
                };
                let (next, end) = self.nand.program(now, data_ready, die, p.planes, !copied);
                if p.kind == ProgramKind::Host {
                    self.kernel.push(end, Event::ProgramDone(die, p.host_units));
                }
                let d = &mut self.dies[die as usize];
                while d.started.front().is_some_and(|&(_, e)| e <= now) {
                    d.started.pop_front();
                }
                d.started.push_back((p, end));
                next
            }
            NandOp::GcRead {
                planes,
                bytes,
                units,
            } => {
                if self.copyback {
                    // Into the page register only: the program takes it from there.
                    self.nand.read(now, die, planes, 0)
                } else {
                    let out = self.nand.read(now, die, planes, bytes);
                    let processed = self.processor.gc_copy(now, out, units);
                    let d = &mut self.dies[die as usize];
                    d.gc_data_ready = d.gc_data_ready.max(processed);
                    out
                }
            }
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
                    self.kernel.push(ready, Event::ReadReady(slot));
                }
                end
            }
            NandOp::Erase { gc_victim } => {
                if gc_victim {
                    self.processor.gc_victim(now);
                }
                self.nand.erase(now, die)
            }
        };
        let d = &mut self.dies[die as usize];
        d.ready_at = ready_at;
        if !d.reads.is_empty() || !d.ops.is_empty() {
            d.wakeup_pending = true;
            self.kernel.push(ready_at, Event::DieReady(die));
        }
    }

    /// Programs not complete at `now`, per die in order: started ones (array time running)
    /// first, then queued ones.
    pub fn unfinished_programs(&self, now: SimTime) -> Vec<(u32, Program, bool)> {
        let mut out = Vec::new();
        for (die, d) in self.dies.iter().enumerate() {
            for &(p, end) in &d.started {
                if end > now {
                    out.push((die as u32, p, true));
                }
            }
            for op in &d.ops {
                if let NandOp::Program(p) = op {
                    out.push((die as u32, *p, false));
                }
            }
        }
        out
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
            ready: self.kernel.now,
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

impl NandSink for Scheduler {
    #[inline]
    fn program(&mut self, die: u32, program: Program) {
        self.enqueue(die, NandOp::Program(program));
    }

    #[inline]
    fn gc_read(&mut self, die: u32, planes: u32, units: u32) {
        let bytes = units as u64 * self.unit_bytes;
        self.enqueue(
            die,
            NandOp::GcRead {
                planes,
                bytes,
                units,
            },
        );
    }

    #[inline]
    fn erase(&mut self, die: u32, gc_victim: bool) {
        self.enqueue(die, NandOp::Erase { gc_victim });
    }
}
