//! Issue 71: the spread of an enterprise steady state from a named cause. Collecting a whole
//! victim in one non-preemptive bite (`ftl.gc_foreground_mode = "burst"`) takes the die away
//! from host work for the bite's length; placing host data on a die that is not collecting
//! (`ftl.host_die_choice = "skip-collecting"`, dynamic allocation) keeps the bite from holding
//! the write buffer behind it. Switching the cause off (paced collection) takes the spread
//! away; the level stays within a few percent of the paced one.

use ssdlab_core::config::{DriveConfig, GcForegroundMode, HostDieChoice};
use ssdlab_core::device::Device;

#[path = "../examples/common/mod.rs"]
mod common;
use common::{preset, random_writes};

/// Steady state as the enterprise ratings are taken (fill, 1.5 drive writes of 4 KiB random
/// writes, untimed), then `seconds` of timed 4 KiB QD32 random writes: the per-second write
/// IOs after the first fifth, and the FTL's state digest.
fn per_second(cfg: &DriveConfig, seconds: f64) -> (Vec<f64>, u64) {
    let mut dev = Device::new(cfg, 1).unwrap();
    dev.secure_erase();
    let n = dev.geometry.logical_units as u32;
    dev.fill_untimed(0, n);
    dev.random_writes_untimed(0, n, n as u64 * 3 / 2, 7);
    let r = random_writes(&mut dev, seconds);
    dev.ftl.verify().unwrap();
    let w = &r.series.write_ios;
    let w = w[w.len() / 5..w.len() - 1]
        .iter()
        .map(|&x| x as f64)
        .collect();
    (w, dev.ftl.state_digest())
}

fn mean_cv(w: &[f64]) -> (f64, f64) {
    let mean = w.iter().sum::<f64>() / w.len() as f64;
    let var = w.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / w.len() as f64;
    (mean, var.sqrt() / mean)
}

/// The M500DC 480GB as its preset has it (bites, two candidate dies), or with collection and
/// host data placed otherwise.
fn with(preset_name: &str, mode: GcForegroundMode, choice: HostDieChoice) -> DriveConfig {
    let mut cfg = preset(preset_name);
    assert_eq!(
        (
            cfg.ftl.gc_foreground_mode,
            cfg.ftl.host_die_choice,
            cfg.ftl.host_die_candidates
        ),
        (GcForegroundMode::Burst, HostDieChoice::SkipCollecting, 2),
        "the enterprise presets collect in bites (tools/gen_presets.py ENTERPRISE_GC)"
    );
    cfg.ftl.gc_foreground_mode = mode;
    cfg.ftl.host_die_choice = choice;
    if choice == HostDieChoice::RoundRobin {
        cfg.ftl.host_die_candidates = 0;
    }
    cfg
}

/// The gate's version: the M500DC 240GB (46 s on two cores, 2026-12-07).
#[test]
fn victim_sized_bites_spread_the_steady_state_and_dynamic_allocation_keeps_its_level() {
    bites_spread_the_steady_state("micron-m500dc-240");
}

/// `make soak`: the M500DC 480GB (99 s). The 120GB has too few dies to place around a bite:
/// its dynamic level came out 8% under the paced one.
#[test]
#[ignore = "soak: make soak runs it"]
fn soak_victim_sized_bites_spread_the_steady_state_of_the_480gb() {
    bites_spread_the_steady_state("micron-m500dc-480");
}

fn bites_spread_the_steady_state(preset_name: &str) {
    // The four runs are independent: two threads at a time (the machine's cores).
    let bites = with(
        preset_name,
        GcForegroundMode::Burst,
        HostDieChoice::SkipCollecting,
    );
    let run = |cfg: DriveConfig| std::thread::spawn(move || per_second(&cfg, 30.0));
    let (paced, fixed) = (
        run(with(
            preset_name,
            GcForegroundMode::Paced,
            HostDieChoice::RoundRobin,
        )),
        run(with(
            preset_name,
            GcForegroundMode::Burst,
            HostDieChoice::RoundRobin,
        )),
    );
    let ((paced, _), (fixed, _)) = (paced.join().unwrap(), fixed.join().unwrap());
    let (dynamic, again) = (run(bites.clone()), run(bites));
    let ((dynamic, digest), (_, again)) = (dynamic.join().unwrap(), again.join().unwrap());
    let ((paced, paced_cv), (fixed, fixed_cv), (dynamic, dynamic_cv)) =
        (mean_cv(&paced), mean_cv(&fixed), mean_cv(&dynamic));
    eprintln!(
        "{preset_name}: paced {paced:.0} IOPS cv {paced_cv:.3}; bites, fixed striping {fixed:.0} cv {fixed_cv:.3}; \
         bites, dynamic {dynamic:.0} cv {dynamic_cv:.3}"
    );
    // The bites are the spread: without them the line is flat.
    assert!(paced_cv < 0.01, "paced cv {paced_cv}");
    assert!(
        dynamic_cv > 0.02 && dynamic_cv > 5.0 * paced_cv,
        "cv {dynamic_cv}"
    );
    // With fixed striping the write buffer waits behind a bite: the level falls; placed on
    // the dies that are not collecting, it stays the paced one.
    assert!(
        fixed < 0.9 * paced,
        "fixed striping {fixed} vs paced {paced}"
    );
    assert!(
        (dynamic / paced - 1.0).abs() < 0.05,
        "dynamic {dynamic} vs paced {paced}"
    );
    // Same configuration and seed, the same run.
    assert_eq!(again, digest);
}
