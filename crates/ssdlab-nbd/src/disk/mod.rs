//! The on-disk store of `ssdlab serve --store DIR`: the drive's NAND contents and what the
//! firmware needs to rebuild its map at power-on.
//!
//! DIR holds:
//! - `store.json`: the drive it was made for (name and geometry) and whether it was
//!   stopped cleanly;
//! - `data`: a sparse file; physical unit `ppn` at byte `ppn * unit_bytes` (the NAND's pages
//!   by physical location; units never written or holding zeros are holes);
//! - `oob`: the out-of-band record the firmware programs with each unit, 24 bytes per
//!   physical unit at `ppn * 24`: logical unit (u32), flags (u32: written, stale, zeros,
//!   unreadable, ...; the top byte the CRC-8 of the rest), write sequence number (u64), the
//!   unit this copy superseded (u32, for a power cut that loses the copy), the CRC-16 of the
//!   record's other fields (u16) and of the unit's bytes as stored (u16); little-endian; all
//!   zero when erased (stores made before the checksums leave the last 4 bytes zero and
//!   their `store.json` without `checksums`);
//! - `erase_counts`: one u32 per block.
//!
//! Why plain files and not an embedded database: data is addressed by a dense integer (the
//! physical unit), overwritten in place and read back by the same address; a sparse file is
//! exactly that, with the kernel's page cache as its memory (RAM stays bounded by the model's
//! tables plus one bit per physical unit) and holes for space never written. Every `pwrite`
//! that returned is in the page cache, so a server killed with SIGKILL loses nothing it had
//! stored; FLUSH and a clean stop also `fsync`, which covers a crash of the host.
//!
//! Order of writes for one map change: the new unit's bytes, then its record, then the old
//! copy's record marked stale. A process killed between any two leaves at most two current
//! records for one logical unit; the higher sequence number wins at the rebuild. A block's
//! erase is written only after the PENDING marks of the host units the model has programmed
//! are cleared ([`crate::store::DataStore::apply_from`]): the erase hold releases a block at
//! the end of the programs that superseded copies in it, and a kill between the erase and
//! those marks would leave the units with nothing to fall back to. (The stale
//! mark stands for the firmware's map, which a real NAND's spare area cannot record; with it
//! a rebuild needs no map checkpoint. What a drive without power-loss protection would lose
//! is the model's to decide, not the store's.)

use ssdlab_core::config::Geometry;
use ssdlab_core::device::Device;
use ssdlab_core::ftl::{MountReport, Recovered, UNMAPPED};
use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::{self, Read};
use std::path::{Path, PathBuf};

mod crypt;
mod file;
mod meta;
mod mount;
mod records;
pub use crypt::crypto_erase_store;
use crypt::MediaKey;
use file::StoreFile;
pub use meta::{check_store_dir, take_lock};
use meta::{take_shared_lock, write_store_meta, FileLengths, StoreMeta, STORE_FILES};
pub use mount::{mount, mount_read_only};
use records::{crc16, data_crc, flags_word, parse_record, record_damage, seal_record, OobRecords};

const RECORD: u64 = 24;
const WRITTEN: u32 = 1;
const STALE: u32 = 2;
const ZEROS: u32 = 4;
/// The unit's page was corrupted (the paired lower page of a program a power cut interrupted):
/// reads of it fail, as ECC detects.
const UNREADABLE: u32 = 8;
/// Host data not yet programmed in the model (in the controller's DRAM or in a program not yet
/// complete): what a kill of the emulator loses on a drive without full protection.
const PENDING: u32 = 16;
/// With PENDING: the unit's program was running when last checked (a cut of a drive without
/// protection may then corrupt its paired lower page; with `map` protection it completes).
const RUNNING: u32 = 32;
/// The record carries checksums (issue 73, item 12): its flags' CRC-8 in the flags word's top
/// byte, the CRC-16 of its other fields in bytes 20..22, and the CRC-16 of the unit's bytes as
/// stored in bytes 22..24 (see `records`). Every record written since carries it; a store
/// whose `store.json` says `checksums` has no record without it.
const CHECKED: u32 = 64;
/// The flag bits of a flags word (the top byte is their check byte).
const FLAG_BITS: u32 = 0x00FF_FFFF;
const FORMAT: u32 = 2;
fn at(dir: &Path, name: &str, e: impl std::fmt::Display) -> String {
    format!("{}: {e}", dir.join(name).display())
}

