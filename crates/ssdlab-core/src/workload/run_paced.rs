//! Paced streams in a job source (fio's rate caps, think time, flow and rate_min; each
//! stream's state is a [`Pacer`]): when a paced stream issues, sleeps and wakes. An unpaced
//! stream never comes here.

use super::super::pacing::{Flow, Pacer, Wait};
use super::JobSource;
use crate::device::{Completion, Device};
use crate::time::{SimDuration, SimTime};
use crate::workload::CompiledJob;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// The paced streams of a group of jobs.
pub(super) struct Pacing {
    /// Per stream: its pacer once its job has started (None: not paced, or not yet).
    streams: Vec<Option<Pacer>>,
    /// Wake-ups, (time, stream); one whose stream no longer sleeps until then is stale.
    wakes: BinaryHeap<Reverse<(SimTime, usize)>>,
    flows: Vec<Flow>,
    seed: u64,
}

impl Pacing {
    /// The pacing of a group of `jobs` with `streams` streams (None: no job is paced).
    pub(super) fn of(jobs: &[CompiledJob], streams: usize, seed: u64) -> Option<Box<Pacing>> {
        jobs.iter().any(|j| j.pace.is_some()).then(|| {
            Box::new(Pacing {
                streams: (0..streams).map(|_| None).collect(),
                wakes: BinaryHeap::new(),
                flows: Vec::new(),
                seed,
            })
        })
    }

    /// The earliest wake-up (stale ones dropped on the way).
    pub(super) fn next_wake(&mut self) -> Option<SimTime> {
        while let Some(&Reverse((t, k))) = self.wakes.peek() {
            if self.streams[k]
                .as_ref()
                .is_some_and(|p| p.wait == Wait::Until(t))
            {
                return Some(t);
            }
            self.wakes.pop();
        }
        None
    }

    /// Does a stream of job `i` wait to issue (so the job is not over)?
    pub(super) fn holds(&self, i: usize) -> bool {
        self.streams
            .iter()
            .flatten()
            .any(|p| p.job == i && (p.wait != Wait::Ready || p.pending.is_some()))
    }

    fn flow(&mut self, id: u32) -> usize {
        match self.flows.iter().position(|f| f.id == id) {
            Some(f) => f,
            None => {
                self.flows.push(Flow {
                    id,
                    issued: 1,
                    weight: 0,
                    held: Vec::new(),
                });
                self.flows.len() - 1
            }
        }
    }
}

impl JobSource {
    /// Is stream `k` paced?
    #[inline]
    pub(super) fn is_paced(&self, k: usize) -> bool {
        self.pacing.as_ref().is_some_and(|p| p.streams[k].is_some())
    }

    /// Paced job `i` starts at `now`: its streams' pacers and its weight in its flow
    /// (fio's `flow_init_job`), then each stream's first turn.
    pub(super) fn start_paced(&mut self, dev: &mut Device, i: usize, now: SimTime) {
        let job = &self.jobs[i].job;
        let o = *job.pace.as_deref().expect("a paced job");
        let from = now + SimDuration(job.ramp_ns);
        let pacing = self
            .pacing
            .as_mut()
            .expect("a group with a paced job paces");
        let mine: Vec<usize> = (0..self.streams.len())
            .filter(|&k| self.streams[k].job == i)
            .collect();
        for &k in &mine {
            pacing.streams[k] = Some(Pacer::new(i, now, from, pacing.seed, k));
        }
        if o.flow_weight > 0 {
            let f = pacing.flow(o.flow_id);
            pacing.flows[f].weight += u64::from(o.flow_weight) * mine.len() as u64;
        }
        for k in mine {
            self.pace(dev, k, now);
        }
    }

    /// Paced job `i` is over: its weight and IOs leave its flow (fio's `flow_exit_job`), and
    /// the streams held back ask again.
    pub(super) fn end_paced(&mut self, i: usize) {
        let Some(pacing) = self.pacing.as_mut() else {
            return;
        };
        let Some(o) = self.jobs[i]
            .job
            .pace
            .as_deref()
            .filter(|o| o.flow_weight > 0)
        else {
            return;
        };
        let f = pacing.flow(o.flow_id);
        for p in pacing.streams.iter().flatten().filter(|p| p.job == i) {
            pacing.flows[f].issued -= p.flow_issued;
            pacing.flows[f].weight -= u64::from(o.flow_weight);
        }
        for h in std::mem::take(&mut pacing.flows[f].held) {
            if let Some(q) = pacing.streams[h].as_mut() {
                q.wait = Wait::Ready;
            }
            self.refill.push_back(h);
        }
    }

