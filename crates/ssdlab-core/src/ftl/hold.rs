//! The erase hold: a drive without full power-loss protection keeps the copy a host write
//! superseded until that write is on the NAND.
//!
//! With `map` or `none` protection a power cut loses host data still in the DRAM buffer or in
//! a program not yet run ([`crate::power_loss`]); the unit then falls back to the copy the
//! lost write superseded. That copy is stale, so garbage collection may take its block as a
//! victim, and an erase of it would leave the unit with nothing: a write made durable by an
//! earlier FLUSH or FUA would read back as zeros. Firmware therefore does not erase a block
//! while it holds the superseded copy of host data not yet programmed: the block's copying
//! ends as usual, its erase waits until those programs are done (and the partial pages
//! holding such data are programmed at once, padded as for a FLUSH, so that the wait is
//! short). Zheng et al. (FAST'13, "Understanding the Robustness of SSDs under Power Fault")
//! found exactly this class of failure, "unserializable writes", in 13 of 15 drives.
//!
//! Each superseded copy *pins* its block. The pins of units in a die's open host PU move with
//! it when the PU is programmed; host programs on one die complete in the order they were
//! issued, so each die keeps a queue of its programs' pins and releases the front one at each
//! `ProgramDone`. The hold is on while a data store follows the map-change journal (the NBD
//! emulator and its crash harness: where data is kept) and only for timed operations; an
//! untimed write is on the NAND at once and pins nothing.

use super::{Ftl, NandSink, Stream, NONE};
use std::collections::VecDeque;

#[derive(Clone, Debug, Default)]
pub(super) struct EraseHold {
    /// The drive's power-loss protection is not `full`.
    pub enabled: bool,
    /// Per block: superseded copies in it whose successors are not programmed yet.
    pins: Vec<u32>,
    /// Per die and host stream (`die * host_streams + h`): the blocks pinned by units in its
    /// open host PU (one entry per unit).
    open: Vec<Vec<u32>>,
    host_streams: usize,
    /// Per die: its timed host programs issued and done so far (a program's ordinal is the
    /// count issued before it; they are done in issue order).
    programs_issued: Vec<u64>,
    programs_done: Vec<u64>,
    /// Per die: (ordinal, pins) of its programs issued and not done that hold pins, in issue
    /// order (most hold none: no data kept, or no copy superseded), and those pins' blocks,
    /// one after another in the same order.
    issued: Vec<VecDeque<(u64, u32)>>,
    issued_blocks: Vec<VecDeque<u32>>,
    /// Collected victims (nothing valid left) whose erase waits for their pins.
    pub waiting: Vec<u32>,
    /// A victim waits on units still in open PUs: program those PUs.
    pub flush_wanted: bool,
    /// Pins not yet released.
    outstanding: u64,
}

impl EraseHold {
    pub fn new(blocks: usize, dies: usize, host_streams: usize) -> EraseHold {
        EraseHold {
            enabled: false,
            pins: vec![0; blocks],
            open: vec![Vec::new(); dies * host_streams],
            host_streams,
            programs_issued: vec![0; dies],
            programs_done: vec![0; dies],
            issued: vec![VecDeque::new(); dies],
            issued_blocks: vec![VecDeque::new(); dies],
            waiting: Vec::new(),
            flush_wanted: false,
            outstanding: 0,
        }
    }

    /// Power-on or secure erase: nothing is in flight, nothing waits.
    pub fn reset(&mut self) {
        self.pins.fill(0);
        self.open.iter_mut().for_each(Vec::clear);
        self.programs_issued.fill(0);
        self.programs_done.fill(0);
        self.issued.iter_mut().for_each(VecDeque::clear);
        self.issued_blocks.iter_mut().for_each(VecDeque::clear);
        self.waiting.clear();
        self.flush_wanted = false;
        self.outstanding = 0;
    }

