//! The out-of-band file read record by record, and the sparse-file primitives (punching holes,
//! finding data) the store uses.

use super::*;

/// A record's fields: (lba, flags, sequence, prev); the flags without their check byte.
pub(super) fn parse_record(r: &[u8]) -> (u32, u32, u64, u32) {
    let word = |i: usize| u32::from_le_bytes(r[i..i + 4].try_into().expect("4 bytes"));
    let seq = u64::from_le_bytes(r[8..16].try_into().expect("8 bytes"));
    (word(0), word(4) & FLAG_BITS, seq, word(16))
}

/// The flags as a record keeps them: the low 24 bits, and their CRC-8 in the top byte (the
/// flags are rewritten in place, apart from the rest of the record; issue 73, item 12).
#[inline]
pub(super) fn flags_word(flags: u32) -> u32 {
    let f = flags & FLAG_BITS;
    f | (crc8(&f.to_le_bytes()[..3]) as u32) << 24
}

/// The CRC-16 of a record's other fields: logical unit, sequence, superseded unit and the
/// data's CRC (bytes 0..4, 8..20, 22..24), kept in bytes 20..22.
fn fields_crc(r: &[u8]) -> u16 {
    let mut b = [0u8; 18];
    b[..4].copy_from_slice(&r[0..4]);
    b[4..16].copy_from_slice(&r[8..20]);
    b[16..18].copy_from_slice(&r[22..24]);
    crc16(&b)
}

/// Seal a record: the flags' check byte and the fields' CRC.
pub(super) fn seal_record(r: &mut [u8; RECORD as usize]) {
    let flags = u32::from_le_bytes(r[4..8].try_into().expect("4 bytes"));
    r[4..8].copy_from_slice(&flags_word(flags).to_le_bytes());
    let c = fields_crc(r);
    r[20..22].copy_from_slice(&c.to_le_bytes());
}

/// The CRC-16 of a unit's bytes as stored, kept in its record's bytes 22..24.
pub(super) fn data_crc(r: &[u8]) -> u16 {
    u16::from_le_bytes([r[22], r[23]])
}

/// What is wrong with a record of a store that keeps checksums, if anything: None for an
/// erased record (all zeros) or a sound one; else whether its flags are sound (their check
/// byte matches: then the damage is in the other fields) and what failed.
pub(super) fn record_damage(r: &[u8]) -> Option<(bool, &'static str)> {
    if r.iter().all(|&b| b == 0) {
        return None;
    }
    let raw = u32::from_le_bytes(r[4..8].try_into().expect("4 bytes"));
    if raw & CHECKED == 0 || flags_word(raw) != raw {
        return Some((false, "its flags fail their check byte"));
    }
    if fields_crc(r) != u16::from_le_bytes([r[20], r[21]]) {
        return Some((true, "its fields fail their CRC"));
    }
    None
}

/// CRC-16/KERMIT (polynomial 0x1021 reflected, initial 0): any damage of up to 16 bits in a
/// row is detected. Eight bytes a step through eight tables (slicing-by-8: a 4 KiB unit in a
/// few microseconds, where a byte a step took about 10).
pub(super) fn crc16(bytes: &[u8]) -> u16 {
    let t = &CRC16_TABLES;
    let mut c = 0u16;
    let mut chunks = bytes.chunks_exact(8);
    for ch in chunks.by_ref() {
        let v = u64::from_le_bytes(ch.try_into().expect("8 bytes")) ^ c as u64;
        let b = |k: u32| ((v >> (8 * k)) & 0xFF) as usize;
        c = t[7][b(0)]
            ^ t[6][b(1)]
            ^ t[5][b(2)]
            ^ t[4][b(3)]
            ^ t[3][b(4)]
            ^ t[2][b(5)]
            ^ t[1][b(6)]
            ^ t[0][b(7)];
    }
    crc16_bytes(c, chunks.remainder())
}

