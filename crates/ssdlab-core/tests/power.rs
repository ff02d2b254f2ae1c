//! The power model end to end, each check in the direction the physics says: energy grows with
//! NAND work, idle power falls with deeper link states, the first command after idle pays its
//! state's exit latency, the same seed gives the same figures, and a drive without `[power]`
//! accounts nothing.

use ssdlab_core::config::DriveConfig;
use ssdlab_core::device::{Device, HostIo, IoKind};
use ssdlab_core::power::{LinkPolicy, LinkState, PowerConfig};
use ssdlab_core::thermal::ThermalConfig;
use ssdlab_core::time::SimDuration;
use ssdlab_core::workload::{run_job, Job, JobResult};

fn power() -> PowerConfig {
    PowerConfig {
        nand_vcc_v: 3.3,
        nand_icc_read_ma: 25.0,
        nand_icc_program_ma: 25.0,
        nand_icc_erase_ma: 25.0,
        nand_vccq_v: 1.8,
        nand_iccq_io_ma: 20.0,
        controller_busy_w: 0.5,
        dram_pj_per_byte: 0.0,
        idle_active_w: 1.0,
        idle_partial_w: 0.35,
        idle_slumber_w: 0.1,
        idle_devsleep_w: 0.005,
        partial_exit_us: 10.0,
        slumber_exit_us: 10_000.0,
        devsleep_exit_us: 20_000.0,
        dipm_partial_after_us: 100.0,
        dipm_slumber_after_us: 10_000.0,
        power_limit_w: None,
        nand_standby_ma: 0.0,
        dram: None,
    }
}

fn drive(with_power: bool) -> Device {
    let mut cfg = DriveConfig::from_toml_str(ssdlab_core::EXAMPLE_DRIVE_TOML).unwrap();
    cfg.power = with_power.then(power);
    Device::new(&cfg, 7).unwrap()
}

fn run(dev: &mut Device, rw: &str, seconds: f64, link_power: &str) -> JobResult {
    run_bs(dev, rw, "4k", seconds, link_power)
}

/// `rw` of `bs` transfers at QD32 for `seconds` simulated, the host's link policy `link_power`.
fn run_bs(dev: &mut Device, rw: &str, bs: &str, seconds: f64, link_power: &str) -> JobResult {
    let job = Job {
        rw: rw.into(),
        bs: bs.into(),
        iodepth: 32,
        runtime_s: Some(seconds),
        time_based: true,
        log_interval_s: 0.1,
        link_power: link_power.into(),
        ..Job::default()
    };
    let compiled = job.compile(dev.user_bytes()).unwrap();
    run_job(dev, &compiled, &mut |_| {})
}

fn energy_j(dev: &Device) -> f64 {
    dev.energy_j(dev.now())
}

#[test]
fn a_job_that_does_more_nand_work_spends_more_energy_in_the_same_time() {
    let summary = |iodepth: u32| {
        let mut dev = drive(true);
        dev.fill_untimed(0, (dev.user_bytes() / 4096) as u32);
        let job = Job {
            rw: "randread".into(),
            iodepth,
            runtime_s: Some(1.0),
            time_based: true,
            ..Job::default()
        };
        let compiled = job.compile(dev.user_bytes()).unwrap();
        let r = run_job(&mut dev, &compiled, &mut |_| {});
        (r.summary.read.ios, r.summary.power.unwrap())
    };
    let (ios_1, qd1) = summary(1);
    let (ios_32, qd32) = summary(32);
    // Four dies reading at once do more reads, and so spend more, in the same second.
    assert!(ios_32 > 2 * ios_1, "{ios_1} vs {ios_32}");
    assert!(qd32.energy_j > qd1.energy_j, "{qd1:?} vs {qd32:?}");
    // Both above the idle floor (1 W for the 1 s run); the busiest second is the peak.
    assert!(qd1.average_w > 1.0, "{qd1:?}");
    assert!(qd32.peak_w >= qd32.average_w);
    // Random writes to a full drive also collect (copy and erase): more energy per host byte.
    let mut dev = drive(true);
    dev.fill_untimed(0, (dev.user_bytes() / 4096) as u32);
    let w = run(&mut dev, "randwrite", 1.0, "none")
        .summary
        .power
        .unwrap();
    assert!(w.joules_per_gb > qd32.joules_per_gb, "{w:?} vs {qd32:?}");
}

