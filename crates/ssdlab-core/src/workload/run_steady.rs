//! fio's steady-state detection for a job of a group (`ss`, `ss_dur`, `ss_ramp`): judged
//! over the meter's closed intervals; once met, the job stops issuing.

use super::{JobSlot, Phase};
use crate::time::{SimTime, NS_PER_S};

impl JobSlot {
    /// fio's steady-state check over the closed intervals: once met, stop issuing.
    pub(super) fn check_steady_state(&mut self, now: SimTime) {
        let (Some(c), Some(state), Phase::Running(meter)) =
            (self.job.steady, self.steady.as_mut(), &self.phase)
        else {
            return;
        };
        let rec = &meter.rec;
        let n = rec.intervals_closed();
        let interval = self.job.interval_ns;
        // fio's ss_ramp: data collection starts after it, so the window judged lies past it.
        if state.attained
            || n < c.dur_intervals
            || ((n - c.dur_intervals) as u64 * interval) < c.ramp_ns
        {
            return;
        }
        let s = &rec.series;
        let values: Vec<f64> = (n - c.dur_intervals..n)
            .map(|i| {
                if c.latency {
                    // Mean completion latency of the interval (fio's lat), ns.
                    let n = s.read_ios[i] + s.write_ios[i];
                    (s.read_latency_ns_sum[i] + s.write_latency_ns_sum[i]) as f64 / n.max(1) as f64
                } else if c.bytes {
                    (s.read_bytes[i] + s.write_bytes[i]) as f64
                } else {
                    (s.read_ios[i] + s.write_ios[i] + s.trim_ios[i]) as f64
                }
            })
            .collect();
        let k = values.len() as f64;
        let mean = values.iter().sum::<f64>() / k;
        if mean <= 0.0 {
            return;
        }
        let pct = if c.slope {
            // Least-squares slope per interval, in percent of the mean (fio's *_slope).
            let xm = (k - 1.0) / 2.0;
            let (num, den) = values
                .iter()
                .enumerate()
                .fold((0.0, 0.0), |(a, b), (i, v)| {
                    let dx = i as f64 - xm;
                    (a + dx * (v - mean), b + dx * dx)
                });
            (num / den).abs() / mean * 100.0
        } else {
            values.iter().map(|v| (v - mean).abs()).fold(0.0, f64::max) / mean * 100.0
        };
        state.value_pct = pct;
        if pct <= c.limit_pct {
            state.attained = true;
            state.attained_at_s = Some((n as u64 * interval) as f64 / NS_PER_S as f64);
            self.stop_issuing_at = Some(now);
        }
    }
}
