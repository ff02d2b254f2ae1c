//! Golden figures: results that a refactor must leave bit for bit as they are.
//!
//! Each test runs a drive of the presets the way a benchmark or README command does and pins
//! digests of the per-second series and the headline counts. A change that moves one of them
//! changes the model's results: it fails here, loudly, and the new figure goes in with the
//! commit that explains why (issue 22, "Guards").
//!
//! The figures were taken at f4e983d (the last commit of issue 15), where the `steady`
//! example printed the same digests.

use ssdlab_core::config::DriveConfig;
use ssdlab_core::device::Device;
use ssdlab_core::stats::FNV_OFFSET;
use ssdlab_core::workload::{run_job, Job, JobResult};

fn preset(name: &str) -> DriveConfig {
    let path = format!(
        "{}/../../python/ssdlab/presets/{name}.toml",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    DriveConfig::from_toml_str(&text).expect("a valid preset")
}

/// 4 KiB random writes at QD32 for `seconds` simulated (the examples' job).
fn random_writes(dev: &mut Device, seconds: f64) -> JobResult {
    let job = Job {
        rw: "randwrite".into(),
        iodepth: 32,
        runtime_s: Some(seconds),
        time_based: true,
        ..Job::default()
    };
    let compiled = job.compile(dev.user_bytes()).unwrap();
    run_job(dev, &compiled, &mut |_| {})
}

/// The `steady` example: untimed fill, untimed random writes (`drive_writes` x capacity),
/// then `seconds` of timed 4 KiB QD32 random writes. Returns (digest, host writes, GC copies).
fn steady(name: &str, seconds: f64, drive_writes: f64) -> (String, u64, u64) {
    let mut dev = Device::new(&preset(name), 1).unwrap();
    dev.secure_erase();
    let n = dev.geometry.logical_units as u32;
    dev.fill_untimed(0, n);
    dev.random_writes_untimed(0, n, (n as f64 * drive_writes) as u64, 7);
    let r = random_writes(&mut dev, seconds);
    let digest = r.series.digest_writes_and_gc(FNV_OFFSET);
    (
        format!("{digest:016x}"),
        r.summary.write.ios,
        r.summary.gc_units_copied,
    )
}

#[test]
fn steady_state_of_the_m500_120_is_unchanged() {
    // `cargo run --release -p ssdlab-core --example steady -- crucial-m500-120.toml 60 0.5`
    assert_eq!(
        steady("crucial-m500-120", 60.0, 0.5),
        ("38ef3ee1c67cb4fc".to_string(), 181_168, 1_280_732)
    );
}

#[test]
fn steady_state_of_the_m500_960_is_unchanged() {
    // `... --example steady -- crucial-m500-960.toml 60 0.5`
    assert_eq!(
        steady("crucial-m500-960", 60.0, 0.5),
        ("a1086dce74edd14e".to_string(), 244_396, 1_727_019)
    );
}

/// The performance-consistency run of the M500 960GB as the `consistency` example runs it:
/// secure erase, timed 128 KiB QD32 sequential fill, 2000 s of 4 KiB QD32 random writes.
/// (README command 1 runs the same through Python, whose job seeds differ: its last bucket is
/// 2,774 IOPS; `python/tests/test_golden.py` pins that one.)
#[test]
fn consistency_run_of_the_m500_960_is_unchanged() {
    let mut dev = Device::new(&preset("crucial-m500-960"), 1).unwrap();
    dev.secure_erase();
    let fill = Job {
        rw: "write".into(),
        bs: "128k".into(),
        iodepth: 32,
        ..Job::default()
    };
    let compiled = fill.compile(dev.user_bytes()).unwrap();
    let f = run_job(&mut dev, &compiled, &mut |_| {});
    let r = random_writes(&mut dev, 2000.0);
    let s = &r.series;
    let got = (
        f.summary.write.ios,
        format!("{:016x}", f.series.digest_all(FNV_OFFSET)),
        r.summary.write.ios,
        format!("{:.3}", r.summary.write_amplification),
        *s.write_ios.last().unwrap(),
        s.len(),
        format!("{:016x}", s.digest_all(FNV_OFFSET)),
    );
    let want = (
        7_324_218,
        "fb5a429c040c8b93".to_string(),
        20_397_208,
        "3.849".to_string(),
        2_784,
        2000,
        "3897e8100add0596".to_string(),
    );
    assert_eq!(got, want);
}
