//! Trace replay: requests from a trace mapped onto the drive ([`Mapper`]: device filter,
//! bounds, wrapping, the queue depth the recording saw), then submitted open loop at their
//! recorded times, with idle gaps removed, or closed loop at a queue depth; and the
//! storage-bench metrics (data rate over busy time, busy time, service time mean and
//! deviation) for reads, writes and trims apart.

use crate::device::{Completion, Device, HostIo, IoKind};
use crate::record::Sample;
use crate::session::{Session, Source};
use crate::stats::{IntervalSeries, OpStats, OpSummary};
use crate::time::{SimTime, NS_PER_S};
use serde::Serialize;
use std::collections::{BTreeMap, BinaryHeap};

/// A request as a trace recorded it, before it is mapped onto the drive.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraceRequest {
    pub arrival_ns: u64,
    pub device: u32,
    pub kind: IoKind,
    pub offset_bytes: u64,
    pub length_bytes: u64,
    /// Service time the recording measured, if the format has one.
    pub service_ns: Option<u64>,
}

/// One request to replay, already mapped onto the drive.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReplayRequest {
    /// Recorded arrival, nanoseconds (any origin; only differences matter).
    pub arrival_ns: u64,
    pub kind: IoKind,
    pub offset_bytes: u64,
    pub length_bytes: u64,
    /// Requests outstanding in the recorded run when this one arrived, itself included (from
    /// recorded service times; 0 if unknown). Used by `ReplayMode::RecordedDepth`.
    pub recorded_depth: u32,
}

/// How trace requests are put on the drive.
#[derive(Clone, Copy, Debug, Default)]
pub struct MapOptions {
    pub user_bytes: u64,
    /// Replay only this device (default: all, merged).
    pub device: Option<u32>,
    /// Fold requests past the end of the drive onto it (else they are an error).
    pub wrap: bool,
}

/// What mapping did, for the user.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct MapCounts {
    pub mapped: u64,
    pub other_devices_skipped: u64,
    pub wrapped: u64,
    /// Requests with no recorded service time (their recorded depth is unknown).
    pub without_service_time: u64,
    /// Requests that arrive earlier than the latest arrival above them in the trace (`trace
    /// stats` counts the same).
    pub out_of_order: u64,
}

/// Trace requests to replay requests: device filter, bounds (checked arithmetic: an offset
/// near 2^64 is an error, not an overflow), wrapping, and the recorded queue depth.
pub struct Mapper {
    options: MapOptions,
    /// Recorded completion times of earlier requests still outstanding at the last arrival.
    recorded_completions: BinaryHeap<std::cmp::Reverse<u64>>,
    last_arrival: Option<u64>,
    pub counts: MapCounts,
    /// Devices the trace names (the first 64), for a filter that matched nothing.
    pub devices_seen: std::collections::BTreeSet<u32>,
}

impl Mapper {
    pub fn new(options: MapOptions) -> Mapper {
        Mapper {
            options,
            recorded_completions: BinaryHeap::new(),
            last_arrival: None,
            counts: MapCounts::default(),
            devices_seen: Default::default(),
        }
    }

    /// The request on the drive, `None` if it is for another device, or why it cannot be.
    pub fn map(&mut self, r: TraceRequest) -> Result<Option<ReplayRequest>, String> {
        if self.devices_seen.len() < 64 {
            self.devices_seen.insert(r.device);
        }
        if self.options.device.is_some_and(|d| d != r.device) {
            self.counts.other_devices_skipped += 1;
            return Ok(None);
        }
        let user = self.options.user_bytes;
        let (mut offset, length) = (r.offset_bytes, r.length_bytes);
        if length > user {
            return Err(format!(
                "a {length}-byte request is larger than the drive ({user} bytes)"
            ));
        }
        if offset.checked_add(length).is_none_or(|end| end > user) {
            if !self.options.wrap {
                return Err(format!(
                    "request at byte {offset} + {length} is beyond the drive's {user} bytes; use --wrap to fold the trace onto the drive"
                ));
            }
            offset = (offset % (user - length + 1)) / 512 * 512;
            self.counts.wrapped += 1;
        }
        if self.last_arrival.is_some_and(|t| r.arrival_ns < t) {
            self.counts.out_of_order += 1;
        }
        self.last_arrival = Some(
            self.last_arrival
                .map_or(r.arrival_ns, |t| t.max(r.arrival_ns)),
        );
        // Depth of the recorded run at this arrival: earlier requests not yet completed.
        while self
            .recorded_completions
            .peek()
            .is_some_and(|c| c.0 <= r.arrival_ns)
        {
            self.recorded_completions.pop();
        }
        let recorded_depth = match r.service_ns {
            Some(s) => {
                self.recorded_completions
                    .push(std::cmp::Reverse(r.arrival_ns.saturating_add(s)));
                self.recorded_completions.len() as u32
            }
            None => {
                self.counts.without_service_time += 1;
                0
            }
        };
        self.counts.mapped += 1;
        Ok(Some(ReplayRequest {
            arrival_ns: r.arrival_ns,
            kind: r.kind,
            offset_bytes: offset,
            length_bytes: length,
            recorded_depth,
        }))
    }
}

