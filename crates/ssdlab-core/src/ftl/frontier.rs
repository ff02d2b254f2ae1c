//! The write frontiers: for each stream that writes (the host's data, one stream per reclaim
//! unit handle with placement, the collector's copies, shared or per persistently isolated
//! handle; zones and an SLC cache are further streams to come), each die's open
//! block and the program unit (PU) being filled in it. [`Frontiers`] is the only writer of
//! a frontier; its lifecycle, each verb asserting the state it leaves:
//! 1. **closed -> open** ([`Frontiers::open`]): a free block of the die (from
//!    [`super::blocks::Blocks`]) becomes the stream's open block, its first PU empty.
//! 2. **filling** ([`Frontiers::take`], [`Frontiers::take_host_run`]): units of the PU being
//!    filled are given out, the data mapped to them by the caller; the last one fills it.
//! 3. **programmed** ([`Frontiers::programmed`]): the PU went to the NAND; the next PU starts,
//!    or, the block being full, the frontier closes (the caller seals the block).
//! 4. **abandoned** ([`Frontiers::abandon`]): a failed program, or the host moving a handle to
//!    a new reclaim unit, closes the block early.
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
    /// Host data written through reclaim unit handle `h` (0 on a drive without placement).
    Host(u16),
    /// Copies made by garbage collection and wear levelling: 0 the shared stream, `h + 1`
    /// those of persistently isolated handle `h` (see `ftl::placement`).
    Gc(u16),
}

impl Stream {
    /// The host's stream on a drive without placement.
    pub const HOST: Stream = Stream::Host(0);
    /// The collector's shared stream.
    pub const GC: Stream = Stream::Gc(0);

    #[inline(always)]
    pub fn is_host(self) -> bool {
        matches!(self, Stream::Host(_))
    }
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

/// Every die's frontiers: `slots` a die, the host streams' first (one per reclaim unit
/// handle), then the collector's (the shared one, then one per handle).
pub(super) struct Frontiers {
    open: Vec<OpenBlock>,
    /// Host streams a die.
    host_streams: u32,
    /// Frontiers a die.
    slots: u32,
    units_per_block: u32,
    units_per_pu: u32,
    pus_per_block: u32,
}

impl Frontiers {
    /// The frontiers of a drive with `handles` reclaim unit handles (1 without placement:
    /// host and collector).
    pub fn new(g: &Geometry, handles: u32) -> Frontiers {
        let gc_streams = if handles > 1 { handles + 1 } else { 1 };
        Frontiers::with_streams(g, handles, gc_streams)
    }

    /// The frontiers of `host` host streams and `gc` collector streams a die (a zoned
    /// namespace: one host stream per active zone, one collector stream).
    pub fn with_streams(g: &Geometry, host: u32, gc: u32) -> Frontiers {
        let (handles, gc_streams) = (host, gc);
        let slots = handles + gc_streams;
        Frontiers {
            open: vec![NO_OPEN_BLOCK; (g.dies * slots) as usize],
            host_streams: handles,
            slots,
            units_per_block: g.units_per_block,
            units_per_pu: g.units_per_pu,
            pus_per_block: g.pus_per_block,
        }
    }

    /// Host streams a die: one per reclaim unit handle (one without placement).
    #[inline]
    pub fn host_streams(&self) -> u32 {
        self.host_streams
    }

    #[inline(always)]
    fn index(&self, die: u32, stream: Stream) -> usize {
        let slot = match stream {
            Stream::Host(h) => h as u32,
            Stream::Gc(g) => self.host_streams + g as u32,
        };
        (die * self.slots + slot) as usize
    }

    #[inline(always)]
    fn of_mut(&mut self, die: u32, stream: Stream) -> &mut OpenBlock {
        let i = self.index(die, stream);
        &mut self.open[i]
    }

    /// `stream`'s frontier on `die`.
    #[inline(always)]
    pub fn get(&self, die: u32, stream: Stream) -> &OpenBlock {
        &self.open[self.index(die, stream)]
    }

