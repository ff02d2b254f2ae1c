//! fio's pacing of a job by its host (io_u.c's `rate_ddir` and `usec_for_io`, backend.c's
//! `handle_thinktime` and `check_min_rate`, flow.c): rate caps with a linear or a Poisson
//! schedule, think times, flow weights between jobs, and the minimum rates that fail a job.
//! A paced copy of a job (a stream) is a small state machine, [`Pacer`]: ready, waiting for
//! its commands in flight to complete, asleep until a time, or held back by its flow; the
//! job source (`run/paced.rs`) asks it before each IO it would issue.

use super::job::{parse_size, Job};
use crate::device::IoKind;
use crate::rng::Rng;
use crate::time::{SimTime, NS_PER_S};

/// fio's settle time before rate_min is checked (backend.c `__check_min_rate`).
const MIN_RATE_SETTLE_NS: u64 = 2 * NS_PER_S;

/// A job's pacing options in numbers; each array is per direction (read, write, trim).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct PaceOptions {
    /// Bytes per second (0: no cap), from rate or rate_iops x the smallest block size.
    rate_bps: [u64; 3],
    /// rate_iops with bssplit: one command per this many ns, whatever its size (fio's
    /// `usec_for_io`); 0: the byte schedule.
    period_ns: [u64; 3],
    poisson: bool,
    /// io_submit_mode=inline: wait for the commands in flight before sleeping.
    pub(super) quiesce: bool,
    ignore_think: bool,
    min_bs: [u64; 3],
    /// The stall: the longer of thinktime and thinktime_spin (a spin is the host's CPU time).
    think_ns: u64,
    /// thinktime_blocks; None: not set (1, and not checked with thinktime_iotime alone).
    think_blocks: Option<u64>,
    think_on_issue: bool,
    think_iotime_ns: u64,
    pub(super) flow_weight: u32,
    pub(super) flow_id: u32,
    flow_sleep_ns: u64,
    min_bps: [u64; 3],
    min_iops: [u64; 3],
    cycle_ns: u64,
}

/// `text` as fio's `READ[,WRITE[,TRIM]]`: a value not followed by one applies to the later
/// directions too; an empty place, or no text, is 0 (uncapped).
fn per_direction(
    field: &str,
    text: &Option<String>,
    read: &dyn Fn(&str) -> Result<u64, String>,
) -> Result<[u64; 3], String> {
    let Some(text) = text.as_deref() else {
        return Ok([0; 3]);
    };
    let parts: Vec<&str> = text.split(',').map(str::trim).collect();
    if parts.len() > 3 {
        return Err(format!(
            "{field}: '{text}' has {} values; accepted: READ[,WRITE[,TRIM]]",
            parts.len()
        ));
    }
    let value = |p: &str| -> Result<u64, String> {
        if p.is_empty() {
            Ok(0)
        } else {
            read(p).map_err(|e| format!("{field}: {e}"))
        }
    };
    let r = value(parts[0])?;
    let w = parts.get(1).map(|p| value(p)).transpose()?.unwrap_or(r);
    let t = parts.get(2).map(|p| value(p)).transpose()?.unwrap_or(w);
    Ok([r, w, t])
}

/// A whole number of commands per second (fio's k and m are x1000 for counts).
fn per_second_count(text: &str) -> Result<u64, String> {
    let t = text.trim().to_ascii_lowercase();
    let (digits, mult) = match t.strip_suffix('k') {
        Some(d) => (d, 1_000),
        None => match t.strip_suffix('m') {
            Some(d) => (d, 1_000_000),
            None => (t.as_str(), 1),
        },
    };
    digits
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(mult))
        .ok_or_else(|| {
            format!("'{text}' is not a count; accepted: a whole number per second (1000, 5k)")
        })
}

fn seconds_ns(field: &str, s: f64) -> Result<u64, String> {
    if !(0.0..1e9).contains(&s) {
        return Err(format!(
            "{field}: {s} s; accepted: 0 or more seconds (below 10^9)"
        ));
    }
    Ok((s * NS_PER_S as f64).round() as u64)
}

