//! What the timing examples (and the golden tests, which include this file) share.
#![allow(dead_code)] // each includer uses its part

use ssdlab_core::config::DriveConfig;
use ssdlab_core::device::Device;
use ssdlab_core::workload::{run_job, Job, JobResult};

/// The preset `name` from python/ssdlab/presets (for the tests, which run from the crate).
pub fn preset(name: &str) -> DriveConfig {
    let path = format!(
        "{}/../../python/ssdlab/presets/{name}.toml",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    DriveConfig::from_toml_str(&text).expect("a valid preset")
}

/// The timed sequential fill of the consistency test: 128 KiB writes at QD32 over the drive.
pub fn sequential_fill(dev: &mut Device) -> JobResult {
    let job = Job {
        rw: "write".into(),
        bs: "128k".into(),
        iodepth: 32,
        ..Job::default()
    };
    let compiled = job.compile(dev.user_bytes()).unwrap();
    dev.expect_sequential_fill();
    run_job(dev, &compiled, &mut |_| {})
}

/// 4 KiB random writes at QD32 for `seconds` simulated.
pub fn random_writes(dev: &mut Device, seconds: f64) -> JobResult {
    random_writes_over(dev, seconds, dev.user_bytes(), 32)
}

/// 4 KiB random writes at queue depth `iodepth` for `seconds` simulated over the first
/// `span_bytes` of the drive (the rest left as spare area, as the consistency test's 25% runs
/// do).
pub fn random_writes_over(
    dev: &mut Device,
    seconds: f64,
    span_bytes: u64,
    iodepth: u32,
) -> JobResult {
    let job = Job {
        rw: "randwrite".into(),
        iodepth,
        size: Some(span_bytes.to_string()),
        runtime_s: Some(seconds),
        time_based: true,
        ..Job::default()
    };
    let compiled = job.compile(dev.user_bytes()).unwrap();
    run_job(dev, &compiled, &mut |_| {})
}

/// MiB of this process's memory on transparent huge pages (Linux; 0 elsewhere): whether the
/// big tables got them. Without them every random map access pays a page walk, and a run is
/// 20-30% slower.
pub fn huge_pages_mib() -> u64 {
    std::fs::read_to_string("/proc/self/smaps_rollup")
        .ok()
        .and_then(|t| {
            let line = t.lines().find(|l| l.starts_with("AnonHugePages:"))?;
            line.split_whitespace().nth(1)?.parse::<u64>().ok()
        })
        .map_or(0, |kb| kb / 1024)
}
