use super::*;
use crate::config::DriveConfig;
use crate::time::SimDuration;
use crate::workload::{run_job, Job, JobResult};

fn example() -> DriveConfig {
    DriveConfig::from_toml_str(crate::EXAMPLE_DRIVE_TOML).unwrap()
}

/// A drive with every LBA written (untimed fill).
fn filled(cfg: &DriveConfig, seed: u64) -> Device {
    let mut dev = Device::new(cfg, seed).unwrap();
    let n = dev.geometry.logical_units as u32;
    dev.fill_untimed(0, n);
    dev
}

fn run(dev: &mut Device, job: Job) -> JobResult {
    let c = job.compile(dev.user_bytes()).unwrap();
    run_job(dev, &c, &mut |_| {})
}

fn seq_fill_job() -> Job {
    Job {
        name: "fill".into(),
        rw: "write".into(),
        bs: "128k".into(),
        iodepth: 32,
        ..Job::default()
    }
}

#[test]
fn timed_fill_and_untimed_fill_reach_the_same_state() {
    let cfg = example();
    let mut timed = Device::new(&cfg, 1).unwrap();
    let r = run(&mut timed, seq_fill_job());
    assert!(r.summary.elapsed_s > 0.0);
    let mut fast = Device::new(&cfg, 1).unwrap();
    // The job writes whole 128 KiB transfers: the span rounded down to 32 units.
    let units = (fast.geometry.logical_units as u32) / 32 * 32;
    fast.fill_untimed(0, units);
    assert_eq!(timed.ftl.state_digest(), fast.ftl.state_digest());
    assert_eq!(timed.ftl.counters, fast.ftl.counters);
    timed.ftl.verify().unwrap();
}

#[test]
fn same_seed_same_results() {
    let once = |seed: u64| {
        let mut dev = filled(&example(), seed);
        let job = Job {
            rw: "randrw".into(),
            iodepth: 8,
            number_ios: Some(60_000),
            randseed: seed,
            ..Job::default()
        };
        let r = run(&mut dev, job);
        (
            serde_json::to_string(&r.summary).unwrap(),
            serde_json::to_string(&r.series).unwrap(),
            dev.ftl.state_digest(),
        )
    };
    assert_eq!(once(3), once(3));
    assert_ne!(once(3).2, once(4).2);
}

#[test]
fn sustained_random_writes_fall_from_peak_to_steady_state() {
    // Fresh drive, filled, then random writes: peak while free blocks last, then collection.
    let mut dev = filled(&example(), 1);
    let job = Job {
        rw: "randwrite".into(),
        iodepth: 32,
        runtime_s: Some(20.0),
        time_based: true,
        ..Job::default()
    };
    let r = run(&mut dev, job);
    let w = &r.series.write_ios;
    let first = w[0] as f64;
    let last: f64 = w[w.len() - 6..w.len() - 1]
        .iter()
        .map(|&x| x as f64)
        .sum::<f64>()
        / 5.0;
    assert!(
        first > 2.0 * last,
        "first second {first} IOPS, steady state {last}"
    );
    assert!(
        r.summary.write_amplification > 2.0,
        "WAF {}",
        r.summary.write_amplification
    );
    dev.ftl.verify().unwrap();
}

#[test]
fn random_read_iops_capped_by_controller() {
    // 4 dies x 1 / 115 us = 34.8K IOPS of tR; controller 10 us -> 100K. With QD32 the dies cap it.
    let mut dev = filled(&example(), 1);
    let r = run(
        &mut dev,
        Job {
            rw: "randread".into(),
            iodepth: 32,
            number_ios: Some(50_000),
            ..Job::default()
        },
    );
    let iops = r.summary.read.iops;
    let die_ceiling = 4.0 / 115e-6;
    assert!(
        iops <= die_ceiling * 1.001 && iops > 0.8 * die_ceiling,
        "{iops} vs ceiling {die_ceiling}"
    );
    // At QD1 latency is tR + bus + link + command: far below the ceiling.
    let r1 = run(
        &mut dev,
        Job {
            rw: "randread".into(),
            iodepth: 1,
            number_ios: Some(2_000),
            ..Job::default()
        },
    );
    let lat = r1.summary.read.latency_us_p50;
    assert!(
        lat > 115.0 + 10.0 && lat < 200.0,
        "QD1 read latency {lat} us"
    );
}

#[test]
fn host_queue_beyond_ncq_waits() {
    let mut cfg = example();
    cfg.host.queue_depth_max = 4;
    let mut dev = filled(&cfg, 1);
    let r4 = run(
        &mut dev,
        Job {
            rw: "randread".into(),
            iodepth: 4,
            number_ios: Some(20_000),
            ..Job::default()
        },
    );
    let r32 = run(
        &mut dev,
        Job {
            rw: "randread".into(),
            iodepth: 32,
            number_ios: Some(20_000),
            ..Job::default()
        },
    );
    let ratio = r32.summary.read.iops / r4.summary.read.iops;
    assert!((ratio - 1.0).abs() < 0.05, "NCQ 4: QD32 gives {ratio}x QD4");
    assert!(r32.summary.read.latency_us_mean > 6.0 * r4.summary.read.latency_us_mean);
}

#[test]
fn trimmed_data_reads_as_nothing_and_frees_space() {
    let mut dev = filled(&example(), 1);
    run(
        &mut dev,
        Job {
            rw: "trim".into(),
            bs: "4k".into(),
            iodepth: 4,
            ..Job::default()
        },
    );
    assert_eq!(dev.ftl.mapped_units(), 0);
    // Reads of trimmed LBAs touch no NAND.
    let before = dev.nand().counters.page_reads;
    run(
        &mut dev,
        Job {
            rw: "randread".into(),
            iodepth: 4,
            number_ios: Some(1000),
            ..Job::default()
        },
    );
    assert_eq!(dev.nand().counters.page_reads, before);
    dev.ftl.verify().unwrap();
}

#[test]
fn trim_unmaps_only_whole_mapping_units() {
    let mut dev = filled(&example(), 1);
    let unit = dev.geometry.mapping_unit_bytes as u64;
    let mapped = dev.ftl.mapped_units();
    // 512 bytes into unit 10 up to 512 bytes into unit 13: units 11 and 12 are whole.
    dev.submit(
        HostIo {
            kind: IoKind::Trim,
            offset_bytes: 10 * unit + 512,
            length_bytes: 3 * unit,
            fua: false,
            tag: 1,
            placement: crate::ftl::NO_PLACEMENT,
        },
        dev.now(),
    );
    dev.run_until(SimTime(u64::MAX));
    assert_eq!(dev.ftl.mapped_units(), mapped - 2);
    for (lba, is_mapped) in [(10, true), (11, false), (12, false), (13, true)] {
        assert_eq!(
            dev.ftl.lookup(lba) != crate::ftl::UNMAPPED,
            is_mapped,
            "unit {lba}"
        );
    }
}

#[test]
fn flush_and_fua_put_buffered_data_on_nand() {
    let mut dev = Device::new(&example(), 1).unwrap();
    dev.submit(
        HostIo {
            kind: IoKind::Write,
            offset_bytes: 0,
            length_bytes: 4096,
            fua: false,
            tag: 1,
            placement: crate::ftl::NO_PLACEMENT,
        },
        SimTime::ZERO,
    );
    while dev.step() {}
    assert!(dev.ftl.is_buffered(dev.ftl.lookup(0)));
    let programs = dev.nand().counters.page_programs;
    let t = dev.now();
    dev.submit(HostIo::flush(2), t);
    while dev.step() {}
    assert!(!dev.ftl.is_buffered(dev.ftl.lookup(0)));
    assert!(dev.nand().counters.page_programs > programs);
    let c: Vec<_> = dev.drain_completions().collect();
    let flush = c.iter().find(|c| c.io.tag == 2).unwrap();
    // The flush waits for a whole tPROG.
    assert!((flush.completed - flush.submitted).ns() > 1_600_000);
    // FUA write: completes only after its program.
    let t = dev.now();
    dev.submit(
        HostIo {
            kind: IoKind::Write,
            offset_bytes: 8192,
            length_bytes: 4096,
            fua: true,
            tag: 3,
            placement: crate::ftl::NO_PLACEMENT,
        },
        t,
    );
    while dev.step() {}
    let c: Vec<_> = dev.drain_completions().collect();
    assert!((c[0].completed - c[0].submitted).ns() > 1_600_000);
    assert!(!dev.ftl.is_buffered(dev.ftl.lookup(2)));
}

