//! Resource timelines: when a die, a channel bus, a host link or the controller is busy.
//!
//! Decisions are made in simulated-time order (the device's event loop guarantees it), so a
//! reservation never lands before an earlier decision's "now".

use crate::time::{SimDuration, SimTime};

/// A server that runs one operation at a time in the order operations are decided (a die, the
/// controller's command processor).
#[derive(Clone, Debug, Default)]
pub struct FifoTimeline {
    free_at: SimTime,
}

impl FifoTimeline {
    /// Reserve `duration` starting no earlier than `earliest`; returns the start time.
    #[inline]
    pub fn reserve(&mut self, earliest: SimTime, duration: SimDuration) -> SimTime {
        let start = earliest.max(self.free_at);
        self.free_at = start + duration;
        start
    }
    pub fn free_at(&self) -> SimTime {
        self.free_at
    }
    pub fn set_free_at(&mut self, t: SimTime) {
        self.free_at = t;
    }
}

/// A shared wire (a channel bus, a host link) whose transfers may be decided out of time order:
/// a transfer reserved for later (data not ready yet) leaves the gap before it usable by
/// transfers decided afterwards. Holds the future busy intervals, disjoint, sorted by start.
///
/// A sorted vector, not a search tree: a wire holds two or three future intervals on average
/// (issue 15's count on a GC-bound M500: mean 2.1, 44% of reservations land before the last
/// one), the oldest are dropped from the front as time passes, and new ones land near the
/// back. Dropped intervals only advance `head`; the vector is compacted when the dead prefix
/// outgrows the live part, so each interval is moved O(1) times.
#[derive(Clone, Debug, Default)]
pub struct GapTimeline {
    /// (start, end) of reserved intervals; those from `head` on end after the last `now` seen.
    busy: Vec<(u64, u64)>,
    head: usize,
    /// Intervals this close (ns between them) are kept as one: 0 joins only those that touch;
    /// see [`GapTimeline::with_min_duration`].
    short_gap_max: u64,
    /// Busy nanoseconds reserved in total (utilisation counter).
    pub busy_ns_total: u64,
}

/// Far more future reservations than any wire should hold: a sign of a scheduling bug.
const GAP_TIMELINE_INTERVALS_MAX: usize = 1 << 22;

impl GapTimeline {
    /// A timeline whose every reservation lasts at least `min`: a gap shorter than that can
    /// never be used, so intervals that close are kept as one, which gives the same answers
    /// with fewer intervals to search and pass over. The controller's processor: its host
    /// commands land among many short gaps between garbage collection's copies (micron-p320h-175
    /// in GC steady state, all wires: a reservation that could not simply go last passed over
    /// 3.2 intervals on average, a quarter landed 21 or more intervals back; a command's
    /// reservation took 222 instructions, 146 with the gaps joined).
    pub fn with_min_duration(min: SimDuration) -> GapTimeline {
        GapTimeline {
            short_gap_max: min.0.saturating_sub(1),
            ..GapTimeline::default()
        }
    }

    /// Reserve `duration` at the first gap at or after `earliest`; `now` (the current decision
    /// time, non-decreasing between calls) lets intervals in the past be dropped. Returns the
    /// start time.
    #[inline]
    pub fn reserve(&mut self, now: SimTime, earliest: SimTime, duration: SimDuration) -> SimTime {
        debug_assert!(earliest >= now);
        let dur = duration.0;
        debug_assert!(
            self.short_gap_max == 0 || dur > self.short_gap_max,
            "a reservation shorter than the timeline's minimum"
        );
        self.busy_ns_total += dur;
        let start = earliest.0;
        // Most transfers go after everything reserved so far (below); half of the rest start
        // inside the last interval (measured on crucial-m500-960's buses) and go right after
        // it, extending it. That interval ends after `start`, so after `now`: for them the
        // intervals already past need not be dropped first.
        if dur > 0 {
            if let Some(last) = self.busy.last_mut() {
                if last.0 <= start && start < last.1 {
                    let at = last.1;
                    last.1 += dur;
                    return SimTime(at);
                }
            }
        }
        while self.head < self.busy.len() && self.busy[self.head].1 <= now.0 {
            self.head += 1;
        }
        // Append (or extend the last).
        if dur > 0 {
            let live = self.head < self.busy.len();
            match self.busy.last_mut() {
                Some(last) if live && last.1 <= start && start - last.1 <= self.short_gap_max => {
                    last.1 = start + dur;
                    return earliest;
                }
                Some(last) if live && last.1 > start => {}
                _ => {
                    if live {
                        self.compact();
                    } else {
                        self.busy.clear();
                        self.head = 0;
                    }
                    self.busy.push((start, start + dur));
                    return earliest;
                }
            }
        }
        SimTime(self.reserve_in_gap(start, dur))
    }

