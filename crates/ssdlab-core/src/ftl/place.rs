//! Placement: where each unit goes. The open program unit of each die's host and GC streams,
//! programs when a unit fills one (RAIN parity pages after it), new blocks from the die's free
//! pool (collection first when the pool runs low), sealing full blocks as victim candidates,
//! and program failures (the data written again elsewhere, the block retired).

use super::*;

impl Ftl {
    /// The current copy of `lba` (if any) goes stale; a sealed block's place among the
    /// greedy victim candidates follows its valid count down. Whether there is one is
    /// checked in line (a sequential fill's units have none).
    #[inline(always)]
    pub(super) fn invalidate(&mut self, lba: Lba) {
        if !self.map.lookup(lba).is_none() {
            self.invalidate_mapped(lba);
        }
    }

    #[inline(never)]
    fn invalidate_mapped(&mut self, lba: Lba) {
        let Some(u) = self.map.unmap(lba) else {
            return;
        };
        // In a bucket: sealed, under the greedy policy (the buckets are empty under others).
        // Its entry, count and key, is the line the map has just written.
        let die = self.div.blocks_per_die.quotient(u.block);
        self.blocks
            .valid_count_fell(self.map.block_entries_mut(), die, u.block);
    }

    /// Place `lba` in the open PU of `die`'s stream; program the PU when it is full.
    /// The hot path of every write and every GC copy: a few stores, no calls.
    #[inline]
    pub(super) fn append<S: NandSink>(&mut self, die: u32, stream: Stream, lba: Lba, sink: &mut S) {
        if self.frontiers.get(die, stream).block == NONE {
            self.allocate_block(die, stream, sink);
        }
        if self.place(die, stream, lba) {
            self.program_pu(die, stream, sink);
        }
    }

    /// Map `lba` to the next unit of the open PU of `die`'s stream (there is one). True when
    /// that filled the PU: it is to be programmed.
    #[inline(always)]
    pub(super) fn place(&mut self, die: u32, stream: Stream, lba: Lba) -> bool {
        let (ppn, block, full) = self.take_units(die, stream, 1);
        self.map.map(lba, ppn, block);
        full
    }

    /// The next `n` free units of the open PU of `die`'s stream (see [`Frontiers::take`]).
    #[inline(always)]
    pub(super) fn take_units(&mut self, die: u32, stream: Stream, n: u32) -> (Ppn, u32, bool) {
        self.frontiers.take(die, stream, n)
    }

    #[inline(never)]
    pub(super) fn program_pu<S: NandSink>(&mut self, die: u32, stream: Stream, sink: &mut S) {
        let ob = *self.frontiers.get(die, stream);
        let kind = match stream {
            Stream::Host(_) => ProgramKind::Host,
            Stream::Gc(_) => ProgramKind::Gc,
        };
        let planes = self.geometry.planes_per_die;
        let (units_per_block, units_per_pu) =
            (self.geometry.units_per_block, self.geometry.units_per_pu);
        sink.program(
            die,
            Program {
                kind,
                host_units: ob.host_fill,
                planes,
                data_ready: ob.data_ready,
                first_ppn: ob.pu_first_ppn(&self.geometry),
            },
        );
        if kind == ProgramKind::Host && self.hold.enabled {
            self.hold.issued(die, stream, sink.timed());
        }
        let pus_per_block = self.geometry.pus_per_block;
        let base = ob.block * pus_per_block;
        self.map.set_pu_sequence(base + ob.next_pu, self.sequence);
        self.sequence = self.sequence.wrapping_add(1);
        match kind {
            ProgramKind::Host => self.counters.pu_programs_host += 1,
            _ => self.counters.pu_programs_gc += 1,
        }
        let mut next_pu = ob.next_pu + 1;
        while next_pu < pus_per_block && self.geometry.is_parity_pu(next_pu) {
            sink.program(
                die,
                Program {
                    kind: ProgramKind::Parity,
                    host_units: 0,
                    planes,
                    data_ready: SimTime::ZERO,
                    first_ppn: ob.block * units_per_block + next_pu * units_per_pu,
                },
            );
            self.map.set_pu_sequence(base + next_pu, self.sequence);
            self.sequence = self.sequence.wrapping_add(1);
            self.counters.pu_programs_parity += 1;
            next_pu += 1;
        }
        let sealed = self.frontiers.programmed(die, stream, next_pu);
        if sealed {
            self.seal(ob.block);
            if self.persist.enabled() {
                self.persist.block_sealed(&mut self.counters, sink);
            }
        }
        if self.program_fail > 0.0 && self.fault_rng.unit_f64() < self.program_fail {
            self.program_failed(die, stream, ob.block, ob.pu_first_ppn(&self.geometry), sink);
        }
        if stream.is_host() {
            self.host_pu_programmed(die, stream, sink);
            self.gc_after_host_program(die, sink);
        }
    }

    /// The die after `die` that takes host data (a failed die is skipped): the next of the
    /// drive's dies, or with placement of the reclaim group's.
    #[inline]
    pub(super) fn next_host_die(&self, die: u32) -> u32 {
        let after = |d: u32| {
            if self.dies_per_group == self.geometry.dies {
                (d + 1) % self.geometry.dies
            } else {
                let first = d - d % self.dies_per_group;
                first + (d - first + 1) % self.dies_per_group
            }
        };
        let next = after(die);
        if next == self.failed_die {
            after(next)
        } else {
            next
        }
    }