/// Where a write is acknowledged, by the drive's hold-up energy and its write cache: every
/// class acknowledges a plain write once its data is in DRAM (the write data path on to the
/// NAND is after it); a FUA write and a FLUSH wait for the NAND on an unprotected or map-only
/// drive, not on a fully protected one (its buffer is durable); with the write cache off every
/// write waits for its program.
#[test]
fn write_acknowledgement_by_protection_class_and_write_cache() {
    use crate::config::PowerLossProtection as P;
    // (write latency, latency of a FLUSH right after it), ns, on a new drive.
    let latencies = |plp: P, cache: bool, fua: bool, write_mb_per_s: f64| -> (u64, u64) {
        let mut cfg = example();
        cfg.controller.power_loss_protection = plp;
        cfg.controller.write_cache = cache;
        cfg.controller.write_mb_per_s = write_mb_per_s;
        let mut dev = Device::new(&cfg, 1).unwrap();
        let write = HostIo {
            kind: IoKind::Write,
            offset_bytes: 0,
            length_bytes: 4096,
            fua,
            tag: 1,
            placement: crate::ftl::NO_PLACEMENT,
        };
        dev.submit(write, SimTime::ZERO);
        while dev.step() {}
        let w: Vec<_> = dev.drain_completions().collect();
        let t = dev.now();
        dev.submit(HostIo::flush(2), t);
        while dev.step() {}
        let f: Vec<_> = dev.drain_completions().collect();
        let took = |c: &Completion| (c.completed - c.submitted).ns();
        (took(&w[0]), took(&f[0]))
    };
    let t_prog = (example().nand.program_page_us * 1e3) as u64;
    let (none, none_flush) = latencies(P::None, true, false, 0.0);
    let (map, map_flush) = latencies(P::Map, true, false, 0.0);
    let (full, full_flush) = latencies(P::Full, true, false, 0.0);
    // A plain write: the same point in every class, well before any program.
    assert_eq!(none, map);
    assert_eq!(none, full);
    assert!(none < t_prog / 10, "{none} ns");
    // A slow write data path (4 KiB at 20 MB/s: 205 us) is after the acknowledgement.
    assert_eq!(latencies(P::None, true, false, 20.0).0, none);
    // FLUSH: the buffered unit's program on the unprotected and map-only drives; nothing on the
    // protected one.
    assert!(
        none_flush > t_prog && map_flush > t_prog,
        "{none_flush} {map_flush}"
    );
    assert!(full_flush < t_prog / 10, "{full_flush}");
    // FUA: through to the NAND unless the buffer is protected.
    for plp in [P::None, P::Map] {
        assert!(latencies(plp, true, true, 0.0).0 > t_prog);
    }
    assert_eq!(latencies(P::Full, true, true, 0.0).0, full);
    // The write cache off: every write waits for its program, in every class.
    for plp in [P::None, P::Map, P::Full] {
        assert!(latencies(plp, false, false, 0.0).0 > t_prog);
    }
}

/// A read of part of a mapping unit moves only the ECC codewords holding its sectors over the
/// channel bus (`nand.read_sector_bytes`); whole-unit reads and writes' read-modify-write
/// reads move whole units as before.
#[test]
fn part_unit_reads_move_only_their_codewords() {
    let bus_per_read = |sector: u32, bs: &str| {
        let mut cfg = example();
        cfg.nand.read_sector_bytes = sector;
        let mut dev = filled(&cfg, 1);
        let bus = dev.nand().counters.bus_bytes;
        let r = run(&mut dev, job("randread", bs, 1, 500));
        let per = (dev.nand().counters.bus_bytes - bus) as f64 / r.summary.read.ios as f64;
        (per, r.summary.read.latency_us_mean)
    };
    let (whole, slow) = bus_per_read(0, "512");
    let (sector, fast) = bus_per_read(512, "512");
    assert_eq!(whole, 4096.0);
    assert_eq!(sector, 512.0);
    // 3.5 KiB less on the bus at the example's channel rate, per read at QD1.
    let bus_rate = example().nand.bus_mb_per_s * 1e6;
    assert!(
        ((slow - fast) - 3584.0 / bus_rate * 1e6).abs() < 0.5,
        "{slow} vs {fast}"
    );
    // Whole units: unchanged.
    assert_eq!(bus_per_read(512, "4k"), bus_per_read(0, "4k"));
    let mut bad = example();
    bad.nand.read_sector_bytes = 768;
    assert!(Device::new(&bad, 1).is_err());
}

/// A read of data still in the DRAM write buffer is served from it: no NAND read, no array
/// time, only the command path and the link.
#[test]
fn reads_of_buffered_data_need_no_nand() {
    let mut dev = Device::new(&example(), 1).unwrap();
    let write = HostIo {
        kind: IoKind::Write,
        offset_bytes: 0,
        length_bytes: 4096,
        fua: false,
        tag: 1,
        placement: crate::ftl::NO_PLACEMENT,
    };
    dev.submit(write, SimTime::ZERO);
    while dev.step() {}
    assert!(dev.ftl.is_buffered(dev.ftl.lookup(0)));
    let reads = dev.nand().counters.page_reads;
    let t = dev.now();
    dev.submit(
        HostIo {
            kind: IoKind::Read,
            tag: 2,
            ..write
        },
        t,
    );
    while dev.step() {}
    let c: Vec<_> = dev.drain_completions().collect();
    let read = c.iter().find(|c| c.io.tag == 2).unwrap();
    assert_eq!(dev.nand().counters.page_reads, reads);
    let t_read = (example().nand.read_page_us * 1e3) as u64;
    assert!(
        (read.completed - read.submitted).ns() < t_read,
        "{:?}",
        read
    );
}

/// Submit a command (not FUA) at the device's current time.
fn submit_now(dev: &mut Device, kind: IoKind, offset_bytes: u64, length_bytes: u64, tag: u64) {
    let t = dev.now();
    dev.submit(
        HostIo {
            kind,
            offset_bytes,
            length_bytes,
            fua: false,
            tag,
            placement: crate::ftl::NO_PLACEMENT,
        },
        t,
    );
}

/// What a power cut would find off the NAND: acknowledged host units still in DRAM (partial
/// PUs) or in programs not yet complete; after a completed FLUSH, none.
#[test]
fn unprogrammed_host_data_is_known_until_a_flush_completes() {
    let mut dev = Device::new(&example(), 1).unwrap();
    let mut rng = crate::rng::Rng::new(4);
    let mut written = std::collections::BTreeSet::new();
    let (mut seen_started, mut seen_queued) = (0, 0);
    for tag in 0..300u64 {
        // Bursts of 64 KiB writes, so programs queue behind each other on a die.
        let lba = rng.below(4096) as u32 & !15;
        written.extend(lba..lba + 16);
        let t = dev.now();
        dev.submit(
            HostIo {
                kind: IoKind::Write,
                offset_bytes: lba as u64 * 4096,
                length_bytes: 16 * 4096,
                fua: false,
                tag,
                placement: crate::ftl::NO_PLACEMENT,
            },
            t,
        );
        // Stop part-way through the model's work now and then, mid-program.
        for _ in 0..rng.below(6) {
            dev.step();
        }
        let g = &dev.geometry;
        let host_in_flight: Vec<_> = dev
            .unfinished_programs()
            .into_iter()
            .filter(|u| u.program.kind == crate::ftl::ProgramKind::Host)
            .collect();
        for u in &host_in_flight {
            if u.started {
                seen_started += 1;
            } else {
                seen_queued += 1;
            }
            assert_eq!(dev.ftl.die_of(u.program.first_ppn), u.die);
            assert_eq!(u.program.first_ppn % g.units_per_pu, 0);
        }
        for ppn in dev.ftl.buffered_host_ppns() {
            let lba = dev.ftl.reverse(ppn);
            assert!(lba == crate::ftl::UNMAPPED || written.contains(&lba));
        }
    }
    assert!(
        seen_started > 0 && seen_queued > 0,
        "{seen_started} {seen_queued}"
    );
    submit_now(&mut dev, IoKind::Write, 4096 * 4096 + 4096, 4096, 998);
    while dev.step() {}
    assert!(
        !dev.ftl.buffered_host_ppns().is_empty(),
        "acknowledged data waits in partial PUs"
    );
    submit_now(&mut dev, IoKind::Flush, 0, 0, 999);
    loop {
        let more = dev.step();
        if dev.drain_completions().any(|c| c.io.tag == 999) {
            break;
        }
        assert!(more, "the flush completes");
    }
    assert!(dev.ftl.buffered_host_ppns().is_empty());
    assert!(!dev
        .unfinished_programs()
        .iter()
        .any(|u| u.program.kind == crate::ftl::ProgramKind::Host));
}

