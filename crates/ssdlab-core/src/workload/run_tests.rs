use super::*;
use crate::config::DriveConfig;
use crate::session::run_to_end;
use crate::workload::Job;

fn results(dev: &Device, run: JobRun) -> String {
    let mut out = String::new();
    for r in run.finish(dev) {
        out += &serde_json::to_string(&r.summary).unwrap();
        out += &serde_json::to_string(&r.series).unwrap();
    }
    out
}

/// A strided sequence ends the job at the span's end, time_based or not (fio counts each
/// direction's IOs over the whole job, so nothing starts the pattern again); refused
/// forms name what is accepted.
#[test]
fn a_strided_sequence_ends_the_job_at_the_span_end() {
    let cfg = DriveConfig::from_toml_str(crate::EXAMPLE_DRIVE_TOML).unwrap();
    let mut dev = Device::new(&cfg, 3).unwrap();
    dev.fill_untimed(0, 64);
    let job = Job {
        rw: "randread".into(),
        bs: "4k".into(),
        size: Some("48k".into()),
        iodepth: 4,
        runtime_s: Some(5.0),
        time_based: true,
        random_distribution: "sequence:2,0,1".into(),
        random_sequence_stride: true,
        ..Job::default()
    };
    let compiled = job.compile(dev.user_bytes()).unwrap();
    let r = run_job(&mut dev, &compiled, &mut |_| {});
    assert_eq!(r.summary.read.ios, 12);
    assert!(r.summary.elapsed_s < 0.01, "{}", r.summary.elapsed_s);
    for (distribution, stride, message) in [
        (
            "sequence:2,x",
            false,
            "sequence element 'x' is not a block index",
        ),
        ("sequence", false, "sequence needs its block indices"),
        (
            "sequence:12",
            false,
            "sequence block 12 lies beyond the job's span (12 blocks",
        ),
        (
            "random",
            true,
            "random_sequence_stride: applies to random_distribution=sequence",
        ),
    ] {
        let bad = Job {
            random_distribution: distribution.into(),
            random_sequence_stride: stride,
            ..job.clone()
        };
        let e = bad.compile(dev.user_bytes()).unwrap_err();
        assert!(e.contains(message), "{e}");
    }
    let long = Job {
        random_distribution: format!("sequence:{}", vec!["0"; 65].join(",")),
        ..job
    };
    assert!(long
        .compile(dev.user_bytes())
        .unwrap_err()
        .contains("up to 64"));
}

/// Stepping through the events that complete nothing without asking the source (between
/// completions, interval ends, ramp ends and job starts) gives what asking at every event
/// gives: the same summaries and series, bit for bit, with a ramp, short intervals, a
/// start delay, a job that waits for another, and garbage collection under way.
#[test]
fn quiet_stretches_give_what_asking_at_every_event_gives() {
    let cfg = DriveConfig::from_toml_str(crate::EXAMPLE_DRIVE_TOML).unwrap();
    let writer = |name: &str| Job {
        name: name.into(),
        rw: "randwrite".into(),
        bs: "4k".into(),
        iodepth: 8,
        runtime_s: Some(0.2),
        time_based: true,
        ramp_time_s: 0.05,
        log_interval_s: 0.003,
        ..Job::default()
    };
    let reader = Job {
        rw: "randrw".into(),
        startdelay_s: 0.02,
        ..writer("mixed")
    };
    let jobs = [writer("a"), reader, writer("c")];
    let after = [None, None, Some(0)];
    let mut outcomes = Vec::new();
    for ask in [false, true] {
        let mut dev = Device::new(&cfg, 3).unwrap();
        let n = dev.geometry.logical_units as u32;
        dev.fill_untimed(0, n);
        dev.random_writes_untimed(0, n, 2 * n as u64, 9);
        let copied = dev.ftl.counters.gc_units_copied;
        let compiled: Vec<_> = jobs
            .iter()
            .map(|j| j.compile(dev.user_bytes()).unwrap())
            .collect();
        let mut run = JobRun::group(&mut dev, &compiled, &after, 0).unwrap();
        let JobRun { source, session } = &mut run;
        run_to_end(session, &mut dev, source, NS_PER_S / 100, ask);
        assert!(dev.ftl.counters.gc_units_copied > copied, "GC ran");
        outcomes.push((dev.now(), results(&dev, run)));
    }
    assert!(outcomes[0].1.contains("\"name\":\"c\""));
    assert_eq!(outcomes[0], outcomes[1]);
}