    /// Drop the intervals already past once they outnumber the live ones (each interval is
    /// moved O(1) times).
    #[inline]
    fn compact(&mut self) {
        if self.head > 32 && self.head * 2 > self.busy.len() {
            self.busy.drain(..self.head);
            self.head = 0;
        }
    }

    /// `reserve` when the transfer may land before the last reserved interval (it starts
    /// before it, or takes no time): the first gap of `dur` from `start` on.
    #[inline(never)]
    fn reserve_in_gap(&mut self, mut start: u64, dur: u64) -> u64 {
        self.compact();
        let live = &self.busy[self.head..];
        // Intervals before `at` start at or before `start`; the last of them may cover it.
        let mut at = first_after(live, start);
        if at > 0 {
            start = start.max(live[at - 1].1);
        }
        if dur == 0 {
            return start;
        }
        // The intervals from `at` on start after `start`: move past those the transfer would
        // overlap. Afterwards every interval before `at` starts at or before `start`.
        while at < live.len() && live[at].0 < start + dur {
            start = start.max(live[at].1);
            at += 1;
        }
        // Merge with neighbours that end where this starts or start where it ends (or leave a
        // gap too short for any reservation), to keep the vector short.
        let mut end = start + dur;
        let at = self.head + at;
        if at < self.busy.len() && self.busy[at].0 - end <= self.short_gap_max {
            end = self.busy[at].1;
            self.busy.remove(at);
        }
        if at > self.head && start - self.busy[at - 1].1 <= self.short_gap_max {
            self.busy[at - 1].1 = end;
        } else {
            self.busy.insert(at, (start, end));
        }
        assert!(
            self.busy.len() - self.head < GAP_TIMELINE_INTERVALS_MAX,
            "GapTimeline holds too many future reservations"
        );
        start
    }

    /// The reserved intervals that end after `now` (the last one seen), in order.
    #[cfg(test)]
    fn intervals(&self, now: u64) -> &[(u64, u64)] {
        let live = &self.busy[self.head..];
        &live[live.partition_point(|&(_, end)| end <= now)..]
    }
}