    /// Wake the paced streams due by `at`.
    pub(super) fn wake_due(&mut self, dev: &mut Device, at: SimTime) {
        while let Some(t) = self.pacing.as_mut().and_then(|p| p.next_wake()) {
            if t > at {
                break;
            }
            let Reverse((_, k)) = self.pacing.as_mut().unwrap().wakes.pop().unwrap();
            self.pace(dev, k, at);
            let i = self.streams[k].job;
            self.end_if_idle(dev, i, at);
        }
    }

    /// A paced stream's command completed: its think-time count and fio's rate_min check
    /// (a job that misses it stops issuing and reports why).
    pub(super) fn paced_completion(&mut self, k: usize, c: &Completion, now: SimTime) {
        let Some(p) = self.pacing.as_mut().and_then(|p| p.streams[k].as_mut()) else {
            return;
        };
        let slot = &mut self.jobs[p.job];
        let o = slot.job.pace.as_deref().expect("a paced job");
        let super::Phase::Running(meter) = &slot.phase else {
            return;
        };
        let from = meter.rec.start;
        if let Some(e) = p.completed(
            o,
            c.io.kind,
            c.io.length_bytes,
            now,
            from,
            &slot.job.job.name,
        ) {
            if slot.error.is_none() {
                slot.error = Some(e);
                slot.stop_issuing_at = Some(now);
            }
        }
    }

    /// A paced stream's turn at `now` (its job started, a command of it completed, it woke,
    /// or its flow let it go): it issues what its pacing allows, up to its queue depth, as
    /// fio's job loop does (flow check, rate check and sleep, submit, think time).
    pub(super) fn pace(&mut self, dev: &mut Device, k: usize, now: SimTime) {
        let Some(mut pacing) = self.pacing.take() else {
            return;
        };
        let Some(mut p) = pacing.streams[k].take() else {
            self.pacing = Some(pacing);
            return;
        };
        let before = p.wait;
        let i = p.job;
        let o = *self.jobs[i].job.pace.as_deref().expect("a paced job");
        let depth = u64::from(self.jobs[i].job.job.iodepth);
        p.restart_if_due(now);
        loop {
            let s = &self.streams[k];
            if !self.jobs[i].may_issue(now, s) {
                p.wait = Wait::Ready;
                p.pending = None;
                break;
            }
            match p.wait {
                Wait::Until(t) if t > now => break,
                Wait::Flow => break,
                Wait::Quiesce { .. } if s.outstanding > 0 => break,
                Wait::Quiesce { ns, think } => {
                    p.sleep(&o, now, ns, think);
                    continue;
                }
                Wait::Until(_) | Wait::Ready => p.wait = Wait::Ready,
            }
            if s.outstanding >= depth {
                break;
            }
            let io = match p.pending.take() {
                Some(io) => io,
                None => {
                    if o.flow_weight > 0 {
                        let f = pacing.flow(o.flow_id);
                        if pacing.flows[f].over(p.flow_issued, o.flow_weight) {
                            p.flow_hold(&o);
                            if p.wait == Wait::Flow {
                                pacing.flows[f].held.push(k);
                            }
                            continue;
                        }
                        pacing.flows[f].issued += 1;
                        p.flow_issued += 1;
                        for h in std::mem::take(&mut pacing.flows[f].held) {
                            if let Some(q) = pacing.streams[h].as_mut() {
                                q.wait = Wait::Ready;
                            }
                            self.refill.push_back(h);
                        }
                    }
                    let s = &mut self.streams[k];
                    let io = s.generator.next(&self.jobs[i].job);
                    if s.generator.ended {
                        break;
                    }
                    io
                }
            };
            if let Some(ns) = p.ahead(io.0, now) {
                p.pending = Some(io);
                p.wait = if o.quiesce {
                    Wait::Quiesce { ns, think: false }
                } else {
                    Wait::Until(now + SimDuration(ns))
                };
                continue;
            }
            if !self.send(dev, k, now, io) {
                break;
            }
            p.issued(&o, io.0, io.2);
            p.think_if_due(&o, now);
        }
        if let Wait::Until(t) = p.wait {
            // fio's sleep ends at the job's runtime.
            let t = self.jobs[i].stop_issuing_at.map_or(t, |end| t.min(end));
            p.wait = Wait::Until(t);
            if before != p.wait {
                pacing.wakes.push(Reverse((t, k)));
            }
        }
        pacing.streams[k] = Some(p);
        self.pacing = Some(pacing);
    }
}

#[cfg(test)]
#[path = "run_paced_tests.rs"]
mod tests;
