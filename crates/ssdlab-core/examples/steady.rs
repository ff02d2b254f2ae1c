//! Debug/bench helper: fast fill a preset, then 4 KiB random writes at QD32, printing each
//! simulated second with the wall time it took.
//! cargo run --release -p ssdlab-core --example steady -- python/ssdlab/presets/crucial-m500-120.toml 60
use ssdlab_core::config::DriveConfig;
use ssdlab_core::device::Device;
use ssdlab_core::time::{SimTime, NS_PER_S};
use ssdlab_core::workload::{Job, JobRun};

#[allow(clippy::disallowed_methods)]
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let cfg = DriveConfig::from_toml_str(&std::fs::read_to_string(&args[1]).unwrap()).unwrap();
    let seconds: u64 = args.get(2).map(|s| s.parse().unwrap()).unwrap_or(30);
    let mut dev = Device::new(&cfg, 1).unwrap();
    let t0 = std::time::Instant::now();
    let n = dev.geometry.logical_units as u32;
    dev.fill_untimed(0, n);
    eprintln!("fill {:?}", t0.elapsed());
    let job = Job {
        rw: "randwrite".into(),
        iodepth: 32,
        runtime_s: Some(seconds as f64),
        time_based: true,
        ..Job::default()
    };
    let c = job.compile(dev.user_bytes()).unwrap();
    let mut run = JobRun::new(&mut dev, &c, 1);
    let start = dev.now().ns();
    for s in 1.. {
        let t = std::time::Instant::now();
        let done = run.advance(&mut dev, SimTime(start + s * NS_PER_S));
        let (_, ios, _) = run.progress(&dev);
        eprintln!(
            "sim {s} s: {ios} IOs, wall {:?}, free {}",
            t.elapsed(),
            dev.ftl.free_blocks_total()
        );
        if done {
            break;
        }
    }
    let r = run.finish(&dev);
    println!("{}", serde_json::to_string(&r.summary).unwrap());
}
