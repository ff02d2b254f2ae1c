//! The event kernel: the simulation clock and the queue of timed events.
//!
//! Events are ordered by (time, sequence of insertion), so equal times keep the order in which
//! they were decided. Most events the controller produces come in time order (command
//! dispatches); those go to a FIFO merged with the heap by the same key, which gives exactly
//! the order the heap alone would give at a fraction of the cost.

use super::Event;
use crate::time::SimTime;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

#[derive(Default)]
pub(super) struct EventQueue {
    /// The current simulated time: every decision is taken at it.
    pub now: SimTime,
    heap: BinaryHeap<Reverse<(SimTime, u64, Event)>>,
    /// Events in (time, sequence) order, merged with `heap` on pop.
    fifo: VecDeque<(SimTime, u64, Event)>,
    sequence: u64,
}

impl EventQueue {
    pub fn push(&mut self, at: SimTime, event: Event) {
        debug_assert!(at >= self.now);
        self.sequence += 1;
        self.heap.push(Reverse((at, self.sequence, event)));
    }

    /// Queue an event that usually comes no earlier than the last one queued this way (the
    /// controller's dispatches): the FIFO when it keeps the FIFO sorted, the heap otherwise.
    pub fn push_usually_in_order(&mut self, at: SimTime, event: Event) {
        debug_assert!(at >= self.now);
        if self.fifo.back().is_none_or(|&(t, _, _)| t <= at) {
            self.sequence += 1;
            self.fifo.push_back((at, self.sequence, event));
        } else {
            self.push(at, event);
        }
    }

    /// Time of the next event, if any.
    #[inline]
    pub fn peek_time(&self) -> Option<SimTime> {
        let heap = self.heap.peek().map(|Reverse((t, _, _))| *t);
        let fifo = self.fifo.front().map(|&(t, _, _)| t);
        match (heap, fifo) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Remove and return the next event.
    #[inline]
    pub fn pop(&mut self) -> Option<(SimTime, Event)> {
        let take_fifo = match (self.heap.peek(), self.fifo.front()) {
            (Some(Reverse((t, seq, _))), Some(&(ft, fseq, _))) => (ft, fseq) < (*t, *seq),
            (None, Some(_)) => true,
            _ => false,
        };
        if take_fifo {
            self.fifo.pop_front().map(|(t, _, e)| (t, e))
        } else {
            self.heap.pop().map(|Reverse((t, _, e))| (t, e))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fifo_and_heap_merge_in_time_then_insertion_order() {
        let mut q = EventQueue::default();
        q.push_usually_in_order(SimTime(10), Event::Dispatch(1));
        q.push(SimTime(5), Event::Dispatch(2));
        q.push_usually_in_order(SimTime(10), Event::Dispatch(3));
        q.push_usually_in_order(SimTime(7), Event::Dispatch(4)); // out of order: heap
        q.push(SimTime(10), Event::Dispatch(5));
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        let ids: Vec<_> = order
            .iter()
            .map(|(_, e)| match e {
                Event::Dispatch(i) => *i,
                _ => unreachable!(),
            })
            .collect();
        assert_eq!(ids, vec![2, 4, 1, 3, 5]);
    }
}
