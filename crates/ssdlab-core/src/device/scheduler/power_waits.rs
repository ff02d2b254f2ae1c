//! The dies waiting for a place under a limit on active dies, behind one `PowerWake` event.

use crate::device::Event;
use crate::sim::Kernel;
use crate::time::SimTime;
use std::collections::VecDeque;

/// The dies waiting for a place under the limit on active dies, each with the wake-up it
/// would have as an event of its own: a `DieReady` at the time the first running die ends,
/// with the sequence taken when it began to wait. Under a power budget most dies of a large
/// drive wait at once (a sequential fill of micron-p320h-700: 2.8 billion such wake-ups, 33
/// per die start), and at each end all of them wake, one takes the place and the others wait
/// again for the next end.
///
/// Kept here instead, in the order of their wake-ups' keys (time, sequence), as runs: dies
/// with one time and consecutive sequences, chained through `next`. One `PowerWake` event at
/// the first waiter's key stands for all of them. When the first has to wait again, the idle
/// waiters after it that come before the next other event would each do the same in turn:
/// they are moved as whole runs, with the sequences each would have taken (see
/// `Scheduler::power_wake`), whatever their number. The order of everything is the one the
/// separate wake-ups gave. A waiter whose key would come before the first run's while its
/// `PowerWake` is queued goes to the event queue as a `DieReady`, as before.
#[derive(Clone, Debug)]
pub(super) struct PowerWaits {
    /// Per die: the next die of its run (`NO_DIE`: the last).
    pub(super) next: Vec<u32>,
    /// Per die: its array was busy when it began to wait (it may get a place with none
    /// free: such a die is woken on its own).
    pub(super) busy: Vec<bool>,
    /// In key order.
    pub(super) runs: VecDeque<WaitRun>,
    /// The `PowerWake` for the first run's first die is queued.
    pub(super) wake_queued: bool,
    /// `power_wake` is running: it queues the next `PowerWake` when done.
    pub(super) waking: bool,
    /// Waiters kept here (false: every waiter has a `DieReady` of its own, the plain
    /// scheme the tests compare against).
    pub(super) batch: bool,
    /// Waiters moved to their next wake-up without an event of their own, so far.
    pub(super) moved: u64,
    /// Waiters due before the first run while its `PowerWake` was queued (given a `DieReady`
    /// of their own), so far.
    pub(super) out_of_order: u64,
}

pub(super) const NO_DIE: u32 = u32::MAX;

/// `len` waiters due at `at`, from `head` to `tail`, with sequences `sequence..sequence +
/// len`; `busy` of them were busy when they began to wait.
#[derive(Clone, Copy, Debug)]
pub(super) struct WaitRun {
    pub(super) at: SimTime,
    pub(super) sequence: u64,
    pub(super) len: u32,
    pub(super) busy: u32,
    pub(super) head: u32,
    pub(super) tail: u32,
}

impl PowerWaits {
    pub(super) fn new(dies: u32) -> Self {
        PowerWaits {
            next: vec![NO_DIE; dies as usize],
            busy: vec![false; dies as usize],
            runs: VecDeque::new(),
            wake_queued: false,
            waking: false,
            batch: true,
            moved: 0,
            out_of_order: 0,
        }
    }

    /// `die` waits until `at`, its place in line the `sequence` it took now (the newest).
    pub(super) fn push_back(
        &mut self,
        k: &mut Kernel<Event>,
        die: u32,
        busy: bool,
        at: SimTime,
        sequence: u64,
    ) {
        self.next[die as usize] = NO_DIE;
        self.busy[die as usize] = busy;
        let run = WaitRun {
            at,
            sequence,
            len: 1,
            busy: busy as u32,
            head: die,
            tail: die,
        };
        if !self.batch || !self.insert(run) {
            // Before the first run, whose `PowerWake` is queued: an event of its own.
            self.out_of_order += self.batch as u64;
            k.schedule_with_sequence(at, sequence, Event::DieReady(die));
            return;
        }
        self.queue_wake(k);
    }

    /// Put `run` (sequences newer than every waiting one) in its place: after every run due
    /// no later, joined to the one before when it follows on. False if that place is first
    /// while the first run's `PowerWake` is queued (nothing is changed then).
    pub(super) fn insert(&mut self, run: WaitRun) -> bool {
        let mut i = self.runs.len();
        while i > 0 && self.runs[i - 1].at > run.at {
            i -= 1;
        }
        if i == 0 {
            if self.wake_queued {
                return false;
            }
            self.runs.push_front(run);
            return true;
        }
        let before = &mut self.runs[i - 1];
        if before.at == run.at && before.sequence + before.len as u64 == run.sequence {
            self.next[before.tail as usize] = run.head;
            before.tail = run.tail;
            before.len += run.len;
            before.busy += run.busy;
        } else {
            self.runs.insert(i, run);
        }
        true
    }

    /// The first waiter, its turn come at `now`.
    pub(super) fn pop_front(&mut self, now: SimTime) -> (u32, bool) {
        let run = self.runs.front_mut().expect("a die waiting");
        debug_assert_eq!(run.at, now);
        let die = run.head;
        let busy = self.busy[die as usize];
        run.head = self.next[die as usize];
        run.sequence += 1;
        run.len -= 1;
        run.busy -= busy as u32;
        if run.len == 0 {
            self.runs.pop_front();
        }
        (die, busy)
    }

    /// Take the runs due at `now` whose sequences are below `limit` (the next other event's),
    /// from the front, while none of their dies was busy: as one chain (head, tail, count), in
    /// order. A run is taken whole or not at all: its sequences are consecutive, so no other
    /// event's falls inside it.
    pub(super) fn take_idle_due(&mut self, now: SimTime, limit: u64) -> Option<(u32, u32, u64)> {
        let mut chain: Option<(u32, u32, u64)> = None;
        while let Some(&front) = self.runs.front() {
            if front.at != now || front.busy > 0 || front.sequence >= limit {
                break;
            }
            debug_assert!(front.sequence + front.len as u64 <= limit);
            self.runs.pop_front();
            let (head, tail, n) = (front.head, front.tail, front.len as u64);
            chain = Some(match chain {
                None => (head, tail, n),
                Some((h, t, m)) => {
                    self.next[t as usize] = head;
                    (h, tail, m + n)
                }
            });
        }
        chain
    }

    /// Queue the `PowerWake` for the first waiter, if there is one and none is queued.
    pub(super) fn queue_wake(&mut self, k: &mut Kernel<Event>) {
        if self.wake_queued || self.waking {
            return;
        }
        if let Some(r) = self.runs.front() {
            k.schedule_with_sequence(r.at, r.sequence, Event::PowerWake);
            self.wake_queued = true;
        }
    }
}
