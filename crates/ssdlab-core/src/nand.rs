//! The NAND backend: dies on channels, each die and each channel bus with its own timeline.
//!
//! Read = tR on the die, then data out over the channel bus. Program = data in over the bus,
//! then tPROG on the die; in cache mode the next page's data-in overlaps the current tPROG
//! (the cache register is free once the page register has taken the previous page). Erase =
//! tBERS. A multi-plane operation costs one array time plus `multi_plane_overhead_pct`
//! (nand-parts.toml: "two pages (one per plane) in about the time of one; measured overhead
//! about 2% versus the same two pages on two separate dies").
//!
//! Pages are not alike: the lower page of an MLC wordline reads and programs faster than its
//! upper page (a TLC wordline has three types, or programs them in one shot). A part with
//! page types ([`PageTypes`]) times each operation by the type of the page it touches.

use crate::config::{Geometry, NandConfig};
use crate::divisor::Divisor;
use crate::time::{SimDuration, SimTime, TransferRate};
use crate::timeline::GapTimeline;

pub use crate::config::paired_lower_page;

/// What `Nand::program` is given for a metadata program (no unit): `ftl::UNMAPPED`.
pub const NO_UNIT: u32 = u32::MAX;

/// Operation counts of the NAND array.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct NandCounters {
    /// Pages (one plane each) read from the array.
    pub page_reads: u64,
    /// Pages (one plane each) programmed.
    pub page_programs: u64,
    /// Multi-plane block erases (one block in each plane).
    pub block_erases: u64,
    /// Bytes moved over all channel buses.
    pub bus_bytes: u64,
    /// Array time of reads, programs and erases, summed over dies (ns): what the NAND's
    /// supply currents flow for (`crate::power`).
    pub read_array_ns: u64,
    pub program_array_ns: u64,
    pub erase_ns: u64,
}

#[derive(Clone, Debug, Default)]
struct Die {
    /// The array (and page register) is busy until then.
    array_free: SimTime,
    /// The cache register can take new program data from then on.
    cache_register_free: SimTime,
}

/// The most page types a part has (TLC: lower, middle, upper).
pub const MAX_PAGE_TYPES: usize = 3;

/// Derived per-operation timing, in nanoseconds.
#[derive(Clone, Debug)]
pub struct NandTiming {
    /// The mean array read and program times (the part's).
    pub read_ns: u64,
    pub program_ns: u64,
    /// Each page type's array program time (every entry the mean for a part without types; a
    /// one-shot part's programs take `program_ns`).
    pub program_ns_by_type: [u64; MAX_PAGE_TYPES],
    /// The array time of reading the pages of the types in a mask (bit i: type i), one after
    /// another: a run of units over a one-shot wordline's three pages reads all three.
    read_ns_by_mask: [u64; 1 << MAX_PAGE_TYPES],
    pub erase_ns: u64,
    pub bus_bytes_per_s: u64,
    pub bus_command_ns: u64,
    /// Array time of a multi-plane operation relative to one plane, in parts per thousand.
    pub multi_plane_permille: u64,
    pub cache_program: bool,
}

impl NandTiming {
    pub fn new(cfg: &NandConfig) -> Self {
        let ns = |us: f64| (us * 1e3).round() as u64;
        let by_type = |factors: &[f64], mean: f64| {
            std::array::from_fn(|i| ns(mean * factors.get(i).copied().unwrap_or(1.0)))
        };
        let read_ns_by_type: [u64; MAX_PAGE_TYPES] =
            by_type(&cfg.read_page_type_factors, cfg.read_page_us);
        let read_ns_by_mask = std::array::from_fn(|mask| {
            (0..MAX_PAGE_TYPES)
                .filter(|t| mask & (1 << t) != 0)
                .map(|t| read_ns_by_type[t])
                .sum()
        });
        NandTiming {
            read_ns: ns(cfg.read_page_us),
            program_ns: ns(cfg.program_page_us),
            read_ns_by_mask,
            program_ns_by_type: by_type(&cfg.program_page_type_factors, cfg.program_page_us),
            erase_ns: (cfg.erase_block_us * 1e3).round() as u64,
            bus_bytes_per_s: (cfg.bus_mb_per_s * 1e6).round() as u64,
            bus_command_ns: cfg.bus_command_ns,
            multi_plane_permille: 1000 + (cfg.multi_plane_overhead_pct * 10.0).round() as u64,
            cache_program: cfg.cache_program,
        }
    }

