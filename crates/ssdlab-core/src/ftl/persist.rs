//! Map persistence: the metadata the firmware writes so that the map survives a power cut.
//!
//! The flat map lives in DRAM (4 bytes per mapping unit). Every change to it (host write,
//! TRIM, garbage-collection move) appends a record of `map_journal_entry_bytes` to a journal;
//! each full NAND page of records is programmed. Every `map_checkpoint_journal_pages` journal
//! pages a checkpoint starts: the map pages dirtied since the last one (one NAND page holds
//! page_size / 4 map entries) are programmed, spread evenly over the next
//! `map_checkpoint_journal_pages` journal pages (the first share at once), so that the
//! checkpoint is done before the next is due and never stalls host writes in one burst (an
//! incremental, "fuzzy" checkpoint as databases take them: Mohan et al., ARIES, TODS 1992).
//! At power-up the last completed checkpoint plus the journal since its start rebuild the
//! map. With `block_summary_pages`, sealing a data block programs one page with
//! the block's physical-to-logical list (what a rebuild reads instead of every page's
//! out-of-band area). This is the journal-plus-checkpoint design of page-mapped FTLs
//! (DFTL, Gupta et al., ASPLOS 2009, keeps map pages in flash and writes back dirty ones;
//! the journal bounds the work lost at a power cut).
//!
//! Metadata goes to blocks held back on every die (`map_blocks_per_die`), written as a log
//! round-robin over the dies, `planes` pages per program; each time a die's metadata log has
//! filled a block, one metadata block of that die is erased (ASSUMED: by then the older map
//! pages and journal in it are superseded, so reclaiming it copies nothing). The DRAM this
//! needs: the map itself, one journal page and one dirty bit per map page
//! ([`crate::config::map_dram_bytes`], reported as `Geometry::map_dram_bytes`).

use super::{FtlCounters, NandSink, Program, ProgramKind};
use crate::config::{FtlConfig, Geometry, MAP_ENTRY_BYTES};
use crate::time::SimTime;

#[derive(Clone, Debug)]
pub struct Persistence {
    /// Journal records per journal page; 0 when persistence is off.
    records_per_page: u32,
    /// Records in the journal page being filled.
    records: u32,
    /// Journal pages written since the last checkpoint.
    journal_pages: u32,
    checkpoint_journal_pages: u32,
    /// Mapping units covered by one map page.
    units_per_map_page: crate::divisor::Divisor,
    /// One bit per map page: dirtied since the last checkpoint. Invariant: `dirty_pages` is
    /// the number of bits set.
    dirty: Vec<u64>,
    dirty_pages: u32,
    /// Map pages of the running checkpoint not yet programmed, and how many go with each
    /// journal page.
    checkpoint_backlog: u32,
    checkpoint_step: u32,
    block_summary: bool,
    planes: u32,
    /// Metadata pages decided but not yet programmed (fewer than `planes`).
    pending_pages: u32,
    next_die: u32,
    dies: u32,
    pus_per_block: u32,
    /// Per die: metadata programs into its current metadata block.
    pus_in_block: Vec<u32>,
}

/// The word of the dirty-page bitmap that holds map page `page`'s mark, and its bit.
#[inline(always)]
fn dirty_bit(page: usize) -> (usize, u64) {
    (page / 64, 1u64 << (page % 64))
}

impl Persistence {
    pub fn new(cfg: &FtlConfig, g: &Geometry) -> Persistence {
        let page = g.units_per_page * g.mapping_unit_bytes;
        let enabled = cfg.map_journal_entry_bytes > 0;
        let units_per_map_page = page / MAP_ENTRY_BYTES;
        let map_pages = if enabled {
            g.logical_units.div_ceil(units_per_map_page as u64)
        } else {
            0
        };
        Persistence {
            records_per_page: if enabled {
                page / cfg.map_journal_entry_bytes
            } else {
                0
            },
            records: 0,
            journal_pages: 0,
            checkpoint_journal_pages: cfg.map_checkpoint_journal_pages,
            units_per_map_page: crate::divisor::Divisor::new(units_per_map_page),
            dirty: vec![0; map_pages.div_ceil(64) as usize],
            dirty_pages: 0,
            checkpoint_backlog: 0,
            checkpoint_step: 0,
            block_summary: enabled && cfg.block_summary_pages,
            planes: g.planes_per_die,
            pending_pages: 0,
            next_die: 0,
            dies: g.dies,
            pus_per_block: g.pus_per_block,
            pus_in_block: vec![0; g.dies as usize],
        }
    }

