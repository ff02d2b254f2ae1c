use super::*;
use crate::config::DriveConfig;
use crate::ftl::NO_PLACEMENT;
use crate::session::run_to_end;

fn dev() -> Device {
    let mut d = Device::new(
        &DriveConfig::from_toml_str(crate::EXAMPLE_DRIVE_TOML).unwrap(),
        1,
    )
    .unwrap();
    let n = d.geometry.logical_units as u32;
    d.fill_untimed(0, n);
    d
}

fn burst(gap_ns: u64) -> Vec<ReplayRequest> {
    // Two bursts of 8 reads, 10 s apart.
    (0..16u64)
        .map(|i| ReplayRequest {
            arrival_ns: if i < 8 {
                i * gap_ns
            } else {
                10 * NS_PER_S + i * gap_ns
            },
            kind: IoKind::Read,
            offset_bytes: i << 20,
            length_bytes: 4096,
            recorded_depth: 0,
            placement: NO_PLACEMENT,
        })
        .collect()
}

fn replay(mode: ReplayMode, reqs: Vec<ReplayRequest>) -> ReplaySummary {
    let mut d = dev();
    let mut run = ReplayRun::new(&d, reqs.into_iter(), mode, NS_PER_S);
    assert!(run.advance(&mut d, SimTime(u64::MAX)));
    run.finish(&d).0
}

/// Stepping through the events that complete nothing without asking the replay (until the
/// next request is due, the next interval ends or a command completes) gives what asking
/// at every event gives, in every mode: the same summary and series, bit for bit, with
/// garbage collection under way.
#[test]
fn quiet_stretches_give_what_asking_at_every_event_gives() {
    let reqs: Vec<_> = (0..6000u64)
        .map(|i| ReplayRequest {
            arrival_ns: i * 40_000 + (i % 7) * 3_000_000 * (i % 500 == 0) as u64,
            kind: if i % 3 == 0 {
                IoKind::Read
            } else {
                IoKind::Write
            },
            offset_bytes: (i * 7919 % 100_000) * 4096,
            length_bytes: 4096 << (i % 3),
            recorded_depth: 1 + (i % 5) as u32,
            placement: NO_PLACEMENT,
        })
        .collect();
    for mode in [
        ReplayMode::Timed { scale: 0.5 },
        ReplayMode::Afap { max_outstanding: 0 },
        ReplayMode::QueueDepth { depth: 4 },
        ReplayMode::RecordedDepth,
    ] {
        let mut outcomes = Vec::new();
        for ask in [false, true] {
            let mut d = dev();
            let n = d.geometry.logical_units as u32;
            d.random_writes_untimed(0, n, 2 * n as u64, 9);
            let copied = d.ftl.counters.gc_units_copied;
            let mut run = ReplayRun::new(&d, reqs.clone().into_iter(), mode, NS_PER_S / 200);
            let ReplayRun { source, session } = &mut run;
            run_to_end(session, &mut d, source, NS_PER_S / 50, ask);
            assert!(d.ftl.counters.gc_units_copied > copied, "{mode:?}: GC ran");
            let (summary, series) = run.finish(&d);
            assert_eq!(summary.requests, 6000);
            outcomes.push((
                d.now(),
                serde_json::to_string(&summary).unwrap(),
                serde_json::to_string(&series).unwrap(),
            ));
        }
        assert_eq!(outcomes[0], outcomes[1], "{mode:?}");
    }
}

