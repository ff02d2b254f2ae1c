//! Host-directed placement: NVMe Flexible Data Placement (TP4146; the semantics as
//! `shared/reference/placement.md` gives them, after Allison et al., EuroSys '25, 3.2-3.5).
//!
//! A write carries a placement identifier (PID): a reclaim group (RG) in its top RGIF bits and
//! a placement handle below, which the namespace's list maps to a reclaim unit handle (RUH).
//! Each RUH is a host [`Stream`] of its own: its data goes to its own open block on every die
//! of the group, program unit by program unit in die order, so its reclaim unit (RU) is its
//! `reclaim_unit_blocks` blocks on every die of the group, filled together. When the RU is
//! full the handle takes a new one (Implicitly Modified RUH); the host may move it to a new
//! one first (RUH Update: the open blocks close where they are, RU Not Fully Written).
//!
//! Garbage collection keeps each type's promise: a victim holding a persistently isolated
//! handle's data is copied into that handle's own collector stream (units holding nothing
//! else), any other victim into the shared one (initially isolated data may mix there).
//! Every block remembers whose data it holds ([`Placement::owner`]).
//!
//! The statistics log (host and media bytes written, media bytes erased) is kept per handle;
//! the drive's own is the FTL's counters (`Ftl::fdp_statistics`). A handle's media bytes are
//! its host units placed and the copies made of its data; copies out of shared units are the
//! shared row's.
//!
//! Not kept across a power cycle: after power-on every handle starts a new RU (the
//! Controller-Level Reset Modified RUHs event) and the blocks' owners are forgotten (their
//! data collects into shared units).

use super::{Ftl, NandSink, Stream, NONE};
use crate::config::{Geometry, PlacementConfig, RuhType};
use std::collections::VecDeque;

/// A write without a placement directive: the namespace's placement handle 0 in group 0.
pub const NO_PLACEMENT: u16 = u16::MAX;

/// A block whose owner is the shared collector stream (or unknown).
const SHARED: u16 = u16::MAX;

/// The events log keeps the latest this many (the log page's 63 entries).
const EVENTS_KEPT: usize = 63;

/// An FDP event (the events log page's types).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FdpEventKind {
    /// Host event: the host moved a handle to a new RU before its RU was full.
    RuNotFullyWritten,
    /// Host event: a write named a PID outside the namespace's list (it was placed by default).
    InvalidPlacementIdentifier,
    /// Host event: a power cycle moved every handle to a new RU.
    ControllerResetModifiedRuhs,
    /// Controller event: data of the handle moved after a program failure.
    MediaReallocated,
    /// Controller event: the handle's RU filled and it took a new one.
    ImplicitlyModifiedRuh,
}

/// One event of the events log.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct FdpEvent {
    pub kind: FdpEventKind,
    /// The placement identifier the event concerns (as the host gave it for an invalid one).
    pub pid: u16,
    pub reclaim_unit_handle: u16,
    pub reclaim_group: u16,
    /// Host units the drive had written when it happened (an order).
    pub host_units_written: u64,
    /// When it happened: simulated ns since the drive last powered on (the log's timestamp).
    pub at_ns: u64,
}

/// One reclaim unit handle's counts, in mapping units and blocks.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Counts {
    host_units: u64,
    /// Its host units placed and the copies made of its data by collection.
    media_units: u64,
    blocks_erased: u64,
    reclaim_units: u64,
}

/// One reclaim unit handle's statistics log.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct HandleStatistics {
    /// HBMW: host bytes written through the handle.
    pub host_bytes_written: u64,
    /// MBMW: media bytes the handle's data took: its host data placed and the copies
    /// collection made of it.
    pub media_bytes_written: u64,
    /// MBE: media bytes of its blocks erased.
    pub media_bytes_erased: u64,
    /// Media / host bytes written (0 before any write).
    pub write_amplification: f64,
    /// RUs it has taken (its first included).
    pub reclaim_units: u64,
}

impl Counts {
    fn statistics(&self, g: &Geometry) -> HandleStatistics {
        let unit = g.mapping_unit_bytes as u64;
        HandleStatistics {
            host_bytes_written: self.host_units * unit,
            media_bytes_written: self.media_units * unit,
            media_bytes_erased: self.blocks_erased * g.units_per_block as u64 * unit,
            write_amplification: if self.host_units == 0 {
                0.0
            } else {
                self.media_units as f64 / self.host_units as f64
            },
            reclaim_units: self.reclaim_units,
        }
    }
}

