//! What the timing examples (and the golden tests, which include this file) share.
#![allow(dead_code)] // each includer uses its part

use ssdlab_core::device::Device;
use ssdlab_core::workload::{run_job, Job, JobResult};

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
    random_writes_over(dev, seconds, dev.user_bytes())
}

/// 4 KiB random writes at QD32 for `seconds` simulated over the first `span_bytes` of the
/// drive (the rest left as spare area, as the consistency test's 25% runs do).
pub fn random_writes_over(dev: &mut Device, seconds: f64, span_bytes: u64) -> JobResult {
    let job = Job {
        rw: "randwrite".into(),
        iodepth: 32,
        size: Some(span_bytes.to_string()),
        runtime_s: Some(seconds),
        time_based: true,
        ..Job::default()
    };
    let compiled = job.compile(dev.user_bytes()).unwrap();
    run_job(dev, &compiled, &mut |_| {})
}
