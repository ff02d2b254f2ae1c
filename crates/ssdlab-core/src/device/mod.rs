//! The device: one event loop in simulated time that carries host commands through the host
//! interface, the controller's write buffer and FTL, and the NAND.
//!
//! Every decision is made at the current event time, in time order, and reserves time on the
//! resources it needs (controller, link, channel buses, dies); so the FTL's flash operations
//! and the host's requests contend for the same dies and buses. Events: a command finishing
//! firmware processing (`Dispatch`), a command completing (`Complete`), and a host program
//! finishing, which frees write-buffer space (`ProgramDone`).

mod controller;
mod kernel;
mod scheduler;

use crate::config::{DriveConfig, Geometry};
use crate::ftl::{Ftl, HostWrite, UNMAPPED};
use crate::host::HostInterface;
use crate::nand::Nand;
use crate::stats::IntervalSeries;
use crate::time::{SimDuration, SimTime};
use controller::FlushWaits;
pub use controller::{Processor, WriteBuffer};
use scheduler::{NandOp, Scheduler};
use std::collections::VecDeque;

/// Host command kinds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IoKind {
    Read,
    Write,
    Trim,
    Flush,
}

/// A host command as submitted.
#[derive(Clone, Copy, Debug)]
pub struct HostIo {
    pub kind: IoKind,
    pub offset_bytes: u64,
    pub length_bytes: u64,
    /// Force unit access: complete only when the data is on the NAND.
    pub fua: bool,
    /// The submitter's own tag, returned with the completion.
    pub tag: u64,
}

impl HostIo {
    /// A FLUSH: complete once everything written before it is on the NAND.
    pub fn flush(tag: u64) -> HostIo {
        HostIo {
            kind: IoKind::Flush,
            offset_bytes: 0,
            length_bytes: 0,
            fua: false,
            tag,
        }
    }
}

/// A completed host command.
#[derive(Clone, Copy, Debug)]
pub struct Completion {
    pub io: HostIo,
    pub submitted: SimTime,
    pub completed: SimTime,
    /// A READ that could not return all its data (an uncorrectable unit without RAIN, see
    /// [`crate::faults`]): the host sees an error for this command only.
    pub failed: bool,
}

impl Completion {
    pub fn latency_ns(&self) -> u64 {
        self.completed.ns() - self.submitted.ns()
    }

    /// Count this completion in the interval of `series` it falls in (intervals counted from
    /// `start`). Returns that interval.
    pub fn record_into(&self, series: &mut IntervalSeries, start: SimTime) -> usize {
        let i = ((self.completed.ns() - start.ns()) / series.interval_ns) as usize;
        series.ensure(i);
        let (bytes, latency) = (self.io.length_bytes, self.latency_ns());
        match self.io.kind {
            IoKind::Read => {
                series.read_ios[i] += 1;
                series.read_bytes[i] += bytes;
                series.read_latency_ns_sum[i] += latency;
            }
            IoKind::Write => {
                series.write_ios[i] += 1;
                series.write_bytes[i] += bytes;
                series.write_latency_ns_sum[i] += latency;
            }
            IoKind::Trim | IoKind::Flush => series.trim_ios[i] += 1,
        }
        i
    }
}

#[derive(Clone, Copy, Debug)]
struct Slot {
    io: HostIo,
    submitted: SimTime,
    /// Writes: next logical unit to admit into the buffer, and one past the last.
    next_unit: u32,
    end_unit: u32,
    /// Writes: when read-modify-write reads of partial units are done.
    rmw_ready: SimTime,
    /// Reads: a unit could not be read (see [`crate::faults`]).
    failed: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Event {
    /// The controller has processed the command.
    Dispatch(u32),
    /// The command completes.
    Complete(u32),
    /// A host program on a die finished: its buffered units are free.
    ProgramDone(u32, u32),
    /// A die can start its next queued operation.
    DieReady(u32),
    /// All NAND reads of a command's data are done.
    ReadReady(u32),
}

/// A whole simulated drive.
/// A program not complete at some instant (see [`Device::unfinished_programs`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UnfinishedProgram {
    pub die: u32,
    pub program: crate::ftl::Program,
    /// Its array time is running (false: queued behind other operations of the die).
    pub started: bool,
}