#[test]
fn background_collection_uses_idle_time() {
    let mut dev = filled(&example(), 1);
    run(
        &mut dev,
        Job {
            rw: "randwrite".into(),
            iodepth: 32,
            number_ios: Some(100_000),
            ..Job::default()
        },
    );
    let free_before = dev.ftl.free_blocks_total();
    let until = dev.now() + SimDuration::from_secs_f64(30.0);
    crate::session::idle(&mut dev, until);
    let free_after = dev.ftl.free_blocks_total();
    let target = dev.config.ftl.gc_background_free_blocks_target as u64 * dev.geometry.dies as u64;
    assert!(
        free_after > free_before && free_after >= target,
        "{free_before} -> {free_after}, target {target}"
    );
    assert_eq!(dev.now(), until, "idle moves the clock to its end");
    dev.ftl.verify().unwrap();
}

#[test]
fn untimed_random_writes_drawn_ahead_write_the_same_units_in_the_same_order() {
    // The look-ahead draws each unit 128 writes early, 32 at a time: the writes must be the
    // plain draws, one after another, for any count (shorter than the look-ahead or a batch,
    // and across batch boundaries, included).
    let cfg = example();
    for writes in [
        0u64, 1, 31, 32, 33, 95, 96, 97, 127, 128, 129, 160, 161, 5000,
    ] {
        let mut ahead = filled(&cfg, 3);
        let mut plain = filled(&cfg, 3);
        let n = ahead.geometry.logical_units as u32;
        let (first, span) = (n / 4, n / 2);
        ahead.random_writes_untimed(first, span, writes, 11);
        let mut rng = crate::rng::Rng::derive(11, "untimed-random-writes");
        for _ in 0..writes {
            let lba = first + rng.below(span as u64) as u32;
            plain.ftl.write_unit(
                crate::ftl::HostWrite::untimed(lba),
                &mut crate::ftl::NullSink,
            );
        }
        assert_eq!(
            ahead.ftl.counters.host_units_written,
            plain.ftl.counters.host_units_written
        );
        for lba in 0..n {
            assert_eq!(
                ahead.ftl.lookup(lba),
                plain.ftl.lookup(lba),
                "writes {writes}, lba {lba}"
            );
        }
    }
}

#[test]
fn untimed_random_writes_reach_a_consistent_steady_state() {
    let mut dev = filled(&example(), 4);
    let n = dev.geometry.logical_units as u32;
    dev.random_writes_untimed(0, n, 3 * n as u64, 9);
    dev.ftl.verify().unwrap();
    assert_eq!(dev.ftl.counters.host_units_written, 4 * n as u64);
    assert!(dev.ftl.counters.gc_units_copied > 0);
    // A timed job continues from that state (the write buffer accounting agrees).
    let r = run(
        &mut dev,
        Job {
            rw: "randwrite".into(),
            bs: "4k".into(),
            iodepth: 32,
            number_ios: Some(20_000),
            ..Job::default()
        },
    );
    assert_eq!(r.summary.write.ios, 20_000);
    assert!(r.summary.write_amplification > 1.5);
    dev.ftl.verify().unwrap();
}

/// A job of `n` IOs.
fn job(rw: &str, bs: &str, iodepth: u32, n: u64) -> Job {
    Job {
        rw: rw.into(),
        bs: bs.into(),
        iodepth,
        number_ios: Some(n),
        ..Job::default()
    }
}

#[test]
fn controller_data_path_caps_sequential_throughput() {
    let mut cfg = example();
    let base = run(&mut filled(&cfg, 1), job("read", "128k", 32, 4000))
        .summary
        .read
        .mb_per_s;
    cfg.controller.read_mb_per_s = 0.5 * base;
    cfg.controller.write_mb_per_s = 50.0;
    let got = run(&mut filled(&cfg, 1), job("read", "128k", 32, 4000))
        .summary
        .read
        .mb_per_s;
    assert!(
        got <= 0.5 * base * 1.001 && got > 0.45 * base,
        "{got} vs cap {}",
        0.5 * base
    );
    // Writes are acknowledged from the DRAM buffer: past its first fill (at the link's rate)
    // they go at the write path's.
    let mut dev = Device::new(&cfg, 1).unwrap();
    let w = run(&mut dev, job("write", "128k", 32, 2000)).summary;
    let past_buffer = (w.write.bytes - cfg.ftl.write_buffer_bytes) as f64 / w.elapsed_s / 1e6;
    assert!(
        past_buffer <= 50.0 * 1.001 && past_buffer > 0.95 * 50.0,
        "{past_buffer}"
    );
}

#[test]
fn read_and_write_extras_cost_only_their_own_commands() {
    // The enterprise read path (read_extra_ns) lowers processor-bound random reads and leaves
    // writes alone; a write's extra (write_extra_ns) does the reverse.
    let mut cfg = example();
    cfg.controller.command_ns = 60_000; // the processor binds (16.7K IOPS), not the NAND
    let figures = |cfg: &DriveConfig| {
        let rr = run(&mut filled(cfg, 1), job("randread", "4k", 32, 3000))
            .summary
            .read
            .iops;
        let rw = run(
            &mut Device::new(cfg, 1).unwrap(),
            job("randwrite", "4k", 32, 3000),
        )
        .summary
        .write
        .iops;
        (rr, rw)
    };
    let (rr0, rw0) = figures(&cfg);
    assert!(
        (rr0 - 16_667.0).abs() < 800.0,
        "processor-bound reads {rr0}"
    );
    assert!(
        (rw0 - 16_667.0).abs() < 800.0,
        "processor-bound writes {rw0}"
    );
    let mut read_path = cfg.clone();
    read_path.controller.read_extra_ns = 20_000;
    let (rr1, rw1) = figures(&read_path);
    // 1e9 / 80 us = 12.5K.
    assert!((rr1 - 12_500.0).abs() < 600.0, "{rr1}");
    assert!((rw1 / rw0 - 1.0).abs() < 0.01, "{rw1} vs {rw0}");
    let mut write_cmd = cfg.clone();
    write_cmd.controller.write_extra_ns = 20_000;
    let (rr2, rw2) = figures(&write_cmd);
    assert!((rw2 - 12_500.0).abs() < 600.0, "{rw2}");
    assert!((rr2 / rr0 - 1.0).abs() < 0.01, "{rr2} vs {rr0}");
}

#[test]
fn garbage_collection_copies_share_the_write_data_path() {
    // A drive whose write data path binds: at steady state every copied unit crosses the
    // path too, so host writes get only the path's rate over (1 + copies per host write).
    let mut cfg = example();
    cfg.controller.write_mb_per_s = 40.0;
    let (r, _) = random_write_series(&cfg, 3.0, 1000);
    let host = r.summary.write.ios as f64 * 4096.0;
    let copied = r.summary.gc_units_copied as f64 * 4096.0;
    let elapsed = r.summary.elapsed_s;
    assert!(copied > 0.3 * host, "collection copies: {copied} vs {host}");
    let path_mb_s = (host + copied) / elapsed / 1e6;
    // The path is the bound: host and copies together fill it (less the run's edges) ...
    assert!(
        path_mb_s > 0.9 * 40.0 && path_mb_s < 40.0 * 1.02,
        "{path_mb_s}"
    );
    // ... and the host gets less than the path's rate.
    assert!(host / elapsed / 1e6 < 0.8 * 40.0);
}

