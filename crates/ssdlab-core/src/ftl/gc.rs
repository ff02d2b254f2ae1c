//! Garbage collection: when the firmware collects (scheduling), which block (victim policy,
//! static wear levelling) and the copying itself.

use super::collector::Pace;
use super::*;

/// Source units of a victim whose map entries `collect_step` starts loading at once, ahead of
/// copying them (rounded up to whole PUs), on a drive of up to 128 dies.
pub(super) const GC_AHEAD_UNITS: u32 = 32;

/// The look-ahead's units over all dies. Each collecting die holds up to two chunks of map entries
/// loaded ahead of use (the chunk it copies and the next), each entry on a cache line of its own (a
/// victim's units belong to random LBAs): 4,096 units per chunk over all dies is 512 KiB of lines,
/// half the 1 MiB L2 of a Zen 4 core, so they can still be there when the copy comes. Steps of one
/// die are as far apart as there are dies collecting, and with 32 units on each of 512 dies (2 MiB
/// of lines) they can be evicted before use; this VM has no counters to show it, the wall time does
/// (micron-p320h-700, GC steady state, `steady PRESET 40 0.5 1` alternated nine times: 8 units
/// instead of 32 took 290.5-398.8 -> 284.1-329.9 ns per NAND unit op, faster every time, and the
/// untimed writes 6% less wall time; micron-p420m-1400 -6%).
pub(super) const GC_AHEAD_UNITS_ALL_DIES: u32 = 4096;

/// One die's look-ahead chunk: `GC_AHEAD_UNITS`, fewer on drives of more than 128 dies so
/// that all of them stay within `GC_AHEAD_UNITS_ALL_DIES`, and whole PUs.
pub(super) fn gc_ahead_units(dies: u32, units_per_pu: u32) -> u32 {
    let units = (GC_AHEAD_UNITS_ALL_DIES / dies.max(1)).clamp(1, GC_AHEAD_UNITS);
    units.div_ceil(units_per_pu) * units_per_pu
}

impl Ftl {
    /// Foreground collection after a host PU on `die` (paced and burst scheduling): while the
    /// schedule collects ([`Ftl::keeps_collecting`]), copy victim data in proportion to host
    /// writes: with the victim's pace v / (capacity - v) units per host unit, so a victim is
    /// freed by the time the host has filled the space it gives back; with the nominal pace
    /// (`ftl.gc_pace = "nominal"`) the ratio sized for the drive's own spare, at least the
    /// victim's below `gc_foreground_free_blocks_min` (the emergency). The bite is a program
    /// unit's worth per step (paced) or the whole victim once the credit covers it (burst: host
    /// programs on the die wait behind it). A victim left part-collected when collection stops
    /// stays the die's victim until it resumes.
    pub(super) fn gc_after_host_program<S: NandSink>(&mut self, die: u32, sink: &mut S) {
        let s = self.collector.schedule;
        if matches!(
            s.mode,
            GcForegroundMode::OnDemand | GcForegroundMode::Deferred
        ) {
            return;
        }
        let pace = match s.pace {
            Pace::Victim => {
                if self.collector.victim(die) == NONE
                    && (!self.keeps_collecting(die) || !self.select_victim(die))
                {
                    return;
                }
                self.collector.ratio(die)
            }
            Pace::Nominal(ratio) => {
                // The phase is the drive's (its free blocks summed over the dies: one
                // processor runs one schedule), so every die collects or none does.
                self.collector.phase(self.blocks.free_total());
                if !self.keeps_collecting(die) {
                    self.collector.forgive(die);
                    return;
                }
                if self.collector.victim(die) == NONE && !self.select_victim(die) {
                    return;
                }
                if self.blocks.free_len(die) < s.fg_free_min {
                    ratio.max(self.collector.ratio(die))
                } else {
                    ratio
                }
            }
        };
        self.collector
            .owe(die, self.geometry.units_per_pu as f64 * pace);
        if s.mode == GcForegroundMode::Burst {
            let victim = self.collector.victim(die);
            if self.collector.credit(die) >= self.map.valid(victim) as f64 {
                while self.collector.victim(die) == victim {
                    let copied = self.collect_step(die, sink);
                    self.collector.paid(die, copied);
                }
                if !self.keeps_collecting(die) {
                    self.collector.forgive(die);
                } else {
                    self.select_victim(die);
                }
            }
            return;
        }
        while self.collector.victim(die) != NONE && self.collector.credit(die) > 0.0 {
            let copied = self.collect_step(die, sink);
            self.collector.paid(die, copied);
            if self.collector.victim(die) == NONE
                && (!self.keeps_collecting(die) || !self.select_victim(die))
            {
                self.collector.forgive(die);
                break;
            }
        }
    }

