//! The flash scheduler: per-die operation queues, and what the FTL's decisions cost in time on
//! dies, channel buses and the controller's processor.
//!
//! Each die runs its operations one after another. An operation is timed when the die can
//! start it (`DieReady`), not when it is decided, so bus transfers are reserved near the
//! current time and a burst of garbage collection queued on one die does not block the channel
//! for the others. Host reads go ahead of queued programs, erases and GC reads, as
//! controllers prioritise them. A garbage-collection copy passes through the controller
//! (bus out, processor, bus in) unless the NAND does it on the die (`nand.copyback`).
//!
//! The scheduler owns no clock and no host state: it takes the kernel and the controller's
//! processor by `&mut` ([`Flash`] bundles them for the FTL), and reports what finishes as
//! events: `DieReady` (the die can start its next operation), `ProgramDone` (a host program
//! ended: its buffer space is free) and `ReadReady` (the last NAND read of a read batch is
//! out). A read batch is the controller's: an id it chooses (its command slot) and a count of
//! reads the scheduler tracks until the last one ends. Under a limit on the dies running at
//! once (a power budget, thermal throttling), dies that must wait for a place are kept in
//! [`PowerWaits`], a line served in turn behind one `PowerWake` event, not an event each.

use super::processor::Processor;
use super::Event;
use crate::ftl::{GcRead, NandSink, Program, ProgramKind};
use crate::nand::Nand;
use crate::sim::Kernel;
use crate::time::SimTime;
use std::collections::VecDeque;

mod active_dies;
mod power_waits;
use active_dies::ActiveDies;
use power_waits::PowerWaits;

#[derive(Clone, Copy, Debug)]
pub(super) enum NandOp {
    Program(Program),
    GcRead {
        planes: u32,
        bytes: u64,
        units: u32,
        types: u8,
    },
    HostRead {
        planes: u32,
        bytes: u64,
        batch: u32,
        types: u8,
    },
    Erase {
        gc_victim: bool,
    },
}

impl NandOp {
    /// Garbage collection's work: its reads and programs, and a victim's erase.
    #[inline(always)]
    fn is_gc(&self) -> bool {
        match self {
            NandOp::GcRead { .. } => true,
            NandOp::Program(p) => p.kind == ProgramKind::Gc,
            NandOp::Erase { gc_victim } => *gc_victim,
            NandOp::HostRead { .. } => false,
        }
    }
}

#[derive(Clone, Debug, Default)]
struct DieQueue {
    /// Host reads, served first.
    reads: VecDeque<NandOp>,
    /// Everything else, in decision order.
    ops: VecDeque<NandOp>,
    /// The die can start its next operation from then on.
    ready_at: SimTime,
    /// A wake-up for this die is pending: a DieReady event, or its place among the dies
    /// waiting for the active-die limit (`PowerWaits`).
    wakeup_pending: bool,
    /// Its array running, it must wait for a place to take its next operation (a DieReady at
    /// the first other die's end): its own end frees a place. Until that DieReady.
    waits_running: bool,
    /// Host programs queued so far, and completed so far (FLUSH and FUA wait on these).
    host_programs_queued: u64,
    host_programs_done: u64,
    /// Garbage-collection operations in `ops` (GC reads and programs, victims' erases).
    gc_ops: u32,
    /// When the data of the GC copies read so far has been processed by the controller (a GC
    /// program of this die may start its data-in then).
    gc_data_ready: SimTime,
    /// The last two programs started on the die and when their array time ends, older first:
    /// what a power cut would interrupt. Any program before them had ended when the later of
    /// them started: the die takes its next operation only once a program's array time has
    /// begun (cache mode) or ended, and a program's array time begins after the array's
    /// previous operation ends (`Nand::program`, `Nand::read`).
    started: [Option<(Program, SimTime)>; 2],
}

impl DieQueue {
    /// At its array's end the die takes no other operation, so a place frees: nothing is
    /// queued on it, or it must wait for a place itself. A die with work queued takes its
    /// next operation then or before (cache mode) and keeps its place.
    #[inline]
    fn frees_at_end(&self) -> bool {
        self.waits_running || self.reads.is_empty() && self.ops.is_empty()
    }
}

/// A read batch: NAND reads outstanding, and when the last one that ended is out.
#[derive(Clone, Copy, Debug, Default)]
struct ReadBatch {
    pending: u32,
    ready: SimTime,
}

