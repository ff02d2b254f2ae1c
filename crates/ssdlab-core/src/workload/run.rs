//! Running a job: its streams as a session's source (each completion refills its stream's
//! queue at once), steady-state detection, and what the job measured.

use super::compile::CompiledJob;
use super::generator::{Generator, LOOKAHEAD};
use super::job::SteadyState;
use super::summary::slot_result;
pub use super::summary::{JobResult, JobSummary, ZonesSummary};
use crate::device::{Ahead, Completion, Device, HostIo, IoKind};
use crate::rng::Rng;
use crate::session::{Control, Meter, Point, Session, Source};
use crate::time::{SimTime, NS_PER_S};
use std::collections::VecDeque;

/// IOs whose map entries are loaded together (see `JobSource::issue`): their loads, and the
/// page walks before them, overlap instead of each waiting alone.
const BATCH: usize = 16;

/// One copy of a job (fio's numjobs clones): its IO stream and its queue.
struct JobStream {
    /// The job of the group it belongs to.
    job: usize,
    generator: Generator,
    /// IOs issued in all (the tags count them).
    issued_ios: u64,
    outstanding: u64,
    /// fio's loops: the pass this stream is in, and what it issued in it.
    pass: u64,
    pass_ios: u64,
    pass_bytes: u64,
    /// An FDP job's writes: how many took a placement identifier index, and the stream
    /// `plid_select=random` draws them from.
    placed: u64,
    plid_rng: Rng,
}

/// Tag bits below a stream's index (a stream issues fewer than 2^48 IOs).
const STREAM_SHIFT: u32 = 48;

/// The measured completions of a run, one row each (fio's logs without `log_avg_msec`, one
/// line per IO): the stream (a job's clones are consecutive streams, in the group's order),
/// the completion time from the start of its job's measurement, the latency, the direction
/// (0 read, 1 write, 2 trim), the length and the offset.
#[derive(Clone, Debug, Default)]
pub struct IoLog {
    pub stream: Vec<u32>,
    pub time_ns: Vec<u64>,
    pub latency_ns: Vec<u64>,
    pub op: Vec<u8>,
    pub length_bytes: Vec<u64>,
    pub offset_bytes: Vec<u64>,
}

/// Jobs in progress on a device, together (fio's jobs between two stonewalls); advance them
/// in slices so a caller can show progress.
pub struct JobRun {
    source: JobSource,
    session: Session,
}

/// Where a job of a group is.
enum Phase {
    /// Not started: waits for its start delay, or for the job it waits for (`after`).
    Waiting,
    /// Issuing and measured by its meter (from its start, after its ramp).
    Running(Box<Meter>),
    /// Over: what it measured.
    Done(Box<JobResult>),
}

/// One job of a group: its options, its measurement and its end conditions.
struct JobSlot {
    job: CompiledJob,
    /// fio's wait_for: the job of the group whose end starts this one's delay.
    after: Option<usize>,
    phase: Phase,
    stop_issuing_at: Option<SimTime>,
    completed_ios: u64,
    outstanding: u64,
    steady: Option<SteadyState>,
    /// fio's end_fsync: the job's FLUSH once its IOs are done.
    end_flush: EndFlush,
    /// Why the job stopped early (a minimum rate not met), for its summary.
    error: Option<String>,
}

/// Where a job with end_fsync is with its closing FLUSH.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum EndFlush {
    /// None asked (no end_fsync), or its IOs are still going.
    NotDue,
    /// Submitted, not yet completed: the job is not over.
    Sent,
    /// Completed (or none was asked): the job may end.
    Done,
}

