//! The blocks: each block's state and erase count, when it was sealed and where it sits in its
//! die's candidate list, which blocks are marked for retirement, and how many each die may
//! still retire. (Free pools stay with placement's per-die state, `Die`; victim candidate
//! sets with the collector.)

use super::{BlockState, NONE};
use crate::config::{FtlConfig, Geometry};

pub(super) struct Blocks {
    /// Invariant: Free blocks are in their die's free pool and hold no valid unit; Retired
    /// blocks are never written again.
    pub state: Vec<BlockState>,
    pub erase_count: Vec<u32>,
    /// Sequence number when the block was sealed (age for cost-benefit).
    pub sealed_at: Vec<u32>,
    /// Index in its die's sealed_list, or NONE.
    pub sealed_pos: Vec<u32>,
    /// Marked for retirement after a program failure: collected first, never erased.
    pub retiring: Vec<bool>,
    /// Per die: blocks retired or marked, and how many it may retire while keeping the blocks
    /// its data and the collector need; past that a failed block stays in service (the
    /// spare area is spent, as at a real drive's end of life).
    pub retired_per_die: Vec<u32>,
    pub retire_limit: u32,
}

impl Blocks {
    pub fn new(cfg: &FtlConfig, g: &Geometry) -> Blocks {
        let blocks = (g.dies * g.blocks_per_die) as usize;
        let usable = g.blocks_per_die - cfg.reserved_blocks_per_die - cfg.map_blocks_per_die;
        let data = (g.logical_units / g.dies as u64).div_ceil(g.data_units_per_block as u64);
        Blocks {
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
        }
    }
}
