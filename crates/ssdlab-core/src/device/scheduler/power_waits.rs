//! The dies waiting for a place under a limit on active dies: one line, one `PowerWake` event.

use crate::device::Event;
use crate::sim::Kernel;
use crate::time::SimTime;

/// The idle dies waiting for a place under the limit on active dies, in the order they began
/// to wait (first come, first served), behind one `PowerWake` event at the first time a place
/// frees: when the first running die that takes no other operation at its end (nothing queued
/// on it, or it must wait itself) ends, or at once when the limit rises. There the first in
/// line tries again; it and those after it take the places free, in line order, and the first
/// that finds none keeps its place at the head, the event going to the next such end. The
/// line tries after the other events of its nanosecond (`Kernel::schedule_last`), so a die
/// ending then that takes its next operation keeps its place, as a die in cache mode does
/// (ASSUMED: a die keeps its place across back-to-back operations; before, the line or the die
/// went first by which event was queued first, and the order alone moved micron-p320h-350's
/// host writes in a 20 s window by +1.8%); and when the line tries does not depend on when the
/// wake-up was asked.
///
/// A running die with work queued takes its next operation at or before its end (cache mode)
/// and keeps its place, so its end is no wake-up: the line woken at every running die's end
/// gives the same run bit for bit (a test compares them) with 47 times the wake-ups that start
/// nothing (`dies_waiting_in_line_for_a_place_run_every_job_to_its_end`), and on
/// micron-p320h-350 in GC steady state 98% of them were such. A die whose queue empties as
/// it starts its last operation wakes the line at that operation's end if the line is not
/// empty (`Scheduler::start_next`); a new line finds its first such end on the busy-die wheel
/// (`ActiveDies::first_end_where`).
///
/// Earlier each waiter was a wake-up of its own (a `DieReady` at that end, then kept as runs of
/// such wake-ups with their sequences, `docs/performance.md`), so at every end each one tried
/// and all but one waited again, taking a new sequence: the order among waiters was the order
/// of their last retries, and a die's place in line could go to one that began waiting later.
/// First come, first served is ASSUMED: no source describes how these controllers order the
/// dies waiting for power; it is the plainest arbiter, and no die waits behind later ones.
///
/// A die whose array is still running when it must wait (a cache-mode operation over the limit
/// after it fell) is not in the line: it gets a `DieReady` of its own at the first other end, as
/// it may start with one place fewer free than an idle die needs; its own end wakes the line.
#[derive(Clone, Debug)]
pub(super) struct PowerWaits {
    /// Per die: the die after it in line (`NO_DIE`: the last).
    next: Vec<u32>,
    head: u32,
    tail: u32,
    /// When the queued `PowerWake` is due (None: none is queued). A `PowerWake` at any other
    /// time was overtaken by an earlier one (the limit fell and a shorter operation started)
    /// and does nothing.
    pub(super) wake_at: Option<SimTime>,
    /// Dies that have waited in line, and `PowerWake`s that started none, so far.
    pub(super) waited: u64,
    pub(super) no_place: u64,
}

pub(super) const NO_DIE: u32 = u32::MAX;

impl PowerWaits {
    pub(super) fn new(dies: u32) -> Self {
        PowerWaits {
            next: vec![NO_DIE; dies as usize],
            head: NO_DIE,
            tail: NO_DIE,
            wake_at: None,
            waited: 0,
            no_place: 0,
        }
    }

    /// `die` joins the back of the line.
    pub(super) fn push_back(&mut self, die: u32) {
        self.waited += 1;
        self.next[die as usize] = NO_DIE;
        if self.tail == NO_DIE {
            self.head = die;
        } else {
            self.next[self.tail as usize] = die;
        }
        self.tail = die;
    }

    /// The first in line, if any.
    #[inline]
    pub(super) fn front(&self) -> Option<u32> {
        (self.head != NO_DIE).then_some(self.head)
    }

    /// The first in line takes a place.
    pub(super) fn pop_front(&mut self) -> u32 {
        let die = self.head;
        debug_assert_ne!(die, NO_DIE);
        self.head = self.next[die as usize];
        if self.head == NO_DIE {
            self.tail = NO_DIE;
        }
        die
    }

    /// Have the line try again at `at`, unless a `PowerWake` is due no later. The line tries
    /// after the other events of that nanosecond (a die ending then that takes its next
    /// operation keeps its place), so when it does is the same whenever the wake-up was asked.
    #[inline]
    pub(super) fn wake(&mut self, k: &mut Kernel<Event>, at: SimTime) {
        if self.wake_at.is_none_or(|w| at < w) {
            self.wake_at = Some(at);
            k.schedule_last(at, Event::PowerWake);
        }
    }
}