/// fio's end_fsync: once the job's writes have completed, one FLUSH, and the job ends when it
/// has. Without power-loss protection it programs the partly filled program unit (padded), so
/// the next job starts on empty ones; with full protection it is acknowledged at once and the
/// unit stays open (issue 101: fio's path prepares each step with a TRIM and this FLUSH).
#[test]
fn end_fsync_flushes_once_the_writes_are_done_and_is_not_measured() {
    use crate::config::PowerLossProtection;
    let run = |protection: PowerLossProtection, end_fsync: bool, rw: &str| {
        let mut cfg = DriveConfig::from_toml_str(crate::EXAMPLE_DRIVE_TOML).unwrap();
        cfg.controller.power_loss_protection = protection;
        let mut dev = Device::new(&cfg, 3).unwrap();
        let units_per_pu = dev.geometry.units_per_pu as u64;
        assert!(units_per_pu > 3, "three units leave the program unit open");
        let job = Job {
            rw: rw.into(),
            bs: "4k".into(),
            size: Some("12k".into()),
            end_fsync,
            ..Job::default()
        };
        if rw == "trim" {
            dev.fill_untimed(0, 3);
            assert_eq!(dev.ftl.counters.padding_units, 0);
        }
        let compiled = job.compile(dev.user_bytes()).unwrap();
        let r = run_job(&mut dev, &compiled, &mut |_| {});
        let padded = dev.ftl.counters.padding_units;
        (r.summary, padded, units_per_pu, dev.now())
    };
    let (plain, padded, _, plain_end) = run(PowerLossProtection::Map, false, "write");
    assert_eq!((plain.write.ios, plain.trim.ios, padded), (3, 0, 0));
    let (flushed, padded, units_per_pu, flushed_end) = run(PowerLossProtection::Map, true, "write");
    assert_eq!(
        (flushed.write.ios, flushed.trim.ios),
        (3, 0),
        "the FLUSH is no IO of the job"
    );
    assert_eq!(padded, units_per_pu - 3, "the open unit programmed, padded");
    // The job ends when the FLUSH has, after the program it waited for (the writes' own
    // figures are what they were).
    assert!(
        flushed_end > plain_end,
        "{flushed_end:?} against {plain_end:?}"
    );
    assert_eq!(flushed.write.latency_us_mean, plain.write.latency_us_mean);
    let (_, padded, _, _) = run(PowerLossProtection::Full, true, "write");
    assert_eq!(padded, 0, "with full protection a FLUSH programs nothing");
    // As in fio, a job that does not write sends none.
    let (trimmed, padded, _, _) = run(PowerLossProtection::Map, true, "trim");
    assert_eq!((trimmed.trim.ios, padded), (3, 0));
}

