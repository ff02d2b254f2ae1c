//! Paced jobs against fio's schedules: rate caps (linear, Poisson, per IO), inline and
//! offloaded submission, think time, flow weights and rate_min.

use super::super::JobRun;
use crate::config::DriveConfig;
use crate::device::Device;
use crate::time::{SimTime, NS_PER_S};
use crate::workload::{IoLog, Job, JobSummary};

fn drive() -> Device {
    let cfg = DriveConfig::from_toml_str(crate::EXAMPLE_DRIVE_TOML).unwrap();
    let mut dev = Device::new(&cfg, 3).unwrap();
    let units = dev.geometry.logical_units as u32;
    dev.fill_untimed(0, units);
    dev
}

/// Run `jobs` together; their summaries and every IO's (submission ns, latency ns, stream).
fn run(dev: &mut Device, jobs: &[Job]) -> (Vec<JobSummary>, Vec<(u64, u64, u32)>) {
    let compiled: Vec<_> = jobs
        .iter()
        .map(|j| j.compile(dev.user_bytes()).unwrap())
        .collect();
    let after = vec![None; jobs.len()];
    let mut r = JobRun::group(dev, &compiled, &after, 0)
        .unwrap()
        .with_io_log();
    let mut until = dev.now();
    let mut log = IoLog::default();
    loop {
        until = SimTime(until.ns() + NS_PER_S);
        let done = r.advance(dev, until);
        let part = r.take_io_log();
        log.stream.extend(part.stream);
        log.time_ns.extend(part.time_ns);
        log.latency_ns.extend(part.latency_ns);
        if done {
            break;
        }
    }
    let mut ios: Vec<(u64, u64, u32)> = (0..log.time_ns.len())
        .map(|i| {
            (
                log.time_ns[i] - log.latency_ns[i],
                log.latency_ns[i],
                log.stream[i],
            )
        })
        .collect();
    ios.sort_unstable();
    (r.finish(dev).into_iter().map(|r| r.summary).collect(), ios)
}

fn reader(rate: &str) -> Job {
    Job {
        rw: "randread".into(),
        iodepth: 8,
        runtime_s: Some(2.0),
        time_based: true,
        rate_iops: Some(rate.into()),
        ..Job::default()
    }
}

/// rate_iops=1000, offloaded: IO k goes out at k ms exactly (fio's byte schedule), one at
/// a time as the drive keeps up; inline: after the one before it completes, each late by
/// the previous IO's latency and the rate kept over the run.
#[test]
fn a_linear_rate_issues_on_schedule_and_inline_submission_waits_for_completions() {
    let mut dev = drive();
    let offload = Job {
        io_submit_mode: "offload".into(),
        ..reader("1000")
    };
    let (s, ios) = run(&mut dev, &[offload]);
    assert_eq!(s[0].read.ios, 2000, "{}", s[0].read.ios);
    for (k, &(at, _, _)) in ios.iter().enumerate() {
        assert_eq!(at, k as u64 * 1_000_000, "IO {k}");
    }
    let (s, ios) = run(&mut dev, &[reader("1000")]);
    assert!((1998..=2000).contains(&s[0].read.ios), "{}", s[0].read.ios);
    for k in 2..ios.len() {
        let (at, _, _) = ios[k];
        let (before, latency, _) = ios[k - 1];
        assert!(
            at >= before + latency,
            "IO {k} went out before IO {} completed",
            k - 1
        );
        assert!(at <= k as u64 * 1_000_000 + 2 * latency, "IO {k} at {at}");
    }
}

