//! The harness's shadow of what each unit may hold: the pattern a write leaves, what a read
//! back holds, each unit's versions since the last restart and which of them a cut may leave.

use crate::store::WriteData;
use ssdlab_core::config::PowerLossProtection;
use ssdlab_core::device::IoKind;

pub(super) const ZEROS: u32 = 0;
/// A unit left uncorrectable by a cut: reads may fail until it is written again.
pub(super) const UNREADABLE: u32 = u32::MAX;

/// The unit the harness writes: its logical unit, the write's version, then a pattern of both.
pub(super) fn unit_bytes(lba: u32, version: u32, len: usize) -> Vec<u8> {
    let mut d = vec![0u8; len];
    d[..4].copy_from_slice(&lba.to_le_bytes());
    d[4..8].copy_from_slice(&version.to_le_bytes());
    d[8..].fill(fill(lba, version));
    d
}

/// Whether every byte of `d` is `b` (a whole-slice reduction the compiler vectorizes, where
/// `all` stops at the first other byte a byte at a time).
fn all_are(d: &[u8], b: u8) -> bool {
    d.iter().fold(0u8, |acc, &x| acc | (x ^ b)) == 0
}

/// The byte a unit of `lba` at `version` is filled with after its head (never 0).
fn fill(lba: u32, version: u32) -> u8 {
    (lba.wrapping_mul(31) ^ version.wrapping_mul(17)) as u8 | 1
}

/// What a unit read back holds: Ok(version) (0: zeros) or Err(class) for content that is no
/// version of it.
pub(super) fn decode(lba: u32, d: &[u8]) -> Result<u32, (&'static str, String)> {
    let owner = u32::from_le_bytes(d[..4].try_into().expect("4 bytes"));
    let version = u32::from_le_bytes(d[4..8].try_into().expect("4 bytes"));
    // `unit_bytes(owner, version)` without building it: its head is what was read, so the rest
    // must be its fill (never 0, so zeros are no write's).
    if !all_are(&d[8..], fill(owner, version)) {
        if all_are(d, 0) {
            return Ok(ZEROS);
        }
        return Err(("bit corruption", "content matches no write".into()));
    }
    if owner != lba {
        return Err((
            "flying write",
            format!("holds unit {owner}'s data (version {version})"),
        ));
    }
    Ok(version)
}

/// Per logical unit: versions in submission order since the last restart (the first is what
/// it held then), the index of the last acknowledged one, and of the last made durable.
#[derive(Clone, Debug)]
pub(super) struct Shadow {
    pub(super) history: Vec<Vec<u32>>,
    pub(super) acked: Vec<usize>,
    pub(super) durable: Vec<usize>,
}

impl Shadow {
    pub(super) fn new(start: Vec<u32>) -> Shadow {
        let n = start.len();
        Shadow {
            history: start.into_iter().map(|v| vec![v]).collect(),
            acked: vec![0; n],
            durable: vec![0; n],
        }
    }

    /// May unit `lba` hold `v` after a cut, for a drive with `protection`?
    pub(super) fn allows(&self, lba: usize, v: u32, protection: PowerLossProtection) -> bool {
        let h = &self.history[lba];
        let from = match protection {
            PowerLossProtection::Full => self.acked[lba],
            _ => self.durable[lba],
        };
        h[from..].contains(&v) || h[from..].contains(&UNREADABLE)
    }
}

/// One command in flight.
pub(super) struct Flight {
    pub(super) first: u32,
    pub(super) units: u32,
    pub(super) kind: IoKind,
    pub(super) fua: bool,
    /// Index of this command's version in each of its units' histories.
    pub(super) index: Vec<usize>,
    pub(super) data: Option<WriteData>,
    /// FLUSH: each unit's acknowledged index when it was submitted.
    pub(super) acked_then: Option<Vec<usize>>,
}

/// A completed command in the shadow: what it acknowledged, and what a FLUSH or FUA made
/// durable.
pub(super) fn account(shadow: &mut Shadow, f: Flight) {
    match f.kind {
        IoKind::Flush => {
            let then = f.acked_then.expect("flush snapshot");
            for (d, a) in shadow.durable.iter_mut().zip(then) {
                *d = (*d).max(a);
            }
        }
        _ => {
            for (lba, &i) in (f.first..f.first + f.units).zip(&f.index) {
                let l = lba as usize;
                shadow.acked[l] = shadow.acked[l].max(i);
                if f.fua {
                    shadow.durable[l] = shadow.durable[l].max(i);
                }
            }
        }
    }
}
