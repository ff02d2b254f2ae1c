//! Resource timelines: when a die, a channel bus, a host link or the controller is busy.
//!
//! Decisions are made in simulated-time order (the device's event loop guarantees it), so a
//! reservation never lands before an earlier decision's "now".

use crate::time::{SimDuration, SimTime};
use std::collections::BTreeMap;

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
/// transfers decided afterwards. Holds the future busy intervals, disjoint, keyed by start.
#[derive(Clone, Debug, Default)]
pub struct GapTimeline {
    /// start -> end of each reserved interval that ends after the last `now` seen.
    busy: BTreeMap<u64, u64>,
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
        while let Some((&s, &e)) = self.busy.first_key_value() {
            if e > now.0 {
                break;
            }
            self.busy.remove(&s);
        }
        let dur = duration.0;
        self.busy_ns_total += dur;
        let mut start = earliest.0;
        // The interval that starts at or before `start` may cover it.
        if let Some((_, &e)) = self.busy.range(..=start).next_back() {
            start = start.max(e);
        }
        if dur == 0 {
            return SimTime(start);
        }
        for (&s, &e) in self.busy.range(start..) {
            if s >= start + dur {
                break;
            }
            start = start.max(e);
        }
        // Merge with a neighbour that ends exactly where this starts, to keep the map small.
        let end = start + dur;
        let merged_start = match self.busy.range(..=start).next_back() {
            Some((&s, &e)) if e == start => s,
            _ => start,
        };
        let merged_end = match self.busy.get(&end) {
            Some(&e) => {
                self.busy.remove(&end);
                e
            }
            None => end,
        };
        self.busy.insert(merged_start, merged_end);
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
}
