//! The blocks: the one owner of each block's state, its erase count and its place in the free
//! pools and among the collection candidates.
//!
//! A data block's lifecycle, each step a verb that checks the state it leaves:
//! 1. **Free**: erased, in its die's free pool ([`Blocks::open`] takes the next one: least
//!    worn first under dynamic wear levelling, else oldest freed).
//! 2. **Open**: a stream (host or collector) writes it, program unit by program unit.
//! 3. **Sealed** ([`Blocks::seal`]): full; a collection candidate, in its die's candidate list
//!    and, by victim policy, the greedy buckets (by valid count) or the FIFO queue.
//! 4. **Victim** ([`Blocks::take_victim`]): being collected, no candidate any more.
//! 5. Back to **Free** ([`Blocks::erased`]: one erase more), or **Retired**
//!    ([`Blocks::retire`]: a grown bad block, never written again).
//!
//! A block marked for retirement after a failed program ([`Blocks::mark_retiring`]) is
//! collected before any other candidate ([`Blocks::pop_retiring`]) and retired instead of
//! erased. Blocks held back from user data (defect reserve, metadata blocks) are Open for
//! good and never candidates ([`Blocks::hold_back`]). A secure erase ([`Blocks::erase_all`])
//! and the power-on rebuild (`begin_restore`, `restore_*`) set every block at once.
//!
//! Invariant (`Blocks::verify`): Free blocks are exactly those in their die's pool; the
//! candidate list holds exactly the Sealed blocks (`sealed_pos` their places); under greedy
//! the buckets hold the same blocks. The collector (`super::collector`) chooses among the
//! candidates; the schedule decides when; neither writes a state.

use super::victim::{Buckets, FreePool};
use super::{BlockState, NONE};
use crate::config::{FtlConfig, GcPolicy, Geometry};
use std::collections::VecDeque;

/// One die's collection candidates.
#[derive(Clone, Debug, Default)]
struct Candidates {
    /// Sealed blocks in no particular order (d-choices, cost-benefit, static levelling).
    list: Vec<u32>,
    /// Sealed blocks in sealing order (FIFO policy only).
    fifo: VecDeque<u32>,
    /// Blocks marked for retirement, collected before any other victim (the newest first).
    retiring: Vec<u32>,
}

pub(super) struct Blocks {
    state: Vec<BlockState>,
    erase_count: Vec<u32>,
    /// Sequence number when the block was sealed (age for cost-benefit).
    sealed_at: Vec<u32>,
    /// Index in its die's candidate list, or NONE.
    sealed_pos: Vec<u32>,
    /// Marked for retirement after a program failure: collected first, never erased.
    retiring: Vec<bool>,
    /// Per die: blocks retired or marked, and how many it may retire while keeping the blocks
    /// its data and the collector need; past that a failed block stays in service (the
    /// spare area is spent, as at a real drive's end of life).
    retired_per_die: Vec<u32>,
    retire_limit: u32,
    /// Per die: its erased blocks.
    free: Vec<FreePool>,
    /// Erased blocks on every die.
    free_total: u64,
    /// Per die: its candidates.
    candidates: Vec<Candidates>,
    /// Greedy: sealed blocks bucketed by valid count, per die (empty under other policies).
    buckets: Buckets,
    policy: GcPolicy,
    /// Blocks 0..this of each die are held back and never hold user data.
    held_back_per_die: u32,
    blocks_per_die: u32,
}