impl Job {
    /// rate_process, io_submit_mode and thinktime_blocks_type: (Poisson arrivals, inline
    /// submission, think time counted at issue).
    fn pace_choices(&self) -> Result<(bool, bool, bool), String> {
        let poisson = match self.rate_process.trim() {
            "linear" => false,
            "poisson" => true,
            other => {
                return Err(format!(
                    "rate_process: '{other}'; accepted: linear, poisson"
                ))
            }
        };
        let quiesce = match self.io_submit_mode.trim() {
            "inline" => true,
            "offload" => false,
            other => {
                return Err(format!(
                    "io_submit_mode: '{other}'; accepted: inline, offload"
                ))
            }
        };
        let think_on_issue = match self.thinktime_blocks_type.trim() {
            "complete" => false,
            "issue" => true,
            other => {
                return Err(format!(
                    "thinktime_blocks_type: '{other}'; accepted: complete, issue"
                ))
            }
        };
        Ok((poisson, quiesce, think_on_issue))
    }

    /// The job's pacing, or None when it asks for none. `min_bs`: its smallest block size
    /// per direction; `bssplit`: sizes are drawn from a split (rate_iops then paces per IO).
    pub(super) fn pace_options(
        &self,
        min_bs: [u64; 3],
        bssplit: bool,
    ) -> Result<Option<PaceOptions>, String> {
        let rate = per_direction("rate", &self.rate, &|p| parse_size(p))?;
        let iops = per_direction("rate_iops", &self.rate_iops, &per_second_count)?;
        let min_bps = per_direction("rate_min", &self.rate_min, &|p| parse_size(p))?;
        let min_iops = per_direction("rate_iops_min", &self.rate_iops_min, &per_second_count)?;
        let (poisson, quiesce, think_on_issue) = self.pace_choices()?;
        if self.thinktime_blocks == Some(0) {
            return Err("thinktime_blocks: 0; accepted: 1 or more".into());
        }
        if self.rate_cycle_ms == 0 {
            return Err("rate_cycle: 0 ms; accepted: 1 or more".into());
        }
        let mut rate_bps = [0; 3];
        let mut period_ns = [0; 3];
        for d in 0..3 {
            // fio's __setup_rate: rate where given, else rate_iops at the smallest size.
            rate_bps[d] = if rate[d] > 0 {
                rate[d]
            } else {
                iops[d].saturating_mul(min_bs[d])
            };
            if rate[d] == 0 && iops[d] > 0 && bssplit {
                period_ns[d] = NS_PER_S / iops[d];
            }
            if poisson && rate_bps[d] > 0 && rate_bps[d] / min_bs[d].max(1) == 0 {
                return Err(format!(
                    "rate_process: poisson at {} bytes/s is below one command of {} bytes per second; accepted: a rate of at least one command per second",
                    rate_bps[d], min_bs[d]
                ));
            }
        }
        let think_ns = seconds_ns("thinktime", self.thinktime_s)?
            .max(seconds_ns("thinktime_spin", self.thinktime_spin_s)?);
        let opts = PaceOptions {
            rate_bps,
            period_ns,
            poisson,
            quiesce,
            ignore_think: self.rate_ignore_thinktime,
            min_bs,
            // fio: the thinktime_* options mean something only with thinktime.
            think_ns: if self.thinktime_s > 0.0 { think_ns } else { 0 },
            think_blocks: self.thinktime_blocks,
            think_on_issue,
            think_iotime_ns: seconds_ns("thinktime_iotime", self.thinktime_iotime_s)?,
            flow_weight: self.flow,
            flow_id: self.flow_id,
            flow_sleep_ns: seconds_ns("flow_sleep", self.flow_sleep_s)?,
            min_bps,
            min_iops,
            cycle_ns: u64::from(self.rate_cycle_ms) * 1_000_000,
        };
        let paced = rate_bps.iter().any(|&r| r > 0)
            || opts.think_ns > 0
            || opts.flow_weight > 0
            || min_bps.iter().chain(&min_iops).any(|&m| m > 0);
        Ok(paced.then_some(opts))
    }
}

/// What a paced stream waits for.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Wait {
    /// Nothing: it issues as its rate and flow allow.
    Ready,
    /// Asleep until then.
    Until(SimTime),
    /// Its commands in flight to complete, then asleep for `ns` (`think`: a think time,
    /// after which rate_ignore_thinktime moves the schedule on).
    Quiesce { ns: u64, think: bool },
    /// Over its flow's share: it asks again when another job of the flow issues.
    Flow,
}