/// The data and out-of-band records of every physical unit, in files.
pub struct DiskUnits {
    dir: PathBuf,
    meta: StoreMeta,
    data: StoreFile,
    oob: StoreFile,
    erase_file: StoreFile,
    erase_counts: Vec<u32>,
    /// One bit per physical unit: it holds non-zero data (its bytes are in `data`).
    has_data: Vec<u64>,
    stored: u64,
    next_sequence: u64,
    /// Current units that cannot be read (few: only after a power cut of a drive without
    /// protection).
    unreadable: std::collections::BTreeSet<u32>,
    /// Units whose record carries PENDING, with their flags without it.
    pending: BTreeMap<u32, u32>,
    /// Of those, units whose record also carries RUNNING.
    running: std::collections::BTreeSet<u32>,
    /// The media key of a self-encrypting drive's store (None: data in the clear).
    key: Option<MediaKey>,
    /// `lock`, locked while this store is open (see [`take_lock`]); read-only, shared, and
    /// None where the store has no `lock` file (it cannot be made on read-only media).
    _lock: Option<File>,
    /// Tests: file writes left before the process "dies" (every later write fails).
    #[cfg(test)]
    pub(crate) writes_left: Option<u64>,
    /// Tests: the drive holds erases (see [`DiskUnits::no_pending_falls_back_into`]).
    #[cfg(test)]
    pub(crate) check_hold: bool,
}

/// How a store was opened.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Mount {
    pub dir: PathBuf,
    /// A new store (nothing to rebuild).
    pub created: bool,
    /// The previous server stopped cleanly (false: killed or crashed; the rebuild then
    /// resolved any unit caught mid-update).
    pub clean: bool,
    /// Records found current in two units (a kill between writing a unit and marking its old
    /// copy stale): the newer kept.
    pub resolved_twins: u64,
    /// After a kill: host copies the model had not programmed, lost as the drive's
    /// protection allows, and how many of them fell back to an older copy.
    pub lost_at_kill: u64,
    pub fell_back_at_kill: u64,
    /// A crypto erase had been interrupted: the start finished it (the drive is empty).
    pub erase_finished: bool,
    /// Records of superseded copies found damaged (their checksums fail) and ignored.
    pub damaged_records: u64,
    pub report: MountReport,
}

impl DiskUnits {
    pub fn unit_bytes(&self) -> u32 {
        self.meta.unit_bytes
    }

    pub fn units_per_block(&self) -> u32 {
        self.meta.units_per_block
    }

    /// Units holding non-zero data.
    pub fn stored_units(&self) -> u64 {
        self.stored
    }

    /// The store's files, opened for `meta`: read and write, or `read_only` (nothing on the
    /// disk is written; see [`StoreFile`]).
    fn files(dir: &Path, meta: StoreMeta, read_only: bool) -> Result<DiskUnits, String> {
        let blocks = meta.blocks as usize;
        let words = meta.physical_units.div_ceil(64) as usize;
        let lock = match read_only {
            false => Some(take_lock(dir)?),
            true => take_shared_lock(dir)?,
        };
        let open = |name| StoreFile::open(dir, name, read_only);
        Ok(DiskUnits {
            _lock: lock,
            data: open("data")?,
            oob: open("oob")?,
            erase_file: open("erase_counts")?,
            dir: dir.to_path_buf(),
            meta,
            erase_counts: vec![0; blocks],
            has_data: vec![0; words],
            stored: 0,
            next_sequence: 1,
            unreadable: Default::default(),
            pending: BTreeMap::new(),
            running: Default::default(),
            key: None,
            #[cfg(test)]
            writes_left: None,
            #[cfg(test)]
            check_hold: false,
        })
    }

    /// Opened read-only: what is written stays in memory.
    pub fn read_only(&self) -> bool {
        self.data.read_only()
    }

    /// The lengths of the store's files now.
    fn file_lengths(&self) -> Result<FileLengths, String> {
        let len = |f: &StoreFile, name: &str| f.len().map_err(|e| at(&self.dir, name, e));
        Ok(FileLengths {
            data: len(&self.data, "data")?,
            oob: len(&self.oob, "oob")?,
            erase_counts: len(&self.erase_file, "erase_counts")?,
        })
    }

