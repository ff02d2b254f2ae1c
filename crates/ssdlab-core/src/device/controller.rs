//! The controller: host commands from submission to completion.
//!
//! It owns what a real controller's front end holds: the command slots and the device queue
//! (NCQ; `host.queue_depth_max`), the processor, the host link, the DRAM write buffer and the
//! writes waiting for space in it, the FLUSH/FUA commands waiting for the NAND, the reads
//! waiting for their NAND data, and the read-fault path ([`crate::faults::ReadFaults`]).
//! The FTL decides where data goes and the scheduler times the flash; both are reached through
//! a [`Backend`] the device lends for each call, with the kernel whose clock every decision
//! reads.
//!
//! A command's way: `submit` (a slot; the device queue or the host queue when it is full) ->
//! the processor (`Dispatch` event) -> reads: one NAND read per run of units in a program unit
//! (a read batch), `ReadReady`, the host link, `Complete`; writes: read-modify-write of partial
//! units, the write buffer in arrival order, the link, the FTL (`Ftl::write_units`),
//! `Complete` once the data is in the DRAM buffer (FUA, or the write cache off: once the
//! programs holding the data are done; full power-loss protection: FUA from DRAM too); TRIM:
//! the FTL, `Complete`; FLUSH: the FTL's open units programmed, `Complete` once every host
//! program queued before it is done (full power-loss protection: at once, the buffer is
//! durable).
//!
//! Every command reaches the processor after the host's software stack (`host.driver_ns`) and
//! the controller's front end (`controller.front_end_ns`), which overlap other commands' work;
//! the processor's `command_ns` is serialised (docs/model.md "The command path").

mod reads;
mod zoned;

use super::buffer::{FlushWaits, WriteBuffer};
use super::processor::Processor;
use super::scheduler::{Flash, Scheduler};
use super::{Completion, Event, HostIo, IoKind};
use crate::config::{DriveConfig, Geometry, PowerLossProtection};
use crate::divisor::PowerOfTwo;
use crate::faults::{FaultCounters, ReadFaults};
use crate::ftl::{Ftl, HostWrite, UNMAPPED};

/// A slot's `zone_slot` when the command is not a zoned write.
const NO_ZONE: u16 = u16::MAX;
use crate::host::HostInterface;
use crate::power::{Link, LinkPolicy};
use crate::sim::Kernel;
use crate::time::{SimDuration, SimTime};
use crate::zones::{Status, Zones};
use std::collections::VecDeque;

/// What stands behind the controller, lent by the device for one call.
pub(super) struct Backend<'a> {
    pub kernel: &'a mut Kernel<Event>,
    pub ftl: &'a mut Ftl,
    pub sched: &'a mut Scheduler,
}

impl Backend<'_> {
    /// The FTL, and the flash it programs, reads and erases through (the scheduler on the
    /// kernel's clock, with the controller's `processor`).
    #[inline]
    pub fn ftl_and_flash<'b>(
        &'b mut self,
        processor: &'b mut Processor,
    ) -> (&'b mut Ftl, Flash<'b>) {
        let flash = Flash {
            sched: self.sched,
            kernel: self.kernel,
            processor,
        };
        (self.ftl, flash)
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
    /// A zoned namespace refused the command (it completes with this status, having done
    /// nothing).
    status: Status,
    /// A zoned write's frontier slot and dies group (`NO_ZONE`: not zoned). 16 bits each, so
    /// the slot stays 64 bytes: every command copies it.
    zone_slot: u16,
    zone_group: u16,
    /// The submitter started loading the command's map entries and what its overwrite makes
    /// stale ([`super::Device::prefetch_ahead`]): the controller does not load them again.
    looked_ahead: bool,
}

/// The geometry the controller divides commands by.
#[derive(Clone, Copy, Debug)]
struct Shape {
    /// The mapping unit's bytes.
    unit: PowerOfTwo,
    dies: u32,
    planes_per_die: u32,
    units_per_pu: u32,
    rain_period: u32,
    /// `nand.read_sector_bytes` (0: reads move whole mapping units).
    read_sector: u64,
}