/// The jobs' streams as a session's source: each completion refills its stream's queue at
/// once, until its job's runtime, IO count or byte count is reached; jobs start after their
/// delay, or when the job they wait for ends.
struct JobSource {
    jobs: Vec<JobSlot>,
    streams: Vec<JobStream>,
    start: SimTime,
    completed_ios: u64,
    /// Streams to issue for after a step's completions, in completion order.
    refill: VecDeque<usize>,
    /// Jobs over (`Phase::Done`): asked after every event.
    jobs_done: usize,
    /// Jobs due to start: (when, job), in the order they were scheduled.
    starts: Vec<(SimTime, usize)>,
    /// Every measured completion, when asked for ([`JobRun::with_io_log`]).
    io_log: Option<IoLog>,
    /// zonemode=zbd: the host's view of the zones (fio's, one per device).
    zbd: Option<super::zbd::ZbdHost>,
    /// The paced streams (rate caps, think time, flow), when a job of the group is paced.
    pacing: Option<Box<paced::Pacing>>,
}

impl JobRun {
    pub fn new(dev: &mut Device, job: &CompiledJob, seed: u64) -> JobRun {
        Self::group(dev, std::slice::from_ref(job), &[None], seed)
            .expect("one job has nothing to wait for")
    }

    /// Run `jobs` together on `dev`, as fio runs the jobs of a file between two stonewalls:
    /// each starts after its `startdelay`, counted from now or, with `after[i] = Some(j)`
    /// (fio's wait_for), from the end of job `j` (an earlier job of the group). Each is
    /// measured over its own span; the drive-wide counters of its summary (write
    /// amplification, GC) are the drive's over that span, whoever caused them.
    pub fn group(
        dev: &mut Device,
        jobs: &[CompiledJob],
        after: &[Option<usize>],
        seed: u64,
    ) -> Result<JobRun, String> {
        if jobs.is_empty() || after.len() != jobs.len() {
            return Err("a group needs at least one job, and one `after` per job".into());
        }
        for (i, a) in after.iter().enumerate() {
            if a.is_some_and(|j| j >= i) {
                return Err(format!(
                    "wait_for: job {i} ('{}') can wait only for a job before it",
                    jobs[i].job.name
                ));
            }
        }
        let link = jobs[0].link_power;
        if let Some(j) = jobs.iter().find(|j| j.link_power != link) {
            return Err(format!(
                "link_power: job '{}' differs from '{}'; jobs that run together share one host link",
                j.job.name, jobs[0].job.name
            ));
        }
        let zbd = super::zbd::ZbdHost::new(dev, jobs)?;
        dev.set_link_policy(link);
        let now = dev.now();
        let mut streams = Vec::new();
        for (i, job) in jobs.iter().enumerate() {
            for _ in 0..job.job.numjobs {
                streams.push(JobStream {
                    job: i,
                    generator: Generator::new(
                        job,
                        seed,
                        if job.uses_random_stream() {
                            dev.next_job_ordinal()
                        } else {
                            0
                        },
                    ),
                    issued_ios: 0,
                    pass: 0,
                    pass_ios: 0,
                    pass_bytes: 0,
                    outstanding: 0,
                    placed: 0,
                    plid_rng: Rng::derive(seed ^ streams.len() as u64, "workload.plid"),
                });
            }
        }
        let streams_len = streams.len();
        let mut source = JobSource {
            jobs: jobs
                .iter()
                .zip(after)
                .map(|(job, &after)| JobSlot {
                    job: job.clone(),
                    after,
                    phase: Phase::Waiting,
                    stop_issuing_at: None,
                    completed_ios: 0,
                    outstanding: 0,
                    end_flush: if job.job.end_fsync && job.writes() {
                        EndFlush::NotDue
                    } else {
                        EndFlush::Done
                    },
                    steady: job.job.ss.clone().map(|criterion| SteadyState {
                        criterion,
                        attained: false,
                        attained_at_s: None,
                        value_pct: 0.0,
                    }),
                    error: None,
                })
                .collect(),
            streams,
            start: now,
            completed_ios: 0,
            refill: VecDeque::new(),
            jobs_done: 0,
            starts: Vec::new(),
            io_log: None,
            zbd,
            pacing: paced::Pacing::of(jobs, streams_len, seed),
        };
        // The session's own recorder sees every command of the group; each job's meter sees
        // its own.
        let session = Session::new(dev, now, jobs[0].interval_ns);
        for (i, a) in after.iter().enumerate() {
            if a.is_none() {
                source.schedule(i, now);
            }
        }
        source.start_due(dev, now);
        Ok(JobRun { source, session })
    }