    /// The open host PU of `stream` on `die`.
    #[inline]
    fn slot(&self, die: u32, stream: Stream) -> usize {
        let Stream::Host(h) = stream else {
            unreachable!("host streams pin")
        };
        die as usize * self.host_streams + h as usize
    }

    /// A host write placed in `die`'s open PU of host stream `stream` superseded a copy in
    /// `block`.
    #[inline]
    pub fn pin(&mut self, die: u32, stream: Stream, block: u32) {
        self.pins[block as usize] += 1;
        self.outstanding += 1;
        let slot = self.slot(die, stream);
        self.open[slot].push(block);
    }

    /// `die`'s open PU of host stream `stream` was issued as a program: its pins wait for
    /// that program, or, when it is untimed (on the NAND at once), are released now.
    #[inline]
    pub fn issued(&mut self, die: u32, stream: Stream, timed: bool) {
        let slot = self.slot(die, stream);
        let open = &mut self.open[slot];
        if timed {
            let ordinal = self.programs_issued[die as usize];
            self.programs_issued[die as usize] += 1;
            if !open.is_empty() {
                self.issued[die as usize].push_back((ordinal, open.len() as u32));
                self.issued_blocks[die as usize].extend(open.drain(..));
            }
        } else {
            self.outstanding -= open.len() as u64;
            for b in open.drain(..) {
                self.pins[b as usize] -= 1;
            }
        }
    }

    /// `die`'s oldest host program not yet done is done: its pins go. Returns whether blocks
    /// wait for their pins to go (then [`EraseHold::take_unpinned`] hands back those free now).
    /// Called at every host program's end, so the common case (nothing waits) returns at once,
    /// inline and with nothing built (callgrind, a timed 128 KiB fill of crucial-m500-120: 51
    /// instructions a call when it returned a `Vec`).
    #[inline]
    pub fn program_done(&mut self, die: u32) -> bool {
        let d = die as usize;
        let ordinal = self.programs_done[d];
        if ordinal == self.programs_issued[d] {
            return false;
        }
        self.programs_done[d] += 1;
        if self.issued[d].front().is_some_and(|&(o, _)| o == ordinal) {
            self.release_front(d);
        }
        !self.waiting.is_empty()
    }

    /// The pins of `d`'s front issued program go.
    #[inline(never)]
    fn release_front(&mut self, d: usize) {
        let (_, count) = self.issued[d].pop_front().expect("a front program");
        self.outstanding -= count as u64;
        for _ in 0..count {
            let b = self.issued_blocks[d].pop_front().expect("a pin per count");
            self.pins[b as usize] -= 1;
        }
    }

    /// The waiting blocks that nothing pins any more, taken out of `waiting`.
    pub fn take_unpinned(&mut self) -> Vec<u32> {
        let pins = &self.pins;
        let (free, still): (Vec<u32>, Vec<u32>) =
            self.waiting.iter().partition(|&&b| pins[b as usize] == 0);
        self.waiting = still;
        free
    }

    /// Pins not yet released (host data not yet programmed that superseded a copy).
    pub fn outstanding(&self) -> u64 {
        self.outstanding
    }

    /// Whether units in `die`'s open host PUs pin anything.
    pub fn pins_open(&self, die: u32) -> bool {
        let first = die as usize * self.host_streams;
        self.open[first..first + self.host_streams]
            .iter()
            .any(|o| !o.is_empty())
    }

    /// Whether `block` holds a superseded copy of host data not yet programmed.
    #[inline]
    pub fn pinned(&self, block: u32) -> bool {
        self.pins[block as usize] > 0
    }

    /// Whether a unit in any open (unissued) host PU pins `block`.
    pub fn pinned_by_open(&self, block: u32) -> bool {
        self.open.iter().any(|o| o.contains(&block))
    }
}

