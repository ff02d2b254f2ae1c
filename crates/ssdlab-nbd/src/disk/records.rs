//! The out-of-band file read record by record, and the sparse-file primitives (punching holes,
//! finding data) the store uses.

use super::*;

/// A record's fields: (lba, flags, sequence, prev).
pub(super) fn parse_record(r: &[u8]) -> (u32, u32, u64, u32) {
    let word = |i: usize| u32::from_le_bytes(r[i..i + 4].try_into().expect("4 bytes"));
    let seq = u64::from_le_bytes(r[8..16].try_into().expect("8 bytes"));
    (word(0), word(4), seq, word(16))
}

/// The written records of the out-of-band file, in unit order: (ppn, lba, flags, sequence).
/// Reads 1 MiB at a time; an I/O error ends the iteration and is kept in `error`.
pub(super) struct OobRecords<'a> {
    oob: &'a StoreFile,
    units: u64,
    next: u64,
    buf: Vec<u8>,
    buf_first: u64,
    pub(super) error: Option<String>,
}

const SCAN_UNITS: u64 = 1 << 16;

/// Free `len` bytes at `at` (they read as zeros): fallocate(PUNCH_HOLE). False where the file
/// system cannot.
#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
pub(super) fn punch_hole(file: &File, at: u64, len: u64) -> bool {
    use std::os::fd::AsRawFd;
    // SAFETY: fallocate on a descriptor this File owns, over a range of the file; it reads or
    // writes no memory of ours.
    let r = unsafe {
        libc::fallocate(
            file.as_raw_fd(),
            libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
            at as libc::off_t,
            len as libc::off_t,
        )
    };
    r == 0
}

#[cfg(not(target_os = "linux"))]
pub(super) fn punch_hole(_file: &File, _at: u64, _len: u64) -> bool {
    false
}

/// The first offset at or after `from` that holds data (lseek SEEK_DATA), None past the last;
/// `Some(from)` where the file system cannot tell.
#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
pub(super) fn next_data(file: &File, from: u64) -> Option<u64> {
    use std::os::fd::AsRawFd;
    // SAFETY: lseek on a descriptor this File owns; it reads no memory of ours. The file's
    // offset moves, which nothing here uses (all reads and writes are positioned).
    let at = unsafe { libc::lseek(file.as_raw_fd(), from as libc::off_t, libc::SEEK_DATA) };
    if at >= 0 {
        return Some(at as u64);
    }
    match io::Error::last_os_error().raw_os_error() {
        Some(libc::ENXIO) => None,
        _ => Some(from),
    }
}

#[cfg(not(target_os = "linux"))]
pub(super) fn next_data(_file: &File, from: u64) -> Option<u64> {
    Some(from)
}

impl<'a> OobRecords<'a> {
    pub(super) fn new(oob: &'a StoreFile, physical_units: u64) -> Result<OobRecords<'a>, String> {
        let len = oob.len().map_err(|e| e.to_string())?;
        if len > physical_units * RECORD || len % RECORD != 0 {
            return Err(format!(
                "{len} bytes; a store of {physical_units} units holds a multiple of {RECORD} up to {}",
                physical_units * RECORD
            ));
        }
        Ok(OobRecords {
            oob,
            units: len / RECORD,
            next: 0,
            buf: Vec::new(),
            buf_first: 0,
            error: None,
        })
    }
}

impl Iterator for OobRecords<'_> {
    type Item = (u32, u32, u32, u64);

    fn next(&mut self) -> Option<Self::Item> {
        while self.next < self.units {
            let ppn = self.next;
            if ppn >= self.buf_first + (self.buf.len() as u64 / RECORD) || self.buf.is_empty() {
                // Skip holes (units never written, or erased and punched) without reading them.
                let ppn = match self.oob.next_data(ppn * RECORD) {
                    Some(at) => ppn.max(at / RECORD),
                    None => {
                        self.next = self.units;
                        return None;
                    }
                };
                if ppn >= self.units {
                    self.next = self.units;
                    return None;
                }
                self.next = ppn;
                let n = SCAN_UNITS.min(self.units - ppn);
                self.buf.resize((n * RECORD) as usize, 0);
                self.buf_first = ppn;
                if let Err(e) = self.oob.read_exact_at(&mut self.buf, ppn * RECORD) {
                    self.error = Some(e.to_string());
                    return None;
                }
            }
            let ppn = self.next;
            self.next += 1;
            let o = ((ppn - self.buf_first) * RECORD) as usize;
            let rec = &self.buf[o..o + RECORD as usize];
            let (lba, flags, seq, _) = parse_record(rec);
            if flags & WRITTEN == 0 {
                continue;
            }
            return Some((ppn as u32, lba, flags, seq));
        }
        None
    }
}