    /// Keep every measured completion ([`IoLog`]; take them with [`JobRun::take_io_log`]).
    pub fn with_io_log(mut self) -> JobRun {
        self.source.io_log = Some(IoLog::default());
        self
    }

    /// The completions kept since the last call (empty without [`JobRun::with_io_log`]).
    pub fn take_io_log(&mut self) -> IoLog {
        self.source
            .io_log
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default()
    }

    /// Process events until simulated time `until` or the end of the group. True when done.
    pub fn advance(&mut self, dev: &mut Device, until: SimTime) -> bool {
        self.session.advance(dev, &mut self.source, until)
    }

    /// Simulated time the run has reached: the session's clock, which moves through a slice
    /// even when the device's next event lies beyond it (a slice of `advance` measured from
    /// `dev.now()` would never reach an event more than one slice away).
    pub fn now(&self, dev: &Device) -> SimTime {
        self.session.now(dev)
    }

    /// (simulated seconds since the first job's measurement start, IOs completed, fraction
    /// done: the mean of the jobs').
    pub fn progress(&self, dev: &Device) -> (f64, u64, f64) {
        let src = &self.source;
        let since = |t: SimTime| dev.now().ns().saturating_sub(t.ns()) as f64 / NS_PER_S as f64;
        let first_start = SimTime(src.start.ns() + src.jobs[0].job.ramp_ns);
        let mut sum = 0.0;
        for (i, slot) in src.jobs.iter().enumerate() {
            let job = &slot.job;
            let n_streams = src.streams.iter().filter(|s| s.job == i).count() as u64;
            sum += match &slot.phase {
                Phase::Waiting => 0.0,
                Phase::Done(_) => 1.0,
                Phase::Running(meter) => {
                    if let Some(r) = job.runtime_ns {
                        since(meter.rec.start) / (r as f64 / NS_PER_S as f64)
                    } else if let Some(n) = job.number_ios {
                        slot.completed_ios as f64 / (n * n_streams * job.loops) as f64
                    } else if let Some(b) = job.io_bytes_max {
                        let issued: u64 = src
                            .streams
                            .iter()
                            .filter(|s| s.job == i)
                            .map(|s| s.pass * b + s.pass_bytes.min(b))
                            .sum();
                        issued as f64 / (b * n_streams * job.loops) as f64
                    } else {
                        0.0
                    }
                }
            }
            .min(1.0);
        }
        (
            since(first_start),
            src.completed_ios,
            sum / src.jobs.len() as f64,
        )
    }

    /// What each job measured, in the group's order.
    pub fn finish(self, dev: &Device) -> Vec<JobResult> {
        self.source
            .jobs
            .into_iter()
            .map(|slot| match slot.phase {
                Phase::Done(r) => *r,
                Phase::Running(meter) => {
                    slot_result(&slot.job, *meter, slot.steady, slot.error, dev)
                }
                Phase::Waiting => slot_result(
                    &slot.job,
                    Meter::new(dev, dev.now(), slot.job.interval_ns),
                    slot.steady,
                    None,
                    dev,
                ),
            })
            .collect()
    }
}

impl JobSlot {
    fn may_issue(&self, now: SimTime, s: &JobStream) -> bool {
        if !matches!(self.phase, Phase::Running(_)) || s.generator.ended {
            return false;
        }
        if self.stop_issuing_at.is_some_and(|t| now >= t) {
            return false;
        }
        !self.pass_done(s)
    }

    /// The stream has issued what one pass of the job issues.
    fn pass_done(&self, s: &JobStream) -> bool {
        self.job.number_ios.is_some_and(|n| s.pass_ios >= n)
            || self.job.io_bytes_max.is_some_and(|b| s.pass_bytes >= b)
    }
}

impl JobSource {
    /// Job `i` starts after its delay from `from`.
    fn schedule(&mut self, i: usize, from: SimTime) {
        let at = SimTime(from.ns().saturating_add(self.jobs[i].job.startdelay_ns));
        self.starts.push((at, i));
    }

