//! What the host sees, recorded one way for every driver of a device (fio-like jobs, trace
//! replay, the NBD server): per-operation statistics, the per-interval series with the
//! device's own counters (NAND page programs, GC copies, free blocks) sampled as each interval
//! closes, and counter deltas over the whole run.

use crate::device::{Completion, Device, IoKind};
use crate::stats::{IntervalSeries, OpStats};
use crate::time::SimTime;

/// Device counters sampled at the start of a run and at interval boundaries.
#[derive(Clone, Copy, Debug, Default)]
pub struct Sample {
    /// NAND pages programmed (started) so far: the timing view.
    pub page_programs: u64,
    /// NAND pages the FTL has decided to program so far: host, GC, parity, padding. Timing
    /// independent, so the write amplification of a run does not depend on what is still
    /// queued on the dies when it ends.
    pub pages_committed: u64,
    /// Of those, the pages that journalled TRIMs' map changes.
    pub trim_pages: u64,
    pub gc_units: u64,
    pub host_units_written: u64,
    pub erases: u64,
    pub faults: crate::faults::FaultCounters,
    /// Energy of the NAND and processor work started so far, joules (`crate::power`).
    pub dynamic_energy_j: f64,
}

impl Sample {
    pub fn of(dev: &Device) -> Sample {
        Sample {
            page_programs: dev.nand().counters.page_programs,
            pages_committed: dev.pages_committed(),
            trim_pages: dev.trim_pages_committed(),
            gc_units: dev.ftl.counters.gc_units_copied
                + dev.ftl.counters.wear_leveling_units_copied,
            host_units_written: dev.ftl.counters.host_units_written,
            erases: dev.ftl.counters.blocks_erased,
            faults: dev.fault_counters(),
            dynamic_energy_j: dev.dynamic_energy_j(),
        }
    }
}

/// Completions and device counters of one run.
pub struct Recorder {
    /// Measurement origin: interval 0 starts here (fixed at construction).
    pub start: SimTime,
    pub read: OpStats,
    pub write: OpStats,
    /// Trims (and flushes, when a driver records them).
    pub trim: OpStats,
    pub series: IntervalSeries,
    pub at_start: Sample,
    at_interval: Sample,
    /// Intervals whose device samples are written.
    intervals_closed: usize,
    /// Where the first interval not yet closed ends (ns): no event before it closes one.
    next_close_ns: u64,
    /// The drive's static energy at the end of the last interval closed (at the start before
    /// any), joules.
    static_j_at_close: f64,
    pub last_completion: SimTime,
}

impl Recorder {
    pub fn new(dev: &Device, start: SimTime, interval_ns: u64) -> Recorder {
        let s = Sample::of(dev);
        Recorder {
            start,
            read: OpStats::default(),
            write: OpStats::default(),
            trim: OpStats::default(),
            series: IntervalSeries::new(interval_ns.max(1)),
            at_start: s,
            at_interval: s,
            intervals_closed: 0,
            next_close_ns: start.ns().saturating_add(interval_ns.max(1)),
            static_j_at_close: dev.static_energy_j(start.max(dev.now())),
            last_completion: start,
        }
    }

    /// Measurement starts now (the end of a ramp): counters are taken again.
    pub fn restart_counters(&mut self, dev: &Device) {
        self.at_start = Sample::of(dev);
        self.at_interval = self.at_start;
        // The static energy at the start was foreseen when the ramp began; now (before the
        // first event at or past the start, after the link's last change) it is known.
        self.static_j_at_close = dev.static_energy_j(self.start.max(dev.now()));
    }

    pub fn intervals_closed(&self) -> usize {
        self.intervals_closed
    }

    /// The device is about to process an event at `t`: close the intervals before it. True
    /// when at least one closed. Called before every event: the test is inlined, the work
    /// (once an interval) is not.
    #[inline(always)]
    pub fn before_event(&mut self, dev: &Device, t: SimTime) -> bool {
        t.ns() >= self.next_close_ns && self.close_before(dev, t)
    }

    /// Where the first interval not yet closed ends (ns): `before_event` does nothing before.
    #[inline]
    pub fn next_close_ns(&self) -> u64 {
        self.next_close_ns
    }

    #[inline(never)]
    fn close_before(&mut self, dev: &Device, t: SimTime) -> bool {
        let index = (t.ns().saturating_sub(self.start.ns()) / self.series.interval_ns) as usize;
        if index > self.intervals_closed {
            self.close_intervals(dev, index);
            return true;
        }
        false
    }

    /// Close the interval series up to interval `upto` (exclusive) with device samples. The
    /// deltas go to the first interval closed now: what happened since the last close
    /// happened in it, since intervals close before every event and every submission past
    /// their end (the intervals after it, in which nothing happened, keep zeros; the free
    /// blocks they end with are the first's).
    pub fn close_intervals(&mut self, dev: &Device, upto: usize) {
        self.close_intervals_until(dev, upto, SimTime(u64::MAX));
    }