    /// Whether paced or burst collection goes on on `die`: while it is below
    /// `gc_foreground_free_blocks_min`, and with the nominal pace also while the drive is
    /// between its watermarks on the way up.
    #[inline]
    fn keeps_collecting(&self, die: u32) -> bool {
        self.blocks.free_len(die) < self.collector.schedule.fg_free_min
            || (self.collector.collecting()
                && matches!(self.collector.schedule.pace, Pace::Nominal(_)))
    }

    /// The host stream of `die` needs a new block (on-demand and deferred scheduling). On
    /// demand: below `gc_foreground_free_blocks_min`, collect this die back up to it. Deferred:
    /// with the die down to its last free blocks, collect every die up to
    /// `gc_deferred_free_blocks_target`. The flash work is queued ahead of the host programs
    /// that follow, so host writes wait behind it.
    pub(super) fn gc_before_host_block<S: NandSink>(&mut self, die: u32, sink: &mut S) {
        match self.collector.schedule.mode {
            GcForegroundMode::OnDemand => {
                // Bounded, as the deferred round is: a die whose sealed blocks are all full
                // (the rest of its spare in victims whose erase is held) cannot gain blocks.
                let victims_max =
                    self.collector.selections(die) + self.geometry.blocks_per_die as u64;
                while self.blocks.free_len(die) < self.collector.schedule.fg_free_min
                    && self.collector.selections(die) <= victims_max
                {
                    if !self.collect_one_step(die, sink) {
                        break;
                    }
                }
            }
            GcForegroundMode::Deferred if self.blocks.free_len(die) <= 2 => {
                self.counters.gc_deferred_rounds += 1;
                let dies = self.geometry.dies;
                for k in 0..dies {
                    let d = (die + k) % dies;
                    if d == self.failed_die {
                        continue;
                    }
                    // Bounded: a die whose sealed blocks are all full cannot gain blocks.
                    let victims_max =
                        self.collector.selections(d) + self.geometry.blocks_per_die as u64;
                    while (self.blocks.free_len(d) < self.collector.schedule.deferred_free_target
                        || self.collector.victim(d) != NONE)
                        && self.collector.selections(d) <= victims_max
                    {
                        if !self.collect_one_step(d, sink) {
                            break;
                        }
                    }
                }
            }
            _ => {}
        }
    }

    /// One step of collection on `die` regardless of pacing. False if there is nothing to collect.
    pub(super) fn collect_one_step<S: NandSink>(&mut self, die: u32, sink: &mut S) -> bool {
        if self.collector.victim(die) == NONE && !self.select_victim(die) {
            return false;
        }
        self.collect_step(die, sink);
        true
    }

