//! What the host sees: latency histograms (HDR-style, log-linear buckets), per-interval
//! throughput, and per-operation summaries.

use serde::Serialize;

/// Sub-bucket bits: values are kept to within 1/64 (1.6%) of their true value.
const PRECISION_BITS: u32 = 7;
const HALF: u64 = 1 << (PRECISION_BITS - 1);
const BUCKETS: usize = (1 << PRECISION_BITS) + (64 - PRECISION_BITS as usize) * HALF as usize;

/// A log-linear histogram of nanosecond values: exact below 128 ns, 64 sub-buckets per power of
/// two above. Fixed size, no allocation after construction.
#[derive(Clone, Debug)]
pub struct Histogram {
    counts: Vec<u64>,
    pub count: u64,
    pub sum: u128,
    pub sum_squares: f64,
    pub min: u64,
    pub max: u64,
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram {
            counts: vec![0; BUCKETS],
            count: 0,
            sum: 0,
            sum_squares: 0.0,
            min: u64::MAX,
            max: 0,
        }
    }
}

#[inline]
fn bucket_of(v: u64) -> usize {
    if v < (1 << PRECISION_BITS) {
        return v as usize;
    }
    let e = 63 - v.leading_zeros(); // >= PRECISION_BITS
    let m = v >> (e - (PRECISION_BITS - 1)); // in [HALF, 2 HALF)
    (1 << PRECISION_BITS) + (e - PRECISION_BITS) as usize * HALF as usize + (m - HALF) as usize
}

/// Lowest value and width of bucket `i`.
fn bucket_range(i: usize) -> (u64, u64) {
    if i < (1 << PRECISION_BITS) {
        return (i as u64, 1);
    }
    let j = i - (1 << PRECISION_BITS);
    let e = PRECISION_BITS as u64 + (j as u64 / HALF);
    let m = HALF + j as u64 % HALF;
    let shift = e - (PRECISION_BITS as u64 - 1);
    (m << shift, 1 << shift)
}

impl Histogram {
    #[inline]
    pub fn record(&mut self, v: u64) {
        self.counts[bucket_of(v)] += 1;
        self.count += 1;
        self.sum += v as u128;
        self.sum_squares += (v as f64) * (v as f64);
        self.min = self.min.min(v);
        self.max = self.max.max(v);
    }

    pub fn mean(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.sum as f64 / self.count as f64
        }
    }

    pub fn stddev(&self) -> f64 {
        if self.count < 2 {
            return 0.0;
        }
        let m = self.mean();
        (self.sum_squares / self.count as f64 - m * m)
            .max(0.0)
            .sqrt()
    }

    /// The value below which `q` (0..=1) of the recorded values fall (bucket midpoint, clamped
    /// to the observed min and max).
    pub fn quantile(&self, q: f64) -> u64 {
        if self.count == 0 {
            return 0;
        }
        let rank = ((q * self.count as f64).ceil() as u64).clamp(1, self.count);
        let mut seen = 0;
        for (i, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                let (lo, width) = bucket_range(i);
                return (lo + width / 2).clamp(self.min, self.max);
            }
        }
        self.max
    }

    /// Non-empty buckets: (midpoint, count), in value order.
    pub fn bins(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.counts
            .iter()
            .enumerate()
            .filter(|(_, &c)| c > 0)
            .map(|(i, &c)| {
                let (lo, width) = bucket_range(i);
                (lo + width / 2, c)
            })
    }

    pub fn merge(&mut self, other: &Histogram) {
        for (a, b) in self.counts.iter_mut().zip(&other.counts) {
            *a += b;
        }
        self.count += other.count;
        self.sum += other.sum;
        self.sum_squares += other.sum_squares;
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
    }
}

/// Latency and volume of one kind of operation.
#[derive(Clone, Debug, Default)]
pub struct OpStats {
    pub ios: u64,
    pub bytes: u64,
    pub latency_ns: Histogram,
}

/// Summary of `OpStats` for reports.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct OpSummary {
    pub ios: u64,
    pub bytes: u64,
    pub iops: f64,
    pub mb_per_s: f64,
    pub latency_us_mean: f64,
    pub latency_us_stddev: f64,
    pub latency_us_min: f64,
    pub latency_us_p50: f64,
    pub latency_us_p90: f64,
    pub latency_us_p99: f64,
    pub latency_us_p99_9: f64,
    pub latency_us_p99_99: f64,
    pub latency_us_max: f64,
    /// Completion latency at fio's default percentiles (fio's `clat_ns.percentile`), ns,
    /// keyed as fio keys them ("99.900000").
    pub latency_ns_percentiles: std::collections::BTreeMap<String, u64>,
    /// The latency histogram as fio's json+ "bins": bucket midpoint (ns) -> completions.
    pub latency_ns_bins: std::collections::BTreeMap<u64, u64>,
}