/// How many of `live`'s intervals (sorted by start) start at or before `start`. Reservations
/// that land in a gap mostly land in the first one, behind work reserved ahead: on
/// micron-p320h-350 in GC steady state, 81% of the processor's (8 to 31 intervals held) and
/// 62% of the write path's (32 to 63 held) landed after the first interval, so the first two
/// are looked at before a binary search of the rest (whose loads each wait for the one before).
#[inline]
fn first_after(live: &[(u64, u64)], start: u64) -> usize {
    match live {
        [_, second, rest @ ..] if second.0 <= start => {
            2 + rest.partition_point(|&(s, _)| s <= start)
        }
        _ => live.first().is_some_and(|first| first.0 <= start) as usize,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(ns: u64) -> SimDuration {
        SimDuration(ns)
    }
    fn t(ns: u64) -> SimTime {
        SimTime(ns)
    }

    /// A wire always busy into the future, whose reservations always go last with a gap
    /// before them (none in a gap): the intervals already past are dropped as it goes, so
    /// what it holds stays bounded by the live ones.
    #[test]
    fn past_intervals_are_dropped_without_in_gap_reservations() {
        let mut w = GapTimeline::default();
        for i in 0..100_000u64 {
            // Ten reservations ahead of `now`, each 10 ns after the one before ends.
            let now = t(i * 100);
            let start = w.reserve(now, t(i * 100 + 1000), d(90));
            assert_eq!(start, t(i * 100 + 1000));
            assert!(w.intervals(now.0).len() <= 11);
        }
        assert!(
            w.busy.len() <= 2 * 11 + 33,
            "{} intervals held",
            w.busy.len()
        );
    }

    /// The look at the first two intervals answers as the binary search of them all does.
    #[test]
    fn first_after_is_the_partition_point() {
        let live: Vec<(u64, u64)> = (0..40).map(|i| (i * 10, i * 10 + 5)).collect();
        for n in 0..live.len() {
            for start in 0..(n as u64 * 10 + 20) {
                let expect = live[..n].partition_point(|&(s, _)| s <= start);
                assert_eq!(
                    first_after(&live[..n], start),
                    expect,
                    "{n} intervals, {start}"
                );
            }
        }
    }

    #[test]
    fn fifo_serialises() {
        let mut f = FifoTimeline::default();
        assert_eq!(f.reserve(t(0), d(10)), t(0));
        assert_eq!(f.reserve(t(0), d(10)), t(10));
        assert_eq!(f.reserve(t(50), d(10)), t(50));
    }

    #[test]
    fn gap_is_backfilled() {
        let mut g = GapTimeline::default();
        // A transfer reserved for later leaves [0, 100) free.
        assert_eq!(g.reserve(t(0), t(100), d(50)), t(100));
        assert_eq!(g.reserve(t(0), t(0), d(40)), t(0));
        assert_eq!(g.reserve(t(0), t(0), d(40)), t(40)); // 40..80 fits before 100
        assert_eq!(g.reserve(t(0), t(0), d(40)), t(150)); // 80..120 would overlap
        assert_eq!(g.busy_ns_total, 170);
    }

    #[test]
    fn past_intervals_are_dropped() {
        let mut g = GapTimeline::default();
        for i in 0..100 {
            g.reserve(t(i * 10), t(i * 10), d(5));
        }
        // Every reservation found the last one past: what is held is the new one alone.
        assert_eq!(g.busy.len(), 1);
    }

    /// With a minimum duration, gaps too short to use are joined: the same answers as without,
    /// from fewer intervals.
    #[test]
    fn joining_unusable_gaps_keeps_the_answers() {
        let mut rng = crate::rng::Rng::new(11);
        let min = 25;
        let (mut joined, mut plain) = (
            GapTimeline::with_min_duration(d(min)),
            GapTimeline::default(),
        );
        let (mut now, mut fewer) = (0, 0);
        for _ in 0..100_000 {
            now += rng.below(80);
            let earliest = now + rng.below(1000);
            let dur = min + rng.below(10);
            let a = joined.reserve(t(now), t(earliest), d(dur));
            assert_eq!(a, plain.reserve(t(now), t(earliest), d(dur)));
            assert!(joined.intervals(now).len() <= plain.intervals(now).len());
            fewer += (joined.intervals(now).len() < plain.intervals(now).len()) as u32;
        }
        assert_eq!(joined.busy_ns_total, plain.busy_ns_total);
        assert!(fewer > 10_000, "gaps were joined {fewer} times");
    }

    /// The deque gives the tree's answers: random reservations against a BTreeMap model of
    /// the same rule.
    #[test]
    fn matches_an_interval_tree_model() {
        use std::collections::BTreeMap;
        fn model(busy: &mut BTreeMap<u64, u64>, now: u64, earliest: u64, dur: u64) -> u64 {
            busy.retain(|_, e| *e > now);
            let mut start = earliest;
            if let Some((_, &e)) = busy.range(..=start).next_back() {
                start = start.max(e);
            }
            if dur == 0 {
                return start;
            }
            for (&s, &e) in busy.range(start..) {
                if s >= start + dur {
                    break;
                }
                start = start.max(e);
            }
            let end = start + dur;
            let ms = match busy.range(..=start).next_back() {
                Some((&s, &e)) if e == start => s,
                _ => start,
            };
            let me = busy.remove(&end).unwrap_or(end);
            busy.insert(ms, me);
            start
        }
        let mut rng = crate::rng::Rng::new(7);
        // (how far ahead a transfer may be reserved, longest transfer): the second mix keeps
        // dozens of intervals, so reservations land far back.
        for (spread, dur_max) in [(400, 60), (6000, 30)] {
            for _ in 0..50 {
                let (mut g, mut m) = (GapTimeline::default(), BTreeMap::new());
                let mut now = 0;
                for _ in 0..2000 {
                    now += rng.below(50);
                    let earliest = now + rng.below(spread);
                    let dur = rng.below(dur_max);
                    let a = g.reserve(t(now), t(earliest), d(dur));
                    assert_eq!(a.0, model(&mut m, now, earliest, dur));
                    assert_eq!(
                        g.intervals(now).to_vec(),
                        m.iter().map(|(&s, &e)| (s, e)).collect::<Vec<_>>()
                    );
                }
            }
        }
    }
}