    /// The earliest scheduled start (the first scheduled among equals).
    fn next_start(&self) -> Option<(usize, SimTime)> {
        self.starts
            .iter()
            .enumerate()
            .min_by_key(|(k, (at, _))| (*at, *k))
            .map(|(k, (at, _))| (k, *at))
    }

    /// Start every job due by `now` (the session's submission time, which may lie ahead of
    /// the device's clock while other jobs' commands are in flight).
    fn start_due(&mut self, dev: &mut Device, now: SimTime) {
        while let Some((k, at)) = self.next_start() {
            if at > now {
                break;
            }
            let (_, i) = self.starts.remove(k);
            self.start_job(dev, i, now);
        }
    }

    /// Job `i` starts now: its meter from the end of its ramp, then `iodepth` commands per
    /// stream.
    fn start_job(&mut self, dev: &mut Device, i: usize, now: SimTime) {
        let slot = &mut self.jobs[i];
        let start = now + crate::time::SimDuration(slot.job.ramp_ns);
        slot.phase = Phase::Running(Box::new(Meter::new(dev, start, slot.job.interval_ns)));
        slot.stop_issuing_at = slot
            .job
            .runtime_ns
            .map(|r| start + crate::time::SimDuration(r));
        if slot.job.pace.is_some() {
            self.start_paced(dev, i, now);
            self.end_if_idle(dev, i, now);
            return;
        }
        let depth = slot.job.job.iodepth;
        for k in 0..self.streams.len() {
            if self.streams[k].job != i {
                continue;
            }
            for _ in 0..depth {
                if !self.issue(dev, k, now) {
                    break;
                }
            }
        }
        self.end_if_idle(dev, i, now);
    }

    /// fio's loops: stream `k` has issued its pass, every IO of it has completed and passes
    /// remain: start the next from the span's start. True if it did.
    fn next_pass(&mut self, k: usize) -> bool {
        let s = &mut self.streams[k];
        let slot = &self.jobs[s.job];
        if s.outstanding > 0 || s.pass + 1 >= slot.job.loops || !slot.pass_done(s) {
            return false;
        }
        s.pass += 1;
        s.pass_ios = 0;
        s.pass_bytes = 0;
        s.generator.restart();
        true
    }

    /// Issue the next IO of stream `k` at `now`, if its job still issues. True if it did.
    fn issue(&mut self, dev: &mut Device, k: usize, now: SimTime) -> bool {
        let s = &mut self.streams[k];
        let slot = &mut self.jobs[s.job];
        if !slot.may_issue(now, s) {
            return false;
        }
        let io = s.generator.next(&slot.job);
        if s.generator.ended {
            return false; // a strided sequence passed the span's end: fio ends the job
        }
        self.send(dev, k, now, io)
    }

    /// Submit stream `k`'s IO `io` (drawn from its generator) at `now`: through the zones'
    /// write pointers on a zoned job, with the map entries ahead loaded and its placement
    /// identifier. False if a zoned job has no zone left to write (fio ends the job).
    #[inline(always)]
    fn send(&mut self, dev: &mut Device, k: usize, now: SimTime, io: (IoKind, u64, u64)) -> bool {
        let s = &mut self.streams[k];
        let slot = &mut self.jobs[s.job];
        let Some((kind, offset, length)) = self
            .zbd
            .as_mut()
            .map_or(Some(io), |z| z.adjust(dev, &slot.job, s.job, io))
        else {
            s.generator.ended = true; // no zone to write: fio ends the job
            return false;
        };
        // Two stages of loading ahead, a batch of IOs at a time (so the loads overlap): the
        // map entries of the IOs `LOOKAHEAD` places on, and what overwriting the ones half as
        // far on will touch (their map entries have landed).
        if s.issued_ios.is_multiple_of(BATCH as u64) {
            for (positions, stage) in [
                (LOOKAHEAD - BATCH..LOOKAHEAD, Ahead::Lookup),
                (LOOKAHEAD / 2 - BATCH..LOOKAHEAD / 2, Ahead::Overwrite),
            ] {
                for (kind, offset, _) in s.generator.coming(positions) {
                    dev.prefetch_ahead(kind, offset, stage);
                }
            }
        }
        let placement = match &slot.job.placement {
            Some(choice) if kind == IoKind::Write => {
                s.placed += 1;
                choice.pid(dev, s.placed - 1, &mut s.plid_rng, offset)
            }
            _ => crate::ftl::NO_PLACEMENT,
        };
        dev.submit_looked_ahead(
            HostIo {
                kind,
                offset_bytes: offset,
                length_bytes: length,
                fua: false,
                tag: ((k as u64) << STREAM_SHIFT) | s.issued_ios,
                placement,
            },
            now,
        );
        s.issued_ios += 1;
        s.pass_ios += 1;
        s.pass_bytes += length;
        s.outstanding += 1;
        slot.outstanding += 1;
        true
    }

