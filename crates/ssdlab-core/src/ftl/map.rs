//! The map: the flat logical-to-physical table, its reverse (the LBA each physical unit holds
//! in its out-of-band area), the write sequence number of each program unit, valid counts per
//! block, and the journal of map changes that a data store follows.
//!
//! [`Map`] owns these tables and keeps their invariants: `p2l[l2p[l]] == l` for every mapped
//! logical unit; a physical unit is valid (holds the current copy of its LBA) when the forward
//! map points back at it, `l2p[p2l[p]] == p`, and a stale one keeps its LBA, as a page keeps
//! its out-of-band area until erased; `valid(b)` (the count in block `b`'s entry) equals its
//! valid units,
//! `mapped_units` the mapped logical units. Every change goes through [`Map::map`] and
//! [`Map::unmap`] (or a run of GC copies' [`Map::relocate_run`], their blocks' counts moved
//! after it by [`Map::valid_moved`]), so the pairs move together; [`Map::verify`] checks them
//! whole.

use super::{MapChange, HELD, TAG_ERASE, UNMAPPED};
use crate::config::{Geometry, MAX_UNITS_PER_BLOCK};
use crate::divisor::Divisor;

/// Where a block entry's valid count starts (see `Map::valid`): counts up to
/// [`MAX_UNITS_PER_BLOCK`] (the configuration's limit; all ones above it would make a key
/// equal to `ftl::victim`'s "no candidate").
pub(super) const VALID_SHIFT: u32 = 48;
const VALID_ONE: u64 = 1 << VALID_SHIFT;
const _: () = assert!(MAX_UNITS_PER_BLOCK as u64 == (1 << (64 - VALID_SHIFT)) - 2);

/// A logical unit: the host's address in mapping units (LBA x sector size / unit size).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(transparent)]
pub struct Lba(pub u32);

/// A physical unit: `(die * blocks_per_die + block) * units_per_block + pu * units_per_pu +
/// slot` (see [`super`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(transparent)]
pub struct Ppn(pub u32);

impl Lba {
    /// No logical unit: what a free, stale, padding or parity physical unit holds.
    pub const NONE: Lba = Lba(UNMAPPED);

    #[inline(always)]
    pub fn is_none(self) -> bool {
        self.0 == UNMAPPED
    }
}

impl Ppn {
    /// No physical unit: where an unmapped logical unit is.
    pub const NONE: Ppn = Ppn(UNMAPPED);

    #[inline(always)]
    pub fn is_none(self) -> bool {
        self.0 == UNMAPPED
    }
}

impl std::fmt::Display for Lba {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::fmt::Display for Ppn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

/// A mapped unit taken off the map by [`Map::unmap`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Unmapped {
    pub ppn: Ppn,
    pub block: u32,
}

/// A table of u32 entries held complemented, so that UNMAPPED (all ones) is stored as 0: a
/// new table is zeroed memory the kernel hands out untouched (no page is allocated until
/// written), so a drive opens at once and holds memory for what was written. Values read
/// and written through it are the plain ones.
struct Table(Vec<u32>);

impl Table {
    /// `len` entries, every one UNMAPPED.
    fn unmapped(len: usize) -> Table {
        const _: () = assert!(!UNMAPPED == 0);
        Table(crate::mem::zeroed_table(len))
    }

    #[inline(always)]
    fn get(&self, i: usize) -> u32 {
        !self.0[i]
    }

    #[inline(always)]
    fn set(&mut self, i: usize, value: u32) {
        self.0[i] = !value;
    }

    /// Every entry UNMAPPED again.
    fn clear(&mut self) {
        self.0.fill(0);
    }

    fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        self.0.iter().map(|&raw| !raw)
    }
}

