use super::*;

fn example(protection: PowerLossProtection) -> DriveConfig {
    let mut cfg = DriveConfig::from_toml_str(ssdlab_core::EXAMPLE_DRIVE_TOML).unwrap();
    cfg.controller.power_loss_protection = protection;
    cfg
}

fn options(cycles: u64, seed: u64, commands_per_cycle: u32, prefill: bool) -> CrashOptions {
    CrashOptions {
        cycles,
        seed,
        commands_per_cycle,
        span_units: 4096,
        queue_depth: 4,
        prefill,
    }
}

fn run(protection: PowerLossProtection, name: &str) -> CrashReport {
    let dir = std::env::temp_dir().join(format!("ssdlab-crash-{name}-{}", std::process::id()));
    let opts = options(25, 7, 3000, true);
    let r = crashtest(&example(protection), "example", &dir, &opts, |_| {}).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    r
}

/// Every class keeps its promise; what each loses differs as its design says.
#[test]
fn each_protection_class_keeps_its_promise_and_loses_what_it_may() {
    let full = run(PowerLossProtection::Full, "full");
    assert_eq!(full.violations, 0, "{:?}", full.examples);
    assert_eq!(full.lost_units + full.corrupted_units, 0);
    let map = run(PowerLossProtection::Map, "map");
    assert_eq!(map.violations, 0, "{:?}", map.examples);
    assert!(map.lost_units > 0, "buffered data is lost");
    assert!(
        map.fell_back_units > 0,
        "lost copies fall back to older ones"
    );
    assert_eq!(map.corrupted_units, 0);
    let none = run(PowerLossProtection::None, "none");
    assert_eq!(none.violations, 0, "{:?}", none.examples);
    assert!(
        none.lost_units > map.lost_units,
        "{} vs {}",
        none.lost_units,
        map.lost_units
    );
    assert!(none.corrupted_units + none.repaired_by_rain_units > 0);
    assert_eq!(full.cycles, 25);
    assert!(
        full.gc_units_copied > 0 && none.gc_units_copied > 0,
        "the cuts fall among GC copies"
    );
    assert!(full.flushes > 0 && full.fua_writes > 0 && full.trims > 0);
}

