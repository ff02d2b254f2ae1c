//! Seeded NAND faults: what a drive's error handling costs in time and what it cannot hide.
//!
//! Rates are per NAND operation and drawn from one seeded stream in event order, so the same
//! configuration and seed give the same faults (`[faults]` in a drive's TOML, or
//! `--faults read_retry=1e-3,uncorrectable=1e-5,program_fail=1e-4,erase_fail=1e-4,seed=7`).
//!
//! - **Read retry** (`read_retry`, per page read): the ECC fails at the default read
//!   reference voltages and the controller reads again with shifted ones (ONFI 4.0 "read retry"
//!   feature; Cai et al., "Data Retention in MLC NAND Flash Memory", HPCA 2015, section 5). Each
//!   retry is a full page read and transfer; the number of retries is drawn uniformly from
//!   1..=`read_retry_max` (ASSUMED; vendors do not publish their retry tables).
//! - **Uncorrectable read** (`uncorrectable`, per host page read, after the retries): with
//!   RAIN the controller rebuilds the page from the other pages of its parity stripe (Micron,
//!   "RAIN", TN-FD-12 / M500DC product brief: "RAIN ... rebuilds a failed page"); every one of
//!   them is read and transferred, timed on the die and channel. Without RAIN the command fails
//!   for those logical units only (NBD EIO; `Drive` counts it) and they stay unreadable until
//!   the host writes or trims them, as a pending sector does on a real drive.
//! - **Program failure** (`program_fail`, per program operation): the status check after
//!   tPROG fails; the firmware writes the page's data again elsewhere (it is still in the
//!   controller's buffer) and retires the block: its valid data is collected and the block is
//!   never erased or written again (a grown bad block).
//! - **Erase failure** (`erase_fail`, per block erase): the block is retired.
//!
//! - **Die failure** (`die_fail=DIE@SECONDS`): from then on every page read on that die is
//!   rebuilt from the other members of its RAIN stripe, which lies across dies ("RAIN is parity
//!   striped across dies (RAID-5 like)", drives.toml; M500DC: rebuilds "a failed page or die"),
//!   or fails without RAIN; host writes go to the other dies from then on.
//!
//! The stripe's members are read on the dies after the failing one in turn (`rain_period - 1`
//! program units), in parallel across dies, as the parity is striped across dies; the FTL
//! places parity pages in the same block for their capacity and program-time cost only.
//! Not modelled: faults on garbage-collection reads beyond read retry, and the firmware
//! rebuilding a failed die's data onto the others in the background.

use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct FaultConfig {
    /// Probability that a page read needs read retry.
    #[serde(default)]
    pub read_retry: f64,
    /// Most retries one page read takes (drawn uniformly from 1..=this).
    #[serde(default = "default_read_retry_max")]
    pub read_retry_max: u32,
    /// Probability that a host page read is uncorrectable after its retries.
    #[serde(default)]
    pub uncorrectable: f64,
    /// Probability that a program operation fails.
    #[serde(default)]
    pub program_fail: f64,
    /// Probability that a block erase fails.
    #[serde(default)]
    pub erase_fail: f64,
    /// A whole die that fails, and when (simulated seconds from power-on).
    #[serde(default)]
    pub die: Option<u32>,
    #[serde(default)]
    pub die_fail_at_s: f64,
    /// Seed of the fault stream (independent of the workload's).
    #[serde(default)]
    pub seed: u64,
}

fn default_read_retry_max() -> u32 {
    3
}

impl Default for FaultConfig {
    fn default() -> Self {
        FaultConfig {
            read_retry: 0.0,
            read_retry_max: default_read_retry_max(),
            uncorrectable: 0.0,
            program_fail: 0.0,
            erase_fail: 0.0,
            die: None,
            die_fail_at_s: 0.0,
            seed: 0,
        }
    }
}

/// The `--faults` keys, with what each accepts.
pub const FAULT_KEYS: &str = "read_retry, uncorrectable, program_fail, erase_fail (probabilities 0..1), read_retry_max (1..64), die_fail (DIE@SECONDS: that die fails then), seed (an integer)";

impl FaultConfig {
    /// Any fault enabled?
    pub fn any(&self) -> bool {
        self.read_retry > 0.0
            || self.uncorrectable > 0.0
            || self.program_fail > 0.0
            || self.erase_fail > 0.0
            || self.die.is_some()
    }