#[test]
fn part_unit_writes_cross_the_write_data_path_whole() {
    // A 512-byte write is merged in the buffer with the rest of its 4 KiB unit, and the whole
    // unit is encoded and sent to the NAND: where the write data path binds, such writes go
    // at the path's rate in units (40 MB/s: 9,766 a second), not in their own bytes (78K).
    let mut cfg = example();
    cfg.controller.write_mb_per_s = 40.0;
    let units_per_s = 40e6 / 4096.0;
    let mut dev = Device::new(&cfg, 1).unwrap();
    let r = run(&mut dev, job("write", "512", 32, 6000)).summary;
    // Past the DRAM buffer's first fill (acknowledged at the link's rate).
    let buffer_units = cfg.ftl.write_buffer_bytes / 4096;
    let iops = (r.write.ios - buffer_units) as f64 / r.elapsed_s;
    assert!(
        iops <= units_per_s * 1.01 && iops > 0.9 * units_per_s,
        "{iops} IOPS of 512-byte writes against the path's {units_per_s:.0} units a second"
    );
}

// ----- firmware mechanisms (issue: firmware under sustained load) ------------------------------

/// The example drive with every firmware mechanism on.
fn firmware_example() -> DriveConfig {
    let mut cfg = example();
    cfg.controller.gc_copy_ns_per_unit = 30_000;
    cfg.controller.gc_victim_ns = 200_000;
    cfg.ftl.map_journal_entry_bytes = 8;
    cfg.ftl.map_checkpoint_journal_pages = 4;
    cfg.ftl.map_blocks_per_die = 2;
    cfg.ftl.block_summary_pages = true;
    cfg.host.driver_ns = 6_000;
    cfg.controller.front_end_ns = 14_000;
    cfg
}

/// Per-interval write IOPS of a timed random-write run after `warm` drive writes untimed.
fn random_write_series(cfg: &DriveConfig, seconds: f64, interval_ms: u64) -> (JobResult, Device) {
    let mut dev = filled(cfg, 1);
    let n = dev.geometry.logical_units as u32;
    dev.random_writes_untimed(0, n, 2 * n as u64, 5);
    let job = Job {
        rw: "randwrite".into(),
        iodepth: 32,
        runtime_s: Some(seconds),
        time_based: true,
        log_interval_s: interval_ms as f64 / 1e3,
        ..Job::default()
    };
    let r = run(&mut dev, job);
    (r, dev)
}

#[test]
fn firmware_mechanisms_are_deterministic() {
    let once = || {
        let (r, dev) = random_write_series(&firmware_example(), 3.0, 100);
        (
            serde_json::to_string(&r.summary).unwrap(),
            serde_json::to_string(&r.series).unwrap(),
            dev.ftl.state_digest(),
            dev.processor().busy_ns(),
        )
    };
    assert_eq!(once(), once());
}

#[test]
fn gc_processor_cost_makes_the_processor_the_bound() {
    // With collection costing the processor (far more than the NAND here), steady-state IOPS
    // fall, and the processor is busy nearly all the time: host commands x command_ns + copies x copy cost ~ elapsed.
    let free = random_write_series(&example(), 4.0, 1000).0;
    let mut cfg = example();
    cfg.controller.gc_copy_ns_per_unit = 400_000;
    let (r, dev) = random_write_series(&cfg, 4.0, 1000);
    let (iops_free, iops_cost) = (free.summary.write.iops, r.summary.write.iops);
    assert!(iops_cost < 0.7 * iops_free, "{iops_cost} vs {iops_free}");
    let busy = r.summary.write.ios as f64 * cfg.controller.command_ns as f64
        + r.summary.gc_units_copied as f64 * 400_000.0;
    let elapsed = r.summary.elapsed_s * 1e9;
    // Above 1 by the copies decided but still queued when the run ends.
    assert!(
        busy / elapsed > 0.9 && busy / elapsed < 1.2,
        "processor busy {:.3}",
        busy / elapsed
    );
    assert!(dev.processor().gc_busy_ns > 0);
    dev.ftl.verify().unwrap();
}

#[test]
fn deferred_gc_gives_minimums_far_below_the_mean() {
    let series = |mode| {
        let mut cfg = example();
        cfg.controller.gc_copy_ns_per_unit = 20_000;
        cfg.ftl.gc_foreground_mode = mode;
        cfg.ftl.gc_deferred_free_blocks_target = 5;
        let (r, dev) = random_write_series(&cfg, 6.0, 50);
        dev.ftl.verify().unwrap();
        let w: Vec<f64> = r.series.write_ios.iter().map(|&x| x as f64).collect();
        let w = &w[..w.len() - 1];
        let mean = w.iter().sum::<f64>() / w.len() as f64;
        let min = w.iter().cloned().fold(f64::INFINITY, f64::min);
        (mean, min, dev.ftl.counters.gc_deferred_rounds)
    };
    let (mean_d, min_d, rounds) = series(crate::config::GcForegroundMode::Deferred);
    let (mean_p, min_p, _) = series(crate::config::GcForegroundMode::Paced);
    assert!(rounds > 0);
    assert!(min_d < 0.1 * mean_d, "deferred: min {min_d}, mean {mean_d}");
    assert!(min_p > 0.5 * mean_p, "paced: min {min_p}, mean {mean_p}");
}

#[test]
fn on_demand_gc_keeps_the_free_reserve_and_invariants() {
    let mut cfg = example();
    cfg.ftl.gc_foreground_mode = crate::config::GcForegroundMode::OnDemand;
    let (r, dev) = random_write_series(&cfg, 3.0, 1000);
    assert!(r.summary.gc_units_copied > 0);
    for die in 0..dev.geometry.dies {
        assert!(dev.ftl.free_blocks(die) >= 1);
    }
    dev.ftl.verify().unwrap();
}

#[test]
fn command_path_pipelines_qd1_pays_it_qd32_does_not() {
    // The host's stack and the controller's front end, each half of the latency: both are
    // paid in full at QD1 and overlap at QD32.
    let measure = |latency_ns: u64, qd: u32| {
        let mut cfg = example();
        cfg.host.driver_ns = latency_ns / 2;
        cfg.controller.front_end_ns = latency_ns - latency_ns / 2;
        let mut dev = filled(&cfg, 1);
        run(&mut dev, job("randread", "4k", qd, 20_000))
            .summary
            .read
    };
    let l = 200_000u64;
    let (qd1, qd1_l) = (measure(0, 1), measure(l, 1));
    // QD1: every command waits the latency in full; IOPS = 1 / (latency + service).
    let added_us = qd1_l.latency_us_mean - qd1.latency_us_mean;
    assert!(
        (added_us - l as f64 / 1e3).abs() < 1.0,
        "added {added_us} us"
    );
    let expect = 1e6 / qd1_l.latency_us_mean;
    assert!(
        (qd1_l.iops - expect).abs() / expect < 0.01,
        "{} vs {expect}",
        qd1_l.iops
    );
    // QD32: commands overlap in it; the drive's throughput cap is unchanged.
    let (qd32, qd32_l) = (measure(0, 32), measure(l, 32));
    assert!(
        (qd32_l.iops - qd32.iops).abs() / qd32.iops < 0.05,
        "{} vs {}",
        qd32_l.iops,
        qd32.iops
    );
}

#[test]
fn copyback_keeps_gc_data_off_the_bus() {
    let mut cfg = example();
    cfg.controller.gc_copy_ns_per_unit = 30_000;
    let (_, plain) = random_write_series(&cfg, 3.0, 1000);
    cfg.nand.copyback = true;
    let (_, copyback) = random_write_series(&cfg, 3.0, 1000);
    let per_copy =
        |d: &Device| d.nand().counters.bus_bytes as f64 / d.ftl.counters.host_units_written as f64;
    assert!(
        per_copy(&copyback) < per_copy(&plain),
        "{} vs {}",
        per_copy(&copyback),
        per_copy(&plain)
    );
    assert_eq!(copyback.processor().gc_busy_ns, 0);
}

#[test]
fn map_persistence_writes_are_counted_in_write_amplification() {
    let mut cfg = example();
    let (base, _) = random_write_series(&cfg, 2.0, 1000);
    cfg.ftl.map_journal_entry_bytes = 8;
    cfg.ftl.map_checkpoint_journal_pages = 2;
    cfg.ftl.map_blocks_per_die = 2;
    cfg.ftl.block_summary_pages = true;
    let (r, dev) = random_write_series(&cfg, 2.0, 1000);
    let c = &dev.ftl.counters;
    assert!(c.meta_journal_pages > 0 && c.meta_map_pages > 0 && c.meta_summary_pages > 0);
    assert!(c.map_checkpoints > 0);
    assert!(r.summary.write_amplification > base.summary.write_amplification);
    dev.ftl.verify().unwrap();
}