    /// `close_intervals`, the static energy counted no further than `end` (the run's end, for
    /// its last interval).
    fn close_intervals_until(&mut self, dev: &Device, upto: usize, end: SimTime) {
        if upto <= self.intervals_closed {
            return;
        }
        let s = Sample::of(dev);
        let first = self.intervals_closed;
        self.series.ensure(upto - 1);
        self.series.nand_page_programs[first] = s.page_programs - self.at_interval.page_programs;
        self.series.gc_units_copied[first] = s.gc_units - self.at_interval.gc_units;
        let free = dev.ftl.free_blocks_total();
        self.series.free_blocks[first..upto].fill(free);
        if dev.has_power_model() {
            // Static energy by each interval's own span (the link's state is known at any
            // instant); the work started since the last close in the first interval closed.
            // Every edge closed now is after the last event, so after the link's last change.
            let interval = self.series.interval_ns;
            for i in self.intervals_closed..upto {
                let edge = SimTime(self.start.ns() + (i as u64 + 1) * interval);
                let static_j = dev.static_energy_j(edge.min(end));
                let mut j = static_j - self.static_j_at_close;
                self.static_j_at_close = static_j;
                if i == first {
                    j += s.dynamic_energy_j - self.at_interval.dynamic_energy_j;
                }
                self.series.energy_uj[i] = (j * 1e6).round() as u64;
                self.series.link_state[i] = dev.link_state(edge) as u64;
                if let (Some(t), Some((on, _, _))) = (dev.temperature_c(), dev.throttling()) {
                    self.series.temperature_mc[i] = (t * 1e3).round().max(0.0) as u64;
                    self.series.throttled[i] = on as u64;
                }
            }
        }
        self.at_interval = s;
        self.intervals_closed = upto;
        self.next_close_ns = (upto as u64 + 1)
            .saturating_mul(self.series.interval_ns)
            .saturating_add(self.start.ns());
    }

    /// One completed host command, at `now`.
    #[inline]
    pub fn record(&mut self, c: &Completion, now: SimTime) {
        // Completions come at the current event, after `before_event` closed the intervals
        // before it: they fall in the first interval not closed (found without a division).
        let t = c.completed.ns();
        let i = if t < self.next_close_ns
            && t >= self.next_close_ns.wrapping_sub(self.series.interval_ns)
        {
            self.intervals_closed
        } else {
            interval_of(t, self.start, self.series.interval_ns)
        };
        debug_assert_eq!(i, interval_of(t, self.start, self.series.interval_ns));
        count_in_series(c, &mut self.series, i);
        let stats = match c.io.kind {
            IoKind::Read => &mut self.read,
            IoKind::Write | IoKind::ZoneAppend => &mut self.write,
            IoKind::Trim | IoKind::Flush => &mut self.trim,
        };
        stats.record(c.io.length_bytes, c.latency_ns());
        self.last_completion = now;
    }

    /// Nanoseconds from the start to the last completion.
    pub fn elapsed_ns(&self) -> u64 {
        self.last_completion.ns().saturating_sub(self.start.ns())
    }

    /// Close every interval up to the last completion; the series covers the run, and the
    /// last interval's static energy ends with it (a run of 0.3 ms is not charged a second's
    /// idle power).
    pub fn close_all(&mut self, dev: &Device) {
        let n = self.elapsed_ns().div_ceil(self.series.interval_ns).max(1) as usize;
        // No earlier than the link's last change (a source's own final flush completes later).
        let end = self.last_completion.max(dev.link_changed_at());
        self.close_intervals_until(dev, n, end);
    }
}

/// The interval (counted from `start`) that time `t` (ns) falls in.
#[inline]
fn interval_of(t: u64, start: SimTime, interval_ns: u64) -> usize {
    ((t - start.ns()) / interval_ns) as usize
}

/// Count `c` in interval `i` of `series` (the one its completion falls in).
#[inline]
fn count_in_series(c: &Completion, series: &mut IntervalSeries, i: usize) {
    series.ensure(i);
    let (bytes, latency) = (c.io.length_bytes, c.latency_ns());
    match c.io.kind {
        IoKind::Read => {
            series.read_ios[i] += 1;
            series.read_bytes[i] += bytes;
            series.read_latency_ns_sum[i] += latency;
        }
        IoKind::Write | IoKind::ZoneAppend => {
            series.write_ios[i] += 1;
            series.write_bytes[i] += bytes;
            series.write_latency_ns_sum[i] += latency;
        }
        IoKind::Trim | IoKind::Flush => series.trim_ios[i] += 1,
    }
}
