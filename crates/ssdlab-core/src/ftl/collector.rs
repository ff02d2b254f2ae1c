//! The collector's state: which block each die is collecting and how far, what copying is
//! owed, and when collection runs (the schedule), and the choice of victim
//! ([`Collector::select`], among the candidates [`Blocks`] keeps). The copying and erasing are
//! in [`super::gc`], on the FTL, since they move units through the map and the placement
//! streams.

use super::blocks::Blocks;
use super::map::Map;
use super::NONE;
use crate::config::{FtlConfig, GcForegroundMode, GcPace, GcPolicy, Geometry};
use crate::rng::Rng;
use crate::time::SimDuration;

/// When collection runs and how much it copies (`ftl.gc_foreground_mode`, `ftl.gc_pace` and
/// the free-block thresholds): the hooks `Ftl::gc_after_host_program`,
/// `Ftl::gc_before_host_block` and `Ftl::gc_on_idle` read it. Today's four modes are
/// instances: paced (after each host program, a program unit's worth of copying at a time,
/// while a die is below `fg_free_min`), burst (the same pace in victim-sized bites), on
/// demand and deferred (when the host needs a block). `Pace::Nominal` adds the drive-wide
/// watermarks with hysteresis.
#[derive(Clone, Copy, Debug)]
pub(super) struct GcSchedule {
    pub mode: GcForegroundMode,
    /// How much paced and burst collection copy per host unit.
    pub pace: Pace,
    /// Foreground collection keeps each die at this many free blocks (with the nominal pace:
    /// below it a die copies at least what its victim needs, the emergency).
    pub fg_free_min: u32,
    /// Nominal pace: collection starts when the drive's free blocks fall to `low_total` and
    /// stops when they reach `high_total` (the watermarks per die times the dies).
    pub low_total: u64,
    pub high_total: u64,
    /// Background (idle) collection brings each die up to this many.
    pub bg_free_target: u32,
    /// Deferred collection, once a die is down to its last blocks, brings every die up to this.
    pub deferred_free_target: u32,
    /// Idle time before background collection starts.
    pub idle: SimDuration,
}

/// Copies per host unit while collection runs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Pace {
    /// The current victim's v / (capacity - v).
    Victim,
    /// This many, sized for the drive's own spare (`ftl.gc_pace = "nominal"`).
    Nominal(f64),
}

