//! One run loop for every driver of a device.
//!
//! A [`Session`] owns the loop that every driver used to write for itself (next event or
//! next submission, whichever comes first -> close the intervals the clock passed -> step ->
//! drain completions -> record), and the [`Recorder`] it fills. A driver is a [`Source`]: it
//! says only what to submit and when ([`Source::next_submission`], [`Source::submit`]), what
//! a completion means to it ([`Source::completed`]) and, through one answer at each point
//! where the session could stop ([`Source::control`]), whether it goes on, pauses or is done. Jobs
//! ([`crate::workload::JobRun`]) and trace replay ([`crate::replay::ReplayRun`]) are sources;
//! a new per-interval column or a new kind of measurement goes in one place.
//!
//! Between a source's points of interest ([`Source::quiet_until`]: its next submission, its
//! meters' next interval end) the events that complete nothing are stepped without asking it
//! anything: most of a drive's events are dispatches, program ends and die wake-ups.
//!
//! Time: a submission due before the next event goes first (ties too: a closed loop refills
//! at once); while nothing is outstanding and the next submission lies ahead, the drive is
//! idle and its background collection steps are events of the loop like the others
//! ([`Device::background_step_before`]: planned afresh at every turn, dropped when a command
//! comes; the meter closes its intervals before them). [`idle`] runs the same loop for a host
//! that sends nothing for a while. A session that
//! measures from a later time (fio's `ramp_time`) records nothing before it and takes the
//! device's counters again when it is reached.

use crate::device::{Completion, Device};
use crate::record::Recorder;
use crate::time::SimTime;

/// What a driver of a session supplies.
pub trait Source {
    /// When the next command should be submitted, given the device's time `now`; `None` while
    /// the source waits for completions or has nothing more to send. A time before `now`
    /// means now.
    fn next_submission(&mut self, now: SimTime) -> Option<SimTime>;

    /// Submit the command [`Source::next_submission`] announced, at `at` (the device's time).
    fn submit(&mut self, dev: &mut Device, at: SimTime);

    /// Commands submitted and not yet completed.
    fn outstanding(&self) -> u64;

    /// A command completed (at `dev.now()`; `dev` to read what it returns, e.g. through the
    /// map). Returns whether the session records it in the recorder (a source's own
    /// bookkeeping commands, such as a final flush, are not recorded).
    fn completed(&mut self, c: &Completion, dev: &Device) -> bool;

    /// The device has processed an event; its completions follow (a data store applies the
    /// FTL's map changes here, before it answers them).
    fn stepped(&mut self, _dev: &mut Device) {}

    /// The device is about to process the event at `t` (after the session's own recorder
    /// closed the intervals before it): a source with recorders of its own (the jobs of a
    /// group, each measured over its own span) closes theirs here, with the same samples.
    fn before_event(&mut self, _dev: &Device, _t: SimTime) {}

    /// Until when (ns, exclusive) the session may step the device through events that complete
    /// nothing without asking the source anything: while no command completes, no submission
    /// is due before then, and `before_event`, `stepped` and `control` would do nothing. 0 (the
    /// default): ask at every event.
    fn quiet_until(&mut self) -> u64 {
        0
    }

    /// What happens next at `point` (see [`Point`]): go on, return from this `advance` (not
    /// done), or end the session. One answer in place of separate questions; the default is a
    /// source that runs to its own end: go on everywhere, done when at rest.
    #[inline]
    fn control(&mut self, point: Point, _dev: &mut Device) -> Control {
        match point {
            Point::AtRest => Control::Stop,
            _ => Control::Continue,
        }
    }
}

/// Where the session asks a source what happens next ([`Source::control`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Point {
    /// Before the next event is processed (`Stop`: end there, a harness that stops a set
    /// number of steps after its last command).
    BeforeEvent,
    /// After a step's completions and the submissions due then (`Stop`: the source is done;
    /// `Pause`: return now, a server that answers each completion as soon as the model has it).
    AfterStep,
    /// Nothing is to be submitted (`Pause`: the source has no end of its own, so the drive is
    /// idle until the driver submits more: its background collection may use the time, and
    /// with nothing pending an `advance` returns, not done).
    Idle,
    /// Nothing is pending on the device and nothing is to be submitted, and the source is not
    /// open-ended (`Continue`: it submitted something more, a final flush; `Stop`: done).
    AtRest,
}