/// crashtest takes a new or empty directory, or its own store again; a directory of other
/// files or a `serve` store is refused and left as it was (issue 25, item 2).
#[test]
fn the_store_directory_is_refused_unless_new_empty_or_its_own() {
    let base = std::env::temp_dir().join(format!("ssdlab-crash-dir-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    let opts = options(1, 1, 50, false);
    let cfg = example(PowerLossProtection::Full);
    // Unrelated files: refused, kept.
    let other = base.join("other");
    std::fs::create_dir_all(other.join("sub")).unwrap();
    std::fs::write(other.join("sub/keep.txt"), b"precious").unwrap();
    let err = crashtest(&cfg, "example", &other, &opts, |_| {}).unwrap_err();
    assert!(
        err.contains("not empty and not a store crashtest made"),
        "{err}"
    );
    assert_eq!(
        std::fs::read(other.join("sub/keep.txt")).unwrap(),
        b"precious"
    );
    // A store `serve` made (store.json, no marker): refused, kept.
    let served = base.join("served");
    std::fs::create_dir_all(&served).unwrap();
    std::fs::write(served.join("store.json"), b"{}").unwrap();
    assert!(crashtest(&cfg, "example", &served, &opts, |_| {}).is_err());
    assert!(served.join("store.json").is_file());
    // A file: refused.
    let file = base.join("file");
    std::fs::write(&file, b"x").unwrap();
    assert!(crashtest(&cfg, "example", &file, &opts, |_| {})
        .unwrap_err()
        .contains("not a directory"));
    // Empty, then its own store again: taken.
    let own = base.join("own");
    std::fs::create_dir_all(&own).unwrap();
    crashtest(&cfg, "example", &own, &opts, |_| {}).unwrap();
    assert!(own.join(CRASHTEST_MARKER).is_file());
    crashtest(&cfg, "example", &own, &opts, |_| {}).unwrap();
    std::fs::remove_dir_all(&base).unwrap();
}

/// The check can fail: a drive that loses buffered data judged by the promise of full
/// protection shows unserializable writes.
#[test]
fn losses_beyond_the_promise_are_reported() {
    let dir = std::env::temp_dir().join(format!("ssdlab-crash-lie-{}", std::process::id()));
    let opts = options(10, 3, 400, false);
    // Cut as `map`, judge as `full`.
    let cfg = example(PowerLossProtection::Map);
    let r = crashtest_judged(&cfg, &dir, &opts, PowerLossProtection::Full);
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(r.violations > 0);
    assert!(
        r.violations_by_class.contains_key("unserializable write"),
        "{:?}",
        r.violations_by_class
    );
}

fn crashtest_judged(
    cfg: &DriveConfig,
    dir: &Path,
    opts: &CrashOptions,
    judge: PowerLossProtection,
) -> CrashReport {
    JUDGE.with(|j| j.set(Some(judge)));
    let r = crashtest(cfg, "example", dir, opts, |_| {}).unwrap();
    JUDGE.with(|j| j.set(None));
    r
}

/// Issue 25, item 1: on a small drive where collection reaches old copies, a `map` or
/// `none` drive under load whose firmware erased the superseded copy of a write the cut
/// then loses returns zeros for data an earlier FLUSH or FUA made durable. The check flags
/// it ("unserializable write", "holds zeros") when the erase hold is off; with the hold, as
/// the drive runs, nothing is lost beyond what the class may lose.
#[test]
fn flushed_data_survives_a_cut_because_the_superseded_copy_is_kept() {
    // The two classes are independent: one thread each (the hold switch is per thread).
    let class = |protection: PowerLossProtection| {
        let name = protection.name();
        let dir =
            std::env::temp_dir().join(format!("ssdlab-crash-hold-{name}-{}", std::process::id()));
        let mut opts = options(200, 11, 1000, true);
        opts.span_units = 8000;
        opts.queue_depth = 32;
        let cfg = example(protection);
        NO_HOLD.with(|h| h.set(true));
        let without = crashtest(&cfg, "example", &dir, &opts, |_| {}).unwrap();
        NO_HOLD.with(|h| h.set(false));
        let with = crashtest(&cfg, "example", &dir, &opts, |_| {}).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(
            without
                .violations_by_class
                .get("unserializable write")
                .is_some_and(|&n| n > 0),
            "{name}: without the hold {:?}",
            without.violations_by_class
        );
        assert!(
            without.examples.iter().any(|e| e.contains("holds zeros")),
            "{name}: {:?}",
            without.examples
        );
        assert_eq!(without.erases_held, 0);
        assert_eq!(with.violations, 0, "{name}: {:?}", with.examples);
        assert!(with.erases_held > 0, "{name}: the hold held erases");
        assert!(with.fell_back_units > 0, "{name}: lost writes fell back");
    };
    std::thread::scope(|s| {
        for protection in [PowerLossProtection::Map, PowerLossProtection::None] {
            s.spawn(move || class(protection));
        }
    });
}

thread_local! {
    pub(super) static JUDGE: std::cell::Cell<Option<PowerLossProtection>> = const { std::cell::Cell::new(None) };
    pub(super) static NO_HOLD: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// What a read back holds, decoded: a write's unit its version, zeros ZEROS, one byte changed
/// anywhere bit corruption, another unit's write a flying write.
#[test]
fn a_unit_read_back_is_told_apart_from_every_damage() {
    use super::shadow::{decode, unit_bytes, ZEROS};
    let good = unit_bytes(7, 3, 4096);
    assert_eq!(decode(7, &good), Ok(3));
    assert_eq!(decode(7, &[0u8; 4096]), Ok(ZEROS));
    for at in [0, 4, 8, 100, 4095] {
        let mut bad = good.clone();
        bad[at] ^= 0x40;
        assert_eq!(
            decode(7, &bad).unwrap_err().0,
            "bit corruption",
            "byte {at}"
        );
    }
    let mut almost_zero = vec![0u8; 4096];
    almost_zero[4000] = 1;
    assert_eq!(decode(7, &almost_zero).unwrap_err().0, "bit corruption");
    assert_eq!(decode(8, &good).unwrap_err().0, "flying write");
}
