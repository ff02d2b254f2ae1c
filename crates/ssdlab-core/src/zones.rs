//! A Zoned Namespace's zones (NVMe Zoned Namespace Command Set 1.x): each zone's state and
//! write pointer, the open and active resources (MOR, MAR), and every check a write, a Zone
//! Append or a Zone Management Send makes before anything changes. The controller asks here
//! first ([`crate::device`]); a command refused here is a failed completion with its status
//! and changes nothing.
//!
//! The states and statuses are the specification's as `shared/reference/placement.md`
//! summarises them; where it is silent, QEMU's hw/nvme (`nvme_check_zone_write`,
//! `nvme_zrm_open_flags`, its automatic close of an implicitly opened zone) was read for
//! the order of the checks.
//!
//! A zone's data goes to the FTL's logical units `zone * capacity ..` (its capacity, not its
//! size: the units between capacity and size cannot be written and read as unwritten), through
//! a frontier slot of its own, which it takes when it becomes active and gives back when it is
//! no longer active. A slot given back may be taken by another zone at once: writes reach the
//! FTL in the order they were admitted, so the first zone's last units are written before the
//! next zone's first, and the FTL closes the first zone's blocks in between
//! ([`Zones::written`]).

use crate::config::ZoneGeometry;
use serde::Serialize;
use std::collections::VecDeque;

const NONE: u32 = u32::MAX;

/// A zone's state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ZoneState {
    Empty,
    ImplicitlyOpened,
    ExplicitlyOpened,
    Closed,
    Full,
    ReadOnly,
    Offline,
}

impl ZoneState {
    fn is_open(self) -> bool {
        matches!(
            self,
            ZoneState::ImplicitlyOpened | ZoneState::ExplicitlyOpened
        )
    }

    fn is_active(self) -> bool {
        self.is_open() || self == ZoneState::Closed
    }
}

/// A command's completion status.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    #[default]
    Success,
    /// A read that could not return all its data (see [`crate::faults`]).
    UnrecoveredReadError,
    /// A field of the command is not acceptable (a Zone Append not at a zone's start, a
    /// length not in whole mapping units, a TRIM on a zoned namespace).
    InvalidField,
    /// Beyond the namespace.
    LbaOutOfRange,
    /// A zone command to a conventional namespace.
    InvalidCommand,
    ZoneBoundaryError,
    ZoneIsFull,
    ZoneIsReadOnly,
    ZoneIsOffline,
    ZoneInvalidWrite,
    TooManyActiveZones,
    TooManyOpenZones,
    ZoneInvalidStateTransition,
}

impl Status {
    /// The status's name as the specification gives it.
    pub fn name(self) -> &'static str {
        match self {
            Status::Success => "Successful Completion",
            Status::UnrecoveredReadError => "Unrecovered Read Error",
            Status::InvalidField => "Invalid Field in Command",
            Status::LbaOutOfRange => "LBA Out of Range",
            Status::InvalidCommand => "Invalid Command Opcode",
            Status::ZoneBoundaryError => "Zone Boundary Error",
            Status::ZoneIsFull => "Zone Is Full",
            Status::ZoneIsReadOnly => "Zone Is Read Only",
            Status::ZoneIsOffline => "Zone Is Offline",
            Status::ZoneInvalidWrite => "Zone Invalid Write",
            Status::TooManyActiveZones => "Too Many Active Zones",
            Status::TooManyOpenZones => "Too Many Open Zones",
            Status::ZoneInvalidStateTransition => "Zone Invalid State Transition",
        }
    }
}

/// Zone Management Send's actions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ZoneAction {
    Open,
    Close,
    Finish,
    Reset,
}

/// One zone as Zone Management Receive (report zones) gives it, in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct ZoneDescriptor {
    pub zone: u32,
    pub state: ZoneState,
    pub start_bytes: u64,
    pub write_pointer_bytes: u64,
    pub capacity_bytes: u64,
    pub size_bytes: u64,
}

#[derive(Clone, Copy, Debug)]
struct Zone {
    state: ZoneState,
    /// Units written (admitted) from the zone's start.
    wp: u64,
    /// The frontier slot the zone writes through, or last wrote through (NONE: none yet).
    slot: u32,
}

