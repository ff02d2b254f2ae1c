//! The controller's part of a zoned namespace: the zones take a command before anything else
//! ([`crate::zones`]), and what a zoned write's reaching the FTL asks of it.

use super::{Backend, Controller, Slot, NO_ZONE};
use crate::device::scheduler::Flash;
use crate::device::{HostIo, IoKind};
use crate::ftl::Ftl;
use crate::zones::{Status, Zones};

impl Controller {
    /// `submit` on a zoned namespace: the zones take the command first (and refuse it, or
    /// translate it to the FTL's units and a frontier slot); a Zone Append to a conventional
    /// namespace is refused.
    #[cold]
    #[inline(never)]
    pub(super) fn submit_zoned(&mut self, mut io: HostIo, looked_ahead: bool, b: &mut Backend) {
        let refused = |s| ((0, 0), (s, NO_ZONE, 0));
        let (units, zone) = match self.zones.as_mut() {
            None => refused(Status::InvalidCommand),
            Some(zones) => match zone_admit(zones, &mut io) {
                // MAR and the dies' groups are below 2^16 (`ZoneGeometry`).
                Ok(Some((f, e, slot, group))) => {
                    ((f, e), (Status::Success, slot as u16, group as u16))
                }
                Ok(None) => (self.units_of(&io), (Status::Success, NO_ZONE, 0)),
                Err(s) => refused(s),
            },
        };
        self.take_slot(io, units, zone, looked_ahead, b);
    }
}

/// `written` units of a zoned write reached the FTL (through its slot, `Ftl::select_zone`):
/// the slot's next die is kept, and the zones that left the slot with all their units written
/// close their blocks (and a reset's erases go).
#[cold]
#[inline(never)]
pub(super) fn zone_written(
    zones: Option<&mut Zones>,
    ftl: &mut Ftl,
    flash: &mut Flash,
    s: &Slot,
    written: u32,
) {
    let slot = s.zone_slot as u32;
    ftl.zone_wrote(slot);
    let zones = zones.expect("a zoned write");
    for r in zones.written(slot, written as u64) {
        ftl.zone_release(r.close, r.reset, flash);
    }
}

/// A host command as the zoned namespace takes it: a read or write translated to the
/// FTL's units `(first, end)` with a write's slot and group (a Zone Append's
/// `offset_bytes` becomes where it went); `Ok(None)` for a FLUSH; the status refusing it
/// otherwise. A TRIM (Dataset Management's deallocate, advisory) does nothing: zones are
/// emptied by reset.
fn zone_admit(zones: &mut Zones, io: &mut HostIo) -> Result<Option<(u32, u32, u32, u32)>, Status> {
    match io.kind {
        IoKind::Flush => Ok(None),
        IoKind::Trim => match zones.zone_of(io.offset_bytes) {
            Some(_) => Ok(Some((0, 0, u32::MAX, 0))),
            None => {
                zones.refused();
                Err(Status::LbaOutOfRange)
            }
        },
        IoKind::Read => {
            let r = zones.read_units(io.offset_bytes, io.length_bytes);
            if r.is_err() {
                zones.refused();
            }
            let (first, end) = r?;
            Ok(Some((first, end, u32::MAX, 0)))
        }
        IoKind::Write | IoKind::ZoneAppend => {
            let append = io.kind == IoKind::ZoneAppend;
            let a = zones.admit_write(io.offset_bytes, io.length_bytes, append)?;
            io.offset_bytes = a.offset_bytes;
            let units = (io.length_bytes / zones.unit_bytes()) as u32;
            Ok(Some((a.ftl_unit, a.ftl_unit + units, a.slot, a.group)))
        }
    }
}