/// Index of a direction in the per-direction arrays (a Zone Append is a write).
fn dir(kind: IoKind) -> usize {
    match kind {
        IoKind::Read => 0,
        IoKind::Write | IoKind::ZoneAppend => 1,
        IoKind::Trim | IoKind::Flush => 2,
    }
}

/// One paced copy of a job: fio's per-thread rate, think-time, flow and rate_min state.
pub(super) struct Pacer {
    pub(super) job: usize,
    pub(super) wait: Wait,
    /// The IO drawn and not yet issued (its direction is ahead of its rate).
    pub(super) pending: Option<(IoKind, u64, u64)>,
    /// fio's epoch: the schedule's zero (the job's start; the measurement's after a ramp,
    /// when `restart_at` comes).
    epoch: SimTime,
    restart_at: Option<SimTime>,
    issued_bytes: [u64; 3],
    /// When each direction's next IO is due, ns after the epoch.
    next_ns: [u64; 3],
    /// The Poisson and per-IO schedules' last due time.
    last_ns: [u64; 3],
    rng: Rng,
    last_dir: usize,
    issued: u64,
    completed: u64,
    think_last: u64,
    think_at: SimTime,
    /// IOs this stream counted in its flow.
    pub(super) flow_issued: u64,
    /// Measured completions per direction (bytes, commands) and the last rate_min check.
    done: [(u64, u64); 3],
    checked: [Option<(u64, u64, SimTime)>; 3],
}

impl Pacer {
    /// A stream of job `job` starting at `now`, measured from `measure_from`.
    pub(super) fn new(
        job: usize,
        now: SimTime,
        measure_from: SimTime,
        seed: u64,
        stream: usize,
    ) -> Pacer {
        Pacer {
            job,
            wait: Wait::Ready,
            pending: None,
            epoch: now,
            restart_at: (measure_from > now).then_some(measure_from),
            issued_bytes: [0; 3],
            next_ns: [0; 3],
            last_ns: [0; 3],
            rng: Rng::derive(seed ^ stream as u64, "workload.pacing"),
            last_dir: 0,
            issued: 0,
            completed: 0,
            think_last: 0,
            think_at: measure_from.min(now),
            flow_issued: 0,
            done: [(0, 0); 3],
            checked: [None; 3],
        }
    }

    /// fio's reset at the end of the ramp: the schedule starts again from the measurement's
    /// start.
    pub(super) fn restart_if_due(&mut self, now: SimTime) {
        if let Some(t) = self.restart_at.filter(|&t| now >= t) {
            self.restart_at = None;
            self.epoch = t;
            self.think_at = t;
            self.issued_bytes = [0; 3];
            self.next_ns = [0; 3];
            self.last_ns = [0; 3];
        }
    }

    /// How long an IO of `kind` must wait for its rate at `now` (None: it is due).
    pub(super) fn ahead(&self, kind: IoKind, now: SimTime) -> Option<u64> {
        let due = self.next_ns[dir(kind)];
        let since = now.ns().saturating_sub(self.epoch.ns());
        (due > since).then(|| due - since)
    }

    /// An IO of `kind` and `length` was issued: when the direction's next one is due (fio's
    /// `usec_for_io`, in ns).
    pub(super) fn issued(&mut self, o: &PaceOptions, kind: IoKind, length: u64) {
        let d = dir(kind);
        self.last_dir = d;
        self.issued += 1;
        self.issued_bytes[d] += length;
        let bps = o.rate_bps[d];
        self.next_ns[d] = if bps == 0 {
            0
        } else if o.poisson {
            let mean_ns = NS_PER_S as f64 / (bps / o.min_bs[d].max(1)) as f64;
            self.last_ns[d] += (mean_ns * -(1.0 - self.rng.unit_f64()).ln()) as u64;
            self.last_ns[d]
        } else if o.period_ns[d] > 0 {
            self.last_ns[d] += o.period_ns[d];
            self.last_ns[d]
        } else {
            (u128::from(self.issued_bytes[d]) * u128::from(NS_PER_S) / u128::from(bps)) as u64
        };
    }