impl Blocks {
    /// Every block Free (in block order in its die's pool) but the first `reserved` of each
    /// die, which are held back.
    pub fn new(cfg: &FtlConfig, g: &Geometry, reserved: u32) -> Blocks {
        let blocks = (g.dies * g.blocks_per_die) as usize;
        let usable = g.blocks_per_die - cfg.reserved_blocks_per_die - cfg.map_blocks_per_die;
        let data = (g.logical_units / g.dies as u64).div_ceil(g.data_units_per_block as u64);
        let mut b = Blocks {
            state: vec![BlockState::Free; blocks],
            erase_count: vec![0; blocks],
            sealed_at: vec![0; blocks],
            sealed_pos: vec![NONE; blocks],
            retiring: vec![false; blocks],
            retired_per_die: vec![0; g.dies as usize],
            retire_limit: (usable as u64)
                .saturating_sub(data + cfg.gc_foreground_free_blocks_min as u64 + 4)
                as u32
                / 2,
            free: Vec::with_capacity(g.dies as usize),
            free_total: (g.dies * (g.blocks_per_die - reserved)) as u64,
            candidates: vec![Candidates::default(); g.dies as usize],
            buckets: Buckets::new(
                if cfg.gc_policy == GcPolicy::Greedy {
                    g.dies
                } else {
                    0
                },
                blocks,
            ),
            policy: cfg.gc_policy,
            held_back_per_die: reserved,
            blocks_per_die: g.blocks_per_die,
        };
        for die in 0..g.dies {
            let first = die * g.blocks_per_die;
            let mut free = FreePool::new(cfg.wear_leveling_dynamic);
            for block in first + reserved..first + g.blocks_per_die {
                free.push(block, 0);
            }
            b.free.push(free);
            for block in first..first + reserved {
                b.hold_back(block);
            }
        }
        b
    }

    // ----- reading ------------------------------------------------------------------------

    #[inline]
    pub fn state(&self, block: u32) -> BlockState {
        self.state[block as usize]
    }

    pub fn erase_counts(&self) -> &[u32] {
        &self.erase_count
    }

    #[inline]
    pub fn erase_count(&self, block: u32) -> u32 {
        self.erase_count[block as usize]
    }

    #[inline]
    pub fn sealed_at(&self, block: u32) -> u32 {
        self.sealed_at[block as usize]
    }

    /// Erased blocks `die` has ready.
    #[inline]
    pub fn free_len(&self, die: u32) -> u32 {
        self.free[die as usize].len()
    }

    /// Erased blocks on every die.
    #[inline]
    pub fn free_total(&self) -> u64 {
        self.free_total
    }

    pub fn is_retiring(&self, block: u32) -> bool {
        self.retiring[block as usize]
    }

    /// `die`'s candidates, in no particular order.
    #[inline]
    pub fn candidates(&self, die: u32) -> &[u32] {
        &self.candidates[die as usize].list
    }

    /// The oldest sealed candidate of `die` (FIFO policy).
    pub fn fifo_front(&self, die: u32) -> Option<u32> {
        self.candidates[die as usize].fifo.front().copied()
    }

    /// The candidate of `die` with the fewest valid units (greedy policy; `entries`: the
    /// map's block entries, which hold the valid counts).
    #[inline]
    pub fn greedy_min(&self, entries: &[u64], die: u32) -> Option<u32> {
        self.buckets.min(entries, die)
    }

    /// The next block of `die` marked for retirement that is still a candidate.
    pub fn pop_retiring(&mut self, die: u32) -> Option<u32> {
        let d = &mut self.candidates[die as usize];
        while let Some(b) = d.retiring.pop() {
            if self.state[b as usize] == BlockState::Sealed {
                return Some(b);
            }
            // Already collected as an ordinary victim.
        }
        None
    }

    // ----- the lifecycle ------------------------------------------------------------------

    /// A block never to hold user data (defect reserve, metadata): Open for good.
    fn hold_back(&mut self, block: u32) {
        self.state[block as usize] = BlockState::Open;
    }

    /// Free -> Open: `die`'s next erased block, for a stream to write.
    #[inline]
    pub fn open(&mut self, die: u32) -> Option<u32> {
        let block = self.free[die as usize].pop()?;
        self.free_total -= 1;
        self.step(block, BlockState::Free, BlockState::Open);
        Some(block)
    }

    /// Open -> Sealed: `block` of `die` is full (at write sequence `sequence`) and becomes a
    /// candidate; `entries` (the map's block entries) hold its valid count, the greedy key.
    pub fn seal(&mut self, die: u32, block: u32, entries: &mut [u64], sequence: u32) {
        self.step(block, BlockState::Open, BlockState::Sealed);
        self.sealed_at[block as usize] = sequence;
        let d = &mut self.candidates[die as usize];
        self.sealed_pos[block as usize] = d.list.len() as u32;
        d.list.push(block);
        match self.policy {
            GcPolicy::Greedy => self.buckets.insert(entries, die, block),
            GcPolicy::Fifo => d.fifo.push_back(block),
            _ => {}
        }
    }