#[test]
fn idle_power_falls_with_each_deeper_link_policy() {
    let mut watts = Vec::new();
    for policy in [
        LinkPolicy::None,
        LinkPolicy::Dipm,
        LinkPolicy::HipmDipm,
        LinkPolicy::DevSleep,
    ] {
        let mut dev = drive(true);
        dev.set_link_policy(policy);
        let from = dev.now();
        let e0 = energy_j(&dev);
        let until = from + SimDuration::from_secs_f64(5.0);
        ssdlab_core::session::idle(&mut dev, until);
        let e1 = dev.energy_j(until);
        watts.push((e1 - e0) / 5.0);
    }
    assert!((watts[0] - 1.0).abs() < 1e-9, "{watts:?}");
    for pair in watts.windows(2) {
        assert!(pair[1] < pair[0], "{watts:?}");
    }
    // Partial after 0.1 ms (DIPM; HIPM's Slumber at the same time), DEVSLP after the host's
    // 1 s: 1 W for 0.1 ms, 0.1 W to 1 s, 0.005 W for 4 s.
    assert!(
        (watts[3] - (1e-4 + 0.1 * (1.0 - 1e-4) + 4.0 * 0.005) / 5.0).abs() < 1e-9,
        "{watts:?}"
    );
}

/// Average idle power over 5 s under `policy` of the example drive with `dram_bytes` of DRAM
/// whose background power is itemised (`[power.dram]`).
fn idle_w_with_dram(policy: LinkPolicy, dram_bytes: u64) -> f64 {
    let mut cfg = DriveConfig::from_toml_str(ssdlab_core::EXAMPLE_DRIVE_TOML).unwrap();
    cfg.controller.dram_bytes = dram_bytes;
    cfg.power = Some(PowerConfig {
        nand_standby_ma: 0.01,
        dram: Some(ssdlab_core::power::DramPower {
            standby_w_per_gib: 0.28,
            power_down_w_per_gib: 0.10,
            self_refresh_w_per_gib: 0.072,
        }),
        ..power()
    });
    let mut dev = Device::new(&cfg, 7).unwrap();
    dev.set_link_policy(policy);
    let from = dev.now();
    let e0 = energy_j(&dev);
    let until = from + SimDuration::from_secs_f64(5.0);
    ssdlab_core::session::idle(&mut dev, until);
    (dev.energy_j(until) - e0) / 5.0
}

#[test]
fn more_dram_draws_more_in_each_idle_state_by_its_datasheet_figure_and_nothing_in_devsleep() {
    let gib = 1u64 << 30;
    // Link active: the standby figure per GiB, exactly.
    let active =
        idle_w_with_dram(LinkPolicy::None, gib) - idle_w_with_dram(LinkPolicy::None, gib / 4);
    assert!((active - 0.75 * 0.28).abs() < 1e-9, "{active}");
    // HIPM+DIPM: Slumber from HIPM's 0.1 ms (hiding DIPM's Partial at the same time), in
    // self refresh from then on.
    let slumber = idle_w_with_dram(LinkPolicy::HipmDipm, gib)
        - idle_w_with_dram(LinkPolicy::HipmDipm, gib / 4);
    let want = 0.75 * (0.28 * 1e-4 + 0.072 * (5.0 - 1e-4)) / 5.0;
    // DIPM alone: Partial (power-down) from 0.1 ms to its 10 ms Slumber timer.
    let dipm =
        idle_w_with_dram(LinkPolicy::Dipm, gib) - idle_w_with_dram(LinkPolicy::Dipm, gib / 4);
    let want_dipm = 0.75 * (0.28 * 1e-4 + 0.10 * (0.01 - 1e-4) + 0.072 * 4.99) / 5.0;
    assert!(
        (dipm - want_dipm).abs() < 1e-9,
        "{dipm} against {want_dipm}"
    );
    assert!((slumber - want).abs() < 1e-9, "{slumber} against {want}");
    // DevSleep (from the host's 1 s) powers the DRAM down: the difference is only its first second.
    let devsleep = idle_w_with_dram(LinkPolicy::DevSleep, gib)
        - idle_w_with_dram(LinkPolicy::DevSleep, gib / 4);
    assert!(devsleep < slumber / 4.0, "{devsleep} against {slumber}");
}

#[test]
fn a_dram_power_table_without_the_dram_size_is_refused_with_the_field() {
    let mut cfg = DriveConfig::from_toml_str(ssdlab_core::EXAMPLE_DRIVE_TOML).unwrap();
    cfg.controller.dram_bytes = 0;
    cfg.power = Some(PowerConfig {
        dram: Some(ssdlab_core::power::DramPower {
            standby_w_per_gib: 0.28,
            power_down_w_per_gib: 0.10,
            self_refresh_w_per_gib: 0.072,
        }),
        ..power()
    });
    let err = cfg.validate().unwrap_err();
    assert_eq!(err.field, "power.dram");
    assert!(
        err.message.contains("controller.dram_bytes"),
        "{}",
        err.message
    );
}

