//! The IOs of a job, in order: offsets (sequential, uniform, zipf, pareto scattered over the
//! span), sizes and the read/write/trim mix, from the job's own random stream.

use super::compile::{CompiledJob, Pattern};
use super::distribution::Distribution;
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
    /// IOs issued: `rw=rand...:nr` draws a new offset every nr of them.
    pub(super) issued: u64,
    /// zonemode=strided: the current zone's start and the bytes transferred in it.
    zone_start: u64,
    zone_bytes: u64,
    /// random_distribution=sequence: each direction's IOs so far (read, write, trim), over the
    /// whole job as fio counts them.
    sequence_ios: [u64; 3],
    /// A strided sequence has passed the span's end: the job issues no more (fio ends it).
    pub(super) ended: bool,
    /// IOs drawn before they are issued (`LOOKAHEAD` of them), so the drive can start loading
    /// their map entries while earlier ones run. Only jobs whose IOs depend on the random
    /// stream alone draw ahead (random offsets, no `:nr`, no zones): the same IOs come out in
    /// the same order either way, whatever restarts or ends the job.
    ahead: Option<Drawn>,
}

/// IOs drawn ahead: a ring of `RING` places, `len` of them from `head`. A taken
/// `Option<VecDeque>` read through `range` and `flat_map` cost about 90 instructions more per
/// host IO, a growable ring indexed by a mask 45M more over 1.2M host writes (docs/performance.md).
struct Drawn {
    ios: Box<[(IoKind, u64, u64); RING]>,
    head: usize,
    len: usize,
}

/// The ring's places: a power of two above `LOOKAHEAD`.
const RING: usize = 128;
const _: () = assert!(RING.is_power_of_two() && RING > LOOKAHEAD);

impl Drawn {
    /// The IO `place` places after the first.
    #[inline]
    fn at(&self, place: usize) -> (IoKind, u64, u64) {
        debug_assert!(place < self.len);
        self.ios[(self.head + place) & (RING - 1)]
    }
}

