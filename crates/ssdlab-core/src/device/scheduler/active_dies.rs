//! Which dies' arrays are busy, on a wheel of buckets by the time each ends: the active-die
//! limit's count without a scan or a heap.

use super::power_waits::NO_DIE;
use crate::heap::BucketBits;
use crate::nand::Nand;
use crate::time::SimTime;

/// The dies whose array is busy (their `Nand::die_free_at` later than now), for a limit on how
/// many run at once: each die listed under the time its array ends, on a wheel of buckets
/// 2^[`BUCKET_SHIFT`] ns wide covering [`BUCKETS`] of them from now on (farther ends in a list
/// of their own). A die's start moves it from one bucket to another (a few stores), the dies in
/// a bucket are forgotten as time passes it, and the count of dies listed is at least the count
/// busy: when it is below the limit (most starts: the limit binds at 3% of them on
/// micron-p320h-350 in its GC steady state, with 95 of 126 places taken on average) nothing is
/// looked up. The count is made exact, and the first other die to end found, only when it is
/// not.
///
/// A min-heap of (end, die) did the same with a push and a pop per start (the pop's sift-down
/// alone about 350 instructions per NAND unit operation, callgrind, micron-p320h-350 GC steady
/// state): 512 dies on the P320h 700GB, and a scan of all of them before that was half its run
/// time.
///
/// A die is listed while the bucket of its end is not behind the wheel's (`cursor`, the bucket
/// of the time last looked at); so every busy die is, and an idle one only if it ended within
/// the current bucket.
#[derive(Clone, Debug, Default)]
pub(super) struct ActiveDies {
    /// Per bucket (its number modulo [`BUCKETS`]): the first die listed in it, `NO_DIE` if none.
    pub(super) heads: Vec<u32>,
    /// A bit per bucket: set if any die is listed in it.
    pub(super) occupied: BucketBits<{ (BUCKETS / 64) as usize }>,
    /// Per die: the die after it and before it in its bucket (`NO_DIE` at either end), side
    /// by side (one bounds check and one line for both).
    pub(super) links: Vec<[u32; 2]>,
    /// Dies whose end is beyond the wheel (bucket `cursor + BUCKETS` or later).
    pub(super) far: Vec<u32>,
    /// Dies listed, on the wheel or beyond.
    pub(super) listed: u32,
    /// The bucket of the time last looked at: the wheel's first.
    pub(super) cursor: u64,
}

/// The wheel's buckets: 2.048 us each (a die operation's array time is 50 us to a few ms, so
/// a bucket rarely holds more than one end), 16,384 of them (33.6 ms ahead: an erase and the
/// bus transfers queued before it fit).
pub(super) const BUCKET_SHIFT: u32 = 11;
pub(super) const BUCKETS: u64 = 1 << 14;

/// In a die's [`ActiveDies::links`]: the die listed after it under its bucket.
pub(super) const NEXT: usize = 0;
/// In a die's [`ActiveDies::links`]: the die listed before it under its bucket.
pub(super) const PREV: usize = 1;

#[inline]
pub(super) fn bucket_of(t: SimTime) -> u64 {
    t.0 >> BUCKET_SHIFT
}

impl ActiveDies {
    /// Start over from the dies' current times (when a limit starts to hold).
    pub(super) fn rebuild(&mut self, nand: &Nand, dies: u32) {
        self.heads = vec![NO_DIE; BUCKETS as usize];
        self.occupied = BucketBits::default();
        self.links = vec![[NO_DIE; 2]; dies as usize];
        self.far.clear();
        self.listed = 0;
        self.cursor = 0;
        for die in 0..dies {
            self.list(die, nand.die_free_at(die));
        }
    }

    /// Put `die` under the bucket of its end, `end` (`Nand::die_free_at`; not behind the
    /// wheel).
    #[inline(always)]
    pub(super) fn list(&mut self, die: u32, end: SimTime) {
        let b = bucket_of(end);
        debug_assert!(b >= self.cursor);
        self.listed += 1;
        if b >= self.cursor + BUCKETS {
            self.list_far(die);
            return;
        }
        let slot = (b % BUCKETS) as usize;
        let head = self.heads[slot];
        self.links[die as usize] = [head, NO_DIE];
        if head == NO_DIE {
            self.occupied.set(b);
        } else {
            self.links[head as usize][PREV] = die;
        }
        self.heads[slot] = die;
    }

    #[cold]
    pub(super) fn list_far(&mut self, die: u32) {
        self.far.push(die);
    }

    /// Take `die`, listed under the bucket of `end`, off the list.
    #[inline]
    pub(super) fn unlist(&mut self, die: u32, end: SimTime) {
        let b = bucket_of(end);
        debug_assert!(b >= self.cursor);
        self.listed -= 1;
        if b >= self.cursor + BUCKETS {
            self.unlist_far(die);
            return;
        }
        let slot = (b % BUCKETS) as usize;
        let [next, prev] = self.links[die as usize];
        if prev == NO_DIE {
            self.heads[slot] = next;
            if next == NO_DIE {
                self.occupied.clear(b);
            }
        } else {
            self.links[prev as usize][NEXT] = next;
        }
        if next != NO_DIE {
            self.links[next as usize][PREV] = prev;
        }
    }

