//! The engine's one link to real time, behind a trait: the wall clock when serving, a
//! scripted clock in tests, so the pacing of replies is tested without sleeping.
//!
//! The engine asks two things of time: what it is now ([`Clock::now`]: the origin of the model's
//! time, each request's arrival, each reply's lateness) and to wait for the next message at
//! most so long ([`Clock::recv_timeout`]: a sleep until the next completion, or with a zero
//! timeout one turn of a polling loop).

use super::Msg;
use std::sync::mpsc::{Receiver, RecvTimeoutError, TryRecvError};
use std::time::{Duration, Instant};

pub(crate) trait Clock: Send {
    /// The time now.
    fn now(&self) -> Instant;

    /// The next message, waiting at most `timeout` for one (zero: one turn of a polling loop,
    /// which may let a little time pass). `Timeout` when none came in time, `Disconnected`
    /// when no sender is left.
    fn recv_timeout(
        &mut self,
        rx: &Receiver<Msg>,
        timeout: Duration,
    ) -> Result<Msg, RecvTimeoutError>;
}

/// The wall clock: what `serve` runs on.
pub(crate) struct WallClock;

impl Clock for WallClock {
    fn now(&self) -> Instant {
        super::wall_now()
    }

    fn recv_timeout(
        &mut self,
        rx: &Receiver<Msg>,
        timeout: Duration,
    ) -> Result<Msg, RecvTimeoutError> {
        if !timeout.is_zero() {
            return rx.recv_timeout(timeout);
        }
        rx.try_recv().map_err(|e| match e {
            TryRecvError::Empty => RecvTimeoutError::Timeout,
            TryRecvError::Disconnected => RecvTimeoutError::Disconnected,
        })
    }
}

/// A clock that moves only when the engine waits, with the messages of a test delivered at the
/// times it scripts: each message is handed over once the clock reaches its time (a request's
/// own `arrived`, as a connection reader would read it off its socket then), a wait with
/// nothing due before its end jumps to the end, and a turn of a polling loop lets
/// [`ScriptedClock::POLL`] pass. The whole run is deterministic and takes no real time.
#[cfg(test)]
pub(crate) struct ScriptedClock {
    origin: Instant,
    now: Duration,
    /// (time after the origin, message), in time order.
    script: std::collections::VecDeque<(Duration, Msg)>,
}

#[cfg(test)]
impl ScriptedClock {
    /// A polling turn's time (a real one takes well under a microsecond).
    pub(crate) const POLL: Duration = Duration::from_nanos(100);

    pub(crate) fn new(origin: Instant) -> Self {
        ScriptedClock {
            origin,
            now: Duration::ZERO,
            script: Default::default(),
        }
    }

    /// Deliver `msg` when the clock reaches `at` after the origin (times in order).
    pub(crate) fn at(&mut self, at: Duration, msg: Msg) {
        assert!(
            self.script.back().is_none_or(|(t, _)| *t <= at),
            "script in time order"
        );
        self.script.push_back((at, msg));
    }
}

#[cfg(test)]
impl Clock for ScriptedClock {
    fn now(&self) -> Instant {
        self.origin + self.now
    }

    fn recv_timeout(
        &mut self,
        rx: &Receiver<Msg>,
        timeout: Duration,
    ) -> Result<Msg, RecvTimeoutError> {
        // Messages sent on the channel itself come first; with the script done and no sender
        // left, nothing more can come.
        match rx.try_recv() {
            Ok(m) => return Ok(m),
            Err(TryRecvError::Disconnected) if self.script.is_empty() => {
                return Err(RecvTimeoutError::Disconnected)
            }
            Err(_) => {}
        }
        let until = self.now + timeout.max(Self::POLL);
        if self.script.front().is_some_and(|&(at, _)| at <= until) {
            let (at, msg) = self.script.pop_front().expect("due");
            self.now = self.now.max(at);
            return Ok(msg);
        }
        self.now = until;
        Err(RecvTimeoutError::Timeout)
    }
}
