//! The simulation kernel: the clock and the queue of timed events, for any event type.
//!
//! [`Kernel`] is the only owner of the current simulated time. It moves in two ways only: to
//! an event's time when the event is popped, and forward to a submission's time when nothing
//! is pending before it ([`Kernel::advance_to`]). Everything else reads [`Kernel::now`], so a
//! decision cannot be taken at a time other than the one the clock shows (MQSim's
//! `Simulator_Engine` owns its clock the same way).
//!
//! Events are ordered by (time, sequence of insertion), so equal times keep the order in which
//! they were decided. Most events a drive produces come in time order within their kind
//! (command dispatches and completions; program ends, each a fixed array time after its
//! start): the caller names a lane for such a kind, and an event that comes no earlier than
//! the last of its lane goes to that lane's FIFO, the others to the queue. Pops merge the queue
//! and the lanes by the same key, which gives exactly the order the queue alone would give at
//! a fraction of the cost. The queue is a calendar wheel of 1 us buckets with a 4-ary heap for
//! events beyond it ([`crate::heap::Wheel`]); the least key of the queue and of the lanes'
//! fronts are kept, the lanes' found again after a lane's pop with selects rather than
//! branches.

use crate::heap::{min_of, Keyed, Wheel};
use crate::time::SimTime;
use std::collections::VecDeque;

/// An event with its time and insertion sequence; ordered by (time, sequence) alone, so the
/// event type needs no ordering of its own.
#[derive(Clone, Copy)]
struct Entry<E> {
    at: SimTime,
    sequence: u64,
    event: E,
}

impl<E> Keyed for Entry<E> {
    /// (time, sequence) as one number: the same order, one comparison.
    #[inline]
    fn key(&self) -> u128 {
        ((self.at.0 as u128) << 64) | self.sequence as u128
    }
}

/// The clock and the pending events of one simulation.
pub struct Kernel<E> {
    /// The current simulated time: every decision is taken at it. Invariant: no pending
    /// event is earlier.
    now: SimTime,
    /// The events that go to no lane.
    queue: Wheel<Entry<E>>,
    /// Per lane, events in (time, sequence) order, merged with `queue` on pop.
    lanes: [VecDeque<Entry<E>>; LANES],
    /// Per lane, the key of its first event (`u128::MAX` when empty).
    fronts: [u128; LANES],
    /// The least of `fronts` and its lane: what the merge with the queue reads.
    lanes_first: (u128, usize),
    sequence: u64,
}

/// Set in the sequence of an event queued by [`Kernel::schedule_last`] (a count of insertions
/// never reaches it).
const LAST: u64 = 1 << 63;

/// FIFO lanes beside the queue (see [`Kernel::schedule_in_lane`]).
pub const LANES: usize = 3;

/// The least of the lanes' front keys and its lane, as a tournament of selects (no branches to
/// mispredict: which lane comes next changes from one event to the next).
#[inline(always)]
fn least_front(f: &[u128; LANES]) -> (u128, usize) {
    let (a, ka) = min_of(0, f[0], 1, f[1]);
    let (b, kb) = min_of(a, ka, 2, f[2]);
    (kb, b)
}

impl<E> Default for Kernel<E> {
    fn default() -> Self {
        Kernel {
            now: SimTime::ZERO,
            queue: Wheel::default(),
            lanes: Default::default(),
            fronts: [u128::MAX; LANES],
            lanes_first: (u128::MAX, 0),
            sequence: 0,
        }
    }
}

impl<E: Copy> Kernel<E> {
    /// The current simulated time.
    #[inline]
    pub fn now(&self) -> SimTime {
        self.now
    }

    /// Queue `event` at `at` (not in the past).
    #[inline]
    pub fn schedule(&mut self, at: SimTime, event: E) {
        self.queue_with(at, 0, event);
    }

    /// Queue `event` at `at` (not in the past) after every event of that nanosecond scheduled
    /// the usual way, whenever they are scheduled: its sequence is above theirs (the events
    /// queued this way keep their own order among themselves).
    #[inline]
    pub fn schedule_last(&mut self, at: SimTime, event: E) {
        self.queue_with(at, LAST, event);
    }

    /// Queue `event` at `at` with the next sequence, `flags` set in it.
    #[inline(always)]
    fn queue_with(&mut self, at: SimTime, flags: u64, event: E) {
        debug_assert!(at >= self.now, "event scheduled in the past");
        self.sequence += 1;
        self.queue.push(Entry {
            at,
            sequence: flags | self.sequence,
            event,
        });
    }

    /// (time, insertion sequence) of the next event, if any.
    /// Read from the least keys kept, not from the events.
    #[inline(always)]
    pub fn peek_key(&self) -> Option<(SimTime, u64)> {
        let key = self.lanes_first.0.min(self.queue.least_key());
        (key != u128::MAX).then_some((SimTime((key >> 64) as u64), key as u64))
    }

