//! The flash translation layer: a flat page-level map, open blocks per die, garbage collection,
//! TRIM, RAIN parity placement and wear levelling.
//!
//! The FTL decides *where* data goes and *which* flash operations happen; it never looks at
//! time. Every operation it decides goes to a [`NandSink`], which the device turns into timed
//! work on dies and buses (and which is a no-op for the untimed fast fill). So the same
//! sequence of host writes produces the same FTL state whether it is timed or not.
//!
//! Modules follow the firmware's parts: [`map`] (the flat L2P table, its reverse and the
//! map-change journal a data store follows), placement here (open blocks, program units,
//! RAIN parity), [`gc`] (when to collect, which victim, the copying), [`persist`] (the
//! metadata the firmware writes so the map survives a power cut) and [`verify`].
//!
//! Layout: a die is divided into blocks (one erase block in each plane, erased together); a
//! block into program units (PU: one page in each plane, programmed together); a PU into
//! mapping units (4 KiB by default). A physical unit number (ppn) is
//! `(die * blocks_per_die + block) * units_per_block + pu * units_per_pu + slot`.

mod blocks;
mod collector;
mod frontier;
mod gc;
mod hold;
mod map;
mod mount;
pub(crate) mod persist;
mod place;
pub mod placement;
mod query;
mod verify;
mod victim;
mod zoned;

use crate::config::{FtlConfig, GcForegroundMode, Geometry};
use crate::divisor::Divisor;
use crate::rng::Rng;
use crate::time::SimTime;
use blocks::Blocks;
pub use collector::nominal_pace;
use collector::Collector;
use frontier::{Frontiers, Stream};
pub use map::{Lba, Map, Ppn, Unmapped};
pub use mount::{MountReport, Recovered};
pub use persist::Persistence;
pub use placement::{
    FdpEvent, FdpEventKind, HandleStatistics, MediaStatistics, PlacementReport, RuhStatus,
    NO_PLACEMENT,
};

/// Marks an unmapped logical unit (in `l2p`) or a physical unit holding no valid data (`p2l`).
pub const UNMAPPED: u32 = u32::MAX;
const _: () = assert!(UNMAPPED == crate::nand::NO_UNIT);
const NONE: u32 = u32::MAX;

/// What a program operation carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProgramKind {
    /// Host data from the write buffer; `host_units` of it free buffer space when done.
    Host,
    /// Data moved by garbage collection or static wear levelling.
    Gc,
    /// RAIN parity.
    Parity,
    /// Firmware metadata: map journal, map checkpoint pages, block summaries.
    Meta,
}

/// One program operation as the FTL decides it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Program {
    pub kind: ProgramKind,
    /// Buffered host units in it (they free write-buffer space when the program ends).
    pub host_units: u32,
    /// Pages programmed together, one per plane.
    pub planes: u32,
    /// Host programs: when the last host unit in it had arrived in DRAM (the context the
    /// caller gave with the write); `SimTime::ZERO` for the others.
    pub data_ready: SimTime,
    /// First physical unit of the PU programmed (host, GC and parity programs); UNMAPPED for
    /// metadata. What a power cut before the program completes would lose.
    pub first_ppn: u32,
}

/// A host write of one mapping unit, with its context.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HostWrite {
    pub lba: u32,
    /// The host command's tag, recorded in the map-change journal.
    pub tag: u64,
    /// When the unit's data is in the controller's DRAM.
    pub data_ready: SimTime,
    /// The placement identifier the command carried ([`NO_PLACEMENT`]: none).
    pub pid: u16,
}

impl HostWrite {
    /// A write with no timing context (untimed fills, tests).
    pub fn untimed(lba: u32) -> HostWrite {
        HostWrite {
            lba,
            tag: 0,
            data_ready: SimTime::ZERO,
            pid: NO_PLACEMENT,
        }
    }
}

/// One read of garbage collection: the valid units of one source PU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GcRead {
    /// Planes the units span (one multi-plane read).
    pub planes: u32,
    /// Mapping units read.
    pub units: u32,
    /// The first and last of them (their pages' types time the read).
    pub first_ppn: u32,
    pub last_ppn: u32,
}