/// Free blocks a die with held victims keeps before host writes wait: the collector's two and
/// room for the copies of the victims collected while the holds last. A margin, not a fit:
/// the crash harness on the small example drive at QD32 gave the same results with 4 and 6.
const HOLD_FREE_BLOCKS_MIN: u32 = 6;

/// Free blocks a die keeps while one of its victims waits on the erase hold before it starts
/// another victim or gives the host a new block: the next victim's copies take at most one
/// block (a victim holds at most a block of valid units), one stays for the collector, one for
/// the host. With both gated so, no die runs out of free blocks with only held victims to erase
/// (issue 73, item 14: before, a starved die ended the oldest hold early, and a cut then could
/// lose flushed data).
pub(super) const HOLD_COLLECT_FREE_MIN: u32 = 3;

/// The hold as the FTL keeps it: the host's wait, the held victims' erases.
impl Ftl {
    /// The erase hold makes the host wait: the next host unit needs a new block on a die with
    /// fewer than two free while host data not yet programmed superseded copies that
    /// collecting might have to erase, or with fewer than [`HOLD_COLLECT_FREE_MIN`] free while
    /// a victim of that die already waits on such data. Otherwise the block is taken here,
    /// before the unit pins its old copy, so that collecting for it runs under the same rules.
    pub(super) fn host_must_wait<S: NandSink>(&mut self, sink: &mut S) -> bool {
        let die = self.host_die;
        if self.frontiers.get(die, self.host_stream).block != NONE {
            return false;
        }
        if self.hold.outstanding() == 0 && !self.hold.waiting.is_empty() {
            // Pins released without a program's end (an untimed program): erase now.
            for block in self.hold.take_unpinned() {
                let d = self.div.blocks_per_die.quotient(block);
                self.erase_block(d, block, sink);
            }
        }
        // Checked again after the schedule's collection: a victim it held took free blocks.
        if self.host_blocked(die) {
            return true;
        }
        self.gc_before_host_block(die, sink);
        if self.host_blocked(die) {
            return true;
        }
        self.take_block(die, self.host_stream, sink);
        false
    }

    /// See [`Ftl::host_must_wait`].
    fn host_blocked(&self, die: u32) -> bool {
        let free = self.blocks.free_len(die);
        (free < 2 && self.hold.outstanding() > 0)
            || (free < HOLD_COLLECT_FREE_MIN && self.held_on(die))
    }

    /// A collected victim of `die` waits on the erase hold.
    #[inline]
    pub(super) fn held_on(&self, die: u32) -> bool {
        self.hold.enabled
            && self
                .hold
                .waiting
                .iter()
                .any(|&b| self.div.blocks_per_die.quotient(b) == die)
    }

    /// Program every open host PU holding data that pins a block (padded, as for a FLUSH).
    pub(super) fn program_pinned_pus<S: NandSink>(&mut self, sink: &mut S) {
        self.program_partial_host_pus(sink, |hold, die| hold.pins_open(die));
    }

    /// Hold the erase of blocks holding the superseded copy of host data not yet programmed
    /// (see [`self`], the module): for drives whose power-loss protection is not `full`.
    pub fn set_erase_hold(&mut self, on: bool) {
        self.hold.enabled = on;
    }

    /// Whether the erase hold is on (see [`Ftl::set_erase_hold`]).
    pub fn erase_hold_on(&self) -> bool {
        self.hold.enabled
    }

    /// A host program on `die` is done (its `ProgramDone`): the blocks it held are erased.
    pub fn host_program_done<S: NandSink>(&mut self, die: u32, sink: &mut S) {
        if !self.hold.enabled || !self.hold.program_done(die) {
            return;
        }
        for block in self.hold.take_unpinned() {
            let die = self.div.blocks_per_die.quotient(block);
            self.erase_block(die, block, sink);
        }
    }