/// How arrivals are turned into submissions.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ReplayMode {
    /// Open loop at the recorded arrival times, gaps multiplied by `scale` (0.5 = twice as fast).
    Timed { scale: f64 },
    /// Open loop with idle gaps removed: whenever nothing is outstanding, the next request is
    /// sent at once; within a busy period the recorded gaps (and so the queue depth) are kept.
    /// What the reviews' storage benches do. With `max_outstanding` > 0 the host has that many
    /// requests outstanding at most (an application's IO waits on the drive): a request held
    /// back goes once one completes, and the recorded gaps after it count from then, so a
    /// drive that stalls meets a bounded queue instead of one that grows without end (issue
    /// 73 item 4). 0: unbounded.
    Afap { max_outstanding: u32 },
    /// Closed loop: keep `depth` requests outstanding.
    QueueDepth { depth: u32 },
    /// Closed loop at the queue depth the trace recorded: a request is sent once fewer than its
    /// recorded depth are outstanding (needs service times: MSR, blkparse).
    RecordedDepth,
}

/// Busy-time accounting for one class of requests.
#[derive(Clone, Copy, Debug, Default)]
struct Busy {
    outstanding: u64,
    since: SimTime,
    total_ns: u64,
}

impl Busy {
    fn start(&mut self, now: SimTime) {
        if self.outstanding == 0 {
            self.since = now;
        }
        self.outstanding += 1;
    }
    fn end(&mut self, now: SimTime) {
        self.outstanding -= 1;
        if self.outstanding == 0 {
            self.total_ns += now.ns() - self.since.ns();
        }
    }
}

/// Storage-bench metrics of one class (reads and writes, reads, writes, trims).
#[derive(Clone, Debug, Serialize)]
pub struct ClassSummary {
    #[serde(flatten)]
    pub ops: OpSummary,
    /// Time with at least one request of the class outstanding, seconds.
    pub busy_s: f64,
    /// Bytes moved / busy time, MB/s (10^6 B/s). Trims move no data: their "bytes" are the
    /// range trimmed, and they are not in "all".
    pub data_rate_mb_per_s: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct ReplaySummary {
    pub requests: u64,
    pub elapsed_s: f64,
    /// Reads and writes (the data the host moved; trims apart).
    pub all: ClassSummary,
    pub read: ClassSummary,
    pub write: ClassSummary,
    pub trim: ClassSummary,
    pub trim_requests: u64,
    /// NAND bytes the FTL programmed / host bytes written during the replay, after a final
    /// flush (as a trace run ends): the writes still in the buffer are programmed and counted.
    pub write_amplification: f64,
    /// NAND pages that journalled TRIMs' map changes: apart from write amplification (a
    /// trace's trims of mapped data would otherwise count as writes' amplification).
    #[serde(skip_serializing_if = "crate::stats::is_zero")]
    pub trim_map_pages: u64,
    /// How long the final flush took, seconds (not in `elapsed_s`).
    pub final_flush_s: f64,
    pub nand_page_programs: u64,
    pub gc_units_copied: u64,
    pub blocks_erased: u64,
    pub host_units_written: u64,
    /// Energy and power (on a drive with a power model).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub power: Option<crate::power::PowerSummary>,
}

/// One row per completed request (`--per-request`), column-oriented; taken in batches.
#[derive(Clone, Debug, Default)]
pub struct RequestLog {
    /// Recorded arrival from the trace's first request, ns: negative for a request recorded
    /// before it (timestamps out of order), as the trace has it whatever the replay did.
    pub arrival_ns: Vec<i64>,
    /// Submission and completion in the replay, ns from its start.
    pub submit_ns: Vec<u64>,
    pub complete_ns: Vec<u64>,
    pub offset_bytes: Vec<u64>,
    pub length_bytes: Vec<u64>,
    /// 0 read, 1 write, 2 trim.
    pub op: Vec<u8>,
}

impl RequestLog {
    pub fn len(&self) -> usize {
        self.op.len()
    }
    pub fn is_empty(&self) -> bool {
        self.op.is_empty()
    }
}

/// Tag of the final flush (host requests are tagged by submission order).
const FLUSH_TAG: u64 = u64::MAX;

/// A replay in progress; advance it in slices so a caller can show progress.
pub struct ReplayRun<I: Iterator<Item = ReplayRequest>> {
    source: ReplaySource<I>,
    session: Session,
}

/// The trace as a session's source: requests at their recorded times (or as the mode says),
/// then a final flush.
struct ReplaySource<I: Iterator<Item = ReplayRequest>> {
    requests: std::iter::Peekable<I>,
    mode: ReplayMode,
    /// Where the replay's measurement starts (the device's time when it began).
    start: SimTime,
    /// Arrival of the first request (the trace's origin).
    origin_ns: Option<u64>,
    /// Idle time removed so far (Afap), nanoseconds.
    removed_ns: u64,
    /// Time requests were held back by a bounded host queue so far (Afap), nanoseconds.
    held_ns: u64,
    /// Timed mode: recorded arrivals to replay times.
    clock: TimedClock,
    outstanding: u64,
    submitted: u64,
    busy_all: Busy,
    busy_read: Busy,
    busy_write: Busy,
    busy_trim: Busy,
    /// Recorded arrivals of outstanding requests, by tag (only with a request log).
    arrivals: BTreeMap<u64, i64>,
    log: Option<RequestLog>,
    flush: Flush,
}

/// Timed mode's clock: recorded arrivals to replay times (ns from the replay's start). A
/// request recorded earlier than the one before it in the file (timestamps going backwards)
/// cannot be sent in the past: the clock restarts there, the request goes when the one before
/// it was due, and the recorded gaps after it are kept (the replay runs longer by the steps
/// back). A trace whose first line is its latest (a Tencent sample) thus keeps its gaps
/// instead of arriving all at once (issue 25 item 19).
#[derive(Clone, Copy, Debug, Default)]
struct TimedClock {
    /// (recorded arrival, replay time) the clock counts from: the first request, or the last
    /// step back.
    anchor: Option<(u64, u64)>,
    /// The last request submitted: (recorded arrival, replay time it was due).
    last: (u64, u64),
}

impl TimedClock {
    fn due(&self, arrival_ns: u64, scale: f64) -> u64 {
        match self.anchor {
            None => 0,
            Some(_) if arrival_ns < self.last.0 => self.last.1,
            Some((a, at)) => at.saturating_add(((arrival_ns - a) as f64 * scale) as u64),
        }
    }

