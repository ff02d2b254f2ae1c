//! The device: the parts of a drive wired together, and the one loop that steps them.
//!
//! MQSim's `SSD_Device` builds a drive bottom-up and lets each part own its state; so does
//! this module. Each part has one owner:
//! - the clock and the pending events: the [`Kernel`] (`crate::sim`), which alone moves `now`;
//! - host commands, from submission to completion: the [`controller`] (slots and device
//!   queue, processor, host link, write buffer, FLUSH/FUA waits, read batches, read faults);
//! - where data goes, garbage collection and the map: the [`Ftl`];
//! - what flash operations cost, per die and channel: the [`scheduler`] over the NAND.
//!
//! [`Device::step`] pops the next event and hands it to its owner. Every decision is made at
//! the current event time, in time order, and reserves time on the resources it needs
//! (processor, link, channel buses, dies); so the FTL's flash operations and the host's
//! requests contend for the same dies and buses.

mod buffer;
mod command;
mod controller;
mod power;
mod processor;
mod scheduler;
mod untimed;
mod verify;

use crate::config::{DriveConfig, Geometry};
use crate::ftl::Ftl;
use crate::host::HostInterface;
use crate::nand::Nand;
use crate::sim::Kernel;
use crate::time::SimTime;
pub use buffer::WriteBuffer;
pub use command::{Completion, HostIo, IoKind};
use controller::{Backend, Controller};
pub use processor::Processor;
use scheduler::{Flash, Scheduler};

/// The drive's events, each handled by the part that owns its state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Event {
    /// The controller's processor has taken up the command in this slot.
    Dispatch(u32),
    /// The command in this slot completes.
    Complete(u32),
    /// A host program on a die finished: its buffered units (second field) are free.
    ProgramDone(u32, u32),
    /// A die can start its next queued operation.
    DieReady(u32),
    /// The first of the dies waiting for the active-die limit tries again (the scheduler's
    /// power waits; one event stands for all of them, see `scheduler`).
    PowerWake,
    /// All NAND reads of a read batch (a command slot's) are done.
    ReadReady(u32),
}

/// The event kernel's lanes (`Kernel::schedule_in_lane`): kinds of events that mostly come in
/// time order. A sequential fill of crucial-m500-960 schedules 97% of its program ends in
/// order, micron-p320h-175's GC steady state 73%; dispatches follow the processor's timeline.
/// Die wake-ups go to the kernel's calendar wheel: with it, their lanes (99% and 37% in order)
/// cost more in the least-front search after every lane pop than they saved (callgrind,
/// micron-p320h-350 at 25% spare 4,558.3M -> 4,494.8M without them, crucial-m500-120
/// 522.3M -> 518.6M).
pub(crate) const LANE_DISPATCH: usize = 0;
pub(crate) const LANE_PROGRAM_DONE: usize = 1;
/// Command completions: writes complete in admission order as their data crosses the host
/// link (every one of micron-p320h-175's and crucial-m500-960's write completions in GC steady
/// state came in time order), one heap push and pop fewer per host write. Reads, trims and
/// flushes complete through it too; one that comes out of order goes to the heap.
pub(crate) const LANE_COMPLETE: usize = 2;

/// The stages of [`Device::prefetch_ahead`], farthest first: each loads what the one before
/// found (once it has had time to land).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ahead {
    /// The command's map entry.
    Lookup,
    /// For a write, what overwriting its unit changes: the old copy's block's valid count and
    /// victim key (its reverse entry stays, stale).
    Overwrite,
}

/// A program not complete at some instant (see [`Device::unfinished_programs`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UnfinishedProgram {
    pub die: u32,
    pub program: crate::ftl::Program,
    /// Its array time is running (false: queued behind other operations of the die).
    pub started: bool,
}

/// A whole simulated drive.
pub struct Device {
    pub config: DriveConfig,
    pub geometry: Geometry,
    pub ftl: Ftl,
    kernel: Kernel<Event>,
    controller: Controller,
    sched: Scheduler,
    /// Jobs with random streams started on this drive so far (each gets its own stream).
    jobs_started: u64,
    /// The drive's temperature and throttling (None: no `[thermal]`).
    thermal: Option<crate::thermal::Thermal>,
    /// Steps checked so far (the `verify` feature).
    #[cfg(feature = "verify")]
    steps_verified: u64,
}