/// One placement handle's RUH status (I/O Management Receive, RUH Status).
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct RuhStatus {
    pub pid: u16,
    pub reclaim_unit_handle: u16,
    pub reclaim_group: u16,
    /// RUAMW: bytes the handle's current RU can still take.
    pub available_media_bytes: u64,
}

/// What a result reports of placement: FDP's logs.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct PlacementReport {
    /// The statistics log of the drive as a whole.
    pub statistics: MediaStatistics,
    /// Per reclaim unit handle, in handle order.
    pub handles: Vec<HandleStatistics>,
    /// Copies made out of shared units (initially isolated data mixed by collection).
    pub shared: HandleStatistics,
    pub ruh_status: Vec<RuhStatus>,
    /// The latest events, oldest first, and how many of each kind there were in all.
    pub events: Vec<FdpEvent>,
    pub event_counts: Vec<(FdpEventKind, u64)>,
}

pub(super) struct Placement {
    /// The simulated time the FTL last noted (ns since power-on): the events' timestamp.
    now_ns: u64,
    types: Vec<RuhType>,
    /// The namespace's placement handles: the RUH each names.
    handles: Vec<u32>,
    groups: u32,
    pub dies_per_group: u32,
    /// A PID's placement handle is its low `ph_bits`; the group, the bits above.
    ph_bits: u32,
    units_per_ru: u64,
    /// Per group and RUH (`rg * nruh + ruh`): data units programmed into its current RU, and
    /// the die its next program unit goes to.
    ru_written: Vec<u64>,
    pub next_die: Vec<u32>,
    /// `rg * nruh + ruh` of the FTL's current host stream.
    pub current: u32,
    /// Per block: the RUH whose data it holds, or SHARED.
    owner: Vec<u16>,
    stats: Vec<Counts>,
    shared: Counts,
    events: VecDeque<FdpEvent>,
    event_counts: [u64; 5],
}

impl Placement {
    pub fn new(cfg: &PlacementConfig, g: &Geometry) -> Placement {
        let nruh = cfg.handles.len() as u32;
        let groups = cfg.reclaim_groups;
        let dies_per_group = g.dies / groups;
        let rgif = if groups > 1 {
            32 - (groups - 1).leading_zeros()
        } else {
            0
        };
        Placement {
            now_ns: 0,
            types: cfg.handles.clone(),
            handles: cfg.placement_handles(),
            groups,
            dies_per_group,
            ph_bits: 16 - rgif,
            units_per_ru: cfg.reclaim_unit_blocks as u64
                * dies_per_group as u64
                * g.data_units_per_block as u64,
            ru_written: vec![0; (groups * nruh) as usize],
            next_die: (0..groups * nruh)
                .map(|k| k / nruh * dies_per_group)
                .collect(),
            current: 0,
            owner: vec![SHARED; (g.dies * g.blocks_per_die) as usize],
            stats: (0..nruh)
                .map(|_| Counts {
                    reclaim_units: groups as u64,
                    ..Counts::default()
                })
                .collect(),
            shared: Counts::default(),
            events: VecDeque::new(),
            event_counts: [0; 5],
        }
    }

    fn nruh(&self) -> u32 {
        self.types.len() as u32
    }

    /// The (group, RUH) a write's PID names; an invalid one is logged and placed by default.
    fn resolve(&mut self, pid: u16, host_units_written: u64) -> (u32, u32) {
        if pid == NO_PLACEMENT {
            return (0, self.handles[0]);
        }
        let rg = if self.ph_bits < 16 {
            (pid >> self.ph_bits) as u32
        } else {
            0
        };
        let ph = (pid as u32) & ((1u32 << self.ph_bits) - 1);
        if rg >= self.groups || ph as usize >= self.handles.len() {
            self.log(FdpEvent {
                kind: FdpEventKind::InvalidPlacementIdentifier,
                pid,
                reclaim_unit_handle: self.handles[0] as u16,
                reclaim_group: 0,
                host_units_written,
                at_ns: 0,
            });
            return (0, self.handles[0]);
        }
        (rg, self.handles[ph as usize])
    }

    fn pid_of(&self, rg: u32, ruh: u32) -> u16 {
        let ph = self.handles.iter().position(|&h| h == ruh).unwrap_or(0) as u32;
        ((rg << self.ph_bits) | ph) as u16
    }

