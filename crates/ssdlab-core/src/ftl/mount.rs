//! Power-on: rebuild the FTL from what the NAND holds, as firmware does after a restart.
//!
//! Every programmed unit carries its logical unit and a write sequence number in its
//! out-of-band (spare) area. A store that keeps those records (the NBD emulator's
//! `--store`) hands them back here after resolving them (for each logical unit, the record
//! with the highest sequence number is current; the others are stale). [`Ftl::restore`]
//! rebuilds the map, the valid counts, the free pools and the open blocks from them.
//!
//! How long the firmware takes to get there ([`Ftl::mount_report`]) depends on what it
//! persisted: with a map journal and checkpoints (`ftl.map_journal_entry_bytes` > 0) it
//! reads the last checkpoint (every map page), the journal written since that checkpoint
//! started (at most two checkpoint intervals) and the out-of-band areas of the open blocks
//! (units programmed after the last journal page); without them it reads the out-of-band
//! area of every programmed page (the full scan of FAST'13's "metadata" recovery, Zheng et
//! al., "Understanding the Robustness of SSDs under Power Fault").
//!
//! Open blocks: a block that was partly programmed stays open (the host stream takes the
//! most recently written one on each die, the collector's stream the next), so the drive's
//! free space is what it was; any others are closed as they are (their unprogrammed pages
//! stay unused until the block is collected). Firmware that distrusts a block an interrupted
//! program may have left unreliable closes them all; ASSUMED, not published for these drives.

use super::*;
use crate::config::NandConfig;

/// One programmed physical unit as the power-on scan finds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Recovered {
    pub ppn: u32,
    /// The logical unit it holds current data of, or UNMAPPED when the copy is stale.
    pub lba: u32,
    /// Write sequence number from its out-of-band area (orders the open blocks).
    pub sequence: u64,
}

/// What a power-on rebuild reads from the NAND and how long the modelled firmware takes.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct MountReport {
    pub mapped_units: u64,
    /// Blocks holding data (sealed or open) after the rebuild.
    pub written_blocks: u64,
    pub open_blocks: u64,
    /// Map checkpoint pages read (0 without map persistence).
    pub map_pages: u64,
    /// Journal pages read: at most two checkpoint intervals.
    pub journal_pages: u64,
    /// Pages whose out-of-band area is read (open blocks; every programmed page without map
    /// persistence).
    pub oob_pages: u64,
    /// Modelled time from power-on to ready, nanoseconds.
    pub mount_ns: u64,
}