impl Device {
    /// Build a drive from a configuration; all tables are allocated here.
    pub fn new(config: &DriveConfig, seed: u64) -> Result<Device, crate::config::ConfigError> {
        let geometry = config.validate()?;
        let f = &config.faults;
        let mut ftl = Ftl::new(&config.ftl, &geometry, seed);
        match &config.placement {
            Some(p) if p.mode == crate::config::PlacementMode::Zns => {
                let z = p.zone_geometry(&geometry)?;
                ftl.set_zoned(z.max_active, z.dies_per_zone);
            }
            Some(p) => ftl.set_placement(p),
            None => {}
        }
        ftl.set_faults(f.program_fail, f.erase_fail, f.seed);
        ftl.set_erase_hold(
            config.controller.power_loss_protection != crate::config::PowerLossProtection::Full,
        );
        Ok(Device {
            ftl,
            kernel: Kernel::default(),
            controller: Controller::new(config, &geometry),
            sched: Device::scheduler(config, &geometry),
            jobs_started: 0,
            thermal: power::new_thermal(config),
            #[cfg(feature = "verify")]
            steps_verified: 0,
            geometry,
            config: config.clone(),
        })
    }

    fn scheduler(config: &DriveConfig, geometry: &Geometry) -> Scheduler {
        Scheduler::new(
            Nand::new(&config.nand, geometry),
            geometry.dies,
            geometry.mapping_unit_bytes as u64,
            config.nand.copyback,
            power::budget_dies(config, geometry),
        )
    }

    /// Power off and on again: the clock, queues, buffer, NAND and host interface start afresh;
    /// the FTL keeps its tables (allocated once) for `Ftl::restore` to rebuild from what the
    /// NAND holds, as firmware does at power-on.
    pub fn power_cycle(&mut self) {
        self.kernel = Kernel::default();
        self.sched = Device::scheduler(&self.config, &self.geometry);
        self.controller.power_cycle(&self.config, &self.geometry);
        self.jobs_started = 0;
        self.thermal = power::new_thermal(&self.config);
        self.ftl.stop_map_changes();
        self.ftl.power_off();
    }

    /// Process the next event: the kernel moves the clock to it and its owner handles it.
    /// Returns false if there was none.
    pub fn step(&mut self) -> bool {
        let Some(event) = self.kernel.pop() else {
            return false;
        };
        self.update_temperature_if_due();
        let (c, mut b) = self.parts();
        match event {
            Event::Dispatch(slot) => c.dispatch(slot, &mut b),
            Event::Complete(slot) => c.complete(slot, b.kernel),
            Event::DieReady(die) => b.sched.die_ready(b.kernel, &mut c.processor, die),
            Event::PowerWake => b.sched.power_wake(b.kernel, &mut c.processor),
            Event::ProgramDone(die, units) => c.program_done(die, units, &mut b),
            Event::ReadReady(slot) => c.read_ready(slot, &mut b),
        }
        #[cfg(feature = "verify")]
        self.verify_step();
        true
    }

    /// The controller, and what stands behind it.
    #[inline]
    fn parts(&mut self) -> (&mut Controller, Backend<'_>) {
        let backend = Backend {
            kernel: &mut self.kernel,
            ftl: &mut self.ftl,
            sched: &mut self.sched,
        };
        (&mut self.controller, backend)
    }

    /// Submit a host command at time `at`: not before the current time, and not after the next
    /// pending event (process events up to `at` first), so decisions stay in time order.
    pub fn submit(&mut self, io: HostIo, at: SimTime) {
        self.submit_command(io, at, false);
    }