    /// After an IO is issued: is a think time due (fio's `handle_thinktime`)? If so, the
    /// stream waits for its commands and then stalls.
    pub(super) fn think_if_due(&mut self, o: &PaceOptions, now: SimTime) {
        if o.think_ns == 0 {
            return;
        }
        let mut stall = false;
        if o.think_iotime_ns > 0 {
            if now.ns().saturating_sub(self.think_at.ns()) >= o.think_iotime_ns {
                stall = true;
            } else if o.think_blocks.is_none() {
                return;
            }
        }
        let b = if o.think_on_issue {
            self.issued
        } else {
            self.completed
        };
        if b >= self.think_last + o.think_blocks.unwrap_or(1) {
            stall = true;
        }
        if stall {
            self.think_last = b;
            self.wait = Wait::Quiesce {
                ns: o.think_ns,
                think: true,
            };
        }
    }

    /// Its commands in flight have completed (or none was asked to): asleep from `now`.
    pub(super) fn sleep(&mut self, o: &PaceOptions, now: SimTime, ns: u64, think: bool) {
        let wake = SimTime(now.ns().saturating_add(ns));
        self.wait = Wait::Until(wake);
        if !think {
            return;
        }
        self.think_at = wake;
        let d = self.last_dir;
        let bps = o.rate_bps[d];
        if o.ignore_think && bps > 0 && ns > 0 {
            // fio: what it would have issued meanwhile, less one block so it issues at once.
            let missed = (u128::from(bps) * u128::from(ns) / u128::from(NS_PER_S)) as u64;
            let bs = o.min_bs[d];
            let ns_per_op = (u128::from(bs) * u128::from(NS_PER_S) / u128::from(bps)) as u64;
            let over = if ns_per_op <= ns { bs } else { 0 };
            self.issued_bytes[d] += missed.saturating_sub(over);
            self.last_ns[d] += ns;
        }
    }

    /// A command of `kind` and `length` completed at `now`: the think-time count and, from
    /// `from` (the measurement's start), fio's rate_min check (None, or the failure as fio
    /// logs it).
    pub(super) fn completed(
        &mut self,
        o: &PaceOptions,
        kind: IoKind,
        length: u64,
        now: SimTime,
        from: SimTime,
        name: &str,
    ) -> Option<String> {
        self.completed += 1;
        if now < from {
            return None; // fio counts from the end of the ramp
        }
        let d = dir(kind);
        self.done[d].0 += length;
        self.done[d].1 += 1;
        if (o.min_bps[d] == 0 && o.min_iops[d] == 0)
            || now.ns().saturating_sub(from.ns()) < MIN_RATE_SETTLE_NS
        {
            return None;
        }
        let (bytes, ios) = self.done[d];
        if let Some((b0, i0, t0)) = self.checked[d] {
            let spent_ms = now.ns().saturating_sub(t0.ns()) / 1_000_000;
            if spent_ms == 0 || spent_ms * 1_000_000 < o.cycle_ns {
                return None;
            }
            let what = ["read", "write", "trim"][d];
            if o.min_bps[d] > 0 {
                let got = (bytes - b0) * 1000 / spent_ms;
                if got < o.min_bps[d] {
                    return Some(format!(
                        "{name}: rate_min={}B/s not met ({what}), got {got}B/s",
                        o.min_bps[d]
                    ));
                }
            } else {
                let got = (ios - i0) * 1000 / spent_ms;
                if got < o.min_iops[d] {
                    return Some(format!(
                        "{name}: rate_iops_min={} not met ({what}), got {got} IOPS",
                        o.min_iops[d]
                    ));
                }
            }
        }
        self.checked[d] = Some((bytes, ios, now));
        None
    }

    /// flow_sleep, for a stream over its flow's share (0: wait for another job to issue).
    pub(super) fn flow_hold(&mut self, o: &PaceOptions) {
        self.wait = if o.flow_sleep_ns > 0 {
            Wait::Quiesce {
                ns: o.flow_sleep_ns,
                think: false,
            }
        } else {
            Wait::Flow
        };
    }
}

/// The jobs sharing a flow_id (fio's `struct fio_flow`): their weights and IOs.
pub(super) struct Flow {
    pub(super) id: u32,
    /// fio starts the count at 1.
    pub(super) issued: u64,
    pub(super) weight: u64,
    /// Streams held back, asking again when another issues.
    pub(super) held: Vec<usize>,
}

impl Flow {
    /// fio's `flow_threshold_exceeded`: is a stream of weight `weight` that counted `mine`
    /// over its share?
    pub(super) fn over(&self, mine: u64, weight: u32) -> bool {
        mine as f64 / self.issued as f64 > f64::from(weight) / self.weight as f64
    }
}
