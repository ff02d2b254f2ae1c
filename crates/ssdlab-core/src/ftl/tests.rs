use super::*;
use crate::config::tests::{small, small_journaled};
use crate::config::{DriveConfig, GcPolicy};
use crate::rng::Rng;
use proptest::prelude::*;
use std::collections::BTreeSet;

fn ftl_of(cfg: &DriveConfig, seed: u64) -> Ftl {
    let g = cfg.validate().unwrap();
    Ftl::new(&cfg.ftl, &g, seed)
}

/// One die, one plane, one mapping unit per page: the setting of the analytic WAF models.
pub fn theory_config(
    pages_per_block: u32,
    blocks: u32,
    alpha: f64,
    policy: GcPolicy,
) -> DriveConfig {
    let mut c = small();
    c.nand.channels = 1;
    c.nand.dies = 1;
    c.nand.planes_per_die = 1;
    c.nand.page_size_bytes = 4096;
    c.nand.pages_per_block = pages_per_block;
    c.nand.blocks_per_plane = blocks;
    c.ftl.gc_policy = policy;
    c.ftl.write_buffer_bytes = 1 << 20;
    c.ftl.gc_foreground_free_blocks_min = 2;
    let physical = (pages_per_block as u64 * blocks as u64) as f64;
    c.ftl.user_capacity_bytes = (physical / alpha) as u64 * 4096;
    c
}

fn measured_waf(cfg: &DriveConfig, seed: u64) -> f64 {
    let mut ftl = ftl_of(cfg, seed);
    let n = ftl.logical_units() as u32;
    let mut rng = Rng::new(seed);
    ftl.fill_untimed(0, n);
    for _ in 0..5 * n as u64 {
        ftl.write_unit(
            HostWrite::untimed(rng.below(n as u64) as u32),
            &mut NullSink,
        );
    }
    let (h0, g0) = (
        ftl.counters.host_units_written,
        ftl.counters.gc_units_copied,
    );
    for _ in 0..5 * n as u64 {
        ftl.write_unit(
            HostWrite::untimed(rng.below(n as u64) as u32),
            &mut NullSink,
        );
    }
    ftl.verify().unwrap();
    let host = (ftl.counters.host_units_written - h0) as f64;
    (host + (ftl.counters.gc_units_copied - g0) as f64) / host
}

#[test]
fn greedy_waf_matches_mean_field() {
    for (b, alpha) in [(64u32, 1.25f64), (32, 1.1)] {
        let cfg = theory_config(b, 1100, alpha, GcPolicy::Greedy);
        let expected = crate::meanfield::greedy_waf(alpha, b);
        let got = measured_waf(&cfg, 11);
        let err = (got - expected).abs() / expected;
        eprintln!("greedy b {b} alpha {alpha}: simulated {got:.4}, mean-field {expected:.4}, error {:.2}%", err * 100.0);
        assert!(
            err < 0.02,
            "b {b} alpha {alpha}: simulated {got:.4}, mean-field {expected:.4}, error {:.2}%",
            err * 100.0
        );
    }
}

#[test]
fn d1_choice_is_random_victim() {
    // d = 1 picks a block at random: A = alpha / (alpha - 1).
    let mut cfg = theory_config(64, 1100, 1.5, GcPolicy::DChoices);
    cfg.ftl.gc_d_choices = 1;
    let got = measured_waf(&cfg, 5);
    let expected = 1.5 / 0.5;
    eprintln!("d-choices d=1 alpha 1.5: simulated {got:.4}, alpha/(alpha-1) {expected:.4}");
    assert!(
        (got - expected).abs() / expected < 0.03,
        "{got} vs {expected}"
    );
}