/// Latency of one 4 KiB read submitted after `idle` of idling under `policy`.
fn read_after_idle(policy: LinkPolicy, idle: SimDuration) -> (u64, LinkState) {
    let mut dev = drive(true);
    dev.fill_untimed(0, 1024);
    dev.set_link_policy(policy);
    let at = dev.now() + idle;
    ssdlab_core::session::idle(&mut dev, at);
    let state = dev.link_state(at);
    dev.submit(
        HostIo {
            kind: IoKind::Read,
            offset_bytes: 0,
            length_bytes: 4096,
            tag: 1,
            fua: false,
            placement: ssdlab_core::ftl::NO_PLACEMENT,
        },
        at,
    );
    while dev.step() {}
    let c = dev.drain_completions().next().unwrap();
    (c.latency_ns(), state)
}

#[test]
fn the_first_command_after_idle_pays_the_exit_latency_of_the_state_reached() {
    let idle = SimDuration::from_secs_f64(0.5);
    let (awake, s0) = read_after_idle(LinkPolicy::None, idle);
    let (slumber, s1) = read_after_idle(LinkPolicy::Hipm, idle);
    let (devsleep, s2) = read_after_idle(LinkPolicy::DevSleep, SimDuration::from_secs_f64(2.0));
    assert_eq!(
        (s0, s1, s2),
        (LinkState::Active, LinkState::Slumber, LinkState::DevSleep)
    );
    assert_eq!(slumber - awake, 10_000_000, "slumber exit 10 ms");
    assert_eq!(devsleep - awake, 20_000_000, "DevSleep exit 20 ms");
}

#[test]
fn the_same_seed_gives_the_same_energy_series_bit_for_bit() {
    let series = || {
        let mut dev = drive(true);
        run(&mut dev, "randwrite", 0.5, "hipm+dipm").series
    };
    let (a, b) = (series(), series());
    assert!(a.energy_uj.iter().all(|&e| e > 0));
    assert_eq!(a.digest_power(0), b.digest_power(0));
    assert_eq!(a.energy_uj, b.energy_uj);
}

#[test]
fn a_drive_without_a_power_model_accounts_nothing_and_runs_as_before() {
    let mut plain = drive(false);
    let r = run(&mut plain, "randwrite", 0.3, "devsleep");
    assert!(r.summary.power.is_none());
    assert!(r.series.energy_uj.iter().all(|&e| e == 0));
    // The power model changes no timing while the link stays active.
    let mut powered = drive(true);
    let p = run(&mut powered, "randwrite", 0.3, "none");
    assert_eq!(r.series.digest_all(0), p.series.digest_all(0));
    assert_eq!(plain.now(), powered.now());
}

fn hot_drive(ambient_c: f64) -> Device {
    let mut cfg = DriveConfig::from_toml_str(ssdlab_core::EXAMPLE_DRIVE_TOML).unwrap();
    cfg.power = Some(PowerConfig {
        idle_active_w: 0.3,
        ..power()
    });
    // A small, badly cooled drive (time constant 10 s), so a short run heats it.
    cfg.thermal = Some(ThermalConfig {
        ambient_c,
        airflow_m_per_s: 0.0,
        resistance_still_air_c_per_w: 50.0,
        capacitance_j_per_c: 0.2,
        throttle_c: 70.0,
        throttle_release_c: 65.0,
        throttle_active_dies_pct: 50.0,
    });
    Device::new(&cfg, 7).unwrap()
}

#[test]
fn throttling_engages_when_hot_lowers_throughput_and_recovers_once_cool() {
    let seq_write = |dev: &mut Device, seconds: f64| run_bs(dev, "write", "128k", seconds, "none");
    let mut cool = hot_drive(20.0);
    let c = seq_write(&mut cool, 40.0);
    let mut hot = hot_drive(45.0);
    let h = seq_write(&mut hot, 40.0);
    let (cp, hp) = (c.summary.power.unwrap(), h.summary.power.unwrap());
    // The cool drive never reaches 70 C; the hot one does and throttles.
    assert_eq!(cp.throttled_s, Some(0.0), "{cp:?}");
    assert!(hp.throttled_s.unwrap() > 5.0, "{hp:?}");
    // Throttling holds it between the release and start thresholds.
    assert!(hp.temperature_c_max.unwrap() > 65.0, "{hp:?}");
    // Half the dies at a time: less written in the same time.
    assert!(
        h.summary.write.bytes < c.summary.write.bytes * 9 / 10,
        "{} vs {}",
        h.summary.write.bytes,
        c.summary.write.bytes
    );
    // Throughput in throttled seconds is below that of the seconds before throttling began.
    let first = h.series.throttled.iter().position(|&t| t == 1).unwrap();
    let before = h.series.write_bytes[first - 2];
    let during = h.series.write_bytes[h.series.len() - 2];
    assert!(during < before, "{during} vs {before}");
    // Left idle for a minute (settles near 60 C at idle), it cools and throttling ends.
    assert!(hot.throttling().unwrap().0);
    let until = hot.now() + SimDuration::from_secs_f64(60.0);
    ssdlab_core::session::idle(&mut hot, until);
    let r = run(&mut hot, "randread", 0.5, "none");
    assert!(r.summary.read.ios > 0);
    assert!(!hot.throttling().unwrap().0);
    assert!(hot.temperature_c().unwrap() < 65.0);
}

