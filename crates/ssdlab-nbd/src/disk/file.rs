//! One of the store's files (`data`, `oob`, `erase_counts`) as the store reads and writes it:
//! positioned reads and writes, holes, sync. Opened writable, every call goes to the file.
//! Opened read-only (`serve --read-only` of a store on read-only media, issue 73 item 18), the
//! file is never written: what the firmware writes (a rebuild's records, collection's copies)
//! goes to pages kept in memory over the file, read back from there, and gone at the stop.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;

/// The unit of the in-memory overlay.
const PAGE: u64 = 4096;

pub(super) struct StoreFile {
    file: File,
    /// Read-only: the pages written since the start (page index to its bytes), and the
    /// length the file has with them.
    overlay: Option<RefCell<Overlay>>,
}

struct Overlay {
    pages: BTreeMap<u64, Box<[u8]>>,
    len: u64,
}

impl StoreFile {
    /// Open `dir/name`: read and write (created if missing), or read-only.
    pub(super) fn open(dir: &Path, name: &str, read_only: bool) -> Result<StoreFile, String> {
        let path = dir.join(name);
        let at = |e: io::Error| format!("{}: {e}", path.display());
        if read_only {
            let file = File::open(&path).map_err(at)?;
            let len = file.metadata().map_err(at)?.len();
            return Ok(StoreFile {
                file,
                overlay: Some(RefCell::new(Overlay {
                    pages: BTreeMap::new(),
                    len,
                })),
            });
        }
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(at)?;
        Ok(StoreFile {
            file,
            overlay: None,
        })
    }

    /// The file's length (with what the overlay wrote beyond it).
    pub(super) fn len(&self) -> io::Result<u64> {
        match &self.overlay {
            None => Ok(self.file.metadata()?.len()),
            Some(o) => Ok(o.borrow().len),
        }
    }

    pub(super) fn read_exact_at(&self, buf: &mut [u8], at: u64) -> io::Result<()> {
        let Some(o) = &self.overlay else {
            return self.file.read_exact_at(buf, at);
        };
        let o = o.borrow();
        if at + buf.len() as u64 > o.len {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "failed to fill whole buffer",
            ));
        }
        let mut done = 0usize;
        while done < buf.len() {
            let pos = at + done as u64;
            let (page, within) = (pos / PAGE, (pos % PAGE) as usize);
            let n = (PAGE as usize - within).min(buf.len() - done);
            let dst = &mut buf[done..done + n];
            match o.pages.get(&page) {
                Some(p) => dst.copy_from_slice(&p[within..within + n]),
                None => self.read_file_zero_filled(dst, pos)?,
            }
            done += n;
        }
        Ok(())
    }

    /// The file's bytes at `pos`, zeros beyond its end.
    fn read_file_zero_filled(&self, dst: &mut [u8], pos: u64) -> io::Result<()> {
        dst.fill(0);
        let mut got = 0;
        while got < dst.len() {
            match self.file.read_at(&mut dst[got..], pos + got as u64)? {
                0 => break,
                n => got += n,
            }
        }
        Ok(())
    }

    pub(super) fn write_all_at(&self, buf: &[u8], at: u64) -> io::Result<()> {
        let Some(o) = &self.overlay else {
            return self.file.write_all_at(buf, at);
        };
        let mut o = o.borrow_mut();
        let mut done = 0usize;
        while done < buf.len() {
            let pos = at + done as u64;
            let (page, within) = (pos / PAGE, (pos % PAGE) as usize);
            let n = (PAGE as usize - within).min(buf.len() - done);
            let p = match o.pages.entry(page) {
                std::collections::btree_map::Entry::Occupied(e) => e.into_mut(),
                std::collections::btree_map::Entry::Vacant(e) => {
                    let mut bytes = vec![0u8; PAGE as usize].into_boxed_slice();
                    if n < PAGE as usize {
                        self.read_file_zero_filled(&mut bytes, page * PAGE)?;
                    }
                    e.insert(bytes)
                }
            };
            p[within..within + n].copy_from_slice(&buf[done..done + n]);
            done += n;
        }
        o.len = o.len.max(at + buf.len() as u64);
        Ok(())
    }

    /// Free `len` bytes at `at` (they read as zeros); false where the file system cannot (then
    /// the bytes are as they were).
    pub(super) fn punch_hole(&self, at: u64, len: u64) -> bool {
        if self.overlay.is_some() {
            let len = len.min(self.len().unwrap_or(0).saturating_sub(at));
            // Zeros over the range, without growing the file.
            let zeros = vec![0u8; len as usize];
            return self.write_all_at(&zeros, at).is_ok();
        }
        super::records::punch_hole(&self.file, at, len)
    }

    /// The first offset at or after `from` that may hold data (see `records::next_data`).
    pub(super) fn next_data(&self, from: u64) -> Option<u64> {
        let file = super::records::next_data(&self.file, from);
        let Some(o) = &self.overlay else {
            return file;
        };
        let o = o.borrow();
        let page = o
            .pages
            .range(from / PAGE..)
            .next()
            .map(|(&p, _)| (p * PAGE).max(from));
        match (file, page) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// The whole file.
    pub(super) fn read_all(&self) -> io::Result<Vec<u8>> {
        let mut buf = vec![0u8; self.len()? as usize];
        self.read_exact_at(&mut buf, 0)?;
        Ok(buf)
    }

    /// To the disk (nothing for a read-only file: nothing of it changed there).
    pub(super) fn sync_data(&self) -> io::Result<()> {
        match self.overlay {
            None => self.file.sync_data(),
            Some(_) => Ok(()),
        }
    }

    /// Opened read-only.
    pub(super) fn read_only(&self) -> bool {
        self.overlay.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A read-only file reads what the file holds, then what was written over it (across page
    /// edges, beyond its end, over holes), and the file itself never changes.
    #[test]
    fn a_read_only_file_keeps_writes_in_memory_and_the_file_unchanged() {
        let dir = std::env::temp_dir().join(format!("ssdlab-storefile-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let bytes: Vec<u8> = (0..10_000u32).map(|i| (i % 251) as u8).collect();
        std::fs::write(dir.join("f"), &bytes).unwrap();
        let f = StoreFile::open(&dir, "f", true).unwrap();
        assert!(f.read_only());
        let mut got = vec![0u8; 10_000];
        f.read_exact_at(&mut got, 0).unwrap();
        assert_eq!(got, bytes);
        f.write_all_at(&[7u8; 5000], 3000).unwrap(); // over two page edges
        f.write_all_at(&[9u8; 100], 12_000).unwrap(); // beyond the end: a gap of zeros
        assert!(f.punch_hole(0, 1000));
        let mut want = bytes.clone();
        want[3000..8000].fill(7);
        want[..1000].fill(0);
        want.resize(12_100, 0);
        want[12_000..].fill(9);
        assert_eq!(f.len().unwrap(), 12_100);
        assert_eq!(f.read_all().unwrap(), want);
        let mut past = [0u8; 10];
        assert_eq!(
            f.read_exact_at(&mut past, 12_095).unwrap_err().kind(),
            io::ErrorKind::UnexpectedEof
        );
        assert_eq!(f.next_data(11_000), Some(11_000)); // past the file's end, in a page written
        assert_eq!(f.next_data(13_000), None);
        assert_eq!(std::fs::read(dir.join("f")).unwrap(), bytes);
        assert!(f.write_all_at(&[1], 0).is_ok() && f.sync_data().is_ok());
        assert_eq!(std::fs::read(dir.join("f")).unwrap(), bytes);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