/// A source's answer at a [`Point`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Control {
    Continue,
    Pause,
    Stop,
}

/// A recorder and its ramp: nothing is recorded before `rec.start`, and the device's
/// counters are taken again when it is reached. The session has one; a source that measures
/// several things over their own spans (the jobs of a group) has one each.
pub struct Meter {
    pub rec: Recorder,
    /// Before `rec.start` (a ramp): completions are not recorded.
    ramping: bool,
}

impl Meter {
    /// Measuring `dev` from `start` (now, or later after a ramp), in intervals of `interval_ns`.
    pub fn new(dev: &Device, start: SimTime, interval_ns: u64) -> Meter {
        Meter {
            rec: Recorder::new(dev, start, interval_ns),
            ramping: start > dev.now(),
        }
    }

    /// The device is about to process an event at `e`: end the ramp when `e` reaches the
    /// start, close the intervals before `e`. True when intervals closed. Called before every
    /// event (twice in a job run): inlined, with the ramp's end apart.
    #[inline(always)]
    pub fn before_event(&mut self, dev: &Device, e: SimTime) -> bool {
        if self.ramping {
            return self.end_ramp(dev, e);
        }
        self.rec.before_event(dev, e)
    }

    #[inline(never)]
    fn end_ramp(&mut self, dev: &Device, e: SimTime) -> bool {
        if e < self.rec.start {
            return false;
        }
        // The ramp is over: what happened so far is not measured.
        self.ramping = false;
        self.rec.restart_counters(dev);
        self.rec.before_event(dev, e)
    }

    /// Before this time (ns) `before_event` does nothing: the ramp's end, or the end of the
    /// first interval not closed.
    #[inline]
    pub fn quiet_until(&self) -> u64 {
        if self.ramping {
            self.rec.start.ns()
        } else {
            self.rec.next_close_ns()
        }
    }

    /// Past the ramp: completions count.
    #[inline]
    pub fn measuring(&self) -> bool {
        !self.ramping
    }
}

/// The run loop and its recorder.
pub struct Session {
    pub meter: Meter,
    /// How far the session has gone: the device's clock, or the end of an idle gap reached.
    clock: SimTime,
    done: bool,
    /// A step's completions (the buffer is reused).
    completions: Vec<Completion>,
}

impl Session {
    /// A session on `dev` measuring from `start` (now, or later after a ramp), with intervals
    /// of `interval_ns`.
    pub fn new(dev: &Device, start: SimTime, interval_ns: u64) -> Session {
        Session {
            meter: Meter::new(dev, start, interval_ns),
            clock: dev.now(),
            done: false,
            completions: Vec::new(),
        }
    }

    /// Simulated time the session has reached (idle gaps included).
    pub fn now(&self, dev: &Device) -> SimTime {
        self.clock.max(dev.now())
    }

    pub fn is_done(&self) -> bool {
        self.done
    }

    /// Run `source` on `dev` until simulated time `until` or its end. True when done.
    pub fn advance(&mut self, dev: &mut Device, source: &mut impl Source, until: SimTime) -> bool {
        while !self.done {
            let now = dev.now();
            let submit_at = source.next_submission(now);
            let event_at = dev.next_event_time();
            if submit_at.is_some() || source.control(Point::Idle, dev) == Control::Pause {
                // The host is idle until its next submission (or, for a source without an end
                // of its own, until this slice's): the drive's background collection may take
                // a step before it and before the drive's next event (those first at the
                // same instant), while nothing is in the drive.
                let before = submit_at
                    .unwrap_or(SimTime(u64::MAX))
                    .min(event_at.unwrap_or(SimTime(u64::MAX)))
                    .min(until);
                if let Some((at, die)) = dev.background_step_before(before) {
                    self.meter.before_event(dev, at);
                    source.before_event(dev, at);
                    dev.collect_in_background(at, die);
                    source.stepped(dev);
                    continue;
                }
            }
            match (submit_at, event_at) {
                (Some(s), e) if e.is_none_or(|e| s <= e) => {
                    if s > until {
                        // An idle gap reaching past this slice: the session's clock moves
                        // through it.
                        self.clock = self.clock.max(until);
                        return false;
                    }
                    let at = s.max(dev.now());
                    // The intervals before it close first: what the command does lands in its own.
                    self.meter.before_event(dev, at);
                    source.before_event(dev, at);
                    source.submit(dev, at);
                }
                (_, Some(e)) => {
                    if e > until {
                        self.clock = self.clock.max(until);
                        return false;
                    }
                    if source.control(Point::BeforeEvent, dev) == Control::Stop {
                        self.done = true;
                        break;
                    }
                    if self.step(dev, source, e, until) {
                        return false;
                    }
                }
                (None, None) | (Some(_), None) => {
                    if source.control(Point::Idle, dev) == Control::Pause {
                        return false;
                    }
                    assert!(
                        source.outstanding() == 0,
                        "commands outstanding with no event pending"
                    );
                    self.done = source.control(Point::AtRest, dev) == Control::Stop;
                }
            }
        }
        true
    }

