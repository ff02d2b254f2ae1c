//! The collector's state: which blocks are candidates (the victim policy's sets), which block
//! each die is collecting and how far, what copying is owed, and when collection runs (the
//! schedule). The work itself (selection, copying, erasing) is in [`super::gc`], on the FTL,
//! since it moves units through the map and the placement streams.

use super::victim::Buckets;
use super::NONE;
use crate::config::{FtlConfig, GcForegroundMode, GcPolicy, Geometry};
use crate::rng::Rng;
use crate::time::SimDuration;
use std::collections::VecDeque;

/// When collection runs (`ftl.gc_foreground_mode` and the free-block thresholds): the hooks
/// `Ftl::gc_after_host_program`, `Ftl::gc_before_host_block` and `Ftl::gc_on_idle` read it.
#[derive(Clone, Copy, Debug)]
pub(super) struct GcSchedule {
    pub mode: GcForegroundMode,
    /// Foreground collection keeps each die at this many free blocks.
    pub fg_free_min: u32,
    /// Background (idle) collection brings each die up to this many.
    pub bg_free_target: u32,
    /// Deferred collection, once a die is down to its last blocks, brings every die up to this.
    pub deferred_free_target: u32,
    /// Idle time before background collection starts.
    pub idle: SimDuration,
}

/// Which block to collect (`ftl.gc_policy`, `ftl.gc_d_choices`), and static wear levelling's
/// threshold.
#[derive(Clone, Copy, Debug)]
pub(super) struct VictimPolicy {
    pub kind: GcPolicy,
    pub d_choices: u32,
    /// Static wear levelling: the least-worn sealed block is collected when the die's
    /// erase-count spread passes this (0: off).
    pub static_spread_max: u32,
}

/// One die's collection.
#[derive(Clone, Debug)]
pub(super) struct CollectorDie {
    /// The block being collected, or NONE.
    pub victim: u32,
    /// Next unit of the victim to examine.
    pub victim_cursor: u32,
    /// Units of GC copying owed to keep up with host writes.
    pub gc_credit: f64,
    /// Units to copy per host unit written, for the current victim: v / (capacity - v).
    pub gc_ratio: f64,
    /// Sealed blocks in sealing order (FIFO).
    pub sealed_fifo: VecDeque<u32>,
    /// Sealed blocks in no particular order (d-choices, cost-benefit, static levelling).
    pub sealed_list: Vec<u32>,
    /// Sealed blocks marked for retirement, collected before any other victim.
    pub retiring: Vec<u32>,
    pub victim_selections: u64,
    /// The current victim was chosen by static wear levelling, not by the GC policy.
    pub victim_for_wear_leveling: bool,
}

impl CollectorDie {
    fn new() -> CollectorDie {
        CollectorDie {
            victim: NONE,
            victim_cursor: 0,
            gc_credit: 0.0,
            gc_ratio: 0.0,
            sealed_fifo: VecDeque::new(),
            sealed_list: Vec::new(),
            retiring: Vec::new(),
            victim_selections: 0,
            victim_for_wear_leveling: false,
        }
    }

    /// Power-on or secure erase: no victim, no candidates (the count of selections stays).
    pub fn reset(&mut self) {
        self.victim = NONE;
        self.victim_cursor = 0;
        self.gc_credit = 0.0;
        self.gc_ratio = 0.0;
        self.sealed_fifo.clear();
        self.sealed_list.clear();
        self.retiring.clear();
        self.victim_for_wear_leveling = false;
    }
}

/// Garbage collection's own state. Invariant: a die's `victim` is in state Victim and in no
/// candidate set; every sealed block is in its die's `sealed_list` (and, by policy, in
/// `sealed_fifo` or the greedy `buckets`).
pub(super) struct Collector {
    pub policy: VictimPolicy,
    pub schedule: GcSchedule,
    pub dies: Vec<CollectorDie>,
    /// Greedy: sealed blocks bucketed by valid count, per die.
    pub buckets: Buckets,
    /// The d-choices draws.
    pub rng: Rng,
}

impl Collector {
    pub fn new(cfg: &FtlConfig, g: &Geometry, seed: u64) -> Collector {
        let blocks = (g.dies * g.blocks_per_die) as usize;
        Collector {
            policy: VictimPolicy {
                kind: cfg.gc_policy,
                d_choices: cfg.gc_d_choices,
                static_spread_max: cfg.wear_leveling_static_spread_max,
            },
            schedule: GcSchedule {
                mode: cfg.gc_foreground_mode,
                fg_free_min: cfg.gc_foreground_free_blocks_min,
                bg_free_target: cfg.gc_background_free_blocks_target,
                deferred_free_target: cfg.gc_deferred_free_blocks_target,
                idle: SimDuration::from_us(cfg.gc_background_idle_us),
            },
            dies: (0..g.dies).map(|_| CollectorDie::new()).collect(),
            buckets: Buckets::new(
                if cfg.gc_policy == GcPolicy::Greedy {
                    g.dies
                } else {
                    0
                },
                g.data_units_per_block,
                blocks,
            ),
            rng: Rng::derive(seed, "ftl.gc"),
        }
    }
}
