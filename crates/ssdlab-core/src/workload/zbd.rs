//! fio's zonemode=zbd on the host side, as fio's zbd.c does it (`zbd_adjust_block`,
//! `zbd_convert_to_write_zone`): a write goes to the write pointer of the zone its offset
//! falls in, or, with as many zones being written as `max_open_zones` allows, of one of those;
//! a full zone chosen again is reset and written from its start; with
//! `zone_reset_threshold` and `zone_reset_frequency`, once the zones hold more than the
//! threshold's share of the span, every 1/frequency-th write resets its zone first. Reads
//! stay below the write pointer (unless `read_beyond_wp`); a trim resets its zone. The zone
//! resets are synchronous (fio quiesces, then issues them outside the queue).

use super::compile::CompiledJob;
use super::job::{parse_size, Job};
use crate::device::{Device, IoKind};
use crate::zones::{ZoneAction, ZoneState};

/// A zonemode=zbd job's zone options, as numbers.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ZbdOptions {
    pub zone_bytes: u64,
    /// zonecapacity (0: the drive's).
    pub capacity_bytes: u64,
    pub max_open_zones: u32,
    pub job_max_open_zones: u32,
    pub ignore_zone_limits: bool,
    pub reset_threshold: f64,
    pub reset_frequency: f64,
    pub read_beyond_wp: bool,
    /// write_mode=zone_append: writes go as Zone Appends to their zone's start.
    pub append: bool,
}

impl CompiledJob {
    /// A zonemode=zbd job's zone options (None: not zbd).
    pub fn zbd(&self) -> Option<ZbdOptions> {
        self.zbd
    }
}

impl Job {
    /// zonemode=zbd's options (None for another mode).
    pub(super) fn zbd_options(&self, bs_max: u64) -> Result<Option<ZbdOptions>, String> {
        let append = match self.write_mode.trim() {
            "write" => false,
            "zone_append" if self.zonemode == "zbd" => true,
            "zone_append" => {
                return Err("write_mode: zone_append needs zonemode=zbd; accepted: write, or zone_append with zonemode=zbd".into())
            }
            other => {
                let shown: String = other.chars().take(40).collect();
                return Err(format!("write_mode: '{shown}'; accepted: write, zone_append (uncor, zeroes, verify and mixes are not modelled)"));
            }
        };
        match self.zonemode.as_str() {
            "none" | "strided" | "" => {
                if self.max_open_zones > 0
                    || self.job_max_open_zones > 0
                    || self.zone_reset_threshold.is_some()
                    || self.zone_reset_frequency.is_some()
                    || self.zonecapacity.is_some()
                {
                    return Err("max_open_zones: zone limits and resets belong to zonemode=zbd; accepted: with zonemode=zbd".into());
                }
                return Ok(None);
            }
            "zbd" => {}
            other => return Err(format!("zonemode: '{other}'; accepted: none, strided, zbd")),
        }
        let zone_bytes = match &self.zonesize {
            Some(z) => parse_size(z).map_err(|e| format!("zonesize: {e}"))?,
            None => return Err("zonesize: zonemode=zbd needs the zone size here (a drive without a zoned namespace takes zones of it); accepted: a power of two, e.g. 256M".into()),
        };
        if !zone_bytes.is_power_of_two() || zone_bytes < bs_max {
            return Err(format!("zonesize: {zone_bytes} bytes; accepted: a power of two of at least the block size ({bs_max})"));
        }
        if self.zonerange.is_some() || self.zoneskip.is_some() {
            return Err("zonerange: with zonemode=zbd the zones are the drive's; accepted: zonerange and zoneskip with zonemode=strided only".into());
        }
        let capacity_bytes = match &self.zonecapacity {
            Some(c) => {
                let c = parse_size(c).map_err(|e| format!("zonecapacity: {e}"))?;
                if c == 0 || c > zone_bytes {
                    return Err(format!(
                        "zonecapacity: {c} bytes; accepted: 1 byte up to zonesize ({zone_bytes})"
                    ));
                }
                c
            }
            None => 0,
        };
        let fraction = |name: &str, v: &Option<String>| -> Result<f64, String> {
            match v {
                None => Ok(0.0),
                Some(t) => match t.trim().parse::<f64>() {
                    Ok(f) if (0.0..=1.0).contains(&f) => Ok(f),
                    _ => Err(format!("{name}: '{t}'; accepted: a fraction 0 to 1")),
                },
            }
        };
        let reset_threshold = fraction("zone_reset_threshold", &self.zone_reset_threshold)?;
        let reset_frequency = fraction("zone_reset_frequency", &self.zone_reset_frequency)?;
        Ok(Some(ZbdOptions {
            zone_bytes,
            capacity_bytes,
            max_open_zones: self.max_open_zones,
            job_max_open_zones: self.job_max_open_zones,
            ignore_zone_limits: self.ignore_zone_limits,
            reset_threshold,
            reset_frequency,
            read_beyond_wp: self.read_beyond_wp,
            append,
        }))
    }