/// Receives the flash operations the FTL decides, in decision order.
pub trait NandSink {
    /// Program one PU (or, for metadata, `program.planes` pages) on `die`.
    fn program(&mut self, die: u32, program: Program);
    /// Read `units` mapping units of one PU on `die` for garbage collection.
    fn gc_read(&mut self, die: u32, read: GcRead);
    /// Erase one block of `die`; `gc_victim` for a collected victim (not a metadata block).
    fn erase(&mut self, die: u32, gc_victim: bool);
    /// Whether the operations run in time (a host program is done only when its
    /// `ProgramDone` comes), not on the NAND at once (the untimed fill).
    fn timed(&self) -> bool {
        false
    }
    /// The simulated time now, in ns since power-on (0 where nothing is timed): what the
    /// FDP events log stamps its events with.
    fn now_ns(&self) -> u64 {
        0
    }
    /// Whether `die` has garbage-collection work queued (reads, programs or the victim's
    /// erase not yet started): what `ftl.host_die_choice = "skip-collecting"` avoids.
    fn die_collecting(&self, _die: u32) -> bool {
        false
    }
}

/// A sink that ignores every operation: the untimed fast fill.
pub struct NullSink;

impl NandSink for NullSink {
    fn program(&mut self, _: u32, _: Program) {}
    fn gc_read(&mut self, _: u32, _: GcRead) {}
    fn erase(&mut self, _: u32, _: bool) {}
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum BlockState {
    /// Erased, in the free pool.
    Free,
    /// Being written by a stream.
    Open,
    /// Fully written; a candidate victim.
    Sealed,
    /// Being collected.
    Victim,
    /// Retired after a program or erase failure (a grown bad block): never written again.
    Retired,
}

/// Counters of FTL activity, in mapping units unless named otherwise.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct FtlCounters {
    /// Program and erase failures; blocks retired for them; units written again after a
    /// failed program.
    pub program_failures: u64,
    pub erase_failures: u64,
    pub grown_bad_blocks: u64,
    pub program_fail_rewrites: u64,
    /// Failures past the die's retirement limit: the block stayed in service.
    pub failed_blocks_kept: u64,
    pub host_units_written: u64,
    pub host_units_read: u64,
    pub host_units_trimmed: u64,
    pub gc_units_copied: u64,
    pub wear_leveling_units_copied: u64,
    pub pu_programs_host: u64,
    pub pu_programs_gc: u64,
    pub pu_programs_parity: u64,
    /// Units left empty when a partial PU was programmed on FLUSH.
    pub padding_units: u64,
    pub blocks_erased: u64,
    pub gc_victims: u64,
    pub gc_victim_valid_units: u64,
    pub wear_leveling_victims: u64,
    /// Metadata programs (one per `planes` metadata pages) and what they held, in pages.
    pub pu_programs_meta: u64,
    /// TRIMs' share of `pu_programs_meta`: metadata programs made while journalling a TRIM's
    /// map changes (a page goes to the change that filled it; writes and trims share pages).
    /// Write amplification leaves them out and reports them apart.
    pub pu_programs_meta_trim: u64,
    pub meta_journal_pages: u64,
    pub meta_map_pages: u64,
    pub meta_summary_pages: u64,
    pub meta_blocks_erased: u64,
    /// Map checkpoints taken.
    pub map_checkpoints: u64,
    /// Times deferred collection ran drive-wide.
    pub gc_deferred_rounds: u64,
    /// Victims whose erase waited for host programs (the erase hold, [`hold`]).
    pub gc_erases_held: u64,
    /// Held victims erased early because their die ran out of free blocks.
    pub gc_erase_holds_broken: u64,
}