    /// Process the event at `e`, its completions, and the submissions due at once. Events that
    /// follow it up to `until` and complete nothing, in the span where neither the source nor
    /// the meter would act on them ([`Source::quiet_until`]), are processed here too: most of
    /// a drive's events (dispatches, program ends, die wake-ups) go by without the loop's
    /// questions. So are the events after the completions and submissions, while the next one
    /// comes before the source's and the meter's next point of interest (as the loop would
    /// process them, without the questions the quiet span makes idle). Returns whether the
    /// source said `Pause` after the completions and submissions ([`Point::AfterStep`]).
    fn step(
        &mut self,
        dev: &mut Device,
        source: &mut impl Source,
        e: SimTime,
        until: SimTime,
    ) -> bool {
        // Crossing into a new interval: sample device counters for the finished ones.
        self.meter.before_event(dev, e);
        source.before_event(dev, e);
        dev.step();
        source.stepped(dev);
        let mut quiet = if dev.has_completions() {
            0
        } else {
            self.quiet_until(dev, source, until)
        };
        loop {
            if !dev.has_completions() {
                while dev.next_event_time().is_some_and(|t| t.ns() < quiet) {
                    dev.step();
                    if dev.has_completions() {
                        break;
                    }
                }
            }
            let now = dev.now();
            // Most events complete nothing (a host write's dispatch, a die's next operation).
            if dev.has_completions() {
                let measured = self.meter.measuring();
                let mut completions = std::mem::take(&mut self.completions);
                dev.take_completions(&mut completions);
                for c in &completions {
                    if source.completed(c, dev) && measured {
                        self.meter.rec.record(c, now);
                    }
                }
                completions.clear();
                self.completions = completions;
            }
            // Submissions due now go before the next event (a closed loop refills at once).
            while let Some(s) = source.next_submission(now) {
                if s > now {
                    break;
                }
                source.submit(dev, now);
            }
            match source.control(Point::AfterStep, dev) {
                Control::Continue => {}
                Control::Pause => return true,
                Control::Stop => {
                    self.done = true;
                    return false;
                }
            }
            // The next event, if it comes before anything the loop would ask about, goes on
            // here: before it no submission is due, and `before_event`, `stepped` and
            // `control` would do nothing (crucial-m500-240's random writes: one return to the
            // loop per completion, ~50 instructions each).
            quiet = self.quiet_until(dev, source, until);
            if dev.next_event_time().is_none_or(|t| t.ns() >= quiet) {
                return false;
            }
            dev.step();
        }
    }

    /// Until when (ns, exclusive) events that complete nothing need neither the source nor the
    /// meter: [`Source::quiet_until`], the meter's next interval end, while the drive is idle
    /// the end of its idle timer (background collection is planned at every event from then),
    /// and past `until` never.
    #[inline]
    fn quiet_until(&self, dev: &Device, source: &mut impl Source, until: SimTime) -> u64 {
        source
            .quiet_until()
            .min(self.meter.quiet_until())
            .min(dev.background_from_ns())
            .min(until.ns().saturating_add(1))
    }
}

