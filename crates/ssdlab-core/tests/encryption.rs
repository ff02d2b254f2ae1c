//! Crypto erase of a self-encrypting drive: the drive reads as fresh in the stated time,
//! without erasing a block; the stale blocks are then erased as the collector takes them,
//! with nothing to copy. A drive without encryption refuses.

use ssdlab_core::config::DriveConfig;
use ssdlab_core::device::Device;
use ssdlab_core::ftl::UNMAPPED;
use ssdlab_core::workload::{run_job, Job};

fn drive(self_encrypting: bool) -> Device {
    let mut cfg = DriveConfig::from_toml_str(ssdlab_core::EXAMPLE_DRIVE_TOML).unwrap();
    cfg.controller.self_encrypting = self_encrypting;
    cfg.controller.crypto_erase_us = 2_000;
    Device::new(&cfg, 3).unwrap()
}

fn randwrite(dev: &mut Device, ios: u64) {
    let job = Job {
        rw: "randwrite".into(),
        iodepth: 16,
        number_ios: Some(ios),
        ..Job::default()
    };
    let compiled = job.compile(dev.user_bytes()).unwrap();
    run_job(dev, &compiled, &mut |_| {});
}

#[test]
fn a_crypto_erase_leaves_nothing_readable_erases_no_block_and_takes_the_stated_time() {
    let mut dev = drive(true);
    let units = dev.geometry.logical_units as u32;
    dev.fill_untimed(0, units);
    randwrite(&mut dev, 20_000);
    let erased_before = dev.ftl.counters.blocks_erased;
    let before = dev.now();
    let took = dev.crypto_erase().unwrap();
    assert_eq!(took.0, 2_000_000);
    assert!(dev.now().0 >= before.0 + took.0);
    assert!((0..units).all(|lba| dev.ftl.lookup(lba) == UNMAPPED));
    assert_eq!(dev.ftl.counters.blocks_erased, erased_before);
    dev.ftl.verify().unwrap();
    // Writing the whole drive again: the old blocks are collected with nothing valid in them.
    let copied_before = dev.ftl.counters.gc_units_copied;
    randwrite(&mut dev, units as u64 / 2);
    assert!(dev.ftl.counters.blocks_erased > erased_before);
    assert_eq!(dev.ftl.counters.gc_units_copied, copied_before);
    dev.ftl.verify().unwrap();
}

#[test]
fn a_drive_without_encryption_refuses_a_crypto_erase() {
    let mut dev = drive(false);
    let e = dev.crypto_erase().unwrap_err();
    assert!(e.contains("not a self-encrypting drive"), "{e}");
}

#[test]
fn a_crypto_erase_of_a_partly_written_drive_unmaps_what_was_written_and_no_more() {
    let mut dev = drive(true);
    let units = dev.geometry.logical_units as u32;
    // A fresh drive: nothing to unmap.
    dev.crypto_erase().unwrap();
    assert!((0..units).all(|lba| dev.ftl.lookup(lba) == UNMAPPED));
    // Units written at the start and in the middle, the end of the drive never written.
    dev.fill_untimed(0, units / 4);
    dev.fill_untimed(units / 2, units / 8);
    assert_eq!(dev.ftl.map().mapped_units(), (units / 4 + units / 8) as u64);
    assert_eq!(dev.ftl.crypto_erase(), (units / 4 + units / 8) as u64);
    assert!((0..units).all(|lba| dev.ftl.lookup(lba) == UNMAPPED));
    assert_eq!(dev.ftl.map().mapped_units(), 0);
    dev.ftl.verify().unwrap();
}
