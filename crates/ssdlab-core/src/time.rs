//! Simulated time: nanoseconds since the simulation started, never the wall clock.

use std::ops::{Add, AddAssign, Sub};

/// A point in simulated time, in nanoseconds.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SimTime(pub u64);

/// A span of simulated time, in nanoseconds.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SimDuration(pub u64);

pub const NS_PER_US: u64 = 1_000;
pub const NS_PER_MS: u64 = 1_000_000;
pub const NS_PER_S: u64 = 1_000_000_000;

impl SimTime {
    pub const ZERO: SimTime = SimTime(0);
    pub fn ns(self) -> u64 {
        self.0
    }
    pub fn seconds_f64(self) -> f64 {
        self.0 as f64 / NS_PER_S as f64
    }
    pub fn saturating_since(self, earlier: SimTime) -> SimDuration {
        SimDuration(self.0.saturating_sub(earlier.0))
    }
}

impl SimDuration {
    pub const ZERO: SimDuration = SimDuration(0);
    pub fn secs_f64(self) -> f64 {
        self.0 as f64 * 1e-9
    }

    pub fn from_us(us: u64) -> Self {
        SimDuration(us * NS_PER_US)
    }
    pub fn from_secs_f64(seconds: f64) -> Self {
        SimDuration((seconds * NS_PER_S as f64).round() as u64)
    }
    pub fn ns(self) -> u64 {
        self.0
    }
}

impl Add<SimDuration> for SimTime {
    type Output = SimTime;
    fn add(self, rhs: SimDuration) -> SimTime {
        SimTime(self.0 + rhs.0)
    }
}

impl AddAssign<SimDuration> for SimTime {
    fn add_assign(&mut self, rhs: SimDuration) {
        self.0 += rhs.0;
    }
}

impl Sub<SimTime> for SimTime {
    type Output = SimDuration;
    fn sub(self, rhs: SimTime) -> SimDuration {
        debug_assert!(self.0 >= rhs.0, "negative duration");
        SimDuration(self.0 - rhs.0)
    }
}

/// A wire's rate with the duration of the last transfer size it was asked for kept: most
/// transfers on a wire have one size (a 4 KiB command's data, a two-plane page), and a 64-bit
/// division takes 10 to 18 cycles on Zen 4 (`divisor`; it sits in front of every
/// reservation the wire makes). The same answers as [`transfer_duration`], exactly.
#[derive(Clone, Debug)]
pub struct TransferRate {
    bytes_per_s: u64,
    /// (bytes, duration) of the last transfer asked for.
    last: (u64, SimDuration),
}

impl TransferRate {
    pub fn new(bytes_per_s: u64) -> TransferRate {
        TransferRate {
            bytes_per_s,
            last: (0, SimDuration(0)),
        }
    }

    pub fn bytes_per_s(&self) -> u64 {
        self.bytes_per_s
    }

    /// [`transfer_duration`] of `bytes` at this rate.
    #[inline]
    pub fn duration(&mut self, bytes: u64) -> SimDuration {
        if self.last.0 != bytes {
            self.last = (bytes, transfer_duration(bytes, self.bytes_per_s));
        }
        debug_assert_eq!(self.last.1, transfer_duration(bytes, self.bytes_per_s));
        self.last.1
    }
}

/// Time to move `bytes` at `bytes_per_s`, rounded up to whole nanoseconds.
/// In 64 bits up to 18 GB (every transfer the model makes; a 128-bit division is a library
/// call costing ten times more), in 128 bits beyond.
#[inline]
pub fn transfer_duration(bytes: u64, bytes_per_s: u64) -> SimDuration {
    debug_assert!(bytes_per_s > 0);
    match bytes.checked_mul(NS_PER_S) {
        Some(ns_bytes) => SimDuration(ns_bytes.div_ceil(bytes_per_s)),
        None => {
            SimDuration((bytes as u128 * NS_PER_S as u128).div_ceil(bytes_per_s as u128) as u64)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transfer_in_64_bits_equals_128() {
        let mut rng = crate::rng::Rng::new(3);
        for _ in 0..100_000 {
            let (bits_b, bits_r) = (1 + rng.below(63), 1 + rng.below(63));
            let bytes = rng.below(1 << bits_b);
            let rate = 1 + rng.below(1 << bits_r);
            let wide = (bytes as u128 * NS_PER_S as u128).div_ceil(rate as u128) as u64;
            assert_eq!(
                transfer_duration(bytes, rate).ns(),
                wide,
                "{bytes} B at {rate} B/s"
            );
        }
    }

    #[test]
    fn a_rate_answers_as_the_division_whatever_the_sizes_asked() {
        // Runs of one size, sizes back and forth, zero first and later.
        let mut rng = crate::rng::Rng::new(5);
        let mut rate = TransferRate::new(533_000_000);
        for size in [0, 0, 4096, 4096, 32768, 4096, 0, 1] {
            assert_eq!(rate.duration(size), transfer_duration(size, 533_000_000));
        }
        for _ in 0..10_000 {
            let size = 512 * rng.below(4);
            assert_eq!(rate.duration(size), transfer_duration(size, 533_000_000));
        }
    }

    #[test]
    fn transfer_rounds_up() {
        assert_eq!(transfer_duration(4096, 600_000_000).ns(), 6827);
        assert_eq!(transfer_duration(0, 1).ns(), 0);
    }
}
