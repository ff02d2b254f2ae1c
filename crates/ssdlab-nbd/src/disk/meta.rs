//! `store.json` (what the store is and how it was left) and the store's lock.

use super::*;

/// What `store.json` says.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub(super) struct StoreMeta {
    pub(super) format: u32,
    pub(super) drive: String,
    pub(super) unit_bytes: u32,
    pub(super) units_per_block: u32,
    pub(super) blocks: u64,
    pub(super) physical_units: u64,
    pub(super) logical_units: u64,
    pub(super) clean: bool,
    /// Data at rest is encrypted under `media_key` (a self-encrypting drive; see `crypt`).
    #[serde(default)]
    pub(super) encrypted: bool,
    /// The lengths of the store's files when this was last written (a clean stop, or the
    /// store's creation): a later server only makes them longer, so a shorter file is damage
    /// (issue 25, item 5). None in stores made before this was kept.
    #[serde(default)]
    pub(super) files: Option<FileLengths>,
    /// A crypto erase was begun and has not finished (issue 73, item 15): the store holds no
    /// data the host may read, and the next start or `crypto-erase` finishes the erase.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(super) erasing: bool,
    /// The media key's check value ([`crypt::MediaKey::check_value`]): a start refuses a
    /// `media_key` that does not match it rather than serve garbage (issue 73, item 12). None
    /// in stores made before it was kept (written at their next start).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) key_check: Option<String>,
    /// Every record carries checksums ([`CHECKED`]; issue 73, item 12): a record failing them,
    /// or without them, is damage, and so is a unit whose bytes fail their CRC. False in
    /// stores made before (their records are not checked).
    #[serde(default)]
    pub(super) checksums: bool,
}

/// Lengths of a store's files, bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub(super) struct FileLengths {
    pub(super) data: u64,
    pub(super) oob: u64,
    pub(super) erase_counts: u64,
}

/// The files a store keeps besides `store.json` (and `lock`, `media_key`).
pub(super) const STORE_FILES: [&str; 3] = ["data", "oob", "erase_counts"];

impl StoreMeta {
    pub(super) fn of(drive: &str, g: &Geometry) -> StoreMeta {
        StoreMeta {
            format: FORMAT,
            drive: drive.into(),
            unit_bytes: g.mapping_unit_bytes,
            units_per_block: g.units_per_block,
            blocks: (g.dies * g.blocks_per_die) as u64,
            physical_units: g.physical_units,
            logical_units: g.logical_units,
            clean: false,
            erasing: false,
            key_check: None,
            encrypted: false,
            files: None,
            checksums: true,
        }
    }

    pub(super) fn same_drive(&self, other: &StoreMeta) -> bool {
        let strip = |m: &StoreMeta| StoreMeta {
            drive: String::new(),
            clean: false,
            encrypted: false,
            files: None,
            erasing: false,
            key_check: None,
            checksums: false,
            ..m.clone()
        };
        strip(self) == strip(other)
    }
}

/// Write `store.json` (through a synced temporary file and a rename: never half written).
pub(super) fn write_store_meta(dir: &Path, meta: &StoreMeta) -> Result<(), String> {
    let text = serde_json::to_string_pretty(meta).expect("meta serialises") + "\n";
    let tmp = dir.join("store.json.tmp");
    std::fs::write(&tmp, text)
        .and_then(|_| File::open(&tmp)?.sync_all())
        .and_then(|_| std::fs::rename(&tmp, dir.join("store.json")))
        .map_err(|e| at(dir, "store.json", e))
}

/// A store directory may not be the empty path: that would put the store's files (`data`,
/// `oob`, ...) in the current directory, over any of the user's files of those names, or take
/// a `store.json` there for the store (issue 73, item 13).
pub fn check_store_dir(dir: &Path) -> Result<(), String> {
    if dir.as_os_str().is_empty() {
        return Err("store directory '': an empty path (an unset shell variable?); accepted: the path of a directory".into());
    }
    Ok(())
}

/// The store's advisory lock (`DIR/lock`, an exclusive `flock` held while the store is open,
/// the holder's process id written in it): a second server or crashtest on the same store is
/// refused with the holder named, instead of two processes writing one store (issue 25, item 3).
/// The kernel drops the lock when the holder exits, however it exits.
pub fn take_lock(dir: &Path) -> Result<File, String> {
    use std::io::{Seek, Write};
    check_store_dir(dir)?;
    let mut f = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(dir.join("lock"))
        .map_err(|e| at(dir, "lock", e))?;
    match f.try_lock() {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => {
            let mut holder = String::new();
            let _ = f.read_to_string(&mut holder);
            // The id is the last writer's: a read-only server (a shared lock) writes none.
            let holder = match holder.trim() {
                pid if !pid.is_empty() && Path::new("/proc").join(pid).exists() => {
                    format!("process {pid}")
                }
                _ => {
                    "a `serve --read-only` or a process that has not written its id yet".to_string()
                }
            };
            return Err(format!(
                "{}: in use by {holder} (DIR/lock is locked); accepted: a store no other `ssdlab serve` or `crashtest` has open: stop that one first, or give another --store",
                dir.display()
            ));
        }
        Err(std::fs::TryLockError::Error(e)) => return Err(at(dir, "lock", e)),
    }
    f.set_len(0)
        .and_then(|_| f.rewind())
        .and_then(|_| writeln!(f, "{}", std::process::id()))
        .map_err(|e| at(dir, "lock", e))?;
    Ok(f)
}

/// A read-only start's lock: a shared `flock` on `DIR/lock` opened for reading, so that no
/// server opens the store for writing meanwhile (and none is writing it now); None where the
/// store has no `lock` file (on read-only media one cannot be made, and nothing can write there).
pub fn take_shared_lock(dir: &Path) -> Result<Option<File>, String> {
    check_store_dir(dir)?;
    let f = match File::open(dir.join("lock")) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(at(dir, "lock", e)),
    };
    match f.try_lock_shared() {
        Ok(()) => Ok(Some(f)),
        Err(std::fs::TryLockError::WouldBlock) => Err(format!(
            "{}: in use by a server that has it open for writing (DIR/lock is locked); accepted with --read-only: a store no `ssdlab serve` or `crashtest` writes: stop that one first",
            dir.display()
        )),
        Err(std::fs::TryLockError::Error(e)) => Err(at(dir, "lock", e)),
    }
}