    /// The die that takes the host's next PU after `die`: the next in turn, or with
    /// `ftl.host_die_choice = "skip-collecting"` the first with no collection queued of the
    /// `ftl.host_die_candidates` dies in turn (the next in turn if each of them has some).
    #[inline]
    pub(super) fn next_host_die_for<S: NandSink>(&self, die: u32, sink: &S) -> u32 {
        let next = self.next_host_die(die);
        if self.host_die_candidates <= 1 || !sink.die_collecting(next) {
            return next;
        }
        let mut d = next;
        for _ in 1..self.host_die_candidates {
            d = self.next_host_die(d);
            if !sink.die_collecting(d) {
                return d;
            }
        }
        next
    }

    /// `die` failed: host data goes to the other dies from now on, and the die does no
    /// background collection. Its data stays mapped (a read of it is rebuilt or fails).
    pub fn fail_die(&mut self, die: u32) {
        self.failed_die = die;
        if self.host_die == die {
            self.host_die = self.next_host_die(die);
        }
    }

    pub fn failed_die(&self) -> Option<u32> {
        (self.failed_die != NONE).then_some(self.failed_die)
    }

    /// Fail program and erase operations at these rates, drawn from a stream of `seed`.
    pub fn set_faults(&mut self, program_fail: f64, erase_fail: f64, seed: u64) {
        self.program_fail = program_fail;
        self.erase_fail = erase_fail;
        self.fault_rng = Rng::derive(seed, "ftl-faults");
    }

    /// The program of the PU at `first_ppn` in `block` failed its status check: the block is
    /// closed and marked for retirement (collected first, never erased or written again), and
    /// the PU's data, still in the controller, is written again elsewhere on the die (through
    /// the collector's stream: the host's buffer space is released by the failed program).
    #[inline(never)]
    pub(super) fn program_failed<S: NandSink>(
        &mut self,
        die: u32,
        stream: Stream,
        block: u32,
        first_ppn: u32,
        sink: &mut S,
    ) {
        self.counters.program_failures += 1;
        if !self.blocks.is_retiring(block) {
            if !self.blocks.may_retire(die) {
                self.counters.failed_blocks_kept += 1;
                return; // the program is retried in place (no spare left to retire into)
            }
            self.blocks.mark_retiring(die, block);
        }
        if self.frontiers.abandon(die, stream, block) {
            self.seal(block);
        }
        let to = self.gc_stream_of(block);
        if self.placement.is_some() {
            self.placement_media_reallocated(block, sink.now_ns());
        }
        for ppn in first_ppn..first_ppn + self.geometry.units_per_pu {
            let lba = self.map.reverse(Ppn(ppn));
            if lba.is_none() {
                continue;
            }
            self.invalidate(lba);
            self.append(die, to, lba, sink);
            self.map.record(lba, Ppn(ppn), TAG_RELOCATION);
            self.map_updated(lba, sink);
            self.counters.program_fail_rewrites += 1;
        }
    }

    #[inline(never)]
    pub(super) fn allocate_block<S: NandSink>(&mut self, die: u32, stream: Stream, sink: &mut S) {
        if stream.is_host() {
            self.gc_before_host_block(die, sink);
        }
        self.take_block(die, stream, sink);
    }

    /// Open a free block of `die` for `stream`, collection done (`allocate_block` without the
    /// schedule's foreground hook).
    pub(super) fn take_block<S: NandSink>(&mut self, die: u32, stream: Stream, sink: &mut S) {
        if stream.is_host() && self.zoned.is_none() {
            // Keep one block for the collector: the host may not take the last one.
            while self.blocks.free_len(die) < 2 {
                // Collecting more while victims are held gains no block: end a hold instead.
                if self.hold.enabled && self.break_hold(die, sink) {
                    continue;
                }
                if !self.collect_one_step(die, sink) {
                    panic!("die {die}: no free block and nothing to collect (over-provisioning too small)");
                }
            }
        }
        if self.blocks.free_len(die) == 0 {
            self.break_hold(die, sink);
        }
        let block = self.blocks.open(die).unwrap_or_else(|| {
            panic!(
                "die {die}: free pool empty{}",
                if self.zoned.is_some() {
                    " (a zoned namespace's zones and their padding outgrew the drive's blocks)"
                } else {
                    ""
                }
            )
        });
        debug_assert_eq!(self.map.valid(block), 0);
        self.frontiers.open(die, stream, block);
        if let Some(p) = self.placement.as_mut() {
            p.opened(block, stream);
        }
    }

    /// The collector stream `block`'s data is copied to (placement keeps a persistently
    /// isolated handle's data in units of its own).
    #[inline]
    pub(super) fn gc_stream_of(&self, block: u32) -> Stream {
        match &self.placement {
            None => Stream::GC,
            Some(p) => p.gc_stream(block),
        }
    }

    /// `block` is full: it becomes a collection candidate.
    pub(super) fn seal(&mut self, block: u32) {
        let die = self.div.blocks_per_die.quotient(block);
        self.blocks
            .seal(die, block, self.map.block_entries_mut(), self.sequence);
    }
}
