//! The write frontiers: for each stream that writes (the host's data, the collector's copies;
//! placement handles, zones and an SLC cache are further streams to come), each die's open
//! block and the program unit (PU) being filled in it. [`Frontiers`] is the only writer of
//! a frontier; its lifecycle, each verb asserting the state it leaves:
//! 1. **closed -> open** ([`Frontiers::open`]): a free block of the die (from
//!    [`super::blocks::Blocks`]) becomes the stream's open block, its first PU empty.
//! 2. **filling** ([`Frontiers::take`], [`Frontiers::take_host_run`]): units of the PU being
//!    filled are given out, the data mapped to them by the caller; the last one fills it.
//! 3. **programmed** ([`Frontiers::programmed`]): the PU went to the NAND; the next PU starts,
//!    or, the block being full, the frontier closes (the caller seals the block).
//! 4. **abandoned** ([`Frontiers::abandon`]): a failed program closes the block early.
//!
//! Power-on and secure erase close every frontier ([`Frontiers::reset`]); the power-on rebuild
//! reopens them where the firmware finds them ([`Frontiers::restore`]).

use super::map::Ppn;
use super::NONE;
use crate::config::Geometry;
use crate::time::SimTime;

/// Who writes into a frontier.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Stream {
    Host,
    Gc,
}

/// One stream's frontier on one die.
#[derive(Clone, Copy, Debug)]
pub(super) struct OpenBlock {
    /// NONE when the stream has no open block.
    pub block: u32,
    pub next_pu: u32,
    /// Units placed in the PU being filled.
    pub fill: u32,
    /// Of those, units that came from the host (they hold write-buffer space).
    pub host_fill: u32,
    /// When the last host unit placed in the PU arrived in DRAM.
    pub data_ready: SimTime,
}

impl OpenBlock {
    /// The first physical unit of the PU being filled.
    #[inline]
    pub fn pu_first_ppn(&self, g: &Geometry) -> u32 {
        self.block * g.units_per_block + self.next_pu * g.units_per_pu
    }
}

pub(super) const NO_OPEN_BLOCK: OpenBlock = OpenBlock {
    block: NONE,
    next_pu: 0,
    fill: 0,
    host_fill: 0,
    data_ready: SimTime::ZERO,
};

/// One die's frontiers, a stream each.
#[derive(Clone, Debug)]
pub(super) struct DieFrontiers {
    pub host: OpenBlock,
    pub gc: OpenBlock,
}

impl DieFrontiers {
    #[inline(always)]
    fn of(&self, stream: Stream) -> &OpenBlock {
        match stream {
            Stream::Host => &self.host,
            Stream::Gc => &self.gc,
        }
    }

    #[inline(always)]
    fn of_mut(&mut self, stream: Stream) -> &mut OpenBlock {
        match stream {
            Stream::Host => &mut self.host,
            Stream::Gc => &mut self.gc,
        }
    }
}

/// Every die's frontiers.
pub(super) struct Frontiers {
    dies: Vec<DieFrontiers>,
    units_per_block: u32,
    units_per_pu: u32,
    pus_per_block: u32,
}

impl Frontiers {
    pub fn new(g: &Geometry) -> Frontiers {
        Frontiers {
            dies: vec![
                DieFrontiers {
                    host: NO_OPEN_BLOCK,
                    gc: NO_OPEN_BLOCK,
                };
                g.dies as usize
            ],
            units_per_block: g.units_per_block,
            units_per_pu: g.units_per_pu,
            pus_per_block: g.pus_per_block,
        }
    }

    /// `stream`'s frontier on `die`.
    #[inline(always)]
    pub fn get(&self, die: u32, stream: Stream) -> &OpenBlock {
        self.dies[die as usize].of(stream)
    }

    /// Both frontiers of `die`.
    #[inline(always)]
    pub fn die(&self, die: u32) -> &DieFrontiers {
        &self.dies[die as usize]
    }

    /// Every die's frontiers, in die order.
    pub fn iter(&self) -> impl Iterator<Item = &DieFrontiers> {
        self.dies.iter()
    }

