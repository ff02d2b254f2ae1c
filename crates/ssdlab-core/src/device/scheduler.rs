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
//! [`PowerWaits`] behind one `PowerWake` event, not an event each.

use super::processor::Processor;
use super::Event;
use crate::ftl::{GcRead, NandSink, Program, ProgramKind};
use crate::heap::BucketBits;
use crate::nand::Nand;
use crate::sim::Kernel;
use crate::time::SimTime;
use std::collections::VecDeque;

#[derive(Clone, Copy, Debug)]
pub(super) enum NandOp {
    Program(Program),
    GcRead { planes: u32, bytes: u64, units: u32 },
    HostRead { planes: u32, bytes: u64, batch: u32 },
    Erase { gc_victim: bool },
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
    /// Dies waiting for a place under that limit.
    waits: PowerWaits,
}

impl Scheduler {
    pub fn new(nand: Nand, dies: u32, unit_bytes: u64, copyback: bool) -> Self {
        Scheduler {
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
            waits: PowerWaits::new(dies),
        }
    }

    /// The drive's power budget lets at most `max` dies run array operations at once (None:
    /// no budget).
    pub fn set_power_dies_max(&mut self, max: Option<u32>) {
        self.power_dies_max = max;
        self.limit_changed();
    }

    /// Thermal throttling lets at most `max` dies run at once from now on (None: not throttled).
    pub fn set_thermal_dies_max(&mut self, max: Option<u32>) {
        self.thermal_dies_max = max;
        self.limit_changed();
    }

    fn limit_changed(&mut self) {
        let was = self.active_dies_max;
        self.active_dies_max = min_limit(self.power_dies_max, self.thermal_dies_max);
        if was.is_none() && self.active_dies_max.is_some() {
            self.active.rebuild(&self.nand, self.dies.len() as u32);
        }
    }