    /// Sealed -> Victim: the collector takes `block` of `die`; it leaves the candidates.
    pub fn take_victim(&mut self, die: u32, block: u32, entries: &mut [u64]) {
        self.step(block, BlockState::Sealed, BlockState::Victim);
        let d = &mut self.candidates[die as usize];
        let pos = self.sealed_pos[block as usize];
        debug_assert_ne!(pos, NONE);
        let last = d.list.pop().expect("the candidate list holds the block");
        if last != block {
            d.list[pos as usize] = last;
            self.sealed_pos[last as usize] = pos;
        }
        self.sealed_pos[block as usize] = NONE;
        match self.policy {
            GcPolicy::Greedy => self.buckets.remove(entries, die, block),
            GcPolicy::Fifo => {
                if d.fifo.front() == Some(&block) {
                    d.fifo.pop_front();
                } else if let Some(i) = d.fifo.iter().position(|&b| b == block) {
                    d.fifo.remove(i);
                }
            }
            _ => {}
        }
    }

    /// A unit of `block` (of `die`) went stale and the map lowered its count in `entries`: a
    /// greedy candidate moves down its buckets.
    #[inline(always)]
    pub fn valid_count_fell(&mut self, entries: &mut [u64], die: u32, block: u32) {
        if Buckets::is_candidate(entries[block as usize]) {
            self.buckets.move_down(entries, die, block);
        }
    }

    /// Victim -> Free: `block` of `die` was erased (one erase more) and goes back to the pool.
    pub fn erased(&mut self, die: u32, block: u32) {
        self.step(block, BlockState::Victim, BlockState::Free);
        self.erase_count[block as usize] += 1;
        let ec = self.erase_count[block as usize];
        self.free[die as usize].push(block, ec);
        self.free_total += 1;
    }

    /// Victim -> Retired: `block` is a grown bad block (marked after a failed program, and not
    /// erased; or its erase just failed: `erased`, one erase more).
    pub fn retire(&mut self, block: u32, erased: bool) {
        self.step(block, BlockState::Victim, BlockState::Retired);
        self.erase_count[block as usize] += erased as u32;
        self.retiring[block as usize] = false;
    }

    /// A program in `block` (of `die`) failed: it is to be collected first and retired.
    pub fn mark_retiring(&mut self, die: u32, block: u32) {
        debug_assert!(!self.retiring[block as usize]);
        self.retiring[block as usize] = true;
        self.candidates[die as usize].retiring.push(block);
    }

    /// May `die` retire one more block? Counts it if so.
    pub fn may_retire(&mut self, die: u32) -> bool {
        let n = &mut self.retired_per_die[die as usize];
        if *n >= self.retire_limit {
            return false;
        }
        *n += 1;
        true
    }

    /// `block` moves from `from` to `to`: the one place a state changes in operation.
    #[inline]
    fn step(&mut self, block: u32, from: BlockState, to: BlockState) {
        let s = &mut self.state[block as usize];
        assert_eq!(*s, from, "block {block}: {to:?} from {s:?}");
        *s = to;
    }

    // ----- every block at once ------------------------------------------------------------

    /// Secure erase: every block Free (one erase more for those not already), grown bad
    /// blocks and blocks marked for retirement Retired; no candidates. Returns the blocks
    /// newly retired (those that were only marked).
    pub fn erase_all(&mut self) -> u64 {
        self.sealed_pos.fill(NONE);
        self.buckets.clear();
        let mut retired = 0;
        for die in 0..self.free.len() as u32 {
            let first = die * self.blocks_per_die;
            let mut free = FreePool::new(self.free[die as usize].is_least_worn());
            for b in first + self.held_back_per_die..first + self.blocks_per_die {
                let bi = b as usize;
                if self.state[bi] == BlockState::Retired || self.retiring[bi] {
                    retired += self.retiring[bi] as u64;
                    self.retiring[bi] = false;
                    self.state[bi] = BlockState::Retired;
                    continue;
                }
                if self.state[bi] != BlockState::Free {
                    self.erase_count[bi] += 1;
                }
                self.state[bi] = BlockState::Free;
                free.push(b, self.erase_count[bi]);
            }
            self.free[die as usize] = free;
            self.candidates[die as usize] = Candidates::default();
        }
        self.free_total = self.free.iter().map(|f| f.len() as u64).sum();
        retired
    }