/// A drive short of free blocks collects in the idle gaps of a timed replay, as events of
/// the replay's own loop: each interval's GC column holds the copies made in it (not the
/// next busy interval's), the collection stops while a request is in the drive, and
/// the same requests give the same series.
#[test]
fn background_collection_lands_in_the_idle_intervals_where_it_runs() {
    let reqs: Vec<_> = (0..2u64)
        .map(|i| ReplayRequest {
            arrival_ns: i * 6 * NS_PER_S,
            kind: IoKind::Write,
            offset_bytes: 4096 * 7919 * (i + 1),
            length_bytes: 4096,
            recorded_depth: 0,
            placement: NO_PLACEMENT,
        })
        .collect();
    let run_it = || {
        let mut d = dev();
        let n = d.geometry.logical_units as u32;
        d.random_writes_untimed(0, n, 2 * n as u64, 9);
        let free_before = d.ftl.free_blocks_total();
        let mut run = ReplayRun::new(
            &d,
            reqs.clone().into_iter(),
            ReplayMode::Timed { scale: 1.0 },
            NS_PER_S,
        );
        assert!(run.advance(&mut d, SimTime(u64::MAX)));
        let (_, series) = run.finish(&d);
        (free_before, d.ftl.free_blocks_total(), series)
    };
    let (before, after, series) = run_it();
    let target = {
        let d = dev();
        d.config.ftl.gc_background_free_blocks_target as u64 * d.geometry.dies as u64
    };
    assert!(
        before < target && after >= target,
        "{before} -> {after}, target {target}"
    );
    // The idle timer runs out soon after the first write: collection runs from then until
    // the target is reached (2.7 s on this drive), and only then.
    let gc = &series.gc_units_copied;
    let busy = gc.iter().take_while(|&&c| c > 0).count();
    assert!((2..6).contains(&busy), "{gc:?}");
    assert!(gc[busy..].iter().all(|&c| c == 0), "{gc:?}");
    // Each interval ends with the free blocks it ended with (none is left at 0).
    assert!(
        series.free_blocks.windows(2).all(|w| w[1] >= w[0]),
        "{:?}",
        series.free_blocks
    );
    assert_eq!(*series.free_blocks.last().unwrap(), after);
    assert_eq!(
        serde_json::to_string(&series).unwrap(),
        serde_json::to_string(&run_it().2).unwrap()
    );
    // A command in the drive drops the plan; it comes back once the drive is idle again.
    let mut d = dev();
    let n = d.geometry.logical_units as u32;
    d.random_writes_untimed(0, n, 2 * n as u64, 9);
    let t = d.now() + crate::time::SimDuration::from_secs_f64(1.0);
    d.pass_time_to(t);
    let far = SimTime(u64::MAX);
    assert!(d.background_step_before(far).is_some());
    d.submit(
        HostIo {
            kind: IoKind::Read,
            offset_bytes: 0,
            length_bytes: 4096,
            fua: false,
            tag: 1,
            placement: crate::ftl::NO_PLACEMENT,
        },
        t,
    );
    assert!(d.background_step_before(far).is_none());
    d.run_until(far);
    assert_eq!(d.outstanding(), 0);
    let (at, _) = d.background_step_before(far).expect("idle again");
    assert!(
        at >= d.now(),
        "not before the idle timer of the last completion"
    );
}

#[test]
fn timed_keeps_gaps_afap_removes_idle() {
    let timed = replay(ReplayMode::Timed { scale: 1.0 }, burst(1000));
    let afap = replay(ReplayMode::Afap { max_outstanding: 0 }, burst(1000));
    assert_eq!(timed.requests, 16);
    assert!(timed.elapsed_s > 10.0, "{}", timed.elapsed_s);
    assert!(afap.elapsed_s < 0.01, "{}", afap.elapsed_s);
    // Same requests, same service: busy time is what the drive was working either way.
    assert!((timed.all.busy_s - afap.all.busy_s).abs() < 1e-4);
    let half = replay(ReplayMode::Timed { scale: 0.5 }, burst(1000));
    assert!(half.elapsed_s > 5.0 && half.elapsed_s < 5.1);
}

/// Afap with a bounded host queue (issue 73 item 4): requests that arrive faster than the
/// drive serves them never have more than the bound outstanding, the recorded gaps after a
/// held request count from when it went, and the service time stays that of a bounded
/// queue while the open loop's grows with the backlog.
#[test]
fn a_bounded_afap_replay_never_has_more_than_its_bound_outstanding() {
    let reqs: Vec<_> = (0..3000u64)
        .map(|i| ReplayRequest {
            arrival_ns: i * 1_000,
            kind: IoKind::Write,
            offset_bytes: (i * 7919 % 100_000) * 4096,
            length_bytes: 4096,
            recorded_depth: 0,
            placement: NO_PLACEMENT,
        })
        .collect();
    let run = |bound: u32| {
        let mut d = dev();
        let mode = ReplayMode::Afap {
            max_outstanding: bound,
        };
        let mut run =
            ReplayRun::new(&d, reqs.clone().into_iter(), mode, NS_PER_S).with_request_log();
        assert!(run.advance(&mut d, SimTime(u64::MAX)));
        let log = run.take_log();
        (run.finish(&d).0, log)
    };
    let (open, _) = run(0);
    let (bounded, log) = run(4);
    assert_eq!(bounded.requests, 3000);
    let mut events: Vec<(u64, i32)> = log.submit_ns.iter().map(|&t| (t, 1)).collect();
    events.extend(log.complete_ns.iter().map(|&t| (t, -1)));
    events.sort(); // a completion at the same instant as a submission goes first
    let mut outstanding = 0;
    let most = events
        .iter()
        .map(|&(_, d)| {
            outstanding += d;
            outstanding
        })
        .max()
        .unwrap();
    assert_eq!(
        most, 4,
        "at most the bound outstanding, and the bound reached"
    );
    assert!(
        bounded.all.ops.latency_us_mean * 5.0 < open.all.ops.latency_us_mean,
        "bounded {} us, open loop {} us",
        bounded.all.ops.latency_us_mean,
        open.all.ops.latency_us_mean
    );
    // The same work either way; the bounded host waits, so it takes no less time.
    assert_eq!(bounded.host_units_written, open.host_units_written);
    assert!(bounded.elapsed_s >= open.elapsed_s * 0.95);
}

