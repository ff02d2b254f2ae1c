//! Power-on: the store opened (or made) for a drive and the drive's FTL rebuilt from it, after
//! what a kill of the emulator took by the drive's power-loss protection.

use super::*;

/// Open the store in `dir` for `dev` (creating it when `dir` holds none) and rebuild the
/// drive from it as the firmware does at power-on. `fast_fill`: the drive was just
/// preconditioned (every unit mapped to zeros); only allowed for a new store.
pub fn mount(
    dir: &Path,
    dev: &mut Device,
    drive: &str,
    fast_fill: bool,
) -> Result<(DiskUnits, Mount), String> {
    mount_with(dir, dev, drive, fast_fill, false)
}

/// [`mount()`] of a store on read-only media (`serve --read-only`): no file of the store is
/// written, created or locked for writing (a shared lock where `lock` exists); what the
/// firmware writes, from the rebuild after an unclean stop on, is kept in memory and gone at
/// the stop (issue 73, item 18).
pub fn mount_read_only(
    dir: &Path,
    dev: &mut Device,
    drive: &str,
) -> Result<(DiskUnits, Mount), String> {
    mount_with(dir, dev, drive, false, true)
}

fn mount_with(
    dir: &Path,
    dev: &mut Device,
    drive: &str,
    fast_fill: bool,
    read_only: bool,
) -> Result<(DiskUnits, Mount), String> {
    check_store_dir(dir)?;
    let meta_path = dir.join("store.json");
    let wanted = StoreMeta::of(drive, &dev.geometry);
    if !meta_path.exists() && read_only {
        return Err(format!(
            "{}: holds no store.json; accepted with --read-only: a store an earlier `--store` made (a read-only start makes none)",
            dir.display()
        ));
    }
    if !meta_path.exists() {
        if dir.exists()
            && std::fs::read_dir(dir)
                .map_err(|e| format!("{}: {e}", dir.display()))?
                .next()
                .is_some()
        {
            return Err(format!(
                "{}: not empty and holds no store.json; accepted: a new or empty directory, or one an earlier `--store` made",
                dir.display()
            ));
        }
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let encrypted = dev.config.controller.self_encrypting;
        let mut disk = DiskUnits::files(
            dir,
            StoreMeta {
                encrypted,
                ..wanted
            },
            false,
        )?;
        if encrypted {
            let key = MediaKey::create(dir)?;
            disk.meta.key_check = Some(key.check_value());
            disk.key = Some(key);
        }
        if fast_fill {
            disk.record_zero_fill(dev).map_err(|e| at(dir, "oob", e))?;
        }
        disk.write_meta()?;
        let report = dev.ftl.mount_report(&dev.config.nand);
        let mount = Mount {
            dir: dir.to_path_buf(),
            created: true,
            clean: true,
            resolved_twins: 0,
            lost_at_kill: 0,
            fell_back_at_kill: 0,
            erase_finished: false,
            damaged_records: 0,
            report,
        };
        return Ok((disk, mount));
    }
    if fast_fill {
        return Err(format!(
            "{}: already holds a drive; a precondition applies to a new store only (accepted: --precondition none)",
            dir.display()
        ));
    }
    let text = std::fs::read_to_string(&meta_path).map_err(|e| at(dir, "store.json", e))?;
    let mut found: StoreMeta = serde_json::from_str(&text).map_err(|e| {
        at(
            dir,
            "store.json",
            format!("line {} column {}: {e}", e.line(), e.column()),
        )
    })?;
    if found.format != FORMAT {
        return Err(at(
            dir,
            "store.json",
            format!("format {}; this ssdlab reads format {FORMAT}", found.format),
        ));
    }
    if !found.same_drive(&wanted) {
        return Err(format!(
            "{}: made for drive '{}' ({} logical and {} physical units of {} bytes, {} blocks); '{}' has {} logical and {} physical units of {} bytes, {} blocks; accepted: the drive the store was made with, or a new directory",
            dir.display(),
            found.drive,
            found.logical_units,
            found.physical_units,
            found.unit_bytes,
            found.blocks,
            drive,
            wanted.logical_units,
            wanted.physical_units,
            wanted.unit_bytes,
            wanted.blocks
        ));
    }
    let self_encrypting = dev.config.controller.self_encrypting;
    if found.encrypted != self_encrypting {
        let (says, is) = if found.encrypted {
            ("encrypted under media_key", "is not self-encrypting")
        } else {
            ("in the clear", "is self-encrypting")
        };
        return Err(at(
            dir,
            "store.json",
            format!("records the data at rest as {says}, but drive '{drive}' {is} (controller.self_encrypting): store.json is damaged, or the drive file changed since the store was made; accepted: the drive the store was made with"),
        ));
    }
    // A crypto erase killed part-way: the user asked for the data to go, and from its first
    // step on none of it may be read; finish it (under the store's lock) before anything
    // else reads the files.
    let erase_finished = found.erasing;
    if found.erasing && read_only {
        return Err(at(
            dir,
            "store.json",
            "records a crypto erase that was interrupted; it must finish before the store is read, which writes it; accepted with --read-only: a store not being erased (start once without --read-only)",
        ));
    }
    if found.erasing {
        let lock = take_lock(dir)?;
        super::crypt::erase_steps(dir, &mut found, None)?;
        drop(lock);
    }
    check_files(dir, &found)?;
    let mut disk = DiskUnits::files(dir, found.clone(), read_only)?;
    disk.meta.drive = drive.to_string();
    if found.encrypted {
        let key = MediaKey::open(dir)?;
        let check = key.check_value();
        match &found.key_check {
            Some(want) if *want != check => {
                return Err(at(
                    dir,
                    super::crypt::KEY_FILE,
                    "does not match the key check in store.json: the key is damaged or from another store, and no unit could be decrypted; accepted: the store's own media_key (`ssdlab crypto-erase --store DIR` empties the drive instead)",
                ))
            }
            // A store made before the check was kept: record it from now on.
            None => disk.meta.key_check = Some(check),
            Some(_) => {}
        }
        disk.key = Some(key);
    }
    // Erase counts.
    let ec = disk
        .erase_file
        .read_all()
        .map_err(|e| at(dir, "erase_counts", e))?;
    if ec.len() as u64 > found.blocks * 4 {
        return Err(at(
            dir,
            "erase_counts",
            format!(
                "{} bytes; a store of {} blocks holds at most {}",
                ec.len(),
                found.blocks,
                found.blocks * 4
            ),
        ));
    }
    for (i, c) in ec.chunks_exact(4).enumerate() {
        disk.erase_counts[i] = u32::from_le_bytes(c.try_into().expect("4 bytes"));
    }
    // A kill: host data the model had not programmed is lost unless the drive's hold-up
    // energy programs it (full protection).
    // First, before anything is written: the records' checksums, and the pending units.
    let (pending, damaged): (Vec<(u32, u32)>, _) = {
        let mut records = OobRecords::new(&disk.oob, found.physical_units, found.checksums)
            .map_err(|e| at(dir, "oob", e))?;
        let p = records
            .by_ref()
            .filter(|r| r.2 & PENDING != 0)
            .map(|r| (r.0, r.2))
            .collect();
        if let Some(e) = records.error {
            return Err(at(dir, "oob", e));
        }
        (p, records.damaged)
    };
    // A damaged record of a superseded copy is of no consequence (nothing reads it); any
    // other cannot be placed (which logical unit it holds is not to be trusted): refused, as
    // a drive whose spare area fails its ECC cannot rebuild its map from it.
    let damaged_records = damaged.len() as u64;
    let harmful: Vec<_> = damaged.iter().filter(|d| !d.1).collect();
    if let Some((ppn, _, what)) = harmful.first() {
        return Err(at(
            dir,
            "oob",
            format!(
                "{} record(s) damaged, the first of unit {ppn}: {what}; the store is damaged: the logical units they hold cannot be told (accepted: a store as `ssdlab serve` or `crashtest` left it; restore it from a backup, or give a new --store)",
                harmful.len()
            ),
        ));
    }
    let mut lost_at_kill = (0, 0);
    if !found.clean {
        // The protection class decides what the kill took, by the rules a cut in the model
        // follows (`ssdlab_core::power_loss`): which pending units survive, and whether a
        // running program of an upper page corrupts its paired lower page (rebuilt by RAIN
        // where the drive has it).
        use ssdlab_core::power_loss::{paired_lower_units, HostDataState};
        let protection = dev.config.controller.power_loss_protection;
        let state = |flags: u32| match flags & RUNNING != 0 {
            true => HostDataState::Running,
            false => HostDataState::Unprogrammed,
        };
        let kept = |flags: u32| protection.keeps(state(flags));
        let mut lost = Vec::new();
        let mut corrupt = Vec::new();
        let g = &dev.geometry;
        for &(ppn, flags) in &pending {
            if kept(flags) {
                disk.write_flags(ppn, flags & !(PENDING | RUNNING))
                    .map_err(|e| at(dir, "oob", e))?;
                continue;
            }
            lost.push(ppn);
            disk.pending.insert(ppn, flags & !(PENDING | RUNNING));
            let interrupted =
                protection.interrupts_running_programs() && state(flags) == HostDataState::Running;
            if interrupted && g.rain_period == 0 {
                corrupt.extend(paired_lower_units(g, ppn).into_iter().flatten());
            }
        }
        corrupt.sort_unstable();
        corrupt.dedup();
        if !lost.is_empty() || !corrupt.is_empty() {
            lost_at_kill = disk
                .power_cut(&lost, &corrupt)
                .map_err(|e| at(dir, "oob", e))?;
        }
    }
    // Pass 1: which unit holds each logical unit's current data (the newest record wins).
    let logical = found.logical_units;
    let mut current = vec![UNMAPPED; logical as usize];
    let mut twins = 0u64;
    let mut records = OobRecords::new(&disk.oob, found.physical_units, found.checksums)
        .map_err(|e| at(dir, "oob", e))?;
    let mut next_sequence = 1;
    for (ppn, lba, flags, seq) in records.by_ref() {
        next_sequence = next_sequence.max(seq + 1);
        if flags & STALE != 0 {
            continue;
        }
        if lba as u64 >= logical {
            return Err(at(
                dir,
                "oob",
                format!("unit {ppn}: logical unit {lba} beyond the drive's {logical}: the store is damaged"),
            ));
        }
        let other = current[lba as usize];
        if other != UNMAPPED {
            twins += 1;
            let (_, _, other_seq, _) = disk.read_record(other).map_err(|e| at(dir, "oob", e))?;
            if other_seq > seq {
                continue;
            }
        }
        current[lba as usize] = ppn;
    }
    if let Some(e) = records.error {
        return Err(at(dir, "oob", e));
    }
    disk.next_sequence = next_sequence;
    // Pass 2: hand every programmed unit to the FTL; note which hold data.
    let mut has_data = std::mem::take(&mut disk.has_data);
    let mut unreadable = std::collections::BTreeSet::new();
    let mut stored = 0u64;
    let mut records = OobRecords::new(&disk.oob, found.physical_units, found.checksums)
        .map_err(|e| at(dir, "oob", e))?;
    let recovered = records.by_ref().map(|(ppn, lba, flags, seq)| {
        let live = flags & STALE == 0 && current[lba as usize] == ppn;
        if live && flags & ZEROS == 0 {
            has_data[(ppn / 64) as usize] |= 1 << (ppn % 64);
            stored += 1;
        }
        if live && flags & UNREADABLE != 0 {
            unreadable.insert(ppn);
        }
        Recovered {
            ppn,
            lba: if live { lba } else { UNMAPPED },
            sequence: seq,
        }
    });
    let restored = dev.ftl.restore(recovered, Some(&disk.erase_counts));
    if let Some(e) = records.error {
        return Err(at(dir, "oob", e));
    }
    restored.map_err(|e| {
        // The records and the erase counts disagree; a retired block's mark is in the counts.
        let name = if e.contains("retired") {
            "erase_counts"
        } else {
            "oob"
        };
        at(dir, name, format!("{e} (by oob): the store is damaged"))
    })?;
    drop(current);
    disk.has_data = has_data;
    disk.stored = stored;
    disk.unreadable = unreadable;
    let report = dev.ftl.mount_report(&dev.config.nand);
    let clean = found.clean;
    disk.meta.clean = false;
    disk.write_meta()?;
    Ok((
        disk,
        Mount {
            dir: dir.to_path_buf(),
            created: false,
            clean,
            resolved_twins: twins,
            lost_at_kill: lost_at_kill.0,
            fell_back_at_kill: lost_at_kill.1,
            erase_finished,
            damaged_records,
            report,
        },
    ))
}

/// The store's files are all there and no shorter than `store.json` last recorded them (a
/// server only makes them longer): a deleted or truncated file is damage, refused before
/// anything is rebuilt from it, instead of a drive that starts and then answers EIO or zeros.
fn check_files(dir: &Path, meta: &StoreMeta) -> Result<(), String> {
    let accepted = "accepted: a store as `ssdlab serve` or `crashtest` left it (restore the file from a backup, or give a new --store)";
    for name in STORE_FILES {
        if !dir.join(name).is_file() {
            return Err(format!(
                "{}: missing; the store is damaged ({accepted})",
                dir.join(name).display()
            ));
        }
    }
    let Some(want) = meta.files else {
        return Ok(());
    };
    for (name, at_least) in [
        ("data", want.data),
        ("oob", want.oob),
        ("erase_counts", want.erase_counts),
    ] {
        let len = std::fs::metadata(dir.join(name))
            .map(|m| m.len())
            .map_err(|e| at(dir, name, e))?;
        if len < at_least {
            return Err(format!(
                "{}: {len} bytes, but store.json records {at_least} at the last clean stop; the store is damaged (truncated) ({accepted})",
                dir.join(name).display()
            ));
        }
    }
    Ok(())
}