    /// Power-on rebuild, first step: no candidates, no marks, empty pools; the erase counts
    /// from `erase_counts` (bit 31 set: retired) when given. The rebuild then states each
    /// block (`restore_retired`, `restore_free`, `restore_written`, in block order per die)
    /// and seals the full ones (`seal`, in block order).
    pub fn begin_restore(&mut self, erase_counts: Option<&[u32]>, retired_bit: u32) {
        if let Some(ec) = erase_counts {
            for (i, &c) in ec.iter().enumerate() {
                self.erase_count[i] = c & !retired_bit;
            }
        }
        self.sealed_pos.fill(NONE);
        self.sealed_at.fill(0);
        self.retiring.fill(false);
        self.retired_per_die.fill(0);
        self.buckets.clear();
        for die in 0..self.free.len() {
            self.free[die] = FreePool::new(self.free[die].is_least_worn());
            self.candidates[die] = Candidates::default();
        }
        self.free_total = 0;
    }

    /// Power-on: `block` of `die` is retired (its erase count says so).
    pub fn restore_retired(&mut self, die: u32, block: u32) {
        self.state[block as usize] = BlockState::Retired;
        self.retired_per_die[die as usize] += 1;
    }

    /// Power-on: `block` of `die` holds nothing programmed: Free, into the pool.
    pub fn restore_free(&mut self, die: u32, block: u32) {
        self.state[block as usize] = BlockState::Free;
        self.free[die as usize].push(block, self.erase_count[block as usize]);
        self.free_total += 1;
    }

    /// Power-on: `block` holds programmed units: Open (a stream's, or to be sealed).
    pub fn restore_written(&mut self, block: u32) {
        self.state[block as usize] = BlockState::Open;
    }

    /// Whether the state was retired before a rebuild that has no erase counts of its own.
    pub fn was_retired(&self, block: u32) -> bool {
        self.state[block as usize] == BlockState::Retired
    }

    // ----- checks -------------------------------------------------------------------------

    /// The erase counts and states, for the FTL's digest.
    pub fn digest_into(&self, eat: &mut impl FnMut(u32)) {
        self.erase_count.iter().for_each(|&x| eat(x));
        self.state.iter().for_each(|&x| eat(x as u32));
    }

    /// The invariants above; `valid(block)` is the map's valid count, `entries` its block
    /// entries.
    pub fn verify(&self, valid: impl Fn(u32) -> u32, entries: &[u64]) -> Result<(), String> {
        for (block, &s) in self.state.iter().enumerate() {
            let v = valid(block as u32);
            if matches!(s, BlockState::Free | BlockState::Retired) && v != 0 {
                return Err(format!("{s:?} block {block} holds {v} valid units"));
            }
        }
        for (die, pool) in self.free.iter().enumerate() {
            let first = die as u32 * self.blocks_per_die;
            let states_free = (first..first + self.blocks_per_die)
                .filter(|&b| self.state[b as usize] == BlockState::Free)
                .count() as u32;
            if states_free != pool.len() {
                return Err(format!(
                    "die {die}: {states_free} free blocks, pool holds {}",
                    pool.len()
                ));
            }
            let list = &self.candidates[die].list;
            for (i, &b) in list.iter().enumerate() {
                if self.state[b as usize] != BlockState::Sealed {
                    return Err(format!(
                        "block {b} listed as sealed in state {:?}",
                        self.state[b as usize]
                    ));
                }
                if self.sealed_pos[b as usize] != i as u32 {
                    return Err(format!("block {b}: listed at {i}, recorded at {}", {
                        self.sealed_pos[b as usize]
                    }));
                }
            }
            let sealed = (first..first + self.blocks_per_die)
                .filter(|&b| self.state[b as usize] == BlockState::Sealed)
                .count();
            if sealed != list.len() {
                return Err(format!(
                    "die {die}: {sealed} sealed blocks, {} candidates",
                    list.len()
                ));
            }
        }
        let pooled: u64 = self.free.iter().map(|f| f.len() as u64).sum();
        if pooled != self.free_total {
            return Err(format!(
                "{pooled} free blocks in the pools, {} counted",
                self.free_total
            ));
        }
        if self.policy == GcPolicy::Greedy {
            self.buckets.verify(entries, &self.sealed_pos)?;
        }
        Ok(())
    }
}