    /// Step 1: `block` (free, of `die`) opens for `stream`; a host unit's arrival noted
    /// before it ([`Frontiers::host_data_ready`]) stays with the PU.
    #[inline]
    pub fn open(&mut self, die: u32, stream: Stream, block: u32) {
        let ob = self.dies[die as usize].of_mut(stream);
        debug_assert_eq!(
            ob.block, NONE,
            "die {die}: {stream:?} already has a block open"
        );
        *ob = OpenBlock {
            block,
            data_ready: ob.data_ready,
            ..NO_OPEN_BLOCK
        };
    }

    /// A host unit arriving in DRAM at `at` goes into `die`'s host PU: the PU's program waits
    /// for the latest.
    #[inline(always)]
    pub fn host_data_ready(&mut self, die: u32, at: SimTime) {
        let ob = &mut self.dies[die as usize].host;
        ob.data_ready = ob.data_ready.max(at);
    }

    /// Step 2: the next `n` free units of the open PU of `die`'s stream (there is one, with
    /// room for them), taken: (the first, their block, whether they filled the PU). The
    /// caller maps data to them; a filled PU is to be programmed.
    #[inline(always)]
    pub fn take(&mut self, die: u32, stream: Stream, n: u32) -> (Ppn, u32, bool) {
        let (units_per_block, units_per_pu) = (self.units_per_block, self.units_per_pu);
        let ob = self.dies[die as usize].of_mut(stream);
        debug_assert!(
            ob.block != NONE && ob.fill + n <= units_per_pu,
            "more units than the PU has left"
        );
        let ppn = ob.block * units_per_block + ob.next_pu * units_per_pu + ob.fill;
        ob.fill += n;
        ob.host_fill += (stream == Stream::Host) as u32 * n;
        (Ppn(ppn), ob.block, ob.fill == units_per_pu)
    }

    /// Step 2 for a run of `n` host units that arrived by `data_ready`: as
    /// [`Frontiers::host_data_ready`] and [`Frontiers::take`] of the host stream.
    #[inline(always)]
    pub fn take_host_run(&mut self, die: u32, n: u32, data_ready: SimTime) -> (Ppn, u32, bool) {
        self.host_data_ready(die, data_ready);
        self.take(die, Stream::Host, n)
    }

    /// Step 3: the PU being filled went to the NAND, and its next one (after any parity PUs)
    /// is `next_pu`; past the block's last the frontier closes. Whether it did: the block is
    /// full.
    #[inline]
    pub fn programmed(&mut self, die: u32, stream: Stream, next_pu: u32) -> bool {
        let pus_per_block = self.pus_per_block;
        let ob = self.dies[die as usize].of_mut(stream);
        debug_assert!(
            ob.block != NONE && next_pu > ob.next_pu,
            "die {die}: {stream:?} programmed PU {} with none open",
            ob.next_pu
        );
        let sealed = next_pu == pus_per_block;
        if sealed {
            *ob = NO_OPEN_BLOCK;
        } else {
            ob.fill = 0;
            ob.host_fill = 0;
            ob.data_ready = SimTime::ZERO;
            ob.next_pu = next_pu;
        }
        sealed
    }

    /// Step 4: a program of `block` failed; if it is `stream`'s open block on `die` the
    /// frontier closes. Whether it was.
    pub fn abandon(&mut self, die: u32, stream: Stream, block: u32) -> bool {
        let ob = self.dies[die as usize].of_mut(stream);
        if ob.block != block {
            return false;
        }
        *ob = NO_OPEN_BLOCK;
        true
    }

    /// Power-on or secure erase: nothing open anywhere.
    pub fn reset(&mut self) {
        for die in 0..self.dies.len() as u32 {
            self.reset_die(die);
        }
    }

    /// Power-on: nothing open on `die`.
    pub fn reset_die(&mut self, die: u32) {
        let d = &mut self.dies[die as usize];
        d.host = NO_OPEN_BLOCK;
        d.gc = NO_OPEN_BLOCK;
    }

    /// The power-on rebuild found `block` of `die` written up to PU `next_pu` for `stream`.
    pub fn restore(&mut self, die: u32, stream: Stream, block: u32, next_pu: u32) {
        *self.dies[die as usize].of_mut(stream) = OpenBlock {
            block,
            next_pu,
            ..NO_OPEN_BLOCK
        };
    }
}