    fn array_ns(&self, base_ns: u64, planes: u32) -> u64 {
        if planes > 1 {
            base_ns * self.multi_plane_permille / 1000
        } else {
            base_ns
        }
    }

    /// Bus time of a transfer of `bytes` with its command cycles.
    pub fn bus_ns(&self, bytes: u64) -> SimDuration {
        self.on_bus(crate::time::transfer_duration(bytes, self.bus_bytes_per_s))
    }

    /// Bus time of data that takes `transfer` on the wire: with its command cycles (`Nand`
    /// finds `transfer` through its [`TransferRate`]s).
    #[inline]
    fn on_bus(&self, transfer: SimDuration) -> SimDuration {
        SimDuration(self.bus_command_ns + transfer.ns())
    }
}

/// Which type each page is, from the number of a physical unit in it (the FTL's layout:
/// `(die * blocks_per_die + block) * units_per_block + pu * units_per_pu + slot`, a PU being
/// one page in each plane, so a block's PU `p` is page `p` of each of its planes).
#[derive(Clone, Copy, Debug)]
pub struct PageTypes {
    /// 1 (all pages alike), 2 or 3.
    count: u32,
    one_shot: bool,
    units_per_block: Divisor,
    units_per_pu: Divisor,
    units_per_page: Divisor,
    /// One-shot: the units of one page type in a page (the wordline).
    units_per_type: Divisor,
}

impl PageTypes {
    pub fn new(cfg: &NandConfig, g: &Geometry) -> Self {
        let count = (cfg.read_page_type_factors.len() as u32).max(1);
        PageTypes {
            count,
            one_shot: cfg.one_shot_program,
            units_per_block: Divisor::new(g.units_per_block),
            units_per_pu: Divisor::new(g.units_per_pu),
            units_per_page: Divisor::new(g.units_per_page),
            units_per_type: Divisor::new((g.units_per_page / count).max(1)),
        }
    }

    /// The type of the page holding physical unit `ppn` (0 for a part without types).
    #[inline]
    pub fn of(&self, ppn: u32) -> u32 {
        if self.count == 1 {
            return 0;
        }
        if self.one_shot {
            self.units_per_type
                .quotient(self.units_per_page.remainder(ppn))
        } else {
            let page = self
                .units_per_pu
                .quotient(self.units_per_block.remainder(ppn));
            crate::config::page_type(page, self.count)
        }
    }

    /// The types a run of units `first..=last` of one PU reads (bit i: type i).
    #[inline]
    pub fn of_run(&self, first: u32, last: u32) -> u8 {
        if self.count == 1 {
            return 1;
        }
        if !self.one_shot {
            return 1 << self.of(first);
        }
        let all = (1u8 << self.count) - 1;
        let mut mask = 0;
        for ppn in first..=last {
            mask |= 1 << self.of(ppn);
            if mask == all {
                break;
            }
        }
        mask
    }
}

/// The NAND array of one drive.
#[derive(Clone, Debug)]
pub struct Nand {
    pub timing: NandTiming,
    pub page_types: PageTypes,
    page_size_bytes: u64,
    channels: Divisor,
    dies: Vec<Die>,
    buses: Vec<GapTimeline>,
    /// The channel buses' rate, for data in (programs) and data out (reads) apart: each
    /// mostly moves one size (see [`TransferRate`]).
    bus_in: TransferRate,
    bus_out: TransferRate,
    pub counters: NandCounters,
}

impl Nand {
    pub fn new(cfg: &NandConfig, geometry: &Geometry) -> Self {
        let timing = NandTiming::new(cfg);
        Nand {
            page_types: PageTypes::new(cfg, geometry),
            bus_in: TransferRate::new(timing.bus_bytes_per_s),
            bus_out: TransferRate::new(timing.bus_bytes_per_s),
            timing,
            page_size_bytes: cfg.page_size_bytes as u64,
            channels: Divisor::new(geometry.channels),
            dies: vec![Die::default(); geometry.dies as usize],
            buses: vec![GapTimeline::default(); geometry.channels as usize],
            counters: NandCounters::default(),
        }
    }