    /// `submit` of a command whose map entries (and, for a write, what overwriting them
    /// touches) the submitter started loading ahead with [`Device::prefetch_ahead`]: the
    /// controller does not load them again (three loads of the same lines per random write
    /// were 2.5% of crucial-m500-240's random-write instructions). Changes nothing but what
    /// the CPU caches hold.
    pub fn submit_looked_ahead(&mut self, io: HostIo, at: SimTime) {
        self.submit_command(io, at, true);
    }

    fn submit_command(&mut self, io: HostIo, at: SimTime, looked_ahead: bool) {
        assert!(
            self.controller.zones.is_some()
                || io.offset_bytes + io.length_bytes <= self.user_bytes(),
            "IO beyond the end of the drive (offset {} + length {} > {})",
            io.offset_bytes,
            io.length_bytes,
            self.user_bytes()
        );
        self.kernel.advance_to(at);
        let (c, mut b) = self.parts();
        c.submit(io, looked_ahead, &mut b);
    }

    /// A hint from a workload that knows its coming commands: start loading what the command
    /// of `kind` at `offset_bytes` will touch, in `stage` (see [`Ahead`]). Changes nothing but
    /// what the CPU caches hold.
    #[inline]
    pub fn prefetch_ahead(&self, kind: IoKind, offset_bytes: u64, stage: Ahead) {
        let unit = self.controller.unit().quotient(offset_bytes);
        if unit >= self.geometry.logical_units {
            return;
        }
        let unit = unit as u32;
        match stage {
            Ahead::Lookup => self.ftl.prefetch_lookup(unit),
            _ if kind == IoKind::Read => {}
            Ahead::Overwrite => self.ftl.prefetch_overwrite(unit),
        }
    }

    /// Process every event up to and including time `until`.
    pub fn run_until(&mut self, until: SimTime) {
        while self.next_event_time().is_some_and(|t| t <= until) {
            self.step();
        }
    }

    /// When (ns) background collection could take its next step: `ftl.gc_background_idle_us`
    /// after the last command completed, while no command is in the drive (`u64::MAX` while
    /// one is). A session's quiet stretches end there.
    #[inline]
    pub fn background_from_ns(&self) -> u64 {
        if self.outstanding() > 0 {
            return u64::MAX;
        }
        (self.controller.idle_since + self.ftl.gc_idle_delay()).ns()
    }

    /// The drive's next background collection step, if it comes before `before`: (when, die).
    /// The firmware's idle-time collection as an event of its own: planned from the state at
    /// this instant (of the dies with background work, the one whose array and queue are free
    /// soonest, not before the idle timer ends), so a caller asks again after every event, and
    /// dropped as soon as a command is in the drive (the host is back). At the same instant
    /// the drive's queued events go first. [`crate::session::Session`] takes the steps while
    /// its source is idle; [`crate::session::idle`] when the host sends nothing for a while.
    pub fn background_step_before(&self, before: SimTime) -> Option<(SimTime, u32)> {
        let from = self.background_from_ns();
        if from >= before.ns() || self.now() >= before {
            return None;
        }
        let from = SimTime(from).max(self.now());
        self.ftl
            .gc_on_idle(from, |die| self.sched.die_idle_from(die))
            .filter(|&(at, _)| at < before)
    }

    /// Take the background collection step `background_step_before` planned on `die` at `at`.
    pub fn collect_in_background(&mut self, at: SimTime, die: u32) {
        debug_assert_eq!(self.outstanding(), 0, "background collection while busy");
        self.kernel.advance_to(at);
        let mut flash = Flash {
            sched: &mut self.sched,
            kernel: &mut self.kernel,
            processor: &mut self.controller.processor,
        };
        self.ftl.collect_background_step(die, &mut flash);
    }

    /// Move the clock to `until` with nothing pending before it (the host sent nothing and
    /// the drive had nothing to do): the link's state, the energy and temperature follow it.
    pub(crate) fn pass_time_to(&mut self, until: SimTime) {
        if until > self.now() {
            self.kernel.advance_to(until);
        }
    }