impl Ftl {
    /// Rebuild the drive's state from the programmed units `units` (each physical unit at most
    /// once, each logical unit current in at most one) and the blocks' erase counts (None:
    /// keep the counts this FTL has). Counters start from zero. The result passes
    /// [`Ftl::verify`]; an inconsistent input is an error naming the unit.
    pub fn restore(
        &mut self,
        units: impl IntoIterator<Item = Recovered>,
        erase_counts: Option<&[u32]>,
    ) -> Result<(), String> {
        let g = self.geometry.clone();
        let blocks = (g.dies * g.blocks_per_die) as usize;
        if let Some(ec) = erase_counts {
            if ec.len() != blocks {
                return Err(format!(
                    "{} erase counts for a drive of {blocks} blocks",
                    ec.len()
                ));
            }
        }
        // Which blocks were retired, for a rebuild without erase counts of its own.
        let was_retired: Vec<bool> = (0..blocks as u32)
            .map(|b| self.blocks.was_retired(b))
            .collect();
        // Bit 31 of an erase count: retired (a grown bad block), kept out of service.
        self.blocks.begin_restore(erase_counts, RETIRED_BIT);
        self.collector.reset();
        self.map.clear(false);
        self.host_die = 0;
        self.placement_reset(true);
        self.sequence = 0;
        self.counters = FtlCounters::default();
        self.persist.reset();
        self.hold.reset();
        // Per block: the highest programmed PU and the newest sequence number in it.
        let mut top_pu = vec![NONE; blocks];
        let mut newest = vec![0u64; blocks];
        let reserved = self.reserved_blocks_per_die;
        for r in units {
            if r.ppn as u64 >= g.physical_units {
                return Err(format!(
                    "unit {}: beyond the drive's {} physical units",
                    r.ppn, g.physical_units
                ));
            }
            let block = self.block_of(r.ppn) as usize;
            if block as u32 % g.blocks_per_die < reserved {
                return Err(format!(
                    "unit {}: in block {block}, held back from user data",
                    r.ppn
                ));
            }
            let pu = (r.ppn % g.units_per_block) / g.units_per_pu;
            if g.is_parity_pu(pu) {
                return Err(format!("unit {}: in a RAIN parity page", r.ppn));
            }
            if top_pu[block] == NONE || pu > top_pu[block] {
                top_pu[block] = pu;
            }
            newest[block] = newest[block].max(r.sequence);
            if r.lba == UNMAPPED {
                continue;
            }
            if r.lba as u64 >= g.logical_units {
                return Err(format!(
                    "unit {}: logical unit {} beyond the drive's {}",
                    r.ppn, r.lba, g.logical_units
                ));
            }
            if !self.map.reverse(Ppn(r.ppn)).is_none() {
                return Err(format!("unit {}: recorded twice", r.ppn));
            }
            let held = self.map.lookup(Lba(r.lba));
            if !held.is_none() {
                return Err(format!(
                    "logical unit {}: current in both unit {held} and unit {}",
                    r.lba, r.ppn
                ));
            }
            self.map.map(Lba(r.lba), Ppn(r.ppn), block as u32);
        }
        // Full blocks, to be sealed once every block is stated (in block order, die by die).
        let mut to_seal = Vec::new();
        for die in 0..g.dies {
            let first = die * g.blocks_per_die;
            let mut partial = Vec::new();
            for b in first + reserved..first + g.blocks_per_die {
                let bi = b as usize;
                let retired = match erase_counts {
                    Some(ec) => ec[bi] & RETIRED_BIT != 0,
                    None => was_retired[bi],
                };
                if retired {
                    if top_pu[bi] != NONE {
                        return Err(format!("block {b}: retired but holds recorded units"));
                    }
                    self.blocks.restore_retired(die, b);
                    continue;
                }
                if top_pu[bi] == NONE {
                    self.blocks.restore_free(die, b);
                    continue;
                }
                self.blocks.restore_written(b);
                let mut next_pu = top_pu[bi] + 1;
                while next_pu < g.pus_per_block && g.is_parity_pu(next_pu) {
                    next_pu += 1;
                }
                if next_pu == g.pus_per_block {
                    to_seal.push(b);
                } else {
                    partial.push((newest[bi], b, next_pu));
                }
            }
            partial.sort_unstable_by(|a, b| b.cmp(a));
            // The two newest partly written blocks stay open (the others are sealed), and
            // collection takes the one with more room (a lone one too): a cut can fall while
            // the die's last free block is in the GC stream with a victim half copied, and after
            // power-on the rest of that victim must fit where collection writes (the host
            // stream takes a block once collection has freed one).
            let (gc, host) = match partial.len() {
                0 => (None, None),
                1 => (Some(partial[0]), None),
                _ if partial[0].2 <= partial[1].2 => (Some(partial[0]), Some(partial[1])),
                _ => (Some(partial[1]), Some(partial[0])),
            };
            self.frontiers.reset_die(die);
            self.collector.reset_die(die);
            to_seal.extend(partial.iter().skip(2).map(|&(_, block, _)| block));
            for (stream, open) in [(Stream::HOST, host), (Stream::GC, gc)] {
                if let Some((_, block, next_pu)) = open {
                    self.frontiers.restore(die, stream, block, next_pu);
                }
            }
        }
        // The candidates and the victim index, in block order as a scan of the states finds
        // them.
        to_seal.sort_unstable();
        for b in to_seal {
            self.seal(b);
        }
        self.verify()
    }

    /// What the firmware reads at power-on to rebuild this state, and how long it takes on
    /// `nand` (reads spread over every die; page transfers share each channel).
    pub fn mount_report(&self, nand: &NandConfig) -> MountReport {
        let g = &self.geometry;
        let mut r = MountReport {
            mapped_units: self.map.mapped_units(),
            ..MountReport::default()
        };
        let mut oob_per_die = vec![0u64; g.dies as usize];
        for die in 0..g.dies {
            let d = self.frontiers.die(die);
            for b in
                die * g.blocks_per_die + self.reserved_blocks_per_die..(die + 1) * g.blocks_per_die
            {
                let open = d.iter().find(|o| o.block == b).copied();
                let pus = match (self.blocks.state(b), open) {
                    (BlockState::Free, _) => continue,
                    (_, Some(o)) => {
                        r.open_blocks += 1;
                        o.next_pu
                    }
                    _ => g.pus_per_block,
                };
                r.written_blocks += 1;
                if open.is_some() || !self.persist.enabled() {
                    oob_per_die[die as usize] += (pus * g.planes_per_die) as u64;
                }
            }
        }
        r.oob_pages = oob_per_die.iter().sum();
        let (map_pages, journal_pages) = self.persist.mount_pages(g.logical_units);
        r.map_pages = map_pages;
        r.journal_pages = journal_pages;
        // Metadata pages are spread round-robin over the dies; they cross the bus whole, an
        // out-of-band read moves only the spare bytes (taken as negligible against tR).
        let meta_per_die = (map_pages + journal_pages).div_ceil(g.dies as u64);
        let page_bytes = (g.units_per_page * g.mapping_unit_bytes) as f64;
        let xfer_ns = page_bytes / nand.bus_mb_per_s * 1e3;
        let read_ns = nand.read_page_us * 1e3 + nand.bus_command_ns as f64;
        let array_ns = oob_per_die
            .iter()
            .map(|&oob| (oob + meta_per_die) as f64 * read_ns)
            .fold(0.0, f64::max);
        let dies_per_channel = g.dies.div_ceil(nand.channels) as f64;
        let bus_ns = meta_per_die as f64 * dies_per_channel * xfer_ns;
        r.mount_ns = array_ns.max(bus_ns).round() as u64;
        r
    }
}