    /// Log `e`, stamped with the time the FTL last noted (`now_ns`).
    fn log(&mut self, mut e: FdpEvent) {
        e.at_ns = self.now_ns;
        self.event_counts[e.kind as usize] += 1;
        if self.events.len() == EVENTS_KEPT {
            self.events.pop_front();
        }
        self.events.push_back(e);
    }

    /// `block` opened for `stream`: whose data it holds.
    #[inline]
    pub fn opened(&mut self, block: u32, stream: Stream) {
        self.owner[block as usize] = match stream {
            Stream::Host(h) => h,
            Stream::Gc(0) => SHARED,
            Stream::Gc(g) => g - 1,
        };
    }

    /// Where collection copies `block`'s data: its handle's own stream if that handle is
    /// persistently isolated, else the shared one.
    #[inline]
    pub fn gc_stream(&self, block: u32) -> Stream {
        match self.owner[block as usize] {
            SHARED => Stream::GC,
            h if self.types[h as usize] == RuhType::PersistentlyIsolated => Stream::Gc(h + 1),
            _ => Stream::GC,
        }
    }

    fn stats_of(&mut self, block: u32) -> &mut Counts {
        match self.owner[block as usize] {
            SHARED => &mut self.shared,
            h => &mut self.stats[h as usize],
        }
    }

    /// `units` of `block`'s data were copied by collection.
    #[inline]
    pub fn copied(&mut self, block: u32, units: u32) {
        self.stats_of(block).media_units += units as u64;
    }

    /// `block` was erased.
    pub fn erased(&mut self, block: u32) {
        self.stats_of(block).blocks_erased += 1;
    }

    /// Whose data `block` holds: the RUH, or None for shared units.
    pub fn owner(&self, block: u32) -> Option<u16> {
        let o = self.owner[block as usize];
        (o != SHARED).then_some(o)
    }
}

impl Ftl {
    /// Set up placement as `cfg` says (a validated drive's `[placement]`); before any write.
    pub fn set_placement(&mut self, cfg: &PlacementConfig) {
        let p = Placement::new(cfg, &self.geometry);
        let handles = p.nruh();
        self.dies_per_group = p.dies_per_group;
        self.frontiers = super::frontier::Frontiers::new(&self.geometry, handles);
        self.hold = super::hold::EraseHold::new(
            (self.geometry.dies * self.geometry.blocks_per_die) as usize,
            self.geometry.dies as usize,
            handles as usize,
        );
        self.host_stream = Stream::Host(0);
        self.host_die = 0;
        self.placement = Some(Box::new(p));
    }

    /// Whether the drive has placement.
    pub fn has_placement(&self) -> bool {
        self.placement.is_some()
    }

    /// The host stream and die for a write carrying `pid`: the FTL's current ones become that
    /// handle's.
    pub(super) fn select_handle(&mut self, pid: u16, now_ns: u64) {
        let written = self.counters.host_units_written;
        let Some(p) = self.placement.as_mut() else {
            return;
        };
        p.now_ns = now_ns;
        let (rg, ruh) = p.resolve(pid, written);
        let k = rg * p.nruh() + ruh;
        if k != p.current {
            p.next_die[p.current as usize] = self.host_die;
            p.current = k;
            self.host_die = p.next_die[k as usize];
            self.host_stream = Stream::Host(ruh as u16);
        }
    }

    /// `count` host units were written through the current handle.
    pub(super) fn handle_wrote(&mut self, count: u32) {
        if let Some(p) = self.placement.as_mut() {
            let Stream::Host(h) = self.host_stream else {
                unreachable!("the host stream is a host's")
            };
            let s = &mut p.stats[h as usize];
            s.host_units += count as u64;
            s.media_units += count as u64;
        }
    }

