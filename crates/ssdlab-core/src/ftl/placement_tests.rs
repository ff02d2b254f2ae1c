//! Flexible Data Placement in the FTL: isolation through collection, the statistics log
//! against what the NAND was given, the events and the RUH status.

use super::*;
use crate::config::tests::{small, small_journaled};
use crate::config::{DriveConfig, PlacementConfig, PlacementMode, RuhType};
use crate::rng::Rng;
use std::collections::BTreeSet;

fn with_handles(mut cfg: DriveConfig, types: &[RuhType]) -> DriveConfig {
    cfg.placement = Some(PlacementConfig {
        mode: PlacementMode::Fdp,
        reclaim_groups: 1,
        reclaim_unit_blocks: 1,
        handles: types.to_vec(),
        max_pids: 0,
        pids: Vec::new(),
        source: String::new(),
        ..PlacementConfig::default_fdp()
    });
    cfg
}

fn ftl_of(cfg: &DriveConfig) -> Ftl {
    let g = cfg.validate().unwrap();
    let mut ftl = Ftl::new(&cfg.ftl, &g, 1);
    if let Some(p) = &cfg.placement {
        ftl.set_placement(p);
    }
    ftl
}

/// A write of one unit carrying `pid`.
fn write(ftl: &mut Ftl, lba: u32, pid: u16, sink: &mut impl NandSink) {
    let w = HostWrite {
        pid,
        ..HostWrite::untimed(lba)
    };
    assert_eq!(ftl.write_units(w, 1, sink), 1);
}

/// The logical space split in `handles` equal regions, each written only through its own
/// placement handle: filled in order, then `rounds` times its size of uniform random writes,
/// a random handle each. `check` is called every quarter of the space written.
fn churn(ftl: &mut Ftl, handles: u16, rounds: u64, mut check: impl FnMut(&Ftl)) {
    let n = ftl.logical_units() as u32;
    let region = n / handles as u32;
    for h in 0..handles {
        for lba in h as u32 * region..(h as u32 + 1) * region {
            write(ftl, lba, h, &mut NullSink);
        }
    }
    let mut rng = Rng::new(7);
    for i in 0..rounds * n as u64 {
        let h = rng.below(handles as u64) as u16;
        let lba = h as u32 * region + rng.below(region as u64) as u32;
        write(ftl, lba, h, &mut NullSink);
        if i % (n as u64 / 4) == 0 {
            check(ftl);
        }
    }
    check(ftl);
}

/// Per block holding valid data: the regions (handles) its valid units were written through.
fn regions_per_block(ftl: &Ftl, region: u32) -> Vec<(u32, BTreeSet<u32>)> {
    let g = &ftl.geometry;
    (0..g.dies * g.blocks_per_die)
        .filter_map(|b| {
            let set: BTreeSet<u32> = (b * g.units_per_block..(b + 1) * g.units_per_block)
                .map(|ppn| ftl.reverse(ppn))
                .filter(|&lba| lba != UNMAPPED)
                .map(|lba| lba / region)
                .collect();
            (!set.is_empty()).then_some((b, set))
        })
        .collect()
}

#[test]
fn persistently_isolated_data_never_shares_a_unit_with_another_handle_s_after_collection() {
    let cfg = with_handles(small(), &[RuhType::PersistentlyIsolated; 2]);
    let mut ftl = ftl_of(&cfg);
    let region = ftl.logical_units() as u32 / 2;
    let mut checks = 0;
    churn(&mut ftl, 2, 4, |ftl| {
        for (block, regions) in regions_per_block(ftl, region) {
            assert_eq!(
                regions.len(),
                1,
                "block {block} holds data of handles {regions:?}"
            );
            let only = *regions.first().unwrap();
            assert_eq!(ftl.block_owner(block), Some(only as u16), "block {block}");
        }
        checks += 1;
    });
    assert!(checks > 10);
    assert!(
        ftl.counters.gc_units_copied > ftl.logical_units(),
        "collection ran: {} copies",
        ftl.counters.gc_units_copied
    );
    ftl.verify().unwrap();
}

#[test]
fn initially_isolated_data_mixes_in_the_collector_s_units() {
    // The same writes through initially isolated handles: collection may (and does) put
    // both handles' data in one unit, so the check above can fail.
    let cfg = with_handles(small(), &[RuhType::InitiallyIsolated; 2]);
    let mut ftl = ftl_of(&cfg);
    let region = ftl.logical_units() as u32 / 2;
    let mut mixed = 0;
    churn(&mut ftl, 2, 4, |ftl| {
        mixed += regions_per_block(ftl, region)
            .iter()
            .filter(|(_, r)| r.len() > 1)
            .count();
    });
    assert!(mixed > 0, "no block mixed the handles' data");
    // Host data itself never mixes: the open blocks of the host streams hold one handle's.
    let report = ftl.placement_report().unwrap();
    assert!(report.shared.media_bytes_written > 0);
}

/// Counts what the NAND is given: units of data, parity and padding programs, metadata pages.
#[derive(Default)]
struct Programmed {
    units: u64,
    meta_pages: u64,
    erases: u64,
}

impl NandSink for Programmed {
    fn program(&mut self, _: u32, p: Program) {
        match p.kind {
            ProgramKind::Meta => self.meta_pages += p.planes as u64,
            _ => self.units += 1,
        }
    }
    fn gc_read(&mut self, _: u32, _: GcRead) {}
    fn erase(&mut self, _: u32, _: bool) {
        self.erases += 1;
    }
}