    /// Each field in range; the error names the field.
    pub fn check(&self) -> Result<(), (String, String)> {
        for (name, p) in [
            ("read_retry", self.read_retry),
            ("uncorrectable", self.uncorrectable),
            ("program_fail", self.program_fail),
            ("erase_fail", self.erase_fail),
        ] {
            if !(0.0..=1.0).contains(&p) {
                return Err((
                    format!("faults.{name}"),
                    format!("{p} is not a probability (accepted: 0 to 1)"),
                ));
            }
        }
        // A program or erase that fails every time would retire every block.
        for (name, p) in [
            ("program_fail", self.program_fail),
            ("erase_fail", self.erase_fail),
        ] {
            if p > 0.1 {
                return Err((
                    format!("faults.{name}"),
                    format!("{p}: at most 0.1 (every failure retires a block)"),
                ));
            }
        }
        if !(self.die_fail_at_s.is_finite() && self.die_fail_at_s >= 0.0) {
            return Err((
                "faults.die_fail_at_s".into(),
                format!("{} (accepted: 0 or more seconds)", self.die_fail_at_s),
            ));
        }
        if !(1..=64).contains(&self.read_retry_max) {
            return Err((
                "faults.read_retry_max".into(),
                format!("{} (accepted: 1 to 64)", self.read_retry_max),
            ));
        }
        Ok(())
    }

    /// Parse a `--faults` spec: `key=value` pairs separated by commas; keys not named keep
    /// their defaults. An error names the pair and what is accepted.
    pub fn parse(spec: &str) -> Result<FaultConfig, String> {
        let mut f = FaultConfig::default();
        let blank = spec.trim().is_empty();
        for pair in spec.split(',').map(str::trim).filter(|_| !blank) {
            if pair.is_empty() {
                return Err(format!(
                    "'{spec}': an empty item between commas; expected key=value pairs separated by single commas (keys: {FAULT_KEYS})"
                ));
            }
            let Some((key, value)) = pair.split_once('=') else {
                return Err(format!("'{pair}': expected key=value (keys: {FAULT_KEYS})"));
            };
            let (key, value) = (key.trim(), value.trim());
            let prob = |v: &str| {
                v.parse::<f64>()
                    .ok()
                    .filter(|p| p.is_finite())
                    .ok_or_else(|| format!("'{pair}': {v} is not a number (accepted: a probability 0 to 1, e.g. 1e-4)"))
            };
            match key {
                "read_retry" => f.read_retry = prob(value)?,
                "uncorrectable" => f.uncorrectable = prob(value)?,
                "program_fail" => f.program_fail = prob(value)?,
                "erase_fail" => f.erase_fail = prob(value)?,
                "read_retry_max" => {
                    f.read_retry_max = value.parse().map_err(|_| {
                        format!("'{pair}': {value} is not a whole number (accepted: 1 to 64)")
                    })?
                }
                "die_fail" => {
                    let bad = || {
                        format!("'{pair}': accepted DIE@SECONDS, e.g. die_fail=2@1.5 (die 2 fails 1.5 simulated seconds after power-on)")
                    };
                    let (die, at) = value.split_once('@').ok_or_else(bad)?;
                    f.die = Some(die.trim().parse().map_err(|_| bad())?);
                    f.die_fail_at_s = at.trim().parse().map_err(|_| bad())?;
                }
                "seed" => {
                    f.seed = value.parse().map_err(|_| {
                        format!("'{pair}': {value} is not a whole number (accepted: 0 to 2^64-1)")
                    })?
                }
                _ => {
                    return Err(format!(
                        "'{pair}': unknown key '{key}' (keys: {FAULT_KEYS})"
                    ))
                }
            }
        }
        f.check()
            .map_err(|(field, why)| format!("{field}: {why}"))?;
        Ok(f)
    }
}

/// What the faults did (in every summary).
#[derive(Clone, Copy, Debug, Default, Serialize, PartialEq, Eq)]
pub struct FaultCounters {
    /// Page reads that needed read retry, and the extra reads they took.
    pub read_retries: u64,
    pub read_retry_reads: u64,
    /// Host page reads uncorrectable after retries.
    pub uncorrectable_pages: u64,
    /// Of those, pages rebuilt from their RAIN stripe, and the stripe reads that took.
    pub rain_rebuilds: u64,
    pub rain_rebuild_reads: u64,
    /// Host commands failed because a unit in them could not be read (no RAIN), and units
    /// left unreadable until rewritten.
    pub failed_reads: u64,
    pub unreadable_units: u64,
    /// Program and erase failures, and the blocks retired for them (grown bad blocks).
    pub program_failures: u64,
    pub erase_failures: u64,
    pub grown_bad_blocks: u64,
    /// Dies failed, and page reads of a failed die rebuilt from the other dies (RAIN).
    pub failed_dies: u64,
    pub die_rebuilds: u64,
}

