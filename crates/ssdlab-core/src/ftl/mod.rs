//! The flash translation layer: a flat page-level map, open blocks per die, garbage collection,
//! TRIM, RAIN parity placement and wear levelling.
//!
//! The FTL decides *where* data goes and *which* flash operations happen; it never looks at
//! time. Every operation it decides goes to a [`NandSink`], which the device turns into timed
//! work on dies and buses (and which is a no-op for the untimed fast fill). So the same
//! sequence of host writes produces the same FTL state whether it is timed or not.
//!
//! Layout: a die is divided into blocks (one erase block in each plane, erased together); a
//! block into program units (PU: one page in each plane, programmed together); a PU into
//! mapping units (4 KiB by default). A physical unit number (ppn) is
//! `(die * blocks_per_die + block) * units_per_block + pu * units_per_pu + slot`.

mod victim;

use crate::config::{FtlConfig, GcForegroundMode, GcPolicy, Geometry};
use crate::rng::Rng;
use std::collections::VecDeque;
use victim::{Buckets, FreePool};

/// Marks an unmapped logical unit (in `l2p`) or a physical unit holding no valid data (`p2l`).
pub const UNMAPPED: u32 = u32::MAX;
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
}

/// Receives the flash operations the FTL decides, in decision order.
pub trait NandSink {
    /// Program one PU on `die`. `host_units` is the number of buffered host units in it.
    fn program(&mut self, die: u32, kind: ProgramKind, host_units: u32);
    /// Read `units` mapping units of one PU on `die` for garbage collection.
    fn gc_read(&mut self, die: u32, planes: u32, units: u32);
    /// Erase one block of `die`.
    fn erase(&mut self, die: u32);
}

/// A sink that ignores every operation: the untimed fast fill.
pub struct NullSink;

impl NandSink for NullSink {
    fn program(&mut self, _: u32, _: ProgramKind, _: u32) {}
    fn gc_read(&mut self, _: u32, _: u32, _: u32) {}
    fn erase(&mut self, _: u32) {}
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
}

#[derive(Clone, Copy, Debug)]
struct OpenBlock {
    /// NONE when the stream has no open block.
    block: u32,
    next_pu: u32,
    /// Units placed in the PU being filled.
    fill: u32,
    /// Of those, units that came from the host (they hold write-buffer space).
    host_fill: u32,
}

const NO_OPEN_BLOCK: OpenBlock = OpenBlock {
    block: NONE,
    next_pu: 0,
    fill: 0,
    host_fill: 0,
};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stream {
    Host,
    Gc,
}

#[derive(Clone, Debug)]
struct Die {
    free: FreePool,
    host: OpenBlock,
    gc: OpenBlock,
    victim: u32,
    /// Next unit of the victim to examine.
    victim_cursor: u32,
    /// Units of GC copying owed to keep up with host writes.
    gc_credit: f64,
    /// Units to copy per host unit written, for the current victim: v / (capacity - v).
    gc_ratio: f64,
    sealed_fifo: VecDeque<u32>,
    /// Sealed blocks in no particular order (d-choices, cost-benefit, static levelling).
    sealed_list: Vec<u32>,
    victim_selections: u64,
    /// The current victim was chosen by static wear levelling, not by the GC policy.
    victim_for_wear_leveling: bool,
}

/// Counters of FTL activity, in mapping units unless named otherwise.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct FtlCounters {
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
}

/// One change of the logical-to-physical map, for a consumer that keeps data with the
/// physical units (the NBD emulator): `lba` left `old_ppn` (UNMAPPED if it had none) for
/// `new_ppn` (UNMAPPED on TRIM). `tag` is the host command's tag for host writes and TRIMs
/// ([`Ftl::journal_tag`]), [`TAG_RELOCATION`] for garbage collection and wear levelling.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MapChange {
    pub lba: u32,
    pub old_ppn: u32,
    pub new_ppn: u32,
    pub tag: u64,
}

/// The tag of map changes made by garbage collection or wear levelling (data moves).
pub const TAG_RELOCATION: u64 = u64::MAX;