/// A zone's use of a slot: units admitted and not yet written to the FTL, and whether the
/// zone has left the active states (its blocks close once the units are written).
#[derive(Clone, Copy, Debug)]
struct SlotUse {
    zone: u32,
    pending: u64,
    leaving: bool,
    /// A reset asked while units were pending: the FTL units to empty once they are written.
    reset: Option<(u32, u32)>,
}

/// A write admitted to a zone: where its data goes in the FTL and through which slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Admitted {
    /// The FTL's logical unit of the write's first unit.
    pub ftl_unit: u32,
    /// The zone's byte offset where the write starts (a Zone Append's result).
    pub offset_bytes: u64,
    pub slot: u32,
    /// The dies group the zone is striped over.
    pub group: u32,
}

/// What the FTL must do once a zone that left the active states has all its admitted units
/// written: close the blocks its slot has open on its group's dies, and for a reset, empty
/// its units and erase the blocks that held them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Released {
    /// The slot and dies group whose open blocks close (None: closed already).
    pub close: Option<(u32, u32)>,
    /// A reset: the FTL's units `[0, 1)` to empty.
    pub reset: Option<(u32, u32)>,
}

/// Counts of what the zones did, for a run's results.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ZoneCounters {
    pub resets: u64,
    pub finishes: u64,
    pub implicit_closes: u64,
    pub appends: u64,
    /// Commands refused, by any zone status.
    pub refused: u64,
}

/// The zoned namespace's zones.
pub struct Zones {
    pub geometry: ZoneGeometry,
    unit_bytes: u64,
    dies: u32,
    zones: Vec<Zone>,
    open: u32,
    active: u32,
    /// Implicitly opened zones, oldest first: the one closed to make room when a write needs
    /// one more open zone than MOR.
    implicit: VecDeque<u32>,
    free_slots: Vec<u32>,
    /// Per slot: the zones using it, oldest first (the last is the active one, unless it is
    /// leaving too); one whose units are all written and which has left goes.
    uses: Vec<VecDeque<SlotUse>>,
    pub counters: ZoneCounters,
}

impl Zones {
    pub fn new(geometry: ZoneGeometry, unit_bytes: u64, dies: u32) -> Zones {
        let slots = geometry.max_active;
        Zones {
            geometry,
            unit_bytes,
            dies,
            zones: vec![
                Zone {
                    state: ZoneState::Empty,
                    wp: 0,
                    slot: NONE,
                };
                geometry.zones as usize
            ],
            open: 0,
            active: 0,
            implicit: VecDeque::new(),
            free_slots: (0..slots).rev().collect(),
            uses: vec![VecDeque::new(); slots as usize],
            counters: ZoneCounters::default(),
        }
    }

    /// A command refused by the controller's own checks (a TRIM or read out of range).
    pub fn refused(&mut self) {
        self.counters.refused += 1;
    }

    /// Frontier slots the FTL keeps for zones a die (MAR).
    pub fn slots(&self) -> u32 {
        self.geometry.max_active
    }

    /// The namespace's size in bytes: every zone's whole size.
    pub fn namespace_bytes(&self) -> u64 {
        self.geometry.zones as u64 * self.geometry.size_units * self.unit_bytes
    }

    /// The mapping unit's bytes (a zoned write's granule).
    pub fn unit_bytes(&self) -> u64 {
        self.unit_bytes
    }

    pub fn zone_bytes(&self) -> u64 {
        self.geometry.size_units * self.unit_bytes
    }

    /// The zone holding byte `offset` (None beyond the namespace).
    pub fn zone_of(&self, offset: u64) -> Option<u32> {
        let z = offset / self.zone_bytes();
        (z < self.geometry.zones as u64).then_some(z as u32)
    }

    fn group(&self, z: u32) -> u32 {
        self.geometry.group_of(z, self.dies)
    }