    /// Whether the host may place more data now: not while a die with held victims is down
    /// to its last few free blocks (the write waits for the programs that release them, as
    /// it waits for collection on a drive out of free blocks).
    pub fn host_may_write(&self) -> bool {
        !self.hold.enabled
            || self.hold.waiting.iter().all(|&b| {
                let die = self.div.blocks_per_die.quotient(b);
                self.blocks.free_len(die) >= HOLD_FREE_BLOCKS_MIN
            })
    }

    /// Program the open host PUs a held victim waits on, if any (see [`self`], the module).
    #[inline]
    pub fn settle_hold<S: NandSink>(&mut self, sink: &mut S) {
        if self.hold.flush_wanted {
            self.hold.flush_wanted = false;
            self.program_pinned_pus(sink);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `program_done` and `take_unpinned` hand back together: the blocks freed.
    fn done(h: &mut EraseHold, die: u32) -> Vec<u32> {
        if h.program_done(die) {
            h.take_unpinned()
        } else {
            Vec::new()
        }
    }

    /// Pins follow a die's open PU into its program and go when that program is done, in
    /// issue order; a held block is handed back only when nothing pins it.
    #[test]
    fn pins_go_with_the_program_that_makes_their_successors_durable() {
        let mut h = EraseHold::new(8, 2, 1);
        h.pin(0, Stream::HOST, 5);
        h.pin(0, Stream::HOST, 6);
        h.issued(0, Stream::HOST, true);
        h.pin(0, Stream::HOST, 5);
        assert!(h.pinned(5) && h.pinned(6) && h.pins_open(0) && !h.pins_open(1));
        assert_eq!(h.outstanding(), 3);
        h.waiting = vec![5, 6];
        // The first program is done: block 6 is free to erase, block 5 still waits for the
        // unit in the open PU.
        assert_eq!(done(&mut h, 0), vec![6]);
        assert_eq!(h.waiting, vec![5]);
        assert!(h.pinned_by_open(5) && !h.pinned(6));
        // An untimed program releases its pins at once.
        h.issued(0, Stream::HOST, false);
        assert!(!h.pinned(5) && h.outstanding() == 0);
        // A die with no program in flight releases nothing.
        assert!(done(&mut h, 1).is_empty());
        h.reset();
        assert!(h.waiting.is_empty() && h.outstanding() == 0);
    }

    /// With placement a die has a host PU open per handle: a program of one handle's PU takes
    /// only that PU's pins, and the other's stay until its own PU is programmed.
    #[test]
    fn a_handle_s_program_takes_only_its_own_pu_s_pins() {
        let mut h = EraseHold::new(8, 1, 2);
        h.pin(0, Stream::Host(0), 5);
        h.pin(0, Stream::Host(1), 6);
        h.waiting = vec![5, 6];
        h.issued(0, Stream::Host(0), true);
        assert!(h.pins_open(0) && h.pinned_by_open(6) && !h.pinned_by_open(5));
        assert_eq!(done(&mut h, 0), vec![5]);
        assert!(h.pinned(6));
        h.issued(0, Stream::Host(1), true);
        assert!(!h.pins_open(0));
        assert_eq!(done(&mut h, 0), vec![6]);
        assert_eq!(h.outstanding(), 0);
    }

    /// A program that holds no pins between two that do releases nothing: each program's
    /// pins go with that program, not the next one done.
    #[test]
    fn a_program_without_pins_releases_none() {
        let mut h = EraseHold::new(8, 1, 1);
        h.pin(0, Stream::HOST, 5);
        h.issued(0, Stream::HOST, true);
        h.issued(0, Stream::HOST, true);
        h.pin(0, Stream::HOST, 6);
        h.issued(0, Stream::HOST, true);
        h.waiting = vec![5, 6];
        assert_eq!(done(&mut h, 0), vec![5]);
        assert!(done(&mut h, 0).is_empty());
        assert!(h.pinned(6) && h.outstanding() == 1);
        assert_eq!(done(&mut h, 0), vec![6]);
        assert!(done(&mut h, 0).is_empty() && h.outstanding() == 0);
    }
}
