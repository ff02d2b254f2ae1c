//! A zoned namespace in the FTL: each active zone writes through a host stream of its own (a
//! frontier slot, [`crate::zones`] hands them out) striped PU by PU over its group of dies, so
//! a block only ever holds one zone's data; there is no garbage collection of zone data (the
//! host resets zones), and a reset erases the zone's blocks at once.

use super::*;

/// The zone streams' state: where each slot's next PU goes.
pub(super) struct ZoneStreams {
    /// Per slot: the die its next PU goes to.
    next_die: Vec<u32>,
}

impl Ftl {
    /// Set up a zoned namespace of `slots` active zones at most, each striped over
    /// `dies_per_zone` consecutive dies; before any write.
    pub fn set_zoned(&mut self, slots: u32, dies_per_zone: u32) {
        self.frontiers = frontier::Frontiers::with_streams(&self.geometry, slots, 1);
        self.hold = hold::EraseHold::new(
            (self.geometry.dies * self.geometry.blocks_per_die) as usize,
            self.geometry.dies as usize,
            slots as usize,
        );
        self.dies_per_group = dies_per_zone;
        self.host_stream = Stream::HOST;
        self.host_die = 0;
        self.zoned = Some(Box::new(ZoneStreams {
            next_die: vec![0; slots as usize],
        }));
    }

    /// Whether the drive is zoned.
    pub fn is_zoned(&self) -> bool {
        self.zoned.is_some()
    }

    /// The next [`Ftl::write_units`] is of one zone's write: through its `slot`, on its
    /// `group` of dies (the slot's next die there).
    #[cold]
    #[inline(never)]
    pub fn select_zone(&mut self, slot: u32, group: u32) {
        let z = self.zoned.as_ref().expect("a zoned namespace");
        let next = z.next_die[slot as usize];
        let first_die = group * self.dies_per_group;
        // A slot's first write after it was (re)taken starts on its group's first die.
        self.host_die = if (first_die..first_die + self.dies_per_group).contains(&next) {
            next
        } else {
            first_die
        };
        self.host_stream = Stream::Host(slot as u16);
    }

    /// `write_units` of one zone's write (after [`Ftl::select_zone`]) is done: the slot's
    /// next die is where its stream stopped.
    #[cold]
    pub fn zone_wrote(&mut self, slot: u32) {
        let die = self.host_die;
        self.zoned.as_mut().expect("zoned").next_die[slot as usize] = die;
    }

    /// A zone's PU on `die` was programmed through stream `slot`: its next PU goes to `next`.
    pub(super) fn zone_pu_programmed(&mut self, slot: u16, next: u32) {
        if let Some(z) = self.zoned.as_mut() {
            z.next_die[slot as usize] = next;
        }
        if self.host_stream == Stream::Host(slot) {
            self.host_die = next;
        }
    }

    /// A zone left the active states and its admitted units are all here: close the blocks
    /// of `close` (its slot and dies group), and for a reset empty its units `reset` and erase
    /// them (what `crate::zones::Released` says).
    pub fn zone_release<S: NandSink>(
        &mut self,
        close: Option<(u32, u32)>,
        reset: Option<(u32, u32)>,
        sink: &mut S,
    ) {
        if let Some((slot, group)) = close {
            self.zone_released(slot, group, sink);
        }
        if let Some(units) = reset {
            self.zone_reset(units, TAG_ZONE_RESET, sink);
        }
    }

    /// `slot`'s zone is no longer active (full, finished or reset) and all its data has been
    /// written here: its partly filled PUs are programmed (padded) and its open blocks closed,
    /// so the next zone to take the slot starts blocks of its own.
    pub fn zone_released<S: NandSink>(&mut self, slot: u32, group: u32, sink: &mut S) {
        let stream = Stream::Host(slot as u16);
        let first = group * self.dies_per_group;
        for die in first..first + self.dies_per_group {
            self.program_padded(die, stream, sink);
            let ob = *self.frontiers.get(die, stream);
            if ob.block != NONE && self.frontiers.abandon(die, stream, ob.block) {
                self.seal(ob.block);
            }
        }
        if let Some(z) = self.zoned.as_mut() {
            z.next_die[slot as usize] = first;
        }
    }

    /// A zone reset: its units `units` are emptied (they read as unwritten) and the blocks
    /// that held them, which held nothing else, are erased now (no copy: nothing in them is
    /// valid). The zone's slot was released first ([`Ftl::zone_released`]).
    pub fn zone_reset<S: NandSink>(&mut self, units: (u32, u32), tag: u64, sink: &mut S) {
        let upb = self.div.units_per_block;
        let mut blocks: Vec<u32> = Vec::new();
        for lba in units.0..units.1 {
            let ppn = self.map.lookup(Lba(lba));
            if !ppn.is_none() {
                let block = upb.quotient(ppn.0);
                if blocks.last() != Some(&block) {
                    blocks.push(block);
                }
            }
            self.trim_unit(lba, tag, sink);
        }
        blocks.sort_unstable();
        blocks.dedup();
        for block in blocks {
            let die = self.div.blocks_per_die.quotient(block);
            if self.blocks.state(block) == BlockState::Sealed && self.map.valid(block) == 0 {
                self.blocks
                    .take_victim(die, block, self.map.block_entries_mut());
                self.erase_block(die, block, sink);
            }
        }
    }
}
