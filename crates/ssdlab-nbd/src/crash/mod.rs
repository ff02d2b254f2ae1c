//! The crash-test harness (`ssdlab crashtest`): seeded writes, overwrites, TRIMs, FLUSH and
//! FUA against a shadow copy, a power cut at a random instant, a restart from the store, and
//! every logical unit checked against what the drive's power-loss protection promises.
//!
//! A cycle drives the modelled drive (timed, several commands in flight, never two
//! overlapping) with its data in an on-disk store ([`crate::disk`]). At the cut the model
//! says what is not yet on the NAND and the drive's `controller.power_loss_protection` says
//! what of it survives ([`ssdlab_core::power_loss`], `Device::power_cut`):
//! - `full`: everything (the capacitors program what is buffered);
//! - `map`: running programs finish and the map is flushed; host data still in DRAM (partial
//!   pages, queued programs) is lost;
//! - `none`: queued and running host programs are lost too, and a running program of an MLC
//!   upper page corrupts its paired lower page (repaired from the RAIN stripe where the drive
//!   has RAIN, detected as uncorrectable otherwise).
//!
//! Garbage-collection copies are never lost: firmware keeps the old copy mapped until the
//! new one is programmed, and the victim's erase runs after the copy on the same die. A lost
//! host copy gives way to the copy it superseded if that is still on the NAND, or to nothing.
//!
//! The drive is then rebuilt from the store as at power-on ([`crate::disk::mount`]) and each
//! unit is read back. What each unit may hold: with `full`, its last acknowledged write or a
//! write still in flight; with `map` or `none`, its last write made durable (acknowledged
//! before a FLUSH that completed, or with FUA) or any later one, never zeros where a later
//! write was lost (the superseded copy must still be there: issue 25, item 1), never another
//! unit's data, never garbage; with `none` also a detected error.
//! Anything else is a violation, classified as Zheng et al. (FAST'13, "Understanding the
//! Robustness of SSDs under Power Fault") do: bit corruption, flying writes (another unit's
//! data), unserializable writes (an older state than a completed FLUSH or FUA promised),
//! metadata corruption (the rebuild fails), dead device (the store cannot be opened).
//! (Shorn writes, part of a unit old and part new, cannot happen at the mapping-unit
//! granularity the harness writes.)

use crate::disk::{mount, DiskUnits};
use crate::store::{DataStore, WriteData};
use ssdlab_core::config::{DriveConfig, PowerLossProtection};
use ssdlab_core::device::{Completion, Device, HostIo, IoKind};
use ssdlab_core::rng::Rng;
use ssdlab_core::session::{Control, Point, Session, Source};
use ssdlab_core::time::{SimTime, NS_PER_S};
use std::collections::BTreeMap;
use std::path::Path;

mod shadow;
use shadow::{account, decode, unit_bytes, Flight, Shadow, UNREADABLE, ZEROS};

/// What a run does.
#[derive(Clone, Debug)]
pub struct CrashOptions {
    pub cycles: u64,
    pub seed: u64,
    /// Commands per cycle before the cut (the cut falls at a random one of them).
    pub commands_per_cycle: u32,
    /// Logical units written (from unit 0).
    pub span_units: u32,
    pub queue_depth: u32,
    /// Start from a drive with every unit written (zeros), so that garbage collection moves
    /// valid data from the first cycle.
    pub prefill: bool,
}

