//! The IOs of a job, in order: offsets (sequential, uniform, zipf, pareto scattered over the
//! span), sizes and the read/write/trim mix, from the job's own random stream.

use super::job::{CompiledJob, Distribution, Pattern};
use crate::device::IoKind;
use crate::rng::Rng;

/// Produces the job's IOs in order.
pub(super) struct Generator {
    pub(super) rng: Rng,
    pub(super) cursor: u64,
    pub(super) slots: u64,
    /// An odd multiplier coprime with `slots`: rank -> slot scattering for skewed
    /// distributions, so hot blocks are spread over the span as fio does.
    pub(super) scatter: u64,
}

impl Generator {
    /// `ordinal` counts the random jobs run on the drive before this one: back-to-back jobs with the
    /// same randseed get fresh streams (a repeated stream would rewrite LBAs in the order they
    /// were last written, an unrealistically kind pattern for the FTL).
    pub(super) fn new(job: &CompiledJob, seed: u64, ordinal: u64) -> Self {
        let slots = job.span_bytes / job.align_bytes;
        let mut scatter = (0x9E37_79B9_7F4A_7C15u64 % slots.max(1)) | 1;
        while gcd(scatter, slots) != 1 {
            scatter += 2;
        }
        Generator {
            rng: Rng::derive(seed, &format!("workload/{}/{ordinal}", job.job.randseed)),
            cursor: 0,
            slots,
            scatter,
        }
    }

    pub(super) fn next(&mut self, job: &CompiledJob) -> (IoKind, u64, u64) {
        let size = if job.sizes.len() == 1 {
            job.sizes[0].0
        } else {
            let r = self.rng.below(100) as u32;
            job.sizes.iter().find(|&&(_, cum)| r < cum).unwrap().0
        };
        let kind = if job.trim {
            IoKind::Trim
        } else if job.read_pct == 100
            || (job.read_pct > 0 && (self.rng.below(100) as u32) < job.read_pct)
        {
            IoKind::Read
        } else {
            IoKind::Write
        };
        let size = match kind {
            IoKind::Write => job.write_size.unwrap_or(size),
            IoKind::Trim => job.trim_size.unwrap_or(size),
            _ => size,
        };
        let offset = match job.pattern {
            Pattern::Sequential => {
                if self.cursor + size > job.span_bytes {
                    self.cursor = 0;
                }
                let o = self.cursor;
                self.cursor += size;
                o
            }
            Pattern::Random => {
                let slot = match job.distribution {
                    Distribution::Uniform => self.rng.below(self.slots),
                    Distribution::Zipf(theta) => {
                        let n = self.slots as f64;
                        let u = self.rng.unit_f64();
                        let a = 1.0 - theta;
                        let rank = (1.0 + u * (n.powf(a) - 1.0)).powf(1.0 / a) as u64;
                        self.scattered(rank.saturating_sub(1))
                    }
                    Distribution::Pareto(h) => {
                        let power = h.ln() / (1.0 - h).ln();
                        let rank =
                            ((self.slots - 1) as f64 * self.rng.unit_f64().powf(power)) as u64;
                        self.scattered(rank)
                    }
                };
                (slot * job.align_bytes).min(job.span_bytes - size) / job.align_bytes
                    * job.align_bytes
            }
        };
        (kind, job.span_start + offset, size)
    }

    fn scattered(&self, rank: u64) -> u64 {
        ((rank.min(self.slots - 1) as u128 * self.scatter as u128) % self.slots as u128) as u64
    }
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}