pub(super) struct Controller {
    pub processor: Processor,
    pub host: HostInterface,
    pub buffer: WriteBuffer,
    shape: Shape,
    /// Invariant: a slot is in `free_slots`, or in exactly one of the device (counted by
    /// `in_device`) and `host_queue`.
    slots: Vec<Slot>,
    free_slots: Vec<u32>,
    in_device: u32,
    /// Commands waiting for a device queue slot (NCQ full).
    host_queue: VecDeque<u32>,
    /// Writes waiting for write-buffer space, in arrival order.
    write_wait: VecDeque<u32>,
    completions: Vec<Completion>,
    /// FLUSH and FUA commands waiting for the host programs queued before them, per die.
    flush_waits: FlushWaits,
    /// When the device last became idle (no command in it).
    pub idle_since: SimTime,
    /// Read faults (None: none configured).
    faults: Option<Box<ReadFaults>>,
    /// First unit of the last write submitted (UNMAPPED: none), whose overwrite the next
    /// submission prefetches.
    overwrite_prefetch: u32,
    /// The host link's power state and the drive's static energy (None: no `[power]`).
    pub link: Option<Link>,
    /// The front end's part of every command's path (`controller.front_end_ns`).
    front_end: SimDuration,
    /// When a write is acknowledged and what a FLUSH waits for (see [`Acknowledge`]).
    ack: Acknowledge,
    /// A zoned namespace's zones (None: conventional), asked before anything else.
    pub zones: Option<Box<Zones>>,
}

/// Where the drive acknowledges a write, by its write cache and its hold-up energy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Acknowledge {
    /// The write cache is on and the DRAM is not protected: a write is acknowledged once its
    /// data is in the DRAM buffer; FUA writes and FLUSH wait for the NAND programs.
    Buffered,
    /// Full power-loss protection: data in the DRAM buffer is durable (the capacitors program
    /// it at a cut), so every write, FUA included, is acknowledged from DRAM and a FLUSH has
    /// nothing to wait for.
    Protected,
    /// The write cache is off: every write is acknowledged once its NAND program is done.
    WriteThrough,
}

impl Controller {
    pub fn new(config: &DriveConfig, geometry: &Geometry) -> Controller {
        let unit_bytes = geometry.mapping_unit_bytes as u64;
        Controller {
            processor: Processor::new(&config.controller, unit_bytes),
            host: HostInterface::new(&config.host, &config.controller),
            buffer: WriteBuffer::new(config.ftl.write_buffer_bytes / unit_bytes),
            shape: Shape {
                unit: PowerOfTwo::new(unit_bytes),
                dies: geometry.dies,
                planes_per_die: geometry.planes_per_die,
                units_per_pu: geometry.units_per_pu,
                rain_period: geometry.rain_period,
                read_sector: config.nand.read_sector_bytes as u64,
            },
            slots: Vec::new(),
            free_slots: Vec::new(),
            in_device: 0,
            host_queue: VecDeque::new(),
            write_wait: VecDeque::new(),
            completions: Vec::new(),
            flush_waits: FlushWaits::default(),
            idle_since: SimTime::ZERO,
            faults: ReadFaults::new(&config.faults),
            overwrite_prefetch: UNMAPPED,
            link: config.power.as_ref().map(|p| {
                let idle = p.state_power_w(config.controller.dram_bytes, geometry.dies);
                Link::new(p, idle, LinkPolicy::None, SimTime::ZERO)
            }),
            front_end: SimDuration(config.controller.front_end_ns),
            ack: if !config.controller.write_cache {
                Acknowledge::WriteThrough
            } else if config.controller.power_loss_protection == PowerLossProtection::Full {
                Acknowledge::Protected
            } else {
                Acknowledge::Buffered
            },
            zones: config
                .placement
                .as_ref()
                .filter(|p| p.mode == crate::config::PlacementMode::Zns)
                .map(|p| {
                    let zg = p
                        .zone_geometry(geometry)
                        .expect("a validated zoned namespace");
                    Box::new(Zones::new(zg, unit_bytes, geometry.dies))
                }),
        }
    }

