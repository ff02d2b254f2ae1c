//! Trace replay: requests from a trace mapped onto the drive ([`Mapper`]: device filter,
//! bounds, wrapping, the queue depth the recording saw), then submitted open loop at their
//! recorded times, with idle gaps removed, or closed loop at a queue depth; and the
//! storage-bench metrics (data rate over busy time, busy time, service time mean and
//! deviation) for reads, writes and trims apart.

use crate::device::{Completion, Device, HostIo, IoKind};
use crate::record::Sample;
use crate::session::{Control, Point, Session, Source};
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
    /// A write's FDP placement identifier (a trace's `pid` column), or
    /// [`crate::ftl::NO_PLACEMENT`].
    pub placement: u16,
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
    /// A write's placement identifier, or [`crate::ftl::NO_PLACEMENT`].
    pub placement: u16,
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
            placement: r.placement,
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
    /// FDP's logs at the replay's end (a drive with `[placement]`; a trace's `pid` column).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub placement: Option<crate::ftl::PlacementReport>,
    /// A zoned namespace's zones at the replay's end (commands refused among its counters:
    /// a trace not written for zones has most of its writes refused).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub zones: Option<crate::workload::ZonesSummary>,
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
            placement: dev.ftl.placement_report(),
            zones: crate::workload::ZonesSummary::of(dev),
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
                placement: r.placement,
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

    /// At rest, the trace is over: flush the write buffer (as the end of a trace run does), so
    /// the write amplification counts every write. Done once the flush completed.
    fn control(&mut self, point: Point, dev: &mut Device) -> Control {
        if point != Point::AtRest {
            return Control::Continue;
        }
        match self.flush {
            Flush::NotYet => {
                let at = dev.now();
                dev.submit(HostIo::flush(FLUSH_TAG), at);
                self.flush = Flush::Running { since: at };
                self.outstanding += 1;
                Control::Continue
            }
            Flush::Running { .. } => unreachable!("flush outstanding with no event pending"),
            Flush::Done { .. } => Control::Stop,
        }
    }
}

#[cfg(test)]
mod tests;