/// A run's figures.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct CrashReport {
    pub drive: String,
    pub protection: String,
    pub rain: bool,
    pub cycles: u64,
    pub commands: u64,
    pub writes: u64,
    pub fua_writes: u64,
    pub trims: u64,
    pub flushes: u64,
    /// Acknowledged or in-flight host copies the cuts lost, and of those how many fell back
    /// to an older copy still on the NAND.
    pub lost_units: u64,
    pub fell_back_units: u64,
    /// Units of paired lower pages corrupted by interrupted upper-page programs, and those
    /// rebuilt from the RAIN stripe instead.
    pub corrupted_units: u64,
    pub repaired_by_rain_units: u64,
    /// Reads the drive answered with a detected error (allowed only without protection).
    pub detected_errors: u64,
    /// Units whose content after a cut was still what the host last wrote.
    pub units_checked: u64,
    /// Units garbage collection moved during the cycles (the cuts fall among its copies).
    pub gc_units_copied: u64,
    /// Collected victims whose erase waited for the host programs superseding their copies
    /// (the erase hold of drives without full protection), and of those how many a die out
    /// of free blocks erased early.
    pub erases_held: u64,
    pub erase_holds_broken: u64,
    /// Program and erase failures and grown bad blocks over the cycles (`--faults`).
    pub program_failures: u64,
    pub erase_failures: u64,
    pub grown_bad_blocks: u64,
    pub violations: u64,
    pub violations_by_class: BTreeMap<String, u64>,
    /// The first violations, described.
    pub examples: Vec<String>,
    pub mount_ms_mean: f64,
    pub mount_ms_max: f64,
}

/// The file that marks a store `crashtest` made, so that a later run may replace it.
pub const CRASHTEST_MARKER: &str = "crashtest.marker";

/// Make `dir` ready for a fresh store: a new or empty directory is taken as it is, one an
/// earlier crashtest made (it holds [`CRASHTEST_MARKER`]) is emptied; anything else (a `serve`
/// store, unrelated files, a file) is refused, and nothing in it is touched.
fn prepare_store_dir(dir: &Path) -> Result<(), String> {
    let accepted =
        "accepted: a new or empty directory, or one an earlier `ssdlab crashtest --store` made";
    if !dir.exists() {
        return Ok(());
    }
    if !dir.is_dir() {
        return Err(format!("{}: not a directory; {accepted}", dir.display()));
    }
    let mut entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    if entries.next().is_none() {
        return Ok(());
    }
    if !dir.join(CRASHTEST_MARKER).is_file() {
        return Err(format!(
            "{}: not empty and not a store crashtest made (no {CRASHTEST_MARKER}): crashtest \
             rewrites its store from scratch, so it leaves this one alone; {accepted}",
            dir.display()
        ));
    }
    std::fs::remove_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))
}