    #[inline]
    fn channel_of(&self, die: u32) -> usize {
        self.channels.remainder(die) as usize
    }

    /// Program `planes` pages (one per plane) on `die`, the PU whose first unit is
    /// `first_ppn` ([`NO_UNIT`] for metadata: the part's mean time), data available from
    /// `data_ready`; without `data_in` the data is already in the die's page register
    /// (copy-back) and only the command crosses the bus. Returns (when the die can take its next operation, when
    /// the array finishes): in cache mode the next operation may start its data-in as soon as
    /// this one's array time begins.
    pub fn program(
        &mut self,
        now: SimTime,
        data_ready: SimTime,
        die: u32,
        planes: u32,
        data_in: bool,
        first_ppn: u32,
    ) -> (SimTime, SimTime) {
        let bytes = if data_in {
            planes as u64 * self.page_size_bytes
        } else {
            0
        };
        let channel = self.channel_of(die);
        let d = &mut self.dies[die as usize];
        let register_free = if self.timing.cache_program {
            d.cache_register_free
        } else {
            d.array_free
        };
        let earliest = data_ready.max(now).max(register_free);
        let transfer = self.timing.on_bus(self.bus_in.duration(bytes));
        let data_in_start = self.buses[channel].reserve(now, earliest, transfer);
        let array_start = (data_in_start + transfer).max(d.array_free);
        let base = if first_ppn == NO_UNIT || self.page_types.one_shot {
            self.timing.program_ns
        } else {
            self.timing.program_ns_by_type[self.page_types.of(first_ppn) as usize]
        };
        let array = self.timing.array_ns(base, planes);
        let array_end = array_start + SimDuration(array);
        d.array_free = array_end;
        d.cache_register_free = if self.timing.cache_program {
            array_start
        } else {
            array_end
        };
        self.counters.page_programs += planes as u64;
        self.counters.program_array_ns += array;
        self.counters.bus_bytes += bytes;
        (d.cache_register_free, array_end)
    }

    /// Read `planes` pages on `die`, of the page types in `types` ([`PageTypes::of_run`]),
    /// and move `bytes_out` of them to the controller. Returns when the data is in the
    /// controller.
    pub fn read(
        &mut self,
        now: SimTime,
        die: u32,
        planes: u32,
        bytes_out: u64,
        types: u8,
    ) -> SimTime {
        let channel = self.channel_of(die);
        let d = &mut self.dies[die as usize];
        let array_start = now.max(d.array_free);
        let array = self
            .timing
            .array_ns(self.timing.read_ns_by_mask[types as usize], planes);
        let array_end = array_start + SimDuration(array);
        let transfer = self.timing.on_bus(self.bus_out.duration(bytes_out));
        let out_start = self.buses[channel].reserve(now, array_end, transfer);
        let out_end = out_start + transfer;
        // The page register holds the data until it is out.
        d.array_free = out_end;
        d.cache_register_free = out_end;
        self.counters.page_reads += planes as u64;
        self.counters.read_array_ns += array;
        self.counters.bus_bytes += bytes_out;
        out_end
    }

    /// Erase one block in each plane of `die`. Returns when the erase finishes.
    pub fn erase(&mut self, now: SimTime, die: u32) -> SimTime {
        let d = &mut self.dies[die as usize];
        let start = now.max(d.array_free);
        let end = start + SimDuration(self.timing.erase_ns);
        d.array_free = end;
        d.cache_register_free = end;
        self.counters.block_erases += 1;
        self.counters.erase_ns += self.timing.erase_ns;
        end
    }

    /// When `die` finishes everything decided so far.
    pub fn die_free_at(&self, die: u32) -> SimTime {
        self.dies[die as usize].array_free
    }