    /// The FTL's logical units a read of `offset..offset + length` covers: the part below
    /// the zone's capacity (what lies between capacity and size reads as unwritten). Reads may
    /// not cross a zone's end.
    pub fn read_units(&self, offset: u64, length: u64) -> Result<(u32, u32), Status> {
        let Some(z) = self.zone_of(offset) else {
            return Err(Status::LbaOutOfRange);
        };
        let start = z as u64 * self.zone_bytes();
        if offset + length > start + self.zone_bytes() {
            return Err(Status::ZoneBoundaryError);
        }
        if self.zones[z as usize].state == ZoneState::Offline {
            return Err(Status::ZoneIsOffline);
        }
        let cap = self.geometry.capacity_units;
        let first = ((offset - start) / self.unit_bytes).min(cap);
        let end = (offset + length - start).div_ceil(self.unit_bytes).min(cap);
        let base = z as u64 * cap;
        Ok(((base + first) as u32, (base + end) as u32))
    }

    /// Check a write of `length` bytes at `offset` (a Zone Append: to the zone starting at
    /// `offset`) and admit it: the write pointer moves past it, the zone opens (implicitly)
    /// or becomes full. Nothing changes when it is refused.
    pub fn admit_write(
        &mut self,
        offset: u64,
        length: u64,
        append: bool,
    ) -> Result<Admitted, Status> {
        let r = self.try_admit(offset, length, append);
        if r.is_err() {
            self.counters.refused += 1;
        } else if append {
            self.counters.appends += 1;
        }
        r
    }

    fn try_admit(&mut self, offset: u64, length: u64, append: bool) -> Result<Admitted, Status> {
        let u = self.unit_bytes;
        let Some(z) = self.zone_of(offset) else {
            return Err(Status::LbaOutOfRange);
        };
        if length == 0 || !offset.is_multiple_of(u) || !length.is_multiple_of(u) {
            return Err(Status::InvalidField);
        }
        let zone = self.zones[z as usize];
        match zone.state {
            ZoneState::Full => return Err(Status::ZoneIsFull),
            ZoneState::ReadOnly => return Err(Status::ZoneIsReadOnly),
            ZoneState::Offline => return Err(Status::ZoneIsOffline),
            _ => {}
        }
        let start = z as u64 * self.zone_bytes();
        let at = (offset - start) / u;
        if append && at != 0 {
            return Err(Status::InvalidField);
        }
        if !append && at != zone.wp {
            return Err(Status::ZoneInvalidWrite);
        }
        let units = length / u;
        if zone.wp + units > self.geometry.capacity_units {
            return Err(Status::ZoneBoundaryError);
        }
        if !zone.state.is_open() {
            self.open_zone(z, false)?;
        }
        let zone = &mut self.zones[z as usize];
        let first = zone.wp;
        zone.wp += units;
        let slot = zone.slot;
        self.uses[slot as usize]
            .back_mut()
            .expect("an active zone uses its slot")
            .pending += units;
        if self.zones[z as usize].wp == self.geometry.capacity_units {
            self.leave_active(z, ZoneState::Full);
        }
        Ok(Admitted {
            ftl_unit: (z as u64 * self.geometry.capacity_units + first) as u32,
            offset_bytes: start + first * u,
            slot,
            group: self.group(z),
        })
    }

    /// Open zone `z` (Empty or Closed; `explicit`: by Zone Management Send, else by a write),
    /// taking an active resource if it had none and an open one, an implicitly opened zone
    /// closed to make room if MOR is reached.
    fn open_zone(&mut self, z: u32, explicit: bool) -> Result<(), Status> {
        let state = self.zones[z as usize].state;
        debug_assert!(matches!(
            state,
            ZoneState::Empty | ZoneState::Closed | ZoneState::ImplicitlyOpened
        ));
        let needs_active = state == ZoneState::Empty;
        let needs_open = !state.is_open();
        if needs_active && self.active >= self.geometry.max_active {
            return Err(Status::TooManyActiveZones);
        }
        if needs_open && self.open >= self.geometry.max_open {
            let Some(victim) = self.implicit.pop_front() else {
                return Err(Status::TooManyOpenZones);
            };
            debug_assert_eq!(
                self.zones[victim as usize].state,
                ZoneState::ImplicitlyOpened
            );
            self.zones[victim as usize].state = ZoneState::Closed;
            self.open -= 1;
            self.counters.implicit_closes += 1;
        }
        if needs_active {
            let slot = self
                .free_slots
                .pop()
                .expect("a free slot for every active zone");
            self.uses[slot as usize].push_back(SlotUse {
                zone: z,
                pending: 0,
                leaving: false,
                reset: None,
            });
            self.zones[z as usize].slot = slot;
            self.active += 1;
        }
        if needs_open {
            self.open += 1;
        }
        if state == ZoneState::ImplicitlyOpened {
            self.implicit.retain(|&q| q != z);
        }
        self.zones[z as usize].state = if explicit {
            ZoneState::ExplicitlyOpened
        } else {
            self.implicit.push_back(z);
            ZoneState::ImplicitlyOpened
        };
        Ok(())
    }