/// The flash translation layer of one drive.
pub struct Ftl {
    pub geometry: Geometry,
    policy: GcPolicy,
    d_choices: u32,
    fg_free_min: u32,
    fg_mode: GcForegroundMode,
    bg_free_target: u32,
    separate_gc_stream: bool,
    static_spread_max: u32,
    /// Blocks 0..this of each die are reserved (bad-block reserve) and never written.
    reserved_blocks_per_die: u32,
    /// Logical unit -> physical unit, or UNMAPPED. The flat L2P table.
    l2p: Vec<u32>,
    /// Physical unit -> logical unit it holds (the LBA in its out-of-band area), or UNMAPPED
    /// when the unit is free, stale, padding or parity. Invariant: l2p[p2l[p]] == p.
    p2l: Vec<u32>,
    /// Write sequence number of each PU (out-of-band), from `sequence`.
    pu_sequence: Vec<u32>,
    /// Valid units per block. Invariant: equals the count of mapped p2l entries in the block.
    valid: Vec<u32>,
    erase_count: Vec<u32>,
    state: Vec<BlockState>,
    /// Sequence number when the block was sealed (age for cost-benefit).
    sealed_at: Vec<u32>,
    /// Index in its die's sealed_list, or NONE.
    sealed_pos: Vec<u32>,
    buckets: Buckets,
    dies: Vec<Die>,
    /// Die receiving the next host PU (host data is striped PU by PU across dies).
    host_die: u32,
    sequence: u32,
    rng: Rng,
    scratch: Vec<u32>,
    mapped_units: u64,
    pub counters: FtlCounters,
    /// Map changes since the consumer last drained them; `None` (the default) records nothing.
    pub journal: Option<Vec<MapChange>>,
    /// The tag recorded with the host writes and TRIMs that follow.
    pub journal_tag: u64,
}

impl Ftl {
    /// Build the FTL of a validated configuration; every table is allocated here, once.
    pub fn new(cfg: &FtlConfig, geometry: &Geometry, seed: u64) -> Ftl {
        let g = geometry.clone();
        let blocks = (g.dies * g.blocks_per_die) as usize;
        let mut ftl = Ftl {
            policy: cfg.gc_policy,
            d_choices: cfg.gc_d_choices,
            fg_free_min: cfg.gc_foreground_free_blocks_min,
            fg_mode: cfg.gc_foreground_mode,
            bg_free_target: cfg.gc_background_free_blocks_target,
            separate_gc_stream: cfg.gc_separate_stream,
            static_spread_max: cfg.wear_leveling_static_spread_max,
            reserved_blocks_per_die: cfg.reserved_blocks_per_die,
            l2p: crate::mem::table(g.logical_units as usize, UNMAPPED),
            p2l: crate::mem::table(g.physical_units as usize, UNMAPPED),
            pu_sequence: crate::mem::table(blocks * g.pus_per_block as usize, 0),
            valid: vec![0; blocks],
            erase_count: vec![0; blocks],
            state: vec![BlockState::Free; blocks],
            sealed_at: vec![0; blocks],
            sealed_pos: vec![NONE; blocks],
            buckets: Buckets::new(
                if cfg.gc_policy == GcPolicy::Greedy {
                    g.dies
                } else {
                    0
                },
                g.data_units_per_block,
                blocks,
            ),
            dies: Vec::with_capacity(g.dies as usize),
            host_die: 0,
            sequence: 0,
            rng: Rng::derive(seed, "ftl.gc"),
            scratch: Vec::with_capacity(g.units_per_pu as usize),
            mapped_units: 0,
            counters: FtlCounters::default(),
            journal: None,
            journal_tag: 0,
            geometry: g,
        };
        let reserved = cfg.reserved_blocks_per_die;
        for die in 0..ftl.geometry.dies {
            let first = die * ftl.geometry.blocks_per_die;
            let mut free = FreePool::new(cfg.wear_leveling_dynamic);
            for b in first + reserved..first + ftl.geometry.blocks_per_die {
                free.push(b, 0);
            }
            ftl.dies.push(Die {
                free,
                host: NO_OPEN_BLOCK,
                gc: NO_OPEN_BLOCK,
                victim: NONE,
                victim_cursor: 0,
                gc_credit: 0.0,
                gc_ratio: 0.0,
                sealed_fifo: VecDeque::new(),
                sealed_list: Vec::new(),
                victim_selections: 0,
                victim_for_wear_leveling: false,
            });
        }
        for die in 0..ftl.geometry.dies {
            for b in 0..reserved {
                // Reserved (bad) blocks are never written: mark them sealed-but-invisible.
                ftl.state[(die * ftl.geometry.blocks_per_die + b) as usize] = BlockState::Open;
            }
        }
        ftl
    }