#[test]
fn queue_depth_mode_keeps_depth() {
    let reqs: Vec<_> = (0..2000u64)
        .map(|i| ReplayRequest {
            arrival_ns: i * NS_PER_S,
            kind: IoKind::Read,
            offset_bytes: (i * 7919 % 100_000) * 4096,
            length_bytes: 4096,
            recorded_depth: 8,
            placement: NO_PLACEMENT,
        })
        .collect();
    let qd1 = replay(ReplayMode::QueueDepth { depth: 1 }, reqs.clone());
    let qd8 = replay(ReplayMode::QueueDepth { depth: 8 }, reqs.clone());
    let recorded = replay(ReplayMode::RecordedDepth, reqs);
    assert_eq!(recorded.all.ops.iops, qd8.all.ops.iops);
    assert!(
        qd8.all.ops.iops > 3.0 * qd1.all.ops.iops,
        "{} vs {}",
        qd8.all.ops.iops,
        qd1.all.ops.iops
    );
    // Busy the whole time at QD1: data rate = bytes / elapsed.
    assert!((qd1.all.busy_s - qd1.elapsed_s).abs() / qd1.elapsed_s < 0.01);
}

fn req(t: u64, kind: IoKind, offset: u64, len: u64) -> ReplayRequest {
    ReplayRequest {
        arrival_ns: t,
        kind,
        offset_bytes: offset,
        length_bytes: len,
        recorded_depth: 0,
        placement: NO_PLACEMENT,
    }
}

#[test]
fn timed_mode_moves_through_long_idle_gaps() {
    // Two requests 1100 s apart: advanced in 1 s slices from the replay's own clock (as the
    // bindings do), the replay ends after about 1100 slices instead of never.
    let mut d = dev();
    let reqs = vec![
        req(0, IoKind::Read, 0, 4096),
        req(1_100 * NS_PER_S, IoKind::Read, 8192, 4096),
    ];
    let mut run = ReplayRun::new(
        &d,
        reqs.into_iter(),
        ReplayMode::Timed { scale: 1.0 },
        NS_PER_S,
    );
    let mut slices = 0;
    loop {
        let until = SimTime(run.now(&d).ns() + NS_PER_S);
        if run.advance(&mut d, until) {
            break;
        }
        slices += 1;
        assert!(slices < 1200, "stuck at {:?}", run.progress(&d));
    }
    let (s, series) = run.finish(&d);
    assert!(slices >= 1099, "{slices}");
    assert_eq!(s.requests, 2);
    assert!(
        s.elapsed_s > 1100.0 && s.elapsed_s < 1100.01,
        "{}",
        s.elapsed_s
    );
    assert_eq!(series.len(), 1101);
}

