//! Host-directed placement (`[placement]`): NVMe Flexible Data Placement (TP4146, NVMe Base
//! Specification 2.1) or a Zoned Namespace (NVMe Zoned Namespace Command Set 1.x). The
//! semantics and the shipping configurations are in `shared/reference/placement.md`; what the
//! FTL does with FDP is in `ftl::placement`, the zones' state machine in `crate::zones`.

use super::{err, ConfigError, Geometry};
use serde::{Deserialize, Serialize};

/// The placement mode a drive offers.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum PlacementMode {
    /// Flexible Data Placement: writes carry a placement identifier.
    Fdp,
    /// A Zoned Namespace: sequential-write-required zones, the host resets them.
    Zns,
}

/// A reclaim unit handle's type (TP4146): what garbage collection may do with its data.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum RuhType {
    /// Data of different handles starts in different reclaim units; collection may move it
    /// into units shared with other initially isolated handles of the group.
    InitiallyIsolated,
    /// Collection moves the handle's data only into units holding data of the same handle.
    PersistentlyIsolated,
}

/// The FDP configuration the drive offers (the configurations log's one entry) and the
/// namespace's placement handle list.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PlacementConfig {
    pub mode: PlacementMode,
    /// NRG: reclaim groups. The dies are split into this many groups of consecutive dies,
    /// one group each (divides the dies).
    #[serde(default = "one")]
    pub reclaim_groups: u32,
    /// RUNS as erase blocks: a reclaim unit is this many blocks on every die of its group
    /// (the PM9D3's is a superblock: one block on every die).
    #[serde(default = "one")]
    pub reclaim_unit_blocks: u32,
    /// Each reclaim unit handle's type, in handle order (NRUH is its length). FDP only.
    #[serde(default)]
    pub handles: Vec<RuhType>,
    /// MAXPIDS: the most placement handles a namespace may list. 0: NRUH.
    #[serde(default)]
    pub max_pids: u32,
    /// The namespace's placement handles: the reclaim unit handle each one names, in
    /// placement handle order. Empty: every handle in order.
    #[serde(default)]
    pub pids: Vec<u32>,
    /// ZNS: the zone size in bytes (a power of two, at least one erase block's data).
    #[serde(default)]
    pub zone_bytes: u64,
    /// ZNS: the zone capacity in bytes (0: the whole erase blocks that fit in a zone; else at
    /// most that, a multiple of the mapping unit).
    #[serde(default)]
    pub zone_capacity_bytes: u64,
    /// ZNS: MOR, the most zones open (implicitly or explicitly) at once; 0: no limit (at
    /// most 4096 active).
    #[serde(default)]
    pub max_open_zones: u32,
    /// ZNS: MAR, the most zones active (open or closed) at once; 0: `max_open_zones` (no
    /// limit when that is 0).
    #[serde(default)]
    pub max_active_zones: u32,
    /// Where the configuration comes from.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub source: String,
}

/// The most zones active at once (MAR): each keeps a write frontier on every die. "No limit"
/// (`max_open_zones = 0`) means this many, or every zone if there are fewer.
pub const MAX_ACTIVE_ZONES: u32 = 4096;

/// A zoned namespace's shape, derived from `[placement]` (mode "zns") and the geometry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ZoneGeometry {
    /// Zones in the namespace: the drive's user capacity in whole zone capacities (what the
    /// drive keeps beyond it stays spare, for padding and metadata).
    pub zones: u32,
    /// A zone's size and capacity in mapping units (size a power of two).
    pub size_units: u64,
    pub capacity_units: u64,
    /// Consecutive dies a zone's data is striped over (a divisor of the dies); zone `z` takes
    /// group `z % (dies / dies_per_zone)`.
    pub dies_per_zone: u32,
    /// MOR and MAR (both at most `zones`).
    pub max_open: u32,
    pub max_active: u32,
}

impl ZoneGeometry {
    /// The dies group of zone `z`.
    pub fn group_of(&self, z: u32, dies: u32) -> u32 {
        z % (dies / self.dies_per_zone)
    }
}

fn one() -> u32 {
    1
}

/// The most reclaim unit handles (NRUH is 16 bits in the configurations log; this model keeps
/// a stream per handle on every die, so fewer).
pub const MAX_HANDLES: u32 = 128;