pub(super) struct Scheduler {
    pub nand: Nand,
    pub unit_bytes: u64,
    copyback: bool,
    dies: Vec<DieQueue>,
    /// Per batch id: host data reads outstanding on the NAND.
    read_batches: Vec<ReadBatch>,
    /// Host units in programs queued or running whose `ProgramDone` has not come yet (they
    /// hold write-buffer space).
    host_units_unreleased: u64,
    /// At most this many dies run array operations at once: the lower of the power budget's
    /// and thermal throttling's limits (None: no limit).
    active_dies_max: Option<u32>,
    power_dies_max: Option<u32>,
    thermal_dies_max: Option<u32>,
    /// The dies whose array is busy, kept while a limit holds.
    active: ActiveDies,
    /// Until then more dies may run than the limit (it fell while they ran: the last of their
    /// ends); from then on no more do, so a running die keeps its place without a count.
    over_limit_until: SimTime,
    /// Dies waiting for a place under that limit.
    waits: PowerWaits,
    /// Wake the line at every running die's end, not only where a place frees: the reference
    /// the targeted wake-ups must match bit for bit.
    #[cfg(test)]
    pub wake_at_every_end: bool,
}

impl Scheduler {
    /// `power_dies_max`: the power budget's limit on dies running at once (None: no budget).
    pub fn new(
        nand: Nand,
        dies: u32,
        unit_bytes: u64,
        copyback: bool,
        power_dies_max: Option<u32>,
    ) -> Self {
        let mut s = Scheduler {
            nand,
            unit_bytes,
            copyback,
            dies: vec![DieQueue::default(); dies as usize],
            read_batches: Vec::new(),
            host_units_unreleased: 0,
            active_dies_max: None,
            power_dies_max: None,
            thermal_dies_max: None,
            active: ActiveDies::default(),
            over_limit_until: SimTime::ZERO,
            waits: PowerWaits::new(dies),
            #[cfg(test)]
            wake_at_every_end: false,
        };
        s.power_dies_max = power_dies_max;
        s.limit_changed();
        s
    }

    /// The drive's power budget lets at most `max` dies run array operations at once from now
    /// on (None: no budget).
    #[cfg(test)]
    pub fn set_power_dies_max(&mut self, k: &mut Kernel<Event>, max: Option<u32>) {
        self.power_dies_max = max;
        self.limit_changed_at(k);
    }

    /// Thermal throttling lets at most `max` dies run at once from now on (None: not throttled).
    pub fn set_thermal_dies_max(&mut self, k: &mut Kernel<Event>, max: Option<u32>) {
        self.thermal_dies_max = max;
        self.limit_changed_at(k);
    }

    /// The limit changed at `k.now()`: if it rose, the line tries at once.
    fn limit_changed_at(&mut self, k: &mut Kernel<Event>) {
        let was = self.active_dies_max;
        self.limit_changed();
        let rose = match (was, self.active_dies_max) {
            (Some(a), Some(b)) => b > a,
            (was, now) => was.is_some() && now.is_none(),
        };
        if rose && self.waits.front().is_some() {
            self.waits.wake(k, k.now());
        }
    }

    fn limit_changed(&mut self) {
        let was = self.active_dies_max;
        self.active_dies_max = min_limit(self.power_dies_max, self.thermal_dies_max);
        let dies = self.dies.len() as u32;
        if was.is_none() && self.active_dies_max.is_some() {
            self.active.rebuild(&self.nand, dies);
        }
        let fell = self
            .active_dies_max
            .is_some_and(|m| was.is_none_or(|w| m < w));
        if fell {
            let last_end = (0..dies).map(|d| self.nand.die_free_at(d)).max();
            self.over_limit_until = self.over_limit_until.max(last_end.unwrap_or_default());
        }
    }

    /// Have the line try again when the first running die whose place frees at its end (see
    /// [`DieQueue::frees_at_end`]) ends, if any; if none does, a die that later comes to free
    /// its place wakes the line then (`start_next`, `wait_for_place`).
    fn line_wake(&mut self, k: &mut Kernel<Event>) {
        let every = self.wakes_at_every_end();
        let dies = &self.dies;
        let frees = |d: u32| every || dies[d as usize].frees_at_end();
        self.active.catch_up(&self.nand, k.now());
        if let Some(at) = self.active.first_end_where(&self.nand, k.now(), frees) {
            self.waits.wake(k, at);
        }
    }

    #[cfg(test)]
    #[inline(always)]
    fn wakes_at_every_end(&self) -> bool {
        self.wake_at_every_end
    }