/// One change of the logical-to-physical map, for a consumer that keeps data with the
/// physical units (the NBD emulator): `lba` left `old_ppn` (UNMAPPED if it had none) for
/// `new_ppn` (UNMAPPED on TRIM). `tag` is the host command's tag for host writes and TRIMs
/// ([`HostWrite::tag`]), [`TAG_RELOCATION`] for garbage collection and wear levelling.
/// A data block's erase is journalled too ([`TAG_ERASE`]: `old_ppn` is the block's first
/// unit, `lba` and `new_ppn` UNMAPPED), so a store that keeps out-of-band records clears them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MapChange {
    pub lba: u32,
    pub old_ppn: u32,
    pub new_ppn: u32,
    pub tag: u64,
}

/// The tag of map changes made by garbage collection or wear levelling (data moves).
pub const TAG_RELOCATION: u64 = u64::MAX;

/// The tag of a data block's erase in the map-change journal.
pub const TAG_ERASE: u64 = u64::MAX - 1;

/// The tag of the map changes a zone reset makes (its units emptied).
pub const TAG_ZONE_RESET: u64 = u64::MAX - 2;

/// In a [`TAG_ERASE`] change's `new_ppn`: the block was retired (a grown bad block), not
/// erased. A store keeps that with the block's erase count ([`RETIRED_BIT`]).
pub const BLOCK_RETIRED: u32 = u32::MAX - 2;

/// In erase counts as a store keeps them (and [`Ftl::restore`] takes them): the block is retired.
pub const RETIRED_BIT: u32 = 1 << 31;

/// A host write's change in two parts, when collection inside that write erased the block
/// of its old copy (the write had just made that copy stale, the block's last valid unit):
/// first `old_ppn -> HELD` (take the old copy, before the erase), then `HELD -> new_ppn`
/// (after it; the new unit may sit in the very block just erased and reused).
pub const HELD: u32 = u32::MAX - 1;

/// The geometry's divisors the hot paths divide physical unit numbers by.
#[derive(Clone, Copy, Debug)]
struct Divisors {
    units_per_block: Divisor,
    units_per_pu: Divisor,
    units_per_page: Divisor,
    blocks_per_die: Divisor,
    /// Garbage collection's map look-ahead per die, whole PUs (`gc::gc_ahead_units`).
    gc_ahead_units: Divisor,
}

/// The flash translation layer of one drive.
pub struct Ftl {
    pub geometry: Geometry,
    div: Divisors,
    /// Garbage collection's state: victim policy and candidates, schedule, each die's victim.
    collector: Collector,
    /// Blocks 0..this of each die are held back (defect reserve, then the metadata blocks)
    /// and never hold user data.
    reserved_blocks_per_die: u32,
    /// The map: L2P and P2L, valid counts per block, PU sequence numbers, the journal of map
    /// changes.
    map: Map,
    /// Each block's state and wear, the free pools and the collection candidates: the one
    /// writer of a block's state.
    blocks: Blocks,
    /// Each die's open block and PU for each stream: the one writer of a frontier.
    frontiers: Frontiers,
    /// Die receiving the next host PU (host data is striped PU by PU across dies).
    host_die: u32,
    /// The host stream the next host unit goes to (with placement, the current write's
    /// handle; else the one host stream).
    host_stream: Stream,
    /// Host data of a stream is striped over a reclaim group's dies (all of them without
    /// placement).
    dies_per_group: u32,
    /// Host-directed placement (`[placement]`), if the drive has it.
    placement: Option<Box<placement::Placement>>,
    /// A zoned namespace's streams, if the drive is zoned (no collection then).
    zoned: Option<Box<zoned::ZoneStreams>>,
    /// `ftl.host_die_choice = "skip-collecting"`: the next host die is one with no
    /// collection queued among this many in turn (`ftl.host_die_candidates`), if there is
    /// one; 1: the next in turn (round robin).
    host_die_candidates: u32,
    sequence: u32,
    /// Room for one PU's physical unit numbers (garbage collection's valid units).
    scratch: Vec<u32>,
    pub counters: FtlCounters,
    /// The firmware's metadata writes (map journal, checkpoints, block summaries).
    pub persist: Persistence,
    /// Program and erase failures (see [`crate::faults`]): rates, their own seeded stream, and
    /// per block whether it is to be retired once its valid data is collected.
    program_fail: f64,
    erase_fail: f64,
    fault_rng: Rng,
    /// A failed die (NONE: none): host data goes to the others.
    failed_die: u32,
    /// Blocks whose erase waits for host programs (drives without full power-loss
    /// protection; see [`hold`]).
    hold: hold::EraseHold,
}