fn with_faults(spec: &str, rain: u32) -> DriveConfig {
    let mut cfg = example();
    cfg.faults = crate::faults::FaultConfig::parse(spec).unwrap();
    cfg.ftl.rain_data_pages_per_parity = rain;
    if rain > 0 {
        cfg.ftl.user_capacity_bytes = 400_000_000;
    }
    cfg
}

fn read_latency_us(cfg: &DriveConfig) -> (JobResult, Device) {
    let mut dev = filled(cfg, 1);
    let r = run(&mut dev, job("randread", "4k", 1, 20_000));
    (r, dev)
}

#[test]
fn read_retry_costs_whole_page_reads_and_is_deterministic() {
    let (clean, _) = read_latency_us(&with_faults("", 0));
    let (slow, _) = read_latency_us(&with_faults("read_retry=0.2,read_retry_max=3,seed=4", 0));
    let f = slow.summary.faults;
    // About a fifth of the reads retried, 2 extra reads each on average.
    assert!((3_000..5_000).contains(&f.read_retries), "{f:?}");
    let per = f.read_retry_reads as f64 / f.read_retries as f64;
    assert!((1.8..2.2).contains(&per), "{per}");
    // Each extra read is a page read (tR) and transfer on the same die: the mean latency
    // grows by about 0.2 * 2 of a read's NAND time.
    let (a, b) = (
        clean.summary.read.latency_us_mean,
        slow.summary.read.latency_us_mean,
    );
    let read_us = example().nand.read_page_us;
    assert!(
        b - a > 0.25 * read_us && b - a < 0.8 * read_us,
        "{a} -> {b}"
    );
    assert_eq!(clean.summary.faults, Default::default());
    // Same seed, same faults; another seed, other faults.
    let (again, _) = read_latency_us(&with_faults("read_retry=0.2,read_retry_max=3,seed=4", 0));
    assert_eq!(
        serde_json::to_string(&again.summary).unwrap(),
        serde_json::to_string(&slow.summary).unwrap()
    );
    let (other, _) = read_latency_us(&with_faults("read_retry=0.2,read_retry_max=3,seed=5", 0));
    assert_ne!(other.summary.faults, slow.summary.faults);
}

#[test]
fn uncorrectable_reads_fail_only_their_units_without_rain_and_are_rebuilt_with_it() {
    // Without RAIN: the command fails, the units stay unreadable until rewritten.
    let (r, mut dev) = read_latency_us(&with_faults("uncorrectable=0.01,seed=2", 0));
    let f = r.summary.faults;
    assert!(f.uncorrectable_pages > 100, "{f:?}");
    assert_eq!(f.rain_rebuilds, 0);
    assert!(f.failed_reads >= f.uncorrectable_pages, "{f:?}");
    let bad = dev.unreadable_units();
    assert_eq!(bad.len() as u64, f.unreadable_units);
    let lba = bad[0];
    let read = |dev: &mut Device, tag| {
        submit_now(dev, IoKind::Read, lba as u64 * 4096, 4096, tag);
        dev.run_until(SimTime(u64::MAX));
        dev.drain_completions().next().unwrap()
    };
    assert!(
        read(&mut dev, 1).failed,
        "an unreadable unit fails every read"
    );
    submit_now(&mut dev, IoKind::Write, lba as u64 * 4096, 4096, 2);
    dev.run_until(SimTime(u64::MAX));
    assert!(!dev.drain_completions().next().unwrap().failed);
    assert!(!dev.unreadable_units().contains(&lba));
    // (The rewritten unit sits in the write buffer or on a fresh page: it reads.)
    assert!(!read(&mut dev, 3).failed);
    // With RAIN 7:1 every uncorrectable page is rebuilt from the 7 other pages of its stripe:
    // no command fails, and the rebuild reads cost time.
    let (rain, dev) = read_latency_us(&with_faults("uncorrectable=0.01,seed=2", 7));
    let f = rain.summary.faults;
    assert!(f.rain_rebuilds > 100 && f.failed_reads == 0, "{f:?}");
    assert_eq!(f.rain_rebuild_reads, 7 * f.rain_rebuilds);
    assert!(dev.unreadable_units().is_empty());
    // The stripe lies across dies: its 7 other members are read on the 3 other dies in
    // parallel (3, 2 and 2 page reads), after the page's own retry table (3 more reads of it).
    let (clean, _) = read_latency_us(&with_faults("", 7));
    let read_us = example().nand.read_page_us;
    let (a, b) = (
        clean.summary.read.latency_us_max,
        rain.summary.read.latency_us_max,
    );
    println!("max read latency {a:.0} -> {b:.0} us (tR {read_us} us)");
    assert!(b > a + 3.0 * read_us && b < a + 7.0 * read_us, "{a} -> {b}");
}

#[test]
fn program_and_erase_failures_retire_blocks_and_lose_nothing() {
    let cfg = with_faults("program_fail=0.0005,erase_fail=0.002,seed=9", 0);
    let mut dev = filled(&cfg, 1);
    let free0 = dev.ftl.free_blocks_total();
    let r = run(&mut dev, job("randwrite", "4k", 8, 200_000));
    let f = r.summary.faults;
    assert!(f.program_failures > 0 && f.erase_failures > 0, "{f:?}");
    assert_eq!(dev.fault_counters().grown_bad_blocks, f.grown_bad_blocks);
    assert!(f.grown_bad_blocks >= f.erase_failures, "{f:?}");
    assert!(dev.ftl.counters.program_fail_rewrites > 0);
    // Every logical unit still maps to exactly one copy; retired blocks hold none.
    dev.ftl.verify().unwrap();
    assert_eq!(dev.ftl.mapped_units(), dev.geometry.logical_units);
    // The spare area shrank by the retired blocks (the drive keeps writing meanwhile).
    assert!(dev.ftl.free_blocks_total() <= free0, "{free0}");
    // Past the spare the die can give, failed blocks stay in service: no panic, no lost data.
    let mut worn = filled(
        &with_faults("program_fail=0.01,erase_fail=0.05,seed=9", 0),
        1,
    );
    run(&mut worn, job("randwrite", "4k", 8, 200_000));
    assert!(worn.ftl.counters.failed_blocks_kept > 0);
    worn.ftl.verify().unwrap();
    // A secure erase keeps grown bad blocks out of service.
    let bad = dev.fault_counters().grown_bad_blocks;
    dev.secure_erase();
    assert_eq!(dev.fault_counters().grown_bad_blocks, bad);
    dev.ftl.verify().unwrap();
}

#[test]
fn a_failed_die_is_rebuilt_across_dies_with_rain_and_loses_its_reads_without() {
    // RAIN 7:1 striped across the 4 dies: every read of die 1 is rebuilt from the others.
    let (r, mut dev) = read_latency_us(&with_faults("die_fail=1@0,seed=1", 7));
    let f = r.summary.faults;
    assert_eq!(f.failed_dies, 1);
    assert_eq!(f.failed_reads, 0);
    let share = f.die_rebuilds as f64 / r.summary.read.ios as f64;
    assert!(
        (0.2..0.3).contains(&share),
        "{share} of reads were on die 1"
    );
    let (clean, _) = read_latency_us(&with_faults("", 7));
    assert!(r.summary.read.latency_us_mean > clean.summary.read.latency_us_mean);
    // Host data goes to the other dies from then on.
    let n = 4096u32;
    for lba in (0..n).step_by(8) {
        submit_now(
            &mut dev,
            IoKind::Write,
            lba as u64 * 4096,
            8 * 4096,
            lba as u64,
        );
    }
    dev.run_until(SimTime(u64::MAX));
    assert!((0..n).all(|lba| dev.ftl.die_of(dev.ftl.lookup(lba)) != 1));
    dev.ftl.verify().unwrap();
    // Without RAIN the failed die's reads fail, for their units only.
    let (r, _) = read_latency_us(&with_faults("die_fail=1@0,seed=1", 0));
    let f = r.summary.faults;
    let share = f.failed_reads as f64 / r.summary.read.ios as f64;
    assert!((0.2..0.3).contains(&share), "{share} of reads failed");
    // A die the drive does not have is a clear error.
    let mut cfg = example();
    cfg.faults = crate::faults::FaultConfig::parse("die_fail=4@1").unwrap();
    let e = Device::new(&cfg, 1).err().unwrap().to_string();
    assert!(e.contains("faults.die") && e.contains("0 to 3"), "{e}");
}