impl FaultCounters {
    /// What happened since `before`.
    pub fn since(&self, before: &FaultCounters) -> FaultCounters {
        FaultCounters {
            read_retries: self.read_retries - before.read_retries,
            read_retry_reads: self.read_retry_reads - before.read_retry_reads,
            uncorrectable_pages: self.uncorrectable_pages - before.uncorrectable_pages,
            rain_rebuilds: self.rain_rebuilds - before.rain_rebuilds,
            rain_rebuild_reads: self.rain_rebuild_reads - before.rain_rebuild_reads,
            failed_reads: self.failed_reads - before.failed_reads,
            unreadable_units: self.unreadable_units - before.unreadable_units,
            program_failures: self.program_failures - before.program_failures,
            erase_failures: self.erase_failures - before.erase_failures,
            grown_bad_blocks: self.grown_bad_blocks - before.grown_bad_blocks,
            failed_dies: self.failed_dies - before.failed_dies,
            die_rebuilds: self.die_rebuilds - before.die_rebuilds,
        }
    }
}

/// Reads a page read costs beyond itself, as the read-fault path draws them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ExtraReads {
    /// Read retries of the page.
    pub retries: u32,
    /// Reads of the rest of its RAIN stripe (a rebuild).
    pub stripe_reads: u32,
    /// The page's own die has failed: it is not read at all.
    pub dead_die: bool,
    /// A unit could not be returned: the command fails (no RAIN to rebuild from).
    pub failed: bool,
}

/// The controller's read-fault path: read retry, uncorrectable pages, a failed die, and the
/// logical units left unreadable until the host writes or trims them. One seeded stream,
/// drawn in event order (see the module's documentation).
pub struct ReadFaults {
    cfg: FaultConfig,
    rng: crate::rng::Rng,
    /// Logical units that read as uncorrectable until written or trimmed.
    unreadable: std::collections::BTreeSet<u32>,
    /// A die to fail and when; whether it has.
    die_fail: Option<(u32, crate::time::SimTime)>,
    die_failed: bool,
    pub counters: FaultCounters,
}

impl ReadFaults {
    /// The read faults `cfg` configures; None when it configures none.
    pub fn new(cfg: &FaultConfig) -> Option<Box<ReadFaults>> {
        (cfg.read_retry > 0.0 || cfg.uncorrectable > 0.0 || cfg.die.is_some()).then(|| {
            Box::new(ReadFaults {
                cfg: cfg.clone(),
                rng: crate::rng::Rng::derive(cfg.seed, "read-faults"),
                unreadable: Default::default(),
                die_fail: cfg.die.map(|d| {
                    (
                        d,
                        crate::time::SimTime((cfg.die_fail_at_s * 1e9).round() as u64),
                    )
                }),
                die_failed: false,
                counters: Default::default(),
            })
        })
    }

    /// The configured die fails once its time has come: returns it the first time, so the FTL
    /// stops placing data on it.
    pub fn die_failing(&mut self, now: crate::time::SimTime) -> Option<u32> {
        let (die, at) = self.die_fail?;
        if self.die_failed || now < at {
            return None;
        }
        self.die_failed = true;
        self.counters.failed_dies += 1;
        Some(die)
    }