    /// A PU of host stream `stream` on `die` was programmed: the stream's next PU goes to the
    /// next die of its group, and its RU counts the PU's data units (a full RU makes way for
    /// a new one).
    pub(super) fn host_pu_programmed<S: NandSink>(&mut self, die: u32, stream: Stream, sink: &S) {
        let next = self.next_host_die_for(die, sink);
        if self.placement.is_none() {
            match stream {
                Stream::Host(slot) if self.zoned.is_some() => self.zone_pu_programmed(slot, next),
                _ => self.host_die = next,
            }
            return;
        }
        let written = self.counters.host_units_written;
        let data_units = self.geometry.units_per_pu as u64;
        let p = self.placement.as_mut().expect("placement");
        p.now_ns = sink.now_ns();
        let Stream::Host(h) = stream else {
            unreachable!("a host stream")
        };
        let rg = die / p.dies_per_group;
        let k = (rg * p.nruh() + h as u32) as usize;
        if k as u32 == p.current {
            self.host_die = next;
        } else {
            p.next_die[k] = next;
        }
        p.ru_written[k] += data_units;
        if p.ru_written[k] >= p.units_per_ru {
            p.ru_written[k] = 0;
            p.stats[h as usize].reclaim_units += 1;
            let pid = p.pid_of(rg, h as u32);
            p.log(FdpEvent {
                kind: FdpEventKind::ImplicitlyModifiedRuh,
                pid,
                reclaim_unit_handle: h,
                reclaim_group: rg as u16,
                host_units_written: written,
                at_ns: 0,
            });
        }
    }

    /// I/O Management Send, RUH Update: the handle `pid` names moves to a new RU. Its open
    /// blocks on the group's dies are closed where they are (their partial PUs programmed,
    /// padded); if its RU had been written but not filled, RU Not Fully Written is logged.
    /// Without placement, nothing.
    pub fn ruh_update<S: NandSink>(&mut self, pid: u16, sink: &mut S) {
        let written = self.counters.host_units_written;
        let Some(p) = self.placement.as_mut() else {
            return;
        };
        p.now_ns = sink.now_ns();
        let (rg, ruh) = p.resolve(pid, written);
        let k = (rg * p.nruh() + ruh) as usize;
        let dies = rg * p.dies_per_group..(rg + 1) * p.dies_per_group;
        let stream = Stream::Host(ruh as u16);
        for die in dies.clone() {
            self.program_padded(die, stream, sink);
            let ob = *self.frontiers.get(die, stream);
            if ob.block != NONE && self.frontiers.abandon(die, stream, ob.block) {
                self.seal(ob.block);
            }
        }
        let p = self.placement.as_mut().expect("placement");
        if p.ru_written[k] > 0 {
            let pid = p.pid_of(rg, ruh);
            p.log(FdpEvent {
                kind: FdpEventKind::RuNotFullyWritten,
                pid,
                reclaim_unit_handle: ruh as u16,
                reclaim_group: rg as u16,
                host_units_written: written,
                at_ns: 0,
            });
            p.ru_written[k] = 0;
            p.stats[ruh as usize].reclaim_units += 1;
        }
        if k as u32 == p.current {
            self.host_die = dies.start;
        } else {
            p.next_die[k] = dies.start;
        }
    }

    /// A program of `block` failed and its data moved: Media Reallocated, for its handle.
    pub(super) fn placement_media_reallocated(&mut self, block: u32, now_ns: u64) {
        let written = self.counters.host_units_written;
        let die = self.div.blocks_per_die.quotient(block);
        if let Some(p) = self.placement.as_mut() {
            p.now_ns = now_ns;
            let ruh = p.owner(block).unwrap_or(p.handles[0] as u16);
            let rg = die / p.dies_per_group;
            let pid = p.pid_of(rg, ruh as u32);
            p.log(FdpEvent {
                kind: FdpEventKind::MediaReallocated,
                pid,
                reclaim_unit_handle: ruh,
                reclaim_group: rg as u16,
                host_units_written: written,
                at_ns: 0,
            });
        }
    }

    /// Power-on (`logged`: the Controller-Level Reset Modified RUHs event) or secure erase:
    /// every handle starts a new RU.
    pub(super) fn placement_reset(&mut self, logged: bool) {
        let written = self.counters.host_units_written;
        if let Some(p) = self.placement.as_mut() {
            p.now_ns = 0; // power-on: the clock starts again
            let nruh = p.nruh();
            p.ru_written.fill(0);
            p.owner.fill(SHARED);
            for k in 0..p.next_die.len() as u32 {
                p.next_die[k as usize] = k / nruh * p.dies_per_group;
            }
            p.current = 0;
            if !logged {
                self.host_stream = Stream::HOST;
                return;
            }
            p.log(FdpEvent {
                kind: FdpEventKind::ControllerResetModifiedRuhs,
                pid: NO_PLACEMENT,
                reclaim_unit_handle: 0,
                reclaim_group: 0,
                host_units_written: written,
                at_ns: 0,
            });
        }
        self.host_stream = Stream::HOST;
    }

