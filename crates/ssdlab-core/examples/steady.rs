//! GC steady-state speed alone: untimed fill, untimed random writes to reach steady state
//! (`drive writes` times the capacity, default 2), then `seconds` of 4 KiB random writes at
//! queue depth `iodepth` (default 32; the enterprise consistency test's is 256),
//! timed. Prints NAND unit operations (host writes + GC copies) per wall second and a digest
//! of the per-second series, so two builds can be compared for speed and for identical
//! results. Used to profile (callgrind: `--toggle-collect=*timed_steady*`). Also prints the wall
//! seconds of the untimed fill and of the untimed random writes (what validate's quick
//! enterprise runs spend most of their time on).
//! With `windows` > 1 the timed stretch is repeated that many times (one after another) and
//! the figures are the median window's, so one process gives several samples.
//! With `spare %` > 0 only the first (100 - spare)% of the drive is filled and written, the
//! rest left as spare area (the consistency test's 25% runs; validate's longest).
//! With `fdp` last, the timed writes carry FDP placement identifiers, each handle in turn (a
//! drive with a `[placement]` table: the per-handle reclaim units and their collection).
//! cargo run --release -p ssdlab-core --example steady -- PRESET.toml [seconds] [drive writes] [windows] [spare %] [iodepth] [fdp]
use ssdlab_core::config::DriveConfig;
use ssdlab_core::device::Device;
use ssdlab_core::workload::JobResult;

mod common;

/// The timed stretch, named for callgrind's `--toggle-collect`. `fdp`: the writes carry
/// placement identifiers, each handle in turn (fio's fdp=1; a drive with `[placement]`).
#[inline(never)]
fn timed_steady(
    dev: &mut Device,
    seconds: f64,
    span_bytes: u64,
    iodepth: u32,
    fdp: bool,
) -> JobResult {
    if !fdp {
        return common::random_writes_over(dev, seconds, span_bytes, iodepth);
    }
    let job = ssdlab_core::workload::Job {
        rw: "randwrite".into(),
        iodepth,
        size: Some(span_bytes.to_string()),
        runtime_s: Some(seconds),
        time_based: true,
        fdp: true,
        ..Default::default()
    };
    let compiled = job.compile(dev.user_bytes()).expect("an FDP job");
    ssdlab_core::workload::run_job(dev, &compiled, &mut |_| {})
}

#[allow(clippy::disallowed_methods)]
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let text = std::fs::read_to_string(&args[1]).expect("preset file");
    let cfg = DriveConfig::from_toml_str(&text).expect("valid preset");
    let seconds: f64 = args.get(2).map_or(200.0, |s| s.parse().expect("seconds"));
    let drive_writes: f64 = args
        .get(3)
        .map_or(2.0, |s| s.parse().expect("drive writes"));
    let mut dev = Device::new(&cfg, 1).expect("device");
    dev.secure_erase();
    let spare: f64 = args.get(5).map_or(0.0, |s| s.parse().expect("spare %"));
    assert!(
        (0.0..100.0).contains(&spare),
        "spare %: {spare}; accepted: 0 to under 100"
    );
    // The units written: whole units, as `review.procedures.spare_span` counts them.
    let n = (dev.geometry.logical_units as f64 * (100.0 - spare) / 100.0) as u32;
    let span_bytes = n as u64 * dev.geometry.mapping_unit_bytes as u64;
    let t = std::time::Instant::now();
    dev.fill_untimed(0, n);
    let fill_wall = t.elapsed().as_secs_f64();
    let t = std::time::Instant::now();
    dev.random_writes_untimed(0, n, (n as f64 * drive_writes) as u64, 7);
    let untimed_wall = t.elapsed().as_secs_f64();
    let windows: usize = args.get(4).map_or(1, |s| s.parse().expect("windows"));
    let iodepth: u32 = args.get(6).map_or(32, |s| s.parse().expect("iodepth"));
    let fdp = args.get(7).is_some_and(|s| s == "fdp");
    let mut digest = ssdlab_core::stats::FNV_OFFSET;
    let mut samples = Vec::new();
    for _ in 0..windows.max(1) {
        let t = std::time::Instant::now();
        let r = timed_steady(&mut dev, seconds, span_bytes, iodepth, fdp);
        let wall = t.elapsed().as_secs_f64();
        // FNV-1a over the per-second write IOs and GC copies: equal digests, equal results.
        digest = r.series.digest_writes_and_gc(digest);
        samples.push((
            wall / (r.summary.write.ios + r.summary.gc_units_copied) as f64,
            wall,
            r,
        ));
    }
    samples.sort_by(|a, b| a.0.total_cmp(&b.0));
    let (_, wall, r) = &samples[samples.len() / 2];
    let wall = *wall;
    let ops = r.summary.write.ios + r.summary.gc_units_copied;
    let huge_mib = common::huge_pages_mib();
    println!(
        "{{\"fill_wall_s\": {fill_wall:.3}, \"untimed_writes_wall_s\": {untimed_wall:.3}, \"huge_pages_mib\": {huge_mib}, \"host_writes\": {}, \"gc_copies\": {}, \"wall_s\": {wall:.3}, \"nand_unit_ops_per_wall_s\": {:.0}, \"ns_per_op\": {:.1}, \"waf\": {:.3}, \"digest\": \"{digest:016x}\"}}",
        r.summary.write.ios,
        r.summary.gc_units_copied,
        ops as f64 / wall,
        wall * 1e9 / ops as f64,
        r.summary.write_amplification,
    );
}