/// fio's ramp_time: the workload runs from the start, but nothing before the ramp's end is
/// measured (a fresh drive's burst before its cliff is left out of the results).
#[test]
fn ramp_time_runs_the_workload_but_measures_only_after_it() {
    let cfg = example();
    let job = |ramp: f64| Job {
        rw: "randwrite".into(),
        iodepth: 32,
        runtime_s: Some(4.0),
        time_based: true,
        ramp_time_s: ramp,
        ..Job::default()
    };
    let mut plain = filled(&cfg, 2);
    let a = run(&mut plain, job(0.0));
    let mut ramped = filled(&cfg, 2);
    let b = run(&mut ramped, job(6.0));
    // The same 4 s measured, after 6 s of the same workload.
    assert_eq!(b.series.len(), 4);
    assert!(
        (b.summary.elapsed_s - 4.0).abs() < 0.1,
        "{}",
        b.summary.elapsed_s
    );
    assert!(ramped.now().ns() > 9_900_000_000);
    // The ramp's writes are not counted, the device's work during it is not either.
    let per_s = |r: &JobResult| r.summary.write.ios as f64 / r.summary.elapsed_s;
    assert!(b.summary.host_units_written < ramped.ftl.counters.host_units_written);
    assert_ne!(per_s(&a), per_s(&b));
    // Deterministic.
    let mut again = filled(&cfg, 2);
    let c = run(&mut again, job(6.0));
    assert_eq!(
        serde_json::to_string(&b.summary).unwrap(),
        serde_json::to_string(&c.summary).unwrap()
    );
    assert!(job(-1.0).compile(plain.user_bytes()).is_err());
}

/// fio's bs=READ,WRITE[,TRIM]: each direction its own transfer size; an empty place is fio's
/// default 4k.
#[test]
fn block_size_per_direction_as_fio_writes_it() {
    let cfg = example();
    let sizes = |bs: &str| {
        let mut dev = filled(&cfg, 1);
        let r = run(
            &mut dev,
            Job {
                rw: "randrw".into(),
                bs: bs.into(),
                iodepth: 4,
                number_ios: Some(4000),
                ..Job::default()
            },
        );
        let per = |o: &crate::stats::OpSummary| o.bytes / o.ios;
        (per(&r.summary.read), per(&r.summary.write))
    };
    assert_eq!(sizes("4k,64k"), (4096, 65536));
    assert_eq!(sizes(",8k"), (4096, 8192));
    assert_eq!(sizes("16k"), (16384, 16384));
    let dev = filled(&cfg, 1);
    let bad = Job {
        bs: "4k,8k,16k,32k".into(),
        ..Job::default()
    };
    assert!(bad
        .compile(dev.user_bytes())
        .unwrap_err()
        .contains("READ[,WRITE[,TRIM]]"));
}

/// fio's numjobs: copies of the job run at once on the drive, each with its own random stream
/// and queue, reported together.
#[test]
fn numjobs_run_together_each_with_its_own_stream_and_queue() {
    let cfg = example();
    let go = |numjobs: u32, iodepth: u32| {
        let mut dev = filled(&cfg, 1);
        run(
            &mut dev,
            Job {
                rw: "randread".into(),
                iodepth,
                numjobs,
                number_ios: Some(5000),
                ..Job::default()
            },
        )
        .summary
    };
    let four_jobs = go(4, 1);
    let one_job_qd4 = go(1, 4);
    let one_job_qd1 = go(1, 1);
    // Each copy does the whole job.
    assert_eq!(four_jobs.read.ios, 4 * 5000);
    // Four queues of one keep four commands in flight: as fast as one queue of four, far
    // faster than one of one.
    let (a, b, c) = (
        four_jobs.read.iops,
        one_job_qd4.read.iops,
        one_job_qd1.read.iops,
    );
    assert!((a / b - 1.0).abs() < 0.15, "{a} vs {b}");
    assert!(a > 2.0 * c, "{a} vs {c}");
    let dev = filled(&cfg, 1);
    let bad = Job {
        numjobs: 0,
        ..Job::default()
    };
    assert!(bad
        .compile(dev.user_bytes())
        .unwrap_err()
        .contains("numjobs"));
}

/// fio's ss: a job stops once its last ss_dur of per-interval figures is steady by the
/// criterion, and says whether and when it got there.
#[test]
fn steady_state_detection_stops_a_job_as_fio_does() {
    let cfg = example();
    let go = |ss: &str| {
        let mut dev = filled(&cfg, 1);
        run(
            &mut dev,
            Job {
                rw: "randread".into(),
                iodepth: 8,
                runtime_s: Some(20.0),
                time_based: true,
                ss: Some(ss.into()),
                ss_dur_s: 3.0,
                ss_ramp_s: 1.0,
                ..Job::default()
            },
        )
        .summary
    };
    // Random reads of a filled drive are steady at once: stopped after ss_ramp + ss_dur (fio
    // collects nothing for the criterion during ss_ramp; issue 25 item 12: it was max of the
    // two).
    let steady = go("iops:2%");
    let s = steady.steady_state.clone().unwrap();
    assert!(s.attained && s.value_pct <= 2.0, "{s:?}");
    assert!(
        steady.elapsed_s >= 4.0 && steady.elapsed_s < 5.0,
        "{}",
        steady.elapsed_s
    );
    let slope = go("iops_slope:1%").steady_state.unwrap();
    assert!(slope.attained, "{slope:?}");
    // fio's lat (examples/example_latency_steadystate.fio): mean latency per interval.
    let lat = go("lat:5%").steady_state.unwrap();
    assert!(lat.attained && lat.value_pct <= 5.0, "{lat:?}");
    // A criterion no run meets: the job runs to its end and reports how close it came.
    let never = go("iops:0.0000001%");
    let n = never.steady_state.clone().unwrap();
    assert!(!n.attained && n.value_pct > 0.0, "{n:?}");
    assert!((never.elapsed_s - 20.0).abs() < 0.1);
    let dev = filled(&cfg, 1);
    for (ss, dur, says) in [
        ("iops", 3.0, "accepted: iops:P%"),
        ("clat:1%", 3.0, "accepted: iops, iops_slope"),
        ("iops:abc", 3.0, "not a positive percentage"),
        ("iops:1%", 0.0, "ss_dur"),
    ] {
        let j = Job {
            ss: Some(ss.into()),
            ss_dur_s: dur,
            ..Job::default()
        };
        let e = j.compile(dev.user_bytes()).unwrap_err();
        assert!(e.contains(says), "{ss}: {e}");
    }
}

mod invariants {
    use super::*;
    use proptest::prelude::*;

    /// One host command of a random mix: reads, writes (partial units, FUA), trims, flushes.
    fn command() -> impl Strategy<Value = (u8, u64, u64, bool)> {
        (0u8..10, 0u64..1 << 20, 1u64..64, any::<bool>())
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

        /// The invariants every part states hold after every step of any command mix at any
        /// queue depth, with garbage collection running (the drive is in steady state); the
        /// FTL's maps and blocks check whole at the end. (`--features verify` checks them after
        /// every step of every test.)
        #[test]
        fn every_step_keeps_the_stated_invariants(
            commands in proptest::collection::vec(command(), 50..400),
            depth in 1usize..40,
            seed in 0u64..1000,
        ) {
            let mut cfg = example();
            cfg.ftl.write_buffer_bytes = 256 * 1024;
            let mut dev = filled(&cfg, seed);
            let n = dev.geometry.logical_units as u32;
            dev.random_writes_untimed(0, n, n as u64 * 2, seed);
            let gc_before = dev.ftl.counters.gc_units_copied;
            let user = dev.user_bytes();
            let mut tag = 0u64;
            let mut pending = commands.into_iter();
            loop {
                while dev.outstanding() < depth {
                    let Some((kind, at, sectors, fua)) = pending.next() else { break };
                    let length = (sectors * 512).min(user - 512);
                    let offset = (at * 512 * 37) % (user - length);
                    let io = match kind {
                        0..=3 => HostIo { kind: IoKind::Write, offset_bytes: offset, length_bytes: length, fua, tag, placement: crate::ftl::NO_PLACEMENT },
                        4..=7 => HostIo { kind: IoKind::Read, offset_bytes: offset, length_bytes: length, fua: false, tag, placement: crate::ftl::NO_PLACEMENT },
                        8 => HostIo { kind: IoKind::Trim, offset_bytes: offset, length_bytes: length, fua: false, tag, placement: crate::ftl::NO_PLACEMENT },
                        _ => HostIo::flush(tag),
                    };
                    tag += 1;
                    let now = dev.now();
                    dev.submit(io, now);
                    prop_assert_eq!(dev.check_invariants(), Ok(()));
                }
                if !dev.step() {
                    break;
                }
                prop_assert_eq!(dev.check_invariants(), Ok(()));
                dev.drain_completions().for_each(drop);
            }
            prop_assert_eq!(dev.outstanding(), 0);
            prop_assert_eq!(dev.ftl.verify(), Ok(()));
            prop_assert!(tag < 100 || dev.ftl.counters.gc_units_copied > gc_before, "GC ran");
        }
    }
}

