//! What the rest of the drive asks the FTL: where a unit is (die, PU, planes a read spans),
//! whether it is still in the controller's DRAM, and the counts of free, retired and mapped
//! blocks and units.

use super::*;

impl Ftl {
    // ----- lookups -------------------------------------------------------------------------

    #[inline]
    pub fn logical_units(&self) -> u64 {
        self.geometry.logical_units
    }

    /// The map (logical-to-physical and back, valid counts, the map-change journal).
    #[inline]
    pub fn map(&self) -> &Map {
        &self.map
    }

    /// Physical unit of logical unit `lba`, or UNMAPPED.
    #[inline]
    pub fn lookup(&self, lba: u32) -> u32 {
        self.map.lookup(Lba(lba)).0
    }

    /// The map is about to be written whole (a sequential fill): have its pages allocated now,
    /// on another thread, instead of one by one as the fill first touches them.
    pub fn populate_map(&self) {
        self.map.populate(self.geometry.dies);
    }

    /// Start loading the map entry of `lba` (a write or read of it is coming).
    #[inline]
    pub fn prefetch_lookup(&self, lba: u32) {
        self.map.prefetch_lookup(Lba(lba));
    }

    /// Start loading what overwriting `lba` will touch: its current copy's block entry (valid
    /// count and victim key; the copy's reverse entry is left as it is). Call after
    /// `prefetch_lookup` has had time to land.
    #[inline]
    pub fn prefetch_overwrite(&self, lba: u32) {
        self.map.prefetch_overwrite(Lba(lba));
    }

    /// The logical unit a physical unit holds (its out-of-band LBA), or UNMAPPED.
    #[inline]
    pub fn reverse(&self, ppn: u32) -> u32 {
        self.map.reverse(Ppn(ppn)).0
    }

    #[inline]
    pub fn die_of(&self, ppn: u32) -> u32 {
        self.div
            .blocks_per_die
            .quotient(self.div.units_per_block.quotient(ppn))
    }

    #[inline]
    pub(super) fn block_of(&self, ppn: u32) -> u32 {
        self.div.units_per_block.quotient(ppn)
    }

    /// PU index within the drive (block * pus_per_block + pu).
    #[inline]
    pub fn pu_of(&self, ppn: u32) -> u32 {
        self.div.units_per_pu.quotient(ppn)
    }

    /// A collection's read of `units` valid units `first_ppn..=last_ppn` of one PU.
    #[inline]
    pub(super) fn gc_read_of(&self, first_ppn: u32, last_ppn: u32, units: u32) -> super::GcRead {
        super::GcRead {
            planes: self.planes_spanned(first_ppn, last_ppn),
            units,
            first_ppn,
            last_ppn,
        }
    }

    /// Planes a read of units `first_slot..=last_slot` of one PU touches.
    #[inline]
    pub fn planes_spanned(&self, first_ppn: u32, last_ppn: u32) -> u32 {
        let (upu, upp) = (self.div.units_per_pu, self.div.units_per_page);
        upp.quotient(upu.remainder(last_ppn)) - upp.quotient(upu.remainder(first_ppn)) + 1
    }

    /// Is the unit still in the controller's DRAM (its PU not yet sent to the NAND)?
    #[inline]
    pub fn is_buffered(&self, ppn: u32) -> bool {
        let die = self.frontiers.die(self.die_of(ppn));
        let block = self.block_of(ppn);
        let pu = self
            .div
            .units_per_pu
            .quotient(self.div.units_per_block.remainder(ppn));
        die.iter().any(|ob| block == ob.block && pu == ob.next_pu)
    }

    /// Write sequence number stored with the PU holding `ppn`.
    pub fn sequence_of(&self, ppn: u32) -> u32 {
        self.map.pu_sequence(self.pu_of(ppn))
    }

    /// Physical units of host data placed in partially filled PUs: in the controller's DRAM,
    /// on no NAND yet (a FLUSH programs them).
    pub fn buffered_host_ppns(&self) -> Vec<u32> {
        let g = &self.geometry;
        let mut out = Vec::new();
        for ob in self.frontiers.host_all() {
            if ob.block != NONE && ob.fill > 0 {
                let first = ob.pu_first_ppn(g);
                out.extend(first..first + ob.fill);
            }
        }
        out
    }

    /// Host units waiting in partially filled PUs (they hold write-buffer space).
    pub fn buffered_host_units(&self) -> u64 {
        self.frontiers
            .host_all()
            .map(|ob| ob.host_fill as u64)
            .sum()
    }

    pub fn mapped_units(&self) -> u64 {
        self.map.mapped_units()
    }

    pub fn erase_counts(&self) -> &[u32] {
        self.blocks.erase_counts()
    }

    pub fn free_blocks(&self, die: u32) -> u32 {
        self.blocks.free_len(die)
    }

    /// Blocks retired as grown bad blocks (after program or erase failures).
    pub fn retired_blocks(&self) -> u64 {
        let blocks = self.geometry.dies * self.geometry.blocks_per_die;
        (0..blocks)
            .filter(|&b| self.blocks.state(b) == BlockState::Retired)
            .count() as u64
    }

    pub fn free_blocks_total(&self) -> u64 {
        (0..self.geometry.dies)
            .map(|die| self.blocks.free_len(die) as u64)
            .sum()
    }
}