    /// Power off and on: every command, buffer and processor reservation is gone; the read
    /// faults (the NAND's state) stay.
    pub fn power_cycle(&mut self, config: &DriveConfig, geometry: &Geometry) {
        let faults = self.faults.take();
        let zones = self.zones.take();
        *self = Controller::new(config, geometry);
        self.faults = faults;
        if let Some(mut z) = zones {
            z.power_on();
            self.zones = Some(z);
        }
    }

    /// The mapping unit's bytes, to divide by.
    #[inline]
    pub fn unit(&self) -> PowerOfTwo {
        self.shape.unit
    }

    /// Commands submitted and not yet completed.
    pub fn outstanding(&self) -> usize {
        self.slots.len() - self.free_slots.len()
    }

    /// Whether commands completed since completions were last taken.
    #[inline]
    pub fn has_completions(&self) -> bool {
        !self.completions.is_empty()
    }

    pub fn drain_completions(&mut self) -> std::vec::Drain<'_, Completion> {
        self.completions.drain(..)
    }

    /// Hand the completions over by swapping buffers: `into` (empty) takes them, the
    /// controller keeps `into`'s allocation for the next ones. No copy.
    #[inline]
    pub fn swap_completions(&mut self, into: &mut Vec<Completion>) {
        debug_assert!(into.is_empty());
        std::mem::swap(&mut self.completions, into);
    }

    /// The logical units `[first, end)` a command covers: TRIM unmaps only whole units (the
    /// rest of a partly trimmed unit is data); reads and writes touch every unit they overlap.
    fn units_of(&self, io: &HostIo) -> (u32, u32) {
        let unit = self.shape.unit;
        if io.length_bytes == 0 {
            (0, 0)
        } else if io.kind == IoKind::Trim {
            let first = unit.quotient_ceil(io.offset_bytes) as u32;
            let end = unit.quotient(io.offset_bytes + io.length_bytes) as u32;
            (first, end.max(first))
        } else {
            (
                unit.quotient(io.offset_bytes) as u32,
                unit.quotient_ceil(io.offset_bytes + io.length_bytes) as u32,
            )
        }
    }

    /// A host command arrives now: it takes a slot and enters the device queue, or waits for
    /// one in the host's.
    pub fn submit(&mut self, io: HostIo, looked_ahead: bool, b: &mut Backend) {
        if self.zones.is_some() || io.kind == IoKind::ZoneAppend {
            return self.submit_zoned(io, looked_ahead, b);
        }
        let (first, end) = self.units_of(&io);
        self.take_slot(
            io,
            (first, end),
            (Status::Success, NO_ZONE, 0),
            looked_ahead,
            b,
        );
    }

    /// The command takes a slot and enters the device queue, or waits for one in the host's.
    #[inline(always)]
    pub(super) fn take_slot(
        &mut self,
        io: HostIo,
        (first, end): (u32, u32),
        (status, zone_slot, zone_group): (Status, u16, u16),
        looked_ahead: bool,
        b: &mut Backend,
    ) {
        let now = b.kernel.now();
        if end > first && !looked_ahead {
            b.ftl.prefetch_lookup(first);
        }
        // The map entry of the write submitted before this one has arrived by now: start
        // loading the block entry of the copy its admission will make stale.
        if self.overwrite_prefetch != UNMAPPED {
            b.ftl.prefetch_overwrite(self.overwrite_prefetch);
        }
        self.overwrite_prefetch = match io.kind {
            IoKind::Write if end > first && !looked_ahead => first,
            _ => UNMAPPED,
        };
        let slot = Slot {
            io,
            submitted: now,
            next_unit: first,
            end_unit: end,
            rmw_ready: now,
            failed: status != Status::Success,
            status,
            zone_slot,
            zone_group,
            looked_ahead,
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
            self.start(index, b.kernel);
        } else {
            self.host_queue.push_back(index);
        }
    }

    fn start(&mut self, slot: u32, kernel: &mut Kernel<Event>) {
        let now = kernel.now();
        // The first command after an idle stretch wakes the link from its power state.
        let wake = match (&mut self.link, self.in_device) {
            (Some(link), 0) => link.wake(now),
            _ => SimDuration(0),
        };
        self.in_device += 1;
        // The command reaches the firmware after the host's stack and the front end (both
        // overlap other commands' work), then queues for the processor.
        let read = self.slots[slot as usize].io.kind == IoKind::Read;
        let reaches = now + wake + self.host.driver + self.front_end;
        let done = self.processor.command(now, reaches, read);
        kernel.schedule_in_lane(super::LANE_DISPATCH, done, Event::Dispatch(slot));
    }

    /// The processor has taken up the command (event).
    pub fn dispatch(&mut self, slot: u32, b: &mut Backend) {
        let now = b.kernel.now();
        if let Some(die) = self.faults.as_mut().and_then(|f| f.die_failing(now)) {
            b.ftl.fail_die(die);
        }
        let s = self.slots[slot as usize];
        if s.failed {
            // Refused before anything changed (a zoned namespace's status): it goes back.
            let end = self.host.to_device(now, now, 0, true);
            b.kernel
                .schedule_in_lane(super::LANE_COMPLETE, end, Event::Complete(slot));
            return;
        }
        match s.io.kind {
            IoKind::Read => {
                b.ftl.counters.host_units_read += (s.end_unit - s.next_unit) as u64;
                self.read_units(slot, s.next_unit, s.end_unit, b);
            }
            IoKind::Write | IoKind::ZoneAppend => {
                if !s.looked_ahead {
                    b.ftl.prefetch_overwrite(s.next_unit);
                }
                let unit = self.shape.unit;
                // A partial first or last unit is read, merged and written whole.
                let head_partial = !unit.divides(s.io.offset_bytes);
                let tail_partial = !unit.divides(s.io.offset_bytes + s.io.length_bytes);
                if head_partial || tail_partial {
                    b.sched.begin_batch(slot, now);
                    if head_partial {
                        self.enqueue_reads(slot, s.next_unit, s.next_unit + 1, b);
                    }
                    if tail_partial && (s.end_unit - 1 != s.next_unit || !head_partial) {
                        self.enqueue_reads(slot, s.end_unit - 1, s.end_unit, b);
                    }
                    let Some(ready) = b.sched.end_batch(slot) else {
                        return; // continues in read_ready
                    };
                    self.slots[slot as usize].rmw_ready = ready;
                }
                self.write_wait.push_back(slot);
                self.admit_writes(b);
            }
            IoKind::Trim => {
                let (ftl, mut flash) = b.ftl_and_flash(&mut self.processor);
                for lba in s.next_unit..s.end_unit {
                    ftl.trim_unit(lba, s.io.tag, &mut flash);
                }
                if let Some(f) = self.faults.as_mut() {
                    f.rewritten(s.next_unit..s.end_unit);
                }
                let end = self.host.to_device(now, now, 0, true);
                b.kernel
                    .schedule_in_lane(super::LANE_COMPLETE, end, Event::Complete(slot));
            }
            IoKind::Flush if self.ack == Acknowledge::Protected => {
                // Everything acknowledged is durable already: the status goes back at once.
                let end = self.host.to_device(now, now, 0, true);
                b.kernel
                    .schedule_in_lane(super::LANE_COMPLETE, end, Event::Complete(slot));
            }
            IoKind::Flush => {
                let (ftl, mut flash) = b.ftl_and_flash(&mut self.processor);
                ftl.flush(&mut flash);
                self.wait_for_programs(slot, b);
            }
        }
    }

    /// What the seeded faults did so far, the FTL's program and erase failures included.
    pub fn fault_counters(&self, ftl: &Ftl) -> FaultCounters {
        let mut c = self.faults.as_ref().map(|f| f.counters).unwrap_or_default();
        let fc = &ftl.counters;
        c.program_failures = fc.program_failures;
        c.erase_failures = fc.erase_failures;
        c.grown_bad_blocks = fc.grown_bad_blocks;
        c
    }

    /// Logical units now unreadable (an uncorrectable read without RAIN, not yet rewritten).
    pub fn unreadable_units(&self) -> Vec<u32> {
        self.faults
            .as_ref()
            .map(|f| f.unreadable())
            .unwrap_or_default()
    }

    /// Host data replaced `first..end` outside the command path (an untimed fill; a secure
    /// erase replaces everything): those units read again.
    pub fn rewritten(&mut self, first: u32, end: u32) {
        if let Some(f) = self.faults.as_mut() {
            f.rewritten(first..end);
        }
    }

    pub fn secure_erased(&mut self) {
        if let Some(f) = self.faults.as_mut() {
            f.clear_unreadable();
        }
        self.buffer.empty();
    }

    /// All NAND data of a command is in the controller (event, or at once).
    pub fn read_ready(&mut self, slot: u32, b: &mut Backend) {
        let now = b.kernel.now();
        let s = self.slots[slot as usize];
        match s.io.kind {
            IoKind::Read => {
                let end = self.host.to_host(now, now, s.io.length_bytes, true);
                b.kernel
                    .schedule_in_lane(super::LANE_COMPLETE, end, Event::Complete(slot));
            }
            _ => {
                // Read-modify-write data is in: the write can take buffer space.
                self.slots[slot as usize].rmw_ready = now;
                self.write_wait.push_back(slot);
                self.admit_writes(b);
            }
        }
    }

    /// A host program on `die` ended (event): its `units` of buffer space are free, and the
    /// FLUSH/FUA commands and writes waiting for it may go on.
    pub fn program_done(&mut self, die: u32, units: u32, b: &mut Backend) {
        b.sched.host_program_done(die, units);
        {
            let (ftl, mut flash) = b.ftl_and_flash(&mut self.processor);
            ftl.host_program_done(die, &mut flash);
        }
        self.buffer.release(units as u64);
        self.release_flushes(b);
        self.admit_writes(b);
    }

    /// Move waiting writes into the buffer, in arrival order, as far as space allows.
    fn admit_writes(&mut self, b: &mut Backend) {
        let now = b.kernel.now();
        let unit = self.shape.unit;
        while let Some(&slot) = self.write_wait.front() {
            if self.buffer.free_units() == 0 || !b.ftl.host_may_write() {
                break;
            }
            let s = self.slots[slot as usize];
            let first_chunk = s.next_unit == unit.quotient(s.io.offset_bytes) as u32;
            let count = self.buffer.take((s.end_unit - s.next_unit) as u64) as u32;
            let bytes = (count as u64 * unit.get()).min(s.io.length_bytes);
            let crossed = self
                .host
                .to_device(now, s.rmw_ready.max(now), bytes, first_chunk);
            // The data streams on through the write data path, which garbage collection's
            // copies share: it is in the buffer when both are done. The path carries the
            // units whole (one written in part is merged with the rest of it).
            let through = self
                .processor
                .write_path_duration(count as u64 * unit.get());
            let start = SimTime(crossed.0.saturating_sub(through.0)).max(s.rmw_ready.max(now));
            let arrived = crossed.max(self.processor.write_path(now, start, through));
            let (ftl, mut flash) = b.ftl_and_flash(&mut self.processor);
            let first = HostWrite {
                lba: s.next_unit,
                tag: s.io.tag,
                data_ready: arrived,
                pid: s.io.placement,
            };
            let zoned = s.zone_slot != NO_ZONE;
            if zoned {
                ftl.select_zone(s.zone_slot as u32, s.zone_group as u32);
            }
            let written = ftl.write_units(first, count, &mut flash);
            if zoned {
                zoned::zone_written(self.zones.as_deref_mut(), ftl, &mut flash, &s, written);
            }
            if let Some(f) = self.faults.as_mut() {
                f.rewritten(s.next_unit..s.next_unit + written);
            }
            let s = &mut self.slots[slot as usize];
            s.next_unit += written;
            if written < count {
                // The FTL makes the host wait (the erase hold): the rest is offered again
                // when a host program is done.
                self.buffer.release((count - written) as u64);
                break;
            }
            if s.next_unit == s.end_unit {
                self.write_wait.pop_front();
                let to_nand = match self.ack {
                    Acknowledge::Buffered => s.io.fua,
                    Acknowledge::Protected => false,
                    Acknowledge::WriteThrough => true,
                };
                if to_nand {
                    let (ftl, mut flash) = b.ftl_and_flash(&mut self.processor);
                    ftl.flush(&mut flash);
                    self.slots[slot as usize].rmw_ready = arrived;
                    self.wait_for_programs(slot, b);
                } else {
                    // Acknowledged once the data is in the DRAM buffer: the write path
                    // on to the NAND (ECC encode, parity, channel DMA) is after it.
                    b.kernel
                        .schedule_in_lane(super::LANE_COMPLETE, crossed, Event::Complete(slot));
                }
            }
        }
        let (ftl, mut flash) = b.ftl_and_flash(&mut self.processor);
        ftl.settle_hold(&mut flash);
    }

    /// Complete `slot` once every host program queued so far has finished.
    fn wait_for_programs(&mut self, slot: u32, b: &mut Backend) {
        let targets = b.sched.host_programs_queued();
        self.flush_waits.add(slot, targets);
        self.release_flushes(b);
    }

    /// Complete the flushes (and FUA writes) whose host programs are all done. Checked at
    /// every host program's end, when mostly none waits: that check is inline.
    #[inline]
    fn release_flushes(&mut self, b: &mut Backend) {
        if !self.flush_waits.is_empty() {
            self.release_reached_flushes(b);
        }
    }

    #[inline(never)]
    fn release_reached_flushes(&mut self, b: &mut Backend) {
        let now = b.kernel.now();
        let sched = &*b.sched;
        let mut released = Vec::new();
        self.flush_waits.release_reached(
            |t| sched.host_programs_done_reach(t),
            |slot| released.push(slot),
        );
        for slot in released {
            let s = self.slots[slot as usize];
            let at = if s.io.kind == IoKind::Write {
                s.rmw_ready.max(now)
            } else {
                now
            };
            let end = if s.io.kind == IoKind::Flush {
                self.host.to_device(now, at, 0, true)
            } else {
                at
            };
            b.kernel
                .schedule_in_lane(super::LANE_COMPLETE, end, Event::Complete(slot));
        }
    }

    /// The controller's own invariants (cheap: checked after every step with the `verify`
    /// feature). An error says which failed.
    pub fn check(&self) -> Result<(), String> {
        let queued = self.host_queue.len() as u32;
        if self.in_device as usize + queued as usize + self.free_slots.len() != self.slots.len() {
            return Err(format!(
                "slots: {} in the device + {queued} in the host queue + {} free != {}",
                self.in_device,
                self.free_slots.len(),
                self.slots.len()
            ));
        }
        if self.in_device > self.host.queue_depth_max {
            return Err(format!(
                "{} commands in the device, queue depth {}",
                self.in_device, self.host.queue_depth_max
            ));
        }
        if queued > 0 && self.in_device < self.host.queue_depth_max {
            return Err("commands wait in the host queue with room in the device".into());
        }
        if self.buffer.free_units() > self.buffer.units {
            return Err(format!(
                "write buffer: {} free of {}",
                self.buffer.free_units(),
                self.buffer.units
            ));
        }
        Ok(())
    }

    /// The command completes (event): the host sees it; a command waiting in the host queue
    /// takes its place in the device.
    pub fn complete(&mut self, slot: u32, kernel: &mut Kernel<Event>) {
        let now = kernel.now();
        let s = self.slots[slot as usize];
        if s.status == Status::UnrecoveredReadError {
            if let Some(f) = self.faults.as_mut() {
                f.counters.failed_reads += 1;
            }
        }
        let status = s.status;
        self.completions.push(Completion {
            io: s.io,
            submitted: s.submitted,
            completed: now,
            failed: s.failed,
            status,
        });
        self.free_slots.push(slot);
        self.in_device -= 1;
        if let Some(next) = self.host_queue.pop_front() {
            self.start(next, kernel);
        }
        if self.in_device == 0 {
            self.idle_since = now;
            if let Some(link) = &mut self.link {
                link.idle(now);
            }
        }
    }
}