pub struct Device {
    pub config: DriveConfig,
    pub geometry: Geometry,
    pub ftl: Ftl,
    sched: Scheduler,
    host: HostInterface,
    slots: Vec<Slot>,
    free_slots: Vec<u32>,
    in_device: u32,
    /// Commands waiting for a device queue slot (NCQ full).
    host_queue: VecDeque<u32>,
    /// Writes waiting for write-buffer space, in arrival order.
    write_wait: VecDeque<u32>,
    /// The controller's DRAM write buffer.
    pub buffer: WriteBuffer,
    completions: Vec<Completion>,
    /// FLUSH and FUA commands waiting for the host programs queued before them, per die.
    flush_waits: FlushWaits,
    /// When the device last became idle (no command in it).
    idle_since: SimTime,
    gc_idle: SimDuration,
    /// Jobs with random streams started on this drive so far (each gets its own stream).
    jobs_started: u64,
    /// Read faults (None: none configured).
    faults: Option<Box<ReadFaults>>,
    /// First unit of the last write submitted (UNMAPPED: none), whose overwrite the next
    /// submission prefetches.
    overwrite_prefetch: u32,
}

/// Reads a page read costs beyond itself: read retries of the page, and reads of the rest
/// of its RAIN stripe.
#[derive(Clone, Copy, Default)]
struct ExtraReads {
    retries: u32,
    stripe_reads: u32,
    /// The page's own die has failed: it is not read at all.
    dead_die: bool,
}

/// Read retry and uncorrectable reads (see [`crate::faults`]).
struct ReadFaults {
    cfg: crate::faults::FaultConfig,
    rng: crate::rng::Rng,
    /// Logical units that read as uncorrectable until written or trimmed.
    unreadable: std::collections::BTreeSet<u32>,
    /// A die to fail and when; whether it has.
    die_fail: Option<(u32, SimTime)>,
    die_failed: bool,
    counters: crate::faults::FaultCounters,
}

impl Device {
    /// Build a drive from a configuration; all tables are allocated here.
    pub fn new(config: &DriveConfig, seed: u64) -> Result<Device, crate::config::ConfigError> {
        let geometry = config.validate()?;
        let unit_bytes = geometry.mapping_unit_bytes as u64;
        let buffer_units = config.ftl.write_buffer_bytes / unit_bytes;
        let f = &config.faults;
        let mut ftl = Ftl::new(&config.ftl, &geometry, seed);
        ftl.set_faults(f.program_fail, f.erase_fail, f.seed);
        let faults = (f.read_retry > 0.0 || f.uncorrectable > 0.0 || f.die.is_some()).then(|| {
            Box::new(ReadFaults {
                cfg: f.clone(),
                rng: crate::rng::Rng::derive(f.seed, "read-faults"),
                unreadable: Default::default(),
                die_fail: f
                    .die
                    .map(|d| (d, SimTime((f.die_fail_at_s * 1e9).round() as u64))),
                die_failed: false,
                counters: Default::default(),
            })
        });
        Ok(Device {
            ftl,
            faults,
            sched: Scheduler::new(
                Nand::new(&config.nand, &geometry),
                Processor::new(&config.controller),
                geometry.dies,
                unit_bytes,
                config.nand.copyback,
            ),
            host: HostInterface::new(&config.host, &config.controller),
            slots: Vec::new(),
            free_slots: Vec::new(),
            in_device: 0,
            host_queue: VecDeque::new(),
            write_wait: VecDeque::new(),
            buffer: WriteBuffer::new(buffer_units),
            completions: Vec::new(),
            flush_waits: FlushWaits::default(),
            idle_since: SimTime::ZERO,
            gc_idle: SimDuration::from_us(config.ftl.gc_background_idle_us),
            jobs_started: 0,
            overwrite_prefetch: UNMAPPED,
            geometry,
            config: config.clone(),
        })
    }