    #[inline]
    pub fn enabled(&self) -> bool {
        self.records_per_page > 0
    }

    /// Map pages dirtied since the last checkpoint.
    pub fn dirty_map_pages(&self) -> u32 {
        self.dirty_pages
    }

    /// Pages a power-on rebuild reads: the last checkpoint (every map page) and the journal
    /// since it started (at most two checkpoint intervals); (0, 0) without persistence.
    pub fn mount_pages(&self, logical_units: u64) -> (u64, u64) {
        if !self.enabled() {
            return (0, 0);
        }
        (
            logical_units.div_ceil(self.units_per_map_page.get() as u64),
            2 * self.checkpoint_journal_pages as u64,
        )
    }

    /// Secure erase: nothing is dirty, the journal starts again.
    pub fn reset(&mut self) {
        self.records = 0;
        self.journal_pages = 0;
        self.dirty.fill(0);
        self.dirty_pages = 0;
        self.checkpoint_backlog = 0;
    }

    /// The map entry of `lba` changed.
    #[inline]
    pub fn note_update<S: NandSink>(&mut self, lba: u32, c: &mut FtlCounters, sink: &mut S) {
        let page = self.units_per_map_page.quotient(lba) as usize;
        self.mark_dirty(page);
        self.records += 1;
        if self.records == self.records_per_page {
            self.journal_page_full(c, sink);
        }
    }

    /// `note_update` of each logical unit of `lbas`, in order: the map pages they dirty are
    /// marked once per journal page the run fills (a checkpoint starting at a full journal
    /// page clears the marks of the units before it, as one at a time would).
    #[inline]
    pub fn note_updates<S: NandSink>(
        &mut self,
        lbas: std::ops::Range<u32>,
        c: &mut FtlCounters,
        sink: &mut S,
    ) {
        let mut lba = lbas.start;
        while lba < lbas.end {
            let take = (self.records_per_page - self.records).min(lbas.end - lba);
            let first = self.units_per_map_page.quotient(lba);
            let last = self.units_per_map_page.quotient(lba + take - 1);
            for page in first as usize..=last as usize {
                self.mark_dirty(page);
            }
            self.records += take;
            lba += take;
            if self.records == self.records_per_page {
                self.journal_page_full(c, sink);
            }
        }
    }

    /// `note_update` of each of `lbas`, in order (garbage collection's run of moves): a
    /// journal page's worth at a time, with the dirty marks and the record count held in
    /// registers across it (unit by unit, every mark's store made the compiler load and store
    /// the count again).
    #[inline]
    pub fn note_updates_each<S: NandSink>(
        &mut self,
        lbas: &[u32],
        c: &mut FtlCounters,
        sink: &mut S,
    ) {
        let mut rest = lbas;
        while !rest.is_empty() {
            let take = ((self.records_per_page - self.records) as usize).min(rest.len());
            let (now, later) = rest.split_at(take);
            let per_page = self.units_per_map_page;
            let dirty = &mut self.dirty[..];
            let mut newly = 0;
            for &lba in now {
                let page = per_page.quotient(lba) as usize;
                let (word, bit) = dirty_bit(page);
                newly += (dirty[word] & bit == 0) as u32;
                dirty[word] |= bit;
            }
            self.dirty_pages += newly;
            self.records += take as u32;
            rest = later;
            if self.records == self.records_per_page {
                self.journal_page_full(c, sink);
            }
        }
    }

    /// Map page `page` is dirty (since the last checkpoint).
    #[inline(always)]
    fn mark_dirty(&mut self, page: usize) {
        let (word, bit) = dirty_bit(page);
        if self.dirty[word] & bit == 0 {
            self.dirty[word] |= bit;
            self.dirty_pages += 1;
        }
    }

    #[inline(never)]
    fn journal_page_full<S: NandSink>(&mut self, c: &mut FtlCounters, sink: &mut S) {
        self.records = 0;
        self.journal_pages += 1;
        c.meta_journal_pages += 1;
        self.pages(1, c, sink);
        if self.journal_pages >= self.checkpoint_journal_pages {
            self.start_checkpoint(c);
        }
        let share = self.checkpoint_step.min(self.checkpoint_backlog);
        if share > 0 {
            self.checkpoint_backlog -= share;
            c.meta_map_pages += share as u64;
            self.pages(share, c, sink);
        }
    }

