//! The controller's processor: the firmware's one command processor, shared by host commands
//! and garbage collection.
//!
//! The write data path (`controller.write_mb_per_s`) is the controller's too: host writes and
//! the units garbage collection copies share it, so heavy collection takes write bandwidth.
//! Both cross it in whole mapping units: a host write of part of a unit is merged in the
//! buffer with the rest of the unit, and the whole unit is encoded and sent to the NAND.
//!
//! Each host command costs `controller.command_ns` (which caps IOPS at 1e9 / command_ns), plus
//! `read_extra_ns` for a read or `write_extra_ns` for a write (trims and flushes cost what a
//! write does). Each
//! mapping unit garbage collection copies costs `controller.gc_copy_ns_per_unit` once its data
//! is in the controller (validity check against the map, ECC decode and re-encode, the map
//! update), and each victim `controller.gc_victim_ns`. All of it queues for the same
//! processor, so a drive whose collection copies much spends its processor on it and admits
//! fewer host commands: the mechanism behind the low, flat steady state of client drives of
//! this generation (docs/model.md). The processor's timeline keeps gaps: work decided for later
//! (a copy whose NAND read ends in the future) leaves the time before it to commands decided
//! afterwards.

use crate::config::ControllerConfig;
use crate::time::{SimDuration, SimTime, TransferRate};
use crate::timeline::GapTimeline;

#[derive(Clone, Debug)]
pub struct Processor {
    timeline: GapTimeline,
    gc_copy_per_unit: SimDuration,
    gc_victim: SimDuration,
    read_command: SimDuration,
    write_command: SimDuration,
    /// The write data path (buffer, ECC encode, RAIN parity, DMA to the channels): host
    /// writes and every unit garbage collection copies cross it, at `controller.write_mb_per_s`
    /// (0: no limit). Its own timeline, beside the processor's.
    write_path: GapTimeline,
    write_path_rate: TransferRate,
    /// Processor time spent on garbage collection, nanoseconds.
    pub gc_busy_ns: u64,
}

impl Processor {
    pub fn new(cfg: &ControllerConfig, unit_bytes: u64) -> Processor {
        // Every reservation on the processor lasts at least this long (a command, one unit's
        // copy, a victim's bookkeeping; 0 when one of them costs nothing).
        let mut shortest = cfg.command_ns + cfg.read_extra_ns.min(cfg.write_extra_ns);
        for per in [cfg.gc_copy_ns_per_unit, cfg.gc_victim_ns] {
            if per > 0 {
                shortest = shortest.min(per);
            }
        }
        let mut write_path_rate = TransferRate::new((cfg.write_mb_per_s.max(0.0) * 1e6) as u64);
        // Every crossing of the write path is of whole mapping units (a host write's, merged
        // with what it does not overwrite; a copy's), so gaps shorter than one unit's are
        // never used.
        let write_path_unit = if write_path_rate.bytes_per_s() == 0 {
            SimDuration(0)
        } else {
            write_path_rate.duration(unit_bytes)
        };
        Processor {
            timeline: GapTimeline::with_min_duration(SimDuration(shortest)),
            gc_copy_per_unit: SimDuration(cfg.gc_copy_ns_per_unit),
            gc_victim: SimDuration(cfg.gc_victim_ns),
            read_command: SimDuration(cfg.command_ns + cfg.read_extra_ns),
            write_command: SimDuration(cfg.command_ns + cfg.write_extra_ns),
            write_path: GapTimeline::with_min_duration(write_path_unit),
            write_path_rate,
            gc_busy_ns: 0,
        }
    }

    /// The firmware takes up a host command that reaches it at `earliest` (decided at `now`);
    /// returns when it is processed. Reads and writes each add their own extra
    /// (`controller.read_extra_ns`, `write_extra_ns`) to `command_ns`.
    pub fn command(&mut self, now: SimTime, earliest: SimTime, read: bool) -> SimTime {
        let d = if read {
            self.read_command
        } else {
            self.write_command
        };
        self.timeline.reserve(now, earliest, d) + d
    }

    /// `units` copied units whose data is in the controller from `earliest`; returns when the
    /// firmware has processed them (their program may start).
    pub fn gc_copy(&mut self, now: SimTime, earliest: SimTime, units: u32) -> SimTime {
        if self.gc_copy_per_unit.0 == 0 {
            return earliest;
        }
        let d = SimDuration(self.gc_copy_per_unit.0 * units as u64);
        self.gc_busy_ns += d.0;
        self.timeline.reserve(now, earliest, d) + d
    }

    /// Data that takes `d` on the write data path ([`Processor::write_path_duration`]) crosses
    /// it, no earlier than `earliest`; returns when it is through (at once where the path has
    /// no limit).
    pub fn write_path(&mut self, now: SimTime, earliest: SimTime, d: SimDuration) -> SimTime {
        if self.write_path_rate.bytes_per_s() == 0 {
            return earliest;
        }
        self.write_path.reserve(now, earliest, d) + d
    }

    /// How long `bytes` take on the write data path (zero where it has no limit).
    pub fn write_path_duration(&mut self, bytes: u64) -> SimDuration {
        if self.write_path_rate.bytes_per_s() == 0 {
            SimDuration(0)
        } else {
            self.write_path_rate.duration(bytes)
        }
    }

    /// Bookkeeping of one collected victim, from `now`.
    pub fn gc_victim(&mut self, now: SimTime) {
        if self.gc_victim.0 > 0 {
            self.gc_busy_ns += self.gc_victim.0;
            self.timeline.reserve(now, now, self.gc_victim);
        }
    }

    /// Processor time reserved so far (host commands and collection), nanoseconds.
    pub fn busy_ns(&self) -> u64 {
        self.timeline.busy_ns_total
    }
}