impl Ftl {
    /// Record every change of the map from now on, for a consumer that keeps data with the
    /// physical units (the NBD store); what was recorded before is dropped.
    pub fn record_map_changes(&mut self) {
        self.map.record_changes();
    }

    /// Record no more map changes (the drive powers off).
    pub fn stop_map_changes(&mut self) {
        self.map.stop_changes();
    }

    /// The map changes recorded since the last take, in order (empty when not recording).
    pub fn take_map_changes(&mut self) -> Vec<MapChange> {
        self.map.take_changes()
    }

    /// The same as [`Ftl::take_map_changes`], keeping the buffer for the next changes.
    pub fn drain_map_changes(&mut self) -> impl Iterator<Item = MapChange> + '_ {
        self.map.drain_changes()
    }

    /// The map changes recorded and not yet taken.
    pub fn map_changes(&self) -> &[MapChange] {
        self.map.changes()
    }

    /// Build the FTL of a validated configuration; every table is allocated here, once.
    pub fn new(cfg: &FtlConfig, geometry: &Geometry, seed: u64) -> Ftl {
        let g = geometry.clone();
        let reserved = cfg.reserved_blocks_per_die + cfg.map_blocks_per_die;
        Ftl {
            collector: Collector::new(cfg, &g, seed),
            reserved_blocks_per_die: reserved,
            map: Map::new(&g),
            blocks: Blocks::new(cfg, &g, reserved),
            frontiers: Frontiers::new(&g, 1),
            host_die: 0,
            host_stream: Stream::HOST,
            dies_per_group: g.dies,
            placement: None,
            zoned: None,
            host_die_candidates: match cfg.host_die_choice {
                crate::config::HostDieChoice::RoundRobin => 1,
                crate::config::HostDieChoice::SkipCollecting if cfg.host_die_candidates == 0 => {
                    geometry.dies
                }
                crate::config::HostDieChoice::SkipCollecting => {
                    cfg.host_die_candidates.min(geometry.dies)
                }
            },
            sequence: 0,
            scratch: vec![0; g.units_per_pu as usize],
            counters: FtlCounters::default(),
            persist: Persistence::new(cfg, &g),
            program_fail: 0.0,
            erase_fail: 0.0,
            fault_rng: Rng::new(0),
            failed_die: NONE,
            hold: hold::EraseHold::new((g.dies * g.blocks_per_die) as usize, g.dies as usize, 1),
            div: Divisors {
                units_per_block: Divisor::new(g.units_per_block),
                units_per_pu: Divisor::new(g.units_per_pu),
                units_per_page: Divisor::new(g.units_per_page),
                blocks_per_die: Divisor::new(g.blocks_per_die),
                gc_ahead_units: Divisor::new(gc::gc_ahead_units(g.dies, g.units_per_pu)),
            },
            geometry: g,
        }
    }

    // ----- host operations -----------------------------------------------------------------

    /// Write one logical unit: the old copy becomes stale, the new one goes to the host
    /// stream's open PU on the current die. Full PUs are programmed, striped across dies.
    #[inline(always)]
    pub fn write_unit<S: NandSink>(&mut self, w: HostWrite, sink: &mut S) {
        let lba = Lba(w.lba);
        debug_assert!((lba.0 as u64) < self.geometry.logical_units);
        let old = self.map.lookup(lba);
        self.invalidate(lba);
        let mark = self.map.changes_len();
        let journal = self.map.records_changes();
        let die = self.host_die;
        let stream = self.host_stream;
        self.frontiers.host_data_ready(die, stream, w.data_ready);
        if journal && self.hold.enabled && !old.is_none() && sink.timed() {
            self.hold.pin(die, stream, self.block_of(old.0));
        }
        self.append(die, stream, lba, sink);
        self.counters.host_units_written += 1;
        if journal {
            self.map.record_host(lba, old, w.tag, mark);
            self.settle_hold(sink);
        }
        self.map_updated(lba, sink);
    }

    /// Write `count` logical units from `first.lba` on, of one host command (its tag and data
    /// arrival in `first`), in order: exactly what `write_unit` on each does. Unless the map's
    /// changes are recorded (`Map::records_changes`: the NBD store's journal, which takes
    /// `write_unit` throughout), the units going into an open host PU are written as one run
    /// ([`Ftl::write_run`]); a unit that needs a new block (allocation may collect) goes
    /// alone, and so does a lone unit (a random write's: `write_unit` is cheaper for one).
    ///
    /// Returns the units written: all of them, unless the erase hold ([`hold`]) makes the
    /// host wait (a die needs a block for host data, has fewer than two free, and collecting
    /// could only give it one by erasing the superseded copy of host data not yet
    /// programmed). The open PUs holding such data are then programmed at once; the caller
    /// offers the rest again once a host program is done.
    #[inline(always)]
    pub fn write_units<S: NandSink>(&mut self, first: HostWrite, count: u32, sink: &mut S) -> u32 {
        let HostWrite {
            lba: first,
            tag,
            data_ready,
            pid,
        } = first;
        if self.placement.is_some() {
            self.select_handle(pid, sink.now_ns());
        }
        let end = first + count;
        let mut lba = first;
        // The erase hold can make the host wait only where data is kept (a journal) and time runs.
        let may_wait = self.hold.enabled && self.map.records_changes() && sink.timed();
        let runs = count > 1 && !self.map.records_changes();
        while lba < end {
            if may_wait && self.host_must_wait(sink) {
                self.program_pinned_pus(sink);
                self.handle_wrote(lba - first);
                return lba - first;
            }
            if runs {
                let ob = self.frontiers.get(self.host_die, self.host_stream);
                let run = (self.geometry.units_per_pu - ob.fill).min(end - lba);
                if run > 1 && ob.block != NONE {
                    self.write_run(lba..lba + run, data_ready, sink);
                    lba += run;
                    continue;
                }
            }
            self.write_unit(
                HostWrite {
                    lba,
                    tag,
                    data_ready,
                    pid,
                },
                sink,
            );
            lba += 1;
        }
        self.handle_wrote(count);
        count
    }

    /// `write_unit` of each of `lbas` (the map's changes not recorded), which all go into the
    /// open PU of the host die (there is one, with room for them all): kind by kind, not unit
    /// by unit. The old copies go stale, the run is mapped to the PU's next units, the
    /// firmware's map journal ([`persist`]) notes them, and when they fill the PU it is
    /// programmed before the last unit's note, as one at a time would. The order within a kind
    /// is theirs, and between kinds changes nothing: going stale touches the old copies, their
    /// blocks' counts and victim buckets (the open block is in none), mapping the new units
    /// and the open block's count, and only the program and the journal call the sink.
    fn write_run<S: NandSink>(
        &mut self,
        lbas: std::ops::Range<u32>,
        data_ready: SimTime,
        sink: &mut S,
    ) {
        let (die, stream) = (self.host_die, self.host_stream);
        let n = lbas.end - lbas.start;
        if self.map.any_mapped(lbas.clone()) {
            for l in lbas.clone() {
                self.invalidate(Lba(l));
            }
        }
        let (ppn, block, full) = self.frontiers.take_host_run(die, stream, n, data_ready);
        self.map.map_run(Lba(lbas.start), ppn, n, block);
        let before_program = lbas.end - full as u32;
        self.counters.host_units_written += (before_program - lbas.start) as u64;
        if self.persist.enabled() {
            self.persist
                .note_updates(lbas.start..before_program, &mut self.counters, sink);
        }
        if full {
            self.program_pu(die, stream, sink);
            self.counters.host_units_written += 1;
            self.map_updated(Lba(before_program), sink);
        }
    }

    /// TRIM one logical unit: it maps to nothing and reads as zeros. `tag` is the command's.
    pub fn trim_unit<S: NandSink>(&mut self, lba: u32, tag: u64, sink: &mut S) {
        let lba = Lba(lba);
        let old = self.map.lookup(lba);
        if !old.is_none() {
            self.invalidate(lba);
            self.counters.host_units_trimmed += 1;
            self.map.record(lba, old, tag);
            let before = self.counters.pu_programs_meta;
            self.map_updated(lba, sink);
            self.counters.pu_programs_meta_trim += self.counters.pu_programs_meta - before;
        }
    }

    /// The map entry of `lba` changed: the firmware journals it (and checkpoints the map
    /// when the journal is long enough).
    #[inline]
    fn map_updated<S: NandSink>(&mut self, lba: Lba, sink: &mut S) {
        if self.persist.enabled() {
            self.persist.note_update(lba.0, &mut self.counters, sink);
        }
    }

    /// Program every partially filled host PU now (padding the rest), so that all
    /// acknowledged data is on the NAND: FLUSH and FUA.
    pub fn flush<S: NandSink>(&mut self, sink: &mut S) {
        self.program_partial_host_pus(sink, |_, _| true);
    }

    /// Program the partly filled host PU of each die `pick` names (padding the rest).
    fn program_partial_host_pus<S: NandSink>(
        &mut self,
        sink: &mut S,
        pick: impl Fn(&hold::EraseHold, u32) -> bool,
    ) {
        for die in 0..self.geometry.dies {
            if !pick(&self.hold, die) {
                continue;
            }
            for h in 0..self.frontiers.host_streams() {
                self.program_padded(die, Stream::Host(h as u16), sink);
            }
        }
    }

    /// Program `stream`'s partly filled PU on `die`, if it has one, padding the rest.
    fn program_padded<S: NandSink>(&mut self, die: u32, stream: Stream, sink: &mut S) {
        let ob = *self.frontiers.get(die, stream);
        if ob.block != NONE && ob.fill > 0 {
            self.counters.padding_units += (self.geometry.units_per_pu - ob.fill) as u64;
            self.program_pu(die, stream, sink);
        }
    }

    /// Power off: no program is in flight any more, nothing is held (a held victim holds
    /// nothing valid; power-on finds it so).
    pub fn power_off(&mut self) {
        self.hold.reset();
    }

    /// Every block erased, the map empty. Erase counts go up for blocks that held data.
    /// Not journalled: a data consumer drops everything it holds.
    pub fn secure_erase(&mut self) {
        self.map.clear(true);
        self.host_die = 0;
        self.persist.reset();
        self.hold.reset();
        self.counters.grown_bad_blocks += self.blocks.erase_all();
        self.collector.reset();
        self.frontiers.reset();
        self.placement_reset(false);
    }

    /// A crypto erase: the media key is replaced, so every unit on the NAND is noise. Every
    /// mapped unit goes stale (reads return zeros); the blocks keep their state and are
    /// erased when the collector takes them (they hold nothing valid, so nothing is copied).
    /// Not journalled. Returns the units that were mapped. The scan ends at the last mapped
    /// unit: a fresh drive's map is not read at all (reading it would map its untouched pages
    /// to the kernel's zero page, which the fill after it must then copy away).
    pub fn crypto_erase(&mut self) -> u64 {
        let mapped = self.map.mapped_units();
        let mut lba = 0;
        while self.map.mapped_units() > 0 && lba < self.geometry.logical_units as u32 {
            if !self.map.lookup(Lba(lba)).is_none() {
                self.invalidate(Lba(lba));
            }
            lba += 1;
        }
        mapped
    }

    // ----- fills and verification ----------------------------------------------------------

    /// Write logical units `first..first + count` in order without timing: the state a timed
    /// sequential fill of the same range reaches (see `device` tests for the equivalence). As
    /// one command of them all: [`Ftl::write_units`] maps a program unit's worth at a time,
    /// exactly as `write_unit` on each would.
    pub fn fill_untimed(&mut self, first: u32, count: u32) {
        let written = self.write_units(HostWrite::untimed(first), count, &mut NullSink);
        debug_assert_eq!(written, count, "an untimed fill never waits");
    }
}

#[cfg(test)]
mod placement_tests;
#[cfg(test)]
mod tests;