fn run_together(dev: &mut Device, jobs: &[Job], after: &[Option<usize>]) -> Vec<JobResult> {
    let compiled: Vec<_> = jobs
        .iter()
        .map(|j| j.compile(dev.user_bytes()).unwrap())
        .collect();
    let mut run = crate::workload::JobRun::group(dev, &compiled, after, 0).unwrap();
    while !run.advance(dev, SimTime(run.now(dev).ns() + crate::time::NS_PER_S)) {}
    run.finish(dev)
}

/// Issue 25 item 9: the jobs of one fio file run at once unless a stonewall or wait_for says
/// otherwise; jobs at once share the one drive (four readers of one drive do not each get
/// what one gets alone).
#[test]
fn jobs_run_together_share_the_drive() {
    let reader = |name: &str| Job {
        name: name.into(),
        ..job("randread", "4k", 32, 40_000)
    };
    let mut dev = filled(&example(), 1);
    let alone = run(&mut dev, reader("alone")).summary.read.iops;
    let mut dev = filled(&example(), 1);
    let both = run_together(&mut dev, &[reader("a"), reader("b")], &[None, None]);
    let (a, b) = (both[0].summary.read.iops, both[1].summary.read.iops);
    assert_eq!(both[0].summary.read.ios, 40_000);
    assert_eq!(both[1].summary.read.ios, 40_000);
    // The drive's random-read rate is what binds: two readers split it.
    assert!(
        a < 0.65 * alone && b < 0.65 * alone,
        "alone {alone}, together {a} + {b}"
    );
    assert!(
        ((a + b) / alone - 1.0).abs() < 0.15,
        "alone {alone}, together {a} + {b}"
    );
}

/// fio's wait_for and startdelay: a job waiting for another starts at its end (the two take
/// as long as one after the other); a start delay runs the other job alone meanwhile.
#[test]
fn wait_for_and_startdelay_start_a_job_later() {
    let reader = |name: &str, n: u64| Job {
        name: name.into(),
        ..job("randread", "4k", 32, n)
    };
    let t = |dev: &Device| dev.now().ns() as f64 / crate::time::NS_PER_S as f64;
    let mut dev = filled(&example(), 1);
    let t0 = t(&dev);
    let alone = run(&mut dev, reader("a", 20_000)).summary.elapsed_s;
    let one_alone = t(&dev) - t0;
    let mut dev = filled(&example(), 1);
    let t0 = t(&dev);
    let r = run_together(
        &mut dev,
        &[reader("a", 20_000), reader("b", 20_000)],
        &[None, Some(0)],
    );
    let chained = t(&dev) - t0;
    assert!((r[0].summary.elapsed_s / alone - 1.0).abs() < 0.02);
    assert!((r[1].summary.elapsed_s / alone - 1.0).abs() < 0.05);
    assert!(
        (chained / (2.0 * one_alone) - 1.0).abs() < 0.05,
        "one alone {one_alone} s, chained {chained} s"
    );
    // b starts when a is half done: a runs alone first, then shares the drive.
    let mut dev = filled(&example(), 1);
    let delayed = Job {
        startdelay_s: alone / 2.0,
        ..reader("b", 20_000)
    };
    let r = run_together(&mut dev, &[reader("a", 20_000), delayed], &[None, None]);
    let a = r[0].summary.elapsed_s;
    assert!(
        a > alone * 1.1 && a < alone * 1.9,
        "alone {alone} s, a with b later {a} s"
    );
    // Waiting jobs that never can: a job waits only for an earlier one.
    let c = reader("a", 10).compile(dev.user_bytes()).unwrap();
    let e = crate::workload::JobRun::group(&mut dev, &[c.clone(), c], &[Some(1), None], 0)
        .err()
        .unwrap();
    assert!(e.starts_with("wait_for:"), "{e}");
}

/// fio's loops (examples/fsx.fio: loops=500000): the job runs its passes one after another as
/// one job; a sequential pass starts at the span's start again, after the pass before has
/// completed every IO.
#[test]
fn loops_run_passes_as_one_job() {
    let mut dev = filled(&example(), 1);
    let once = run(&mut dev, job("randread", "4k", 8, 5_000)).summary;
    let mut dev = filled(&example(), 1);
    let thrice = run(
        &mut dev,
        Job {
            loops: 3,
            ..job("randread", "4k", 8, 5_000)
        },
    )
    .summary;
    assert_eq!(thrice.read.ios, 15_000);
    let ratio = thrice.elapsed_s / once.elapsed_s;
    assert!((ratio / 3.0 - 1.0).abs() < 0.05, "{ratio}");
    // Passes of 1 MiB over a 4 MiB span: each starts at the span's start, so the same 256
    // units are written four times (passes that went on would write the whole span).
    let mut dev = Device::new(&example(), 1).unwrap();
    let r = run(
        &mut dev,
        Job {
            loops: 4,
            size: Some("4m".into()),
            io_size: Some("1m".into()),
            ..job("write", "4k", 4, 0)
        },
    )
    .summary;
    assert_eq!(r.write.ios, 1024);
    assert_eq!(dev.ftl.mapped_units(), 256);
    let bad = Job {
        loops: 0,
        ..job("read", "4k", 1, 1)
    }
    .compile(dev.user_bytes())
    .unwrap_err();
    assert!(bad.starts_with("loops:"), "{bad}");
}

/// A 32-die drive whose power budget lets 6 dies run at once (most of them wait for a place
/// whenever the write buffer holds work for all), hot enough to throttle part of the time.
fn budget_bound() -> DriveConfig {
    let mut cfg = example();
    cfg.nand.channels = 4;
    cfg.nand.dies = 32;
    cfg.nand.blocks_per_plane = 24;
    cfg.ftl.user_capacity_bytes = 1_100_000_000;
    cfg.ftl.write_buffer_bytes = 8 << 20;
    let power = crate::power::PowerConfig {
        nand_iccq_io_ma: 20.0,
        idle_active_w: 0.3,
        idle_partial_w: 0.3,
        // 0.8 W of idle and busy processor, 0.1185 W a die: 6 dies.
        power_limit_w: Some(0.8 + 6.5 * 0.1185),
        ..crate::power::tests::cfg()
    };
    assert_eq!(
        power.dies_within(power.power_limit_w.unwrap(), power.idle_active_w),
        6
    );
    cfg.power = Some(power);
    // Badly cooled (time constant 10 s): throttling to a quarter of the dies comes and goes.
    cfg.thermal = Some(crate::thermal::ThermalConfig {
        ambient_c: 45.0,
        airflow_m_per_s: 0.0,
        resistance_still_air_c_per_w: 30.0,
        capacitance_j_per_c: 0.33,
        throttle_c: 62.0,
        throttle_release_c: 60.0,
        throttle_active_dies_pct: 12.5,
    });
    cfg
}