/// Whether physical unit `ppn`, whose reverse entry is `p2l_raw` (as stored, complemented),
/// holds the current copy of its logical unit: the forward table `l2p` (as stored) points back
/// at it. Branch-free (garbage collection's scan asks it of every unit of a victim, and whether
/// a unit is valid follows no pattern); an unwritten unit reads the table's last entry.
#[inline(always)]
fn points_back(l2p: &[u32], p2l_raw: u32, ppn: u32) -> bool {
    let lba = !p2l_raw;
    let back = !l2p[(lba as usize).min(l2p.len() - 1)];
    (lba != UNMAPPED) & (back == ppn)
}

pub struct Map {
    /// Logical unit -> physical unit, or UNMAPPED. The flat L2P table.
    l2p: Table,
    /// Physical unit -> the logical unit last written to it (the LBA in its out-of-band area),
    /// or UNMAPPED (never written since the tables were cleared, padding, parity, or moved by
    /// garbage collection). A unit is valid only when `l2p[p2l[p]] == p` ([`Map::holds`]): an
    /// overwrite leaves the old unit's entry as it is, so it touches one random line of the
    /// tables, not two (full micron-p420m-1400 at QD256 about 10% faster, the untimed random
    /// writes about 20%; docs/performance.md).
    p2l: Table,
    /// Write sequence number of each PU (out-of-band).
    pu_sequence: Vec<u32>,
    /// Per block: its valid units above bit [`VALID_SHIFT`] (invariant: the count of mapped
    /// p2l entries in the block), below it the greedy collector's field for the block
    /// (`ftl::victim::Buckets`; 0 unless the block is a victim candidate). One entry for both,
    /// so a unit going stale touches one line of the block tables.
    block_entries: Vec<u64>,
    /// Invariant: the count of mapped l2p entries.
    mapped_units: u64,
    units_per_block: Divisor,
    /// Map changes since the consumer last took them; `None` (the default) records nothing.
    /// Only [`Map::record_changes`] turns it on; only the `take`/`drain` methods empty it.
    changes: Option<Vec<MapChange>>,
}

impl Map {
    /// The empty map of `g`; the big tables are allocated here, once.
    pub fn new(g: &Geometry) -> Map {
        let blocks = (g.dies * g.blocks_per_die) as usize;
        Map {
            l2p: Table::unmapped(g.logical_units as usize),
            p2l: Table::unmapped(g.physical_units as usize),
            pu_sequence: crate::mem::zeroed_table(blocks * g.pus_per_block as usize),
            block_entries: crate::mem::zeroed_table(blocks),
            mapped_units: 0,
            units_per_block: Divisor::new(g.units_per_block),
            changes: None,
        }
    }

    /// Physical unit of logical unit `lba`, or UNMAPPED.
    #[inline(always)]
    pub fn lookup(&self, lba: Lba) -> Ppn {
        Ppn(self.l2p.get(lba.0 as usize))
    }

    /// Whether any of the logical units `lbas` is mapped: one pass over their entries (a
    /// sequential fill's runs find none, and skip the look-up of each).
    #[inline]
    pub fn any_mapped(&self, lbas: std::ops::Range<u32>) -> bool {
        // Stored complemented: UNMAPPED is 0.
        self.l2p.0[lbas.start as usize..lbas.end as usize]
            .iter()
            .fold(0, |acc, &raw| acc | raw)
            != 0
    }

    /// The logical unit a physical unit holds valid, or UNMAPPED (free or stale).
    #[inline(always)]
    pub fn reverse(&self, ppn: Ppn) -> Lba {
        let raw = self.p2l.0[ppn.0 as usize];
        if points_back(&self.l2p.0, raw, ppn.0) {
            Lba(!raw)
        } else {
            Lba::NONE
        }
    }

    /// Whether `ppn` holds the current copy of a logical unit.
    #[inline(always)]
    fn holds(&self, ppn: u32) -> bool {
        !self.reverse(Ppn(ppn)).is_none()
    }