    /// Zone `z` leaves the open and active states for `to` (Full or Empty); its slot drains.
    fn leave_active(&mut self, z: u32, to: ZoneState) {
        let zone = self.zones[z as usize];
        if zone.state.is_open() {
            self.open -= 1;
        }
        if zone.state == ZoneState::ImplicitlyOpened {
            self.implicit.retain(|&q| q != z);
        }
        if zone.state.is_active() {
            self.active -= 1;
            let slot = zone.slot;
            self.uses[slot as usize]
                .back_mut()
                .expect("an active zone uses its slot")
                .leaving = true;
            self.free_slots.push(slot);
        }
        self.zones[z as usize].state = to;
    }

    /// `units` admitted through `slot` reached the FTL. When the slot's zone is no longer
    /// active and nothing more is pending, the slot goes back and the FTL closes its frontier.
    pub fn written(&mut self, slot: u32, units: u64) -> Vec<Released> {
        let first = self.uses[slot as usize]
            .front_mut()
            .expect("units written through a slot in use");
        first.pending -= units;
        self.release_if_drained(slot)
    }

    /// The zones that left `slot` with all their units written stop using it, oldest first.
    fn release_if_drained(&mut self, slot: u32) -> Vec<Released> {
        let mut released = Vec::new();
        while let Some(u) = self.uses[slot as usize]
            .front()
            .copied()
            .filter(|u| u.leaving && u.pending == 0)
        {
            self.uses[slot as usize].pop_front();
            released.push(Released {
                close: Some((slot, self.geometry.group_of(u.zone, self.dies))),
                reset: u.reset,
            });
        }
        released
    }

    /// Units admitted to zone `z` that have not reached the FTL yet.
    pub fn pending_in(&self, z: u32) -> u64 {
        match self.zones[z as usize].slot {
            NONE => 0,
            s => self.uses[s as usize]
                .iter()
                .filter(|u| u.zone == z)
                .map(|u| u.pending)
                .sum(),
        }
    }

    /// Zone Management Send to zone `z`. On success, what the FTL must do now (a finished or
    /// reset zone whose admitted units are all written: its blocks closed, a reset's units
    /// emptied); what must wait for units still on their way comes from [`Zones::written`].
    pub fn manage(&mut self, z: u32, action: ZoneAction) -> Result<Vec<Released>, Status> {
        let r = self.try_manage(z, action);
        if r.is_err() {
            self.counters.refused += 1;
        }
        r
    }