    // ----- lookups -------------------------------------------------------------------------

    #[inline]
    pub fn logical_units(&self) -> u64 {
        self.geometry.logical_units
    }

    /// Physical unit of logical unit `lba`, or UNMAPPED.
    #[inline]
    pub fn lookup(&self, lba: u32) -> u32 {
        self.l2p[lba as usize]
    }

    /// Start loading the map entry of `lba` (a write or read of it is coming).
    #[inline]
    pub fn prefetch_lookup(&self, lba: u32) {
        crate::mem::prefetch(&self.l2p, lba as usize);
    }

    /// Start loading what overwriting `lba` will touch: its current reverse-map entry. Call
    /// after `prefetch_lookup` has had time to land.
    #[inline]
    pub fn prefetch_overwrite(&self, lba: u32) {
        let ppn = self.l2p[lba as usize];
        if ppn != UNMAPPED {
            crate::mem::prefetch(&self.p2l, ppn as usize);
        }
    }

    /// The logical unit a physical unit holds (its out-of-band LBA), or UNMAPPED.
    #[inline]
    pub fn reverse(&self, ppn: u32) -> u32 {
        self.p2l[ppn as usize]
    }

    #[inline]
    pub fn die_of(&self, ppn: u32) -> u32 {
        ppn / self.geometry.units_per_block / self.geometry.blocks_per_die
    }

    #[inline]
    fn block_of(&self, ppn: u32) -> u32 {
        ppn / self.geometry.units_per_block
    }

    /// PU index within the drive (block * pus_per_block + pu).
    #[inline]
    pub fn pu_of(&self, ppn: u32) -> u32 {
        ppn / self.geometry.units_per_pu
    }

    /// Planes a read of units `first_slot..=last_slot` of one PU touches.
    #[inline]
    pub fn planes_spanned(&self, first_ppn: u32, last_ppn: u32) -> u32 {
        let upp = self.geometry.units_per_page;
        let upu = self.geometry.units_per_pu;
        (last_ppn % upu) / upp - (first_ppn % upu) / upp + 1
    }

    /// Is the unit still in the controller's DRAM (its PU not yet sent to the NAND)?
    #[inline]
    pub fn is_buffered(&self, ppn: u32) -> bool {
        let die = &self.dies[self.die_of(ppn) as usize];
        let block = self.block_of(ppn);
        let pu = (ppn % self.geometry.units_per_block) / self.geometry.units_per_pu;
        (block == die.host.block && pu == die.host.next_pu)
            || (block == die.gc.block && pu == die.gc.next_pu)
    }

    /// Write sequence number stored with the PU holding `ppn`.
    pub fn sequence_of(&self, ppn: u32) -> u32 {
        self.pu_sequence[self.pu_of(ppn) as usize]
    }

    /// Host units waiting in partially filled PUs (they hold write-buffer space).
    pub fn buffered_host_units(&self) -> u64 {
        self.dies
            .iter()
            .map(|d| {
                d.host.host_fill as u64
                    + if self.separate_gc_stream {
                        0
                    } else {
                        d.gc.host_fill as u64
                    }
            })
            .sum()
    }

    pub fn mapped_units(&self) -> u64 {
        self.mapped_units
    }

    pub fn erase_counts(&self) -> &[u32] {
        &self.erase_count
    }

    pub fn free_blocks(&self, die: u32) -> u32 {
        self.dies[die as usize].free.len()
    }

    pub fn free_blocks_total(&self) -> u64 {
        self.dies.iter().map(|d| d.free.len() as u64).sum()
    }

    // ----- host operations -----------------------------------------------------------------

    /// Write one logical unit: the old copy becomes stale, the new one goes to the host
    /// stream's open PU on the current die. Full PUs are programmed, striped across dies.
    #[inline]
    pub fn write_unit<S: NandSink>(&mut self, lba: u32, sink: &mut S) {
        debug_assert!((lba as u64) < self.geometry.logical_units);
        let old = self.l2p[lba as usize];
        self.invalidate(lba);
        let die = self.host_die;
        self.append(die, Stream::Host, lba, true, sink);
        self.counters.host_units_written += 1;
        self.record(lba, old, self.journal_tag);
    }