#[test]
fn the_statistics_log_is_what_the_host_wrote_and_the_nand_programmed() {
    let mut cfg = with_handles(
        small_journaled(8),
        &[RuhType::PersistentlyIsolated, RuhType::InitiallyIsolated],
    );
    // The metadata blocks take two blocks a die of the spare: a little less user capacity.
    cfg.ftl.user_capacity_bytes = 4 * 64 * 32 * 16384 * 75 / 100;
    let mut ftl = ftl_of(&cfg);
    let g = ftl.geometry.clone();
    let n = ftl.logical_units() as u32;
    let mut sink = Programmed::default();
    let mut rng = Rng::new(3);
    let mut host_units = [0u64; 2];
    for i in 0..3 * n as u64 {
        let h = (i % 3 == 0) as u16;
        write(&mut ftl, rng.below(n as u64) as u32, h, &mut sink);
        host_units[h as usize] += 1;
    }
    ftl.flush(&mut sink);
    let unit = g.mapping_unit_bytes as u64;
    let page = g.units_per_page as u64 * unit;
    let s = ftl.media_statistics();
    assert_eq!(s.host_bytes_written, 3 * n as u64 * unit);
    assert_eq!(
        s.media_bytes_written,
        sink.units * g.units_per_pu as u64 * unit + sink.meta_pages * page
    );
    assert_eq!(
        s.media_bytes_erased,
        sink.erases * g.units_per_block as u64 * unit
    );
    assert!(s.write_amplification > 1.0);
    let r = ftl.placement_report().unwrap();
    assert_eq!(r.statistics, s);
    for (h, stats) in r.handles.iter().enumerate() {
        assert_eq!(stats.host_bytes_written, host_units[h] * unit, "handle {h}");
    }
    let media: u64 =
        r.handles.iter().map(|s| s.media_bytes_written).sum::<u64>() + r.shared.media_bytes_written;
    let c = &ftl.counters;
    assert_eq!(
        media,
        (c.host_units_written + c.gc_units_copied + c.wear_leveling_units_copied) * unit
    );
    let erased: u64 =
        r.handles.iter().map(|s| s.media_bytes_erased).sum::<u64>() + r.shared.media_bytes_erased;
    assert_eq!(erased, c.blocks_erased * g.units_per_block as u64 * unit);
}

#[test]
fn a_full_reclaim_unit_an_update_and_an_invalid_pid_are_logged() {
    let cfg = with_handles(small(), &[RuhType::InitiallyIsolated; 2]);
    let mut ftl = ftl_of(&cfg);
    let g = ftl.geometry.clone();
    let ru = (g.dies * g.data_units_per_block) as u64;
    let status = |ftl: &Ftl, pid: u16| {
        ftl.placement_report().unwrap().ruh_status[pid as usize].available_media_bytes / 4096
    };
    assert_eq!(status(&ftl, 1), ru);
    // A reclaim unit's worth through handle 1: its blocks on every die fill together.
    for lba in 0..ru as u32 {
        write(&mut ftl, lba, 1, &mut NullSink);
    }
    let r = ftl.placement_report().unwrap();
    let kinds: Vec<_> = r.events.iter().map(|e| (e.kind, e.pid)).collect();
    assert_eq!(kinds, [(FdpEventKind::ImplicitlyModifiedRuh, 1)]);
    assert_eq!(r.handles[1].reclaim_units, 2);
    assert_eq!(status(&ftl, 1), ru);
    for d in 0..g.dies {
        assert_eq!(ftl.frontiers.get(d, Stream::Host(1)).block, NONE, "die {d}");
    }
    // Part of one, then the host moves the handle on: its blocks close where they are.
    for lba in 0..10 {
        write(&mut ftl, lba, 1, &mut NullSink);
    }
    assert!(status(&ftl, 1) < ru);
    ftl.ruh_update(1, &mut NullSink);
    assert_eq!(status(&ftl, 1), ru);
    // A PID the namespace does not list: logged, and the write placed by default (handle 0).
    write(&mut ftl, 20, 9, &mut NullSink);
    let r = ftl.placement_report().unwrap();
    let kinds: Vec<_> = r.events.iter().map(|e| (e.kind, e.pid)).collect();
    assert_eq!(
        kinds,
        [
            (FdpEventKind::ImplicitlyModifiedRuh, 1),
            (FdpEventKind::RuNotFullyWritten, 1),
            (FdpEventKind::InvalidPlacementIdentifier, 9),
        ]
    );
    assert_eq!(r.handles[0].host_bytes_written, 4096);
    assert_eq!(ftl.block_owner(ftl.lookup(20) / g.units_per_block), Some(0));
    ftl.verify().unwrap();
}

#[test]
fn handles_of_a_group_write_only_its_dies() {
    let mut cfg = with_handles(small(), &[RuhType::InitiallyIsolated; 2]);
    cfg.placement.as_mut().unwrap().reclaim_groups = 2;
    let mut ftl = ftl_of(&cfg);
    let g = ftl.geometry.clone();
    // Group 1's placement identifiers carry it in the top bit (RGIF 1).
    let pid = (1u16 << 15) | 1;
    for lba in 0..4 * g.units_per_pu * g.dies {
        write(&mut ftl, lba, pid, &mut NullSink);
    }
    let dies: BTreeSet<u32> = (0..4 * g.units_per_pu * g.dies)
        .map(|lba| ftl.lookup(lba) / (g.units_per_block * g.blocks_per_die))
        .collect();
    assert_eq!(dies, BTreeSet::from([2, 3]));
    assert!(ftl.placement_report().unwrap().events.is_empty());
}