    /// `store.json` (not on a read-only store: what it would record changed in memory only).
    fn write_meta(&self) -> Result<(), String> {
        if self.read_only() {
            return Ok(());
        }
        write_store_meta(&self.dir, &self.meta)
    }

    #[inline]
    fn has(&self, ppn: u32) -> bool {
        self.has_data[(ppn / 64) as usize] & (1 << (ppn % 64)) != 0
    }

    #[inline]
    fn set_has(&mut self, ppn: u32, on: bool) {
        let (w, bit) = ((ppn / 64) as usize, 1u64 << (ppn % 64));
        if on {
            self.has_data[w] |= bit;
        } else {
            self.has_data[w] &= !bit;
        }
    }

    fn check_readable(&self, ppn: u32) -> io::Result<()> {
        if self.unreadable.contains(&ppn) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("unit {ppn} is uncorrectable"),
            ));
        }
        Ok(())
    }

    /// The bytes of `ppn`, or None for zeros. An uncorrectable unit is an `InvalidData` error,
    /// and so is a unit whose bytes fail the CRC its record keeps (damage in `data`).
    pub fn load(&mut self, ppn: u32) -> io::Result<Option<Box<[u8]>>> {
        self.check_readable(ppn)?;
        if !self.has(ppn) {
            return Ok(None);
        }
        let mut buf = vec![0u8; self.meta.unit_bytes as usize].into_boxed_slice();
        self.data
            .read_exact_at(&mut buf, ppn as u64 * self.meta.unit_bytes as u64)?;
        if self.meta.checksums {
            let mut r = [0u8; RECORD as usize];
            self.oob.read_exact_at(&mut r, ppn as u64 * RECORD)?;
            if record_damage(&r).is_some() || data_crc(&r) != crc16(&buf) {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("unit {ppn} is damaged (its bytes or record fail their checksum)"),
                ));
            }
        }
        if let Some(key) = &self.key {
            key.decrypt(ppn, &mut buf);
        }
        Ok(Some(buf))
    }

    /// Part of unit `ppn` from byte `within` into `dst`.
    pub fn read_into(&mut self, ppn: u32, within: usize, dst: &mut [u8]) -> io::Result<()> {
        self.check_readable(ppn)?;
        if !self.has(ppn) {
            dst.fill(0);
            return Ok(());
        }
        if self.key.is_some() || self.meta.checksums {
            // XTS works on the whole unit, and so does its CRC: load it, copy the part asked for.
            let unit = self.load(ppn)?.expect("the unit holds data");
            dst.copy_from_slice(&unit[within..within + dst.len()]);
            return Ok(());
        }
        self.data.read_exact_at(
            dst,
            ppn as u64 * self.meta.unit_bytes as u64 + within as u64,
        )
    }

    /// A sealed record (see [`CHECKED`]); `data_crc`: the CRC-16 of the unit's stored bytes.
    fn record(
        lba: u32,
        flags: u32,
        sequence: u64,
        prev: u32,
        data_crc: u16,
    ) -> [u8; RECORD as usize] {
        let mut r = [0u8; RECORD as usize];
        r[0..4].copy_from_slice(&lba.to_le_bytes());
        r[4..8].copy_from_slice(&(flags | CHECKED).to_le_bytes());
        r[8..16].copy_from_slice(&sequence.to_le_bytes());
        r[16..20].copy_from_slice(&prev.to_le_bytes());
        r[22..24].copy_from_slice(&data_crc.to_le_bytes());
        seal_record(&mut r);
        r
    }

    /// Rewrite the flags of `ppn`'s record in place (with their check byte).
    fn write_flags(&self, ppn: u32, flags: u32) -> io::Result<()> {
        self.oob
            .write_all_at(&flags_word(flags).to_le_bytes(), ppn as u64 * RECORD + 4)
    }

    /// The record of `ppn`: (lba, flags, sequence, prev).
    fn read_record(&self, ppn: u32) -> io::Result<(u32, u32, u64, u32)> {
        let mut r = [0u8; RECORD as usize];
        match self.oob.read_exact_at(&mut r, ppn as u64 * RECORD) {
            // Beyond the end of the file: never written.
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => r = [0u8; RECORD as usize],
            other => other?,
        }
        Ok(parse_record(&r))
    }

    /// Tests: count a file write against `writes_left`.
    #[inline]
    fn spend(&mut self) -> io::Result<()> {
        #[cfg(test)]
        if let Some(n) = self.writes_left.as_mut() {
            if *n == 0 {
                return Err(io::Error::other("killed (test)"));
            }
            *n -= 1;
        }
        Ok(())
    }

    /// Program unit `ppn` with the current data of `lba` (None: zeros), superseding `prev`
    /// (UNMAPPED if none); `unreadable` carries an uncorrectable copy's state; `pending`: host
    /// data the model has not programmed yet (see [`DiskUnits::settle_pending`]).
    pub fn store(
        &mut self,
        ppn: u32,
        lba: u32,
        data: Option<&[u8]>,
        prev: u32,
        unreadable: bool,
        pending: bool,
    ) -> io::Result<()> {
        let mut flags = WRITTEN | CHECKED;
        if unreadable {
            flags |= UNREADABLE;
            self.unreadable.insert(ppn);
        }
        let mut crc = 0;
        match data {
            Some(d) => {
                self.spend()?;
                let at = ppn as u64 * self.meta.unit_bytes as u64;
                match &self.key {
                    Some(key) => {
                        let mut unit = d.to_vec();
                        key.encrypt(ppn, &mut unit);
                        crc = crc16(&unit);
                        self.data.write_all_at(&unit, at)?;
                    }
                    None => {
                        crc = crc16(d);
                        self.data.write_all_at(d, at)?
                    }
                }
                self.stored += 1;
                self.set_has(ppn, true);
            }
            None => flags |= ZEROS,
        }
        let seq = self.next_sequence;
        self.next_sequence += 1;
        if pending {
            self.pending.insert(ppn, flags);
            flags |= PENDING;
        }
        self.spend()?;
        self.oob.write_all_at(
            &Self::record(lba, flags, seq, prev, crc),
            ppn as u64 * RECORD,
        )
    }

    /// Debugging: the records against the FTL's live map; the first disagreements.
    pub fn disagreements(&self, ftl: &ssdlab_core::ftl::Ftl) -> Vec<String> {
        let mut out = Vec::new();
        for lba in 0..ftl.logical_units() as u32 {
            let ppn = ftl.lookup(lba);
            if ppn == UNMAPPED {
                continue;
            }
            let (rl, flags, seq, prev) = self.read_record(ppn).unwrap();
            if flags & WRITTEN == 0 || flags & STALE != 0 || rl != lba {
                out.push(format!(
                    "lba {lba} -> ppn {ppn}: record lba {rl} flags {flags:#x} seq {seq} prev {prev} pending {:?}",
                    self.pending.get(&ppn)
                ));
                if out.len() > 10 {
                    break;
                }
            }
        }
        out
    }

    /// Host data is waiting to be programmed.
    pub fn has_pending(&self) -> bool {
        !self.pending.is_empty()
    }

    /// The model has programmed every pending unit not in `still` (sorted): clear their
    /// PENDING marks.
    pub fn settle_pending(&mut self, still: &[u32]) -> io::Result<()> {
        let done: Vec<(u32, u32)> = self
            .pending
            .iter()
            .filter(|(p, _)| still.binary_search(p).is_err())
            .map(|(&p, &f)| (p, f))
            .collect();
        // Runs of consecutive units (a program unit's worth, usually) in one read and one
        // write of their records.
        let mut buf = Vec::new();
        let mut i = 0;
        while i < done.len() {
            let mut j = i + 1;
            while j < done.len() && done[j].0 == done[j - 1].0 + 1 {
                j += 1;
            }
            let first = done[i].0 as u64;
            buf.resize((j - i) * RECORD as usize, 0);
            self.oob.read_exact_at(&mut buf, first * RECORD)?;
            for (k, &(ppn, flags)) in done[i..j].iter().enumerate() {
                let o = k * RECORD as usize + 4;
                buf[o..o + 4].copy_from_slice(&flags_word(flags).to_le_bytes());
                self.pending.remove(&ppn);
                self.running.remove(&ppn);
            }
            self.oob.write_all_at(&buf, first * RECORD)?;
            i = j;
        }
        Ok(())
    }

    /// The programs of the pending units in `running` (sorted) have started: mark their records
    /// RUNNING (once), so that a kill can be judged as a cut mid-program.
    pub fn mark_running(&mut self, running: &[u32]) -> io::Result<()> {
        let new: Vec<(u32, u32)> = running
            .iter()
            .filter(|p| !self.running.contains(p))
            .filter_map(|p| self.pending.get(p).map(|&f| (*p, f)))
            .collect();
        for (ppn, flags) in new {
            self.running.insert(ppn);
            self.spend()?;
            self.write_flags(ppn, flags | PENDING | RUNNING)?;
        }
        Ok(())
    }

    /// Unit `ppn` no longer holds its logical unit's current data.
    pub fn release(&mut self, ppn: u32) -> io::Result<()> {
        let mut flags = WRITTEN | STALE | CHECKED;
        self.unreadable.remove(&ppn);
        if self.has(ppn) {
            self.stored -= 1;
            self.set_has(ppn, false);
        } else {
            flags |= ZEROS;
        }
        // Still pending (overwritten or trimmed before it was programmed): keep the mark.
        let on_disk = match self.pending.get_mut(&ppn) {
            Some(f) => {
                *f = flags;
                let running = if self.running.contains(&ppn) {
                    RUNNING
                } else {
                    0
                };
                flags | PENDING | running
            }
            None => flags,
        };
        self.spend()?;
        self.write_flags(ppn, on_disk)
    }

    /// The block starting at unit `first_ppn` was erased (or, `retired`, taken out of service
    /// as a grown bad block, kept as bit 31 of its erase count): its records are gone.
    pub fn erase(&mut self, first_ppn: u32, retired: bool) -> io::Result<()> {
        let upb = self.meta.units_per_block;
        let block = (first_ppn / upb) as usize;
        #[cfg(test)]
        if self.check_hold {
            self.no_pending_falls_back_into(first_ppn..first_ppn + upb)?;
        }
        let stale: Vec<u32> = self
            .unreadable
            .range(first_ppn..first_ppn + upb)
            .copied()
            .collect();
        for p in stale {
            self.unreadable.remove(&p);
        }
        let gone: Vec<u32> = self
            .pending
            .range(first_ppn..first_ppn + upb)
            .map(|(&p, _)| p)
            .collect();
        for p in gone {
            self.pending.remove(&p);
            self.running.remove(&p);
        }
        self.spend()?;
        // The block's records read as zeros from now on; its data and records give their disk
        // space back (a hole), so the files hold what the NAND holds, not all ever written.
        let (oob_at, oob_len) = (first_ppn as u64 * RECORD, upb as u64 * RECORD);
        if !self.oob.punch_hole(oob_at, oob_len) {
            self.oob
                .write_all_at(&vec![0u8; oob_len as usize], oob_at)?;
        }
        let unit = self.meta.unit_bytes as u64;
        self.data
            .punch_hole(first_ppn as u64 * unit, upb as u64 * unit);
        if retired {
            self.erase_counts[block] |= ssdlab_core::ftl::RETIRED_BIT;
        } else {
            self.erase_counts[block] += 1;
        }
        self.spend()?;
        self.erase_file
            .write_all_at(&self.erase_counts[block].to_le_bytes(), block as u64 * 4)
    }

    /// Tests: no unit still marked PENDING superseded a copy in `block` (a kill after its
    /// erase would lose that unit with nothing to fall back to: the erase hold and the order
    /// of the engine's store writes must make its program known first).
    #[cfg(test)]
    fn no_pending_falls_back_into(&self, block: std::ops::Range<u32>) -> io::Result<()> {
        for &ppn in self.pending.keys() {
            let (lba, _, _, prev) = self.read_record(ppn)?;
            if block.contains(&prev) && !block.contains(&ppn) {
                return Err(io::Error::other(format!(
                    "erase of units {block:?}: unit {ppn} (logical {lba}), still marked pending, superseded unit {prev} in it"
                )));
            }
        }
        Ok(())
    }

    /// A power cut: the units in `lost` were never programmed (their records go; a lost
    /// current copy gives way to the copy it superseded when that is still on the NAND, or
    /// to nothing), and the units in `corrupt` cannot be read any more. Returns how many lost
    /// copies were current and, of those, how many fell back to an older copy.
    pub fn power_cut(&mut self, lost: &[u32], corrupt: &[u32]) -> io::Result<(u64, u64)> {
        let mut order = Vec::with_capacity(lost.len());
        for &ppn in lost {
            let (_, flags, seq, _) = self.read_record(ppn)?;
            if flags & WRITTEN != 0 {
                order.push((seq, ppn));
            }
        }
        // Newest first, so a chain of lost copies of one unit unwinds to the oldest survivor
        // (each copy's flags are read when its turn comes: a newer lost copy may have made
        // it current again).
        order.sort_unstable_by(|a, b| b.cmp(a));
        let (mut current, mut fell_back) = (0, 0);
        for (seq, ppn) in order {
            let (lba, flags, _, prev) = self.read_record(ppn)?;
            if self.has(ppn) {
                self.stored -= 1;
                self.set_has(ppn, false);
            }
            self.unreadable.remove(&ppn);
            self.pending.remove(&ppn);
            self.running.remove(&ppn);
            self.oob
                .write_all_at(&[0u8; RECORD as usize], ppn as u64 * RECORD)?;
            if flags & STALE != 0 {
                continue;
            }
            current += 1;
            if prev == UNMAPPED {
                continue;
            }
            let (plba, pflags, pseq, _) = self.read_record(prev)?;
            if pflags & WRITTEN != 0 && pflags & STALE != 0 && plba == lba && pseq < seq {
                let flags = pflags & !STALE;
                if let Some(f) = self.pending.get_mut(&prev) {
                    *f = flags & !PENDING;
                }
                if flags & ZEROS == 0 {
                    self.stored += 1;
                    self.set_has(prev, true);
                }
                if flags & UNREADABLE != 0 {
                    self.unreadable.insert(prev);
                }
                self.write_flags(prev, flags)?;
                fell_back += 1;
            }
        }
        for &ppn in corrupt {
            let (_, flags, _, _) = self.read_record(ppn)?;
            if flags & WRITTEN != 0 {
                self.write_flags(ppn, flags | UNREADABLE)?;
                if flags & STALE == 0 {
                    self.unreadable.insert(ppn);
                }
            }
        }
        // What the cut did not take is on the NAND now.
        self.settle_pending(&[])?;
        Ok((current, fell_back))
    }

    /// Everything stored so far reaches the disk (FLUSH; a clean stop).
    pub fn sync(&self) -> io::Result<()> {
        self.data.sync_data()?;
        self.oob.sync_data()?;
        self.erase_file.sync_data()
    }

    /// A clean stop: sync, and mark the store clean.
    pub fn close(&mut self) -> Result<(), String> {
        // A clean stop (the host's STANDBY IMMEDIATE): buffered data is programmed first.
        self.settle_pending(&[])
            .map_err(|e| at(&self.dir, "oob", e))?;
        self.sync().map_err(|e| at(&self.dir, "data", e))?;
        self.meta.clean = true;
        self.meta.files = Some(self.file_lengths()?);
        self.write_meta()
    }

    /// Every unit the drive maps now, as zeros (a `fast-fill` precondition of a new store).
    fn record_zero_fill(&mut self, dev: &Device) -> io::Result<()> {
        let chunk = 1 << 16;
        let mut buf = Vec::with_capacity(chunk * RECORD as usize);
        let total = dev.geometry.physical_units as u32;
        let mut start = 0u32;
        while start < total {
            let end = (start as u64 + chunk as u64).min(total as u64) as u32;
            buf.clear();
            let mut any = false;
            for ppn in start..end {
                let lba = dev.ftl.reverse(ppn);
                if lba == UNMAPPED {
                    buf.extend_from_slice(&[0u8; RECORD as usize]);
                } else {
                    any = true;
                    let seq = self.next_sequence;
                    self.next_sequence += 1;
                    buf.extend_from_slice(&Self::record(lba, WRITTEN | ZEROS, seq, UNMAPPED, 0));
                }
            }
            if any {
                self.oob.write_all_at(&buf, start as u64 * RECORD)?;
            }
            start = end;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
