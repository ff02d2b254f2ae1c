//! Resource timelines: when a die, a channel bus, a host link or the controller is busy.
//!
//! Decisions are made in simulated-time order (the device's event loop guarantees it), so a
//! reservation never lands before an earlier decision's "now".

use crate::time::{SimDuration, SimTime};
use std::collections::VecDeque;

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
/// A sorted deque, not a search tree: a wire holds a few dozen future intervals at most, the
/// oldest are dropped from the front as time passes, and new ones land near the back, so
/// binary search and a short shift beat a tree's allocation and pointer chasing (issue 15's
/// profile: 13% of a GC-bound run in the tree).
#[derive(Clone, Debug, Default)]
pub struct GapTimeline {
    /// (start, end) of each reserved interval that ends after the last `now` seen.
    busy: VecDeque<(u64, u64)>,
    /// Busy nanoseconds reserved in total (utilisation counter).
    pub busy_ns_total: u64,
}

/// Far more future reservations than any wire should hold: a sign of a scheduling bug.
const GAP_TIMELINE_INTERVALS_MAX: usize = 1 << 22;

impl GapTimeline {
    /// Reserve `duration` at the first gap at or after `earliest`; `now` (the current decision
    /// time, non-decreasing between calls) lets intervals in the past be dropped. Returns the
    /// start time.
    pub fn reserve(&mut self, now: SimTime, earliest: SimTime, duration: SimDuration) -> SimTime {
        debug_assert!(earliest >= now);
        while self.busy.front().is_some_and(|&(_, e)| e <= now.0) {
            self.busy.pop_front();
        }
        let dur = duration.0;
        self.busy_ns_total += dur;
        let mut start = earliest.0;
        // Most transfers go after everything reserved so far: append (or extend the last).
        match self.busy.back_mut() {
            None if dur > 0 => {
                self.busy.push_back((start, start + dur));
                return SimTime(start);
            }
            Some(last) if last.1 <= start && dur > 0 => {
                if last.1 == start {
                    last.1 = start + dur;
                } else {
                    self.busy.push_back((start, start + dur));
                }
                return SimTime(start);
            }
            _ => {}
        }
        // The interval that starts at or before `start` may cover it.
        let before = self.busy.partition_point(|&(s, _)| s <= start);
        if before > 0 {
            start = start.max(self.busy[before - 1].1);
        }
        if dur == 0 {
            return SimTime(start);
        }
        // The first gap of `dur` among the intervals from `start` on.
        let from = self.busy.partition_point(|&(s, _)| s < start);
        for &(s, e) in self.busy.range(from..) {
            if s >= start + dur {
                break;
            }
            start = start.max(e);
        }
        // Merge with neighbours that end where this starts or start where it ends, to keep the
        // deque short.
        let end = start + dur;
        let at = self.busy.partition_point(|&(s, _)| s <= start);
        let end = match self.busy.get(at) {
            Some(&(s, e)) if s == end => {
                self.busy.remove(at);
                e
            }
            _ => end,
        };
        if at > 0 && self.busy[at - 1].1 == start {
            self.busy[at - 1].1 = end;
        } else {
            self.busy.insert(at, (start, end));
        }
        assert!(
            self.busy.len() < GAP_TIMELINE_INTERVALS_MAX,
            "GapTimeline holds too many future reservations"
        );
        SimTime(start)
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
        assert!(g.busy.len() <= 1);
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
        for _ in 0..50 {
            let (mut g, mut m) = (GapTimeline::default(), BTreeMap::new());
            let mut now = 0;
            for _ in 0..2000 {
                now += rng.below(50);
                let earliest = now + rng.below(400);
                let dur = rng.below(60);
                let a = g.reserve(t(now), t(earliest), d(dur));
                assert_eq!(a.0, model(&mut m, now, earliest, dur));
                assert_eq!(
                    g.busy.iter().copied().collect::<Vec<_>>(),
                    m.iter().map(|(&s, &e)| (s, e)).collect::<Vec<_>>()
                );
            }
        }
    }
}