    /// Have the big tables' pages allocated now, in the background: they are about to be
    /// written whole (see [`crate::mem::populate_in_background`]). The tables in physical
    /// order are laid out die by die over `dies`.
    pub fn populate(&self, dies: u32) {
        // A sequential fill writes the forward map in order, and the physical-order tables
        // at every die at once (each die's blocks are one region).
        crate::mem::populate_in_background(&[
            (&self.l2p.0, 1),
            (&self.p2l.0, dies as usize),
            (&self.pu_sequence, dies as usize),
        ]);
    }

    /// Start loading the map entry of `lba` (a write or read of it is coming).
    #[inline]
    pub fn prefetch_lookup(&self, lba: Lba) {
        crate::mem::prefetch(&self.l2p.0, lba.0 as usize);
    }

    /// Start loading the reverse entries of `ppns` (a victim's units about to be read).
    #[inline]
    pub fn prefetch_reverse(&self, ppns: std::ops::Range<u32>) {
        crate::mem::prefetch_range(&self.p2l.0, ppns.start as usize..ppns.end as usize);
    }

    /// Start loading what overwriting `lba` will touch: its current copy's block entry (valid
    /// count and victim key; the copy's reverse entry is left as it is). Call after
    /// `prefetch_lookup` has had time to land; nothing to load when `lba` is unmapped.
    #[inline]
    pub fn prefetch_overwrite(&self, lba: Lba) {
        let ppn = self.lookup(lba);
        if ppn.is_none() {
            return;
        }
        let block = self.units_per_block.quotient(ppn.0);
        crate::mem::prefetch(&self.block_entries, block as usize);
    }

    /// Valid units of `block`.
    #[inline(always)]
    pub fn valid(&self, block: u32) -> u32 {
        (self.block_entries[block as usize] >> VALID_SHIFT) as u32
    }

    /// Every block's entry (valid count and the greedy collector's field), in block order.
    pub fn block_entries(&self) -> &[u64] {
        &self.block_entries
    }

    /// The same, for the greedy collector to set its fields (the counts are the map's).
    pub fn block_entries_mut(&mut self) -> &mut [u64] {
        &mut self.block_entries
    }

    pub fn mapped_units(&self) -> u64 {
        self.mapped_units
    }

    /// Write sequence number of PU `pu` (block * pus_per_block + pu in block).
    pub fn pu_sequence(&self, pu: u32) -> u32 {
        self.pu_sequence[pu as usize]
    }

    pub fn set_pu_sequence(&mut self, pu: u32, sequence: u32) {
        self.pu_sequence[pu as usize] = sequence;
    }

    /// Map `lba` (unmapped) to `ppn` (free) of `block`.
    #[inline(always)]
    pub fn map(&mut self, Lba(lba): Lba, ppn: Ppn, block: u32) {
        debug_assert_eq!(
            self.l2p.get(lba as usize),
            UNMAPPED,
            "lba {lba} already mapped"
        );
        self.enter(Lba(lba), ppn, block);
        self.mapped_units += 1;
    }

    /// The free unit `ppn` of `block` takes `lba`: both entries and the block's count.
    #[inline(always)]
    fn enter(&mut self, Lba(lba): Lba, Ppn(ppn): Ppn, block: u32) {
        debug_assert!(!self.holds(ppn), "ppn {ppn} already holds data");
        debug_assert_eq!(self.units_per_block.quotient(ppn), block);
        self.l2p.set(lba as usize, ppn);
        self.p2l.set(ppn as usize, lba);
        // Open blocks fill their reverse entries in order, one stream per die and stream: more
        // streams than the hardware prefetcher follows. Load the line two ahead now so the
        // stores that reach it do not wait (timed fill of crucial-m500-960 7.8-8.7 -> 7.1-7.6 s,
        // its 2000 s of random writes 7.8-8.3 -> 7.7-7.8 s).
        crate::mem::prefetch(&self.p2l.0, ppn as usize + 32);
        self.block_entries[block as usize] += VALID_ONE;
    }