/// Run `opts.cycles` power cuts of the drive `cfg` with its store in `dir` (a new or empty
/// directory, or one an earlier crashtest made: see [`prepare_store_dir`]).
pub fn crashtest(
    cfg: &DriveConfig,
    drive: &str,
    dir: &Path,
    opts: &CrashOptions,
    mut progress: impl FnMut(u64),
) -> Result<CrashReport, String> {
    let protection = cfg.controller.power_loss_protection;
    let judge = judge_override().unwrap_or(protection);
    prepare_store_dir(dir)?;
    let mut dev = crate::device(cfg, opts.seed)?;
    if without_erase_hold() {
        dev.ftl.set_erase_hold(false);
    }
    let unit = dev.geometry.mapping_unit_bytes as usize;
    let span = opts
        .span_units
        .min(dev.geometry.logical_units as u32)
        .max(16);
    let rain = dev.geometry.rain_period > 0;
    if opts.prefill {
        let n = dev.geometry.logical_units as u32;
        dev.fill_untimed(0, n);
    }
    let (disk, _) = mount(dir, &mut dev, drive, opts.prefill)?;
    std::fs::write(
        dir.join(CRASHTEST_MARKER),
        "made by `ssdlab crashtest`: a later crashtest may replace this store\n",
    )
    .map_err(|e| format!("{}: {e}", dir.join(CRASHTEST_MARKER).display()))?;
    let mut report = CrashReport {
        drive: drive.into(),
        protection: protection.name().into(),
        rain,
        ..CrashReport::default()
    };
    let mut shadow = Shadow::new(vec![ZEROS; span as usize]);
    let mut rng = Rng::new(opts.seed);
    let mut next_version = 1u32;
    let mut disk = Some(disk);
    let mut mount_ms = Vec::new();
    for cycle in 0..opts.cycles {
        let mut store = DataStore::on_disk(disk.take().expect("store open"));
        dev.ftl.record_map_changes();
        let cut_at = 1 + rng.below(opts.commands_per_cycle as u64) as u32;
        let extra_steps = rng.below(64);
        let mut cycle_run = Cycle {
            rng: &mut rng,
            span,
            unit,
            queue_depth: opts.queue_depth as usize,
            cut_at,
            extra_steps,
            shadow: &mut shadow,
            next_version: &mut next_version,
            report: &mut report,
            store: &mut store,
            flights: BTreeMap::new(),
            pending: None,
            submitted: 0,
            steps_after: 0,
            tag: 0,
            error: None,
        };
        // The core's run loop (ssdlab_core::session) drives the cycle to its cut.
        let mut session = Session::new(&dev, dev.now(), NS_PER_S);
        session.advance(&mut dev, &mut cycle_run, SimTime(u64::MAX));
        if let Some(e) = cycle_run.error.take() {
            return Err(e);
        }
        let mut flights = std::mem::take(&mut cycle_run.flights);
        settle(&mut dev, &mut store, &mut flights, &mut shadow)?;
        report.gc_units_copied += dev.ftl.counters.gc_units_copied;
        report.erases_held += dev.ftl.counters.gc_erases_held;
        report.erase_holds_broken += dev.ftl.counters.gc_erase_holds_broken;
        report.program_failures += dev.ftl.counters.program_failures;
        report.erase_failures += dev.ftl.counters.erase_failures;
        report.grown_bad_blocks += dev.ftl.counters.grown_bad_blocks;
        // The cut (the drive's rules, `ssdlab_core::power_loss`), then power on.
        let cut = dev.power_cut();
        let disk_units = store.disk().expect("on disk");
        let (lost_current, fell_back) = disk_units
            .power_cut(&cut.lost, &cut.corrupt)
            .map_err(|e| format!("{}: power cut: {e}", dir.display()))?;
        report.lost_units += lost_current;
        report.fell_back_units += fell_back;
        report.corrupted_units += cut.corrupt.len() as u64;
        report.repaired_by_rain_units += cut.repaired_by_rain_units;
        drop(store);
        let (d, m) = match mount(dir, &mut dev, drive, false) {
            Ok(x) => x,
            Err(e) => {
                let class = if e.contains("damaged") {
                    "metadata corruption"
                } else {
                    "dead device"
                };
                violation(&mut report, class, format!("cycle {cycle}: {e}"));
                report.cycles = cycle + 1;
                return Ok(report);
            }
        };
        mount_ms.push(m.report.mount_ns as f64 / 1e6);
        let mut store = DataStore::on_disk(d);
        let mut now_holds = Vec::with_capacity(span as usize);
        let mut buf = vec![0u8; unit];
        for lba in 0..span {
            let read = store.read(lba as u64 * unit as u64, &mut buf, |l| dev.ftl.lookup(l));
            report.units_checked += 1;
            let got = match read {
                Ok(()) => decode(lba, &buf),
                Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {
                    report.detected_errors += 1;
                    Ok(UNREADABLE)
                }
                Err(e) => return Err(format!("{}: reading unit {lba}: {e}", dir.display())),
            };
            let holds = match got {
                Ok(v) if shadow.allows(lba as usize, v, judge) => v,
                Ok(UNREADABLE) if judge == PowerLossProtection::None => UNREADABLE,
                Ok(v) => {
                    let what = match v {
                        ZEROS => "zeros".to_string(),
                        UNREADABLE => "a read error".to_string(),
                        v => format!("version {v}"),
                    };
                    let class = if v == UNREADABLE {
                        "bit corruption"
                    } else {
                        "unserializable write"
                    };
                    violation(
                        &mut report,
                        class,
                        format!(
                            "cycle {cycle}: unit {lba} holds {what}; written since restart {:?}, acknowledged up to #{}, durable from #{}",
                            shadow.history[lba as usize],
                            shadow.acked[lba as usize],
                            shadow.durable[lba as usize]
                        ),
                    );
                    v
                }
                Err((class, why)) => {
                    violation(
                        &mut report,
                        class,
                        format!("cycle {cycle}: unit {lba} {why}"),
                    );
                    UNREADABLE
                }
            };
            now_holds.push(holds);
        }
        shadow = Shadow::new(now_holds);
        disk = Some(match store_into_disk(store) {
            Some(d) => d,
            None => unreachable!("an on-disk store"),
        });
        report.cycles = cycle + 1;
        progress(cycle + 1);
    }
    if !mount_ms.is_empty() {
        report.mount_ms_mean = mount_ms.iter().sum::<f64>() / mount_ms.len() as f64;
        report.mount_ms_max = mount_ms.iter().cloned().fold(0.0, f64::max);
    }
    if let Some(mut d) = disk {
        d.close()?;
    }
    Ok(report)
}