    pub fn bus_busy_ns(&self) -> u64 {
        self.buses.iter().map(|b| b.busy_ns_total).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::tests::small;

    fn m500_120_nand() -> (NandConfig, Geometry) {
        // imft-20nm-128gbit-mlc: 16 KiB pages, tPROG 1600 us, tR 115 us; 8 dies on 8 channels.
        let mut c = small();
        c.nand.channels = 8;
        c.nand.dies = 8;
        c.nand.page_size_bytes = 16384;
        c.nand.pages_per_block = 512;
        c.nand.blocks_per_plane = 1024;
        c.nand.program_page_us = 1600.0;
        c.nand.read_page_us = 115.0;
        c.nand.bus_mb_per_s = 330.0;
        c.ftl.user_capacity_bytes = 120_000_000_000;
        let g = c.validate().unwrap();
        (c.nand, g)
    }

    #[test]
    fn sequential_program_ceiling_m500_120() {
        // 8 dies x 2 planes x 16 KiB / (1600 us x 1.02): about 161 MB/s.
        let (cfg, g) = m500_120_nand();
        let mut nand = Nand::new(&cfg, &g);
        let programs_per_die = 200u64;
        let mut end = SimTime::ZERO;
        for _ in 0..programs_per_die {
            for die in 0..8 {
                end = end.max(
                    nand.program(SimTime::ZERO, SimTime::ZERO, die, 2, true, NO_UNIT)
                        .1,
                );
            }
        }
        let bytes = programs_per_die * 8 * 2 * 16384;
        let mb_per_s = bytes as f64 / end.seconds_f64() / 1e6;
        let ceiling = 8.0 * 2.0 * 16384.0 / (1600e-6 * 1.02) / 1e6;
        assert!(
            (mb_per_s - ceiling).abs() / ceiling < 0.01,
            "{mb_per_s} vs {ceiling}"
        );
    }

    #[test]
    fn cache_program_overlaps_transfer() {
        let (mut cfg, g) = m500_120_nand();
        cfg.cache_program = true;
        let mut cached = Nand::new(&cfg, &g);
        cfg.cache_program = false;
        let mut plain = Nand::new(&cfg, &g);
        let (mut a, mut b) = (SimTime::ZERO, SimTime::ZERO);
        for _ in 0..10 {
            a = cached
                .program(SimTime::ZERO, SimTime::ZERO, 0, 2, true, NO_UNIT)
                .1;
            b = plain
                .program(SimTime::ZERO, SimTime::ZERO, 0, 2, true, NO_UNIT)
                .1;
        }
        // 32 KiB at 330 MB/s is ~99 us per page pair; without cache mode each one adds it.
        let transfer_ns = cached.timing.bus_ns(32768).ns();
        assert_eq!(b.ns() - a.ns(), 9 * transfer_ns);
    }

    #[test]
    fn two_plane_costs_two_percent_more_than_two_dies() {
        let (cfg, g) = m500_120_nand();
        let mut nand = Nand::new(&cfg, &g);
        let two_plane = nand
            .program(SimTime::ZERO, SimTime::ZERO, 0, 2, true, NO_UNIT)
            .1;
        let single = nand
            .program(SimTime::ZERO, SimTime::ZERO, 1, 1, true, NO_UNIT)
            .1;
        let array_two = two_plane.ns() - nand.timing.bus_ns(32768).ns();
        let array_one = single.ns() - nand.timing.bus_ns(16384).ns();
        assert_eq!(array_two * 100, array_one * 102);
    }

    #[test]
    fn dies_on_one_channel_share_its_bus() {
        let (mut cfg, mut g) = m500_120_nand();
        cfg.channels = 1;
        g.channels = 1;
        let mut nand = Nand::new(&cfg, &g);
        let a = nand.read(SimTime::ZERO, 0, 1, 16384, 1);
        let b = nand.read(SimTime::ZERO, 1, 1, 16384, 1);
        // Both tR run in parallel; the second data-out waits for the first.
        assert_eq!(b.ns() - a.ns(), nand.timing.bus_ns(16384).ns());
    }

    /// The M500's part with its page types as tools/gen_presets.py writes them.
    fn m500_with_page_types() -> (NandConfig, Geometry) {
        let (mut cfg, _) = m500_120_nand();
        cfg.read_page_us = 101.0;
        cfg.program_page_us = 1860.0;
        // FEMU's L95B ratios (48/64 us read, 850/2300 us program) scaled to a mean of 1 over
        // the block's 257 lower and 255 upper pages: 86.6/115.5 us and 1005.7/2721.0 us.
        cfg.read_page_type_factors = vec![0.8576, 1.1435];
        cfg.program_page_type_factors = vec![0.5407, 1.4629];
        let mut c = small();
        c.nand = cfg;
        c.ftl.user_capacity_bytes = 120_000_000_000;
        let g = c.validate().unwrap();
        (c.nand, g)
    }

    #[test]
    fn page_types_split_program_times_and_keep_the_mean() {
        let (cfg, g) = m500_with_page_types();
        let mut nand = Nand::new(&cfg, &g);
        let mut times = Vec::new();
        for page in 0..g.pus_per_block {
            let before = nand.counters.program_array_ns;
            let ppn = page * g.units_per_pu;
            nand.program(SimTime::ZERO, SimTime::ZERO, 0, 1, true, ppn);
            times.push(nand.counters.program_array_ns - before);
        }
        // The lower page of a wordline programs faster than its upper page (FEMU's L95B
        // profile); pages 0, 1, 2 are lower, 3 upper, 4 lower.
        assert_eq!(times[0], 1_005_702);
        assert_eq!(times[3], 2_720_994);
        assert_eq!(times[4], 1_005_702);
        // Over a block the mean is the part's program time (1860 us) within 0.01%.
        let mean = times.iter().sum::<u64>() as f64 / times.len() as f64;
        assert!((mean - 1_860_000.0).abs() < 186.0, "{mean}");
        // Without types every page takes the part's time.
        let (plain, g) = m500_120_nand();
        let mut nand = Nand::new(&plain, &g);
        for page in [0, 3] {
            let end = nand.program(
                SimTime::ZERO,
                SimTime::ZERO,
                page,
                1,
                true,
                page * g.units_per_pu,
            );
            assert_eq!(end.1.ns() - nand.timing.bus_ns(16384).ns(), 1_600_000);
        }
    }

    #[test]
    fn page_types_time_reads_by_the_page_read() {
        let (cfg, g) = m500_with_page_types();
        let mut nand = Nand::new(&cfg, &g);
        let types = nand.page_types;
        let lower = types.of_run(0, 0);
        let upper = types.of_run(3 * g.units_per_pu, 3 * g.units_per_pu + 1);
        assert_eq!((lower, upper), (1, 2));
        let out = nand.read(SimTime::ZERO, 0, 1, 0, lower);
        assert_eq!(out.ns(), 86_618 + nand.timing.bus_command_ns);
        let out = nand.read(SimTime::ZERO, 1, 1, 0, upper);
        assert_eq!(out.ns(), 115_494 + nand.timing.bus_command_ns);
        // A metadata program (no unit) takes the part's mean.
        let (_, end) = nand.program(SimTime::ZERO, SimTime::ZERO, 2, 1, false, NO_UNIT);
        assert_eq!(end.ns(), 1_860_000 + nand.timing.bus_command_ns);
    }

    #[test]
    fn a_one_shot_wordline_reads_each_page_type_it_touches() {
        // A one-shot TLC page (the wordline) of 48 KiB: 12 units, 4 of each type in turn.
        let (mut cfg, _) = m500_120_nand();
        cfg.page_size_bytes = 3 * 16384;
        cfg.read_page_us = 60.0;
        cfg.read_page_type_factors = vec![50.0 / 60.0, 1.0, 70.0 / 60.0];
        cfg.one_shot_program = true;
        cfg.program_page_us = 900.0;
        let mut c = small();
        c.nand = cfg;
        c.ftl.user_capacity_bytes = 100_000_000_000;
        let g = c.validate().unwrap();
        let mut nand = Nand::new(&c.nand, &g);
        let types = nand.page_types;
        assert_eq!(
            [types.of(0), types.of(4), types.of(11), types.of(12)],
            [0, 1, 2, 0]
        );
        assert_eq!(types.of_run(0, 3), 1);
        assert_eq!(types.of_run(2, 5), 3);
        assert_eq!(types.of_run(0, 11), 7);
        let whole = nand.read(SimTime::ZERO, 0, 1, 0, types.of_run(0, 11));
        assert_eq!(whole.ns(), 180_000 + nand.timing.bus_command_ns);
        // Every program of the wordline takes the one-shot time, wherever it starts.
        let (_, end) = nand.program(
            SimTime::ZERO,
            SimTime::ZERO,
            1,
            1,
            false,
            3 * g.units_per_pu,
        );
        assert_eq!(end.ns(), 900_000 + nand.timing.bus_command_ns);
    }
}