    /// A size of the span (offset, size): with zonemode=zbd, fio's `Nz` is N zones.
    pub(super) fn zoned_size(&self, text: &str) -> Option<Result<u64, String>> {
        let n = text.trim().strip_suffix('z')?;
        if self.zonemode != "zbd" {
            return None;
        }
        let zone = self.zonesize.as_deref().and_then(|z| parse_size(z).ok())?;
        Some(
            n.trim()
                .parse::<u64>()
                .map(|n| n * zone)
                .map_err(|_| format!("'{text}' is not a count of zones")),
        )
    }
}

/// The host's view of the zones the jobs of a group write (fio keeps one per device).
pub(super) struct ZbdHost {
    zone_bytes: u64,
    capacity_bytes: u64,
    zones: u32,
    /// Zones being written (fio's write_zones), and the job writing each.
    write_zones: Vec<(u32, usize)>,
    max_write_zones: u32,
    /// Writes left before the next threshold reset (fio's write_cnt).
    write_cnt: u32,
    /// Bytes below the write pointers of all zones (fio's wp_valid_data_bytes).
    valid_bytes: u64,
    pub resets: u64,
}

impl ZbdHost {
    /// The host's view of `dev`'s zones for the zbd jobs of a group; an error names the
    /// option that does not fit the drive.
    pub(super) fn new(dev: &Device, jobs: &[CompiledJob]) -> Result<Option<ZbdHost>, String> {
        let Some(first) = jobs.iter().find_map(|j| j.zbd()) else {
            return Ok(None);
        };
        let Some(zones) = dev.zones() else {
            return Err("zonemode: zbd on a drive without a zoned namespace; accepted: a drive whose [placement] has mode = \"zns\" (ssdlab run and Drive.open give a drive without [placement] the default zones of the job's zonesize)".into());
        };
        let mor = zones.geometry.max_open;
        for o in jobs.iter().filter_map(|j| j.zbd()) {
            check(&o, zones.zone_bytes(), mor)?;
        }
        let max_write_zones = match first.max_open_zones {
            0 => mor,
            m => m,
        };
        let mut valid_bytes = 0;
        for z in 0..zones.geometry.zones {
            let d = zones.zone(z);
            valid_bytes += d.write_pointer_bytes - d.start_bytes;
        }
        let write_zones = taken_over(zones, jobs, max_write_zones)?;
        Ok(Some(ZbdHost {
            zone_bytes: zones.zone_bytes(),
            capacity_bytes: zones.zone(0).capacity_bytes,
            zones: zones.geometry.zones,
            write_zones,
            max_write_zones,
            write_cnt: reset_count(first.reset_frequency),
            valid_bytes,
            resets: 0,
        }))
    }

    /// Adjust the next IO of job `job` (index `job_index`) to the zones, as fio does: the
    /// kind, offset and length to submit, after any zone reset it needs. None: nothing to do
    /// (fio ends the job).
    #[cold]
    #[inline(never)]
    pub(super) fn adjust(
        &mut self,
        dev: &mut Device,
        job: &CompiledJob,
        job_index: usize,
        (kind, offset, length): (IoKind, u64, u64),
    ) -> Option<(IoKind, u64, u64)> {
        let o = job.zbd()?;
        let min_bs = job.align_bytes.max(4096);
        let first_zone = (job.span_start / self.zone_bytes) as u32;
        let end_zone = ((job.span_start + job.span_bytes).div_ceil(self.zone_bytes) as u32)
            .min(self.zones)
            .max(first_zone + 1);
        let z = ((offset / self.zone_bytes) as u32).clamp(first_zone, end_zone - 1);
        match kind {
            IoKind::Trim => {
                self.reset(dev, z);
                Some((
                    kind,
                    z as u64 * self.zone_bytes,
                    length.min(self.zone_bytes),
                ))
            }
            _ => {
                let want = Want {
                    zone: z,
                    range: (first_zone, end_zone),
                    offset,
                    length,
                    min_bs,
                };
                if kind == IoKind::Read {
                    self.read(dev, o, want)
                } else {
                    self.write(dev, job, o, job_index, want)
                }
            }
        }
    }