    #[cfg(not(test))]
    #[inline(always)]
    fn wakes_at_every_end(&self) -> bool {
        false
    }

    /// With a limit on active dies and `die` (its array free at `own_end`) not allowed to
    /// start now: when a running one ends (the earliest a place frees), else None.
    #[inline]
    fn must_wait(&mut self, die: u32, own_end: SimTime, now: SimTime, max: u32) -> Option<SimTime> {
        debug_assert_eq!(own_end, self.nand.die_free_at(die));
        // A running die holds a place; it may keep it unless more run than the limit (only
        // while dies that ran when it fell are running).
        let at = if own_end > now && now >= self.over_limit_until {
            None
        } else {
            self.active.must_wait(&self.nand, die, own_end, now, max)
        };
        #[cfg(debug_assertions)]
        assert_eq!(at, self.must_wait_by_scan(die, now, max));
        at
    }

    /// `must_wait` by looking at every die (what [`ActiveDies`] keeps up to date).
    #[cfg(debug_assertions)]
    fn must_wait_by_scan(&self, die: u32, now: SimTime, max: u32) -> Option<SimTime> {
        let busy_until = (0..self.dies.len() as u32)
            .filter(|&x| x != die)
            .map(|x| self.nand.die_free_at(x))
            .filter(|&t| t > now);
        let (mut busy, mut first_free) = (0u32, SimTime(u64::MAX));
        for t in busy_until {
            busy += 1;
            first_free = first_free.min(t);
        }
        (busy >= max).then_some(first_free)
    }

    pub fn enqueue(&mut self, k: &mut Kernel<Event>, p: &mut Processor, die: u32, op: NandOp) {
        let d = &mut self.dies[die as usize];
        match op {
            NandOp::HostRead { .. } => d.reads.push_back(op),
            NandOp::Program(Program {
                kind: ProgramKind::Host,
                ..
            }) => {
                d.host_programs_queued += 1;
                if let NandOp::Program(p) = op {
                    self.host_units_unreleased += p.host_units as u64;
                }
                d.ops.push_back(op)
            }
            _ => {
                d.gc_ops += op.is_gc() as u32;
                d.ops.push_back(op)
            }
        }
        if !d.wakeup_pending {
            if k.now() >= d.ready_at {
                self.start_next(k, p, die);
            } else {
                d.wakeup_pending = true;
                k.schedule(d.ready_at, Event::DieReady(die));
            }
        }
    }

    /// Dies that have waited in line for a place, and wake-ups that started none, so far.
    #[cfg(test)]
    pub fn power_waits_counts(&self) -> (u64, u64) {
        (self.waits.waited, self.waits.no_place)
    }

    /// The die is ready (event): start its next operation, if any.
    pub fn die_ready(&mut self, k: &mut Kernel<Event>, p: &mut Processor, die: u32) {
        let d = &mut self.dies[die as usize];
        d.wakeup_pending = false;
        d.waits_running = false;
        self.start_next(k, p, die);
    }

    /// A place may have freed (event): the dies in line take the places free, in turn; the
    /// first that finds none stays first, and the line tries again where the next place frees
    /// (see [`PowerWaits`]).
    #[inline(never)]
    pub fn power_wake(&mut self, k: &mut Kernel<Event>, p: &mut Processor) {
        let now = k.now();
        if self.waits.wake_at != Some(now) {
            return; // overtaken by an earlier wake-up
        }
        self.waits.wake_at = None;
        let mut started = 0;
        while let Some(die) = self.waits.front() {
            if let Some(max) = self.active_dies_max {
                let own_end = self.nand.die_free_at(die);
                debug_assert!(own_end <= now, "a die in line is idle");
                if self.must_wait(die, own_end, now, max).is_some() {
                    self.waits.no_place += (started == 0) as u64;
                    self.line_wake(k);
                    return;
                }
            }
            started += 1;
            self.waits.pop_front();
            self.dies[die as usize].wakeup_pending = false;
            // It finds the place just found (nothing changed meanwhile) and starts.
            self.start_next(k, p, die);
        }
    }