    /// Draw the faults of one host page read of `units` logical units from `first_lba` on
    /// `die`, with RAIN stripes of `rain_period` program units (0: no RAIN): the extra reads
    /// they cost, and whether a unit is beyond repair.
    pub fn draw(&mut self, die: u32, first_lba: u32, units: u32, rain_period: u32) -> ExtraReads {
        let mut extra = ExtraReads::default();
        let lbas = first_lba..first_lba + units;
        if self.die_failed && self.die_fail.is_some_and(|(d, _)| d == die) {
            extra.dead_die = true;
            let stripe = (rain_period > 0).then(|| rain_period - 1);
            if self.rebuild_or_fail(&mut extra, stripe, lbas) {
                self.counters.die_rebuilds += 1;
            }
            return extra;
        }
        if self.cfg.read_retry > 0.0 && self.rng.unit_f64() < self.cfg.read_retry {
            extra.retries = 1 + self.rng.below(self.cfg.read_retry_max as u64) as u32;
            self.counters.read_retries += 1;
        }
        let known_bad =
            !self.unreadable.is_empty() && self.unreadable.range(lbas.clone()).next().is_some();
        let fresh = !known_bad
            && self.cfg.uncorrectable > 0.0
            && self.rng.unit_f64() < self.cfg.uncorrectable;
        if known_bad || fresh {
            // The whole retry table is tried before the controller gives up on the page.
            extra.retries = self.cfg.read_retry_max;
            self.counters.uncorrectable_pages += fresh as u64;
            // With a die already lost, every stripe has lost a member: nothing to rebuild from.
            let stripe = (rain_period > 0 && !self.die_failed).then(|| rain_period - 1);
            if self.rebuild_or_fail(&mut extra, stripe, lbas) {
                self.counters.rain_rebuilds += 1;
            }
        }
        self.counters.read_retry_reads += extra.retries as u64;
        extra
    }

    /// A page beyond its own ECC: rebuilt by reading the other `stripe_reads` members of its
    /// RAIN stripe when there are (returns true), else the command fails and `lbas` stay
    /// unreadable.
    fn rebuild_or_fail(
        &mut self,
        extra: &mut ExtraReads,
        stripe_reads: Option<u32>,
        lbas: std::ops::Range<u32>,
    ) -> bool {
        match stripe_reads {
            Some(reads) => {
                extra.stripe_reads = reads;
                self.counters.rain_rebuild_reads += reads as u64;
            }
            None => {
                extra.failed = true;
                self.mark_unreadable(lbas);
            }
        }
        stripe_reads.is_some()
    }

    fn mark_unreadable(&mut self, lbas: std::ops::Range<u32>) {
        for lba in lbas {
            self.counters.unreadable_units += self.unreadable.insert(lba) as u64;
        }
    }

    /// Host data replaced logical units `lbas` (a write, a TRIM, a fill): they read again.
    #[inline]
    pub fn rewritten(&mut self, lbas: std::ops::Range<u32>) {
        if self.unreadable.is_empty() {
            return;
        }
        if lbas.len() == 1 {
            self.unreadable.remove(&lbas.start);
        } else {
            self.unreadable.retain(|l| !lbas.contains(l));
        }
    }

    /// Every unit reads again (a secure erase).
    pub fn clear_unreadable(&mut self) {
        self.unreadable.clear();
    }

    /// Logical units now unreadable, in order.
    pub fn unreadable(&self) -> Vec<u32> {
        self.unreadable.iter().copied().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spec_parses_and_bad_pairs_say_what_is_accepted() {
        let f =
            FaultConfig::parse("read_retry=1e-3, uncorrectable=1e-5,program_fail=0.0001,seed=7")
                .unwrap();
        assert_eq!(f.read_retry, 1e-3);
        assert_eq!(f.uncorrectable, 1e-5);
        assert_eq!(f.program_fail, 1e-4);
        assert_eq!(f.erase_fail, 0.0);
        assert_eq!(f.seed, 7);
        assert!(f.any());
        assert!(!FaultConfig::parse("").unwrap().any());
        let d = FaultConfig::parse("die_fail=2@1.5").unwrap();
        assert_eq!((d.die, d.die_fail_at_s), (Some(2), 1.5));
        for (spec, says) in [
            ("read_retry", "expected key=value"),
            ("bogus=1", "unknown key 'bogus'"),
            ("uncorrectable=abc", "not a number"),
            ("uncorrectable=1.5", "not a probability"),
            ("program_fail=0.5", "at most 0.1"),
            ("read_retry_max=0", "1 to 64"),
            ("seed=-1", "not a whole number"),
            ("die_fail=3", "DIE@SECONDS"),
            ("die_fail=x@1", "DIE@SECONDS"),
            ("die_fail=1@-2", "0 or more seconds"),
            // Issue 25, item 7: an empty item is an error, not skipped.
            ("read_retry=1e-3,,seed=2", "an empty item between commas"),
            ("read_retry=1e-3,", "an empty item between commas"),
        ] {
            let e = FaultConfig::parse(spec).unwrap_err();
            assert!(e.contains(says), "{spec}: {e}");
        }
    }
}