/// rate_process=poisson: exponential gaps (coefficient of variation near 1) at the rate
/// asked; rate in bytes per second paces as rate_iops at its size.
#[test]
fn poisson_gaps_are_exponential_and_a_byte_rate_paces_by_size() {
    let mut dev = drive();
    let job = Job {
        rate_process: "poisson".into(),
        io_submit_mode: "offload".into(),
        runtime_s: Some(10.0),
        ..reader("500")
    };
    let (s, ios) = run(&mut dev, &[job]);
    let n = s[0].read.ios as f64;
    assert!(
        (n - 5000.0).abs() < 4.0 * 5000f64.sqrt(),
        "{n} IOs for 5000 expected"
    );
    let gaps: Vec<f64> = ios.windows(2).map(|w| (w[1].0 - w[0].0) as f64).collect();
    let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
    let sd = (gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / gaps.len() as f64).sqrt();
    assert!((sd / mean - 1.0).abs() < 0.05, "cv {}", sd / mean);
    let bytes = Job {
        rate_iops: None,
        rate: Some("2m".into()),
        bs: "16k".into(),
        ..reader("")
    };
    let (s, _) = run(&mut dev, &[bytes]);
    assert!((255..=256).contains(&s[0].read.ios), "{}", s[0].read.ios);
}

/// thinktime=1ms after every completed IO: the queue depth collapses to one, each IO
/// followed by the stall; thinktime_blocks=4, type issue: four at a time.
#[test]
fn think_time_stalls_after_its_blocks() {
    let mut dev = drive();
    let think = Job {
        rate_iops: None,
        thinktime_s: 0.001,
        runtime_s: Some(1.0),
        ..reader("")
    };
    let (s, ios) = run(&mut dev, std::slice::from_ref(&think));
    let latency = ios[10].1;
    let expect = NS_PER_S as f64 / (1_000_000 + latency) as f64;
    let n = s[0].read.ios as f64;
    assert!(
        (n - expect).abs() / expect < 0.02,
        "{n} IOs, {expect:.0} expected"
    );
    let four = Job {
        thinktime_blocks: Some(4),
        thinktime_blocks_type: "issue".into(),
        iodepth: 4,
        ..think
    };
    let (_, ios) = run(&mut dev, &[four]);
    // After the first burst, IOs go out in fours at one instant.
    let bursts = ios[8..40]
        .chunks(4)
        .filter(|c| c.iter().all(|io| io.0 == c[0].0))
        .count();
    assert_eq!(bursts, 8);
}

/// flow=1 and flow=8 in one flow: the jobs' IOs keep that ratio.
#[test]
fn flow_weights_share_the_issues() {
    let mut dev = drive();
    let job = |w: u32| Job {
        rate_iops: None,
        flow: w,
        runtime_s: Some(1.0),
        ..reader("")
    };
    let (s, _) = run(&mut dev, &[job(1), job(8)]);
    let ratio = s[1].read.ios as f64 / s[0].read.ios as f64;
    assert!((ratio - 8.0).abs() < 0.1, "{ratio}");
}

/// rate_min above what the drive does: the job stops after fio's 2 s settle and a cycle,
/// and says why.
#[test]
fn a_rate_min_not_met_fails_the_job() {
    let mut dev = drive();
    let job = Job {
        rate_iops: None,
        rate_min: Some("100g".into()),
        runtime_s: Some(10.0),
        ..reader("")
    };
    let (s, _) = run(&mut dev, &[job]);
    let e = s[0].error.as_deref().unwrap();
    assert!(
        e.starts_with("job: rate_min=107374182400B/s not met (read), got "),
        "{e}"
    );
    assert!(s[0].elapsed_s < 3.1, "{}", s[0].elapsed_s);
    for (field, value, message) in [
        ("rate", "1m,2m,3m,4m", "rate: '1m,2m,3m,4m' has 4 values"),
        ("rate_iops", "x", "rate_iops: 'x' is not a count"),
        (
            "rate_process",
            "zipf",
            "rate_process: 'zipf'; accepted: linear, poisson",
        ),
    ] {
        let mut bad = reader("100");
        match field {
            "rate" => bad.rate = Some(value.into()),
            "rate_iops" => bad.rate_iops = Some(value.into()),
            _ => bad.rate_process = value.into(),
        }
        let e = bad.compile(dev.user_bytes()).unwrap_err();
        assert!(e.starts_with(message), "{e}");
    }
}