/// The copies per host unit greedy collection needs in the uniform random-write steady state
/// of the drive as built: the mean-field greedy write amplification (`meanfield::greedy_waf`) at
/// the drive's own over-provisioning, minus one. The blocks that can hold data are every
/// die's blocks but those held back (defect reserve, metadata), the low watermark's free
/// blocks and the collector's open block; a block holds `data_units_per_block` units.
pub fn nominal_pace(cfg: &FtlConfig, g: &Geometry) -> f64 {
    let held = cfg.reserved_blocks_per_die + cfg.map_blocks_per_die + cfg.gc_free_blocks_low + 1;
    let data_blocks = g.blocks_per_die.saturating_sub(held) as f64 * g.dies as f64;
    let alpha = data_blocks * g.data_units_per_block as f64 / g.logical_units as f64;
    // Validation keeps more than a block per die of spare beyond these; a drive with none
    // would need every unit copied.
    if alpha <= 1.0 + 1e-9 {
        return g.data_units_per_block as f64;
    }
    crate::meanfield::greedy_waf(alpha, g.data_units_per_block) - 1.0
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

/// One die's collection: the victim under way, how far its units have been examined, and
/// what copying is owed. Its lifecycle, each step asserting the state it leaves (the
/// [`Collector`]'s methods are the only writers):
/// 1. **idle -> collecting** ([`Collector::select`]): a victim taken from [`Blocks`], its
///    pace v / (capacity - v) copies per host unit, its cursor at its first unit.
/// 2. **collecting** ([`Collector::examined_to`]): the cursor moves forward through the victim
///    as its units are examined and the valid ones copied.
/// 3. **collecting -> idle** ([`Collector::victim_done`]): every unit examined; the FTL erases
///    the block or holds its erase.
///
/// The copying owed (`credit`) and the count of selections outlive a victim. Power-on and
/// secure erase ([`Collector::reset`]) end any victim.
#[derive(Clone, Debug)]
pub(super) struct CollectorDie {
    /// The block being collected, or NONE (idle).
    victim: u32,
    /// Next unit of the victim to examine.
    cursor: u32,
    /// Units of GC copying owed to keep up with host writes.
    credit: f64,
    /// Units to copy per host unit written, for the current victim: v / (capacity - v).
    ratio: f64,
    selections: u64,
    /// The current victim was chosen by static wear levelling, not by the GC policy.
    for_wear_leveling: bool,
}

impl CollectorDie {
    fn new() -> CollectorDie {
        CollectorDie {
            victim: NONE,
            cursor: 0,
            credit: 0.0,
            ratio: 0.0,
            selections: 0,
            for_wear_leveling: false,
        }
    }

    /// Power-on or secure erase: no victim (the count of selections stays).
    fn reset(&mut self) {
        self.victim = NONE;
        self.cursor = 0;
        self.credit = 0.0;
        self.ratio = 0.0;
        self.for_wear_leveling = false;
    }
}

/// Garbage collection's own state. Invariant: a die's `victim` is in state Victim (and so in
/// no candidate set of [`Blocks`]).
pub(super) struct Collector {
    pub policy: VictimPolicy,
    pub schedule: GcSchedule,
    /// Nominal pace: collection is under way (the free blocks fell to the low watermark and
    /// have not reached the high one since).
    collecting: bool,
    dies: Vec<CollectorDie>,
    /// A victim is done when its cursor reaches this.
    units_per_block: u32,
    /// The d-choices draws.
    rng: Rng,
}

/// What the FTL reads and asks of each die's collection.
impl Collector {
    /// `die`'s victim, or NONE while it is idle.
    #[inline(always)]
    pub fn victim(&self, die: u32) -> u32 {
        self.dies[die as usize].victim
    }

    /// The current victim's pace: copies per host unit, v / (capacity - v).
    #[inline]
    pub fn ratio(&self, die: u32) -> f64 {
        self.dies[die as usize].ratio
    }

    /// Copying owed on `die`, units.
    #[inline(always)]
    pub fn credit(&self, die: u32) -> f64 {
        self.dies[die as usize].credit
    }

    /// Host writes on `die` owe `units` more of copying.
    #[inline]
    pub fn owe(&mut self, die: u32, units: f64) {
        self.dies[die as usize].credit += units;
    }

    /// `units` were copied on `die`: that much less is owed.
    #[inline]
    pub fn paid(&mut self, die: u32, units: u32) {
        self.dies[die as usize].credit -= units as f64;
    }

    /// Collection stops on `die` for now: nothing is owed.
    #[inline]
    pub fn forgive(&mut self, die: u32) {
        self.dies[die as usize].credit = 0.0;
    }

    /// Victims chosen on `die` so far.
    #[inline]
    pub fn selections(&self, die: u32) -> u64 {
        self.dies[die as usize].selections
    }

    /// Next unit of `die`'s victim to examine.
    #[inline(always)]
    pub fn cursor(&self, die: u32) -> u32 {
        let d = &self.dies[die as usize];
        debug_assert_ne!(d.victim, NONE, "die {die}: no victim");
        d.cursor
    }

    /// Step 2: `die`'s victim's units before `cursor` have been examined (and the valid ones
    /// copied).
    #[inline(always)]
    pub fn examined_to(&mut self, die: u32, cursor: u32) {
        let d = &mut self.dies[die as usize];
        debug_assert!(
            d.victim != NONE && cursor >= d.cursor && cursor <= self.units_per_block,
            "die {die}: cursor {} -> {cursor} of victim {}",
            d.cursor,
            d.victim
        );
        d.cursor = cursor;
    }

    /// `die`'s victim was chosen by static wear levelling.
    #[inline]
    pub fn for_wear_leveling(&self, die: u32) -> bool {
        self.dies[die as usize].for_wear_leveling
    }

    /// Step 3: every unit of `die`'s victim examined; it goes idle. Returns the victim.
    pub fn victim_done(&mut self, die: u32) -> u32 {
        let d = &mut self.dies[die as usize];
        assert!(
            d.victim != NONE && d.cursor == self.units_per_block,
            "die {die}: victim {} done at unit {} of {}",
            d.victim,
            d.cursor,
            self.units_per_block
        );
        let block = d.victim;
        d.victim = NONE;
        d.cursor = 0;
        block
    }

    /// Nominal pace: whether collection is under way, the drive's free blocks being
    /// `free_total` (it starts at the low watermark, stops at the high one).
    #[inline]
    pub fn phase(&mut self, free_total: u64) -> bool {
        let s = self.schedule;
        if self.collecting && free_total >= s.high_total {
            self.collecting = false;
        } else if !self.collecting && free_total <= s.low_total {
            self.collecting = true;
        }
        self.collecting
    }

    /// Nominal pace: collection is under way (see [`Collector::phase`]).
    #[inline]
    pub fn collecting(&self) -> bool {
        self.collecting
    }

    /// Power-on or secure erase: no die collects, the phase starts over.
    pub fn reset(&mut self) {
        self.collecting = false;
        for d in &mut self.dies {
            d.reset();
        }
    }

    /// Power-on: `die` starts idle.
    pub fn reset_die(&mut self, die: u32) {
        self.dies[die as usize].reset();
    }
}

impl Collector {
    pub fn new(cfg: &FtlConfig, g: &Geometry, seed: u64) -> Collector {
        Collector {
            policy: VictimPolicy {
                kind: cfg.gc_policy,
                d_choices: cfg.gc_d_choices,
                static_spread_max: cfg.wear_leveling_static_spread_max,
            },
            schedule: GcSchedule {
                mode: cfg.gc_foreground_mode,
                pace: match cfg.gc_pace {
                    GcPace::Victim => Pace::Victim,
                    GcPace::Nominal => Pace::Nominal(nominal_pace(cfg, g)),
                },
                fg_free_min: cfg.gc_foreground_free_blocks_min,
                low_total: cfg.gc_free_blocks_low as u64 * g.dies as u64,
                high_total: cfg.gc_free_blocks_high as u64 * g.dies as u64,
                bg_free_target: cfg.gc_background_free_blocks_target,
                deferred_free_target: cfg.gc_deferred_free_blocks_target,
                idle: SimDuration::from_us(cfg.gc_background_idle_us),
            },
            collecting: false,
            dies: (0..g.dies).map(|_| CollectorDie::new()).collect(),
            units_per_block: g.units_per_block,
            rng: Rng::derive(seed, "ftl.gc"),
        }
    }
}

/// A victim chosen by [`Collector::select`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Selected {
    pub block: u32,
    /// Its valid units when chosen.
    pub valid: u32,
    /// Chosen by static wear levelling rather than by the policy.
    pub wear_leveling: bool,
}