    fn try_manage(&mut self, z: u32, action: ZoneAction) -> Result<Vec<Released>, Status> {
        use ZoneState::*;
        if z >= self.geometry.zones {
            return Err(Status::LbaOutOfRange);
        }
        let state = self.zones[z as usize].state;
        match state {
            ReadOnly => return Err(Status::ZoneIsReadOnly),
            Offline => return Err(Status::ZoneIsOffline),
            _ => {}
        }
        let (mut slot, mut released) = (NONE, Vec::new());
        match action {
            ZoneAction::Open => match state {
                ExplicitlyOpened => {}
                Empty | Closed | ImplicitlyOpened => self.open_zone(z, true)?,
                _ => return Err(Status::ZoneInvalidStateTransition),
            },
            ZoneAction::Close => match state {
                Closed => {}
                ImplicitlyOpened | ExplicitlyOpened => {
                    self.open -= 1;
                    self.implicit.retain(|&q| q != z);
                    self.zones[z as usize].state = Closed;
                }
                _ => return Err(Status::ZoneInvalidStateTransition),
            },
            ZoneAction::Finish => match state {
                Full => {}
                Empty | ImplicitlyOpened | ExplicitlyOpened | Closed => {
                    if state.is_active() {
                        slot = self.zones[z as usize].slot;
                    }
                    self.leave_active(z, Full);
                    self.zones[z as usize].wp = self.geometry.capacity_units;
                    self.counters.finishes += 1;
                }
                _ => return Err(Status::ZoneInvalidStateTransition),
            },
            ZoneAction::Reset => {
                if state != Empty {
                    // Every unit below the write pointer (a finished zone's is at its capacity:
                    // units never written are unmapped, and emptying them is nothing).
                    let base = z as u64 * self.geometry.capacity_units;
                    let wp = self.zones[z as usize].wp;
                    let units = (base as u32, (base + wp) as u32);
                    let last = self.zones[z as usize].slot;
                    if state.is_active() {
                        slot = last;
                    }
                    self.leave_active(z, Empty);
                    self.zones[z as usize].wp = 0;
                    // The units go once every unit admitted to the zone is written: with its
                    // use of the slot, or now if that has gone.
                    let mine = (last != NONE)
                        .then(|| {
                            self.uses[last as usize]
                                .iter_mut()
                                .find(|u| u.zone == z && u.leaving && u.reset.is_none())
                        })
                        .flatten();
                    match mine {
                        Some(u) => {
                            u.reset = Some(units);
                            slot = last;
                        }
                        None => released.push(Released {
                            close: None,
                            reset: Some(units),
                        }),
                    }
                }
                self.counters.resets += 1;
            }
        }
        if slot != NONE {
            let mut r = self.release_if_drained(slot);
            r.append(&mut released);
            released = r;
        }
        Ok(released)
    }

    /// Zone Management Receive: the zones from `first` on, at most `count`.
    pub fn report(&self, first: u32, count: u32) -> Vec<ZoneDescriptor> {
        (first..self.geometry.zones.min(first.saturating_add(count)))
            .map(|z| self.zone(z))
            .collect()
    }

    /// Zone `z` (below the zone count) as a report gives it.
    pub fn zone(&self, z: u32) -> ZoneDescriptor {
        let u = self.unit_bytes;
        let zone = self.zones[z as usize];
        let start = z as u64 * self.zone_bytes();
        ZoneDescriptor {
            zone: z,
            state: zone.state,
            start_bytes: start,
            write_pointer_bytes: start + zone.wp * u,
            capacity_bytes: self.geometry.capacity_units * u,
            size_bytes: self.zone_bytes(),
        }
    }

    /// Zones in each state, in [`ZoneState`]'s order.
    pub fn state_counts(&self) -> [u32; 7] {
        let mut n = [0; 7];
        for z in &self.zones {
            n[z.state as usize] += 1;
        }
        n
    }

    /// Zones open and active now.
    pub fn open_and_active(&self) -> (u32, u32) {
        (self.open, self.active)
    }

    /// Power-on: the zones keep their state and write pointers (the write pointer of a zone
    /// is as far as its data reached the NAND; a drive with power-loss protection keeps all
    /// of it); open zones become closed, as the specification has a controller reset do.
    pub fn power_on(&mut self) {
        for z in 0..self.zones.len() {
            if self.zones[z].state.is_open() {
                self.zones[z].state = ZoneState::Closed;
            }
        }
        self.open = 0;
        self.implicit.clear();
        for q in &mut self.uses {
            q.retain(|u| !u.leaving);
            if let Some(u) = q.back_mut() {
                u.pending = 0;
            }
        }
    }

    /// Secure erase (format): every zone empty.
    pub fn format(&mut self) {
        *self = Zones::new(self.geometry, self.unit_bytes, self.dies);
    }
}

#[cfg(test)]
mod tests;