/// Dies waiting for a place under the power budget, in one line behind one wake-up event
/// (`scheduler::PowerWaits`): a timed fill, then mixed random reads and writes under garbage
/// collection, with throttling changing the limit, run to the end; no more dies run than the
/// limit at any start (the debug build checks each against every die), the same seed gives
/// the same run, and the line woken only where a place frees gives the run it gives woken at
/// every running die's end (98,084 wake-ups that started nothing, against 2,104).
#[test]
fn dies_waiting_in_line_for_a_place_run_every_job_to_its_end() {
    let once = |every_end: bool| {
        let mut dev = Device::new(&budget_bound(), 5).unwrap();
        dev.sched.wake_at_every_end = every_end;
        let fill = run(&mut dev, seq_fill_job());
        let mixed = run(
            &mut dev,
            Job {
                rw: "randrw".into(),
                rwmixread: 30,
                iodepth: 32,
                runtime_s: Some(20.0),
                time_based: true,
                log_interval_s: 0.1,
                ..Job::default()
            },
        );
        dev.ftl.verify().unwrap();
        let outcome = (
            serde_json::to_string(&fill.summary).unwrap(),
            serde_json::to_string(&mixed.summary).unwrap(),
            serde_json::to_string(&mixed.series).unwrap(),
            dev.ftl.state_digest(),
            dev.now(),
        );
        (outcome, dev.sched.power_waits_counts(), fill, mixed)
    };
    let (outcome, (waited, no_place), fill, mixed) = once(false);
    // The budget and the heat did bind: dies waited in line (26,200 in this run), and some
    // wake-ups found no place (2,104: work came to the die that was to end, or another die
    // took the place first).
    let p = mixed.summary.power.as_ref().unwrap();
    assert!(p.throttled_s.unwrap() > 0.0, "{p:?}");
    assert!(waited > 10_000 && no_place > 100, "{waited} {no_place}");
    // Every LBA written by the fill, and the mixed job ran its 20 s.
    assert_eq!(
        fill.summary.write.bytes,
        1_100_000_000 / (128 << 10) * (128 << 10)
    );
    assert!(mixed.summary.read.ios > 0 && mixed.summary.write.ios > 0);
    assert_eq!(once(false).0, outcome);
    // The line woken at every running die's end, not only where a place frees: the same run
    // bit for bit (no place freed without the line trying for it), with many more wake-ups
    // that started nothing.
    let (every, (every_waited, every_no_place), ..) = once(true);
    assert_eq!(every, outcome);
    assert_eq!(every_waited, waited);
    assert!(
        every_no_place > 10 * no_place,
        "{every_no_place} {no_place}"
    );
}

/// Dies get places in the order they began to wait, whatever order their own wake-ups would
/// have: with a place for one die, die 1 and then die 3 wait for die 0's erase; die 3's turn
/// comes first (the limit rose for a short read, then fell) but it finds no place and keeps
/// its place in line behind die 1, which starts when die 0 ends; die 3 starts only when die
/// 1's erase and read are done (die 1 takes its read at its own wake-up, not being in line).
/// The line woken at every running die's end gives the same starts with one futile wake-up
/// more.
#[test]
fn dies_get_places_in_the_order_they_began_to_wait() {
    for every_end in [false, true] {
        let mut dev = Device::new(&example(), 1).unwrap();
        dev.sched.wake_at_every_end = every_end;
        dev.sched.set_power_dies_max(&mut dev.kernel, Some(1));
        let (c, b) = dev.parts();
        let (k, sched, p) = (b.kernel, b.sched, &mut c.processor);
        let erase = scheduler::NandOp::Erase { gc_victim: false };
        let read = scheduler::NandOp::GcRead {
            planes: 1,
            bytes: 4096,
            units: 1,
            types: 1,
        };
        sched.enqueue(k, p, 0, erase); // runs from 0 to about 3.8 ms
        sched.enqueue(k, p, 1, erase); // waits for die 0
        sched.enqueue(k, p, 1, read);
        sched.set_power_dies_max(k, Some(2)); // the line tries at once (after die 2 starts)
        sched.enqueue(k, p, 2, read); // room for it: ends after about 0.1 ms
        sched.set_power_dies_max(k, Some(1));
        sched.enqueue(k, p, 3, erase); // waits behind die 1; a place may free at die 2's end
        let die2_read_end = sched.nand.die_free_at(2);
        while dev.step() {}
        let ends: Vec<SimTime> = (0..4).map(|d| dev.sched.nand.die_free_at(d)).collect();
        let erase_ns = ends[0].0; // die 0's erase started at 0
        assert!(die2_read_end < ends[0]);
        // Die 1: its erase from die 0's end, then its read; die 3's erase from die 1's read end.
        assert!(ends[1].0 > 2 * erase_ns, "{ends:?}");
        assert_eq!(ends[3].0, ends[1].0 + erase_ns, "{ends:?}");
        // Dies 1 and 3 waited in line. Wake-ups that started no die: when the limit rose (die 2
        // took the place first) and at die 2's end (die 0 still running); the one at die 0's
        // end started die 1, and die 3 got its place at die 1's read end. At every end, one
        // more: at die 1's erase end (die 1 took its read).
        let futile = 2 + every_end as u64;
        assert_eq!(dev.sched.power_waits_counts(), (2, futile), "{every_end}");
    }
}

/// Per-interval write IOs and free blocks of random writes over the first three quarters of
/// the LBAs (the rest trimmed: 25% extra spare), after two drive writes of them untimed.
fn spare_series(cfg: &DriveConfig, seconds: f64) -> (Vec<u64>, Vec<u64>, Device) {
    let mut dev = Device::new(cfg, 1).unwrap();
    let span = (dev.geometry.logical_units * 3 / 4) as u32;
    dev.fill_untimed(0, span);
    dev.random_writes_untimed(0, span, 2 * span as u64, 5);
    let job = Job {
        rw: "randwrite".into(),
        iodepth: 32,
        size: Some((span as u64 * dev.geometry.mapping_unit_bytes as u64).to_string()),
        runtime_s: Some(seconds),
        time_based: true,
        log_interval_s: 0.05,
        ..Job::default()
    };
    let r = run(&mut dev, job);
    let n = r.series.write_ios.len() - 1; // the last interval is partial
    (
        r.series.write_ios[..n].to_vec(),
        r.series.free_blocks[..n].to_vec(),
        dev,
    )
}

#[test]
fn nominal_pace_with_extra_spare_cycles_between_the_watermarks() {
    // Issue 71: a pace sized for the drive's own spare runs ahead of what the emptier victims
    // of a drive with extra spare need, so the free blocks climb to the high watermark, the
    // host then writes at fresh speed down to the low one, and is paced again: bursts over a
    // floor. Paced by what each victim needs, the same drive holds one flat level.
    let cfg = |pace| {
        let mut cfg = firmware_example();
        // Room for the watermarks' free blocks on the small drive.
        cfg.ftl.user_capacity_bytes = 400_000_000;
        cfg.ftl.gc_pace = pace;
        cfg.ftl.gc_free_blocks_low = 3;
        cfg.ftl.gc_free_blocks_high = 8;
        cfg
    };
    let (w_nom, free_nom, dev) = spare_series(&cfg(crate::config::GcPace::Nominal), 8.0);
    dev.ftl.verify().unwrap();
    let dies = dev.geometry.dies as u64;
    let (w_vic, free_vic, dev) = spare_series(&cfg(crate::config::GcPace::Victim), 8.0);
    dev.ftl.verify().unwrap();
    let spread = |w: &[u64]| {
        let mut s = w.to_vec();
        s.sort_unstable();
        (s[s.len() / 10] as f64, s[s.len() * 9 / 10] as f64)
    };
    // The nominal pace reaches the high watermark and comes down to the low one again.
    let top = free_nom
        .iter()
        .position(|&f| f >= 8 * dies)
        .expect("reaches the high watermark");
    assert!(
        free_nom[top..].iter().any(|&f| f <= 3 * dies + 1),
        "{free_nom:?}"
    );
    let (lo, hi) = spread(&w_nom);
    assert!(hi > 2.0 * lo, "nominal: p10 {lo}, p90 {hi}");
    // The victim's pace keeps the free blocks at the foreground minimum and the IOPS level.
    assert!(free_vic.iter().all(|&f| f < 8 * dies), "{free_vic:?}");
    let (lo, hi) = spread(&w_vic);
    assert!(hi < 1.3 * lo, "victim: p10 {lo}, p90 {hi}");
}

#[test]
fn nominal_pace_is_deterministic() {
    let mut cfg = firmware_example();
    cfg.ftl.user_capacity_bytes = 400_000_000;
    cfg.ftl.gc_pace = crate::config::GcPace::Nominal;
    let once = || {
        let (w, free, dev) = spare_series(&cfg, 2.0);
        (w, free, dev.ftl.state_digest())
    };
    assert_eq!(once(), once());
}