    /// The placement report: statistics per handle, RUH status, events. None without
    /// placement.
    pub fn placement_report(&self) -> Option<PlacementReport> {
        let p = self.placement.as_ref()?;
        let nruh = p.nruh();
        let mut ruh_status = Vec::new();
        for rg in 0..p.groups {
            for &ruh in &p.handles {
                let k = (rg * nruh + ruh) as usize;
                let open: u64 = (rg * p.dies_per_group..(rg + 1) * p.dies_per_group)
                    .map(|d| self.frontiers.get(d, Stream::Host(ruh as u16)).fill as u64)
                    .sum();
                ruh_status.push(RuhStatus {
                    pid: p.pid_of(rg, ruh),
                    reclaim_unit_handle: ruh as u16,
                    reclaim_group: rg as u16,
                    available_media_bytes: p.units_per_ru.saturating_sub(p.ru_written[k] + open)
                        * self.geometry.mapping_unit_bytes as u64,
                });
            }
        }
        const KINDS: [FdpEventKind; 5] = [
            FdpEventKind::RuNotFullyWritten,
            FdpEventKind::InvalidPlacementIdentifier,
            FdpEventKind::ControllerResetModifiedRuhs,
            FdpEventKind::MediaReallocated,
            FdpEventKind::ImplicitlyModifiedRuh,
        ];
        let g = &self.geometry;
        Some(PlacementReport {
            statistics: self.media_statistics(),
            handles: p.stats.iter().map(|c| c.statistics(g)).collect(),
            shared: p.shared.statistics(g),
            ruh_status,
            events: p.events.iter().copied().collect(),
            event_counts: KINDS
                .iter()
                .map(|&k| (k, p.event_counts[k as usize]))
                .collect(),
        })
    }

    /// The placement identifiers the host can name (the RUH status list's length): every
    /// placement handle of every group; 0 without placement.
    pub fn placement_ids(&self) -> u32 {
        self.placement
            .as_ref()
            .map_or(0, |p| p.groups * p.handles.len() as u32)
    }

    /// The placement identifier at `index` of the RUH status list (fio's placement ID
    /// index); past its end, the index itself (the write then names an invalid PID, which the
    /// drive logs and places by default).
    pub fn placement_id(&self, index: u16) -> u16 {
        match self.placement.as_ref() {
            Some(p) if (index as u32) < p.groups * p.handles.len() as u32 => {
                let nph = p.handles.len() as u32;
                let (rg, ph) = (index as u32 / nph, index as u32 % nph);
                ((rg << p.ph_bits) | ph) as u16
            }
            _ => index,
        }
    }

    /// Whose data `block` holds (placement only): the RUH, or None for shared units.
    pub fn block_owner(&self, block: u32) -> Option<u16> {
        self.placement.as_ref().and_then(|p| p.owner(block))
    }
}

/// The statistics log's drive-wide figures (HBMW, MBMW, MBE), in bytes, for every drive:
/// media bytes are everything programmed (host, copies, padding, parity, metadata).
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct MediaStatistics {
    pub host_bytes_written: u64,
    pub media_bytes_written: u64,
    pub media_bytes_erased: u64,
    /// Device-level write amplification: media / host bytes written (0 before any write).
    pub write_amplification: f64,
}

impl Ftl {
    /// The drive's statistics log, from its counters.
    pub fn media_statistics(&self) -> MediaStatistics {
        let g = &self.geometry;
        let c = &self.counters;
        let unit = g.mapping_unit_bytes as u64;
        let page = g.units_per_page as u64 * unit;
        let pu_programs = c.pu_programs_host + c.pu_programs_gc + c.pu_programs_parity;
        // Metadata pages are programmed a page on each plane at a time (`persist`).
        let meta_pages = c.pu_programs_meta * g.planes_per_die as u64;
        let host = c.host_units_written * unit;
        let media = pu_programs * g.units_per_pu as u64 * unit + meta_pages * page;
        MediaStatistics {
            host_bytes_written: host,
            media_bytes_written: media,
            media_bytes_erased: (c.blocks_erased + c.meta_blocks_erased)
                * g.units_per_block as u64
                * unit,
            write_amplification: if host == 0 {
                0.0
            } else {
                media as f64 / host as f64
            },
        }
    }
}
