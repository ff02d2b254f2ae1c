//! Data at rest of a self-encrypting drive's store: every unit's bytes in `data` are
//! AES-256-XTS ciphertext (IEEE 1619, the mode self-encrypting drives use for storage)
//! under the store's media key, one XTS data unit per mapping unit with the physical unit
//! number as its tweak. The key (two 256-bit AES keys) is the file `media_key`, drawn from the
//! operating system's random source when the store is made. A crypto erase
//! ([`crypto_erase_store`]) drops every record and every byte of data and writes a new key
//! over the old one, so nothing written before can be read back, from the store's files
//! either. The cipher is RustCrypto's `aes` and `xts-mode` crates; nothing here is hand-made
//! cryptography.

use super::{at, StoreMeta};
use aes::cipher::KeyInit;
use aes::Aes256;
use std::fs::{File, OpenOptions};
use std::io::Read;
use std::os::unix::fs::FileExt;
use std::path::Path;
use xts_mode::{get_tweak_default, Xts128};

/// Bytes of a media key: two AES-256 keys.
const KEY_BYTES: usize = 64;
pub(super) const KEY_FILE: &str = "media_key";

/// The store's media key, ready to encrypt and decrypt units.
pub(super) struct MediaKey {
    xts: Xts128<Aes256>,
}

impl MediaKey {
    fn from_bytes(key: &[u8; KEY_BYTES]) -> MediaKey {
        let k1 = Aes256::new_from_slice(&key[..32]).expect("32-byte key");
        let k2 = Aes256::new_from_slice(&key[32..]).expect("32-byte key");
        MediaKey {
            xts: Xts128::new(k1, k2),
        }
    }

    /// A new key from the operating system's random source, written to `dir/media_key`
    /// (over any earlier key, in place) and synced.
    pub fn create(dir: &Path) -> Result<MediaKey, String> {
        let mut key = [0u8; KEY_BYTES];
        File::open("/dev/urandom")
            .and_then(|mut f| f.read_exact(&mut key))
            .map_err(|e| format!("/dev/urandom: {e}"))?;
        let file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .open(dir.join(KEY_FILE))
            .map_err(|e| at(dir, KEY_FILE, e))?;
        file.write_all_at(&key, 0)
            .and_then(|_| file.set_len(KEY_BYTES as u64))
            .and_then(|_| file.sync_all())
            .map_err(|e| at(dir, KEY_FILE, e))?;
        Ok(MediaKey::from_bytes(&key))
    }

    /// The key of an existing store.
    pub fn open(dir: &Path) -> Result<MediaKey, String> {
        let bytes = std::fs::read(dir.join(KEY_FILE)).map_err(|e| at(dir, KEY_FILE, e))?;
        let key: [u8; KEY_BYTES] = bytes.as_slice().try_into().map_err(|_| {
            at(
                dir,
                KEY_FILE,
                format!("{} bytes; a media key has {KEY_BYTES}", bytes.len()),
            )
        })?;
        Ok(MediaKey::from_bytes(&key))
    }

    /// The key's check value (issue 73, item 12): the first 16 bytes of a 32-byte zero block
    /// encrypted at a tweak no unit uses (units are numbered in 32 bits), in hex. Kept in
    /// `store.json`; a damaged or foreign `media_key` does not match it.
    pub fn check_value(&self) -> String {
        let mut block = [0u8; 32];
        self.xts
            .encrypt_sector(&mut block, get_tweak_default(u128::MAX));
        block[..16].iter().map(|b| format!("{b:02x}")).collect()
    }

    pub fn encrypt(&self, ppn: u32, unit: &mut [u8]) {
        self.xts
            .encrypt_sector(unit, get_tweak_default(ppn as u128));
    }

    pub fn decrypt(&self, ppn: u32, unit: &mut [u8]) {
        self.xts
            .decrypt_sector(unit, get_tweak_default(ppn as u128));
    }
}

