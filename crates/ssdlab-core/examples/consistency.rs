//! The whole performance-consistency run, timed: secure erase, timed 128 KiB QD32 sequential
//! fill, then 4 KiB random writes at QD32 for N simulated seconds. Prints wall times and
//! simulated host IOs per wall second for each phase (benches/bench_sim.py times the same run
//! through the Python API).
//! Then a further stretch of steady state (default 200 s), timed on its own.
//! cargo run --release -p ssdlab-core --example consistency -- PRESET.toml [seconds] [timed|fast] [steady seconds]
use ssdlab_core::config::DriveConfig;
use ssdlab_core::device::Device;
use ssdlab_core::workload::JobResult;

mod common;

/// 4 KiB random writes at QD32 for `seconds` simulated: the result and the wall seconds taken.
#[allow(clippy::disallowed_methods)]
fn timed_random_writes(dev: &mut Device, seconds: f64) -> (JobResult, f64) {
    let t = std::time::Instant::now();
    let r = common::random_writes(dev, seconds);
    (r, t.elapsed().as_secs_f64())
}

#[allow(clippy::disallowed_methods)]
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let text = std::fs::read_to_string(&args[1]).expect("preset file");
    let cfg = DriveConfig::from_toml_str(&text).expect("valid preset");
    let seconds: f64 = args
        .get(2)
        .map(|s| s.parse().expect("seconds"))
        .unwrap_or(2000.0);
    let fast_fill = args.get(3).is_some_and(|a| a == "fast");
    let t0 = std::time::Instant::now();
    let mut dev = Device::new(&cfg, 1).expect("device");
    dev.secure_erase();
    // FNV-1a over the per-second write IOs and GC copies of each timed phase (and the fill's
    // end time): equal digests, equal results, so two builds can be compared.
    let mut digest = ssdlab_core::stats::FNV_OFFSET;
    let fill_ios = if fast_fill {
        let n = dev.geometry.logical_units as u32;
        dev.fill_untimed(0, n);
        0
    } else {
        let r = common::sequential_fill(&mut dev);
        digest = r.series.digest_writes_and_gc(digest);
        r.summary.write.ios
    };
    digest = ssdlab_core::stats::fnv1a(digest, &[dev.now().ns()]);
    let fill_wall = t0.elapsed().as_secs_f64();
    let (r, rw_wall) = timed_random_writes(&mut dev, seconds);
    // Steady state reached: time a further stretch on its own.
    let steady_s: f64 = args
        .get(4)
        .map(|s| s.parse().expect("seconds"))
        .unwrap_or(200.0);
    let (r2, steady_wall) = timed_random_writes(&mut dev, steady_s);
    digest = r.series.digest_writes_and_gc(digest);
    digest = r2.series.digest_writes_and_gc(digest);
    let steady: Vec<u64> = r.series.write_ios.iter().rev().take(100).copied().collect();
    let steady_iops = steady.iter().sum::<u64>() as f64 / steady.len().max(1) as f64;
    println!(
        "{{\"fill_wall_s\": {fill_wall:.3}, \"fill_ios\": {fill_ios}, \"randwrite_wall_s\": {rw_wall:.3}, \"randwrite_ios\": {}, \"randwrite_ios_per_wall_s\": {:.0}, \"steady_state_iops\": {steady_iops:.0}, \"waf\": {:.3}, \"total_wall_s\": {:.3}, \"steady_ios\": {}, \"steady_wall_s\": {steady_wall:.3}, \"steady_ios_per_wall_s\": {:.0}, \"steady_waf\": {:.3}, \"digest\": \"{digest:016x}\"}}",
        r.summary.write.ios,
        r.summary.write.ios as f64 / rw_wall,
        r.summary.write_amplification,
        fill_wall + rw_wall,
        r2.summary.write.ios,
        r2.summary.write.ios as f64 / steady_wall,
        r2.summary.write_amplification
    );
}
