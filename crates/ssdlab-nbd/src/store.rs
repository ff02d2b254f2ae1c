//! Data kept with the FTL's physical units.
//!
//! The store maps a physical mapping unit (ppn) to its bytes. It learns where data goes only
//! from the FTL's journal of map changes: a host write places the command's bytes at the new
//! ppn (merged with the unit's old bytes when the write covers it only in part), a garbage
//! collection move carries the bytes from the old ppn to the new one, a TRIM or an overwrite
//! drops them. Reads go through the FTL's logical-to-physical map. All-zero units and units
//! never written hold no bytes.
//!
//! The bytes live in memory ([`DataStore::new`]: they grow with the data written) or on disk
//! ([`DataStore::on_disk`], `ssdlab serve --store DIR`: see [`crate::disk`]), where each unit
//! also keeps the out-of-band record the firmware writes with it, so the drive can be rebuilt
//! at power-on.

use crate::disk::DiskUnits;
use ssdlab_core::device::Device;
use ssdlab_core::ftl::{MapChange, HELD, TAG_ERASE, TAG_RELOCATION, UNMAPPED};
use std::collections::BTreeMap;
use std::io;

/// Bytes of one in-flight host write: `None` for WRITE_ZEROES.
pub struct WriteData {
    pub offset: u64,
    pub length: u64,
    pub bytes: Option<Vec<u8>>,
}

enum Units {
    Memory(BTreeMap<u32, Box<[u8]>>),
    Disk(Box<DiskUnits>),
}

/// A held write's new contents, whether its old copy was uncorrectable, and the old copy.
type Held = (Option<Box<[u8]>>, bool, u32);

pub struct DataStore {
    unit: usize,
    units: Units,
    /// Host writes journalled in two parts ([`HELD`]): per logical unit its new contents,
    /// whether the old copy was uncorrectable, and the old copy's unit.
    held: BTreeMap<u32, Held>,
}

impl DataStore {
    /// Data in memory, gone when the server stops.
    pub fn new(unit_bytes: u32) -> Self {
        DataStore {
            unit: unit_bytes as usize,
            units: Units::Memory(BTreeMap::new()),
            held: BTreeMap::new(),
        }
    }

    /// Data and out-of-band records in files (see [`crate::disk`]).
    pub fn on_disk(disk: DiskUnits) -> Self {
        DataStore {
            unit: disk.unit_bytes() as usize,
            units: Units::Disk(Box::new(disk)),
            held: BTreeMap::new(),
        }
    }

    /// Units holding non-zero data.
    pub fn stored_units(&self) -> usize {
        match &self.units {
            Units::Memory(m) => m.len(),
            Units::Disk(d) => d.stored_units() as usize,
        }
    }

    pub fn stored_bytes(&self) -> u64 {
        (self.stored_units() * self.unit) as u64
    }

    /// The on-disk units, handed back (None for a store in memory).
    pub fn into_disk(self) -> Option<DiskUnits> {
        match self.units {
            Units::Memory(_) => None,
            Units::Disk(d) => Some(*d),
        }
    }

    pub fn disk(&mut self) -> Option<&mut DiskUnits> {
        match &mut self.units {
            Units::Memory(_) => None,
            Units::Disk(d) => Some(d),
        }
    }

    /// The bytes of unit `ppn` (None: zeros).
    fn load(&mut self, ppn: u32) -> io::Result<Option<Box<[u8]>>> {
        match &mut self.units {
            Units::Memory(m) => Ok(m.get(&ppn).cloned()),
            Units::Disk(d) => d.load(ppn),
        }
    }