    /// Job `i` issues no more and has nothing outstanding: it is over; what it measured is
    /// taken now, and the jobs waiting for it are scheduled.
    fn end_if_idle(&mut self, dev: &mut Device, i: usize, now: SimTime) {
        let slot = &mut self.jobs[i];
        if slot.outstanding > 0
            || !matches!(slot.phase, Phase::Running(_))
            || self.pacing.as_ref().is_some_and(|p| p.holds(i))
        {
            return;
        }
        if slot.end_flush != EndFlush::Done {
            // fio's end_fsync: the FLUSH goes out once every IO is done; the job ends when
            // it completes (tagged with the job's first stream, whose queue is empty).
            debug_assert_eq!(slot.end_flush, EndFlush::NotDue);
            let k = self
                .streams
                .iter()
                .position(|s| s.job == i)
                .expect("a job has a stream");
            let s = &mut self.streams[k];
            slot.end_flush = EndFlush::Sent;
            slot.outstanding += 1;
            s.outstanding += 1;
            dev.submit(
                HostIo::flush(((k as u64) << STREAM_SHIFT) | s.issued_ios),
                now,
            );
            s.issued_ios += 1;
            return;
        }
        let Phase::Running(meter) = std::mem::replace(&mut slot.phase, Phase::Waiting) else {
            unreachable!()
        };
        let result = slot_result(
            &slot.job,
            *meter,
            slot.steady.take(),
            slot.error.take(),
            dev,
        );
        slot.phase = Phase::Done(Box::new(result));
        self.jobs_done += 1;
        self.end_paced(i);
        let now = dev.now();
        for j in 0..self.jobs.len() {
            if self.jobs[j].after == Some(i) {
                self.schedule(j, now);
            }
        }
    }
}

impl Source for JobSource {
    fn next_submission(&mut self, now: SimTime) -> Option<SimTime> {
        if !self.refill.is_empty() {
            return Some(now);
        }
        let start = self.next_start().map(|(_, at)| at);
        match self.pacing.as_mut().and_then(|p| p.next_wake()) {
            Some(wake) => Some(start.map_or(wake, |s| s.min(wake))),
            None => start,
        }
    }

    #[inline(always)]
    fn submit(&mut self, dev: &mut Device, at: SimTime) {
        match self.refill.pop_front() {
            Some(k) if self.is_paced(k) => {
                self.next_pass(k);
                self.pace(dev, k, at);
                let i = self.streams[k].job;
                self.end_if_idle(dev, i, at);
            }
            Some(k) => {
                // A stream that starts its next pass (fio's loops) fills its queue again.
                let n = if self.next_pass(k) {
                    self.jobs[self.streams[k].job].job.job.iodepth
                } else {
                    1
                };
                if (0..n).take_while(|_| self.issue(dev, k, at)).count() == 0 {
                    let i = self.streams[k].job;
                    self.end_if_idle(dev, i, at);
                }
            }
            None => {
                self.start_due(dev, at);
                if self.pacing.is_some() {
                    self.wake_due(dev, at);
                }
            }
        }
    }

    fn outstanding(&self) -> u64 {
        self.streams.iter().map(|s| s.outstanding).sum()
    }