    /// Under a limit on active dies, with work queued on `die` (its array free at
    /// `array_free_before`) and no place for it: the die waits, in line if idle (see
    /// [`PowerWaits`]), else for the first other die's end (and its own end frees a place);
    /// when a place may free.
    #[inline]
    fn wait_for_place(
        &mut self,
        k: &mut Kernel<Event>,
        die: u32,
        array_free_before: SimTime,
    ) -> Option<SimTime> {
        let max = self.active_dies_max?;
        let d = &self.dies[die as usize];
        if d.reads.is_empty() && d.ops.is_empty() {
            return None;
        }
        let now = k.now();
        let at = self.must_wait(die, array_free_before, now, max)?;
        let d = &mut self.dies[die as usize];
        d.wakeup_pending = true;
        if array_free_before > now {
            d.waits_running = true;
            k.schedule(at, Event::DieReady(die));
            if self.waits.front().is_some() {
                self.waits.wake(k, array_free_before);
            }
        } else {
            self.waits.push_back(die);
            if self.waits.wake_at.is_none() {
                self.line_wake(k);
            }
        }
        Some(at)
    }

    /// Start the die's next operation, if any, unless the limit on active dies makes it wait.
    fn start_next(&mut self, k: &mut Kernel<Event>, p: &mut Processor, die: u32) {
        let array_free_before = self.nand.die_free_at(die);
        if self.wait_for_place(k, die, array_free_before).is_some() {
            return;
        }
        let every = self.wakes_at_every_end();
        // One borrow of the die's queue for the whole step (the NAND, the processor and the
        // kernel are other fields and arguments): its entry is found once, not again after
        // every call.
        let d = &mut self.dies[die as usize];
        let Some(op) = d.reads.pop_front().or_else(|| d.ops.pop_front()) else {
            return;
        };
        d.gc_ops -= op.is_gc() as u32;
        let now = k.now();
        // When the die can take its next operation, and when its array is free (what each
        // NAND call leaves in `Nand::die_free_at`, not read back).
        let (ready_at, array_free) = match op {
            NandOp::Program(program) => {
                let copied = program.kind == ProgramKind::Gc && self.copyback;
                let data_ready = match program.kind {
                    ProgramKind::Host => program.data_ready,
                    ProgramKind::Gc => d.gc_data_ready,
                    _ => now,
                };
                let (nand, planes, ppn) = (&mut self.nand, program.planes, program.first_ppn);
                let (next, end) = nand.program(now, data_ready, die, planes, !copied, ppn);
                if program.kind == ProgramKind::Host {
                    let done = Event::ProgramDone(die, program.host_units);
                    k.schedule_in_lane(super::LANE_PROGRAM_DONE, end, done);
                }
                debug_assert!(d.started[0].is_none_or(|(_, e)| e <= now));
                d.started = [d.started[1], Some((program, end))];
                (next, end)
            }
            NandOp::GcRead {
                planes,
                bytes,
                units,
                types,
            } => {
                if self.copyback {
                    // Into the page register only: the program takes it from there.
                    let out = self.nand.read(now, die, planes, 0, types);
                    (out, out)
                } else {
                    let out = self.nand.read(now, die, planes, bytes, types);
                    let processed = p.gc_copy(now, out, units);
                    // The copy is re-encoded on its way back to the NAND: the write data path.
                    let through = p.write_path_duration(bytes);
                    let processed = p.write_path(now, processed, through);
                    d.gc_data_ready = d.gc_data_ready.max(processed);
                    (out, out)
                }
            }
            NandOp::HostRead {
                planes,
                bytes,
                batch,
                types,
            } => {
                let end = self.nand.read(now, die, planes, bytes, types);
                let b = &mut self.read_batches[batch as usize];
                b.ready = b.ready.max(end);
                b.pending -= 1;
                if b.pending == 0 {
                    k.schedule(b.ready, Event::ReadReady(batch));
                }
                (end, end)
            }
            NandOp::Erase { gc_victim } => {
                if gc_victim {
                    p.gc_victim(now);
                }
                let end = self.nand.erase(now, die);
                (end, end)
            }
        };
        debug_assert_eq!(array_free, self.nand.die_free_at(die));
        if self.active_dies_max.is_some() {
            self.active
                .array_changed(&self.nand, now, die, array_free_before, array_free);
        }
        d.ready_at = ready_at;
        if !d.reads.is_empty() || !d.ops.is_empty() {
            d.wakeup_pending = true;
            k.schedule(ready_at, Event::DieReady(die));
            if every && self.waits.front().is_some() {
                self.waits.wake(k, array_free);
            }
        } else if self.waits.front().is_some() {
            // Its place frees at its end: the line may take it then.
            self.waits.wake(k, array_free);
        }
        #[cfg(debug_assertions)]
        self.assert_within_limit(now);
    }