    /// Power off and on again: the clock, queues, buffer, NAND and host interface start afresh;
    /// the FTL keeps its tables (allocated once) for `Ftl::restore` to rebuild from what the
    /// NAND holds, as firmware does at power-on.
    pub fn power_cycle(&mut self) {
        let config = &self.config;
        let unit_bytes = self.geometry.mapping_unit_bytes as u64;
        self.sched = Scheduler::new(
            Nand::new(&config.nand, &self.geometry),
            Processor::new(&config.controller),
            self.geometry.dies,
            unit_bytes,
            config.nand.copyback,
        );
        self.host = HostInterface::new(&config.host, &config.controller);
        self.slots.clear();
        self.free_slots.clear();
        self.in_device = 0;
        self.host_queue.clear();
        self.write_wait.clear();
        self.buffer = WriteBuffer::new(config.ftl.write_buffer_bytes / unit_bytes);
        self.completions.clear();
        self.flush_waits = FlushWaits::default();
        self.idle_since = SimTime::ZERO;
        self.jobs_started = 0;
        self.ftl.journal = None;
    }

    /// NAND pages the FTL has decided to program so far (host, GC, parity, padding): timing
    /// independent, unlike the NAND's count of programs started.
    pub fn pages_committed(&self) -> u64 {
        let c = &self.ftl.counters;
        (c.pu_programs_host + c.pu_programs_gc + c.pu_programs_parity + c.pu_programs_meta)
            * self.geometry.planes_per_die as u64
    }

    /// NAND bytes programmed per host byte written, for deltas of `pages_committed` and
    /// `ftl.counters.host_units_written` (0 when nothing was written).
    pub fn write_amplification(&self, pages: u64, host_units: u64) -> f64 {
        if host_units == 0 {
            return 0.0;
        }
        pages as f64 * self.config.nand.page_size_bytes as f64
            / (host_units as f64 * self.geometry.mapping_unit_bytes as f64)
    }

    /// The ordinal of the job about to start (0 for the first), counting it.
    pub fn next_job_ordinal(&mut self) -> u64 {
        self.jobs_started += 1;
        self.jobs_started - 1
    }

    pub fn now(&self) -> SimTime {
        self.sched.kernel.now
    }

    pub fn user_bytes(&self) -> u64 {
        self.geometry.logical_units * self.geometry.mapping_unit_bytes as u64
    }

    pub fn nand(&self) -> &Nand {
        &self.sched.nand
    }

    pub fn host_interface(&self) -> &HostInterface {
        &self.host
    }

    /// The controller's processor (host commands and garbage collection).
    pub fn processor(&self) -> &Processor {
        &self.sched.processor
    }

    /// Programs a power cut now would interrupt or prevent: per die, those whose array time
    /// is running and those still queued. With [`crate::ftl::Ftl::buffered_host_ppns`] (host
    /// data in DRAM, in no program yet), what is not yet on the NAND.
    pub fn unfinished_programs(&self) -> Vec<UnfinishedProgram> {
        self.sched
            .unfinished_programs(self.now())
            .into_iter()
            .map(|(die, program, started)| UnfinishedProgram {
                die,
                program,
                started,
            })
            .collect()
    }

    /// Commands submitted and not yet completed.
    pub fn outstanding(&self) -> usize {
        self.slots.len() - self.free_slots.len()
    }

    /// Time of the next internal event, if any.
    pub fn next_event_time(&self) -> Option<SimTime> {
        self.sched.kernel.peek_time()
    }