/// fio's default `percentile_list`.
pub const FIO_PERCENTILES: [f64; 17] = [
    1.0, 5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 95.0, 99.0, 99.5, 99.9, 99.95,
    99.99,
];

impl OpStats {
    /// Both classes as one (reads and writes together).
    pub fn merged(&self, other: &OpStats) -> OpStats {
        let mut all = self.clone();
        all.ios += other.ios;
        all.bytes += other.bytes;
        all.latency_ns.merge(&other.latency_ns);
        all
    }

    pub fn record(&mut self, bytes: u64, latency_ns: u64) {
        self.ios += 1;
        self.bytes += bytes;
        self.latency_ns.record(latency_ns);
    }

    pub fn summary(&self, elapsed_s: f64) -> OpSummary {
        let h = &self.latency_ns;
        let us = |ns: u64| ns as f64 / 1e3;
        let per_s = |x: f64| if elapsed_s > 0.0 { x / elapsed_s } else { 0.0 };
        OpSummary {
            ios: self.ios,
            bytes: self.bytes,
            iops: per_s(self.ios as f64),
            mb_per_s: per_s(self.bytes as f64) / 1e6,
            latency_us_mean: h.mean() / 1e3,
            latency_us_stddev: h.stddev() / 1e3,
            latency_us_min: if h.count == 0 { 0.0 } else { us(h.min) },
            latency_us_p50: us(h.quantile(0.50)),
            latency_us_p90: us(h.quantile(0.90)),
            latency_us_p99: us(h.quantile(0.99)),
            latency_us_p99_9: us(h.quantile(0.999)),
            latency_us_p99_99: us(h.quantile(0.9999)),
            latency_us_max: us(h.max),
            latency_ns_percentiles: FIO_PERCENTILES
                .iter()
                .map(|&p| (format!("{p:.6}"), h.quantile(p / 100.0)))
                .collect(),
            latency_ns_bins: h.bins().collect(),
        }
    }
}

/// The FNV-1a offset basis: where a digest of [`IntervalSeries`] starts.
pub const FNV_OFFSET: u64 = 0xcbf29ce484222325;

/// FNV-1a (64 bit) over `values`, each as its 8 little-endian bytes, from `digest`.
pub fn fnv1a<'a>(mut digest: u64, values: impl IntoIterator<Item = &'a u64>) -> u64 {
    for v in values {
        for b in v.to_le_bytes() {
            digest = (digest ^ b as u64).wrapping_mul(0x100000001b3);
        }
    }
    digest
}

/// Per-interval series (column-oriented, one entry per interval).
#[derive(Clone, Debug, Default, Serialize)]
pub struct IntervalSeries {
    pub interval_ns: u64,
    pub read_ios: Vec<u64>,
    pub write_ios: Vec<u64>,
    pub trim_ios: Vec<u64>,
    pub read_bytes: Vec<u64>,
    pub write_bytes: Vec<u64>,
    pub read_latency_ns_sum: Vec<u64>,
    pub write_latency_ns_sum: Vec<u64>,
    /// NAND pages programmed (host, GC and parity) in the interval.
    pub nand_page_programs: Vec<u64>,
    /// Units moved by garbage collection in the interval.
    pub gc_units_copied: Vec<u64>,
    /// Free blocks on the whole drive at the end of the interval.
    pub free_blocks: Vec<u64>,
    /// The drive's energy in the interval, microjoules (0 without a power model): its power
    /// is energy / interval.
    pub energy_uj: Vec<u64>,
    /// The host link's power state at the end of the interval (`power::LinkState` as a
    /// number: 0 active, 1 partial, 2 slumber, 3 DevSleep).
    pub link_state: Vec<u64>,
    /// The drive's temperature at the end of the interval, milli-°C (0 without a heat model).
    pub temperature_mc: Vec<u64>,
    /// 1 when thermal throttling was on at the end of the interval.
    pub throttled: Vec<u64>,
}

impl IntervalSeries {
    pub fn new(interval_ns: u64) -> Self {
        IntervalSeries {
            interval_ns,
            ..Default::default()
        }
    }