#[test]
fn every_policy_keeps_invariants() {
    for policy in [
        GcPolicy::Greedy,
        GcPolicy::Fifo,
        GcPolicy::CostBenefit,
        GcPolicy::DChoices,
    ] {
        let mut cfg = small();
        cfg.ftl.gc_policy = policy;
        cfg.ftl.wear_leveling_static_spread_max = 4;
        let mut ftl = ftl_of(&cfg, 3);
        let n = ftl.logical_units();
        let mut rng = Rng::new(9);
        for i in 0..20 * n {
            ftl.write_unit(HostWrite::untimed(rng.below(n) as u32), &mut NullSink);
            if i % 5000 == 0 {
                ftl.verify().unwrap_or_else(|e| panic!("{policy:?}: {e}"));
            }
        }
        ftl.verify().unwrap();
        assert!(
            ftl.counters.gc_units_copied > 0,
            "{policy:?} never collected"
        );
    }
}

#[test]
fn static_wear_leveling_bounds_spread() {
    // Hot writes to a tenth of the space, the rest written once and left cold.
    let run = |spread_max: u32| {
        let mut cfg = small();
        cfg.ftl.wear_leveling_static_spread_max = spread_max;
        let mut ftl = ftl_of(&cfg, 1);
        let n = ftl.logical_units() as u32;
        ftl.fill_untimed(0, n);
        let mut rng = Rng::new(2);
        for _ in 0..60 * n as u64 {
            ftl.write_unit(
                HostWrite::untimed(rng.below((n / 10) as u64) as u32),
                &mut NullSink,
            );
        }
        ftl.verify().unwrap();
        let ec = ftl.erase_counts();
        (
            ec.iter().max().unwrap() - ec.iter().min().unwrap(),
            ftl.counters.wear_leveling_victims,
        )
    };
    let (spread_off, moves_off) = run(0);
    let (spread_on, moves_on) = run(8);
    assert_eq!(moves_off, 0);
    assert!(moves_on > 0);
    assert!(
        spread_on < spread_off,
        "spread with static WL {spread_on}, without {spread_off}"
    );
}

#[test]
fn secure_erase_empties_the_map_and_counts_erases() {
    let cfg = small();
    let mut ftl = ftl_of(&cfg, 1);
    let n = ftl.logical_units() as u32;
    ftl.fill_untimed(0, n);
    let written_blocks = ftl.erase_counts().len() as u64 - ftl.free_blocks_total();
    ftl.secure_erase();
    ftl.verify().unwrap();
    assert_eq!(ftl.mapped_units(), 0);
    assert_eq!(
        ftl.erase_counts().iter().map(|&e| e as u64).sum::<u64>(),
        written_blocks
    );
    assert!((0..n).all(|l| ftl.lookup(l) == UNMAPPED));
}

#[test]
fn rain_parity_costs_program_bandwidth() {
    let mut cfg = small();
    cfg.ftl.rain_data_pages_per_parity = 7; // every 8th PU is parity
    cfg.ftl.user_capacity_bytes = cfg.ftl.user_capacity_bytes * 7 / 8;
    let mut ftl = ftl_of(&cfg, 1);
    let n = ftl.logical_units() as u32;
    ftl.fill_untimed(0, n);
    ftl.verify().unwrap();
    let c = &ftl.counters;
    let data = c.pu_programs_host as f64;
    let parity = c.pu_programs_parity as f64;
    assert!(
        (parity / data - 1.0 / 7.0).abs() < 0.01,
        "parity/data = {}",
        parity / data
    );
}

#[derive(Clone, Debug)]
enum Op {
    Write(u32),
    WriteRange(u32, u32),
    Trim(u32, u32),
    Flush,
    Background(u32),
}