impl PlacementConfig {
    /// The default configuration a job that asks for FDP gets on a drive without a
    /// `[placement]` table: one reclaim group, 8 initially isolated handles, a reclaim unit of
    /// one block on every die (a superblock), as Samsung's PM9D3 ships (EuroSys '25, 6.1).
    pub fn default_fdp() -> PlacementConfig {
        PlacementConfig {
            mode: PlacementMode::Fdp,
            reclaim_groups: 1,
            reclaim_unit_blocks: 1,
            handles: vec![RuhType::InitiallyIsolated; 8],
            max_pids: 0,
            pids: Vec::new(),
            zone_bytes: 0,
            zone_capacity_bytes: 0,
            max_open_zones: 0,
            max_active_zones: 0,
            source: "default: one reclaim group, 8 initially isolated handles, a superblock reclaim unit, as Samsung's PM9D3 ships (Allison et al., EuroSys '25, 6.1)".into(),
        }
    }

    /// The default zoned namespace a `zonemode=zbd` job gets on a drive without a
    /// `[placement]` table: zones of `zone_bytes`, their capacity the whole erase blocks that
    /// fit in one, at most `max_open_zones` open and active (0: no limit).
    pub fn default_zns(zone_bytes: u64, max_open_zones: u32) -> PlacementConfig {
        PlacementConfig {
            mode: PlacementMode::Zns,
            reclaim_groups: 1,
            reclaim_unit_blocks: 1,
            handles: Vec::new(),
            max_pids: 0,
            pids: Vec::new(),
            zone_bytes,
            zone_capacity_bytes: 0,
            max_open_zones,
            max_active_zones: 0,
            source: "default: zones of the job's zonesize, their capacity the whole erase blocks that fit in one (as QEMU's and the ZN540's zone capacity is below the zone size)".into(),
        }
    }

    /// The zoned namespace's shape (mode "zns"), or the field that makes it impossible.
    pub fn zone_geometry(&self, g: &Geometry) -> Result<ZoneGeometry, ConfigError> {
        let unit = g.mapping_unit_bytes as u64;
        let block_bytes = g.data_units_per_block as u64 * unit;
        if !self.zone_bytes.is_power_of_two() || self.zone_bytes < block_bytes {
            return Err(err(
                "placement.zone_bytes",
                format!(
                    "{}; accepted: a power of two of at least one erase block's data ({block_bytes} bytes)",
                    self.zone_bytes
                ),
            ));
        }
        let size_units = self.zone_bytes / unit;
        let fit = (size_units / g.data_units_per_block as u64).min(u32::MAX as u64) as u32;
        // The zone's blocks spread over as many dies as they can, in groups that tile the dies.
        let dies_per_zone = (1..=fit.min(g.dies))
            .rev()
            .find(|w| g.dies.is_multiple_of(*w))
            .unwrap_or(1);
        let blocks_per_die = fit / dies_per_zone;
        let whole = (dies_per_zone * blocks_per_die) as u64 * g.data_units_per_block as u64;
        let capacity_units = if self.zone_capacity_bytes == 0 {
            whole
        } else if !self.zone_capacity_bytes.is_multiple_of(unit)
            || self.zone_capacity_bytes / unit > whole
        {
            return Err(err(
                "placement.zone_capacity_bytes",
                format!(
                    "{}; accepted: 0 (the whole erase blocks in a zone) or a multiple of {unit} up to {}",
                    self.zone_capacity_bytes,
                    whole * unit
                ),
            ));
        } else {
            self.zone_capacity_bytes / unit
        };
        let zones = (g.logical_units / capacity_units).min(u32::MAX as u64 / 2) as u32;
        if zones == 0 {
            return Err(err(
                "placement.zone_bytes",
                format!(
                    "a zone capacity of {} bytes is more than the drive's user capacity ({} bytes); accepted: a smaller zone",
                    capacity_units * unit,
                    g.logical_units * unit
                ),
            ));
        }
        let max_open = if self.max_open_zones == 0 {
            zones
        } else {
            self.max_open_zones.min(zones)
        };
        let max_active = match (self.max_active_zones, self.max_open_zones) {
            (0, 0) => zones.min(MAX_ACTIVE_ZONES),
            (0, _) => max_open,
            (a, _) => a.min(zones),
        };
        if max_active > MAX_ACTIVE_ZONES {
            return Err(err(
                "placement.max_active_zones",
                format!("{max_active}; accepted: 1 to {MAX_ACTIVE_ZONES} (each active zone keeps a block open on its dies), or 0"),
            ));
        }
        let max_open = max_open.min(max_active);
        if self.max_active_zones != 0 && self.max_open_zones > self.max_active_zones {
            return Err(err(
                "placement.max_open_zones",
                format!(
                    "{} open zones with {} active; accepted: no more open than active (MOR <= MAR)",
                    self.max_open_zones, self.max_active_zones
                ),
            ));
        }
        Ok(ZoneGeometry {
            zones,
            size_units,
            capacity_units,
            dies_per_zone,
            max_open,
            max_active,
        })
    }