fn store_into_disk(store: DataStore) -> Option<DiskUnits> {
    store.into_disk()
}

/// Tests judge a cut by another class's promise, to show the check can fail.
#[cfg(test)]
fn judge_override() -> Option<PowerLossProtection> {
    tests::JUDGE.with(|j| j.get())
}

#[cfg(not(test))]
fn judge_override() -> Option<PowerLossProtection> {
    None
}

/// Tests run a drive without the erase hold, to show the check catches what it prevents.
#[cfg(test)]
fn without_erase_hold() -> bool {
    tests::NO_HOLD.with(|h| h.get())
}

#[cfg(not(test))]
fn without_erase_hold() -> bool {
    false
}

fn violation(r: &mut CrashReport, class: &str, what: String) {
    r.violations += 1;
    *r.violations_by_class.entry(class.into()).or_default() += 1;
    if r.examples.len() < 10 {
        r.examples.push(format!("{class}: {what}"));
    }
}

/// The next command: a write (some with FUA), a TRIM or a FLUSH, on units no command in
/// flight touches. None when the draw overlaps one (try again after the next step).
fn choose(
    rng: &mut Rng,
    span: u32,
    flights: &BTreeMap<u64, Flight>,
    shadow: &mut Shadow,
    next_version: &mut u32,
    unit: usize,
) -> Option<Flight> {
    let roll = rng.below(100);
    if roll < 10 {
        let acked_then = Some(shadow.acked.clone());
        return Some(Flight {
            first: 0,
            units: 0,
            kind: IoKind::Flush,
            fua: false,
            index: Vec::new(),
            data: None,
            acked_then,
        });
    }
    let units = 1 + rng.below(8) as u32;
    let first = rng.below((span - units) as u64) as u32;
    let overlaps = flights
        .values()
        .any(|f| f.units > 0 && first < f.first + f.units && f.first < first + units);
    if overlaps {
        return None;
    }
    let trim = roll < 25;
    let version = if trim { ZEROS } else { *next_version };
    let index: Vec<usize> = (first..first + units)
        .map(|lba| {
            let h = &mut shadow.history[lba as usize];
            h.push(version);
            h.len() - 1
        })
        .collect();
    if trim {
        return Some(Flight {
            first,
            units,
            kind: IoKind::Trim,
            fua: false,
            index,
            data: None,
            acked_then: None,
        });
    }
    *next_version += 1;
    let mut bytes = Vec::with_capacity(units as usize * unit);
    for lba in first..first + units {
        bytes.extend(unit_bytes(lba, version, unit));
    }
    Some(Flight {
        first,
        units,
        kind: IoKind::Write,
        fua: rng.below(100) < 15,
        index,
        data: Some(WriteData {
            offset: first as u64 * unit as u64,
            length: units as u64 * unit as u64,
            bytes: Some(bytes),
        }),
        acked_then: None,
    })
}