    pub fn len(&self) -> usize {
        self.read_ios.len()
    }

    /// FNV-1a over the per-interval write IOs, then the GC copies (each a little-endian u64),
    /// continuing from `digest` (start from [`FNV_OFFSET`]): equal digests, equal results.
    /// The digest the `steady` example prints and the golden tests pin.
    pub fn digest_writes_and_gc(&self, digest: u64) -> u64 {
        fnv1a(digest, self.write_ios.iter().chain(&self.gc_units_copied))
    }

    /// FNV-1a over every performance column, in declaration order (the golden tests'
    /// whole-series check; the power columns, which came later, have [`Self::digest_power`]).
    pub fn digest_all(&self, digest: u64) -> u64 {
        let columns = [
            &self.read_ios,
            &self.write_ios,
            &self.trim_ios,
            &self.read_bytes,
            &self.write_bytes,
            &self.read_latency_ns_sum,
            &self.write_latency_ns_sum,
            &self.nand_page_programs,
            &self.gc_units_copied,
            &self.free_blocks,
        ];
        fnv1a(digest, columns.into_iter().flatten())
    }

    /// FNV-1a over the power columns (energy, link state, temperature, throttling),
    /// continuing from `digest`.
    pub fn digest_power(&self, digest: u64) -> u64 {
        let columns = [
            &self.energy_uj,
            &self.link_state,
            &self.temperature_mc,
            &self.throttled,
        ];
        fnv1a(digest, columns.into_iter().flatten())
    }

    pub fn is_empty(&self) -> bool {
        self.read_ios.is_empty()
    }

    /// Keep the first `n` intervals.
    pub fn truncate(&mut self, n: usize) {
        for v in [
            &mut self.read_ios,
            &mut self.write_ios,
            &mut self.trim_ios,
            &mut self.read_bytes,
            &mut self.write_bytes,
            &mut self.read_latency_ns_sum,
            &mut self.write_latency_ns_sum,
            &mut self.nand_page_programs,
            &mut self.gc_units_copied,
            &mut self.free_blocks,
            &mut self.energy_uj,
            &mut self.link_state,
            &mut self.temperature_mc,
            &mut self.throttled,
        ] {
            v.truncate(n);
        }
    }

    /// Make sure interval `i` exists (every completion asks: the test is inlined, the growth,
    /// once an interval, is not).
    #[inline(always)]
    pub fn ensure(&mut self, i: usize) {
        if self.read_ios.len() <= i {
            self.grow(i);
        }
    }

    #[inline(never)]
    fn grow(&mut self, i: usize) {
        while self.read_ios.len() <= i {
            self.read_ios.push(0);
            self.write_ios.push(0);
            self.trim_ios.push(0);
            self.read_bytes.push(0);
            self.write_bytes.push(0);
            self.read_latency_ns_sum.push(0);
            self.write_latency_ns_sum.push(0);
            self.nand_page_programs.push(0);
            self.gc_units_copied.push(0);
            self.free_blocks.push(0);
            self.energy_uj.push(0);
            self.link_state.push(0);
            self.temperature_mc.push(0);
            self.throttled.push(0);
        }
    }
}

/// For `skip_serializing_if`: a count that is zero is left out (so summaries of runs without
/// it read, and digest, as before it existed).
pub fn is_zero(v: &u64) -> bool {
    *v == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bucket_ranges_cover_values() {
        for v in [
            0u64,
            1,
            127,
            128,
            129,
            255,
            256,
            1000,
            123_456,
            10_000_000_000,
            u64::MAX / 3,
        ] {
            let (lo, w) = bucket_range(bucket_of(v));
            assert!(lo <= v && v < lo + w, "{v} in [{lo}, {})", lo + w);
            assert!(w as f64 / lo.max(1) as f64 <= 1.0 / 64.0 || v < 128);
        }
    }

    #[test]
    fn quantiles_within_precision() {
        let mut h = Histogram::default();
        for v in 1..=100_000u64 {
            h.record(v * 10);
        }
        for (q, exact) in [(0.5, 500_000.0), (0.99, 990_000.0), (0.9999, 999_990.0)] {
            let got = h.quantile(q) as f64;
            assert!(
                (got - exact).abs() / exact < 0.016,
                "q{q}: {got} vs {exact}"
            );
        }
        assert_eq!(h.quantile(1.0), 1_000_000);
        assert_eq!(h.max, 1_000_000);
    }
}