    /// Idle time (the schedule's third hook): the next background collection step, as (when,
    /// die): of the dies with work to do (below `gc_background_free_blocks_target`, or a
    /// victim under way), the one that can start soonest, no earlier than `from` (the end of
    /// the idle timer). `die_idle_from(die)`: when the die's queue is empty and its array free
    /// (None while it is busy). Collect with [`Ftl::collect_background_step`].
    pub fn gc_on_idle(
        &self,
        from: SimTime,
        die_idle_from: impl Fn(u32) -> Option<SimTime>,
    ) -> Option<(SimTime, u32)> {
        let mut best: Option<(SimTime, u32)> = None;
        for die in 0..self.geometry.dies {
            if !self.background_work_pending(die) {
                continue;
            }
            if let Some(at) = die_idle_from(die) {
                let at = at.max(from);
                if best.is_none_or(|(t, _)| at < t) {
                    best = Some((at, die));
                }
            }
        }
        best
    }

    /// Idle time a drive waits before background collection starts (`ftl.gc_background_idle_us`).
    pub fn gc_idle_delay(&self) -> crate::time::SimDuration {
        self.collector.schedule.idle
    }

    /// Background collection when the drive is idle: one step on `die` if it is below the
    /// background target. Returns whether it did anything.
    pub fn collect_background_step<S: NandSink>(&mut self, die: u32, sink: &mut S) -> bool {
        let free = self.blocks.free_len(die);
        if self.collector.victim(die) == NONE && free >= self.collector.schedule.bg_free_target {
            return false;
        }
        if self.collector.victim(die) == NONE && self.collection_gated(die) {
            // No victim may start until pins go: with the host idle nothing else programs the
            // open PUs holding the pinning data, so program them (their ends release the pins).
            let pinned = self.open_pins();
            self.program_pinned_pus(sink);
            return pinned;
        }
        let did = self.collect_one_step(die, sink);
        // A victim held on units in open PUs: with the host idle nothing else programs them.
        self.settle_hold(sink);
        did
    }

    fn background_work_pending(&self, die: u32) -> bool {
        let free = self.blocks.free_len(die);
        let victim = self.collector.victim(die);
        die != self.failed_die
            && (victim != NONE || free < self.collector.schedule.bg_free_target)
            // Gated by the hold with nothing to program: the pins go with programs in flight.
            && (victim != NONE || !self.collection_gated(die) || self.open_pins())
    }

    /// A die short of free blocks with a victim whose erase is held starts no other victim
    /// (see `select_victim`).
    #[inline]
    fn collection_gated(&self, die: u32) -> bool {
        self.blocks.free_len(die) < hold::HOLD_COLLECT_FREE_MIN && self.held_on(die)
    }

    /// Whether units in any die's open host PU pin a block.
    fn open_pins(&self) -> bool {
        (0..self.geometry.dies).any(|d| self.hold.pins_open(d))
    }

    /// The collector chooses `die`'s next victim; false if it has no sealed block, or while a
    /// victim of `die` waits on the erase hold ([`Ftl::held_on`]) and the die is down to fewer
    /// than [`hold::HOLD_COLLECT_FREE_MIN`] free blocks: the next victim's copies take up to one
    /// block and its erase may be held too, so starting it then could leave the die no block
    /// but a held one (the collection resumes when the programs releasing the pins are done).
    fn select_victim(&mut self, die: u32) -> bool {
        // A zoned namespace's data is the host's to move: the drive never collects it.
        if self.collection_gated(die) || self.zoned.is_some() {
            return false;
        }
        let Some(chosen) = self.collector.select(
            die,
            &mut self.map,
            &mut self.blocks,
            &self.geometry,
            self.sequence,
        ) else {
            return false;
        };
        self.counters.gc_victims += 1;
        self.counters.gc_victim_valid_units += chosen.valid as u64;
        if chosen.wear_leveling {
            self.counters.wear_leveling_victims += 1;
        }
        true
    }