    fn completed(&mut self, c: &Completion, dev: &Device) -> bool {
        let k = (c.io.tag >> STREAM_SHIFT) as usize;
        let s = &mut self.streams[k];
        s.outstanding -= 1;
        let slot = &mut self.jobs[s.job];
        slot.outstanding -= 1;
        if slot.end_flush == EndFlush::Sent {
            // The job's closing FLUSH (end_fsync): not one of its measured IOs.
            debug_assert_eq!(c.io.kind, crate::device::IoKind::Flush);
            slot.end_flush = EndFlush::Done;
            self.refill.push_back(k);
            return false;
        }
        slot.completed_ios += 1;
        if let Phase::Running(meter) = &mut slot.phase {
            if meter.measuring() {
                meter.rec.record(c, dev.now());
                if let Some(log) = self.io_log.as_mut() {
                    log.stream.push(k as u32);
                    log.time_ns
                        .push(c.completed.ns().saturating_sub(meter.rec.start.ns()));
                    log.latency_ns.push(c.latency_ns());
                    log.op.push(match c.io.kind {
                        crate::device::IoKind::Read => 0,
                        crate::device::IoKind::Write | crate::device::IoKind::ZoneAppend => 1,
                        crate::device::IoKind::Trim => 2,
                        crate::device::IoKind::Flush => 3,
                    });
                    log.length_bytes.push(c.io.length_bytes);
                    log.offset_bytes.push(c.io.offset_bytes);
                }
            }
        }
        if self.pacing.is_some() {
            self.paced_completion(k, c, dev.now());
        }
        self.refill.push_back(k);
        self.completed_ios += 1;
        false // recorded by the job's own meter, not again by the session's
    }

    /// With no stream to refill and no job waiting to start, nothing changes for the jobs
    /// until a command completes or a running job's meter closes an interval.
    #[inline]
    fn quiet_until(&mut self) -> u64 {
        if !self.refill.is_empty() || !self.starts.is_empty() {
            return 0;
        }
        let wake = self
            .pacing
            .as_mut()
            .and_then(|p| p.next_wake())
            .map_or(u64::MAX, SimTime::ns);
        self.jobs
            .iter()
            .map(|slot| match &slot.phase {
                Phase::Running(meter) => meter.quiet_until(),
                _ => u64::MAX,
            })
            .fold(wake, u64::min)
    }

    #[inline]
    fn before_event(&mut self, dev: &Device, t: SimTime) {
        let now = dev.now();
        for slot in &mut self.jobs {
            if let Phase::Running(meter) = &mut slot.phase {
                if meter.before_event(dev, t) {
                    slot.check_steady_state(now);
                }
            }
        }
    }

    /// After a step: done once every job is over (the drive's own work, such as programs still
    /// queued, goes on under the next run).
    #[inline]
    fn control(&mut self, point: Point, _dev: &mut Device) -> Control {
        match point {
            Point::AfterStep => {
                debug_assert_eq!(
                    self.jobs_done == self.jobs.len(),
                    self.jobs.iter().all(|s| matches!(s.phase, Phase::Done(_)))
                );
                if self.jobs_done == self.jobs.len() {
                    Control::Stop
                } else {
                    Control::Continue
                }
            }
            Point::AtRest => Control::Stop,
            Point::BeforeEvent | Point::Idle => Control::Continue,
        }
    }
}

/// Run a whole job to its end.
pub fn run_job(
    dev: &mut Device,
    job: &CompiledJob,
    progress: &mut dyn FnMut(&JobRun),
) -> JobResult {
    let mut run = JobRun::new(dev, job, 0);
    let step = SimTime(NS_PER_S);
    let mut until = dev.now();
    loop {
        until = SimTime(until.ns() + step.ns());
        if run.advance(dev, until) {
            break;
        }
        progress(&run);
    }
    run.finish(dev).pop().expect("one job, one result")
}

#[path = "run_paced.rs"]
mod paced;
#[path = "run_steady.rs"]
mod steady;

#[cfg(test)]
#[path = "run_tests.rs"]
mod tests;