    /// Completed commands since the last call.
    pub fn drain_completions(&mut self) -> std::vec::Drain<'_, Completion> {
        self.completions.drain(..)
    }

    /// Submit a host command at time `at`: not before the current time, and not after the next
    /// pending event (process events up to `at` first), so decisions stay in time order.
    pub fn submit(&mut self, io: HostIo, at: SimTime) {
        assert!(at >= self.sched.kernel.now, "submission in the past");
        debug_assert!(
            self.next_event_time().is_none_or(|t| t >= at),
            "submission at {at:?} skips events pending before it"
        );
        assert!(
            io.offset_bytes + io.length_bytes <= self.user_bytes(),
            "IO beyond the end of the drive (offset {} + length {} > {})",
            io.offset_bytes,
            io.length_bytes,
            self.user_bytes()
        );
        self.sched.kernel.now = at;
        let unit = self.geometry.mapping_unit_bytes as u64;
        let (first, end) = if io.length_bytes == 0 {
            (0, 0)
        } else if io.kind == IoKind::Trim {
            // Only whole mapping units are unmapped: the rest of a partly trimmed unit is data.
            let first = io.offset_bytes.div_ceil(unit) as u32;
            let end = ((io.offset_bytes + io.length_bytes) / unit) as u32;
            (first, end.max(first))
        } else {
            (
                (io.offset_bytes / unit) as u32,
                (io.offset_bytes + io.length_bytes).div_ceil(unit) as u32,
            )
        };
        if end > first {
            self.ftl.prefetch_lookup(first);
        }
        // The map entry of the write submitted before this one has arrived by now: start
        // loading the reverse entry of the copy its admission will make stale (a random access
        // into a table far larger than the caches).
        if self.overwrite_prefetch != UNMAPPED {
            self.ftl.prefetch_overwrite(self.overwrite_prefetch);
        }
        self.overwrite_prefetch = match io.kind {
            IoKind::Write if end > first => first,
            _ => UNMAPPED,
        };
        let slot = Slot {
            io,
            submitted: at,
            next_unit: first,
            end_unit: end,
            rmw_ready: at,
            failed: false,
        };
        let index = match self.free_slots.pop() {
            Some(i) => {
                self.slots[i as usize] = slot;
                i
            }
            None => {
                self.slots.push(slot);
                (self.slots.len() - 1) as u32
            }
        };
        if self.in_device < self.host.queue_depth_max {
            self.start(index);
        } else {
            self.host_queue.push_back(index);
        }
    }

    fn start(&mut self, slot: u32) {
        self.in_device += 1;
        // The command reaches the firmware after the latency outside the drive's resources
        // (it overlaps other commands' work), then queues for the processor.
        let now = self.sched.kernel.now;
        let done = self
            .sched
            .processor
            .command(now, now + self.host.command_latency);
        self.sched
            .kernel
            .push_usually_in_order(done, Event::Dispatch(slot));
    }

    /// Process the next internal event. Returns false if there was none.
    pub fn step(&mut self) -> bool {
        let Some((t, event)) = self.sched.kernel.pop() else {
            return false;
        };
        debug_assert!(t >= self.sched.kernel.now);
        self.sched.kernel.now = t;
        match event {
            Event::Dispatch(slot) => self.dispatch(slot),
            Event::Complete(slot) => self.complete(slot),
            Event::DieReady(die) => self.sched.die_ready(die),
            Event::ProgramDone(die, units) => {
                self.sched.host_program_done(die);
                self.buffer.release(units as u64);
                self.release_flushes();
                self.admit_writes();
            }
            Event::ReadReady(slot) => self.read_ready(slot),
        }
        true
    }

    /// Process every event up to and including time `until`.
    pub fn run_until(&mut self, until: SimTime) {
        while self.next_event_time().is_some_and(|t| t <= until) {
            self.step();
        }
    }

    fn dispatch(&mut self, slot: u32) {
        let now = self.sched.kernel.now;
        if let Some(f) = self.faults.as_mut() {
            if let Some((die, at)) = f.die_fail {
                if !f.die_failed && now >= at {
                    f.die_failed = true;
                    f.counters.failed_dies += 1;
                    self.ftl.fail_die(die);
                }
            }
        }
        let s = self.slots[slot as usize];
        match s.io.kind {
            IoKind::Read => {
                self.ftl.counters.host_units_read += (s.end_unit - s.next_unit) as u64;
                self.read_units(slot, s.next_unit, s.end_unit);
            }
            IoKind::Write => {
                self.ftl.prefetch_overwrite(s.next_unit);
                let unit = self.geometry.mapping_unit_bytes as u64;
                // A partial first or last unit is read, merged and written whole.
                let head_partial = !s.io.offset_bytes.is_multiple_of(unit);
                let tail_partial = !(s.io.offset_bytes + s.io.length_bytes).is_multiple_of(unit);
                if head_partial || tail_partial {
                    self.sched.begin_wait(slot);
                    if head_partial {
                        self.enqueue_reads(slot, s.next_unit, s.next_unit + 1);
                    }
                    if tail_partial && (s.end_unit - 1 != s.next_unit || !head_partial) {
                        self.enqueue_reads(slot, s.end_unit - 1, s.end_unit);
                    }
                    if !self.sched.end_wait(slot) {
                        return; // continues in read_ready
                    }
                    self.slots[slot as usize].rmw_ready =
                        self.sched.read_waits[slot as usize].ready;
                }
                self.write_wait.push_back(slot);
                self.admit_writes();
            }
            IoKind::Trim => {
                for lba in s.next_unit..s.end_unit {
                    self.ftl.trim_unit(lba, s.io.tag, &mut self.sched);
                    self.rewritten(lba);
                }
                let end = self.host.to_device(now, now, 0, true);
                self.sched.kernel.push(end, Event::Complete(slot));
            }
            IoKind::Flush => {
                self.ftl.flush(&mut self.sched);
                self.wait_for_programs(slot);
            }
        }
    }

    /// Read logical units `first..end` of a host read; the data goes to the host when the
    /// last NAND read is done (`read_ready`).
    fn read_units(&mut self, slot: u32, first: u32, end: u32) {
        self.sched.begin_wait(slot);
        self.enqueue_reads(slot, first, end);
        if self.sched.end_wait(slot) {
            let ready = self.sched.read_waits[slot as usize].ready;
            if ready <= self.sched.kernel.now {
                self.read_ready(slot);
            } else {
                self.sched.kernel.push(ready, Event::ReadReady(slot));
            }
        }
    }

    /// Queue one NAND read per run of units in the same PU; nothing for units in the buffer
    /// or never written.
    fn enqueue_reads(&mut self, slot: u32, first: u32, end: u32) {
        let mut run_first = UNMAPPED;
        let mut run_last = UNMAPPED;
        let mut run_lba = 0;
        for lba in first..end {
            let ppn = self.ftl.lookup(lba);
            if ppn == UNMAPPED {
                continue;
            }
            debug_assert_eq!(
                self.ftl.reverse(ppn),
                lba,
                "OOB LBA disagrees with the map on read"
            );
            if run_first != UNMAPPED
                && ppn == run_last + 1
                && self.ftl.pu_of(ppn) == self.ftl.pu_of(run_first)
            {
                run_last = ppn;
                continue;
            }
            self.enqueue_read_run(slot, run_first, run_last, run_lba);
            run_first = ppn;
            run_last = ppn;
            run_lba = lba;
        }
        self.enqueue_read_run(slot, run_first, run_last, run_lba);
    }

    /// One NAND read of units `first_ppn..=last_ppn` (logical units from `first_lba` on).
    fn enqueue_read_run(&mut self, slot: u32, first_ppn: u32, last_ppn: u32, first_lba: u32) {
        if first_ppn == UNMAPPED || self.ftl.is_buffered(first_ppn) {
            return;
        }
        let die = self.ftl.die_of(first_ppn);
        let planes = self.ftl.planes_spanned(first_ppn, last_ppn);
        let units = last_ppn - first_ppn + 1;
        let bytes = units as u64 * self.sched.unit_bytes;
        let host_read = self.slots[slot as usize].io.kind == IoKind::Read;
        let extra = match self.faults.is_some() && host_read {
            true => self.read_faults(slot, die, first_lba, units),
            false => ExtraReads::default(),
        };
        if !extra.dead_die {
            for _ in 0..1 + extra.retries {
                self.enqueue_host_read(slot, die, planes, bytes);
            }
        }
        if extra.stripe_reads > 0 {
            self.enqueue_stripe_reads(slot, die, extra.stripe_reads);
        }
    }

    /// A RAIN rebuild reads every other member of the stripe, whole: parity is striped across
    /// dies, so the members are on the dies after this one in turn (a failed die skipped),
    /// read in parallel across dies.
    fn enqueue_stripe_reads(&mut self, slot: u32, die: u32, reads: u32) {
        let pu_bytes = self.geometry.units_per_pu as u64 * self.sched.unit_bytes;
        let dies = self.geometry.dies;
        let dead = self.ftl.failed_die();
        let mut members = (1..dies)
            .map(|k| (die + k) % dies)
            .filter(|&d| Some(d) != dead)
            .cycle();
        for _ in 0..reads {
            let member = members
                .next()
                .expect("a stripe is rebuilt only with live members");
            self.enqueue_host_read(slot, member, self.geometry.planes_per_die, pu_bytes);
        }
    }

    fn enqueue_host_read(&mut self, slot: u32, die: u32, planes: u32, bytes: u64) {
        self.sched.read_waits[slot as usize].pending += 1;
        self.sched.enqueue(
            die,
            NandOp::HostRead {
                planes,
                bytes,
                slot,
            },
        );
    }

    /// Draw the faults of one host page read of `units` logical units from `first_lba`:
    /// the extra reads they cost; a unit beyond repair fails the command.
    fn read_faults(&mut self, slot: u32, die: u32, first_lba: u32, units: u32) -> ExtraReads {
        let rain_period = self.geometry.rain_period;
        let f = self.faults.as_mut().expect("faults on");
        let mut extra = ExtraReads::default();
        if f.die_failed && f.die_fail.is_some_and(|(d, _)| d == die) {
            extra.dead_die = true;
            if rain_period > 0 {
                f.counters.die_rebuilds += 1;
                extra.stripe_reads = rain_period - 1;
                f.counters.rain_rebuild_reads += extra.stripe_reads as u64;
            } else {
                self.slots[slot as usize].failed = true;
                for lba in first_lba..first_lba + units {
                    f.counters.unreadable_units += f.unreadable.insert(lba) as u64;
                }
            }
            return extra;
        }
        if f.cfg.read_retry > 0.0 && f.rng.unit_f64() < f.cfg.read_retry {
            extra.retries = 1 + f.rng.below(f.cfg.read_retry_max as u64) as u32;
            f.counters.read_retries += 1;
        }
        let lbas = first_lba..first_lba + units;
        let known_bad =
            !f.unreadable.is_empty() && f.unreadable.range(lbas.clone()).next().is_some();
        let fresh =
            !known_bad && f.cfg.uncorrectable > 0.0 && f.rng.unit_f64() < f.cfg.uncorrectable;
        if known_bad || fresh {
            // The whole retry table is tried before the controller gives up on the page.
            extra.retries = f.cfg.read_retry_max;
            f.counters.uncorrectable_pages += fresh as u64;
            // With a die already lost, every stripe has lost a member: nothing to rebuild from.
            if rain_period > 0 && !f.die_failed {
                f.counters.rain_rebuilds += 1;
                extra.stripe_reads = rain_period - 1;
                f.counters.rain_rebuild_reads += extra.stripe_reads as u64;
            } else {
                self.slots[slot as usize].failed = true;
                for lba in lbas {
                    f.counters.unreadable_units += f.unreadable.insert(lba) as u64;
                }
            }
        }
        f.counters.read_retry_reads += extra.retries as u64;
        extra
    }

    /// A host write or TRIM replaced `lba`: it reads again.
    #[inline]
    fn rewritten(&mut self, lba: u32) {
        if let Some(f) = self.faults.as_mut() {
            if !f.unreadable.is_empty() {
                f.unreadable.remove(&lba);
            }
        }
    }

    /// What the seeded faults did so far (see [`crate::faults`]).
    pub fn fault_counters(&self) -> crate::faults::FaultCounters {
        let mut c = self.faults.as_ref().map(|f| f.counters).unwrap_or_default();
        let fc = &self.ftl.counters;
        c.program_failures = fc.program_failures;
        c.erase_failures = fc.erase_failures;
        c.grown_bad_blocks = fc.grown_bad_blocks;
        c
    }

    /// Logical units now unreadable (an uncorrectable read without RAIN, not yet rewritten).
    pub fn unreadable_units(&self) -> Vec<u32> {
        self.faults
            .as_ref()
            .map(|f| f.unreadable.iter().copied().collect())
            .unwrap_or_default()
    }

    /// All NAND data of a command is in the controller.
    fn read_ready(&mut self, slot: u32) {
        let now = self.sched.kernel.now;
        let s = self.slots[slot as usize];
        match s.io.kind {
            IoKind::Read => {
                let end = self.host.to_host(now, now, s.io.length_bytes, true);
                self.sched.kernel.push(end, Event::Complete(slot));
            }
            _ => {
                // Read-modify-write data is in: the write can take buffer space.
                self.slots[slot as usize].rmw_ready = now;
                self.write_wait.push_back(slot);
                self.admit_writes();
            }
        }
    }

    /// Move waiting writes into the buffer, in arrival order, as far as space allows.
    fn admit_writes(&mut self) {
        let now = self.sched.kernel.now;
        let unit = self.geometry.mapping_unit_bytes as u64;
        while let Some(&slot) = self.write_wait.front() {
            if self.buffer.free_units() == 0 {
                break;
            }
            let s = self.slots[slot as usize];
            let first_chunk = s.next_unit == (s.io.offset_bytes / unit) as u32;
            let count = self.buffer.take((s.end_unit - s.next_unit) as u64) as u32;
            let bytes = (count as u64 * unit).min(s.io.length_bytes);
            let arrived = self
                .host
                .to_device(now, s.rmw_ready.max(now), bytes, first_chunk);
            self.ftl
                .write_units(s.next_unit, count, s.io.tag, arrived, &mut self.sched);
            if self.faults.is_some() {
                for lba in s.next_unit..s.next_unit + count {
                    self.rewritten(lba);
                }
            }
            let s = &mut self.slots[slot as usize];
            s.next_unit += count;
            if s.next_unit == s.end_unit {
                self.write_wait.pop_front();
                if s.io.fua {
                    self.ftl.flush(&mut self.sched);
                    self.slots[slot as usize].rmw_ready = arrived;
                    self.wait_for_programs(slot);
                } else {
                    self.sched.kernel.push(arrived, Event::Complete(slot));
                }
            }
        }
    }

    /// Complete `slot` once every host program queued so far has finished.
    fn wait_for_programs(&mut self, slot: u32) {
        let targets = self.sched.host_programs_queued();
        self.flush_waits.add(slot, targets);
        self.release_flushes();
    }

    fn release_flushes(&mut self) {
        if self.flush_waits.is_empty() {
            return;
        }
        let now = self.sched.kernel.now;
        let (sched, slots, host) = (&mut self.sched, &self.slots, &mut self.host);
        let mut released = Vec::new();
        self.flush_waits.release_reached(
            |t| sched.host_programs_done_reach(t),
            |slot| released.push(slot),
        );
        for slot in released {
            let s = slots[slot as usize];
            let at = if s.io.kind == IoKind::Write {
                s.rmw_ready.max(now)
            } else {
                now
            };
            let end = if s.io.kind == IoKind::Flush {
                host.to_device(now, at, 0, true)
            } else {
                at
            };
            sched.kernel.push(end, Event::Complete(slot));
        }
    }

    fn complete(&mut self, slot: u32) {
        let s = self.slots[slot as usize];
        if s.failed {
            if let Some(f) = self.faults.as_mut() {
                f.counters.failed_reads += 1;
            }
        }
        self.completions.push(Completion {
            io: s.io,
            submitted: s.submitted,
            completed: self.sched.kernel.now,
            failed: s.failed,
        });
        self.free_slots.push(slot);
        self.in_device -= 1;
        if let Some(next) = self.host_queue.pop_front() {
            self.start(next);
        }
        if self.in_device == 0 {
            self.idle_since = self.sched.kernel.now;
        }
    }

    /// The host will send nothing before `until`: let background garbage collection use the
    /// idle time. Call only with no command outstanding.
    pub fn idle_until(&mut self, until: SimTime) {
        if self.outstanding() > 0 {
            self.run_until(until);
            return;
        }
        let from = self.idle_since.max(self.sched.kernel.now) + self.gc_idle;
        loop {
            // Next background decision: the die that can start soonest, with work to do.
            let mut best: Option<(SimTime, u32)> = None;
            for die in 0..self.geometry.dies {
                if !self.ftl.background_work_pending(die) {
                    continue;
                }
                if let Some(at) = self.sched.die_idle_from(die) {
                    let at = at.max(from).max(self.sched.kernel.now);
                    if best.is_none_or(|(t, _)| at < t) {
                        best = Some((at, die));
                    }
                }
            }
            let next_event = self.next_event_time();
            match (best, next_event) {
                (_, Some(t)) if t < until && best.is_none_or(|(b, _)| t <= b) => {
                    self.step();
                }
                (Some((at, die)), _) if at < until => {
                    self.sched.kernel.now = at;
                    self.ftl.collect_background_step(die, &mut self.sched);
                }
                _ => break,
            }
        }
    }

    /// Write every logical unit in `first..first + count` without timing: the FTL reaches the
    /// state a timed sequential fill reaches, in no simulated time.
    pub fn fill_untimed(&mut self, first_unit: u32, count: u32) {
        assert_eq!(self.outstanding(), 0, "fill with commands outstanding");
        let before = self.ftl.buffered_host_units();
        self.ftl.fill_untimed(first_unit, count);
        if let Some(f) = self.faults.as_mut() {
            let units = first_unit..first_unit + count;
            f.unreadable.retain(|l| !units.contains(l));
        }
        // Units of the last, partial PU sit in the write buffer, as after a timed fill.
        self.buffer
            .held_changed(before, self.ftl.buffered_host_units());
    }

    /// Write `writes` logical units drawn uniformly from `first..first + span` without timing:
    /// the FTL state (maps, valid counts, wear) that as many 4 KiB random writes reach, in no
    /// simulated time. Garbage collection decides exactly as in a timed run (its decisions
    /// depend on the writes, not on time); used to reach steady state quickly.
    pub fn random_writes_untimed(&mut self, first: u32, span: u32, writes: u64, seed: u64) {
        assert_eq!(
            self.outstanding(),
            0,
            "untimed writes with commands outstanding"
        );
        assert!(span > 0 && first as u64 + span as u64 <= self.geometry.logical_units);
        let before = self.ftl.buffered_host_units();
        let mut rng = crate::rng::Rng::derive(seed, "untimed-random-writes");
        for _ in 0..writes {
            let lba = first + rng.below(span as u64) as u32;
            self.ftl
                .write_unit(HostWrite::untimed(lba), &mut crate::ftl::NullSink);
        }
        self.buffer
            .held_changed(before, self.ftl.buffered_host_units());
    }

    /// Secure erase: every block erased, the map empty (untimed).
    pub fn secure_erase(&mut self) {
        assert_eq!(
            self.outstanding(),
            0,
            "secure erase with commands outstanding"
        );
        self.run_until(SimTime(u64::MAX));
        self.ftl.secure_erase();
        if let Some(f) = self.faults.as_mut() {
            f.unreadable.clear();
        }
        self.buffer.empty();
    }
}

#[cfg(test)]
mod tests;