    fn write(
        &mut self,
        dev: &mut Device,
        job: &CompiledJob,
        o: ZbdOptions,
        job_index: usize,
        want: Want,
    ) -> Option<(IoKind, u64, u64)> {
        let (z, range, offset, length, min_bs) = want.parts();
        let in_range = |q: u32| range.0 <= q && q < range.1;
        // A sequential job goes on in the next zone with room once its zone is full (fio's
        // zbd_convert_to_write_zone); past the span's last zone it is done.
        let z = if job.pattern == super::compile::Pattern::Sequential {
            let zones = dev.zones()?;
            let room = |q: u32| {
                let d = zones.zone(q);
                d.state != ZoneState::Full
                    && d.start_bytes + self.capacity_bytes - d.write_pointer_bytes >= min_bs
            };
            (z..range.1).find(|&q| room(q))?
        } else {
            z
        };
        let mine = self.write_zones.iter().filter(|w| w.1 == job_index).count() as u32;
        let z = if self.write_zones.iter().any(|w| w.0 == z) {
            z
        } else if self.write_zones.len() < self.max_write_zones as usize
            && (o.job_max_open_zones == 0 || mine < o.job_max_open_zones)
        {
            self.write_zones.push((z, job_index));
            z
        } else {
            // One of the zones being written, chosen from the offset (fio's
            // pick_random_zone_idx), the first in the job's range from there.
            let n = self.write_zones.len();
            if n == 0 {
                return None;
            }
            let start =
                ((offset - job.span_start) as u128 * n as u128 / job.span_bytes as u128) as usize;
            (0..n)
                .map(|i| self.write_zones[(start + i) % n].0)
                .find(|&q| in_range(q))?
        };
        let mut reset = false;
        if o.reset_frequency > 0.0
            && self.valid_bytes as f64 >= job.span_bytes as f64 * o.reset_threshold
        {
            self.write_cnt -= 1;
            if self.write_cnt == 0 {
                self.write_cnt = reset_count(o.reset_frequency);
                reset = true;
            }
        }
        let d = dev.zones()?.zone(z);
        let cap_end = d.start_bytes + self.capacity_bytes;
        if reset || cap_end - d.write_pointer_bytes < min_bs || d.state == ZoneState::Full {
            self.reset(dev, z);
        }
        let wp = dev.zones()?.zone(z).write_pointer_bytes;
        let len = length.min(cap_end - wp) / min_bs * min_bs;
        if len == 0 {
            return None;
        }
        self.valid_bytes += len;
        if wp + len + min_bs > cap_end {
            // Full once this write is in: no longer a write zone (fio drops it at completion).
            self.write_zones.retain(|w| w.0 != z);
        }
        if o.append {
            // fio's write_mode=zone_append: to the zone's start; the drive picks the place.
            return Some((IoKind::ZoneAppend, d.start_bytes, len));
        }
        Some((IoKind::Write, wp, len))
    }

    fn read(&mut self, dev: &Device, o: ZbdOptions, want: Want) -> Option<(IoKind, u64, u64)> {
        let (z, range, offset, length, min_bs) = want.parts();
        let zones = dev.zones()?;
        if o.read_beyond_wp {
            return Some((IoKind::Read, offset, length));
        }
        let written = |q: u32| {
            let d = zones.zone(q);
            d.write_pointer_bytes - d.start_bytes
        };
        // A zone with at least one block written: this one, or the next such in the range.
        let n = range.1 - range.0;
        let Some(q) = (0..n)
            .map(|i| range.0 + (z - range.0 + i) % n)
            .find(|&q| written(q) >= min_bs)
        else {
            // Nothing written anywhere in the span: the read returns unwritten data.
            return Some((IoKind::Read, offset, length));
        };
        let start = q as u64 * self.zone_bytes;
        let w = written(q);
        let at = if w <= length {
            start
        } else {
            start + ((offset % self.zone_bytes) % (w - length)) / min_bs * min_bs
        };
        let len = length.min(start + w - at) / min_bs * min_bs;
        Some((IoKind::Read, at, len.max(min_bs.min(w))))
    }