/// One cycle of the harness up to its cut, as a session's source: seeded commands, never two
/// overlapping, up to the queue depth, until the cut's command; then `extra_steps` more steps.
struct Cycle<'a> {
    rng: &'a mut Rng,
    span: u32,
    unit: usize,
    queue_depth: usize,
    cut_at: u32,
    extra_steps: u64,
    shadow: &'a mut Shadow,
    next_version: &'a mut u32,
    report: &'a mut CrashReport,
    store: &'a mut DataStore,
    flights: BTreeMap<u64, Flight>,
    /// The command chosen and not yet submitted.
    pending: Option<Flight>,
    submitted: u32,
    steps_after: u64,
    tag: u64,
    /// The store failed: the cycle stops and the harness reports it.
    error: Option<String>,
}

impl Source for Cycle<'_> {
    fn next_submission(&mut self, now: SimTime) -> Option<SimTime> {
        if self.submitted >= self.cut_at || self.flights.len() >= self.queue_depth {
            return None;
        }
        if self.pending.is_none() {
            self.pending = choose(
                self.rng,
                self.span,
                &self.flights,
                self.shadow,
                self.next_version,
                self.unit,
            );
        }
        self.pending.as_ref().map(|_| now)
    }

    fn submit(&mut self, dev: &mut Device, at: SimTime) {
        let f = self.pending.take().expect("a command chosen");
        let (kind, fua) = (f.kind, f.fua);
        let io = HostIo {
            kind,
            offset_bytes: f.first as u64 * self.unit as u64,
            length_bytes: f.units as u64 * self.unit as u64,
            fua,
            tag: self.tag,
            placement: ssdlab_core::ftl::NO_PLACEMENT,
        };
        let r = &mut *self.report;
        match kind {
            IoKind::Write if fua => r.fua_writes += 1,
            IoKind::Write => r.writes += 1,
            IoKind::Trim => r.trims += 1,
            _ => r.flushes += 1,
        }
        r.commands += 1;
        self.flights.insert(self.tag, f);
        self.tag += 1;
        self.submitted += 1;
        dev.submit(io, at);
    }

    fn outstanding(&self) -> u64 {
        self.flights.len() as u64
    }

    fn stepped(&mut self, dev: &mut Device) {
        if let Err(e) = apply_map_changes(dev, self.store, &self.flights) {
            self.error.get_or_insert(e);
        }
    }

    fn completed(&mut self, c: &Completion, _dev: &Device) -> bool {
        let f = self.flights.remove(&c.io.tag).expect("a known command");
        account(self.shadow, f);
        false
    }

    /// Before each event: after the cut's command, `extra_steps` more steps, and a failed store
    /// stops at once. At rest (nothing pending, nothing chosen): done once the cut's command is
    /// in (else choose again).
    fn control(&mut self, point: Point, _dev: &mut Device) -> Control {
        match point {
            Point::BeforeEvent => {
                if self.error.is_some() {
                    return Control::Stop;
                }
                if self.submitted >= self.cut_at {
                    if self.steps_after >= self.extra_steps {
                        return Control::Stop;
                    }
                    self.steps_after += 1;
                }
                Control::Continue
            }
            Point::AtRest if self.submitted >= self.cut_at => Control::Stop,
            _ => Control::Continue,
        }
    }
}

/// Apply the FTL's map changes to the store (the data of writes in flight from `flights`).
fn apply_map_changes(
    dev: &mut Device,
    store: &mut DataStore,
    flights: &BTreeMap<u64, Flight>,
) -> Result<(), String> {
    store
        .apply_from(dev, |tag| flights.get(&tag).and_then(|f| f.data.as_ref()))
        .map_err(|e| format!("store: {e}"))
}

/// Apply the FTL's map changes to the store, then account completed commands in the shadow.
fn settle(
    dev: &mut Device,
    store: &mut DataStore,
    flights: &mut BTreeMap<u64, Flight>,
    shadow: &mut Shadow,
) -> Result<(), String> {
    apply_map_changes(dev, store, flights)?;
    let done: Vec<u64> = dev.drain_completions().map(|c| c.io.tag).collect();
    for tag in done {
        account(shadow, flights.remove(&tag).expect("a known command"));
    }
    Ok(())
}

#[cfg(test)]
mod tests;