    /// Every frontier of `die`: its host streams', then its collector streams'.
    #[inline]
    pub fn die(&self, die: u32) -> &[OpenBlock] {
        let first = (die * self.slots) as usize;
        &self.open[first..first + self.slots as usize]
    }

    /// Every host stream's frontier on every die.
    pub fn host_all(&self) -> impl Iterator<Item = &OpenBlock> {
        self.open
            .chunks(self.slots as usize)
            .flat_map(|d| d[..self.host_streams as usize].iter())
    }

    /// Step 1: `block` (free, of `die`) opens for `stream`; a host unit's arrival noted
    /// before it ([`Frontiers::host_data_ready`]) stays with the PU.
    #[inline]
    pub fn open(&mut self, die: u32, stream: Stream, block: u32) {
        let ob = self.of_mut(die, stream);
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

    /// A host unit arriving in DRAM at `at` goes into `die`'s PU of host stream `stream`:
    /// the PU's program waits for the latest.
    #[inline(always)]
    pub fn host_data_ready(&mut self, die: u32, stream: Stream, at: SimTime) {
        let ob = self.of_mut(die, stream);
        ob.data_ready = ob.data_ready.max(at);
    }

    /// Step 2: the next `n` free units of the open PU of `die`'s stream (there is one, with
    /// room for them), taken: (the first, their block, whether they filled the PU). The
    /// caller maps data to them; a filled PU is to be programmed.
    #[inline(always)]
    pub fn take(&mut self, die: u32, stream: Stream, n: u32) -> (Ppn, u32, bool) {
        let (units_per_block, units_per_pu) = (self.units_per_block, self.units_per_pu);
        let ob = self.of_mut(die, stream);
        debug_assert!(
            ob.block != NONE && ob.fill + n <= units_per_pu,
            "more units than the PU has left"
        );
        let ppn = ob.block * units_per_block + ob.next_pu * units_per_pu + ob.fill;
        ob.fill += n;
        ob.host_fill += stream.is_host() as u32 * n;
        (Ppn(ppn), ob.block, ob.fill == units_per_pu)
    }

    /// Step 2 for a run of `n` units of host stream `stream` that arrived by `data_ready`:
    /// as [`Frontiers::host_data_ready`] and [`Frontiers::take`].
    #[inline(always)]
    pub fn take_host_run(
        &mut self,
        die: u32,
        stream: Stream,
        n: u32,
        data_ready: SimTime,
    ) -> (Ppn, u32, bool) {
        self.host_data_ready(die, stream, data_ready);
        self.take(die, stream, n)
    }

    /// Step 3: the PU being filled went to the NAND, and its next one (after any parity PUs)
    /// is `next_pu`; past the block's last the frontier closes. Whether it did: the block is
    /// full.
    #[inline]
    pub fn programmed(&mut self, die: u32, stream: Stream, next_pu: u32) -> bool {
        let pus_per_block = self.pus_per_block;
        let ob = self.of_mut(die, stream);
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
        let ob = self.of_mut(die, stream);
        if ob.block != block {
            return false;
        }
        *ob = NO_OPEN_BLOCK;
        true
    }

    /// Power-on or secure erase: nothing open anywhere.
    pub fn reset(&mut self) {
        self.open.fill(NO_OPEN_BLOCK);
    }

    /// Power-on: nothing open on `die`.
    pub fn reset_die(&mut self, die: u32) {
        let first = (die * self.slots) as usize;
        self.open[first..first + self.slots as usize].fill(NO_OPEN_BLOCK);
    }

    /// The power-on rebuild found `block` of `die` written up to PU `next_pu` for `stream`.
    pub fn restore(&mut self, die: u32, stream: Stream, block: u32, next_pu: u32) {
        *self.of_mut(die, stream) = OpenBlock {
            block,
            next_pu,
            ..NO_OPEN_BLOCK
        };
    }
}