#[test]
fn mapping_checks_bounds_without_overflow_and_counts_disorder() {
    let user = 1u64 << 30;
    let mut m = Mapper::new(MapOptions {
        user_bytes: user,
        device: None,
        wrap: false,
    });
    let near_max = TraceRequest {
        arrival_ns: 5,
        device: 0,
        kind: IoKind::Write,
        offset_bytes: u64::MAX - 100,
        length_bytes: 4096,
        service_ns: None,
        placement: NO_PLACEMENT,
    };
    let e = m.map(near_max).unwrap_err();
    assert!(
        e.contains("beyond the drive") && e.contains("--wrap"),
        "{e}"
    );
    let mut w = Mapper::new(MapOptions {
        user_bytes: user,
        device: Some(3),
        wrap: true,
    });
    let r = w
        .map(TraceRequest {
            device: 3,
            ..near_max
        })
        .unwrap()
        .unwrap();
    assert!(r.offset_bytes + r.length_bytes <= user && r.offset_bytes.is_multiple_of(512));
    assert_eq!(
        w.map(TraceRequest {
            device: 4,
            ..near_max
        })
        .unwrap(),
        None
    );
    let r = w
        .map(TraceRequest {
            device: 3,
            arrival_ns: 1,
            offset_bytes: 0,
            ..near_max
        })
        .unwrap()
        .unwrap();
    assert_eq!(r.offset_bytes, 0);
    assert_eq!(
        (
            w.counts.wrapped,
            w.counts.other_devices_skipped,
            w.counts.out_of_order,
            w.counts.mapped
        ),
        (1, 1, 1, 2)
    );
    let e = m
        .map(TraceRequest {
            length_bytes: user + 1,
            offset_bytes: 0,
            ..near_max
        })
        .unwrap_err();
    assert!(e.contains("larger than the drive"), "{e}");
}

#[test]
fn trims_are_apart_and_the_final_flush_counts_buffered_writes() {
    // A short trace: 24 x 4 KiB writes (less than a program unit stays buffered) and a
    // 64 MiB trim.
    let mut reqs: Vec<_> = (0..24u64)
        .map(|i| req(i * 1000, IoKind::Write, i * 4096, 4096))
        .collect();
    reqs.push(req(30_000, IoKind::Trim, 1 << 26, 1 << 26));
    let mut d = dev();
    let mut run = ReplayRun::new(
        &d,
        reqs.into_iter(),
        ReplayMode::Afap { max_outstanding: 0 },
        NS_PER_S,
    )
    .with_request_log();
    assert!(run.advance(&mut d, SimTime(u64::MAX)));
    let log = run.take_log();
    let (s, series) = run.finish(&d);
    assert_eq!(
        (
            s.all.ops.ios,
            s.write.ops.ios,
            s.trim.ops.ios,
            s.trim_requests
        ),
        (24, 24, 1, 1)
    );
    assert_eq!(s.all.ops.bytes, 24 * 4096, "trim bytes are not data moved");
    assert!(s.trim.ops.bytes == 1 << 26 && s.trim.busy_s > 0.0);
    assert!(s.write_amplification >= 1.0, "{}", s.write_amplification);
    assert!(s.final_flush_s > 0.0);
    assert!(series.nand_page_programs.iter().sum::<u64>() > 0);
    assert!(series.free_blocks.iter().all(|&f| f > 0));
    assert_eq!(log.len(), 25);
    assert!(log.op.iter().filter(|&&o| o == 2).count() == 1);
    assert!((0..log.len()).all(|i| log.complete_ns[i] >= log.submit_ns[i]));
    assert_eq!(log.arrival_ns[..3], [0, 1000, 2000]);
}

/// Issue 25 item 19: a trace whose first line is its latest (a Tencent sample) keeps its
/// recorded arrivals in the log (negative before the first) and its gaps in timed mode,
/// instead of arriving all at once.
#[test]
fn timestamps_going_backwards_keep_their_arrivals_and_gaps() {
    let s = NS_PER_S;
    let reqs = vec![
        req(100 * s, IoKind::Read, 0, 4096),
        req(s, IoKind::Read, 1 << 20, 4096),
        req(2 * s, IoKind::Read, 2 << 20, 4096),
        req(3 * s, IoKind::Read, 3 << 20, 4096),
    ];
    let mut d = dev();
    let mut run = ReplayRun::new(&d, reqs.into_iter(), ReplayMode::Timed { scale: 1.0 }, s)
        .with_request_log();
    assert!(run.advance(&mut d, SimTime(u64::MAX)));
    let log = run.take_log();
    let mut rows: Vec<(i64, u64)> = (0..log.len())
        .map(|i| (log.arrival_ns[i], log.submit_ns[i]))
        .collect();
    rows.sort_unstable();
    let secs = |ns: u64| (ns as f64 / s as f64).round() as u64;
    assert_eq!(
        rows.iter().map(|r| r.0).collect::<Vec<_>>(),
        vec![-99 * s as i64, -98 * s as i64, -97 * s as i64, 0]
    );
    // The step back restarts the clock: sent at 0, then 1 s and 2 s later.
    assert_eq!(
        rows.iter().map(|r| secs(r.1)).collect::<Vec<_>>(),
        vec![0, 1, 2, 0]
    );
}