    /// Copy up to one PU of valid units out of `die`'s victim; erase it when it is empty.
    /// Returns the units copied.
    fn collect_step<S: NandSink>(&mut self, die: u32, sink: &mut S) -> u32 {
        let g = &self.geometry;
        let (units_per_block, units_per_pu) = (g.units_per_block, g.units_per_pu);
        let victim = self.collector.victim(die);
        let into = self.gc_stream_of(victim);
        let base = victim * units_per_block;
        let mut copied = 0;
        while self.collector.cursor(die) < units_per_block && copied < units_per_pu {
            // The valid units of one source PU, up to the room left in this step: one
            // (multi-plane) read for them. Their map entries start loading now, so the cache
            // misses overlap.
            let cursor = self.collector.cursor(die);
            let pu_end = (cursor / units_per_pu + 1) * units_per_pu;
            let room = units_per_pu - copied;
            let mut valid = std::mem::take(&mut self.scratch);
            let (n, c) = self
                .map
                .valid_units_of(base + cursor..base + pu_end, &mut valid[..room as usize]);
            let c = c - base;
            self.collector.examined_to(die, c);
            // Start loading the map entries of the coming source units too, a chunk of
            // `ahead` units (at least `GC_AHEAD_UNITS`, whole PUs) at a time: the next steps
            // on this die find them in cache instead of waiting for memory (the map outgrows
            // the caches by far on large drives), and the loads of a chunk wait together. A
            // small PU alone would be too short a reach: two units on micron-p320h's SLC.
            let ahead = self.div.gc_ahead_units;
            let pu_start = pu_end - units_per_pu;
            if ahead.remainder(pu_start) == 0 {
                // The first PU of a chunk loads the next chunk (the first PU of a victim, the
                // rest of its own chunk too).
                let from = if pu_start == 0 {
                    pu_end
                } else {
                    pu_start + ahead.get()
                };
                let to = (pu_start + 2 * ahead.get()).min(units_per_block);
                self.map.prefetch_lookups_of(base + from..base + to);
                // And the reverse entries of the chunk after: the next chunk's look-ahead
                // reads them (the victim's reverse entries are a random block's, not cached).
                let after = (to + ahead.get()).min(units_per_block);
                self.map.prefetch_reverse(base + to..base + after);
            }
            if n == 0 {
                self.scratch = valid;
                continue;
            }
            sink.gc_read(die, self.gc_read_of(valid[0], valid[n - 1], n as u32));
            // Moving a unit changes no other unit of the victim: the same ones are still valid.
            let mut i = 0;
            while i < n {
                // Into the open GC PU, up to its last unit: what `invalidate` and `append` do
                // for a victim's units (the victim is in no bucket), a run of them in one step
                // (the blocks' valid counts once). The map journal's notes of the run follow
                // its moves: they touch only the journal, and call the sink in the same order.
                // A run that fills the PU programs it before its last unit's note, as
                // `append` and `map_updated` one unit at a time would (`write_run` likewise).
                let ob = self.frontiers.get(die, into);
                let run = if self.map.records_changes() || ob.block == NONE {
                    0
                } else {
                    (units_per_pu - ob.fill).min((n - i) as u32)
                };
                if run > 0 {
                    let (to, to_block, full) = self.take_units(die, into, run);
                    // Each unit's out-of-band LBA agrees with the map (checked in a debug
                    // build: the forward entry pointing back at the unit is what made
                    // `valid_units_of` take it, its entry loaded a chunk ahead).
                    let moved = i..i + run as usize;
                    self.map.relocate_run(&mut valid[moved.clone()], to.0);
                    // `valid[moved]` holds the logical units moved now.
                    self.map.valid_moved(victim, to_block, run);
                    let before_program = moved.end - full as usize;
                    if self.persist.enabled() {
                        let lbas = &valid[moved.start..before_program];
                        self.persist
                            .note_updates_each(lbas, &mut self.counters, sink);
                    }
                    if full {
                        self.program_pu(die, into, sink);
                        self.map_updated(Lba(valid[before_program]), sink);
                    }
                    i = moved.end;
                } else {
                    let ppn = Ppn(valid[i]);
                    let lba = self.map.reverse(ppn);
                    debug_assert_eq!(self.map.lookup(lba), ppn);
                    self.invalidate(lba);
                    self.append(die, into, lba, sink);
                    self.map.record(lba, ppn, TAG_RELOCATION);
                    self.map_updated(lba, sink);
                    i += 1;
                }
            }
            self.scratch = valid;
            copied += n as u32;
        }
        self.count_copies(die, victim, copied);
        if self.collector.cursor(die) == units_per_block {
            self.victim_collected(die, sink);
        }
        copied
    }