    #[cold]
    pub(super) fn unlist_far(&mut self, die: u32) {
        let i = self
            .far
            .iter()
            .position(|&d| d == die)
            .expect("a die listed far");
        self.far.swap_remove(i);
    }

    /// Move the wheel to `now`: the dies of the buckets passed ended (they are forgotten), and
    /// far ones that come within the wheel are put on it.
    #[inline]
    pub(super) fn catch_up(&mut self, nand: &Nand, now: SimTime) {
        let to = bucket_of(now);
        debug_assert!(to >= self.cursor);
        if to != self.cursor {
            self.advance(nand, to);
        }
    }

    pub(super) fn advance(&mut self, nand: &Nand, to: u64) {
        let mut b = self.cursor;
        let end = to.min(self.cursor + BUCKETS);
        while let Some(found) = self.occupied.first_set(b, end) {
            let slot = (found % BUCKETS) as usize;
            let mut die = self.heads[slot];
            while die != NO_DIE {
                self.listed -= 1;
                die = self.links[die as usize][NEXT];
            }
            self.heads[slot] = NO_DIE;
            self.occupied.clear(found);
            b = found + 1;
        }
        self.cursor = to;
        if !self.far.is_empty() {
            let far = std::mem::take(&mut self.far);
            self.listed -= far.len() as u32;
            for &die in &far {
                let end = nand.die_free_at(die);
                if bucket_of(end) >= to {
                    self.list(die, end);
                }
            }
        }
    }

    /// `die` took an operation at `now`: its array was busy until `before`, now until
    /// `after` (`nand.die_free_at(die)`).
    #[inline]
    pub(super) fn array_changed(
        &mut self,
        nand: &Nand,
        now: SimTime,
        die: u32,
        before: SimTime,
        after: SimTime,
    ) {
        self.catch_up(nand, now);
        debug_assert!(after >= before, "a die's busy time never goes back");
        debug_assert!(after >= now);
        if after == before {
            return;
        }
        if bucket_of(before) >= self.cursor {
            self.unlist(die, before);
        }
        self.list(die, after);
    }

    /// With at most `max` dies busy at once, may `die` (its array free at `own_end`,
    /// `Nand::die_free_at`) start now? None if so, else when the first of the other busy dies
    /// ends.
    #[inline]
    pub(super) fn must_wait(
        &mut self,
        nand: &Nand,
        die: u32,
        own_end: SimTime,
        now: SimTime,
        max: u32,
    ) -> Option<SimTime> {
        self.catch_up(nand, now);
        let own = own_end > now;
        if self.listed - (own as u32) < max {
            return None;
        }
        self.first_other_end(nand, die, own, now, max)
    }

    /// `must_wait` when the dies listed are not fewer than the limit: count those of the
    /// current bucket that have ended (only it can hold such), and if the others busy still
    /// reach the limit, find the first of them to end.
    pub(super) fn first_other_end(
        &self,
        nand: &Nand,
        die: u32,
        own: bool,
        now: SimTime,
        max: u32,
    ) -> Option<SimTime> {
        let mut ended = 0u32;
        let mut d = self.heads[(self.cursor % BUCKETS) as usize];
        while d != NO_DIE {
            ended += (nand.die_free_at(d) <= now) as u32;
            d = self.links[d as usize][NEXT];
        }
        if self.listed - ended - (own as u32) < max {
            return None;
        }
        self.first_end_where(nand, now, |d| d != die)
    }

    /// The first end after `now` (the wheel caught up to it) of a busy die for which `frees`
    /// holds, if any: the buckets in time order from the current one, then the ends beyond
    /// the wheel.
    pub(super) fn first_end_where(
        &self,
        nand: &Nand,
        now: SimTime,
        frees: impl Fn(u32) -> bool,
    ) -> Option<SimTime> {
        debug_assert_eq!(self.cursor, bucket_of(now));
        let first_in = |slot: u64| {
            let mut first: Option<SimTime> = None;
            let mut d = self.heads[slot as usize];
            while d != NO_DIE {
                let t = nand.die_free_at(d);
                if t > now && first.is_none_or(|f| t < f) && frees(d) {
                    first = Some(t);
                }
                d = self.links[d as usize][NEXT];
            }
            first
        };
        let (mut b, end) = (self.cursor, self.cursor + BUCKETS);
        while let Some(found) = self.occupied.first_set(b, end) {
            if let Some(t) = first_in(found % BUCKETS) {
                return Some(t);
            }
            b = found + 1;
        }
        let far = self.far.iter().filter(|&&d| frees(d));
        far.map(|&d| nand.die_free_at(d)).min()
    }
}