impl Collector {
    /// Step 1: choose `die`'s next victim and make it the die's victim (state Victim, out of the
    /// candidates, copying owed at v / (capacity - v) per host unit). A block marked for
    /// retirement goes first, then static wear levelling's coldest block when the die's wear
    /// spread calls for it, then the policy's choice. None if the die has no sealed block.
    /// `sequence`: the FTL's write sequence number now (cost-benefit's age).
    pub fn select(
        &mut self,
        die: u32,
        map: &mut Map,
        blocks: &mut Blocks,
        g: &Geometry,
        sequence: u32,
    ) -> Option<Selected> {
        let dix = die as usize;
        if blocks.candidates(die).is_empty() {
            return None;
        }
        assert_eq!(self.dies[dix].victim, NONE, "die {die}: a victim under way");
        self.dies[dix].selections += 1;
        let mut wear_leveling = false;
        // A block marked for retirement goes first: its data moves off failing flash.
        let retiring = blocks.pop_retiring(die);
        let block = match retiring.or_else(|| {
            let b = self.coldest_if_spread_exceeded(die, blocks, g);
            wear_leveling = b.is_some();
            b
        }) {
            Some(b) => b,
            None => match self.policy.kind {
                GcPolicy::Greedy => blocks
                    .greedy_min(map.block_entries(), die)
                    .expect("sealed blocks are in buckets"),
                GcPolicy::Fifo => blocks.fifo_front(die).expect("sealed blocks are queued"),
                GcPolicy::DChoices => {
                    let list = blocks.candidates(die);
                    let mut best = list[self.rng.below(list.len() as u64) as usize];
                    for _ in 1..self.policy.d_choices {
                        let b = list[self.rng.below(list.len() as u64) as usize];
                        if map.valid(b) < map.valid(best) {
                            best = b;
                        }
                    }
                    best
                }
                GcPolicy::CostBenefit => self.cost_benefit_victim(die, map, blocks, g, sequence),
            },
        };
        let valid = map.valid(block);
        blocks.take_victim(die, block, map.block_entries_mut());
        let capacity = g.data_units_per_block;
        let d = &mut self.dies[dix];
        d.victim = block;
        d.cursor = 0;
        d.for_wear_leveling = wear_leveling;
        d.ratio = if valid >= capacity {
            capacity as f64
        } else {
            valid as f64 / (capacity - valid) as f64
        };
        Some(Selected {
            block,
            valid,
            wear_leveling,
        })
    }

    /// Cost-benefit (Rosenblum and Ousterhout's LFS cleaner): the sealed block with the highest
    /// (1 - u) / 2u x age; ties to the lowest block number.
    fn cost_benefit_victim(
        &self,
        die: u32,
        map: &Map,
        blocks: &Blocks,
        g: &Geometry,
        sequence: u32,
    ) -> u32 {
        let capacity = g.data_units_per_block as f64;
        let mut best = NONE;
        let mut best_score = f64::NEG_INFINITY;
        for &b in blocks.candidates(die) {
            let u = map.valid(b) as f64 / capacity;
            let age = sequence.wrapping_sub(blocks.sealed_at(b)) as f64 + 1.0;
            let score = if u == 0.0 {
                f64::INFINITY
            } else {
                (1.0 - u) / (2.0 * u) * age
            };
            if score > best_score || (score == best_score && b < best) {
                best = b;
                best_score = score;
            }
        }
        best
    }

    /// Static wear levelling: every 16th selection, if the die's erase-count spread is past the
    /// threshold, the least-worn sealed block (cold data) is collected instead.
    fn coldest_if_spread_exceeded(&self, die: u32, blocks: &Blocks, g: &Geometry) -> Option<u32> {
        let d = &self.dies[die as usize];
        if self.policy.static_spread_max == 0 || !d.selections.is_multiple_of(16) {
            return None;
        }
        let first = die * g.blocks_per_die;
        let max = (first..first + g.blocks_per_die)
            .map(|b| blocks.erase_count(b))
            .max()?;
        let coldest = *blocks
            .candidates(die)
            .iter()
            .min_by_key(|&&b| (blocks.erase_count(b), b))?;
        (max - blocks.erase_count(coldest) > self.policy.static_spread_max).then_some(coldest)
    }
}