fn op(n: u32) -> impl Strategy<Value = Op> {
    prop_oneof![
        8 => (0..n).prop_map(Op::Write),
        2 => (0..n, 1..64u32).prop_map(|(a, b)| Op::WriteRange(a, b)),
        1 => (0..n, 1..256u32).prop_map(|(a, b)| Op::Trim(a, b)),
        1 => Just(Op::Flush),
        1 => (0..4u32).prop_map(Op::Background),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Forward and reverse maps agree, valid counts match, no LBA is lost or duplicated,
    /// trimmed LBAs map to nothing: against a shadow set of written-and-not-trimmed LBAs.
    #[test]
    fn ftl_invariants_under_random_operations(
        ops in proptest::collection::vec(op(3000), 1..3000),
        policy in prop_oneof![Just(GcPolicy::Greedy), Just(GcPolicy::Fifo), Just(GcPolicy::CostBenefit), Just(GcPolicy::DChoices)],
        rain in prop_oneof![Just(0u32), Just(3u32)],
        seed in any::<u64>(),
    ) {
        let mut cfg = small();
        cfg.nand.blocks_per_plane = 32;
        cfg.nand.pages_per_block = 16;
        cfg.ftl.gc_policy = policy;
        cfg.ftl.rain_data_pages_per_parity = rain;
        cfg.ftl.user_capacity_bytes = 3000 * 4096;
        cfg.ftl.wear_leveling_static_spread_max = 3;
        let mut ftl = ftl_of(&cfg, seed);
        let n = ftl.logical_units() as u32;
        let mut live = BTreeSet::new();
        // Hammer the drive so collection runs, then apply the random sequence.
        let mut rng = Rng::new(seed);
        for _ in 0..3 * n {
            let l = rng.below(n as u64) as u32;
            ftl.write_unit(HostWrite::untimed(l), &mut NullSink);
            live.insert(l);
        }
        for op in ops {
            match op {
                Op::Write(l) => { let l = l % n; ftl.write_unit(HostWrite::untimed(l), &mut NullSink); live.insert(l); }
                Op::WriteRange(l, c) => for x in l..(l + c).min(n) { ftl.write_unit(HostWrite::untimed(x), &mut NullSink); live.insert(x); },
                Op::Trim(l, c) => for x in l..(l + c).min(n) { ftl.trim_unit(x, 0, &mut NullSink); live.remove(&x); },
                Op::Flush => ftl.flush(&mut NullSink),
                Op::Background(d) => { ftl.collect_background_step(d % ftl.geometry.dies, &mut NullSink); },
            }
        }
        prop_assert_eq!(ftl.verify(), Ok(()));
        prop_assert_eq!(ftl.mapped_units(), live.len() as u64);
        for l in 0..n {
            let mapped = ftl.lookup(l) != UNMAPPED;
            prop_assert_eq!(mapped, live.contains(&l), "lba {}", l);
            if mapped {
                prop_assert_eq!(ftl.reverse(ftl.lookup(l)), l);
            }
        }
    }
}

#[test]
fn burst_mode_keeps_invariants_and_terminates() {
    let mut cfg = small();
    cfg.ftl.gc_foreground_mode = crate::config::GcForegroundMode::Burst;
    let mut ftl = ftl_of(&cfg, 3);
    let n = ftl.logical_units();
    ftl.fill_untimed(0, n as u32);
    let mut rng = Rng::new(9);
    for _ in 0..10 * n {
        ftl.write_unit(HostWrite::untimed(rng.below(n) as u32), &mut NullSink);
    }
    ftl.verify().unwrap();
    assert!(ftl.counters.gc_units_copied > 0);
}

/// The small drive with map persistence on (`small_journaled`: 8 KiB pages hold 2048 map
/// entries, journal records of 8 bytes 1024 per page, a checkpoint every
/// `checkpoint_journal_pages`), a tenth of its user capacity given up as spare area.
fn persistence_cfg(checkpoint_journal_pages: u32) -> (DriveConfig, Geometry) {
    let mut cfg = small_journaled(checkpoint_journal_pages);
    cfg.ftl.user_capacity_bytes = cfg.ftl.user_capacity_bytes * 9 / 10;
    let g = cfg.validate().unwrap();
    (cfg, g)
}

#[test]
fn map_checkpoints_program_the_map_pages_dirtied() {
    let (cfg, g) = persistence_cfg(1);
    let entries_per_map_page = 8192 / 4;
    let records_per_journal_page = 8192 / 8;
    let checkpoint_pages = |map_pages_touched: u32| {
        let mut ftl = Ftl::new(&cfg.ftl, &g, 1);
        let span = map_pages_touched * entries_per_map_page;
        assert!(span as u64 <= g.logical_units);
        let mut rng = Rng::derive(1, "t");
        // One journal page of updates per checkpoint, each spread over `span`.
        let updates = 20 * records_per_journal_page;
        for _ in 0..updates {
            ftl.write_unit(
                HostWrite::untimed(rng.below(span as u64) as u32),
                &mut NullSink,
            );
        }
        ftl.verify().unwrap();
        let c = &ftl.counters;
        // GC moves are map updates too: every journal page is one checkpoint.
        assert_eq!(c.map_checkpoints, c.meta_journal_pages);
        c.meta_map_pages as f64 / c.map_checkpoints as f64
    };
    // 1024 updates over one map page dirty it; over 4 pages, all 4 (each misses with e^-256).
    assert_eq!(checkpoint_pages(1), 1.0);
    let four = checkpoint_pages(4);
    assert!(four > 3.9 && four <= 4.0, "{four}");
}

#[test]
fn checkpoints_are_spread_over_the_next_journal_pages() {
    // A checkpoint every 4 journal pages, 8 map pages dirty at each: 2 map pages go with
    // each journal page, never all 8 at once, and every checkpoint completes.
    let (cfg, g) = persistence_cfg(4);
    let span = 8 * 8192 / 4;
    assert!(span as u64 <= g.logical_units);
    let mut ftl = Ftl::new(&cfg.ftl, &g, 1);
    let mut rng = Rng::derive(1, "t");
    let mut largest_share = 0;
    for _ in 0..200 * 1024 {
        let before = ftl.counters.meta_map_pages;
        ftl.write_unit(
            HostWrite::untimed(rng.below(span as u64) as u32),
            &mut NullSink,
        );
        largest_share = largest_share.max(ftl.counters.meta_map_pages - before);
    }
    ftl.verify().unwrap();
    let c = &ftl.counters;
    assert!(c.map_checkpoints >= 20, "{}", c.map_checkpoints);
    assert_eq!(largest_share, 2);
    assert!(c.meta_map_pages >= (c.map_checkpoints - 1) * 8, "{c:?}");
    assert!(c.meta_map_pages <= c.map_checkpoints * 8, "{c:?}");
}

/// What a store of out-of-band records holds after following the map-change journal: per
/// programmed unit its LBA, whether it is still current, and its sequence number.
fn oob_records(journal: &[MapChange], g: &Geometry) -> Vec<Recovered> {
    let mut oob: std::collections::BTreeMap<u32, Recovered> = Default::default();
    for (seq, ch) in journal.iter().enumerate() {
        if ch.tag == TAG_ERASE {
            let first = ch.old_ppn;
            oob.retain(|&p, _| p < first || p >= first + g.units_per_block);
            continue;
        }
        if ch.old_ppn != UNMAPPED && ch.old_ppn != HELD {
            oob.get_mut(&ch.old_ppn).expect("old copy recorded").lba = UNMAPPED;
        }
        if ch.new_ppn != UNMAPPED && ch.new_ppn != HELD {
            let r = Recovered {
                ppn: ch.new_ppn,
                lba: ch.lba,
                sequence: seq as u64 + 1,
            };
            oob.insert(ch.new_ppn, r);
        }
    }
    oob.into_values().collect()
}

#[test]
fn power_on_rebuild_from_out_of_band_records_restores_the_map() {
    for policy in [GcPolicy::Greedy, GcPolicy::Fifo, GcPolicy::CostBenefit] {
        let mut cfg = small();
        cfg.ftl.gc_policy = policy;
        let mut ftl = ftl_of(&cfg, 3);
        ftl.record_map_changes();
        let n = ftl.logical_units() as u32;
        let mut rng = Rng::new(9);
        for i in 0..4 * n {
            let lba = rng.below(n as u64) as u32;
            if i % 13 == 0 {
                ftl.trim_unit(lba, 1, &mut NullSink);
            } else {
                ftl.write_unit(HostWrite::untimed(lba), &mut NullSink);
            }
        }
        assert!(ftl.counters.blocks_erased > 0, "the workload collects");
        let records = oob_records(ftl.map_changes(), &ftl.geometry);
        let mut back = ftl_of(&cfg, 3);
        back.restore(records.iter().copied(), Some(ftl.erase_counts()))
            .unwrap();
        for lba in 0..n {
            assert_eq!(back.lookup(lba), ftl.lookup(lba), "lba {lba} ({policy:?})");
        }
        assert_eq!(back.mapped_units(), ftl.mapped_units());
        assert_eq!(back.erase_counts(), ftl.erase_counts());
        // Power-on leaves each die's free blocks as they were: open blocks stay open.
        assert_eq!(back.free_blocks_total(), ftl.free_blocks_total());
        // The rebuilt drive keeps working through more garbage collection.
        for _ in 0..2 * n {
            back.write_unit(
                HostWrite::untimed(rng.below(n as u64) as u32),
                &mut NullSink,
            );
        }
        back.verify().unwrap();
    }
}

/// A cut can fall while a die's last free block is in the GC stream with a victim half copied;
/// power-on gives collection the partly written block with the most room (a lone one too), so
/// the rest of that victim has somewhere to go (issue 25: a crash harness at QD32 on the small
/// example drive panicked with "free pool empty" when the lone partial block went to the host).
#[test]
fn power_on_gives_collection_the_partly_written_block_with_most_room() {
    let cfg = small();
    let mut ftl = ftl_of(&cfg, 1);
    ftl.record_map_changes();
    let upp = ftl.geometry.units_per_pu;
    for lba in 0..upp {
        ftl.write_unit(HostWrite::untimed(lba), &mut NullSink);
    }
    let written = ftl.frontiers.get(0, Stream::HOST).block;
    assert_ne!(written, NONE);
    let records = oob_records(ftl.map_changes(), &ftl.geometry);
    let mut back = ftl_of(&cfg, 1);
    back.restore(records.iter().copied(), None).unwrap();
    assert_eq!(
        back.frontiers.get(0, Stream::GC).block,
        written,
        "the lone partial block collects"
    );
    assert_eq!(back.frontiers.get(0, Stream::HOST).block, NONE);
    assert_eq!(
        back.frontiers.get(0, Stream::GC).next_pu,
        ftl.frontiers.get(0, Stream::HOST).next_pu
    );
}

#[test]
fn rebuild_rejects_records_that_contradict_each_other() {
    let cfg = small();
    let mut ftl = ftl_of(&cfg, 1);
    let held = cfg.ftl.reserved_blocks_per_die + cfg.ftl.map_blocks_per_die;
    let first = held * ftl.geometry.units_per_block;
    let twice = [
        Recovered {
            ppn: first,
            lba: 5,
            sequence: 1,
        },
        Recovered {
            ppn: first + 1,
            lba: 5,
            sequence: 2,
        },
    ];
    let e = ftl.restore(twice, None).unwrap_err();
    assert!(e.contains("logical unit 5: current in both"), "{e}");
    let beyond = [Recovered {
        ppn: u32::MAX - 1,
        lba: 1,
        sequence: 1,
    }];
    assert!(ftl
        .restore(beyond, None)
        .unwrap_err()
        .contains("beyond the drive"));
}

#[test]
fn mount_time_reads_the_checkpoint_and_journal_or_scans_every_page() {
    let (cfg, g) = persistence_cfg(4);
    let mut with = Ftl::new(&cfg.ftl, &g, 1);
    let mut without_cfg = cfg.clone();
    without_cfg.ftl.map_journal_entry_bytes = 0;
    let mut without = Ftl::new(&without_cfg.ftl, &g, 1);
    let n = with.logical_units() as u32;
    with.fill_untimed(0, n);
    without.fill_untimed(0, n);
    let (a, b) = (
        with.mount_report(&cfg.nand),
        without.mount_report(&cfg.nand),
    );
    assert!(a.map_pages > 0 && a.journal_pages == 8, "{a:?}");
    assert_eq!((b.map_pages, b.journal_pages), (0, 0));
    // A full scan reads every programmed page; the journal design reads only open blocks'.
    assert!(b.oob_pages > 10 * a.oob_pages.max(1), "{a:?} {b:?}");
    assert!(b.mount_ns > a.mount_ns, "{a:?} {b:?}");
}

/// A store following the journal reads a host write's old copy (to merge a partial write)
/// when it applies that write's change: no change may name an old copy in a block the journal
/// already erased. Foreground collection inside a host write can erase the block whose last
/// valid unit that very write invalidated; the journal then carries the write in two parts
/// (the old copy taken, [`HELD`], before the erase; placed after).
#[test]
fn the_journal_never_names_a_copy_in_a_block_it_already_erased() {
    for seed in 0..40 {
        let cfg = small();
        let mut ftl = ftl_of(&cfg, seed);
        ftl.record_map_changes();
        let n = ftl.logical_units() as u32;
        let mut rng = Rng::new(seed);
        // Skewed overwrites: hot units go stale fast, so victims are often nearly empty.
        for _ in 0..6 * n {
            let lba = if rng.below(4) == 0 {
                rng.below(n as u64) as u32
            } else {
                rng.below(n as u64 / 16) as u32
            };
            ftl.write_unit(HostWrite::untimed(lba), &mut NullSink);
        }
        let upb = ftl.geometry.units_per_block;
        // Units programmed and not erased since; the fill programmed every logical unit.
        let mut on_nand: BTreeSet<u32> = BTreeSet::new();
        let mut held = 0;
        for ch in ftl.map_changes() {
            if ch.tag == TAG_ERASE {
                let first = ch.old_ppn;
                on_nand.retain(|&p| p < first || p >= first + upb);
                continue;
            }
            if ch.new_ppn == HELD {
                held += 1;
            }
            if ch.old_ppn != UNMAPPED && ch.old_ppn != HELD {
                assert!(
                    on_nand.contains(&ch.old_ppn),
                    "seed {seed}: {ch:?} names a copy no longer on the NAND"
                );
            }
            if ch.new_ppn != UNMAPPED && ch.new_ppn != HELD {
                on_nand.insert(ch.new_ppn);
            }
        }
        if seed == 0 {
            println!("{held} writes held across an erase");
        }
    }
}

/// Every flash operation the FTL decides, in order.
#[derive(Default)]
struct OpLog(Vec<(u32, Option<Program>, u32, bool)>);

impl NandSink for OpLog {
    fn program(&mut self, die: u32, program: Program) {
        self.0.push((die, Some(program), 0, false));
    }
    fn gc_read(&mut self, die: u32, GcRead { planes, units, .. }: GcRead) {
        self.0.push((die, None, planes * 1000 + units, false));
    }
    fn erase(&mut self, die: u32, gc_victim: bool) {
        self.0.push((die, None, 0, gc_victim));
    }
}

/// `write_units` (the batched host write) is `write_unit` on each unit: the same flash
/// operations in the same order, the same maps, counts and counters, with collection and
/// map persistence running, over commands of every length; with program failures too.
#[test]
fn write_units_equals_unit_by_unit() {
    write_units_equal_unit_by_unit(0.0);
    write_units_equal_unit_by_unit(0.002);
}

fn write_units_equal_unit_by_unit(program_fail: f64) {
    let mut cfg = small_journaled(4);
    cfg.ftl.block_summary_pages = true;
    let n = {
        let g = cfg.validate().unwrap();
        g.logical_units as u32
    };
    let (mut a, mut b) = (ftl_of(&cfg, 5), ftl_of(&cfg, 5));
    a.set_faults(program_fail, 0.0, 7);
    b.set_faults(program_fail, 0.0, 7);
    let (mut log_a, mut log_b) = (OpLog::default(), OpLog::default());
    let mut rng = Rng::new(9);
    for i in 0..20_000u64 {
        let count = 1 + rng.below(40) as u32;
        let first = rng.below((n - count) as u64) as u32;
        let ready = SimTime(i * 1000);
        let w = HostWrite {
            lba: first,
            tag: i,
            data_ready: ready,
            pid: crate::ftl::NO_PLACEMENT,
        };
        a.write_units(w, count, &mut log_a);
        for lba in first..first + count {
            let w = HostWrite {
                lba,
                tag: i,
                data_ready: ready,
                pid: crate::ftl::NO_PLACEMENT,
            };
            b.write_unit(w, &mut log_b);
        }
    }
    assert!(a.counters.gc_units_copied > 0 && a.counters.meta_journal_pages > 0);
    assert_eq!(a.counters.program_failures > 0, program_fail > 0.0);
    assert_eq!(log_a.0, log_b.0);
    assert_eq!(a.counters, b.counters);
    assert_eq!(
        a.state_digest(),
        b.state_digest(),
        "maps, valid counts, wear, states"
    );
    assert_eq!(a.mapped_units(), b.mapped_units());
    assert_eq!(a.buffered_host_units(), b.buffered_host_units());
    a.verify().unwrap();
}

/// Garbage collection's runs of copies into the open GC PU (`collect_step`, the blocks' valid
/// counts once a run) do what the unit-by-unit path does (taken while the map's changes are
/// recorded, for a data store): the same flash operations in the same order, the same maps,
/// counts and counters, with the map journal running.
#[test]
fn gc_copy_runs_equal_unit_by_unit() {
    let cfg = small_journaled(4);
    let g = cfg.validate().unwrap();
    assert!(g.units_per_pu > 2, "runs of more than one copy");
    let n = g.logical_units as u32;
    let (mut runs, mut units) = (ftl_of(&cfg, 5), ftl_of(&cfg, 5));
    units.map.record_changes();
    let (mut log_runs, mut log_units) = (OpLog::default(), OpLog::default());
    runs.fill_untimed(0, n);
    units.fill_untimed(0, n);
    let mut rng = Rng::new(11);
    for i in 0..3 * n as u64 {
        let w = HostWrite {
            lba: rng.below(n as u64) as u32,
            tag: i,
            data_ready: SimTime::ZERO,
            pid: crate::ftl::NO_PLACEMENT,
        };
        runs.write_unit(w, &mut log_runs);
        units.write_unit(w, &mut log_units);
    }
    assert!(runs.counters.gc_units_copied > n as u64 && runs.counters.meta_journal_pages > 0);
    assert_eq!(log_runs.0, log_units.0);
    assert_eq!(runs.counters, units.counters);
    assert_eq!(runs.state_digest(), units.state_digest());
    runs.verify().unwrap();
}

/// GC's look-ahead: 32 units a die up to 128 dies, fewer beyond so that all the dies together
/// keep 4,096 loaded ahead, never less than one PU, always whole PUs.
#[test]
fn gc_look_ahead_shrinks_with_the_dies_collecting() {
    use super::gc::gc_ahead_units;
    assert_eq!(gc_ahead_units(8, 8), 32);
    assert_eq!(gc_ahead_units(128, 2), 32);
    assert_eq!(gc_ahead_units(256, 2), 16);
    assert_eq!(gc_ahead_units(512, 2), 8);
    assert_eq!(gc_ahead_units(512, 3), 9);
    assert_eq!(gc_ahead_units(100_000, 8), 8);
    assert_eq!(gc_ahead_units(48, 12), 36);
}

/// A timed sink whose host programs are done only when the test says: each die's programs
/// are kept in issue order (host programs finish in that order, as on a die's queue).
#[derive(Default)]
struct SlowPrograms {
    host: Vec<std::collections::VecDeque<()>>,
}

impl NandSink for SlowPrograms {
    fn program(&mut self, die: u32, program: Program) {
        if program.kind == ProgramKind::Host {
            self.host[die as usize].push_back(());
        }
    }
    fn gc_read(&mut self, _: u32, _: GcRead) {}
    fn erase(&mut self, _: u32, _: bool) {}
    fn timed(&self) -> bool {
        true
    }
}

/// Issue 73, item 14: on a starved drive (the spare a little above what collection needs)
/// whose host programs finish late, the erase hold is never broken: a die short of free
/// blocks with a victim waiting on the hold makes the host wait (write_units returns short)
/// and starts no other victim until the programs releasing the pins are done, rather than
/// erasing the superseded copy of data a cut would then lose. Every foreground schedule; several spares
/// and collection thresholds, so that victims are held often.
#[test]
fn a_starved_drive_makes_the_host_wait_and_never_ends_a_hold_early() {
    use crate::config::GcPace;
    let schedules = [
        (GcForegroundMode::Paced, GcPace::Victim, 3),
        (GcForegroundMode::Paced, GcPace::Victim, 6),
        (GcForegroundMode::Paced, GcPace::Nominal, 3),
        (GcForegroundMode::Burst, GcPace::Victim, 6),
        (GcForegroundMode::OnDemand, GcPace::Victim, 6),
        (GcForegroundMode::Deferred, GcPace::Victim, 3),
    ];
    let mut held = 0;
    for (k, &(mode, pace, fg_min)) in schedules.iter().enumerate() {
        // Spare blocks per die beyond the least the configuration accepts (the collector's
        // threshold and its open blocks).
        for extra in [1u64, 3] {
            let seed = k as u64 * 10 + extra;
            let mut cfg = small();
            cfg.ftl.reserved_blocks_per_die = 0;
            cfg.ftl.gc_foreground_mode = mode;
            cfg.ftl.gc_pace = pace;
            cfg.ftl.gc_foreground_free_blocks_min = fg_min;
            cfg.ftl.gc_free_blocks_low = fg_min;
            cfg.ftl.gc_free_blocks_high = fg_min;
            cfg.ftl.gc_background_free_blocks_target = fg_min;
            cfg.ftl.gc_deferred_free_blocks_target = fg_min;
            let g0 = cfg.validate().unwrap();
            let block_row =
                g0.units_per_block as u64 * g0.mapping_unit_bytes as u64 * g0.dies as u64;
            cfg.ftl.user_capacity_bytes = g0.usable_bytes - (fg_min as u64 + 3 + extra) * block_row;
            let (h, broken) = starved_run(&cfg, seed);
            let what = format!("{mode:?}/{pace:?}, min {fg_min}, {extra} spare blocks");
            assert_eq!(broken, 0, "{what}: holds broken");
            held += h;
        }
    }
    assert!(held > 100, "victims were held: {held}");
}

/// Random overwrites of 1-8 units over a filled drive, six drive writes, the host programs
/// done late (a few at a time, and one whenever the host waits): (erases held, holds broken).
fn starved_run(cfg: &DriveConfig, seed: u64) -> (u64, u64) {
    let g = cfg.validate().unwrap();
    let mut ftl = Ftl::new(&cfg.ftl, &g, seed);
    let n = g.logical_units as u32;
    ftl.fill_untimed(0, n);
    ftl.record_map_changes();
    ftl.set_erase_hold(true);
    let mut sink = SlowPrograms {
        host: vec![Default::default(); g.dies as usize],
    };
    let mut rng = Rng::derive(seed, "starved");
    let mut written = 0u64;
    while written < 6 * n as u64 {
        let lba = rng.below(n as u64) as u32;
        let count = (1 + rng.below(8) as u32).min(n - lba);
        let mut done = 0;
        while done < count {
            let first = HostWrite {
                lba: lba + done,
                tag: 0,
                data_ready: SimTime::ZERO,
                pid: crate::ftl::NO_PLACEMENT,
            };
            done += ftl.write_units(first, count - done, &mut sink);
            if done < count {
                // The host waits: a program in flight ends the wait.
                let die = (0..g.dies)
                    .find(|&d| !sink.host[d as usize].is_empty())
                    .expect("the host waits on a program in flight");
                sink.host[die as usize].pop_front();
                ftl.host_program_done(die, &mut sink);
            }
        }
        written += count as u64;
        if rng.below(8) == 0 {
            for die in 0..g.dies {
                for _ in 0..rng.below(3) {
                    if sink.host[die as usize].pop_front().is_some() {
                        ftl.host_program_done(die, &mut sink);
                    }
                }
            }
        }
        ftl.drain_map_changes().for_each(drop);
    }
    ftl.verify().unwrap();
    (
        ftl.counters.gc_erases_held,
        ftl.counters.gc_erase_holds_broken,
    )
}