    /// Apply the FTL's map changes recorded since the last call (see [`DataStore::apply`]).
    /// An erase among them may be one the erase hold released at the end of the programs of
    /// host data that superseded copies in the block: the store first records those units as
    /// programmed ([`DataStore::settle_programmed`]), or a kill between the erase and that
    /// record would leave them pending with nothing to fall back to.
    pub fn apply_from<'a>(
        &mut self,
        dev: &mut Device,
        writes: impl Fn(u64) -> Option<&'a WriteData>,
    ) -> io::Result<()> {
        let changes = dev.ftl.map_changes();
        if changes.is_empty() {
            return Ok(());
        }
        if changes.iter().any(|c| c.tag == TAG_ERASE) {
            self.settle_programmed(dev)?;
        }
        #[cfg(test)]
        if let Some(d) = self.disk() {
            d.check_hold = dev.ftl.erase_hold_on();
        }
        self.apply(dev.ftl.drain_map_changes(), writes)
    }

    /// Clear the PENDING marks of host units the model has programmed since they were stored;
    /// mark RUNNING those whose program has started, on a drive without full protection (a
    /// kill is judged by them: see [`crate::disk::mount`]).
    pub fn settle_programmed(&mut self, dev: &Device) -> io::Result<()> {
        let Some(disk) = self.disk().filter(|d| d.has_pending()) else {
            return Ok(());
        };
        let upu = dev.geometry.units_per_pu;
        let mut still = dev.ftl.buffered_host_ppns();
        let mut running = Vec::new();
        for u in dev.unfinished_programs() {
            if u.program.kind == ssdlab_core::ftl::ProgramKind::Host {
                let units = u.program.first_ppn..u.program.first_ppn + upu;
                still.extend(units.clone());
                if u.started {
                    running.extend(units);
                }
            }
        }
        still.sort_unstable();
        still.dedup();
        running.sort_unstable();
        disk.settle_pending(&still)?;
        match dev.config.controller.power_loss_protection {
            ssdlab_core::config::PowerLossProtection::Full => Ok(()),
            _ => disk.mark_running(&running),
        }
    }

    /// Apply map changes in the order the FTL made them. `writes` finds the data of the
    /// host command with a given tag (None: treat as zeros, as for the untimed fill). On disk
    /// the new copy is written before the old one is marked stale, so a process killed at
    /// any point leaves one current copy of every unit (the newer one wins a tie), except
    /// a held write ([`HELD`]) caught between its old copy's erase and its placement: that
    /// unit is lost, as the write buffer's copy is at a power cut.
    pub fn apply<'a>(
        &mut self,
        changes: impl IntoIterator<Item = MapChange>,
        writes: impl Fn(u64) -> Option<&'a WriteData>,
    ) -> io::Result<()> {
        for ch in changes {
            if ch.tag == TAG_ERASE {
                if let Units::Disk(d) = &mut self.units {
                    let upb = d.units_per_block();
                    let block = ch.old_ppn..ch.old_ppn + upb;
                    // A held write's old copy goes with the block: nothing left to release.
                    for h in self.held.values_mut() {
                        if block.contains(&h.2) {
                            h.2 = UNMAPPED;
                        }
                    }
                    d.erase(ch.old_ppn, ch.new_ppn == ssdlab_core::ftl::BLOCK_RETIRED)?;
                }
                continue;
            }
            let write = (ch.tag != TAG_RELOCATION).then(|| writes(ch.tag)).flatten();
            // The second part of a held write: its contents were taken with the first.
            let (data, unreadable, prev) = if ch.old_ppn == HELD {
                self.held.remove(&ch.lba).ok_or_else(|| {
                    io::Error::other(format!("unit {} placed but never taken", ch.lba))
                })?
            } else {
                let needs_old = ch.old_ppn != UNMAPPED
                    && ch.new_ppn != UNMAPPED
                    && write.is_none_or(|w| !self.covers(ch.lba, w));
                // An uncorrectable old copy makes the new one uncorrectable too (a move or a
                // read-modify-write cannot recover it).
                let (old, unreadable) = if needs_old {
                    match self.load(ch.old_ppn) {
                        Ok(d) => (d, false),
                        Err(e) if e.kind() == io::ErrorKind::InvalidData => (None, true),
                        Err(e) => return Err(e),
                    }
                } else {
                    (None, false)
                };
                let data = match write {
                    None if ch.tag == TAG_RELOCATION => old,
                    None => None,
                    Some(w) => (ch.new_ppn != UNMAPPED)
                        .then(|| self.merge(ch.lba, old, w))
                        .flatten(),
                };
                (data, unreadable, ch.old_ppn)
            };
            if ch.new_ppn == HELD {
                self.held.insert(ch.lba, (data, unreadable, prev));
            } else if ch.new_ppn != UNMAPPED {
                match &mut self.units {
                    Units::Memory(m) => {
                        if let Some(d) = data {
                            m.insert(ch.new_ppn, d);
                        }
                    }
                    Units::Disk(d) => {
                        let host = ch.tag != TAG_RELOCATION;
                        d.store(ch.new_ppn, ch.lba, data.as_deref(), prev, unreadable, host)?
                    }
                }
            }
            // The old copy is released once the new one is stored (a held write's, when it
            // is placed), so a kill at any point leaves a current copy.
            if ch.new_ppn != HELD && prev != UNMAPPED {
                match &mut self.units {
                    Units::Memory(m) => {
                        m.remove(&prev);
                    }
                    Units::Disk(d) => d.release(prev)?,
                }
            }
        }
        Ok(())
    }

    /// Does write `w` cover the whole of unit `lba`?
    fn covers(&self, lba: u32, w: &WriteData) -> bool {
        let unit_start = lba as u64 * self.unit as u64;
        w.offset <= unit_start && w.offset + w.length >= unit_start + self.unit as u64
    }

    /// The new contents of unit `lba` after write `w`: `w`'s bytes where it covers the unit,
    /// the old contents elsewhere. None when the result is all zeros.
    fn merge(&self, lba: u32, old: Option<Box<[u8]>>, w: &WriteData) -> Option<Box<[u8]>> {
        let unit_start = lba as u64 * self.unit as u64;
        let unit_end = unit_start + self.unit as u64;
        let from = w.offset.max(unit_start);
        let to = (w.offset + w.length).min(unit_end);
        debug_assert!(from < to, "write does not cover the unit it mapped");
        let covers_all = from == unit_start && to == unit_end;
        let src = w
            .bytes
            .as_ref()
            .map(|b| &b[(from - w.offset) as usize..(to - w.offset) as usize]);
        let mut unit = match (old, covers_all) {
            (Some(o), false) => o,
            _ => {
                if src.is_none() && covers_all {
                    return None;
                }
                vec![0u8; self.unit].into_boxed_slice()
            }
        };
        let dst = &mut unit[(from - unit_start) as usize..(to - unit_start) as usize];
        match src {
            Some(s) => dst.copy_from_slice(s),
            None => dst.fill(0),
        }
        if unit.iter().all(|&b| b == 0) {
            None
        } else {
            Some(unit)
        }
    }

    /// Copy the bytes of `offset..offset + out.len()` into `out`, looking each unit up with
    /// `lookup` (logical unit -> ppn or UNMAPPED).
    pub fn read(
        &mut self,
        offset: u64,
        out: &mut [u8],
        lookup: impl Fn(u32) -> u32,
    ) -> io::Result<()> {
        let unit = self.unit as u64;
        let end = offset + out.len() as u64;
        let mut pos = offset;
        while pos < end {
            let lba = (pos / unit) as u32;
            let unit_start = lba as u64 * unit;
            let to = (unit_start + unit).min(end);
            let dst = &mut out[(pos - offset) as usize..(to - offset) as usize];
            let ppn = lookup(lba);
            let within = (pos - unit_start) as usize;
            match &mut self.units {
                _ if ppn == UNMAPPED => dst.fill(0),
                Units::Memory(m) => match m.get(&ppn) {
                    Some(d) => dst.copy_from_slice(&d[within..within + dst.len()]),
                    None => dst.fill(0),
                },
                Units::Disk(d) => d.read_into(ppn, within, dst)?,
            }
            pos = to;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change(lba: u32, old: u32, new: u32, tag: u64) -> MapChange {
        MapChange {
            lba,
            old_ppn: old,
            new_ppn: new,
            tag,
        }
    }

    impl DataStore {
        fn apply_ok<'a>(
            &mut self,
            changes: impl IntoIterator<Item = MapChange>,
            writes: impl Fn(u64) -> Option<&'a WriteData>,
        ) {
            self.apply(changes, writes).unwrap()
        }
    }

    #[test]
    fn partial_writes_merge_and_moves_carry_data() {
        let mut s = DataStore::new(8);
        let w1 = WriteData {
            offset: 8,
            length: 8,
            bytes: Some((1..=8).collect()),
        };
        s.apply_ok([change(1, UNMAPPED, 100, 1)], |_| Some(&w1));
        // Bytes 10..12 rewritten: the rest of the unit keeps w1's data.
        let w2 = WriteData {
            offset: 10,
            length: 2,
            bytes: Some(vec![9, 9]),
        };
        s.apply_ok([change(1, 100, 101, 2)], |_| Some(&w2));
        let lookup = |map: u32| move |lba: u32| if lba == 1 { map } else { UNMAPPED };
        let mut out = [0xffu8; 12];
        s.read(6, &mut out, lookup(101)).unwrap();
        assert_eq!(out, [0, 0, 1, 2, 9, 9, 5, 6, 7, 8, 0, 0]);
        // Garbage collection moves the unit: same bytes at the new place, none at the old.
        s.apply_ok([change(1, 101, 7, TAG_RELOCATION)], |_| None);
        let mut moved = [0u8; 12];
        s.read(6, &mut moved, lookup(7)).unwrap();
        assert_eq!(moved, out);
        assert_eq!(s.stored_units(), 1);
        // WRITE_ZEROES over the whole unit, then TRIM: nothing stored.
        let z = WriteData {
            offset: 8,
            length: 8,
            bytes: None,
        };
        s.apply_ok([change(1, 7, 8, 3)], |_| Some(&z));
        assert_eq!(s.stored_units(), 0);
        s.apply_ok([change(1, UNMAPPED, 9, 4)], |_| Some(&w1));
        s.apply_ok([change(1, 9, UNMAPPED, 5)], |_| None);
        assert_eq!(s.stored_units(), 0);
    }
}
