//! Division by a number fixed at run time (a geometry constant), without a divide
//! instruction: the FTL turns physical unit numbers into blocks, dies and PUs on every write
//! and every garbage-collection copy, and a 32-bit `div` costs 10-40 cycles where a multiply
//! costs 3 (issue 15's profile: two to three divisions per NAND unit operation).
//!
//! Powers of two shift. Other divisors use Lemire, Kaser and Kurz's direct method ("Faster
//! Remainder by Direct Computation", Software: Practice and Experience 49(6), 2019): with
//! `m = ceil(2^64 / d)`, `n / d == (m * n) >> 64` exactly for every 32-bit `n`.

/// A divisor `d > 0` prepared for fast division of `u32` values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Divisor {
    /// ceil(2^64 / d), or 0 when `d` is a power of two (then `shift` is used).
    m: u64,
    shift: u32,
    d: u32,
}

impl Divisor {
    pub fn new(d: u32) -> Divisor {
        assert!(d > 0, "division by zero");
        if d.is_power_of_two() {
            Divisor {
                m: 0,
                shift: d.trailing_zeros(),
                d,
            }
        } else {
            Divisor {
                m: u64::MAX / d as u64 + 1,
                shift: 0,
                d,
            }
        }
    }

    /// `n / d`.
    #[inline(always)]
    pub fn quotient(self, n: u32) -> u32 {
        if self.m == 0 {
            n >> self.shift
        } else {
            ((self.m as u128 * n as u128) >> 64) as u32
        }
    }

    /// `n % d`.
    #[inline(always)]
    pub fn remainder(self, n: u32) -> u32 {
        n - self.quotient(n) * self.d
    }

    pub fn get(self) -> u32 {
        self.d
    }
}

/// A power of two `d` that byte counts are divided by (the mapping unit, a power of two by
/// validation): shifts and masks, where a division by a number known only at run time is a
/// 64-bit `div` (10 to 18 cycles on Zen 4). A host command's offset and length are divided by
/// the unit eight times on its way in (issue 26's count: about 13 divisions per host write
/// in all).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PowerOfTwo {
    shift: u32,
}

impl PowerOfTwo {
    pub fn new(d: u64) -> PowerOfTwo {
        assert!(d.is_power_of_two(), "{d} is not a power of two");
        PowerOfTwo {
            shift: d.trailing_zeros(),
        }
    }

    /// `n / d`.
    #[inline(always)]
    pub fn quotient(self, n: u64) -> u64 {
        n >> self.shift
    }

    /// `n.div_ceil(d)`.
    #[inline(always)]
    pub fn quotient_ceil(self, n: u64) -> u64 {
        (n >> self.shift) + (!self.divides(n)) as u64
    }

    /// `n % d == 0`.
    #[inline(always)]
    pub fn divides(self, n: u64) -> bool {
        n & ((1u64 << self.shift) - 1) == 0
    }

    pub fn get(self) -> u64 {
        1 << self.shift
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn power_of_two_equals_division() {
        for shift in [0u32, 9, 12, 16, 63] {
            let d = 1u64 << shift;
            let p = PowerOfTwo::new(d);
            assert_eq!(p.get(), d);
            for n in [
                0,
                1,
                d - 1,
                d,
                d.wrapping_add(1),
                d.wrapping_mul(3).wrapping_add(5),
                u64::MAX - 1,
                u64::MAX,
            ] {
                assert_eq!(p.quotient(n), n / d, "{n} / {d}");
                assert_eq!(p.quotient_ceil(n), n.div_ceil(d), "{n} / {d} up");
                assert_eq!(p.divides(n), n.is_multiple_of(d), "{d} | {n}");
            }
        }
    }

    fn check(d: u32, n: u32) {
        let v = Divisor::new(d);
        assert_eq!(v.quotient(n), n / d, "{n} / {d}");
        assert_eq!(v.remainder(n), n % d, "{n} % {d}");
    }

    #[test]
    fn edges() {
        for d in [
            1,
            2,
            3,
            5,
            6,
            7,
            24,
            96,
            384,
            1000,
            1 << 31,
            (1 << 31) + 1,
            u32::MAX - 1,
            u32::MAX,
        ] {
            for n in [
                0,
                1,
                d - 1,
                d,
                d.wrapping_add(1),
                u32::MAX - 1,
                u32::MAX,
                u32::MAX / d * d,
            ] {
                check(d, n);
            }
        }
    }

    proptest::proptest! {
        #[test]
        fn equals_division(d in 1u32.., n: u32) {
            check(d, n);
        }

        #[test]
        fn equals_division_small_divisors(d in 1u32..5000, n: u32) {
            check(d, n);
        }
    }
}