/// IOs drawn ahead: enough that a burst of submissions (a program unit's worth of writes
/// completing at once) finds its map entries loaded (see `JobSource::issue`).
pub(super) const LOOKAHEAD: usize = 64;

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
            issued: 0,
            zone_start: 0,
            zone_bytes: 0,
            sequence_ios: [0; 3],
            ended: false,
            // A sequence is not drawn ahead: the IO that passes the span's end ends the job.
            ahead: (job.pattern == Pattern::Random
                && job.ios_per_offset <= 1
                && job.zones.is_none()
                && !matches!(job.distribution, Distribution::Sequence { .. }))
            .then(|| Drawn {
                ios: Box::new([(IoKind::Read, 0, 0); RING]),
                head: 0,
                len: 0,
            }),
        }
    }

    /// The next IO: (kind, offset, length).
    pub(super) fn next(&mut self, job: &CompiledJob) -> (IoKind, u64, u64) {
        let Some(mut ahead) = self.ahead.take() else {
            return self.draw(job);
        };
        while ahead.len <= LOOKAHEAD {
            ahead.ios[(ahead.head + ahead.len) & (RING - 1)] = self.draw(job);
            ahead.len += 1;
        }
        let io = ahead.at(0);
        ahead.head = (ahead.head + 1) & (RING - 1);
        ahead.len -= 1;
        self.ahead = Some(ahead);
        io
    }

    /// The IOs at places `places` after the one `next` returned last (0: the one it returns
    /// next); none if this job does not draw ahead.
    pub(super) fn coming(
        &self,
        places: std::ops::Range<usize>,
    ) -> impl Iterator<Item = (IoKind, u64, u64)> + '_ {
        let ahead = self.ahead.as_ref();
        let places = if ahead.is_some() { places } else { 0..0 };
        places.map(move |place| ahead.expect("drawing ahead").at(place))
    }

    fn draw(&mut self, job: &CompiledJob) -> (IoKind, u64, u64) {
        let size = if let Some((lo, hi)) = job.bs_range {
            // fio's bsrange: uniform in the range, rounded down to a multiple of the smallest.
            (lo + self.rng.below(hi - lo + 1)) / lo * lo
        } else {
            self.draw_size(&job.sizes)
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
        // Writes and trims with sizes of their own (bs=READ,WRITE,TRIM or bssplit lists).
        let own = match kind {
            IoKind::Write => job.write_sizes.as_deref(),
            IoKind::Trim => job.trim_sizes.as_deref(),
            _ => None,
        };
        let size = own.map_or(size, |list| self.draw_size(list));
        self.issued += 1;
        if let Some(zones) = job.zones {
            return (kind, job.span_start + self.in_zone(job, zones, size), size);
        }
        let offset = match job.pattern {
            Pattern::Sequential => {
                if self.cursor.saturating_add(size) > job.span_bytes {
                    // Past the end (or before the start, going backwards): wrap.
                    self.cursor = if self.cursor >= job.span_bytes && job.seq_add < 0 {
                        (job.span_bytes - size) / job.align_bytes * job.align_bytes
                    } else {
                        0
                    };
                }
                let o = self.cursor;
                // fio's rw=read:nr adds nr to the next offset (a negative nr goes backwards; a
                // step below the start wraps to the end, through the check above).
                self.cursor = (self.cursor + size).wrapping_add_signed(job.seq_add);
                if job.seq_add < 0 && self.cursor > o + size {
                    self.cursor = u64::MAX; // went below zero: wrap to the end next time
                }
                o
            }
            Pattern::Random
                if job.ios_per_offset > 1
                    && !(self.issued - 1).is_multiple_of(job.ios_per_offset) =>
            {
                // fio's rw=randread:nr: the IOs after a random offset follow it in sequence.
                if self.cursor + size > job.span_bytes {
                    self.cursor = 0;
                }
                let o = self.cursor;
                self.cursor += size;
                o
            }
            Pattern::Random => {
                let slot = match &job.distribution {
                    Distribution::Uniform => self.rng.below(self.slots),
                    Distribution::Zoned(lists) => {
                        let zones = &lists[kind as usize % 3];
                        let r = self.rng.below(100) as u32;
                        let &(_, first, n) = zones
                            .iter()
                            .find(|z| r < z.0)
                            .expect("accesses add up to 100");
                        first + self.rng.below(n)
                    }
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
                    Distribution::Sequence { blocks, stride } => {
                        let n = &mut self.sequence_ios[kind as usize % 3];
                        let len = blocks.len() as u64;
                        let mut b = blocks[(*n % len) as usize];
                        if *stride {
                            b += *n / len * len;
                        }
                        *n += 1;
                        if b.saturating_mul(job.align_bytes).saturating_add(size) > job.span_bytes {
                            self.ended = true;
                            return (kind, job.span_start, size);
                        }
                        b
                    }
                };
                // The slot's offset, or the last aligned one the IO fits at: only that needs
                // a division (one per host IO otherwise, 10 to 18 cycles on Zen 4).
                let (o, last) = (slot * job.align_bytes, job.span_bytes - size);
                let o = if o <= last {
                    o
                } else {
                    last / job.align_bytes * job.align_bytes
                };
                self.cursor = o + size;
                o
            }
        };
        (kind, job.span_start + offset, size)
    }

    /// A new pass of the job (fio's loops): from the span's start again; the random stream
    /// goes on.
    pub(super) fn restart(&mut self) {
        self.cursor = 0;
        self.issued = 0;
        self.zone_start = 0;
        self.zone_bytes = 0;
    }

    /// fio's zonemode=strided: the IO's offset in the span. After `size` bytes in a zone the
    /// next zone starts `range + skip` further on (at the start again past the end);
    /// sequential IO runs through the zone's range (from its start again at its end), random
    /// IO lands anywhere in it.
    fn in_zone(&mut self, job: &CompiledJob, (size, range, skip): (u64, u64, u64), io: u64) -> u64 {
        if self.zone_bytes >= size {
            self.zone_bytes = 0;
            self.zone_start += range + skip;
            if self.zone_start >= job.span_bytes {
                self.zone_start = 0;
            }
            self.cursor = self.zone_start;
        }
        let end = (self.zone_start + range).min(job.span_bytes);
        let first = self.zone_start.min(end.saturating_sub(io));
        let o = match job.pattern {
            Pattern::Sequential => {
                if self.cursor < first || self.cursor + io > end {
                    self.cursor = first;
                }
                let o = self.cursor;
                self.cursor += io;
                o
            }
            Pattern::Random => {
                let slots = ((end - first).saturating_sub(io) / job.align_bytes) + 1;
                first + self.rng.below(slots) * job.align_bytes
            }
        };
        self.zone_bytes += io;
        o
    }

    /// A size from (bytes, cumulative weight) pairs: the one size without a draw.
    fn draw_size(&mut self, sizes: &[(u64, u32)]) -> u64 {
        if let [(only, _)] = sizes {
            return *only;
        }
        let r = self.rng.below(100) as u32;
        sizes.iter().find(|&&(_, cum)| r < cum).unwrap().0
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::Job;

    /// fio's sequence distribution (examples/sequence-distribution.fio): blocks 2, 0, 1 again
    /// and again; with random_sequence_stride, 2, 0, 1, then 5, 3, 4 (the group advancing by
    /// the sequence's length), and the IO past the span's end ends the job. Each direction
    /// counts its own IOs.
    #[test]
    fn a_sequence_distribution_goes_to_its_blocks_in_order_as_fio_does() {
        let blocks = |stride: bool, rw: &str, n: usize| {
            let job = Job {
                rw: rw.into(),
                bs: "4k".into(),
                size: Some("48k".into()),
                random_distribution: "sequence:2,0,1".into(),
                random_sequence_stride: stride,
                ..Job::default()
            };
            let c = job.compile(1 << 30).unwrap();
            let mut g = Generator::new(&c, 1, 0);
            assert!(g.ahead.is_none(), "a sequence is not drawn ahead");
            let mut ios = Vec::new();
            for _ in 0..n {
                let (k, o, _) = g.next(&c);
                if g.ended {
                    break;
                }
                ios.push((k, o / 4096));
            }
            ios
        };
        let reads = |ios: Vec<(IoKind, u64)>| ios.into_iter().map(|(_, b)| b).collect::<Vec<_>>();
        assert_eq!(reads(blocks(false, "randread", 6)), [2, 0, 1, 2, 0, 1]);
        assert_eq!(
            reads(blocks(false, "randread", 300)).len(),
            300,
            "no end without a stride"
        );
        // 48 KiB is 12 blocks: four groups of three, then the job ends.
        assert_eq!(
            reads(blocks(true, "randread", 100)),
            [2, 0, 1, 5, 3, 4, 8, 6, 7, 11, 9, 10]
        );
        // A read/write mix: each direction walks the pattern on its own count.
        let mixed = blocks(true, "randrw", 8);
        for kind in [IoKind::Read, IoKind::Write] {
            let own: Vec<u64> = mixed
                .iter()
                .filter(|io| io.0 == kind)
                .map(|io| io.1)
                .collect();
            assert_eq!(own, [2, 0, 1, 5, 3, 4, 8, 6][..own.len()], "{kind:?}");
        }
    }

    /// Drawing ahead (for the map prefetches) changes nothing a job issues: the same IOs in
    /// the same order as drawing each when it is issued, across a restart (fio's next pass),
    /// and `coming` shows the ones to come.
    #[test]
    fn drawing_ahead_issues_the_same_ios() {
        let job = Job {
            rw: "randrw".into(),
            rwmixread: 30,
            bssplit: Some("4k/50:8k/30:64k/20".into()),
            random_distribution: "zoned:60/10:40/".into(),
            number_ios: Some(1),
            ..Job::default()
        };
        let c = job.compile(1 << 30).unwrap();
        let mut ahead = Generator::new(&c, 9, 0);
        let mut plain = Generator::new(&c, 9, 0);
        assert!(ahead.ahead.is_some(), "a random job draws ahead");
        plain.ahead = None;
        assert_eq!(ahead.next(&c), plain.next(&c));
        let coming: Vec<_> = ahead.coming(0..LOOKAHEAD).collect();
        assert_eq!(coming.len(), LOOKAHEAD);
        for (i, io) in coming.into_iter().enumerate() {
            assert_eq!(io, plain.next(&c), "coming() shows IO {i} to come");
            assert_eq!(ahead.next(&c), io);
        }
        for i in 0..10_000 {
            if i == 5_000 {
                ahead.restart();
                plain.restart();
            }
            assert_eq!(ahead.next(&c), plain.next(&c), "IO {i}");
        }
        // Sequential jobs do not draw ahead (their offsets follow the pass's cursor).
        let seq = Job {
            rw: "write".into(),
            ..Job::default()
        };
        let c = seq.compile(1 << 30).unwrap();
        let mut g = Generator::new(&c, 1, 0);
        g.next(&c);
        assert_eq!(g.coming(0..LOOKAHEAD).count(), 0);
    }
}