/// The host sends nothing until `until`: the drive goes on with what it has queued and its
/// background collection may use the time (the session's loop, with a source that submits
/// nothing), then the clock moves to `until` (the link's state, the energy and temperature
/// follow it). `Drive.idle` from Python; a driver that idles between submissions of its own
/// is a [`Source`] instead.
pub fn idle(dev: &mut Device, until: SimTime) {
    struct Idle;
    impl Source for Idle {
        fn next_submission(&mut self, _now: SimTime) -> Option<SimTime> {
            None
        }
        fn submit(&mut self, _dev: &mut Device, _at: SimTime) {
            unreachable!("an idle host submits nothing")
        }
        fn outstanding(&self) -> u64 {
            0
        }
        fn completed(&mut self, _c: &Completion, _dev: &Device) -> bool {
            false
        }
        fn control(&mut self, point: Point, _dev: &mut Device) -> Control {
            match point {
                Point::Idle | Point::AtRest => Control::Pause,
                _ => Control::Continue,
            }
        }
    }
    // One interval that never closes: nothing is recorded.
    let mut session = Session::new(dev, dev.now(), u64::MAX);
    session.advance(dev, &mut Idle, until);
    dev.pass_time_to(until);
}

/// The host sends one FLUSH now and waits for it (nothing else is submitted meanwhile): what
/// the write buffer holds goes to the NAND and, on a drive without full power-loss
/// protection, the partly filled program units are programmed (padded); a drive with full
/// protection acknowledges it at once. Returns when it completed. `Drive.flush` from Python
/// (fio's path flushes after the TRIM that prepares each step).
pub fn flush(dev: &mut Device) -> SimTime {
    struct Flush {
        sent: bool,
        completed_at: Option<SimTime>,
    }
    impl Source for Flush {
        fn next_submission(&mut self, now: SimTime) -> Option<SimTime> {
            (!self.sent).then_some(now)
        }
        fn submit(&mut self, dev: &mut Device, at: SimTime) {
            self.sent = true;
            dev.submit(crate::device::HostIo::flush(0), at);
        }
        fn outstanding(&self) -> u64 {
            u64::from(self.sent && self.completed_at.is_none())
        }
        fn completed(&mut self, _c: &Completion, dev: &Device) -> bool {
            self.completed_at = Some(dev.now());
            false
        }
        fn control(&mut self, point: Point, _dev: &mut Device) -> Control {
            match point {
                Point::AfterStep if self.completed_at.is_some() => Control::Stop,
                Point::AtRest => Control::Stop,
                _ => Control::Continue,
            }
        }
    }
    let mut source = Flush {
        sent: false,
        completed_at: None,
    };
    let mut session = Session::new(dev, dev.now(), u64::MAX);
    while !session.advance(dev, &mut source, SimTime(u64::MAX)) {}
    source.completed_at.expect("a FLUSH completes")
}

/// A source asked at every event, as the session did before it stepped through quiet
/// stretches ([`Source::quiet_until`] left at its default): what the tests compare against.
#[cfg(test)]
pub(crate) struct AskEveryEvent<'a, S: Source>(pub &'a mut S);

#[cfg(test)]
impl<S: Source> Source for AskEveryEvent<'_, S> {
    fn next_submission(&mut self, now: SimTime) -> Option<SimTime> {
        self.0.next_submission(now)
    }
    fn submit(&mut self, dev: &mut Device, at: SimTime) {
        self.0.submit(dev, at)
    }
    fn outstanding(&self) -> u64 {
        self.0.outstanding()
    }
    fn completed(&mut self, c: &Completion, dev: &Device) -> bool {
        self.0.completed(c, dev)
    }
    fn stepped(&mut self, dev: &mut Device) {
        self.0.stepped(dev)
    }
    fn before_event(&mut self, dev: &Device, t: SimTime) {
        self.0.before_event(dev, t)
    }
    fn control(&mut self, point: Point, dev: &mut Device) -> Control {
        self.0.control(point, dev)
    }
}

/// Run `source` on `dev` to its end in slices of `slice_ns`, as a run's own `advance` does;
/// asking it at every event when `ask` (see [`AskEveryEvent`]).
#[cfg(test)]
pub(crate) fn run_to_end(
    session: &mut Session,
    dev: &mut Device,
    source: &mut impl Source,
    slice_ns: u64,
    ask: bool,
) {
    let mut until = dev.now();
    loop {
        until = SimTime(until.ns() + slice_ns);
        let done = if ask {
            session.advance(dev, &mut AskEveryEvent(source), until)
        } else {
            session.advance(dev, source, until)
        };
        if done {
            return;
        }
    }
}
