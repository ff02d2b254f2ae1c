//! Host-directed placement (`[placement]`): NVMe Flexible Data Placement (TP4146, NVMe Base
//! Specification 2.1). The semantics and the shipping configurations are in
//! `shared/reference/placement.md`; what the FTL does with them is in `ftl::placement`.

use super::{err, ConfigError, Geometry};
use serde::{Deserialize, Serialize};

/// The placement mode a drive offers.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum PlacementMode {
    /// Flexible Data Placement: writes carry a placement identifier.
    Fdp,
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
    /// Each reclaim unit handle's type, in handle order (NRUH is its length).
    pub handles: Vec<RuhType>,
    /// MAXPIDS: the most placement handles a namespace may list. 0: NRUH.
    #[serde(default)]
    pub max_pids: u32,
    /// The namespace's placement handles: the reclaim unit handle each one names, in
    /// placement handle order. Empty: every handle in order.
    #[serde(default)]
    pub pids: Vec<u32>,
    /// Where the configuration comes from.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub source: String,
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
            source: "default: one reclaim group, 8 initially isolated handles, a superblock reclaim unit, as Samsung's PM9D3 ships (Allison et al., EuroSys '25, 6.1)".into(),
        }
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