    /// With a limit on active dies and `die` (its array free at `own_end`) not allowed to
    /// start now: when a running one ends (the earliest a place frees), else None.
    #[inline]
    fn must_wait(&mut self, die: u32, own_end: SimTime, now: SimTime, max: u32) -> Option<SimTime> {
        debug_assert_eq!(own_end, self.nand.die_free_at(die));
        let at = self.active.must_wait(&self.nand, die, own_end, now, max);
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

    /// Keep waiting dies in [`PowerWaits`] (the default), or give each its own event (the
    /// plain scheme, for tests that compare the two).
    #[cfg(test)]
    pub fn set_power_wait_batching(&mut self, on: bool) {
        self.waits.batch = on;
    }

    /// Waiters moved to their next wake-up without an event of their own, and waiters given
    /// a `DieReady` of their own as they were due before the first run, so far.
    #[cfg(test)]
    pub fn power_waiters_moved(&self) -> (u64, u64) {
        (self.waits.moved, self.waits.out_of_order)
    }

    /// The die is ready (event): start its next operation, if any.
    pub fn die_ready(&mut self, k: &mut Kernel<Event>, p: &mut Processor, die: u32) {
        self.dies[die as usize].wakeup_pending = false;
        self.start_next(k, p, die);
    }

    /// The first waiting die's turn (event): it tries again as `die_ready` would. If it has
    /// to wait again, so do the waiters after it that the same instant's order puts before
    /// any other event: all of them in one step (see [`PowerWaits`]).
    pub fn power_wake(&mut self, k: &mut Kernel<Event>, p: &mut Processor) {
        let now = k.now();
        self.waits.wake_queued = false;
        self.waits.waking = true;
        let (die, was_busy) = self.waits.pop_front(now);
        self.dies[die as usize].wakeup_pending = false;
        if let (Some(at), Some(_)) = (self.start_next(k, p, die), self.active_dies_max) {
            if !was_busy {
                self.fail_waiters_before_next_event(k, now, at);
            }
        }
        self.waits.waking = false;
        self.waits.queue_wake(k);
    }

    /// The idle die before them had to wait for a place until `at`: the waiters next in
    /// line at `now`, idle too, with nothing in between, find the same (the dies running and
    /// the limit did not change) and wait until `at`, each taking its sequence as it would
    /// have in its own step.
    fn fail_waiters_before_next_event(&mut self, k: &mut Kernel<Event>, now: SimTime, at: SimTime) {
        // Up to the next other event (no `PowerWake` is queued meanwhile).
        let limit = match k.peek_key() {
            Some((t, sequence)) if t == now => sequence,
            _ => u64::MAX,
        };
        let Some((head, tail, n)) = self.waits.take_idle_due(now, limit) else {
            return;
        };
        #[cfg(debug_assertions)]
        {
            let max = self.active_dies_max.expect("a limit on active dies");
            let mut die = head;
            for _ in 0..n {
                let d = &self.dies[die as usize];
                assert!(!d.reads.is_empty() || !d.ops.is_empty());
                assert!(!self.waits.busy[die as usize]);
                let own_end = self.nand.die_free_at(die);
                assert_eq!(self.must_wait(die, own_end, now, max), Some(at));
                die = self.waits.next[die as usize];
            }
            assert_eq!(die, NO_DIE);
        }
        self.waits.moved += n;
        let run = WaitRun {
            at,
            sequence: k.take_sequences(n),
            len: n as u32,
            busy: 0,
            head,
            tail,
        };
        // No `PowerWake` is queued now, so any place will do.
        let placed = self.waits.insert(run);
        debug_assert!(placed);
    }

    /// Start the die's next operation, if any. Returns when it is to try again, if the
    /// limit on active dies made it wait.
    fn start_next(
        &mut self,
        k: &mut Kernel<Event>,
        p: &mut Processor,
        die: u32,
    ) -> Option<SimTime> {
        let array_free_before = self.nand.die_free_at(die);
        if let Some(max) = self.active_dies_max {
            let d = &self.dies[die as usize];
            if !d.reads.is_empty() || !d.ops.is_empty() {
                let now = k.now();
                if let Some(at) = self.must_wait(die, array_free_before, now, max) {
                    self.dies[die as usize].wakeup_pending = true;
                    let busy = array_free_before > now;
                    let sequence = k.take_sequences(1);
                    self.waits.push_back(k, die, busy, at, sequence);
                    return Some(at);
                }
            }
        }
        // One borrow of the die's queue for the whole step (the NAND, the processor and the
        // kernel are other fields and arguments): its entry is found once, not again after
        // every call.
        let d = &mut self.dies[die as usize];
        let op = d.reads.pop_front().or_else(|| d.ops.pop_front())?;
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
                let (next, end) = self
                    .nand
                    .program(now, data_ready, die, program.planes, !copied);
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
            } => {
                if self.copyback {
                    // Into the page register only: the program takes it from there.
                    let out = self.nand.read(now, die, planes, 0);
                    (out, out)
                } else {
                    let out = self.nand.read(now, die, planes, bytes);
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
            } => {
                let end = self.nand.read(now, die, planes, bytes);
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
        }
        None
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

/// The dies waiting for a place under the limit on active dies, each with the wake-up it
/// would have as an event of its own: a `DieReady` at the time the first running die ends,
/// with the sequence taken when it began to wait. Under a power budget most dies of a large
/// drive wait at once (a sequential fill of micron-p320h-700: 2.8 billion such wake-ups, 33
/// per die start), and at each end all of them wake, one takes the place and the others wait
/// again for the next end.
///
/// Kept here instead, in the order of their wake-ups' keys (time, sequence), as runs: dies
/// with one time and consecutive sequences, chained through `next`. One `PowerWake` event at
/// the first waiter's key stands for all of them. When the first has to wait again, the idle
/// waiters after it that come before the next other event would each do the same in turn:
/// they are moved as whole runs, with the sequences each would have taken (see
/// `Scheduler::power_wake`), whatever their number. The order of everything is the one the
/// separate wake-ups gave. A waiter whose key would come before the first run's while its
/// `PowerWake` is queued goes to the event queue as a `DieReady`, as before.
#[derive(Clone, Debug)]
struct PowerWaits {
    /// Per die: the next die of its run (`NO_DIE`: the last).
    next: Vec<u32>,
    /// Per die: its array was busy when it began to wait (it may get a place with none
    /// free: such a die is woken on its own).
    busy: Vec<bool>,
    /// In key order.
    runs: VecDeque<WaitRun>,
    /// The `PowerWake` for the first run's first die is queued.
    wake_queued: bool,
    /// `power_wake` is running: it queues the next `PowerWake` when done.
    waking: bool,
    /// Waiters kept here (false: every waiter has a `DieReady` of its own, the plain
    /// scheme the tests compare against).
    batch: bool,
    /// Waiters moved to their next wake-up without an event of their own, so far.
    moved: u64,
    /// Waiters due before the first run while its `PowerWake` was queued (given a `DieReady`
    /// of their own), so far.
    out_of_order: u64,
}

const NO_DIE: u32 = u32::MAX;

/// `len` waiters due at `at`, from `head` to `tail`, with sequences `sequence..sequence +
/// len`; `busy` of them were busy when they began to wait.
#[derive(Clone, Copy, Debug)]
struct WaitRun {
    at: SimTime,
    sequence: u64,
    len: u32,
    busy: u32,
    head: u32,
    tail: u32,
}

impl PowerWaits {
    fn new(dies: u32) -> Self {
        PowerWaits {
            next: vec![NO_DIE; dies as usize],
            busy: vec![false; dies as usize],
            runs: VecDeque::new(),
            wake_queued: false,
            waking: false,
            batch: true,
            moved: 0,
            out_of_order: 0,
        }
    }

    /// `die` waits until `at`, its place in line the `sequence` it took now (the newest).
    fn push_back(
        &mut self,
        k: &mut Kernel<Event>,
        die: u32,
        busy: bool,
        at: SimTime,
        sequence: u64,
    ) {
        self.next[die as usize] = NO_DIE;
        self.busy[die as usize] = busy;
        let run = WaitRun {
            at,
            sequence,
            len: 1,
            busy: busy as u32,
            head: die,
            tail: die,
        };
        if !self.batch || !self.insert(run) {
            // Before the first run, whose `PowerWake` is queued: an event of its own.
            self.out_of_order += self.batch as u64;
            k.schedule_with_sequence(at, sequence, Event::DieReady(die));
            return;
        }
        self.queue_wake(k);
    }

    /// Put `run` (sequences newer than every waiting one) in its place: after every run due
    /// no later, joined to the one before when it follows on. False if that place is first
    /// while the first run's `PowerWake` is queued (nothing is changed then).
    fn insert(&mut self, run: WaitRun) -> bool {
        let mut i = self.runs.len();
        while i > 0 && self.runs[i - 1].at > run.at {
            i -= 1;
        }
        if i == 0 {
            if self.wake_queued {
                return false;
            }
            self.runs.push_front(run);
            return true;
        }
        let before = &mut self.runs[i - 1];
        if before.at == run.at && before.sequence + before.len as u64 == run.sequence {
            self.next[before.tail as usize] = run.head;
            before.tail = run.tail;
            before.len += run.len;
            before.busy += run.busy;
        } else {
            self.runs.insert(i, run);
        }
        true
    }

    /// The first waiter, its turn come at `now`.
    fn pop_front(&mut self, now: SimTime) -> (u32, bool) {
        let run = self.runs.front_mut().expect("a die waiting");
        debug_assert_eq!(run.at, now);
        let die = run.head;
        let busy = self.busy[die as usize];
        run.head = self.next[die as usize];
        run.sequence += 1;
        run.len -= 1;
        run.busy -= busy as u32;
        if run.len == 0 {
            self.runs.pop_front();
        }
        (die, busy)
    }

    /// Take the runs due at `now` whose sequences are below `limit` (the next other event's),
    /// from the front, while none of their dies was busy: as one chain (head, tail, count), in
    /// order. A run is taken whole or not at all: its sequences are consecutive, so no other
    /// event's falls inside it.
    fn take_idle_due(&mut self, now: SimTime, limit: u64) -> Option<(u32, u32, u64)> {
        let mut chain: Option<(u32, u32, u64)> = None;
        while let Some(&front) = self.runs.front() {
            if front.at != now || front.busy > 0 || front.sequence >= limit {
                break;
            }
            debug_assert!(front.sequence + front.len as u64 <= limit);
            self.runs.pop_front();
            let (head, tail, n) = (front.head, front.tail, front.len as u64);
            chain = Some(match chain {
                None => (head, tail, n),
                Some((h, t, m)) => {
                    self.next[t as usize] = head;
                    (h, tail, m + n)
                }
            });
        }
        chain
    }

    /// Queue the `PowerWake` for the first waiter, if there is one and none is queued.
    fn queue_wake(&mut self, k: &mut Kernel<Event>) {
        if self.wake_queued || self.waking {
            return;
        }
        if let Some(r) = self.runs.front() {
            k.schedule_with_sequence(r.at, r.sequence, Event::PowerWake);
            self.wake_queued = true;
        }
    }
}

/// The dies whose array is busy (their `Nand::die_free_at` later than now), for a limit on how
/// many run at once: each die listed under the time its array ends, on a wheel of buckets
/// 2^[`BUCKET_SHIFT`] ns wide covering [`BUCKETS`] of them from now on (farther ends in a list
/// of their own). A die's start moves it from one bucket to another (a few stores), the dies in
/// a bucket are forgotten as time passes it, and the count of dies listed is at least the count
/// busy: when it is below the limit (most starts: the limit binds at 3% of them on
/// micron-p320h-350 in its GC steady state, with 95 of 126 places taken on average) nothing is
/// looked up. The count is made exact, and the first other die to end found, only when it is
/// not.
///
/// A min-heap of (end, die) did the same with a push and a pop per start (the pop's sift-down
/// alone about 350 instructions per NAND unit operation, callgrind, micron-p320h-350 GC steady
/// state): 512 dies on the P320h 700GB, and a scan of all of them before that was half its run
/// time.
///
/// A die is listed while the bucket of its end is not behind the wheel's (`cursor`, the bucket
/// of the time last looked at); so every busy die is, and an idle one only if it ended within
/// the current bucket.
#[derive(Clone, Debug, Default)]
struct ActiveDies {
    /// Per bucket (its number modulo [`BUCKETS`]): the first die listed in it, `NO_DIE` if none.
    heads: Vec<u32>,
    /// A bit per bucket: set if any die is listed in it.
    occupied: BucketBits<{ (BUCKETS / 64) as usize }>,
    /// Per die: the die after it and before it in its bucket (`NO_DIE` at either end), side
    /// by side (one bounds check and one line for both).
    links: Vec<[u32; 2]>,
    /// Dies whose end is beyond the wheel (bucket `cursor + BUCKETS` or later).
    far: Vec<u32>,
    /// Dies listed, on the wheel or beyond.
    listed: u32,
    /// The bucket of the time last looked at: the wheel's first.
    cursor: u64,
}

/// The wheel's buckets: 2.048 us each (a die operation's array time is 50 us to a few ms, so
/// a bucket rarely holds more than one end), 16,384 of them (33.6 ms ahead: an erase and the
/// bus transfers queued before it fit).
const BUCKET_SHIFT: u32 = 11;
const BUCKETS: u64 = 1 << 14;

/// In a die's [`ActiveDies::links`]: the die listed after it under its bucket.
const NEXT: usize = 0;
/// In a die's [`ActiveDies::links`]: the die listed before it under its bucket.
const PREV: usize = 1;

#[inline]
fn bucket_of(t: SimTime) -> u64 {
    t.0 >> BUCKET_SHIFT
}

impl ActiveDies {
    /// Start over from the dies' current times (when a limit starts to hold).
    fn rebuild(&mut self, nand: &Nand, dies: u32) {
        self.heads = vec![NO_DIE; BUCKETS as usize];
        self.occupied = BucketBits::default();
        self.links = vec![[NO_DIE; 2]; dies as usize];
        self.far.clear();
        self.listed = 0;
        self.cursor = 0;
        for die in 0..dies {
            self.list(die, nand.die_free_at(die));
        }
    }

    /// Put `die` under the bucket of its end, `end` (`Nand::die_free_at`; not behind the
    /// wheel).
    #[inline(always)]
    fn list(&mut self, die: u32, end: SimTime) {
        let b = bucket_of(end);
        debug_assert!(b >= self.cursor);
        self.listed += 1;
        if b >= self.cursor + BUCKETS {
            self.list_far(die);
            return;
        }
        let slot = (b % BUCKETS) as usize;
        let head = self.heads[slot];
        self.links[die as usize] = [head, NO_DIE];
        if head == NO_DIE {
            self.occupied.set(b);
        } else {
            self.links[head as usize][PREV] = die;
        }
        self.heads[slot] = die;
    }

    #[cold]
    fn list_far(&mut self, die: u32) {
        self.far.push(die);
    }

    /// Take `die`, listed under the bucket of `end`, off the list.
    #[inline]
    fn unlist(&mut self, die: u32, end: SimTime) {
        let b = bucket_of(end);
        debug_assert!(b >= self.cursor);
        self.listed -= 1;
        if b >= self.cursor + BUCKETS {
            self.unlist_far(die);
            return;
        }
        let slot = (b % BUCKETS) as usize;
        let [next, prev] = self.links[die as usize];
        if prev == NO_DIE {
            self.heads[slot] = next;
            if next == NO_DIE {
                self.occupied.clear(b);
            }
        } else {
            self.links[prev as usize][NEXT] = next;
        }
        if next != NO_DIE {
            self.links[next as usize][PREV] = prev;
        }
    }

    #[cold]
    fn unlist_far(&mut self, die: u32) {
        let i = self
            .far
            .iter()
            .position(|&d| d == die)
            .expect("a die listed far");
        self.far.swap_remove(i);
    }

    /// Move the wheel to `now`: the dies of the buckets passed ended (they are forgotten), and
    /// far ones that come within the wheel are put on it.
    #[inline]
    fn catch_up(&mut self, nand: &Nand, now: SimTime) {
        let to = bucket_of(now);
        debug_assert!(to >= self.cursor);
        if to != self.cursor {
            self.advance(nand, to);
        }
    }

    fn advance(&mut self, nand: &Nand, to: u64) {
        let mut b = self.cursor;
        let end = to.min(self.cursor + BUCKETS);
        while let Some(found) = self.occupied.first_set(b, end) {
            let slot = (found % BUCKETS) as usize;
            let mut die = self.heads[slot];
            while die != NO_DIE {
                self.listed -= 1;
                die = self.links[die as usize][NEXT];
            }
            self.heads[slot] = NO_DIE;
            self.occupied.clear(found);
            b = found + 1;
        }
        self.cursor = to;
        if !self.far.is_empty() {
            let far = std::mem::take(&mut self.far);
            self.listed -= far.len() as u32;
            for &die in &far {
                let end = nand.die_free_at(die);
                if bucket_of(end) >= to {
                    self.list(die, end);
                }
            }
        }
    }

    /// `die` took an operation at `now`: its array was busy until `before`, now until
    /// `after` (`nand.die_free_at(die)`).
    #[inline]
    fn array_changed(
        &mut self,
        nand: &Nand,
        now: SimTime,
        die: u32,
        before: SimTime,
        after: SimTime,
    ) {
        self.catch_up(nand, now);
        debug_assert!(after >= before, "a die's busy time never goes back");
        debug_assert!(after >= now);
        if after == before {
            return;
        }
        if bucket_of(before) >= self.cursor {
            self.unlist(die, before);
        }
        self.list(die, after);
    }

    /// With at most `max` dies busy at once, may `die` (its array free at `own_end`,
    /// `Nand::die_free_at`) start now? None if so, else when the first of the other busy dies
    /// ends.
    #[inline]
    fn must_wait(
        &mut self,
        nand: &Nand,
        die: u32,
        own_end: SimTime,
        now: SimTime,
        max: u32,
    ) -> Option<SimTime> {
        self.catch_up(nand, now);
        let own = own_end > now;
        if self.listed - (own as u32) < max {
            return None;
        }
        self.first_other_end(nand, die, own, now, max)
    }

    /// `must_wait` when the dies listed are not fewer than the limit: count those of the
    /// current bucket that have ended, and if the others busy still reach the limit, find the
    /// first of them to end.
    fn first_other_end(
        &self,
        nand: &Nand,
        die: u32,
        own: bool,
        now: SimTime,
        max: u32,
    ) -> Option<SimTime> {
        // In `slot`'s bucket: the first end after now of a die other than `die`, and how many
        // of its dies have ended (only the current bucket can hold such).
        let first_other = |slot: u64| {
            let mut first: Option<SimTime> = None;
            let mut ended = 0u32;
            let mut d = self.heads[slot as usize];
            while d != NO_DIE {
                let t = nand.die_free_at(d);
                if t <= now {
                    ended += 1;
                } else if d != die && first.is_none_or(|f| t < f) {
                    first = Some(t);
                }
                d = self.links[d as usize][NEXT];
            }
            (first, ended)
        };
        let (first, ended) = first_other(self.cursor % BUCKETS);
        if self.listed - ended - (own as u32) < max {
            return None;
        }
        if first.is_some() {
            return first;
        }
        let (mut b, end) = (self.cursor + 1, self.cursor + BUCKETS);
        while let Some(found) = self.occupied.first_set(b, end) {
            if let (Some(t), _) = first_other(found % BUCKETS) {
                return Some(t);
            }
            b = found + 1;
        }
        let far = self.far.iter().filter(|&&d| d != die);
        far.map(|&d| nand.die_free_at(d)).min()
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
    fn program(&mut self, die: u32, program: Program) {
        self.sched
            .enqueue(self.kernel, self.processor, die, NandOp::Program(program));
    }

    #[inline]
    fn gc_read(&mut self, die: u32, GcRead { planes, units }: GcRead) {
        let bytes = units as u64 * self.sched.unit_bytes;
        let op = NandOp::GcRead {
            planes,
            bytes,
            units,
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
#[path = "scheduler_tests.rs"]
mod tests;