    /// Every map page dirty now joins the checkpoint, programmed over the next
    /// `checkpoint_journal_pages` journal pages; once done, the journal before this point is
    /// no longer needed.
    fn start_checkpoint(&mut self, c: &mut FtlCounters) {
        c.map_checkpoints += 1;
        self.checkpoint_backlog += self.dirty_pages;
        self.checkpoint_step = self
            .checkpoint_backlog
            .div_ceil(self.checkpoint_journal_pages);
        self.dirty.fill(0);
        self.dirty_pages = 0;
        self.journal_pages = 0;
    }

    /// A data block was sealed: its summary page.
    pub fn block_sealed<S: NandSink>(&mut self, c: &mut FtlCounters, sink: &mut S) {
        if self.block_summary {
            c.meta_summary_pages += 1;
            self.pages(1, c, sink);
        }
    }

    /// Queue `pages` metadata pages; program them `planes` at a time, round-robin over dies.
    fn pages<S: NandSink>(&mut self, pages: u32, c: &mut FtlCounters, sink: &mut S) {
        self.pending_pages += pages;
        while self.pending_pages >= self.planes {
            self.pending_pages -= self.planes;
            let die = self.next_die;
            self.next_die = (die + 1) % self.dies;
            sink.program(
                die,
                Program {
                    kind: ProgramKind::Meta,
                    host_units: 0,
                    planes: self.planes,
                    data_ready: SimTime::ZERO,
                    first_ppn: super::UNMAPPED,
                },
            );
            c.pu_programs_meta += 1;
            let n = &mut self.pus_in_block[die as usize];
            *n += 1;
            if *n == self.pus_per_block {
                *n = 0;
                sink.erase(die, false);
                c.meta_blocks_erased += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::tests::small_journaled;
    use crate::divisor::Divisor;
    use crate::ftl::GcRead;
    use crate::rng::Rng;

    /// The metadata programs and erases, in order.
    #[derive(Default)]
    struct Log(Vec<(u32, u32, bool)>);

    impl NandSink for Log {
        fn program(&mut self, die: u32, p: Program) {
            self.0.push((die, p.planes, false));
        }
        fn gc_read(&mut self, _: u32, _: GcRead) {}
        fn erase(&mut self, die: u32, _: bool) {
            self.0.push((die, 0, true));
        }
    }

    /// `note_updates` of a run is `note_update` of each of its units: the same dirty map
    /// pages, journal and checkpoint state and metadata programs, with runs that straddle
    /// map pages and journal pages (3 units per map page, 5 records per journal page, a
    /// checkpoint every 2 journal pages: a checkpoint often starts inside a run).
    #[test]
    fn a_run_is_its_units_one_at_a_time() {
        let cfg = small_journaled(2);
        let g = cfg.validate().unwrap();
        let mut one = Persistence::new(&cfg.ftl, &g);
        one.records_per_page = 5;
        one.units_per_map_page = Divisor::new(3);
        let units = 3000u32;
        one.dirty = vec![0; (units / 3).div_ceil(64) as usize];
        let mut run = one.clone();
        let (mut c_one, mut c_run) = (FtlCounters::default(), FtlCounters::default());
        let (mut log_one, mut log_run) = (Log::default(), Log::default());
        let mut rng = Rng::new(3);
        let mut checkpoints_inside = 0;
        for _ in 0..20_000 {
            let n = rng.below(12) as u32;
            let first = rng.below((units - n) as u64) as u32;
            let before = c_run.map_checkpoints;
            run.note_updates(first..first + n, &mut c_run, &mut log_run);
            for lba in first..first + n {
                one.note_update(lba, &mut c_one, &mut log_one);
                assert_eq!(
                    one.dirty_pages,
                    one.dirty.iter().map(|w| w.count_ones()).sum::<u32>()
                );
            }
            checkpoints_inside += (c_run.map_checkpoints > before && run.dirty_pages > 0) as u32;
            assert_eq!(
                (&run.dirty, run.dirty_pages, run.records, run.journal_pages),
                (&one.dirty, one.dirty_pages, one.records, one.journal_pages)
            );
            assert_eq!(
                (
                    run.checkpoint_backlog,
                    run.checkpoint_step,
                    run.pending_pages
                ),
                (
                    one.checkpoint_backlog,
                    one.checkpoint_step,
                    one.pending_pages
                )
            );
        }
        assert!(checkpoints_inside > 100, "{checkpoints_inside}");
        assert_eq!(log_run.0, log_one.0);
        assert_eq!(c_run, c_one);
    }
}