    /// Journal the move of `lba` from `old_ppn` to where it maps now.
    #[inline]
    fn record(&mut self, lba: u32, old_ppn: u32, tag: u64) {
        if let Some(journal) = &mut self.journal {
            journal.push(MapChange {
                lba,
                old_ppn,
                new_ppn: self.l2p[lba as usize],
                tag,
            });
        }
    }

    /// TRIM one logical unit: it maps to nothing and reads as zeros.
    pub fn trim_unit(&mut self, lba: u32) {
        let old = self.l2p[lba as usize];
        if old != UNMAPPED {
            self.invalidate(lba);
            self.counters.host_units_trimmed += 1;
            self.record(lba, old, self.journal_tag);
        }
    }

    /// Program every partially filled host PU now (padding the rest), so that all
    /// acknowledged data is on the NAND: FLUSH and FUA.
    pub fn flush<S: NandSink>(&mut self, sink: &mut S) {
        for die in 0..self.geometry.dies {
            let ob = self.dies[die as usize].host;
            if ob.block != NONE && ob.fill > 0 {
                self.counters.padding_units += (self.geometry.units_per_pu - ob.fill) as u64;
                self.program_pu(die, Stream::Host, sink);
            }
        }
    }

    /// Every block erased, the map empty. Erase counts go up for blocks that held data.
    /// Not journalled: a data consumer drops everything it holds.
    pub fn secure_erase(&mut self) {
        let g = self.geometry.clone();
        let dynamic = self
            .dies
            .first()
            .map(|d| d.free.is_least_worn())
            .unwrap_or(true);
        self.l2p.fill(UNMAPPED);
        self.p2l.fill(UNMAPPED);
        self.valid.fill(0);
        self.sealed_pos.fill(NONE);
        self.buckets.clear();
        self.mapped_units = 0;
        self.host_die = 0;
        let reserved = self.reserved_blocks_per_die;
        for die in 0..g.dies {
            let first = die * g.blocks_per_die;
            let d = &mut self.dies[die as usize];
            let mut free = FreePool::new(dynamic);
            for b in first + reserved..first + g.blocks_per_die {
                if self.state[b as usize] != BlockState::Free {
                    self.erase_count[b as usize] += 1;
                }
                self.state[b as usize] = BlockState::Free;
                free.push(b, self.erase_count[b as usize]);
            }
            d.free = free;
            d.host = NO_OPEN_BLOCK;
            d.gc = NO_OPEN_BLOCK;
            d.victim = NONE;
            d.victim_cursor = 0;
            d.gc_credit = 0.0;
            d.sealed_fifo.clear();
            d.sealed_list.clear();
        }
    }

    // ----- placement -----------------------------------------------------------------------

    #[inline]
    fn invalidate(&mut self, lba: u32) {
        let ppn = self.l2p[lba as usize];
        if ppn == UNMAPPED {
            return;
        }
        debug_assert_eq!(
            self.p2l[ppn as usize], lba,
            "forward and reverse maps disagree"
        );
        self.p2l[ppn as usize] = UNMAPPED;
        self.l2p[lba as usize] = UNMAPPED;
        self.mapped_units -= 1;
        let block = self.block_of(ppn);
        let v = self.valid[block as usize];
        debug_assert!(v > 0);
        self.valid[block as usize] = v - 1;
        if self.sealed_pos[block as usize] != NONE && self.policy == GcPolicy::Greedy {
            let die = block / self.geometry.blocks_per_die;
            self.buckets.move_down(die, block, v);
        }
    }

    fn open_block(&mut self, die: u32, stream: Stream) -> &mut OpenBlock {
        let d = &mut self.dies[die as usize];
        match stream {
            Stream::Host => &mut d.host,
            Stream::Gc if self.separate_gc_stream => &mut d.gc,
            Stream::Gc => &mut d.host,
        }
    }

