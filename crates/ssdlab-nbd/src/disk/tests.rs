use super::*;
use crate::store::{DataStore, WriteData};
use ssdlab_core::config::DriveConfig;
use ssdlab_core::ftl::{HostWrite, NullSink};
use ssdlab_core::rng::Rng;

/// With full power-loss protection: a kill loses nothing acknowledged, so what is checked
/// is the store's own consistency at any write.
fn device() -> Device {
    let mut cfg = DriveConfig::from_toml_str(ssdlab_core::EXAMPLE_DRIVE_TOML).unwrap();
    cfg.controller.power_loss_protection = ssdlab_core::config::PowerLossProtection::Full;
    Device::new(&cfg, 5).unwrap()
}

fn unit_data(lba: u32, version: u32) -> Vec<u8> {
    let mut d = vec![0u8; 4096];
    d[..4].copy_from_slice(&lba.to_le_bytes());
    d[4..8].copy_from_slice(&version.to_le_bytes());
    d[8] = 1;
    d
}

/// One store, one holder: a second mount while the first is open is refused with the
/// holder's process named; once the first is closed (or its process gone) it opens.
#[test]
fn a_store_open_elsewhere_is_refused_with_its_holder_named() {
    let dir = std::env::temp_dir().join(format!("ssdlab-disk-lock-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let mut dev = device();
    let (first, _) = mount(&dir, &mut dev, "example-small", false).unwrap();
    let mut other = device();
    let Err(err) = mount(&dir, &mut other, "example-small", false) else {
        panic!("a second mount of an open store succeeded");
    };
    assert!(
        err.contains(&format!("in use by process {}", std::process::id())),
        "{err}"
    );
    assert!(crypto_erase_store(&dir).is_err());
    drop(first);
    let mut again = device();
    mount(&dir, &mut again, "example-small", false).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Kill the store at arbitrary file writes (between a unit's data and its record, between
/// the new record and the old one's stale mark, mid garbage collection, mid erase): the
/// rebuilt drive reads every unit as its last completed write, or, for the unit being
/// written, as the new data; nothing else, never another unit's data.
/// Issue 25, item 5: a store whose `data` or `oob` was truncated or deleted used to start
/// (and answer EIO, or come up as an empty drive); it is refused at start, naming the file.
#[test]
fn a_damaged_store_is_refused_at_start() {
    let base = std::env::temp_dir().join(format!("ssdlab-disk-damage-{}", std::process::id()));
    for (name, damage) in [
        ("data", "truncate"),
        ("oob", "truncate"),
        ("data", "delete"),
        ("erase_counts", "delete"),
    ] {
        let dir = base.join(format!("{name}-{damage}"));
        let _ = std::fs::remove_dir_all(&dir);
        let mut dev = device();
        let n = dev.geometry.logical_units as u32;
        dev.fill_untimed(0, n);
        let (mut disk, _) = mount(&dir, &mut dev, "example-small", true).unwrap();
        // Some unit data on the store (a zero fill leaves `data` a hole).
        disk.data.write_all_at(&[0x5a; 8192], 0).unwrap();
        disk.close().unwrap();
        drop(disk);
        // Undamaged, it opens again.
        let mut again = device();
        let (mut disk, _) = mount(&dir, &mut again, "example-small", false).unwrap();
        disk.close().unwrap();
        drop(disk);
        let path = dir.join(name);
        match damage {
            "truncate" => std::fs::File::options()
                .write(true)
                .open(&path)
                .unwrap()
                .set_len(0)
                .unwrap(),
            _ => std::fs::remove_file(&path).unwrap(),
        }
        let mut dev = device();
        let Err(err) = mount(&dir, &mut dev, "example-small", false) else {
            panic!("{name} {damage}: a damaged store opened");
        };
        assert!(err.contains(&path.display().to_string()), "{err}");
        let why = if damage == "truncate" {
            "truncated"
        } else {
            "missing"
        };
        assert!(err.contains(why) && err.contains("damaged"), "{err}");
        assert!(
            !dir.join(name).exists() || damage == "truncate",
            "nothing recreated: {err}"
        );
    }
    std::fs::remove_dir_all(&base).unwrap();
}

/// The example drive, self-encrypting (its store's data at rest under a media key).
fn self_encrypting() -> Device {
    let mut cfg = DriveConfig::from_toml_str(ssdlab_core::EXAMPLE_DRIVE_TOML).unwrap();
    cfg.controller.self_encrypting = true;
    Device::new(&cfg, 5).unwrap()
}

/// A new store in `dir` for `dev` with every unit mapped (zero fill); and the unit count.
fn filled_store(dir: &std::path::Path, mut dev: Device) -> (DiskUnits, u32) {
    let n = dev.geometry.logical_units as u32;
    dev.fill_untimed(0, n);
    let (disk, _) = mount(dir, &mut dev, "example-small", true).unwrap();
    (disk, n)
}

/// Issue 73, item 12 (the key and the flag): a flipped byte of `media_key`, or the
/// `encrypted` flag of store.json inverted, used to serve every unit as garbage; the start now
/// refuses both, naming the file. A store made before the key check was kept opens and has
/// it written.
#[test]
fn a_damaged_media_key_or_encryption_flag_is_refused_at_start() {
    let base = std::env::temp_dir().join(format!("ssdlab-disk-key-{}", std::process::id()));
    for damage in ["key byte", "flag", "no check"] {
        let dir = base.join(damage.replace(' ', "-"));
        let _ = std::fs::remove_dir_all(&dir);
        let (mut disk, n) = filled_store(&dir, self_encrypting());
        disk.close().unwrap();
        drop(disk);
        let meta_path = dir.join("store.json");
        let text = std::fs::read_to_string(&meta_path).unwrap();
        assert!(text.contains("key_check"), "{text}");
        match damage {
            "key byte" => {
                let mut key = std::fs::read(dir.join("media_key")).unwrap();
                key[17] ^= 0x10;
                std::fs::write(dir.join("media_key"), key).unwrap();
            }
            "flag" => std::fs::write(
                &meta_path,
                text.replace("\"encrypted\": true", "\"encrypted\": false"),
            )
            .unwrap(),
            _ => {
                let meta: serde_json::Value = serde_json::from_str(&text).unwrap();
                let mut meta = meta.as_object().unwrap().clone();
                meta.remove("key_check");
                std::fs::write(&meta_path, serde_json::to_string_pretty(&meta).unwrap()).unwrap();
            }
        }
        let mut again = self_encrypting();
        match (damage, mount(&dir, &mut again, "example-small", false)) {
            ("key byte", Err(e)) => {
                assert!(e.contains("media_key: does not match the key check"), "{e}")
            }
            ("flag", Err(e)) => assert!(
                e.contains("store.json: records the data at rest as in the clear"),
                "{e}"
            ),
            ("no check", Ok((mut disk, m))) => {
                assert_eq!(m.report.mapped_units, n as u64);
                disk.close().unwrap();
                assert!(std::fs::read_to_string(&meta_path)
                    .unwrap()
                    .contains("key_check"));
            }
            (d, other) => panic!("{d}: {:?}", other.map(|(_, m)| m)),
        }
    }
    std::fs::remove_dir_all(&base).unwrap();
}

/// Issue 73, item 15: a crypto erase killed after any of its steps leaves the old store
/// (killed before the first) or one the next start finishes erasing: no unit mapped, no data
/// or record left, a new key; `crypto-erase` again is accepted, never refused.
#[test]
fn a_crypto_erase_killed_after_any_step_leaves_the_old_store_or_an_erased_one() {
    let base = std::env::temp_dir().join(format!("ssdlab-disk-erase-{}", std::process::id()));
    for stop in 0..=5usize {
        let dir = base.join(format!("stop-{stop}"));
        let _ = std::fs::remove_dir_all(&dir);
        let (mut disk, n) = filled_store(&dir, self_encrypting());
        disk.data.write_all_at(&[0x5a; 8192], 0).unwrap();
        disk.close().unwrap();
        drop(disk);
        let old_key = std::fs::read(dir.join("media_key")).unwrap();
        // The erase, stopped after `stop` steps (5: it ran to the end).
        let text = std::fs::read_to_string(dir.join("store.json")).unwrap();
        let mut meta: StoreMeta = serde_json::from_str(&text).unwrap();
        let lock = take_lock(&dir).unwrap();
        super::crypt::erase_steps(&dir, &mut meta, (stop < 5).then_some(stop)).unwrap();
        drop(lock);
        let mut again = self_encrypting();
        let (mut disk, m) = mount(&dir, &mut again, "example-small", false).unwrap();
        let mapped = m.report.mapped_units;
        if stop == 0 {
            assert_eq!(
                mapped, n as u64,
                "killed before the first step: the old store"
            );
            assert!(!m.erase_finished);
            assert_eq!(std::fs::read(dir.join("media_key")).unwrap(), old_key);
        } else {
            assert_eq!(mapped, 0, "stop {stop}: {m:?}");
            assert_eq!(m.erase_finished, stop < 5, "stop {stop}");
            assert_ne!(
                std::fs::read(dir.join("media_key")).unwrap(),
                old_key,
                "stop {stop}"
            );
            assert_eq!(
                std::fs::metadata(dir.join("data")).unwrap().len(),
                0,
                "stop {stop}"
            );
            let meta = std::fs::read_to_string(dir.join("store.json")).unwrap();
            assert!(!meta.contains("erasing"), "stop {stop}: {meta}");
        }
        disk.close().unwrap();
        drop(disk);
        // A crypto erase of it (finished or not, old or erased) is accepted.
        crypto_erase_store(&dir).unwrap();
    }
    std::fs::remove_dir_all(&base).unwrap();
}

#[test]
fn a_store_killed_at_any_write_rebuilds_to_the_last_completed_state() {
    let base = std::env::temp_dir().join(format!("ssdlab-disk-kill-{}", std::process::id()));
    for cut in 0..3u64 {
        let dir = base.join(format!("cut{cut}"));
        let _ = std::fs::remove_dir_all(&dir);
        let mut dev = device();
        let n = dev.geometry.logical_units as u32;
        dev.fill_untimed(0, n);
        let (disk, _) = mount(&dir, &mut dev, "example-small", true).unwrap();
        let mut store = DataStore::on_disk(disk);
        dev.ftl.record_map_changes();
        let mut rng = Rng::new(100 + cut);
        let mut version = vec![0u32; n as usize];
        let kill_after = 3 * n as u64 / 2 * 3 + rng.below(4000);
        store.disk().unwrap().writes_left = Some(kill_after);
        let mut killed_at = None;
        for tag in 1..=4 * n as u64 {
            let lba = rng.below(n as u64 / 2) as u32;
            let bytes = unit_data(lba, version[lba as usize] + 1);
            let w = WriteData {
                offset: lba as u64 * 4096,
                length: 4096,
                bytes: Some(bytes),
            };
            dev.ftl.write_unit(
                HostWrite {
                    lba,
                    tag,
                    data_ready: Default::default(),
                    pid: ssdlab_core::ftl::NO_PLACEMENT,
                },
                &mut NullSink,
            );
            let changes = dev.ftl.take_map_changes();
            if store.apply(changes, |t| (t == tag).then_some(&w)).is_err() {
                killed_at = Some(lba);
                break;
            }
            version[lba as usize] += 1;
        }
        let killed_lba = killed_at.expect("the store was killed");
        assert!(
            dev.ftl.counters.gc_units_copied > 0,
            "no GC before the kill"
        );
        drop(store);
        let mut back = device();
        let (disk, m) = mount(&dir, &mut back, "example-small", false).unwrap();
        assert!(!m.clean);
        let mut store = DataStore::on_disk(disk);
        let mut buf = vec![0u8; 4096];
        for lba in 0..n {
            store
                .read(lba as u64 * 4096, &mut buf, |l| back.ftl.lookup(l))
                .unwrap();
            let v = version[lba as usize];
            let expect = |v: u32| {
                if v == 0 {
                    vec![0u8; 4096]
                } else {
                    unit_data(lba, v)
                }
            };
            let ok = buf == expect(v) || (lba == killed_lba && buf == expect(v + 1));
            assert!(
                ok,
                "cut {cut}: lba {lba} (version {v}) reads {:?}",
                &buf[..9]
            );
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
    std::fs::remove_dir_all(&base).unwrap();
}

/// A kill while an upper page's program runs, judged by the protection class: `map`
/// completes the running program and loses only units not yet programming; `none` loses
/// both and corrupts the paired lower page (programmed earlier; no RAIN here).
#[test]
fn a_kill_mid_program_loses_and_corrupts_as_the_protection_class_says() {
    use ssdlab_core::config::PowerLossProtection as P;
    for protection in [P::Map, P::None] {
        let dir = std::env::temp_dir().join(format!(
            "ssdlab-disk-running-{}-{protection:?}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        let mut cfg = DriveConfig::from_toml_str(ssdlab_core::EXAMPLE_DRIVE_TOML).unwrap();
        cfg.controller.power_loss_protection = protection;
        let mut dev = Device::new(&cfg, 5).unwrap();
        let g = dev.geometry.clone();
        assert_eq!(g.rain_period, 0);
        let (mut disk, _) = mount(&dir, &mut dev, "example-small", false).unwrap();
        let base = (g.blocks_per_die - 1) * g.units_per_block;
        let page = |p: u32| base + p * g.units_per_pu..base + (p + 1) * g.units_per_pu;
        // Page 0 (lower) programmed and durable; page 3 (upper, paired with 0) programming;
        // page 5 (upper over page 2, unwritten) queued.
        for (p, lba0, pending) in [(0, 0, false), (3, 100, true), (5, 200, true)] {
            for (k, ppn) in page(p).enumerate() {
                let lba = lba0 + k as u32;
                disk.store(ppn, lba, Some(&unit_data(lba, 1)), UNMAPPED, false, pending)
                    .unwrap();
            }
        }
        disk.mark_running(&page(3).collect::<Vec<_>>()).unwrap();
        drop(disk); // killed: no close
        let mut back = Device::new(&cfg, 5).unwrap();
        let (disk, m) = mount(&dir, &mut back, "example-small", false).unwrap();
        assert!(!m.clean);
        let mut store = DataStore::on_disk(disk);
        let mut buf = vec![0u8; 4096];
        let mut read = |lba: u32| {
            store
                .read(lba as u64 * 4096, &mut buf, |l| back.ftl.lookup(l))
                .map(|_| buf == unit_data(lba, 1))
                .map_err(|e| e.kind())
        };
        let n = g.units_per_pu;
        match protection {
            P::Map => {
                assert_eq!(m.lost_at_kill, n as u64);
                assert!((0..n).all(|k| read(k) == Ok(true)));
                assert!(
                    (0..n).all(|k| read(100 + k) == Ok(true)),
                    "the running program completed"
                );
                assert!(
                    (0..n).all(|k| read(200 + k) == Ok(false)),
                    "the queued one is lost"
                );
            }
            _ => {
                assert_eq!(m.lost_at_kill, 2 * n as u64);
                assert!((0..n).all(|k| read(100 + k) == Ok(false)));
                assert!((0..n).all(|k| read(200 + k) == Ok(false)));
                assert!(
                    (0..n).all(|k| read(k) == Err(io::ErrorKind::InvalidData)),
                    "the paired lower page reads as uncorrectable"
                );
            }
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

/// Issue 73, item 12 (the records): a changed byte of a current unit's record is refused at
/// start (which logical unit it holds cannot be told), naming `oob`; of a superseded copy's
/// record it is ignored and counted; a store made before checksums were kept is not checked.
#[test]
fn a_damaged_record_is_refused_or_ignored_as_it_matters() {
    let base = std::env::temp_dir().join(format!("ssdlab-disk-records-{}", std::process::id()));
    for case in ["current", "superseded", "unchecked store"] {
        let dir = base.join(case.replace(' ', "-"));
        let _ = std::fs::remove_dir_all(&dir);
        let mut dev = device();
        let (mut disk, _) = mount(&dir, &mut dev, "example-small", false).unwrap();
        // Unit 0 of logical 7, superseded by unit 1; unit 2 holds logical 8.
        disk.store(0, 7, Some(&unit_data(7, 1)), UNMAPPED, false, false)
            .unwrap();
        disk.store(1, 7, Some(&unit_data(7, 2)), 0, false, false)
            .unwrap();
        disk.release(0).unwrap();
        disk.store(2, 8, Some(&unit_data(8, 1)), UNMAPPED, false, false)
            .unwrap();
        disk.close().unwrap();
        drop(disk);
        if case == "unchecked store" {
            let meta = dir.join("store.json");
            let text = std::fs::read_to_string(&meta).unwrap();
            std::fs::write(
                &meta,
                text.replace("\"checksums\": true", "\"checksums\": false"),
            )
            .unwrap();
        }
        let ppn = if case == "superseded" { 0 } else { 2 };
        let mut oob = std::fs::read(dir.join("oob")).unwrap();
        oob[ppn * RECORD as usize + 9] ^= 0x04; // the sequence number
        std::fs::write(dir.join("oob"), oob).unwrap();
        let mut dev = device();
        let got = mount(&dir, &mut dev, "example-small", false);
        match case {
            "current" => {
                let Err(e) = got else {
                    panic!("a damaged current record opened")
                };
                assert!(
                    e.contains(&dir.join("oob").display().to_string())
                        && e.contains("unit 2")
                        && e.contains("damaged"),
                    "{e}"
                );
            }
            _ => {
                let (mut disk, m) = got.unwrap();
                assert_eq!(m.damaged_records, u64::from(case == "superseded"), "{case}");
                assert_eq!(
                    disk.load(dev.ftl.lookup(7)).unwrap().unwrap()[..],
                    unit_data(7, 2)[..]
                );
                assert_eq!(
                    disk.load(dev.ftl.lookup(8)).unwrap().unwrap()[..],
                    unit_data(8, 1)[..]
                );
            }
        }
    }
    std::fs::remove_dir_all(&base).unwrap();
}

/// Issue 73, item 12 (the data): a changed byte of a unit's data reads as an uncorrectable
/// unit (InvalidData: the NBD server's EIO), plain and encrypted; the other units read back.
#[test]
fn a_damaged_data_byte_reads_as_uncorrectable() {
    let base = std::env::temp_dir().join(format!("ssdlab-disk-data-{}", std::process::id()));
    for encrypted in [false, true] {
        let dir = base.join(format!("{encrypted}"));
        let _ = std::fs::remove_dir_all(&dir);
        let mut dev = if encrypted {
            self_encrypting()
        } else {
            device()
        };
        let (mut disk, _) = mount(&dir, &mut dev, "example-small", false).unwrap();
        for ppn in 0..3u32 {
            disk.store(
                ppn,
                10 + ppn,
                Some(&unit_data(10 + ppn, 1)),
                UNMAPPED,
                false,
                false,
            )
            .unwrap();
        }
        disk.close().unwrap();
        drop(disk);
        let mut data = std::fs::read(dir.join("data")).unwrap();
        data[4096 + 333] ^= 0x01; // unit 1
        std::fs::write(dir.join("data"), data).unwrap();
        let mut dev = if encrypted {
            self_encrypting()
        } else {
            device()
        };
        let (mut disk, _) = mount(&dir, &mut dev, "example-small", false).unwrap();
        let err = disk.load(1).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidData, "{err}");
        let mut part = [0u8; 16];
        assert!(disk.read_into(1, 100, &mut part).is_err());
        for ppn in [0u32, 2] {
            assert_eq!(
                disk.load(ppn).unwrap().unwrap()[..],
                unit_data(10 + ppn, 1)[..]
            );
        }
    }
    std::fs::remove_dir_all(&base).unwrap();
}
