//! What the timing examples share.
use ssdlab_core::device::Device;
use ssdlab_core::workload::{run_job, Job, JobResult};

/// 4 KiB random writes at QD32 for `seconds` simulated.
pub fn random_writes(dev: &mut Device, seconds: f64) -> JobResult {
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
