//! Block-layer request tracking, shared by blkparse's text and blktrace's binary files.
//!
//! A request is followed from its arrival (Q, queued, or D, issued to the driver) to its
//! completion (C) by (device, sector, size), as blkparse and btt pair them (blktrace(8),
//! btt's user guide: "IOs are tracked by their device and sector range"):
//! - a completion covers a sector range: every pending request inside it is complete (merged
//!   requests complete together); a request only partly covered (a split: the block layer cut
//!   it into pieces, `X` events, each completed on its own) completes with its last piece;
//! - a requeue (R) sends an issued request back to the queue, so the next D of the same
//!   (device, sector, size) is the same request, not a new arrival;
//! - events of other kinds (G, I, M, F, X, P, U, A) are not arrivals.

use crate::{BlkparseArrival, OpKind, TraceRecord};
use std::collections::{BTreeMap, VecDeque};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Action {
    Queue,
    Issue,
    Requeue,
    Complete,
    Other,
}

/// One block-layer event with a sector range.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Event {
    pub time_ns: u64,
    pub device: u32,
    pub action: Action,
    pub kind: OpKind,
    pub sector: u64,
    pub sectors: u64,
}

#[derive(Debug)]
struct Pending {
    record: TraceRecord,
    sector: u64,
    sectors: u64,
    /// Sectors not yet completed.
    remaining: u64,
    done: bool,
}

#[derive(Debug)]
pub(crate) struct Tracker {
    arrival: BlkparseArrival,
    /// Requests in arrival order: (arrival, sequence).
    pending: BTreeMap<(u64, u64), Pending>,
    /// Pending requests by (device, first sector), oldest first.
    by_start: BTreeMap<(u32, u64), VecDeque<(u64, u64)>>,
    /// Requeued (device, sector, sectors) and how many times, awaiting their second issue.
    requeued: BTreeMap<(u32, u64, u64), u32>,
    sequence: u64,
    pub requeues_dropped: u64,
    pub split_completions: u64,
    pub merged_completions: u64,
    pub unmatched_completions: u64,
}

/// Arrivals whose completion never shows up are released once this many are pending.
const PENDING_MAX: usize = 1 << 16;

impl Tracker {
    pub fn new(arrival: BlkparseArrival) -> Self {
        Tracker {
            arrival,
            pending: BTreeMap::new(),
            by_start: BTreeMap::new(),
            requeued: BTreeMap::new(),
            sequence: 0,
            requeues_dropped: 0,
            split_completions: 0,
            merged_completions: 0,
            unmatched_completions: 0,
        }
    }

    pub fn notes(&self) -> Vec<String> {
        let mut notes = Vec::new();
        if self.requeues_dropped > 0 {
            notes.push(format!(
                "{} requeued requests (R events) were issued again; each counts once",
                self.requeues_dropped
            ));
        }
        if self.split_completions > 0 {
            notes.push(format!(
                "{} completions finished part of a split request; a split request completes with its last piece",
                self.split_completions
            ));
        }
        notes
    }

    pub fn event(&mut self, e: Event, ready: &mut VecDeque<TraceRecord>) {
        let arrival = match self.arrival {
            BlkparseArrival::Queue => Action::Queue,
            BlkparseArrival::Issue => Action::Issue,
        };
        match e.action {
            Action::Complete => self.complete(e),
            Action::Requeue if arrival == Action::Issue => {
                *self
                    .requeued
                    .entry((e.device, e.sector, e.sectors))
                    .or_default() += 1;
            }
            a if a == arrival && e.sectors > 0 => {
                if a == Action::Issue {
                    let key = (e.device, e.sector, e.sectors);
                    if let Some(n) = self.requeued.get_mut(&key) {
                        *n -= 1;
                        if *n == 0 {
                            self.requeued.remove(&key);
                        }
                        self.requeues_dropped += 1;
                        return;
                    }
                }
                self.add(e);
            }
            _ => {}
        }
        self.release(ready, false);
        if self.pending.len() > PENDING_MAX {
            let entry = self.pending.first_entry().expect("non-empty");
            let key = *entry.key();
            let p = entry.remove();
            self.unindex(key, &p);
            ready.push_back(p.record);
            self.release(ready, false);
        }
    }

    fn add(&mut self, e: Event) {
        self.sequence += 1;
        let key = (e.time_ns, self.sequence);
        self.pending.insert(
            key,
            Pending {
                record: TraceRecord {
                    arrival_ns: e.time_ns,
                    device: e.device,
                    kind: e.kind,
                    offset_bytes: e.sector.saturating_mul(512),
                    length_bytes: e.sectors.saturating_mul(512),
                    service_ns: None,
                },
                sector: e.sector,
                sectors: e.sectors,
                remaining: e.sectors,
                done: false,
            },
        );
        self.by_start
            .entry((e.device, e.sector))
            .or_default()
            .push_back(key);
    }

    /// The completion of `e.sectors` sectors from `e.sector`.
    fn complete(&mut self, e: Event) {
        if e.sectors == 0 {
            return;
        }
        let end = e.sector.saturating_add(e.sectors);
        // Requests starting inside the range: the oldest at each start.
        let mut hits: Vec<(u64, u64)> = self
            .by_start
            .range((e.device, e.sector)..(e.device, end))
            .filter_map(|(_, q)| q.front().copied())
            .collect();
        // A request starting before the range that reaches into it (a later piece of a split).
        if let Some((&(d, _), q)) = self.by_start.range(..(e.device, e.sector)).next_back() {
            if d == e.device {
                if let Some(&k) = q.front() {
                    let p = &self.pending[&k];
                    if p.sector + p.sectors > e.sector {
                        hits.push(k);
                    }
                }
            }
        }
        if hits.is_empty() {
            self.unmatched_completions += 1;
            return;
        }
        if hits.len() > 1 {
            self.merged_completions += 1;
        }
        for k in hits {
            let p = self.pending.get_mut(&k).expect("indexed");
            let overlap = (p.sector + p.sectors).min(end) - p.sector.max(e.sector);
            p.remaining = p.remaining.saturating_sub(overlap);
            if p.remaining > 0 {
                self.split_completions += 1;
                continue;
            }
            p.done = true;
            p.record.service_ns = Some(e.time_ns.saturating_sub(p.record.arrival_ns));
            let q = self
                .by_start
                .get_mut(&(p.record.device, p.sector))
                .expect("indexed");
            q.pop_front();
            if q.is_empty() {
                self.by_start.remove(&(p.record.device, p.sector));
            }
        }
    }

    fn unindex(&mut self, key: (u64, u64), p: &Pending) {
        let start = (p.record.device, p.sector);
        if let Some(q) = self.by_start.get_mut(&start) {
            q.retain(|&k| k != key);
            if q.is_empty() {
                self.by_start.remove(&start);
            }
        }
    }

    /// Hand out requests in arrival order once complete (or all of them, `all`).
    fn release(&mut self, out: &mut VecDeque<TraceRecord>, all: bool) {
        while let Some(entry) = self.pending.first_entry() {
            if !entry.get().done && !all {
                break;
            }
            let key = *entry.key();
            let p = entry.remove();
            if !p.done {
                self.unindex(key, &p); // never completed
            }
            out.push_back(p.record);
        }
    }

    pub fn drain(&mut self, out: &mut VecDeque<TraceRecord>) {
        self.release(out, true);
        self.by_start.clear();
    }
}
