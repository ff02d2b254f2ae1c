//! What a trace holds, before it is replayed: counts and bytes by operation, the size mix,
//! sequentiality, inter-arrival times, the queue depth the recording saw, time span, LBA span
//! and footprint: the figures review methodologies quote for their traces (methodology.md,
//! "Application trace replay": reads, writes, GB read and written, size mix, % sequential,
//! mean QD and % of IOs at QD 1), so a trace can be checked and compared with a look-alike.

use crate::{OpKind, TraceRecord};
use serde::Serialize;
use std::collections::{BTreeMap, BinaryHeap};

/// A log-linear histogram (16 sub-buckets per power of two: quantiles within 1/16).
#[derive(Clone, Debug, Default)]
struct LogHistogram {
    counts: Vec<u64>,
    total: u64,
    sum: u128,
}

impl LogHistogram {
    fn bucket(v: u64) -> usize {
        if v < 16 {
            return v as usize;
        }
        let exp = 63 - v.leading_zeros() as usize; // >= 4
        let sub = ((v >> (exp - 4)) & 15) as usize;
        (exp - 3) * 16 + sub
    }
    fn low(b: usize) -> u64 {
        if b < 16 {
            return b as u64;
        }
        let (exp, sub) = (b / 16 + 3, (b % 16) as u64);
        (16 + sub) << (exp - 4)
    }
    fn record(&mut self, v: u64) {
        let b = Self::bucket(v);
        if self.counts.len() <= b {
            self.counts.resize(b + 1, 0);
        }
        self.counts[b] += 1;
        self.total += 1;
        self.sum += v as u128;
    }
    fn quantile(&self, q: f64) -> u64 {
        let target = ((q * self.total as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (b, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= target {
                // The bucket's middle (its width is 1/16 of its start).
                return if b < 16 {
                    b as u64
                } else {
                    Self::low(b) + (Self::low(b + 1) - Self::low(b)) / 2
                };
            }
        }
        0
    }
    fn mean(&self) -> f64 {
        if self.total == 0 {
            0.0
        } else {
            self.sum as f64 / self.total as f64
        }
    }
}

/// Byte ranges touched, merged when the list grows (memory bounded by the distinct extents).
#[derive(Clone, Debug, Default)]
struct Footprint {
    ranges: Vec<(u64, u64)>,
    merged_len: usize,
}

impl Footprint {
    fn add(&mut self, start: u64, end: u64) {
        self.ranges.push((start, end));
        if self.ranges.len() >= (2 * self.merged_len).max(1 << 20) {
            self.merge();
        }
    }
    fn merge(&mut self) {
        self.ranges.sort_unstable();
        let mut out: Vec<(u64, u64)> = Vec::with_capacity(self.ranges.len());
        for &(s, e) in &self.ranges {
            match out.last_mut() {
                Some(last) if s <= last.1 => last.1 = last.1.max(e),
                _ => out.push((s, e)),
            }
        }
        self.ranges = out;
        self.merged_len = self.ranges.len();
    }
    fn bytes(&mut self) -> u64 {
        self.merge();
        self.ranges.iter().map(|(s, e)| e - s).sum()
    }
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct OpTotals {
    pub requests: u64,
    pub bytes: u64,
}

#[derive(Clone, Debug, Serialize)]
pub struct SizeShare {
    pub size_bytes: u64,
    pub requests: u64,
    pub pct: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct TraceStats {
    pub requests: u64,
    pub read: OpTotals,
    pub write: OpTotals,
    pub trim: OpTotals,
    pub read_pct: f64,
    /// Reads and writes of the most common sizes, most common first (at most 10).
    pub sizes: Vec<SizeShare>,
    /// Requests per power-of-two size class: (upper bound in bytes, requests).
    pub size_classes: Vec<(u64, u64)>,
    pub size_bytes_mean: f64,
    /// Requests that start where the device's previous request ended, %.
    pub sequential_pct: f64,
    /// Requests that start where the device's previous request of the same kind (read, write,
    /// trim) ended, % (how the look-alikes of ssdlab.synth place their sequential share).
    pub sequential_same_op_pct: f64,
    pub first_arrival_s: f64,
    pub span_s: f64,
    pub interarrival_us_mean: f64,
    pub interarrival_us_p50: f64,
    pub interarrival_us_p99: f64,
    /// Requests whose arrival is earlier than the latest arrival before them in the file
    /// (the replay counts the same).
    pub out_of_order: u64,
    /// Requests with a recorded service time (MSR, blkparse, blktrace, MS Production).
    pub with_service_time: u64,
    /// Queue depth the recording saw at each arrival (itself included), from service times.
    pub recorded_qd_mean: Option<f64>,
    pub recorded_qd_max: Option<u64>,
    pub recorded_qd1_pct: Option<f64>,
    pub service_us_mean: Option<f64>,
    pub lba_first_byte: u64,
    pub lba_end_byte: u64,
    /// Distinct bytes touched by any request, and by writes.
    pub footprint_bytes: u64,
    pub write_footprint_bytes: u64,
    pub devices: Vec<u32>,
}

/// Accumulates [`TraceStats`] over a stream of records.
#[derive(Default)]
pub struct StatsBuilder {
    requests: u64,
    ops: [OpTotals; 3],
    sizes: BTreeMap<u64, u64>,
    classes: Vec<u64>,
    size_sum: u128,
    sequential: u64,
    sequential_same_op: u64,
    last_end: BTreeMap<u32, u64>,
    last_end_by_op: BTreeMap<(u32, usize), u64>,
    first: Option<u64>,
    last: Option<u64>,
    max_arrival: u64,
    interarrival: LogHistogram,
    out_of_order: u64,
    completions: BinaryHeap<std::cmp::Reverse<u64>>,
    depth: LogHistogram,
    depth_max: u64,
    depth_one: u64,
    service: LogHistogram,
    lba_first: Option<u64>,
    /// Requests whose end lies beyond 2^64 bytes (counted as ending there).
    pub ends_beyond_2_64: u64,
    lba_end: u64,
    all: Footprint,
    written: Footprint,
}

impl StatsBuilder {
    pub fn add(&mut self, r: &TraceRecord) {
        self.requests += 1;
        let op = match r.kind {
            OpKind::Read => 0,
            OpKind::Write => 1,
            OpKind::Trim => 2,
        };
        self.ops[op].requests += 1;
        self.ops[op].bytes += r.length_bytes;
        let end = r.offset_bytes.saturating_add(r.length_bytes);
        self.ends_beyond_2_64 += r.offset_bytes.checked_add(r.length_bytes).is_none() as u64;
        if r.kind != OpKind::Trim {
            *self.sizes.entry(r.length_bytes).or_default() += 1;
            let class = (64 - (r.length_bytes.max(1) - 1).leading_zeros()) as usize;
            if self.classes.len() <= class {
                self.classes.resize(class + 1, 0);
            }
            self.classes[class] += 1;
            self.size_sum += r.length_bytes as u128;
            self.all.add(r.offset_bytes, end);
            if r.kind == OpKind::Write {
                self.written.add(r.offset_bytes, end);
            }
        }
        if self.last_end.insert(r.device, end) == Some(r.offset_bytes) {
            self.sequential += 1;
        }
        if self.last_end_by_op.insert((r.device, op), end) == Some(r.offset_bytes) {
            self.sequential_same_op += 1;
        }
        // Out of order: earlier than the latest arrival before it in the file (the replay's
        // definition too, ssdlab_core::replay; issue 25, item 20). Gaps are measured from that
        // latest arrival.
        if self.last.is_some() {
            if r.arrival_ns < self.max_arrival {
                self.out_of_order += 1;
            } else {
                self.interarrival.record(r.arrival_ns - self.max_arrival);
            }
        }
        self.first.get_or_insert(r.arrival_ns);
        self.first = self.first.map(|f| f.min(r.arrival_ns));
        self.max_arrival = self.max_arrival.max(r.arrival_ns);
        self.last = Some(r.arrival_ns);
        self.lba_first = Some(
            self.lba_first
                .map_or(r.offset_bytes, |f| f.min(r.offset_bytes)),
        );
        self.lba_end = self.lba_end.max(end);
        if let Some(s) = r.service_ns {
            while self.completions.peek().is_some_and(|c| c.0 <= r.arrival_ns) {
                self.completions.pop();
            }
            self.completions
                .push(std::cmp::Reverse(r.arrival_ns.saturating_add(s)));
            let d = self.completions.len() as u64;
            self.depth.record(d);
            self.depth_max = self.depth_max.max(d);
            self.depth_one += (d == 1) as u64;
            self.service.record(s);
        }
    }

    pub fn finish(mut self) -> TraceStats {
        let n = self.requests.max(1) as f64;
        let data = (self.ops[0].requests + self.ops[1].requests).max(1) as f64;
        let mut sizes: Vec<(u64, u64)> = self.sizes.into_iter().collect();
        sizes.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        let with_service = self.service.total;
        let us = |ns: f64| ns / 1e3;
        let [read, write, trim] = self.ops;
        let mut devices: Vec<u32> = self.last_end.keys().copied().collect();
        devices.sort_unstable();
        TraceStats {
            requests: self.requests,
            read_pct: 100.0 * read.requests as f64 / data,
            read,
            write,
            trim,
            sizes: sizes
                .iter()
                .take(10)
                .map(|&(size_bytes, c)| SizeShare {
                    size_bytes,
                    requests: c,
                    pct: 100.0 * c as f64 / data,
                })
                .collect(),
            size_classes: self
                .classes
                .iter()
                .enumerate()
                .filter(|(_, &c)| c > 0)
                .map(|(k, &c)| (1u64 << k, c))
                .collect(),
            size_bytes_mean: self.size_sum as f64 / data,
            sequential_pct: 100.0 * self.sequential as f64 / n,
            sequential_same_op_pct: 100.0 * self.sequential_same_op as f64 / n,
            first_arrival_s: self.first.unwrap_or(0) as f64 / 1e9,
            span_s: (self.max_arrival - self.first.unwrap_or(0)) as f64 / 1e9,
            interarrival_us_mean: us(self.interarrival.mean()),
            interarrival_us_p50: us(self.interarrival.quantile(0.5) as f64),
            interarrival_us_p99: us(self.interarrival.quantile(0.99) as f64),
            out_of_order: self.out_of_order,
            with_service_time: with_service,
            recorded_qd_mean: (with_service > 0).then(|| self.depth.mean()),
            recorded_qd_max: (with_service > 0).then_some(self.depth_max),
            recorded_qd1_pct: (with_service > 0)
                .then(|| 100.0 * self.depth_one as f64 / with_service as f64),
            service_us_mean: (with_service > 0).then(|| us(self.service.mean())),
            lba_first_byte: self.lba_first.unwrap_or(0),
            lba_end_byte: self.lba_end,
            footprint_bytes: self.all.bytes(),
            write_footprint_bytes: self.written.bytes(),
            devices,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(t: u64, kind: OpKind, offset: u64, len: u64, svc: Option<u64>) -> TraceRecord {
        TraceRecord {
            arrival_ns: t,
            device: 0,
            kind,
            offset_bytes: offset,
            length_bytes: len,
            service_ns: svc,
            placement: crate::NO_PLACEMENT,
        }
    }

    #[test]
    fn counts_mix_sequentiality_depth_and_footprint() {
        let mut b = StatsBuilder::default();
        // Two sequential 4 KiB reads, an overlapping 8 KiB write, a trim; the first two overlap
        // in time (depth 2).
        b.add(&rec(0, OpKind::Read, 0, 4096, Some(1000)));
        b.add(&rec(500, OpKind::Read, 4096, 4096, Some(1000)));
        b.add(&rec(2000, OpKind::Write, 4096, 8192, Some(100)));
        b.add(&rec(3000, OpKind::Trim, 1 << 20, 1 << 20, None));
        let s = b.finish();
        assert_eq!(
            (s.requests, s.read.requests, s.write.bytes, s.trim.bytes),
            (4, 2, 8192, 1 << 20)
        );
        assert_eq!(s.sizes[0].size_bytes, 4096);
        assert!((s.sizes[0].pct - 200.0 / 3.0).abs() < 1e-9);
        assert_eq!(s.sequential_pct, 25.0); // only the second read follows the first
        assert_eq!((s.recorded_qd_max, s.with_service_time), (Some(2), 3));
        assert_eq!(s.footprint_bytes, 12288); // 0..12288 (trims not counted)
        assert_eq!(s.write_footprint_bytes, 8192);
        assert_eq!((s.lba_first_byte, s.lba_end_byte), (0, 2 << 20));
        assert!((s.span_s - 3e-6).abs() < 1e-12);
    }

    #[test]
    fn histogram_quantiles_within_a_sixteenth() {
        let mut h = LogHistogram::default();
        for v in 1..=10_000u64 {
            h.record(v * 37);
        }
        let q = h.quantile(0.5) as f64;
        assert!((q - 185_000.0).abs() / 185_000.0 < 1.0 / 16.0, "{q}");
    }
}