    /// The die just started took a place only if there was one: no more dies run than the
    /// limit, by looking at every die.
    #[cfg(debug_assertions)]
    fn assert_within_limit(&self, now: SimTime) {
        if let Some(max) = self.active_dies_max {
            let busy = (0..self.dies.len() as u32)
                .filter(|&x| self.nand.die_free_at(x) > now)
                .count();
            assert!(busy <= max as usize, "{busy} dies running, limit {max}");
        }
    }

    /// Programs not complete at `now`, per die in order: started ones (array time running)
    /// first, then queued ones.
    pub fn unfinished_programs(&self, now: SimTime) -> Vec<(u32, Program, bool)> {
        let mut out = Vec::new();
        for (die, d) in self.dies.iter().enumerate() {
            for &(p, end) in d.started.iter().flatten() {
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

    /// A host program of `units` host units on `die` finished.
    pub fn host_program_done(&mut self, die: u32, units: u32) {
        self.dies[die as usize].host_programs_done += 1;
        self.host_units_unreleased -= units as u64;
    }

    /// Host units in programs not yet done (queued, or running until their `ProgramDone`).
    pub fn host_units_unreleased(&self) -> u64 {
        self.host_units_unreleased
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

    /// Start read batch `batch` at `now`. A guard count is held until `end_batch`, so reads
    /// that start (and count down) while they are being queued cannot finish the batch.
    pub fn begin_batch(&mut self, batch: u32, now: SimTime) {
        let b = batch as usize;
        if self.read_batches.len() <= b {
            self.read_batches.resize(b + 1, ReadBatch::default());
        }
        self.read_batches[b] = ReadBatch {
            pending: 1,
            ready: now,
        };
    }

    /// One more host read of `bytes` (`planes` planes) on `die` in `batch`.
    pub fn enqueue_host_read(&mut self, k: &mut Kernel<Event>, p: &mut Processor, read: HostRead) {
        self.read_batches[read.batch as usize].pending += 1;
        self.enqueue(
            k,
            p,
            read.die,
            NandOp::HostRead {
                planes: read.planes,
                bytes: read.bytes,
                batch: read.batch,
                types: read.types,
            },
        );
    }

    /// Every read of `batch` is queued: drop the guard. `Some(ready)` if none is outstanding
    /// (the data is in the controller at `ready`, and no ReadReady event will come).
    pub fn end_batch(&mut self, batch: u32) -> Option<SimTime> {
        let b = &mut self.read_batches[batch as usize];
        b.pending -= 1;
        (b.pending == 0).then_some(b.ready)
    }
}

fn min_limit(a: Option<u32>, b: Option<u32>) -> Option<u32> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, y) => x.or(y),
    }
}

/// One host page read, for [`Scheduler::enqueue_host_read`].
#[derive(Clone, Copy, Debug)]
pub(super) struct HostRead {
    pub batch: u32,
    pub die: u32,
    pub planes: u32,
    pub bytes: u64,
    /// The page types it reads ([`crate::nand::PageTypes::of_run`]).
    pub types: u8,
}

/// The flash as the FTL sees it while the drive runs: its operations join the scheduler's die
/// queues, timed on the kernel's clock, with the controller's processor checking GC copies.
pub(super) struct Flash<'a> {
    pub sched: &'a mut Scheduler,
    pub kernel: &'a mut Kernel<Event>,
    pub processor: &'a mut Processor,
}

impl NandSink for Flash<'_> {
    #[inline]
    fn now_ns(&self) -> u64 {
        self.kernel.now().ns()
    }

    fn program(&mut self, die: u32, program: Program) {
        self.sched
            .enqueue(self.kernel, self.processor, die, NandOp::Program(program));
    }

    #[inline]
    fn gc_read(
        &mut self,
        die: u32,
        GcRead {
            planes,
            units,
            first_ppn,
            last_ppn,
        }: GcRead,
    ) {
        let bytes = units as u64 * self.sched.unit_bytes;
        let op = NandOp::GcRead {
            planes,
            bytes,
            units,
            types: self.sched.nand.page_types.of_run(first_ppn, last_ppn),
        };
        self.sched.enqueue(self.kernel, self.processor, die, op);
    }

    #[inline]
    fn erase(&mut self, die: u32, gc_victim: bool) {
        self.sched.enqueue(
            self.kernel,
            self.processor,
            die,
            NandOp::Erase { gc_victim },
        );
    }

    #[inline]
    fn timed(&self) -> bool {
        true
    }

    #[inline]
    fn die_collecting(&self, die: u32) -> bool {
        self.sched.dies[die as usize].gc_ops > 0
    }
}

#[cfg(test)]
mod tests;