    /// Place `lba` in the open PU of `die`'s stream; program the PU when it is full.
    /// The hot path of every write and every GC copy: a few stores, no calls.
    #[inline]
    fn append<S: NandSink>(
        &mut self,
        die: u32,
        stream: Stream,
        lba: u32,
        from_host: bool,
        sink: &mut S,
    ) {
        let (units_per_block, units_per_pu) =
            (self.geometry.units_per_block, self.geometry.units_per_pu);
        let separate = self.separate_gc_stream;
        if self.open_block(die, stream).block == NONE {
            self.allocate_block(die, stream, sink);
        }
        let d = &mut self.dies[die as usize];
        let ob = if stream == Stream::Host || !separate {
            &mut d.host
        } else {
            &mut d.gc
        };
        let ppn = ob.block * units_per_block + ob.next_pu * units_per_pu + ob.fill;
        let block = ob.block;
        ob.fill += 1;
        ob.host_fill += from_host as u32;
        let full = ob.fill == units_per_pu;
        debug_assert_eq!(self.p2l[ppn as usize], UNMAPPED);
        self.l2p[lba as usize] = ppn;
        self.p2l[ppn as usize] = lba;
        self.valid[block as usize] += 1;
        self.mapped_units += 1;
        if full {
            self.program_pu(die, stream, sink);
        }
    }

    #[inline(never)]
    fn program_pu<S: NandSink>(&mut self, die: u32, stream: Stream, sink: &mut S) {
        let shared_stream = !self.separate_gc_stream;
        let ob = *self.open_block(die, stream);
        let kind = if stream == Stream::Host || (shared_stream && ob.host_fill > 0) {
            ProgramKind::Host
        } else {
            ProgramKind::Gc
        };
        sink.program(die, kind, ob.host_fill);
        let pus_per_block = self.geometry.pus_per_block;
        let base = ob.block * pus_per_block;
        self.pu_sequence[(base + ob.next_pu) as usize] = self.sequence;
        self.sequence = self.sequence.wrapping_add(1);
        match kind {
            ProgramKind::Host => self.counters.pu_programs_host += 1,
            _ => self.counters.pu_programs_gc += 1,
        }
        let mut next_pu = ob.next_pu + 1;
        while next_pu < pus_per_block && self.geometry.is_parity_pu(next_pu) {
            sink.program(die, ProgramKind::Parity, 0);
            self.pu_sequence[(base + next_pu) as usize] = self.sequence;
            self.sequence = self.sequence.wrapping_add(1);
            self.counters.pu_programs_parity += 1;
            next_pu += 1;
        }
        let sealed = next_pu == pus_per_block;
        {
            let ob = self.open_block(die, stream);
            ob.fill = 0;
            ob.host_fill = 0;
            ob.next_pu = next_pu;
            if sealed {
                *ob = NO_OPEN_BLOCK;
            }
        }
        if sealed {
            self.seal(ob.block);
        }
        if stream == Stream::Host {
            self.host_die = (die + 1) % self.geometry.dies;
            self.collect_paced(die, sink);
        }
    }

    #[inline(never)]
    fn allocate_block<S: NandSink>(&mut self, die: u32, stream: Stream, sink: &mut S) {
        if stream == Stream::Host {
            // Keep one block for the collector: the host may not take the last one.
            while self.dies[die as usize].free.len() < 2 {
                if !self.collect_one_step(die, sink) {
                    panic!("die {die}: no free block and nothing to collect (over-provisioning too small)");
                }
            }
        }
        let block = self.dies[die as usize]
            .free
            .pop()
            .unwrap_or_else(|| panic!("die {die}: free pool empty"));
        debug_assert_eq!(self.state[block as usize], BlockState::Free);
        debug_assert_eq!(self.valid[block as usize], 0);
        self.state[block as usize] = BlockState::Open;
        *self.open_block(die, stream) = OpenBlock {
            block,
            next_pu: 0,
            fill: 0,
            host_fill: 0,
        };
    }

    fn seal(&mut self, block: u32) {
        let die = block / self.geometry.blocks_per_die;
        self.state[block as usize] = BlockState::Sealed;
        self.sealed_at[block as usize] = self.sequence;
        let d = &mut self.dies[die as usize];
        self.sealed_pos[block as usize] = d.sealed_list.len() as u32;
        d.sealed_list.push(block);
        match self.policy {
            GcPolicy::Greedy => self.buckets.insert(die, block, self.valid[block as usize]),
            GcPolicy::Fifo => d.sealed_fifo.push_back(block),
            _ => {}
        }
    }