    /// The placement handle list: the handle each placement handle names.
    pub fn placement_handles(&self) -> Vec<u32> {
        if self.pids.is_empty() {
            (0..self.handles.len() as u32).collect()
        } else {
            self.pids.clone()
        }
    }

    /// Check the fields against each other and the drive's geometry; `spare_blocks_per_die`
    /// is what each die keeps beyond its share of user data and the collector's reserve (the
    /// open blocks of further streams come from it).
    pub(super) fn check(&self, g: &Geometry, spare_blocks_per_die: u64) -> Result<(), ConfigError> {
        if self.mode == PlacementMode::Zns {
            if !self.handles.is_empty() || !self.pids.is_empty() {
                return Err(err(
                    "placement.handles",
                    "a zoned namespace has no reclaim unit handles; accepted: handles and pids with mode = \"fdp\" only",
                ));
            }
            return self.zone_geometry(g).map(|_| ());
        }
        if self.zone_bytes != 0 || self.max_open_zones != 0 || self.max_active_zones != 0 {
            return Err(err(
                "placement.zone_bytes",
                "zones are a zoned namespace's; accepted: zone_bytes, zone_capacity_bytes, max_open_zones and max_active_zones with mode = \"zns\" only",
            ));
        }
        let nruh = self.handles.len() as u32;
        if nruh == 0 || nruh > MAX_HANDLES {
            return Err(err(
                "placement.handles",
                format!("{nruh} handles; accepted: 1 to {MAX_HANDLES}, each \"initially-isolated\" or \"persistently-isolated\""),
            ));
        }
        if self.reclaim_groups == 0 || !g.dies.is_multiple_of(self.reclaim_groups) {
            return Err(err(
                "placement.reclaim_groups",
                format!(
                    "{} groups of {} dies; accepted: a divisor of the dies (1 to {})",
                    self.reclaim_groups, g.dies, g.dies
                ),
            ));
        }
        let max_pids = if self.max_pids == 0 {
            nruh
        } else {
            self.max_pids
        };
        if self.max_pids > MAX_HANDLES {
            return Err(err(
                "placement.max_pids",
                format!(
                    "{}; accepted: 0 (the handles' count) to {MAX_HANDLES}",
                    self.max_pids
                ),
            ));
        }
        let pids = self.placement_handles();
        if pids.len() as u32 > max_pids {
            return Err(err(
                "placement.pids",
                format!(
                    "{} placement handles; accepted: at most MAXPIDS ({max_pids}, placement.max_pids)",
                    pids.len()
                ),
            ));
        }
        if let Some((i, &h)) = pids.iter().enumerate().find(|(_, &h)| h >= nruh) {
            return Err(err(
                &format!("placement.pids[{i}]"),
                format!(
                    "handle {h}; accepted: a reclaim unit handle, 0 to {}",
                    nruh - 1
                ),
            ));
        }
        // A reclaim unit larger than a group: more blocks per die than a die can give.
        let data_blocks = g.blocks_per_die as u64;
        if self.reclaim_unit_blocks == 0 || self.reclaim_unit_blocks as u64 > data_blocks {
            return Err(err(
                "placement.reclaim_unit_blocks",
                format!(
                    "{} blocks on each die of a group; accepted: 1 to {data_blocks} (a reclaim unit no larger than its group)",
                    self.reclaim_unit_blocks
                ),
            ));
        }
        // Every handle keeps a block open on every die of its group, and each persistently
        // isolated one a block for its copies: that many more open blocks than a drive
        // without placement.
        let isolated = self
            .handles
            .iter()
            .filter(|&&t| t == RuhType::PersistentlyIsolated)
            .count() as u64;
        let more = nruh as u64 - 1 + isolated;
        if more > spare_blocks_per_die {
            return Err(err(
                "placement.handles",
                format!(
                    "{nruh} handles ({isolated} persistently isolated) keep {more} more blocks open on each die than the drive has spare ({spare_blocks_per_die} blocks a die beyond its user data and collection reserve); accepted: fewer handles, or more spare (a smaller ftl.user_capacity_bytes)"
                ),
            ));
        }
        Ok(())
    }
}
