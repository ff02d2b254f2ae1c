//! The NAND backend: dies on channels, each die and each channel bus with its own timeline.
//!
//! Read = tR on the die, then data out over the channel bus. Program = data in over the bus,
//! then tPROG on the die; in cache mode the next page's data-in overlaps the current tPROG
//! (the cache register is free once the page register has taken the previous page). Erase =
//! tBERS. A multi-plane operation costs one array time plus `multi_plane_overhead_pct`
//! (nand-parts.toml: "two pages (one per plane) in about the time of one; measured overhead
//! about 2% versus the same two pages on two separate dies").

use crate::config::{Geometry, NandConfig};
use crate::time::{SimDuration, SimTime, TransferRate};
use crate::timeline::GapTimeline;

/// The lower page that shares its cells with `page` (a page index within its block), if
/// `page` is the upper page of 2-bit MLC cells: a program of `page` interrupted by a power cut
/// corrupts that lower page too. ASSUMED (the parts' pairing is not published in the
/// reference data): pages 0, 1 and 2 are lower pages, and page p >= 3 odd is the upper page of
/// the cells whose lower page is p - 3; even pages from 4 are lower pages.
pub fn paired_lower_page(page: u32) -> Option<u32> {
    (page >= 3 && page % 2 == 1).then(|| page - 3)
}

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

/// Derived per-operation timing, in nanoseconds.
#[derive(Clone, Debug)]
pub struct NandTiming {
    pub read_ns: u64,
    pub program_ns: u64,
    pub erase_ns: u64,
    pub bus_bytes_per_s: u64,
    pub bus_command_ns: u64,
    /// Array time of a multi-plane operation relative to one plane, in parts per thousand.
    pub multi_plane_permille: u64,
    pub cache_program: bool,
}

impl NandTiming {
    pub fn new(cfg: &NandConfig) -> Self {
        NandTiming {
            read_ns: (cfg.read_page_us * 1e3).round() as u64,
            program_ns: (cfg.program_page_us * 1e3).round() as u64,
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

/// The NAND array of one drive.
#[derive(Clone, Debug)]
pub struct Nand {
    pub timing: NandTiming,
    page_size_bytes: u64,
    channels: crate::divisor::Divisor,
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
            bus_in: TransferRate::new(timing.bus_bytes_per_s),
            bus_out: TransferRate::new(timing.bus_bytes_per_s),
            timing,
            page_size_bytes: cfg.page_size_bytes as u64,
            channels: crate::divisor::Divisor::new(geometry.channels),
            dies: vec![Die::default(); geometry.dies as usize],
            buses: vec![GapTimeline::default(); geometry.channels as usize],
            counters: NandCounters::default(),
        }
    }

    #[inline]
    fn channel_of(&self, die: u32) -> usize {
        self.channels.remainder(die) as usize
    }

    /// Program `planes` pages (one per plane) on `die`, data available from `data_ready`;
    /// without `data_in` the data is already in the die's page register (copy-back) and only
    /// the command crosses the bus. Returns (when the die can take its next operation, when
    /// the array finishes): in cache mode the next operation may start its data-in as soon as
    /// this one's array time begins.
    pub fn program(
        &mut self,
        now: SimTime,
        data_ready: SimTime,
        die: u32,
        planes: u32,
        data_in: bool,
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
        let array = self.timing.array_ns(self.timing.program_ns, planes);
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

    /// Read `planes` pages on `die` and move `bytes_out` of them to the controller.
    /// Returns when the data is in the controller.
    pub fn read(&mut self, now: SimTime, die: u32, planes: u32, bytes_out: u64) -> SimTime {
        let channel = self.channel_of(die);
        let d = &mut self.dies[die as usize];
        let array_start = now.max(d.array_free);
        let array = self.timing.array_ns(self.timing.read_ns, planes);
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
                end = end.max(nand.program(SimTime::ZERO, SimTime::ZERO, die, 2, true).1);
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
            a = cached.program(SimTime::ZERO, SimTime::ZERO, 0, 2, true).1;
            b = plain.program(SimTime::ZERO, SimTime::ZERO, 0, 2, true).1;
        }
        // 32 KiB at 330 MB/s is ~99 us per page pair; without cache mode each one adds it.
        let transfer_ns = cached.timing.bus_ns(32768).ns();
        assert_eq!(b.ns() - a.ns(), 9 * transfer_ns);
    }

    #[test]
    fn two_plane_costs_two_percent_more_than_two_dies() {
        let (cfg, g) = m500_120_nand();
        let mut nand = Nand::new(&cfg, &g);
        let two_plane = nand.program(SimTime::ZERO, SimTime::ZERO, 0, 2, true).1;
        let single = nand.program(SimTime::ZERO, SimTime::ZERO, 1, 1, true).1;
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
        let a = nand.read(SimTime::ZERO, 0, 1, 16384);
        let b = nand.read(SimTime::ZERO, 1, 1, 16384);
        // Both tR run in parallel; the second data-out waits for the first.
        assert_eq!(b.ns() - a.ns(), nand.timing.bus_ns(16384).ns());
    }
}