    /// [`Map::map`] of `n` logical units from `lba` on, in order, to the `n` physical units
    /// from `ppn` on, all in `block`: a host command's units filling an open PU (one stream
    /// of each table, the block's count once).
    #[inline]
    pub fn map_run(&mut self, Lba(lba): Lba, Ppn(ppn): Ppn, n: u32, block: u32) {
        let (lbas, ppns) = (
            lba as usize..(lba + n) as usize,
            ppn as usize..(ppn + n) as usize,
        );
        debug_assert!(self.l2p.0[lbas.clone()].iter().all(|&raw| !raw == UNMAPPED));
        debug_assert!(ppns.clone().all(|p| !self.holds(p as u32)));
        debug_assert_eq!(self.units_per_block.quotient(ppn + n.max(1) - 1), block);
        for (i, to) in self.l2p.0[lbas].iter_mut().enumerate() {
            *to = !(ppn + i as u32);
        }
        for (i, to) in self.p2l.0[ppns].iter_mut().enumerate() {
            *to = !(lba + i as u32);
        }
        // As `map`'s: the line two ahead of the run's last reverse entry.
        crate::mem::prefetch(&self.p2l.0, (ppn + n) as usize + 31);
        self.block_entries[block as usize] += (n as u64) << VALID_SHIFT;
        self.mapped_units += n as u64;
    }

    /// Take `lba` off the map: its copy goes stale. None if it was not mapped.
    #[inline]
    pub fn unmap(&mut self, Lba(lba): Lba) -> Option<Unmapped> {
        let ppn = self.l2p.get(lba as usize);
        if ppn == UNMAPPED {
            return None;
        }
        debug_assert_eq!(
            self.p2l.get(ppn as usize),
            lba,
            "forward and reverse maps disagree"
        );
        // The old unit's reverse entry stays: with the forward entry moved on, it is stale.
        self.l2p.set(lba as usize, UNMAPPED);
        self.mapped_units -= 1;
        let block = self.units_per_block.quotient(ppn);
        debug_assert!(self.valid(block) > 0);
        self.block_entries[block as usize] -= VALID_ONE;
        Some(Unmapped {
            ppn: Ppn(ppn),
            block,
        })
    }

    /// Garbage collection's copies of the physical units `units` (mapped, each the current
    /// copy of the logical unit its reverse entry names) move to the free units from `to` on,
    /// in order, and each entry of `units` becomes the logical unit it held: [`Map::unmap`] and
    /// [`Map::map`] in one step each, the forward entry written once and the mapped count
    /// untouched. The blocks' valid counts are the caller's to move, once for the run
    /// ([`Map::valid_moved`]). The tables are taken once for the run, so their addresses stay
    /// in registers across its stores (one unit at a time through `&mut self`, every store
    /// made the compiler load them again: 27 instructions a copy, crucial-m500-120's GC steady
    /// state).
    #[inline(always)]
    pub fn relocate_run(&mut self, units: &mut [u32], to: u32) {
        let (l2p, p2l) = (&mut self.l2p.0[..], &mut self.p2l.0[..]);
        for (j, unit) in units.iter_mut().enumerate() {
            let (from, to) = (*unit, to + j as u32);
            // Stored complemented (see `Table`).
            let lba = !p2l[from as usize];
            debug_assert_ne!(lba, UNMAPPED, "ppn {from} holds no data");
            debug_assert_eq!(!l2p[lba as usize], from, "OOB LBA {lba} of ppn {from}");
            debug_assert!(
                !points_back(l2p, p2l[to as usize], to),
                "ppn {to} already holds data"
            );
            p2l[from as usize] = !UNMAPPED;
            l2p[lba as usize] = !to;
            p2l[to as usize] = !lba;
            *unit = lba;
            // As `enter`'s: the line two ahead of the reverse entry written.
            crate::mem::prefetch(p2l, to as usize + 32);
        }
    }