#[test]
fn a_power_budget_caps_the_dies_running_at_once_and_so_throughput() {
    let written = |limit: Option<f64>| {
        let mut cfg = DriveConfig::from_toml_str(ssdlab_core::EXAMPLE_DRIVE_TOML).unwrap();
        cfg.power = Some(PowerConfig {
            power_limit_w: limit,
            ..power()
        });
        let mut dev = Device::new(&cfg, 7).unwrap();
        let seq = run_bs(&mut dev, "write", "128k", 1.0, "none");
        (seq.summary.write.bytes, seq.summary.power.unwrap())
    };
    // One die draws 3.3 V x 25 mA + 1.8 V x 20 mA = 0.1185 W above the 1.5 W of active idle
    // and a busy processor: 1.75 W leaves room for 2 of the 4 dies.
    let (free, p_free) = written(None);
    let (capped, p_capped) = written(Some(1.75));
    assert!(capped < free * 3 / 4, "{capped} vs {free}");
    assert!(p_capped.average_w < p_free.average_w);
    assert!(p_capped.peak_w <= 1.75 + 0.05, "{p_capped:?}");
    // A budget above what all dies draw changes nothing.
    let (loose, _) = written(Some(100.0));
    assert_eq!(loose, free);
}

#[test]
fn a_ramp_under_link_power_management_is_not_counted_in_the_measured_energy() {
    // The recorder foresees the static energy at the measurement's start when the ramp
    // begins (the link idle then); it must take it again once the ramp is over.
    let measured = |ramp_s: f64| {
        let mut dev = drive(true);
        let job = Job {
            rw: "randwrite".into(),
            iodepth: 4,
            runtime_s: Some(0.5),
            time_based: true,
            ramp_time_s: ramp_s,
            log_interval_s: 0.1,
            link_power: "hipm+dipm".into(),
            ..Job::default()
        };
        let compiled = job.compile(dev.user_bytes()).unwrap();
        run_job(&mut dev, &compiled, &mut |_| {})
            .summary
            .power
            .unwrap()
    };
    let (plain, ramped) = (measured(0.0), measured(0.5));
    // The link is busy throughout: about the same power either way, not the ramp's energy
    // folded into the first interval.
    assert!(
        (ramped.average_w - plain.average_w).abs() < 0.1 * plain.average_w,
        "{plain:?} vs {ramped:?}"
    );
    assert!(
        ramped.peak_w < 1.2 * plain.peak_w,
        "{plain:?} vs {ramped:?}"
    );
}

/// A job shorter than its interval is charged its own span, not the whole interval's idle
/// power: six 4 KiB reads take a fraction of a millisecond, and the energy, average power and
/// IOPS per watt say so (they said 1 J, 1 W and 6 IOPS/W: a second of idle power).
#[test]
fn a_job_shorter_than_its_interval_is_charged_its_own_span() {
    let mut dev = drive(true);
    dev.fill_untimed(0, 1024);
    let job = Job {
        rw: "randread".into(),
        bs: "4k".into(),
        size: Some("4m".into()),
        number_ios: Some(6),
        ..Job::default()
    };
    let compiled = job.compile(dev.user_bytes()).unwrap();
    let r = run_job(&mut dev, &compiled, &mut |_| {});
    let s = &r.summary;
    let p = s.power.as_ref().expect("a power model");
    assert_eq!(s.read.ios, 6);
    assert!(s.elapsed_s < 0.01, "{}", s.elapsed_s);
    assert!(p.energy_j < 0.01, "{} J", p.energy_j);
    // Idle-active 1 W plus the reads' NAND and processor work.
    assert!(p.average_w > 1.0 && p.average_w < 2.0, "{} W", p.average_w);
    assert!(p.peak_w >= p.average_w, "peak {} W", p.peak_w);
    let iops_per_w = s.read.iops / p.average_w;
    assert!(
        (p.iops_per_w - iops_per_w).abs() < 1e-6 * iops_per_w,
        "{} vs {iops_per_w}",
        p.iops_per_w
    );
}