/// The CRC-16 a byte at a time from `c` (the tail of [`crc16`]; its tests' reference).
fn crc16_bytes(c: u16, bytes: &[u8]) -> u16 {
    bytes.iter().fold(c, |c, &b| {
        (c >> 8) ^ CRC16_TABLES[0][((c ^ b as u16) & 0xFF) as usize]
    })
}

/// `[0]`: the byte table; `[k][i]`: `[k - 1][i]` carried one byte further.
const CRC16_TABLES: [[u16; 256]; 8] = {
    let mut t = [[0u16; 256]; 8];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u16;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 {
                (c >> 1) ^ 0x8408
            } else {
                c >> 1
            };
            k += 1;
        }
        t[0][i] = c;
        i += 1;
    }
    let mut k = 1;
    while k < 8 {
        let mut i = 0;
        while i < 256 {
            let prev = t[k - 1][i];
            t[k][i] = (prev >> 8) ^ t[0][(prev & 0xFF) as usize];
            i += 1;
        }
        k += 1;
    }
    t
};

/// CRC-8 (polynomial 0x07, initial 0), bit by bit: for the three bytes of a flags word.
fn crc8(bytes: &[u8]) -> u8 {
    let mut c = 0u8;
    for &b in bytes {
        c ^= b;
        for _ in 0..8 {
            c = if c & 0x80 != 0 {
                (c << 1) ^ 0x07
            } else {
                c << 1
            };
        }
    }
    c
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
    /// Checked: the store keeps checksums (records failing them are not yielded but kept
    /// in `damaged`: unit, whether its flags are sound and say STALE, what failed).
    checked: bool,
    pub(super) damaged: Vec<(u32, bool, &'static str)>,
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
    pub(super) fn new(
        oob: &'a StoreFile,
        physical_units: u64,
        checked: bool,
    ) -> Result<OobRecords<'a>, String> {
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
            checked,
            damaged: Vec::new(),
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
            if self.checked {
                if let Some((flags_sound, what)) = record_damage(rec) {
                    let (_, flags, _, _) = parse_record(rec);
                    let stale = flags_sound && flags & STALE != 0;
                    self.damaged.push((ppn as u32, stale, what));
                    continue;
                }
            }
            let (lba, flags, seq, _) = parse_record(rec);
            if flags & WRITTEN == 0 {
                continue;
            }
            return Some((ppn as u32, lba, flags, seq));
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The CRC-16/KERMIT check value, and slicing-by-8 equal to a byte at a time on every
    /// length and alignment of a pseudo-random buffer.
    #[test]
    fn crc16_is_kermit_and_slicing_changes_nothing() {
        assert_eq!(crc16(b"123456789"), 0x2189);
        let bytes: Vec<u8> = (0..300u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        for start in 0..9 {
            for end in start..bytes.len() {
                assert_eq!(
                    crc16(&bytes[start..end]),
                    crc16_bytes(0, &bytes[start..end])
                );
            }
        }
    }

    /// Any one byte of a record changed is found; a sound record and an erased one are not.
    #[test]
    fn every_byte_of_a_sealed_record_is_checked() {
        let mut r = [0u8; RECORD as usize];
        r[0..4].copy_from_slice(&77u32.to_le_bytes());
        r[4..8].copy_from_slice(&(WRITTEN | CHECKED).to_le_bytes());
        r[8..16].copy_from_slice(&123_456u64.to_le_bytes());
        r[16..20].copy_from_slice(&5u32.to_le_bytes());
        r[22..24].copy_from_slice(&0xBEEFu16.to_le_bytes());
        seal_record(&mut r);
        assert_eq!(record_damage(&r), None);
        assert_eq!(record_damage(&[0u8; RECORD as usize]), None);
        for i in 0..RECORD as usize {
            for flip in [1u8, 0x80, 0xFF] {
                let mut d = r;
                d[i] ^= flip;
                assert!(record_damage(&d).is_some(), "byte {i} ^ {flip:#x}");
            }
        }
    }
}
