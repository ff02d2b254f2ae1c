//! ssdlab-core: a NAND-flash SSD modelled the way it is built.
//!
//! A host command enters the [`host`] interface, the controller buffers and maps it in the
//! [`ftl`], and the [`nand`] backend spends bus and array time on per-die and per-channel
//! timelines. [`device::Device`] ties them together in one event loop in simulated time
//! ([`time::SimTime`], nanoseconds); [`workload`] drives it with fio-like jobs and [`stats`]
//! records what the host sees. Nothing here does I/O or knows about Python.
//!
//! ```
//! use ssdlab_core::{config::DriveConfig, device::Device, workload::{Job, run_job}};
//! let cfg = DriveConfig::from_toml_str(ssdlab_core::EXAMPLE_DRIVE_TOML).unwrap();
//! let mut dev = Device::new(&cfg, 1).unwrap();
//! let job = Job { rw: "randwrite".into(), bs: "4k".into(), iodepth: 32, number_ios: Some(20_000), ..Job::default() };
//! let compiled = job.compile(dev.user_bytes()).unwrap();
//! let result = run_job(&mut dev, &compiled, &mut |_| {});
//! assert_eq!(result.summary.write.ios, 20_000);
//! ```

pub mod config;
pub mod describe;
pub mod device;
pub mod divisor;
pub mod faults;
pub mod ftl;
mod heap;
pub mod host;
pub mod meanfield;
pub mod mem;
pub mod nand;
pub mod power;
pub mod power_loss;
pub mod record;
pub mod replay;
pub mod rng;
pub mod session;
pub mod sim;
pub mod stats;
pub mod theory;
pub mod thermal;
pub mod time;
pub mod timeline;
pub mod workload;
pub mod zones;

/// A small drive used in examples and doc tests (not a real product).
pub const EXAMPLE_DRIVE_TOML: &str = include_str!("example_drive.toml");