    /// Queue an event of a kind that usually comes no earlier than the last one of its kind (a
    /// controller's dispatches, a die's program ends): `lane` (below [`LANES`]) is the kind's.
    /// It goes to the lane's FIFO when it keeps the FIFO sorted, to the queue otherwise. The
    /// order of events is the same as with [`Kernel::schedule`], whatever the lanes.
    #[inline]
    pub fn schedule_in_lane(&mut self, lane: usize, at: SimTime, event: E) {
        debug_assert!(at >= self.now, "event scheduled in the past");
        let fifo = &mut self.lanes[lane];
        if fifo.back().is_none_or(|e| e.at <= at) {
            self.sequence += 1;
            let entry = Entry {
                at,
                sequence: self.sequence,
                event,
            };
            if fifo.is_empty() {
                let key = entry.key();
                self.fronts[lane] = key;
                if key < self.lanes_first.0 {
                    self.lanes_first = (key, lane);
                }
            }
            fifo.push_back(entry);
        } else {
            self.schedule(at, event);
        }
    }

    /// The lane whose first event comes next; `LANES` when the queue's comes first (or nothing
    /// is pending).
    #[inline(always)]
    fn next_source(&self) -> usize {
        let queued = self.queue.least_key();
        let (key, lane) = self.lanes_first;
        if key < queued {
            lane
        } else {
            LANES
        }
    }

    /// Time of the next event, if any.
    #[inline]
    pub fn peek_time(&self) -> Option<SimTime> {
        self.peek_key().map(|(at, _)| at)
    }

    /// Remove the next event and move the clock to its time.
    #[inline]
    pub fn pop(&mut self) -> Option<E> {
        let entry = match self.next_source() {
            LANES => self.queue.pop(),
            lane => {
                let fifo = &mut self.lanes[lane];
                let entry = fifo.pop_front();
                self.fronts[lane] = fifo.front().map_or(u128::MAX, |e| e.key());
                self.lanes_first = least_front(&self.fronts);
                entry
            }
        }?;
        debug_assert!(entry.at >= self.now, "the clock never goes back");
        self.now = entry.at;
        Some(entry.event)
    }

    /// Move the clock forward to `at` (a host submission, an idle decision). Nothing may be
    /// pending before `at`: process events up to it first.
    #[inline]
    pub fn advance_to(&mut self, at: SimTime) {
        assert!(
            at >= self.now,
            "the clock never goes back ({at:?} < {:?})",
            self.now
        );
        debug_assert!(
            self.peek_time().is_none_or(|t| t >= at),
            "moving the clock to {at:?} skips events pending before it"
        );
        self.now = at;
    }

    /// Pending events.
    pub fn len(&self) -> usize {
        self.queue.len() + self.lanes.iter().map(VecDeque::len).sum::<usize>()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lanes_and_queue_merge_in_time_then_insertion_order_last_ones_last() {
        let mut k = Kernel::default();
        k.schedule_in_lane(0, SimTime(10), 1);
        k.schedule(SimTime(5), 2);
        k.schedule_in_lane(0, SimTime(10), 3);
        k.schedule_in_lane(0, SimTime(7), 4); // out of order: the queue
        k.schedule_last(SimTime(10), 6); // after every other event at 10, however late queued
        k.schedule(SimTime(10), 5);
        k.schedule_last(SimTime(7), 8);
        k.schedule_in_lane(0, SimTime(10), 7);
        let mut order = Vec::new();
        while let Some(e) = k.pop() {
            order.push((k.now().ns(), e));
        }
        let want = [
            (5, 2),
            (7, 4),
            (7, 8),
            (10, 1),
            (10, 3),
            (10, 5),
            (10, 7),
            (10, 6),
        ];
        assert_eq!(order, want);
    }

    #[test]
    fn the_queue_pops_in_time_then_insertion_order() {
        // Interleaved schedules and pops, many equal times: the order is (time, sequence),
        // as a sort of everything scheduled gives it.
        let mut k = Kernel::default();
        let mut expected: Vec<(u64, u64)> = Vec::new(); // (time, id) of pending events
        let mut popped = Vec::new();
        let mut want = Vec::new();
        let mut rng = crate::rng::Rng::new(12345);
        let mut id = 0u64;
        for _ in 0..20_000u64 {
            if rng.below(3) != 0 || k.is_empty() {
                // Mostly near, some in the wheel's next buckets, some beyond it (20 ms).
                let spread = [50, 5_000, 20_000_000][rng.below(3) as usize];
                let at = k.now().ns() + rng.below(spread);
                id += 1;
                // Every lane, and the queue directly.
                match rng.below(LANES as u64 + 1) as usize {
                    LANES => k.schedule(SimTime(at), id),
                    lane => k.schedule_in_lane(lane, SimTime(at), id),
                }
                expected.push((at, id));
            } else {
                // Ids grow with insertion, so (time, id) is (time, sequence).
                let next = *expected.iter().min().unwrap();
                expected.retain(|&e| e != next);
                want.push(next.1);
                popped.push(k.pop().unwrap());
            }
        }
        assert_eq!(popped, want);
        assert_eq!(k.len(), expected.len());
    }

    #[test]
    fn the_clock_moves_only_forward_and_only_by_the_kernel() {
        let mut k: Kernel<()> = Kernel::default();
        k.advance_to(SimTime(3));
        k.schedule(SimTime(8), ());
        assert_eq!(k.now(), SimTime(3), "scheduling does not move the clock");
        assert_eq!(k.peek_time(), Some(SimTime(8)));
        k.pop();
        assert_eq!(k.now(), SimTime(8), "popping moves it to the event");
        assert!(k.is_empty());
    }

    #[test]
    #[should_panic(expected = "never goes back")]
    fn advancing_into_the_past_is_refused() {
        let mut k: Kernel<()> = Kernel::default();
        k.advance_to(SimTime(5));
        k.advance_to(SimTime(4));
    }
}
