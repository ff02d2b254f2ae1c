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

use crate::NO_PLACEMENT;
use crate::{BlkparseArrival, OpKind, TraceRecord};
use std::collections::{BTreeMap, BTreeSet, VecDeque};

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
    /// Requests in arrival order; `pending[0]` has sequence number `first_seq`.
    pending: VecDeque<Pending>,
    first_seq: u64,
    /// Pending requests by (device, first sector, sequence): range queries find the requests
    /// a completion covers.
    by_start: BTreeSet<(u32, u64, u64)>,
    /// Requeued (device, sector, sectors) and how many times, awaiting their second issue.
    requeued: BTreeMap<(u32, u64, u64), u32>,
    /// Requests a completion covers (reused).
    hits: Vec<u64>,
    pub requeues_dropped: u64,
    pub split_completions: u64,
}

/// Arrivals whose completion never shows up are released once this many are pending.
const PENDING_MAX: usize = 1 << 16;

impl Tracker {
    pub fn new(arrival: BlkparseArrival) -> Self {
        Tracker {
            arrival,
            pending: VecDeque::new(),
            first_seq: 0,
            by_start: BTreeSet::new(),
            requeued: BTreeMap::new(),
            hits: Vec::new(),
            requeues_dropped: 0,
            split_completions: 0,
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
                if a == Action::Issue && !self.requeued.is_empty() {
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
            // The oldest never completed (its completion is not in the trace): let it go.
            let seq = self.first_seq;
            let p = self.pending.pop_front().expect("non-empty");
            self.first_seq += 1;
            self.by_start.remove(&(p.record.device, p.sector, seq));
            ready.push_back(p.record);
            self.release(ready, false);
        }
    }

    fn add(&mut self, e: Event) {
        let seq = self.first_seq + self.pending.len() as u64;
        self.pending.push_back(Pending {
            record: TraceRecord {
                arrival_ns: e.time_ns,
                device: e.device,
                kind: e.kind,
                offset_bytes: e.sector.saturating_mul(512),
                length_bytes: e.sectors.saturating_mul(512),
                service_ns: None,
                placement: NO_PLACEMENT,
            },
            sector: e.sector,
            sectors: e.sectors,
            remaining: e.sectors,
            done: false,
        });
        self.by_start.insert((e.device, e.sector, seq));
    }

    /// The completion of `e.sectors` sectors from `e.sector`.
    fn complete(&mut self, e: Event) {
        if e.sectors == 0 {
            return;
        }
        let end = e.sector.saturating_add(e.sectors);
        // Requests starting inside the range: the oldest at each start.
        let mut hits = std::mem::take(&mut self.hits);
        hits.clear();
        let mut last_start = None;
        for &(_, sector, seq) in self
            .by_start
            .range((e.device, e.sector, 0)..(e.device, end, 0))
        {
            if last_start != Some(sector) {
                hits.push(seq);
                last_start = Some(sector);
            }
        }
        // A request starting before the range that reaches into it (a later piece of a split).
        if let Some(&(d, sector, _)) = self.by_start.range(..(e.device, e.sector, 0)).next_back() {
            if d == e.device {
                let &(_, _, seq) = self
                    .by_start
                    .range((d, sector, 0)..(d, sector, u64::MAX))
                    .next()
                    .expect("present");
                let p = &self.pending[(seq - self.first_seq) as usize];
                if p.sector + p.sectors > e.sector {
                    hits.push(seq);
                }
            }
        }
        for &seq in &hits {
            let p = &mut self.pending[(seq - self.first_seq) as usize];
            let overlap = (p.sector + p.sectors).min(end) - p.sector.max(e.sector);
            p.remaining = p.remaining.saturating_sub(overlap);
            if p.remaining > 0 {
                self.split_completions += 1;
                continue;
            }
            p.done = true;
            p.record.service_ns = Some(e.time_ns.saturating_sub(p.record.arrival_ns));
            self.by_start.remove(&(p.record.device, p.sector, seq));
        }
        self.hits = hits;
    }

    /// Hand out requests in arrival order once complete (or all of them, `all`).
    fn release(&mut self, out: &mut VecDeque<TraceRecord>, all: bool) {
        while let Some(p) = self.pending.front() {
            if !p.done && !all {
                break;
            }
            let p = self.pending.pop_front().expect("front");
            if !p.done {
                self.by_start
                    .remove(&(p.record.device, p.sector, self.first_seq));
            }
            self.first_seq += 1;
            out.push_back(p.record);
        }
    }

    pub fn drain(&mut self, out: &mut VecDeque<TraceRecord>) {
        self.release(out, true);
        self.by_start.clear();
    }
}