    /// The valid units of `ppns`, in order, into `out` until it is full (garbage collection's
    /// scan of a victim's PU): (how many, the first unit not looked at). Each unit's forward
    /// entry is read to tell (the look-ahead of `prefetch_lookups_of` has loaded them).
    /// Branch-free on whether a unit is valid (that follows no pattern: a branch on it
    /// mispredicts often, issue 15's profile), and the tables taken once (as in
    /// `relocate_run`).
    #[inline(always)]
    pub fn valid_units_of(&self, ppns: std::ops::Range<u32>, out: &mut [u32]) -> (usize, u32) {
        let (l2p, p2l) = (
            &self.l2p.0[..],
            &self.p2l.0[ppns.start as usize..ppns.end as usize],
        );
        let mut n = 0;
        let mut i = 0;
        while i < p2l.len() && n < out.len() {
            let ppn = ppns.start + i as u32;
            out[n] = ppn;
            n += points_back(l2p, p2l[i], ppn) as usize;
            i += 1;
        }
        (n, ppns.start + i as u32)
    }

    /// Start loading the map entries of the logical units last written to the units `ppns`
    /// (stale ones too: their entries tell them stale; units never written load the map's
    /// last entry: no branch).
    #[inline(always)]
    pub fn prefetch_lookups_of(&self, ppns: std::ops::Range<u32>) {
        let l2p = &self.l2p.0[..];
        for &raw in &self.p2l.0[ppns.start as usize..ppns.end as usize] {
            crate::mem::prefetch_clamped(l2p, !raw as usize);
        }
    }

    /// `n` units relocated ([`Map::relocate_run`]) from `from_block` to `to_block`: their
    /// valid counts.
    #[inline(always)]
    pub fn valid_moved(&mut self, from_block: u32, to_block: u32, n: u32) {
        debug_assert!(self.valid(from_block) >= n);
        self.block_entries[from_block as usize] -= (n as u64) << VALID_SHIFT;
        self.block_entries[to_block as usize] += (n as u64) << VALID_SHIFT;
    }

    /// Forget everything: no unit mapped, no sequence numbers (a secure erase keeps the
    /// sequence numbers: `keep_sequences`).
    pub fn clear(&mut self, keep_sequences: bool) {
        // Nothing mapped: the forward table holds UNMAPPED only, so no entry of the reverse one
        // is valid (stale ones stay, harmless); a fresh drive's tables stay untouched (their
        // pages are not even allocated yet).
        if self.mapped_units > 0 {
            self.l2p.clear();
            self.p2l.clear();
        }
        if !keep_sequences {
            self.pu_sequence.fill(0);
        }
        self.block_entries.fill(0);
        self.mapped_units = 0;
    }

    // ----- the journal of map changes (for a data store) -------------------------------------

    /// Record every change of the map from now on; what was recorded before is dropped.
    pub fn record_changes(&mut self) {
        self.changes = Some(Vec::new());
    }

    /// Record no more changes.
    pub fn stop_changes(&mut self) {
        self.changes = None;
    }

    #[inline(always)]
    pub fn records_changes(&self) -> bool {
        self.changes.is_some()
    }

    /// Changes recorded and not yet taken.
    pub fn changes(&self) -> &[MapChange] {
        self.changes.as_deref().unwrap_or_default()
    }

    pub fn take_changes(&mut self) -> Vec<MapChange> {
        self.changes
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default()
    }