    fn unseal(&mut self, block: u32) {
        let die = block / self.geometry.blocks_per_die;
        let d = &mut self.dies[die as usize];
        let pos = self.sealed_pos[block as usize];
        debug_assert_ne!(pos, NONE);
        let last = d.sealed_list.pop().expect("sealed list holds the block");
        if last != block {
            d.sealed_list[pos as usize] = last;
            self.sealed_pos[last as usize] = pos;
        }
        self.sealed_pos[block as usize] = NONE;
        match self.policy {
            GcPolicy::Greedy => self.buckets.remove(die, block, self.valid[block as usize]),
            GcPolicy::Fifo => {
                if d.sealed_fifo.front() == Some(&block) {
                    d.sealed_fifo.pop_front();
                } else if let Some(i) = d.sealed_fifo.iter().position(|&b| b == block) {
                    d.sealed_fifo.remove(i);
                }
            }
            _ => {}
        }
    }

    // ----- garbage collection --------------------------------------------------------------

    /// Foreground collection after a host PU on `die`: while the die is short of free blocks,
    /// copy victim data in proportion to host writes (v / (capacity - v) units per host unit),
    /// so a victim is freed by the time the host has filled the space it gives back.
    fn collect_paced<S: NandSink>(&mut self, die: u32, sink: &mut S) {
        let dix = die as usize;
        if self.dies[dix].victim == NONE
            && (self.dies[dix].free.len() >= self.fg_free_min || !self.select_victim(die))
        {
            return;
        }
        self.dies[dix].gc_credit += self.geometry.units_per_pu as f64 * self.dies[dix].gc_ratio;
        if self.fg_mode == GcForegroundMode::Burst {
            // Same average pace, victim-sized bites: once the credit covers the victim's
            // valid data, collect all of it at once; host programs on the die wait behind it.
            let victim = self.dies[dix].victim;
            if self.dies[dix].gc_credit >= self.valid[victim as usize] as f64 {
                while self.dies[dix].victim == victim {
                    let copied = self.collect_step(die, sink);
                    self.dies[dix].gc_credit -= copied as f64;
                }
                if self.dies[dix].free.len() >= self.fg_free_min {
                    self.dies[dix].gc_credit = 0.0;
                } else {
                    self.select_victim(die);
                }
            }
            return;
        }
        while self.dies[dix].victim != NONE && self.dies[dix].gc_credit > 0.0 {
            let copied = self.collect_step(die, sink);
            self.dies[dix].gc_credit -= copied as f64;
            if self.dies[dix].victim == NONE
                && (self.dies[dix].free.len() >= self.fg_free_min || !self.select_victim(die))
            {
                self.dies[dix].gc_credit = 0.0;
                break;
            }
        }
    }

    /// One step of collection on `die` regardless of pacing. False if there is nothing to collect.
    fn collect_one_step<S: NandSink>(&mut self, die: u32, sink: &mut S) -> bool {
        if self.dies[die as usize].victim == NONE && !self.select_victim(die) {
            return false;
        }
        self.collect_step(die, sink);
        true
    }

    /// Background collection when the drive is idle: one step on `die` if it is below the
    /// background target. Returns whether it did anything.
    pub fn collect_background_step<S: NandSink>(&mut self, die: u32, sink: &mut S) -> bool {
        let d = &self.dies[die as usize];
        if d.victim == NONE && d.free.len() >= self.bg_free_target {
            return false;
        }
        self.collect_one_step(die, sink)
    }

    pub fn background_work_pending(&self, die: u32) -> bool {
        let d = &self.dies[die as usize];
        d.victim != NONE || d.free.len() < self.bg_free_target
    }

    fn select_victim(&mut self, die: u32) -> bool {
        let dix = die as usize;
        if self.dies[dix].sealed_list.is_empty() {
            return false;
        }
        self.dies[dix].victim_selections += 1;
        let mut wear_leveling = false;
        let block = match self.coldest_if_spread_exceeded(die) {
            Some(b) => {
                wear_leveling = true;
                b
            }
            None => match self.policy {
                GcPolicy::Greedy => self.buckets.min(die).expect("sealed blocks are in buckets"),
                GcPolicy::Fifo => *self.dies[dix]
                    .sealed_fifo
                    .front()
                    .expect("sealed blocks are queued"),
                GcPolicy::DChoices => {
                    let list = &self.dies[dix].sealed_list;
                    let mut best = list[self.rng.below(list.len() as u64) as usize];
                    for _ in 1..self.d_choices {
                        let b = list[self.rng.below(list.len() as u64) as usize];
                        if self.valid[b as usize] < self.valid[best as usize] {
                            best = b;
                        }
                    }
                    best
                }
                GcPolicy::CostBenefit => self.cost_benefit_victim(die),
            },
        };
        self.unseal(block);
        self.state[block as usize] = BlockState::Victim;
        let v = self.valid[block as usize];
        let capacity = self.geometry.data_units_per_block;
        let d = &mut self.dies[dix];
        d.victim = block;
        d.victim_cursor = 0;
        d.victim_for_wear_leveling = wear_leveling;
        d.gc_ratio = if v >= capacity {
            capacity as f64
        } else {
            v as f64 / (capacity - v) as f64
        };
        self.counters.gc_victims += 1;
        self.counters.gc_victim_valid_units += v as u64;
        if wear_leveling {
            self.counters.wear_leveling_victims += 1;
        }
        true
    }