    /// NAND pages the FTL has decided to program so far (host, GC, parity, padding): timing
    /// independent, unlike the NAND's count of programs started.
    pub fn pages_committed(&self) -> u64 {
        let c = &self.ftl.counters;
        (c.pu_programs_host + c.pu_programs_gc + c.pu_programs_parity + c.pu_programs_meta)
            * self.geometry.planes_per_die as u64
    }

    /// The pages of `pages_committed` that journalled TRIMs' map changes (reported apart from
    /// write amplification).
    pub fn trim_pages_committed(&self) -> u64 {
        self.ftl.counters.pu_programs_meta_trim * self.geometry.planes_per_die as u64
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
        self.kernel.now()
    }

    /// Time of the next internal event, if any.
    pub fn next_event_time(&self) -> Option<SimTime> {
        self.kernel.peek_time()
    }

    /// The namespace's bytes: a zoned one's every zone's whole size, else the user capacity.
    pub fn namespace_bytes(&self) -> u64 {
        match &self.controller.zones {
            Some(z) => z.namespace_bytes(),
            None => self.user_bytes(),
        }
    }

    /// The zoned namespace's zones (None: conventional).
    pub fn zones(&self) -> Option<&crate::zones::Zones> {
        self.controller.zones.as_deref()
    }

    /// Zone Management Send `action` to zone `zone`, at the current time: the zone's state
    /// changes now; a reset's erases are queued on the zone's dies once every write admitted
    /// to the zone has reached the FTL (at once if none is on its way). Refused on a
    /// conventional namespace (Invalid Command Opcode) or with the zone's status; nothing
    /// changes then.
    pub fn zone_manage(
        &mut self,
        zone: u32,
        action: crate::zones::ZoneAction,
    ) -> Result<(), crate::zones::Status> {
        let (c, mut b) = self.parts();
        let Some(zones) = c.zones.as_mut() else {
            return Err(crate::zones::Status::InvalidCommand);
        };
        let released = zones.manage(zone, action)?;
        let (ftl, mut flash) = b.ftl_and_flash(&mut c.processor);
        for r in released {
            ftl.zone_release(r.close, r.reset, &mut flash);
        }
        Ok(())
    }

    /// Zone Management Receive: up to `count` zones from `first` (empty: conventional).
    pub fn zone_report(&self, first: u32, count: u32) -> Vec<crate::zones::ZoneDescriptor> {
        self.zones()
            .map(|z| z.report(first, count))
            .unwrap_or_default()
    }

    pub fn user_bytes(&self) -> u64 {
        self.geometry.logical_units * self.geometry.mapping_unit_bytes as u64
    }

    pub fn nand(&self) -> &Nand {
        &self.sched.nand
    }

    pub fn host_interface(&self) -> &HostInterface {
        &self.controller.host
    }

    /// The controller's processor (host commands and garbage collection).
    pub fn processor(&self) -> &Processor {
        &self.controller.processor
    }

    /// The controller's DRAM write buffer.
    pub fn buffer(&self) -> &WriteBuffer {
        &self.controller.buffer
    }

    /// Commands submitted and not yet completed.
    pub fn outstanding(&self) -> usize {
        self.controller.outstanding()
    }

    /// Completed commands since the last call.
    pub fn drain_completions(&mut self) -> std::vec::Drain<'_, Completion> {
        self.controller.drain_completions()
    }

    /// Whether commands completed since completions were last taken.
    #[inline]
    pub fn has_completions(&self) -> bool {
        self.controller.has_completions()
    }

    /// Completed commands since the last call, into `into` (which must be empty) by swapping
    /// buffers: no copy, and `dev` stays free to read while they are handled.
    #[inline]
    pub fn take_completions(&mut self, into: &mut Vec<Completion>) {
        self.controller.swap_completions(into);
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

    /// What the seeded faults did so far (see [`crate::faults`]).
    pub fn fault_counters(&self) -> crate::faults::FaultCounters {
        self.controller.fault_counters(&self.ftl)
    }

    /// Logical units now unreadable (an uncorrectable read without RAIN, not yet rewritten).
    pub fn unreadable_units(&self) -> Vec<u32> {
        self.controller.unreadable_units()
    }
}

#[cfg(test)]
mod tests;