    fn submitted(&mut self, arrival_ns: u64, scale: f64) {
        let due = self.due(arrival_ns, scale);
        if self.anchor.is_none() || arrival_ns < self.last.0 {
            self.anchor = Some((arrival_ns, due));
        }
        self.last = (arrival_ns, due);
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Flush {
    NotYet,
    Running { since: SimTime },
    Done { took_ns: u64 },
}

impl<I: Iterator<Item = ReplayRequest>> ReplayRun<I> {
    pub fn new(dev: &Device, requests: I, mode: ReplayMode, interval_ns: u64) -> Self {
        let source = ReplaySource {
            requests: requests.peekable(),
            mode,
            start: dev.now(),
            origin_ns: None,
            removed_ns: 0,
            held_ns: 0,
            clock: TimedClock::default(),
            outstanding: 0,
            submitted: 0,
            busy_all: Busy::default(),
            busy_read: Busy::default(),
            busy_write: Busy::default(),
            busy_trim: Busy::default(),
            arrivals: BTreeMap::new(),
            log: None,
            flush: Flush::NotYet,
        };
        ReplayRun {
            source,
            session: Session::new(dev, dev.now(), interval_ns),
        }
    }

    /// Keep one row per completed request, taken with [`ReplayRun::take_log`].
    pub fn with_request_log(mut self) -> Self {
        self.source.log = Some(RequestLog::default());
        self
    }

    /// The rows logged since the last call.
    pub fn take_log(&mut self) -> RequestLog {
        self.source
            .log
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default()
    }

    /// Simulated time the replay has reached (idle gaps included).
    pub fn now(&self, dev: &Device) -> SimTime {
        self.session.now(dev)
    }

    /// Process until simulated time `until` or the end of the trace. True when done.
    pub fn advance(&mut self, dev: &mut Device, until: SimTime) -> bool {
        self.session.advance(dev, &mut self.source, until)
    }

    pub fn mode(&self) -> ReplayMode {
        self.source.mode
    }

    pub fn progress(&self, dev: &Device) -> (f64, u64) {
        (
            (self.now(dev).ns() - self.source.start.ns()) as f64 / NS_PER_S as f64,
            self.source.submitted,
        )
    }

    pub fn finish(self, dev: &Device) -> (ReplaySummary, IntervalSeries) {
        let (src, mut rec) = (self.source, self.session.meter.rec);
        rec.close_all(dev);
        let elapsed_s = rec.elapsed_ns() as f64 / NS_PER_S as f64;
        let class = |ops: &OpStats, busy: &Busy| {
            let busy_s = busy.total_ns as f64 / NS_PER_S as f64;
            ClassSummary {
                ops: ops.summary(elapsed_s),
                busy_s,
                data_rate_mb_per_s: if busy_s > 0.0 {
                    ops.bytes as f64 / busy_s / 1e6
                } else {
                    0.0
                },
            }
        };
        let s = Sample::of(dev);
        let at = rec.at_start;
        let host_units = s.host_units_written - at.host_units_written;
        let trim_pages = s.trim_pages - at.trim_pages;
        let pages = s.pages_committed - at.pages_committed - trim_pages;
        let summary = ReplaySummary {
            requests: src.submitted,
            elapsed_s,
            all: class(&rec.read.merged(&rec.write), &src.busy_all),
            read: class(&rec.read, &src.busy_read),
            write: class(&rec.write, &src.busy_write),
            trim: class(&rec.trim, &src.busy_trim),
            trim_requests: rec.trim.ios,
            write_amplification: dev.write_amplification(pages, host_units),
            trim_map_pages: trim_pages,
            final_flush_s: match src.flush {
                Flush::Done { took_ns } => took_ns as f64 / NS_PER_S as f64,
                _ => 0.0,
            },
            nand_page_programs: pages,
            gc_units_copied: s.gc_units - at.gc_units,
            blocks_erased: s.erases - at.erases,
            host_units_written: host_units,
            power: crate::power::PowerSummary::of(&rec.series, dev.has_power_model(), elapsed_s),
        };
        (summary, rec.series)
    }
}

impl<I: Iterator<Item = ReplayRequest>> ReplaySource<I> {
    /// Afap: when a request recorded `since_origin` after the first is due (ns), the idle
    /// time removed and the time held back by a bounded queue accounted.
    fn afap_due(&self, since_origin: u64) -> u64 {
        self.start
            .ns()
            .saturating_add(since_origin)
            .saturating_add(self.held_ns)
            .saturating_sub(self.removed_ns)
    }
}

impl<I: Iterator<Item = ReplayRequest>> Source for ReplaySource<I> {
    /// When the next request should be submitted, if there is one and it may be.
    fn next_submission(&mut self, now: SimTime) -> Option<SimTime> {
        let r = *self.requests.peek()?;
        let start = self.start;
        let origin = *self.origin_ns.get_or_insert(r.arrival_ns);
        let since_origin = r.arrival_ns.saturating_sub(origin);
        match self.mode {
            ReplayMode::QueueDepth { depth } => (self.outstanding < depth as u64).then_some(now),
            ReplayMode::RecordedDepth => {
                (self.outstanding < r.recorded_depth.max(1) as u64).then_some(now)
            }
            ReplayMode::Timed { scale } => Some(
                SimTime(
                    start
                        .ns()
                        .saturating_add(self.clock.due(r.arrival_ns, scale)),
                )
                .max(now),
            ),
            ReplayMode::Afap { max_outstanding } => {
                if max_outstanding > 0 && self.outstanding >= max_outstanding as u64 {
                    return None; // the host waits for a completion
                }
                let at = self.afap_due(since_origin);
                if self.outstanding == 0 && at > now.ns() {
                    self.removed_ns += at - now.ns();
                    return Some(now);
                }
                Some(SimTime(at).max(now))
            }
        }
    }

    fn submit(&mut self, dev: &mut Device, at: SimTime) {
        let r = self.requests.next().expect("a request announced");
        match self.mode {
            ReplayMode::Timed { scale } => self.clock.submitted(r.arrival_ns, scale),
            ReplayMode::Afap { max_outstanding } if max_outstanding > 0 => {
                // Held back by the bounded queue: what follows it is recorded after it.
                let origin = self.origin_ns.unwrap_or(r.arrival_ns);
                let due = self.afap_due(r.arrival_ns.saturating_sub(origin));
                self.held_ns += at.ns().saturating_sub(due);
            }
            _ => {}
        }
        let tag = self.submitted;
        dev.submit(
            HostIo {
                kind: r.kind,
                offset_bytes: r.offset_bytes,
                length_bytes: r.length_bytes,
                fua: false,
                tag,
            },
            at,
        );
        if self.log.is_some() {
            let origin = self.origin_ns.unwrap_or(r.arrival_ns);
            // Signed: a request recorded before the first keeps its own time (issue 25 item 19:
            // they all read 0 when this saturated).
            let since = (r.arrival_ns as i128 - origin as i128)
                .clamp(i64::MIN as i128, i64::MAX as i128) as i64;
            self.arrivals.insert(tag, since);
        }
        let t = dev.now();
        match r.kind {
            IoKind::Read => {
                self.busy_read.start(t);
                self.busy_all.start(t);
            }
            IoKind::Write => {
                self.busy_write.start(t);
                self.busy_all.start(t);
            }
            _ => self.busy_trim.start(t),
        }
        self.submitted += 1;
        self.outstanding += 1;
    }

    fn outstanding(&self) -> u64 {
        self.outstanding
    }

    /// With commands outstanding the next request's time changes only when one completes: it
    /// is due now (a queue-depth mode with room), at its arrival, or never (none left).
    fn quiet_until(&mut self) -> u64 {
        if self.outstanding == 0 {
            return 0;
        }
        self.next_submission(SimTime::ZERO)
            .map_or(u64::MAX, |at| at.ns())
    }

    fn completed(&mut self, c: &Completion, dev: &Device) -> bool {
        let now = dev.now();
        self.outstanding -= 1;
        if c.io.tag == FLUSH_TAG {
            if let Flush::Running { since } = self.flush {
                self.flush = Flush::Done {
                    took_ns: now.ns() - since.ns(),
                };
            }
            return false;
        }
        match c.io.kind {
            IoKind::Read => {
                self.busy_read.end(now);
                self.busy_all.end(now);
            }
            IoKind::Write => {
                self.busy_write.end(now);
                self.busy_all.end(now);
            }
            _ => self.busy_trim.end(now),
        }
        if let Some(log) = self.log.as_mut() {
            let start = self.start.ns();
            log.arrival_ns
                .push(self.arrivals.remove(&c.io.tag).unwrap_or(0));
            log.submit_ns.push(c.submitted.ns() - start);
            log.complete_ns.push(c.completed.ns() - start);
            log.offset_bytes.push(c.io.offset_bytes);
            log.length_bytes.push(c.io.length_bytes);
            log.op.push(match c.io.kind {
                IoKind::Read => 0,
                IoKind::Write => 1,
                _ => 2,
            });
        }
        true
    }

    /// The trace is over: flush the write buffer (as the end of a trace run does), so the
    /// write amplification counts every write. True once the flush completed.
    fn at_rest(&mut self, dev: &mut Device) -> bool {
        match self.flush {
            Flush::NotYet => {
                let at = dev.now();
                dev.submit(HostIo::flush(FLUSH_TAG), at);
                self.flush = Flush::Running { since: at };
                self.outstanding += 1;
                false
            }
            Flush::Running { .. } => unreachable!("flush outstanding with no event pending"),
            Flush::Done { .. } => true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::DriveConfig;
    use crate::session::run_to_end;

    fn dev() -> Device {
        let mut d = Device::new(
            &DriveConfig::from_toml_str(crate::EXAMPLE_DRIVE_TOML).unwrap(),
            1,
        )
        .unwrap();
        let n = d.geometry.logical_units as u32;
        d.fill_untimed(0, n);
        d
    }

    fn burst(gap_ns: u64) -> Vec<ReplayRequest> {
        // Two bursts of 8 reads, 10 s apart.
        (0..16u64)
            .map(|i| ReplayRequest {
                arrival_ns: if i < 8 {
                    i * gap_ns
                } else {
                    10 * NS_PER_S + i * gap_ns
                },
                kind: IoKind::Read,
                offset_bytes: i << 20,
                length_bytes: 4096,
                recorded_depth: 0,
            })
            .collect()
    }

    fn replay(mode: ReplayMode, reqs: Vec<ReplayRequest>) -> ReplaySummary {
        let mut d = dev();
        let mut run = ReplayRun::new(&d, reqs.into_iter(), mode, NS_PER_S);
        assert!(run.advance(&mut d, SimTime(u64::MAX)));
        run.finish(&d).0
    }

    /// Stepping through the events that complete nothing without asking the replay (until the
    /// next request is due, the next interval ends or a command completes) gives what asking
    /// at every event gives, in every mode: the same summary and series, bit for bit, with
    /// garbage collection under way.
    #[test]
    fn quiet_stretches_give_what_asking_at_every_event_gives() {
        let reqs: Vec<_> = (0..6000u64)
            .map(|i| ReplayRequest {
                arrival_ns: i * 40_000 + (i % 7) * 3_000_000 * (i % 500 == 0) as u64,
                kind: if i % 3 == 0 {
                    IoKind::Read
                } else {
                    IoKind::Write
                },
                offset_bytes: (i * 7919 % 100_000) * 4096,
                length_bytes: 4096 << (i % 3),
                recorded_depth: 1 + (i % 5) as u32,
            })
            .collect();
        for mode in [
            ReplayMode::Timed { scale: 0.5 },
            ReplayMode::Afap { max_outstanding: 0 },
            ReplayMode::QueueDepth { depth: 4 },
            ReplayMode::RecordedDepth,
        ] {
            let mut outcomes = Vec::new();
            for ask in [false, true] {
                let mut d = dev();
                let n = d.geometry.logical_units as u32;
                d.random_writes_untimed(0, n, 2 * n as u64, 9);
                let copied = d.ftl.counters.gc_units_copied;
                let mut run = ReplayRun::new(&d, reqs.clone().into_iter(), mode, NS_PER_S / 200);
                let ReplayRun { source, session } = &mut run;
                run_to_end(session, &mut d, source, NS_PER_S / 50, ask);
                assert!(d.ftl.counters.gc_units_copied > copied, "{mode:?}: GC ran");
                let (summary, series) = run.finish(&d);
                assert_eq!(summary.requests, 6000);
                outcomes.push((
                    d.now(),
                    serde_json::to_string(&summary).unwrap(),
                    serde_json::to_string(&series).unwrap(),
                ));
            }
            assert_eq!(outcomes[0], outcomes[1], "{mode:?}");
        }
    }

    /// A drive short of free blocks collects in the idle gaps of a timed replay, as events of
    /// the replay's own loop: each interval's GC column holds the copies made in it (not the
    /// next busy interval's), the collection stops while a request is in the drive, and
    /// the same requests give the same series.
    #[test]
    fn background_collection_lands_in_the_idle_intervals_where_it_runs() {
        let reqs: Vec<_> = (0..2u64)
            .map(|i| ReplayRequest {
                arrival_ns: i * 6 * NS_PER_S,
                kind: IoKind::Write,
                offset_bytes: 4096 * 7919 * (i + 1),
                length_bytes: 4096,
                recorded_depth: 0,
            })
            .collect();
        let run_it = || {
            let mut d = dev();
            let n = d.geometry.logical_units as u32;
            d.random_writes_untimed(0, n, 2 * n as u64, 9);
            let free_before = d.ftl.free_blocks_total();
            let mut run = ReplayRun::new(
                &d,
                reqs.clone().into_iter(),
                ReplayMode::Timed { scale: 1.0 },
                NS_PER_S,
            );
            assert!(run.advance(&mut d, SimTime(u64::MAX)));
            let (_, series) = run.finish(&d);
            (free_before, d.ftl.free_blocks_total(), series)
        };
        let (before, after, series) = run_it();
        let target = {
            let d = dev();
            d.config.ftl.gc_background_free_blocks_target as u64 * d.geometry.dies as u64
        };
        assert!(
            before < target && after >= target,
            "{before} -> {after}, target {target}"
        );
        // The idle timer runs out soon after the first write: collection runs from then until
        // the target is reached (2.7 s on this drive), and only then.
        let gc = &series.gc_units_copied;
        let busy = gc.iter().take_while(|&&c| c > 0).count();
        assert!((2..6).contains(&busy), "{gc:?}");
        assert!(gc[busy..].iter().all(|&c| c == 0), "{gc:?}");
        // Each interval ends with the free blocks it ended with (none is left at 0).
        assert!(
            series.free_blocks.windows(2).all(|w| w[1] >= w[0]),
            "{:?}",
            series.free_blocks
        );
        assert_eq!(*series.free_blocks.last().unwrap(), after);
        assert_eq!(
            serde_json::to_string(&series).unwrap(),
            serde_json::to_string(&run_it().2).unwrap()
        );
        // A command in the drive drops the plan; it comes back once the drive is idle again.
        let mut d = dev();
        let n = d.geometry.logical_units as u32;
        d.random_writes_untimed(0, n, 2 * n as u64, 9);
        let t = d.now() + crate::time::SimDuration::from_secs_f64(1.0);
        d.pass_time_to(t);
        let far = SimTime(u64::MAX);
        assert!(d.background_step_before(far).is_some());
        d.submit(
            HostIo {
                kind: IoKind::Read,
                offset_bytes: 0,
                length_bytes: 4096,
                fua: false,
                tag: 1,
            },
            t,
        );
        assert!(d.background_step_before(far).is_none());
        d.run_until(far);
        assert_eq!(d.outstanding(), 0);
        let (at, _) = d.background_step_before(far).expect("idle again");
        assert!(
            at >= d.now(),
            "not before the idle timer of the last completion"
        );
    }

    #[test]
    fn timed_keeps_gaps_afap_removes_idle() {
        let timed = replay(ReplayMode::Timed { scale: 1.0 }, burst(1000));
        let afap = replay(ReplayMode::Afap { max_outstanding: 0 }, burst(1000));
        assert_eq!(timed.requests, 16);
        assert!(timed.elapsed_s > 10.0, "{}", timed.elapsed_s);
        assert!(afap.elapsed_s < 0.01, "{}", afap.elapsed_s);
        // Same requests, same service: busy time is what the drive was working either way.
        assert!((timed.all.busy_s - afap.all.busy_s).abs() < 1e-4);
        let half = replay(ReplayMode::Timed { scale: 0.5 }, burst(1000));
        assert!(half.elapsed_s > 5.0 && half.elapsed_s < 5.1);
    }

    /// Afap with a bounded host queue (issue 73 item 4): requests that arrive faster than the
    /// drive serves them never have more than the bound outstanding, the recorded gaps after a
    /// held request count from when it went, and the service time stays that of a bounded
    /// queue while the open loop's grows with the backlog.
    #[test]
    fn a_bounded_afap_replay_never_has_more_than_its_bound_outstanding() {
        let reqs: Vec<_> = (0..3000u64)
            .map(|i| ReplayRequest {
                arrival_ns: i * 1_000,
                kind: IoKind::Write,
                offset_bytes: (i * 7919 % 100_000) * 4096,
                length_bytes: 4096,
                recorded_depth: 0,
            })
            .collect();
        let run = |bound: u32| {
            let mut d = dev();
            let mode = ReplayMode::Afap {
                max_outstanding: bound,
            };
            let mut run =
                ReplayRun::new(&d, reqs.clone().into_iter(), mode, NS_PER_S).with_request_log();
            assert!(run.advance(&mut d, SimTime(u64::MAX)));
            let log = run.take_log();
            (run.finish(&d).0, log)
        };
        let (open, _) = run(0);
        let (bounded, log) = run(4);
        assert_eq!(bounded.requests, 3000);
        let mut events: Vec<(u64, i32)> = log.submit_ns.iter().map(|&t| (t, 1)).collect();
        events.extend(log.complete_ns.iter().map(|&t| (t, -1)));
        events.sort(); // a completion at the same instant as a submission goes first
        let mut outstanding = 0;
        let most = events
            .iter()
            .map(|&(_, d)| {
                outstanding += d;
                outstanding
            })
            .max()
            .unwrap();
        assert_eq!(
            most, 4,
            "at most the bound outstanding, and the bound reached"
        );
        assert!(
            bounded.all.ops.latency_us_mean * 5.0 < open.all.ops.latency_us_mean,
            "bounded {} us, open loop {} us",
            bounded.all.ops.latency_us_mean,
            open.all.ops.latency_us_mean
        );
        // The same work either way; the bounded host waits, so it takes no less time.
        assert_eq!(bounded.host_units_written, open.host_units_written);
        assert!(bounded.elapsed_s >= open.elapsed_s * 0.95);
    }

    #[test]
    fn queue_depth_mode_keeps_depth() {
        let reqs: Vec<_> = (0..2000u64)
            .map(|i| ReplayRequest {
                arrival_ns: i * NS_PER_S,
                kind: IoKind::Read,
                offset_bytes: (i * 7919 % 100_000) * 4096,
                length_bytes: 4096,
                recorded_depth: 8,
            })
            .collect();
        let qd1 = replay(ReplayMode::QueueDepth { depth: 1 }, reqs.clone());
        let qd8 = replay(ReplayMode::QueueDepth { depth: 8 }, reqs.clone());
        let recorded = replay(ReplayMode::RecordedDepth, reqs);
        assert_eq!(recorded.all.ops.iops, qd8.all.ops.iops);
        assert!(
            qd8.all.ops.iops > 3.0 * qd1.all.ops.iops,
            "{} vs {}",
            qd8.all.ops.iops,
            qd1.all.ops.iops
        );
        // Busy the whole time at QD1: data rate = bytes / elapsed.
        assert!((qd1.all.busy_s - qd1.elapsed_s).abs() / qd1.elapsed_s < 0.01);
    }

    fn req(t: u64, kind: IoKind, offset: u64, len: u64) -> ReplayRequest {
        ReplayRequest {
            arrival_ns: t,
            kind,
            offset_bytes: offset,
            length_bytes: len,
            recorded_depth: 0,
        }
    }

    #[test]
    fn timed_mode_moves_through_long_idle_gaps() {
        // Two requests 1100 s apart: advanced in 1 s slices from the replay's own clock (as the
        // bindings do), the replay ends after about 1100 slices instead of never.
        let mut d = dev();
        let reqs = vec![
            req(0, IoKind::Read, 0, 4096),
            req(1_100 * NS_PER_S, IoKind::Read, 8192, 4096),
        ];
        let mut run = ReplayRun::new(
            &d,
            reqs.into_iter(),
            ReplayMode::Timed { scale: 1.0 },
            NS_PER_S,
        );
        let mut slices = 0;
        loop {
            let until = SimTime(run.now(&d).ns() + NS_PER_S);
            if run.advance(&mut d, until) {
                break;
            }
            slices += 1;
            assert!(slices < 1200, "stuck at {:?}", run.progress(&d));
        }
        let (s, series) = run.finish(&d);
        assert!(slices >= 1099, "{slices}");
        assert_eq!(s.requests, 2);
        assert!(
            s.elapsed_s > 1100.0 && s.elapsed_s < 1100.01,
            "{}",
            s.elapsed_s
        );
        assert_eq!(series.len(), 1101);
    }

    #[test]
    fn mapping_checks_bounds_without_overflow_and_counts_disorder() {
        let user = 1u64 << 30;
        let mut m = Mapper::new(MapOptions {
            user_bytes: user,
            device: None,
            wrap: false,
        });
        let near_max = TraceRequest {
            arrival_ns: 5,
            device: 0,
            kind: IoKind::Write,
            offset_bytes: u64::MAX - 100,
            length_bytes: 4096,
            service_ns: None,
        };
        let e = m.map(near_max).unwrap_err();
        assert!(
            e.contains("beyond the drive") && e.contains("--wrap"),
            "{e}"
        );
        let mut w = Mapper::new(MapOptions {
            user_bytes: user,
            device: Some(3),
            wrap: true,
        });
        let r = w
            .map(TraceRequest {
                device: 3,
                ..near_max
            })
            .unwrap()
            .unwrap();
        assert!(r.offset_bytes + r.length_bytes <= user && r.offset_bytes.is_multiple_of(512));
        assert_eq!(
            w.map(TraceRequest {
                device: 4,
                ..near_max
            })
            .unwrap(),
            None
        );
        let r = w
            .map(TraceRequest {
                device: 3,
                arrival_ns: 1,
                offset_bytes: 0,
                ..near_max
            })
            .unwrap()
            .unwrap();
        assert_eq!(r.offset_bytes, 0);
        assert_eq!(
            (
                w.counts.wrapped,
                w.counts.other_devices_skipped,
                w.counts.out_of_order,
                w.counts.mapped
            ),
            (1, 1, 1, 2)
        );
        let e = m
            .map(TraceRequest {
                length_bytes: user + 1,
                offset_bytes: 0,
                ..near_max
            })
            .unwrap_err();
        assert!(e.contains("larger than the drive"), "{e}");
    }

    #[test]
    fn trims_are_apart_and_the_final_flush_counts_buffered_writes() {
        // A short trace: 24 x 4 KiB writes (less than a program unit stays buffered) and a
        // 64 MiB trim.
        let mut reqs: Vec<_> = (0..24u64)
            .map(|i| req(i * 1000, IoKind::Write, i * 4096, 4096))
            .collect();
        reqs.push(req(30_000, IoKind::Trim, 1 << 26, 1 << 26));
        let mut d = dev();
        let mut run = ReplayRun::new(
            &d,
            reqs.into_iter(),
            ReplayMode::Afap { max_outstanding: 0 },
            NS_PER_S,
        )
        .with_request_log();
        assert!(run.advance(&mut d, SimTime(u64::MAX)));
        let log = run.take_log();
        let (s, series) = run.finish(&d);
        assert_eq!(
            (
                s.all.ops.ios,
                s.write.ops.ios,
                s.trim.ops.ios,
                s.trim_requests
            ),
            (24, 24, 1, 1)
        );
        assert_eq!(s.all.ops.bytes, 24 * 4096, "trim bytes are not data moved");
        assert!(s.trim.ops.bytes == 1 << 26 && s.trim.busy_s > 0.0);
        assert!(s.write_amplification >= 1.0, "{}", s.write_amplification);
        assert!(s.final_flush_s > 0.0);
        assert!(series.nand_page_programs.iter().sum::<u64>() > 0);
        assert!(series.free_blocks.iter().all(|&f| f > 0));
        assert_eq!(log.len(), 25);
        assert!(log.op.iter().filter(|&&o| o == 2).count() == 1);
        assert!((0..log.len()).all(|i| log.complete_ns[i] >= log.submit_ns[i]));
        assert_eq!(log.arrival_ns[..3], [0, 1000, 2000]);
    }

    /// Issue 25 item 19: a trace whose first line is its latest (a Tencent sample) keeps its
    /// recorded arrivals in the log (negative before the first) and its gaps in timed mode,
    /// instead of arriving all at once.
    #[test]
    fn timestamps_going_backwards_keep_their_arrivals_and_gaps() {
        let s = NS_PER_S;
        let reqs = vec![
            req(100 * s, IoKind::Read, 0, 4096),
            req(s, IoKind::Read, 1 << 20, 4096),
            req(2 * s, IoKind::Read, 2 << 20, 4096),
            req(3 * s, IoKind::Read, 3 << 20, 4096),
        ];
        let mut d = dev();
        let mut run = ReplayRun::new(&d, reqs.into_iter(), ReplayMode::Timed { scale: 1.0 }, s)
            .with_request_log();
        assert!(run.advance(&mut d, SimTime(u64::MAX)));
        let log = run.take_log();
        let mut rows: Vec<(i64, u64)> = (0..log.len())
            .map(|i| (log.arrival_ns[i], log.submit_ns[i]))
            .collect();
        rows.sort_unstable();
        let secs = |ns: u64| (ns as f64 / s as f64).round() as u64;
        assert_eq!(
            rows.iter().map(|r| r.0).collect::<Vec<_>>(),
            vec![-99 * s as i64, -98 * s as i64, -97 * s as i64, 0]
        );
        // The step back restarts the clock: sent at 0, then 1 s and 2 s later.
        assert_eq!(
            rows.iter().map(|r| secs(r.1)).collect::<Vec<_>>(),
            vec![0, 1, 2, 0]
        );
    }
}