    /// `copied` units of `die`'s `victim` were copied: by wear levelling or collection, and
    /// for placement's statistics, of the victim's handle.
    #[inline]
    fn count_copies(&mut self, die: u32, victim: u32, copied: u32) {
        if let Some(p) = self.placement.as_mut() {
            p.copied(victim, copied);
        }
        if self.collector.for_wear_leveling(die) {
            self.counters.wear_leveling_units_copied += copied as u64;
        } else {
            self.counters.gc_units_copied += copied as u64;
        }
    }

    /// `die`'s victim holds nothing valid any more: erase it, or, while it holds the superseded
    /// copy of host data not yet programmed, hold its erase until it does not (see [`hold`]).
    fn victim_collected<S: NandSink>(&mut self, die: u32, sink: &mut S) {
        let block = self.collector.victim_done(die);
        if self.hold.enabled && self.hold.pinned(block) {
            self.hold.waiting.push(block);
            self.counters.gc_erases_held += 1;
            if self.hold.pinned_by_open(block) {
                self.hold.flush_wanted = true;
            }
            return;
        }
        self.erase_block(die, block, sink);
    }

    /// `die` has no free block left and victims held (the erase hold, [`hold`]): with nothing
    /// else to write to, the oldest held victim is erased now. A cut before the programs it
    /// waited for are done can then lose flushed data: counted in
    /// `FtlCounters::gc_erase_holds_broken` (a drive this starved has too little spare for its
    /// load; the crash harness reports what a cut then loses).
    pub(super) fn break_hold<S: NandSink>(&mut self, die: u32, sink: &mut S) -> bool {
        let per_die = self.div.blocks_per_die;
        let Some(i) = self
            .hold
            .waiting
            .iter()
            .position(|&b| per_die.quotient(b) == die)
        else {
            return false;
        };
        let block = self.hold.waiting.remove(i);
        self.counters.gc_erase_holds_broken += 1;
        self.erase_block(die, block, sink);
        true
    }

    /// Erase `die`'s collected `block` (retire it if it is marked), and return it to the free
    /// pool; the erase is journalled.
    pub(super) fn erase_block<S: NandSink>(&mut self, die: u32, block: u32, sink: &mut S) {
        assert_eq!(
            self.map.valid(block),
            0,
            "victim {block} erased with valid data"
        );
        // A block marked for retirement is not erased; an erase may fail (see crate::faults).
        let marked = self.blocks.is_retiring(block);
        let retire = marked || {
            sink.erase(die, true);
            self.counters.blocks_erased += 1;
            if let Some(p) = self.placement.as_mut() {
                p.erased(block);
            }
            let failed = self.erase_fail > 0.0 && self.fault_rng.unit_f64() < self.erase_fail;
            self.counters.erase_failures += failed as u64;
            let retire = failed && self.blocks.may_retire(die);
            self.counters.failed_blocks_kept += (failed && !retire) as u64;
            retire
        };
        // Either way the block's data is gone for a store that follows the journal.
        self.map.push_change(MapChange {
            lba: UNMAPPED,
            old_ppn: block * self.geometry.units_per_block,
            new_ppn: if retire { BLOCK_RETIRED } else { UNMAPPED },
            tag: TAG_ERASE,
        });
        if retire {
            self.blocks.retire(block, !marked);
            self.counters.grown_bad_blocks += 1;
        } else {
            self.blocks.erased(die, block);
        }
    }
}