/// Crypto erase the (stopped) store in `dir`: every record and data byte dropped, a new media
/// key over the old one. The drive starts empty at its next `serve`; its blocks' wear stays.
/// Returns a line saying what was done.
pub fn crypto_erase_store(dir: &Path) -> Result<String, String> {
    // Held to the end: no server may open the store while its key is replaced.
    let _lock = super::take_lock(dir)?;
    let text =
        std::fs::read_to_string(dir.join("store.json")).map_err(|e| at(dir, "store.json", e))?;
    let mut meta: StoreMeta = serde_json::from_str(&text).map_err(|e| at(dir, "store.json", e))?;
    if !meta.encrypted {
        return Err(format!(
            "{}: the store of '{}', a drive without always-on encryption: there is no media key to replace; accepted: a store of a self-encrypting drive (controller.self_encrypting)",
            dir.display(),
            meta.drive
        ));
    }
    if !meta.clean {
        return Err(format!(
            "{}: the server is running or was stopped uncleanly; accepted: a store whose server stopped cleanly (start `ssdlab serve --store` on it and stop it)",
            dir.display()
        ));
    }
    erase_steps(dir, &mut meta, None)?;
    Ok(format!(
        "{}: crypto erased ('{}'): a new media key, no data or record left; the drive starts empty",
        dir.display(),
        meta.drive
    ))
}

/// The crypto erase of a stopped store, step by step, ordered so that a kill anywhere leaves
/// either the old store (before the first step) or one the next start or `crypto-erase`
/// finishes erasing (issue 73, item 15): 1. `store.json` marks the erase begun (`erasing`)
/// and records empty files; 2. a new media key over the old one (from here nothing written
/// before can be decrypted); 3-4. `oob` and `data` truncated; 5. the mark cleared. Each
/// step is synced before the next. `stop_after`: tests stop after that many steps, as a kill
/// would.
pub(super) fn erase_steps(
    dir: &Path,
    meta: &mut StoreMeta,
    stop_after: Option<usize>,
) -> Result<(), String> {
    let truncate = |name: &str| -> Result<(), String> {
        let f = OpenOptions::new()
            .write(true)
            .open(dir.join(name))
            .map_err(|e| at(dir, name, e))?;
        f.set_len(0)
            .and_then(|_| f.sync_all())
            .map_err(|e| at(dir, name, e))
    };
    for step in 0..5 {
        if stop_after == Some(step) {
            return Ok(());
        }
        match step {
            0 => {
                meta.erasing = true;
                if let Some(files) = meta.files.as_mut() {
                    files.data = 0;
                    files.oob = 0;
                }
                super::write_store_meta(dir, meta)?;
            }
            1 => {
                meta.key_check = Some(MediaKey::create(dir)?.check_value());
            }
            2 => truncate("oob")?,
            3 => truncate("data")?,
            _ => {
                meta.erasing = false;
                super::write_store_meta(dir, meta)?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_store_path_is_refused_not_the_current_directory() {
        // Issue 73 item 13: `--store "$DIR"` with DIR unset.
        let e = crypto_erase_store(Path::new("")).unwrap_err();
        assert!(e.contains("an empty path"), "{e}");
        assert!(super::super::take_lock(Path::new("")).is_err());
    }

    #[test]
    fn a_unit_encrypts_to_other_bytes_and_decrypts_back_and_the_tweak_matters() {
        let dir = std::env::temp_dir().join(format!("ssdlab-crypt-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let key = MediaKey::create(&dir).unwrap();
        let plain: Vec<u8> = (0..4096u32).map(|i| (i * 7) as u8).collect();
        let mut unit = plain.clone();
        key.encrypt(5, &mut unit);
        assert_ne!(unit, plain);
        let mut other = plain.clone();
        key.encrypt(6, &mut other);
        assert_ne!(
            other, unit,
            "the same data at another unit encrypts differently"
        );
        key.decrypt(5, &mut unit);
        assert_eq!(unit, plain);
        // The key read back from its file is the same key; a new one is not.
        let again = MediaKey::open(&dir).unwrap();
        let mut c = plain.clone();
        key.encrypt(9, &mut c);
        again.decrypt(9, &mut c);
        assert_eq!(c, plain);
        let fresh = MediaKey::create(&dir).unwrap();
        key.encrypt(9, &mut c);
        fresh.decrypt(9, &mut c);
        assert_ne!(c, plain);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