    /// Reset zone `z` (if anything is written in it).
    fn reset(&mut self, dev: &mut Device, z: u32) {
        let Some(d) = dev.zones().map(|zs| zs.zone(z)) else {
            return;
        };
        if d.state == ZoneState::Empty {
            return;
        }
        if dev.zone_manage(z, ZoneAction::Reset).is_ok() {
            self.valid_bytes -= d.write_pointer_bytes - d.start_bytes;
            self.resets += 1;
        }
    }
}

/// What the job's generator asked for, in the zones' terms: the zone its offset falls in (within
/// the job's range of zones), the offset and length, and the job's smallest block.
#[derive(Clone, Copy, Debug)]
struct Want {
    zone: u32,
    range: (u32, u32),
    offset: u64,
    length: u64,
    min_bs: u64,
}

impl Want {
    fn parts(self) -> (u32, (u32, u32), u64, u64, u64) {
        (self.zone, self.range, self.offset, self.length, self.min_bs)
    }
}

/// fio's write_cnt after a reset: 1/frequency writes (none without a frequency).
fn reset_count(frequency: f64) -> u32 {
    if frequency > 0.0 {
        (1.0 / frequency).min(u32::MAX as f64) as u32
    } else {
        u32::MAX
    }
}

/// A zbd job's options against the drive's zones.
/// fio's zbd_setup_files: the zones of a writing job's range that the drive holds open or
/// closed (active) when the jobs start are its write zones from the start, within
/// `max_write_zones` and the job's job_max_open_zones; more than those is fio's error
/// "Number of open zones exceeds max_open_zones limit".
fn taken_over(
    zones: &crate::zones::Zones,
    jobs: &[CompiledJob],
    max_write_zones: u32,
) -> Result<Vec<(u32, usize)>, String> {
    use crate::zones::ZoneState;
    let mut taken: Vec<(u32, usize)> = Vec::new();
    for (i, job) in jobs.iter().enumerate() {
        let Some(o) = job.zbd().filter(|_| job.writes()) else {
            continue;
        };
        let zone_bytes = zones.zone_bytes();
        let first = (job.span_start / zone_bytes) as u32;
        let end = ((job.span_start + job.span_bytes).div_ceil(zone_bytes) as u32)
            .min(zones.geometry.zones);
        for z in first..end {
            let state = zones.zone(z).state;
            if !matches!(
                state,
                ZoneState::ImplicitlyOpened | ZoneState::ExplicitlyOpened | ZoneState::Closed
            ) || taken.iter().any(|t| t.0 == z)
            {
                continue;
            }
            let mine = taken.iter().filter(|t| t.1 == i).count() as u32;
            if (o.job_max_open_zones > 0 && mine >= o.job_max_open_zones)
                || taken.len() as u32 >= max_write_zones
            {
                let open = (first..end)
                    .filter(|&q| {
                        matches!(
                            zones.zone(q).state,
                            ZoneState::ImplicitlyOpened
                                | ZoneState::ExplicitlyOpened
                                | ZoneState::Closed
                        )
                    })
                    .count();
                return Err(format!(
                    "zonemode=zbd: job '{}' starts with {open} zones of its range open or closed on the drive, more than its limit of {} (max_open_zones {max_write_zones}, job_max_open_zones {}): fio's \"Number of open zones exceeds max_open_zones limit\"; accepted: finish or reset those zones first (Drive.zone_manage), or limits that hold them",
                    job.job.name,
                    if o.job_max_open_zones > 0 { o.job_max_open_zones.min(max_write_zones) } else { max_write_zones },
                    o.job_max_open_zones
                ));
            }
            taken.push((z, i));
        }
    }
    Ok(taken)
}

fn check(o: &ZbdOptions, zone_bytes: u64, mor: u32) -> Result<(), String> {
    if o.zone_bytes != zone_bytes {
        return Err(format!(
            "zonesize: {} bytes, but the drive's zones are {zone_bytes} bytes; accepted: the drive's zone size",
            o.zone_bytes
        ));
    }
    if o.max_open_zones > mor && !o.ignore_zone_limits {
        return Err(format!(
            "max_open_zones: {} is above the drive's {mor} open zones; accepted: 0 to {mor}, or ignore_zone_limits=1",
            o.max_open_zones
        ));
    }
    Ok(())
}