    fn cost_benefit_victim(&self, die: u32) -> u32 {
        let capacity = self.geometry.data_units_per_block as f64;
        let mut best = NONE;
        let mut best_score = f64::NEG_INFINITY;
        for &b in &self.dies[die as usize].sealed_list {
            let u = self.valid[b as usize] as f64 / capacity;
            let age = self.sequence.wrapping_sub(self.sealed_at[b as usize]) as f64 + 1.0;
            let score = if u == 0.0 {
                f64::INFINITY
            } else {
                (1.0 - u) / (2.0 * u) * age
            };
            if score > best_score || (score == best_score && b < best) {
                best = b;
                best_score = score;
            }
        }
        best
    }

    /// Static wear levelling: every 16th selection, if the die's erase-count spread is past the
    /// threshold, the least-worn sealed block (cold data) is collected instead.
    fn coldest_if_spread_exceeded(&self, die: u32) -> Option<u32> {
        let d = &self.dies[die as usize];
        if self.static_spread_max == 0 || !d.victim_selections.is_multiple_of(16) {
            return None;
        }
        let first = die * self.geometry.blocks_per_die;
        let max = (first..first + self.geometry.blocks_per_die)
            .map(|b| self.erase_count[b as usize])
            .max()?;
        let coldest = *d
            .sealed_list
            .iter()
            .min_by_key(|&&b| (self.erase_count[b as usize], b))?;
        (max - self.erase_count[coldest as usize] > self.static_spread_max).then_some(coldest)
    }

    /// Copy up to one PU of valid units out of `die`'s victim; erase it when it is empty.
    /// Returns the units copied.
    fn collect_step<S: NandSink>(&mut self, die: u32, sink: &mut S) -> u32 {
        let g = &self.geometry;
        let (units_per_block, units_per_pu) = (g.units_per_block, g.units_per_pu);
        let dix = die as usize;
        let victim = self.dies[dix].victim;
        let base = victim * units_per_block;
        let mut copied = 0;
        while self.dies[dix].victim_cursor < units_per_block && copied < units_per_pu {
            // Gather the valid units of one source PU: one (multi-plane) read for them.
            let cursor = self.dies[dix].victim_cursor;
            let pu_end = (cursor / units_per_pu + 1) * units_per_pu;
            let mut scratch = std::mem::take(&mut self.scratch);
            scratch.clear();
            let mut c = cursor;
            let (mut first, mut last) = (NONE, 0);
            while c < pu_end && copied + (scratch.len() as u32) < units_per_pu {
                let ppn = base + c;
                if self.p2l[ppn as usize] != UNMAPPED {
                    scratch.push(ppn);
                    first = first.min(ppn);
                    last = ppn;
                }
                c += 1;
            }
            self.dies[dix].victim_cursor = c;
            if !scratch.is_empty() {
                // Independent map loads first, so their cache misses overlap.
                for &ppn in &scratch {
                    crate::mem::prefetch(&self.l2p, self.p2l[ppn as usize] as usize);
                }
                sink.gc_read(die, self.planes_spanned(first, last), scratch.len() as u32);
                for &ppn in &scratch {
                    let lba = self.p2l[ppn as usize];
                    // Out-of-band LBA checked against the map: the pair must agree.
                    assert_eq!(
                        self.l2p[lba as usize], ppn,
                        "OOB LBA {lba} of ppn {ppn} disagrees with the map"
                    );
                    self.invalidate(lba);
                    self.append(die, Stream::Gc, lba, false, sink);
                    self.record(lba, ppn, TAG_RELOCATION);
                }
                copied += scratch.len() as u32;
            }
            self.scratch = scratch;
        }
        if self.dies[dix].victim_for_wear_leveling {
            self.counters.wear_leveling_units_copied += copied as u64;
        } else {
            self.counters.gc_units_copied += copied as u64;
        }
        if self.dies[dix].victim_cursor == units_per_block {
            self.erase_victim(die, sink);
        }
        copied
    }