    pub fn drain_changes(&mut self) -> impl Iterator<Item = MapChange> + '_ {
        self.changes
            .iter_mut()
            .flat_map(|changes| changes.drain(..))
    }

    /// Journal a change (recording or not: then nothing).
    #[inline]
    pub fn push_change(&mut self, change: MapChange) {
        if let Some(journal) = &mut self.changes {
            journal.push(change);
        }
    }

    /// Journal a host write of `lba` from `old_ppn` to where it maps now; `mark`: the
    /// journal's length before the write placed the unit. Collection during the placement
    /// may have erased the old copy's block: then the write goes in as two changes, around
    /// everything the placement journalled (see [`HELD`]).
    #[inline(never)]
    pub fn record_host(&mut self, Lba(lba): Lba, Ppn(old_ppn): Ppn, tag: u64, mark: usize) {
        let new_ppn = self.l2p.get(lba as usize);
        let upb = self.units_per_block;
        let Some(journal) = &mut self.changes else {
            return;
        };
        let same_block = |a: u32, b: u32| upb.quotient(a) == upb.quotient(b);
        let erased = |c: &MapChange| c.tag == TAG_ERASE && same_block(c.old_ppn, old_ppn);
        if old_ppn != UNMAPPED && journal[mark..].iter().any(erased) {
            let take = MapChange {
                lba,
                old_ppn,
                new_ppn: HELD,
                tag,
            };
            journal.insert(mark, take);
            journal.push(MapChange {
                lba,
                old_ppn: HELD,
                new_ppn,
                tag,
            });
        } else {
            journal.push(MapChange {
                lba,
                old_ppn,
                new_ppn,
                tag,
            });
        }
    }

    /// Journal the move of `lba` from `old_ppn` to where it maps now.
    #[inline]
    pub fn record(&mut self, Lba(lba): Lba, Ppn(old_ppn): Ppn, tag: u64) {
        let new_ppn = self.l2p.get(lba as usize);
        self.push_change(MapChange {
            lba,
            old_ppn,
            new_ppn,
            tag,
        });
    }

    /// Length of the journal now (a mark for [`Map::record_host`]).
    #[inline]
    pub fn changes_len(&self) -> usize {
        self.changes.as_ref().map_or(0, |j| j.len())
    }

    // ----- whole-structure checks ------------------------------------------------------------

    /// Feed the tables to a digest, in a fixed order.
    pub fn digest_into(&self, eat: &mut impl FnMut(u32)) {
        self.l2p.iter().for_each(&mut *eat);
        // The reverse entries as the drive reads them: a stale unit's as UNMAPPED.
        (0..self.p2l.0.len() as u32).for_each(|p| eat(self.reverse(Ppn(p)).0));
        self.block_entries
            .iter()
            .for_each(|&x| eat((x >> VALID_SHIFT) as u32));
    }

    /// Check the map's invariants whole: forward and reverse agree, the counts match, no valid
    /// data in a RAIN parity PU. An error says which failed.
    pub fn verify(&self, g: &Geometry) -> Result<(), String> {
        let mut mapped = 0u64;
        for (lba, ppn) in self.l2p.iter().enumerate() {
            if ppn != UNMAPPED {
                mapped += 1;
                if self.p2l.get(ppn as usize) != lba as u32 {
                    return Err(format!(
                        "l2p[{lba}] = {ppn} but p2l[{ppn}] = {}",
                        self.p2l.get(ppn as usize)
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
        for (block, chunk) in self.p2l.0.chunks(upb).enumerate() {
            let mut valid = 0;
            for (i, lba) in chunk.iter().map(|&raw| !raw).enumerate() {
                let ppn = (block * upb + i) as u32;
                if lba != UNMAPPED && (lba as usize) >= self.l2p.0.len() {
                    return Err(format!("p2l[{ppn}] = {lba}, beyond the logical units"));
                }
                if points_back(&self.l2p.0, !lba, ppn) {
                    valid += 1;
                    let pu = (i as u32) / g.units_per_pu;
                    if g.is_parity_pu(pu) {
                        return Err(format!("ppn {ppn} holds data in a parity PU"));
                    }
                }
            }
            if valid != self.valid(block as u32) {
                return Err(format!(
                    "block {block}: {valid} valid units, count says {}",
                    self.valid(block as u32)
                ));
            }
        }
        Ok(())
    }
}
