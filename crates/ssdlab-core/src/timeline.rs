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
/// transfers decided afterwards. Holds the future busy intervals, sorted and disjoint.
#[derive(Clone, Debug, Default)]
pub struct GapTimeline {
    busy: Vec<(u64, u64)>,
    /// Busy nanoseconds reserved in total (utilisation counter).
    pub busy_ns_total: u64,
}

/// Far more future reservations than any wire should hold: a sign of a scheduling bug.
const GAP_TIMELINE_INTERVALS_MAX: usize = 1 << 16;

impl GapTimeline {
    /// Reserve `duration` at the first gap at or after `earliest`; `now` (the current decision
    /// time, non-decreasing between calls) lets intervals in the past be dropped. Returns the
    /// start time.
    pub fn reserve(&mut self, now: SimTime, earliest: SimTime, duration: SimDuration) -> SimTime {
        debug_assert!(earliest >= now);
        let past = self.busy.iter().take_while(|&&(_, end)| end <= now.0).count();
        if past > 0 {
            self.busy.drain(..past);
        }
        let dur = duration.0;
        self.busy_ns_total += dur;
        let mut start = earliest.0;
        let mut index = self.busy.len();
        for (i, &(s, e)) in self.busy.iter().enumerate() {
            if e <= start {
                continue;
            }
            if s >= start + dur {
                index = i;
                break;
            }
            start = start.max(e);
        }
        if dur == 0 {
            return SimTime(start);
        }
        let end = start + dur;
        // Merge with neighbours that touch, to keep the list short.
        let touches_prev = index > 0 && self.busy[index - 1].1 == start;
        let touches_next = index < self.busy.len() && self.busy[index].0 == end;
        match (touches_prev, touches_next) {
            (true, true) => {
                self.busy[index - 1].1 = self.busy[index].1;
                self.busy.remove(index);
            }
            (true, false) => self.busy[index - 1].1 = end,
            (false, true) => self.busy[index].0 = start,
            (false, false) => self.busy.insert(index, (start, end)),
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
}