/// fio's fdp with plids and plid_select: each write carries the placement identifier of the
/// index its turn (or its draw) names, and the drive's statistics log counts them per handle.
#[test]
fn an_fdp_job_s_writes_carry_their_placement_identifiers() {
    let run = |plids: Option<&str>, select: &str| {
        let mut cfg = DriveConfig::from_toml_str(crate::EXAMPLE_DRIVE_TOML).unwrap();
        cfg.placement = Some(crate::config::PlacementConfig::default_fdp());
        // The small example drive has room for 8 handles' open blocks with a quarter less data.
        cfg.ftl.user_capacity_bytes = cfg.ftl.user_capacity_bytes / 4 * 3;
        let mut dev = Device::new(&cfg, 3).unwrap();
        let job = Job {
            rw: "randwrite".into(),
            bs: "4k".into(),
            size: Some("4m".into()),
            iodepth: 8,
            fdp: true,
            plids: plids.map(String::from),
            plid_select: select.into(),
            ..Job::default()
        };
        let compiled = job.compile(dev.user_bytes()).unwrap();
        let r = run_job(&mut dev, &compiled, &mut |_| {});
        let p = r
            .summary
            .placement
            .expect("a drive with placement reports it");
        assert_eq!(p.statistics.host_bytes_written, 4 << 20);
        let per_handle: Vec<u64> = p
            .handles
            .iter()
            .map(|h| h.host_bytes_written >> 12)
            .collect();
        (per_handle, p.events)
    };
    let (rr, events) = run(Some("1,3-4"), "roundrobin");
    assert_eq!(rr, [0, 342, 0, 341, 341, 0, 0, 0]);
    assert!(events.is_empty());
    let (all, _) = run(None, "roundrobin");
    assert_eq!(all, [128; 8]);
    let (drawn, _) = run(Some("0-1"), "random");
    assert_eq!(drawn[0] + drawn[1], 1024);
    assert!(drawn[0].abs_diff(512) < 80, "{drawn:?}");
    // An index past the drive's list names an invalid identifier: logged, placed by default.
    let (invalid, events) = run(Some("9"), "roundrobin");
    assert_eq!(invalid[0], 1024);
    assert_eq!(events.len(), 63, "the log keeps the latest 63");
    assert!(events
        .iter()
        .all(|e| e.kind == crate::ftl::FdpEventKind::InvalidPlacementIdentifier && e.pid == 9));
    // Each event carries the simulated time it happened: in order, within the run.
    assert!(events.windows(2).all(|w| w[0].at_ns <= w[1].at_ns));
    assert!(events[0].at_ns > 0 && events[62].at_ns > events[0].at_ns);
    let bad = Job {
        fdp: true,
        plids: Some("3-1".into()),
        ..Job::default()
    };
    assert_eq!(
        bad.compile(1 << 30).unwrap_err(),
        "plids: '3-1': the range's start is above its end"
    );
    let none = Job {
        dataplacement: "streams".into(),
        ..Job::default()
    };
    assert!(none
        .compile(1 << 30)
        .unwrap_err()
        .contains("accepted: none, fdp"));
}

/// fio's zonemode=zbd on a zoned drive: random writes go to zones' write pointers, full zones
/// chosen again are reset, nothing is refused and the drive copies nothing; with
/// zone_reset_threshold and zone_reset_frequency the resets come sooner.
#[test]
fn a_zbd_job_writes_at_the_write_pointers_and_resets_full_zones() {
    let run = |threshold: Option<&str>, max_open: u32| {
        let mut cfg = crate::config::tests::small();
        cfg.placement = Some(crate::config::PlacementConfig::default_zns(2 << 20, 4));
        let mut dev = Device::new(&cfg, 3).unwrap();
        let job = Job {
            rw: "randwrite".into(),
            bs: "128k".into(),
            iodepth: 4,
            zonemode: "zbd".into(),
            zonesize: Some("2m".into()),
            size: Some("16z".into()),
            offset: "4z".into(),
            max_open_zones: max_open,
            zone_reset_threshold: threshold.map(String::from),
            zone_reset_frequency: threshold.map(|_| "0.25".into()),
            io_size: Some("96m".into()),
            ..Job::default()
        };
        let compiled = job
            .compile(dev.namespace_bytes())
            .map_err(|e| e.to_string())?;
        let mut run = JobRun::group(&mut dev, std::slice::from_ref(&compiled), &[None], 3)?;
        while !run.advance(&mut dev, crate::time::SimTime(u64::MAX)) {}
        let r = run.finish(&dev).remove(0);
        Ok::<_, String>((r.summary, dev))
    };
    let (s, dev) = run(None, 0).unwrap();
    let z = s.zones.expect("a zoned drive reports its zones");
    assert_eq!(s.write.bytes, 96 << 20);
    assert_eq!(z.counters.refused, 0);
    assert_eq!(s.gc_units_copied, 0);
    // 96 MiB into 16 zones of 2 MiB: at least 32 resets, and only zones of the span written.
    assert!(z.counters.resets >= 32, "{z:?}");
    let report = dev.zone_report(0, 64);
    assert!(report
        .iter()
        .filter(|d| d.zone < 4 || d.zone >= 20)
        .all(|d| d.state == crate::zones::ZoneState::Empty));
    let (early, _) = run(Some("0.5"), 0).unwrap();
    assert!(
        early.zones.unwrap().counters.resets > z.counters.resets,
        "the threshold resets zones before they fill"
    );
    let Err(e) = run(None, 8) else {
        panic!("max_open_zones above the drive's was accepted")
    };
    assert!(
        e.contains("max_open_zones: 8 is above the drive's 4"),
        "{e}"
    );
}