    fn erase_victim<S: NandSink>(&mut self, die: u32, sink: &mut S) {
        let dix = die as usize;
        let block = self.dies[dix].victim;
        assert_eq!(
            self.valid[block as usize], 0,
            "victim {block} erased with valid data"
        );
        sink.erase(die);
        self.erase_count[block as usize] += 1;
        self.counters.blocks_erased += 1;
        self.state[block as usize] = BlockState::Free;
        let ec = self.erase_count[block as usize];
        let d = &mut self.dies[dix];
        d.free.push(block, ec);
        d.victim = NONE;
        d.victim_cursor = 0;
    }

    // ----- fills and verification ----------------------------------------------------------

    /// Write logical units `first..first + count` in order without timing: the state a timed
    /// sequential fill of the same range reaches (see `device` tests for the equivalence).
    pub fn fill_untimed(&mut self, first: u32, count: u32) {
        for lba in first..first + count {
            self.write_unit(lba, &mut NullSink);
        }
    }

    /// A digest of the whole FTL state (maps, valid counts, erase counts, block states).
    pub fn state_digest(&self) -> u64 {
        let mut h: u64 = 0xCBF2_9CE4_8422_2325;
        let mut eat = |x: u32| {
            h = (h ^ x as u64).wrapping_mul(0x0000_0100_0000_01B3);
        };
        self.l2p.iter().for_each(|&x| eat(x));
        self.p2l.iter().for_each(|&x| eat(x));
        self.valid.iter().for_each(|&x| eat(x));
        self.erase_count.iter().for_each(|&x| eat(x));
        self.state.iter().for_each(|&x| eat(x as u32));
        h
    }

    /// Check every invariant of the whole structure; an error says which one failed.
    pub fn verify(&self) -> Result<(), String> {
        let g = &self.geometry;
        let mut mapped = 0u64;
        for (lba, &ppn) in self.l2p.iter().enumerate() {
            if ppn != UNMAPPED {
                mapped += 1;
                if self.p2l[ppn as usize] != lba as u32 {
                    return Err(format!(
                        "l2p[{lba}] = {ppn} but p2l[{ppn}] = {}",
                        self.p2l[ppn as usize]
                    ));
                }
            }
        }
        if mapped != self.mapped_units {
            return Err(format!(
                "{mapped} mapped units counted, {} recorded",
                self.mapped_units
            ));
        }
        let upb = g.units_per_block as usize;
        for (block, chunk) in self.p2l.chunks(upb).enumerate() {
            let mut valid = 0;
            for (i, &lba) in chunk.iter().enumerate() {
                if lba != UNMAPPED {
                    valid += 1;
                    let ppn = (block * upb + i) as u32;
                    if self.l2p[lba as usize] != ppn {
                        return Err(format!(
                            "p2l[{ppn}] = {lba} but l2p[{lba}] = {}",
                            self.l2p[lba as usize]
                        ));
                    }
                    let pu = (i as u32) / g.units_per_pu;
                    if g.is_parity_pu(pu) {
                        return Err(format!("ppn {ppn} holds data in a parity PU"));
                    }
                }
            }
            if valid != self.valid[block] {
                return Err(format!(
                    "block {block}: {valid} valid units, count says {}",
                    self.valid[block]
                ));
            }
            if self.state[block] == BlockState::Free && valid != 0 {
                return Err(format!("free block {block} holds {valid} valid units"));
            }
        }
        for (die, d) in self.dies.iter().enumerate() {
            let states_free = (0..g.blocks_per_die)
                .filter(|&b| {
                    self.state[(die as u32 * g.blocks_per_die + b) as usize] == BlockState::Free
                })
                .count() as u32;
            if states_free != d.free.len() {
                return Err(format!(
                    "die {die}: {states_free} free blocks, pool holds {}",
                    d.free.len()
                ));
            }
            for &b in &d.sealed_list {
                if self.state[b as usize] != BlockState::Sealed {
                    return Err(format!(
                        "block {b} listed as sealed in state {:?}",
                        self.state[b as usize]
                    ));
                }
            }
        }
        if self.policy == GcPolicy::Greedy {
            self.buckets.verify(&self.valid, &self.sealed_pos)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
