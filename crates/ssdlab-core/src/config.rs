//! Drive configuration: the fields of a preset TOML file, with units in their names, and the
//! one place they are checked against each other ([`DriveConfig::validate`]).

use serde::{Deserialize, Serialize};
use std::fmt;

/// A configuration error: the field it concerns and what is accepted.
#[derive(Clone, Debug, PartialEq)]
pub struct ConfigError {
    pub field: String,
    pub message: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "field `{}`: {}", self.field, self.message)
    }
}

impl std::error::Error for ConfigError {}

/// Bytes of one map entry in DRAM and in a map page (a 32-bit physical unit number).
pub const MAP_ENTRY_BYTES: u32 = 4;

/// DRAM the map and its persistence need: the table (4 bytes per mapping unit) and, with
/// persistence on, one dirty bit per map page and the journal page being filled.
pub fn map_dram_bytes(logical_units: u64, page_bytes: u32, persistence: bool) -> u64 {
    let table = logical_units * MAP_ENTRY_BYTES as u64;
    if !persistence {
        return table;
    }
    let map_pages = logical_units.div_ceil((page_bytes / MAP_ENTRY_BYTES) as u64);
    table + map_pages.div_ceil(64) * 8 + page_bytes as u64
}

fn err(field: &str, message: impl Into<String>) -> ConfigError {
    ConfigError {
        field: field.to_string(),
        message: message.into(),
    }
}

/// A whole drive: NAND array, controller and FTL, host interface.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct DriveConfig {
    /// Preset name, e.g. "crucial-m500-960".
    pub name: String,
    /// Free text shown by `ssdlab drives`.
    #[serde(default)]
    pub description: String,
    pub nand: NandConfig,
    pub controller: ControllerConfig,
    pub ftl: FtlConfig,
    pub host: HostConfig,
    /// The vendor's ratings, for reports and validation only: the model never reads them.
    #[serde(default)]
    pub datasheet: Datasheet,
    /// Seeded NAND faults (none by default): see [`crate::faults`].
    #[serde(default, skip_serializing_if = "is_default_faults")]
    pub faults: crate::faults::FaultConfig,
}

fn is_default_faults(f: &crate::faults::FaultConfig) -> bool {
    *f == crate::faults::FaultConfig::default()
}

/// What the drive's datasheet rates (drives.toml `spec_*`); absent figures were not published.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Datasheet {
    /// "client" (rated fresh out of box) or "enterprise" (rated full, at steady state).
    #[serde(default)]
    pub segment: String,
    pub seq_read_mbps: Option<f64>,
    pub seq_write_mbps: Option<f64>,
    pub rand_read_iops: Option<f64>,
    pub rand_write_iops: Option<f64>,
    /// Rated endurance, terabytes written.
    pub endurance_tbw: Option<f64>,
}

/// The NAND array: geometry and timing of one part, and how many dies sit on how many channels.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct NandConfig {
    /// Part name from nand-parts.toml (informational).
    #[serde(default)]
    pub part: String,
    /// Channel buses; each has its own timeline. >= 1.
    pub channels: u32,
    /// Dies (targets/LUNs) in the drive. >= 1. Die i sits on channel i % channels, so dies
    /// need not divide evenly among channels (12 dies on 8 channels: 4 channels carry 2).
    pub dies: u32,
    /// Planes per die; a multi-plane operation touches one page in each. 1..=4.
    pub planes_per_die: u32,
    /// Erase blocks per plane.
    pub blocks_per_plane: u32,
    /// Pages per erase block.
    pub pages_per_block: u32,
    /// Bytes of user data per page (spare/OOB bytes not counted). Multiple of the mapping unit.
    pub page_size_bytes: u32,
    /// Array read time tR, microseconds.
    pub read_page_us: f64,
    /// Array program time tPROG, microseconds.
    pub program_page_us: f64,
    /// Block erase time tBERS, microseconds.
    pub erase_block_us: f64,
    /// Channel bus throughput as the controller runs it, MB/s (10^6 bytes per second).
    pub bus_mb_per_s: f64,
    /// Command and address cycles on the bus per operation, nanoseconds.
    #[serde(default = "default_bus_command_ns")]
    pub bus_command_ns: u64,
    /// Extra array time of a multi-plane operation over a single-plane one, percent.
    #[serde(default = "default_multi_plane_overhead_pct")]
    pub multi_plane_overhead_pct: f64,
    /// Cache-mode program: the next page's data transfer overlaps the current tPROG.
    #[serde(default = "default_true")]
    pub cache_program: bool,
    /// Rated program/erase cycles per block.
    #[serde(default)]
    pub pe_cycles_rated: u32,
    /// On-die copy-back: garbage collection moves a page inside the die (read to the page
    /// register, program from it) without crossing the channel bus or the controller's ECC.
    /// The IMFT 128 Gbit part supports it within a plane (MT29F128G08CBECB datasheet:
    /// "Copyback operations supported within the plane from which data is read"); firmware
    /// that re-checks ECC on every move does not use it.
    #[serde(default)]
    pub copyback: bool,
}

fn default_bus_command_ns() -> u64 {
    200
}
fn default_multi_plane_overhead_pct() -> f64 {
    2.0
}
fn default_true() -> bool {
    true
}

/// The controller: its per-command processing cost and its DRAM.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ControllerConfig {
    /// Controller name (e.g. "marvell-88ss9187"); calibrated values are shared per controller.
    #[serde(default)]
    pub name: String,
    /// Firmware time to process one host command, nanoseconds. Caps IOPS at 1e9 / this.
    pub command_ns: u64,
    /// DRAM on the drive, bytes: must hold the flat map and its persistence
    /// (`Geometry::map_dram_bytes`); 0 leaves it unchecked.
    #[serde(default)]
    pub dram_bytes: u64,
    /// Data the controller moves to the host per second at most (its read data path: ECC
    /// decode, DRAM, host DMA), MB/s; 0 for no limit below the link's.
    #[serde(default)]
    pub read_mb_per_s: f64,
    /// Data the controller takes from the host per second at most (write data path: buffer,
    /// ECC encode, RAIN parity), MB/s; 0 for no limit below the link's.
    #[serde(default)]
    pub write_mb_per_s: f64,
    /// Firmware time on the controller's processor per mapping unit that garbage collection
    /// copies (map look-up and validity check, ECC decode and re-encode as the data passes
    /// through the controller, the map update), nanoseconds. The processor is the one that
    /// takes host commands (`command_ns`), so collection and host commands queue for it.
    /// 0: collection costs the processor nothing.
    #[serde(default)]
    pub gc_copy_ns_per_unit: u64,
    /// Firmware time per garbage-collection victim (choosing it, reading its block summary,
    /// erase bookkeeping), nanoseconds, on the same processor.
    #[serde(default)]
    pub gc_victim_ns: u64,
    /// What the drive's hold-up energy (capacitors) covers at a power cut
    /// (`ssdlab crashtest`, docs/model.md "Power loss"). Default `none`.
    #[serde(default)]
    pub power_loss_protection: PowerLossProtection,
}

/// What survives a power cut, by the drive's design.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum PowerLossProtection {
    /// Capacitors finish every acknowledged write (buffered data is programmed): nothing
    /// acknowledged is lost (the M500DC: "power loss protection covering in-flight writes").
    Full,
    /// Capacitors finish the programs already running and flush the map; host data still in
    /// the DRAM buffer (partial pages, queued programs) is lost unless a FLUSH completed or the
    /// write had FUA (the M500: "capacitors flush the mapping table").
    Map,
    /// No hold-up: buffered data and queued or running programs are lost, and a running
    /// program of an MLC upper page corrupts its paired lower page (detected on read; RAIN
    /// repairs it where the drive has it).
    #[default]
    None,
}

impl PowerLossProtection {
    pub fn name(self) -> &'static str {
        match self {
            PowerLossProtection::Full => "full",
            PowerLossProtection::Map => "map",
            PowerLossProtection::None => "none",
        }
    }
}

/// Garbage-collection victim policy.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum GcPolicy {
    /// Fewest valid units.
    Greedy,
    /// Oldest sealed block.
    Fifo,
    /// Largest (1 - u) / (2u) x age (Rosenblum and Ousterhout).
    CostBenefit,
    /// Fewest valid units among `gc_d_choices` blocks drawn at random.
    DChoices,
}

/// When foreground garbage collection runs and how much host work it admits meanwhile.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum GcForegroundMode {
    /// Copy victim data in proportion to host writes while a die is below
    /// `gc_foreground_free_blocks_min`: a flat line, host writes throttled evenly.
    Paced,
    /// The same average pace, in victim-sized bites: when the owed copying covers the victim's
    /// valid data, the whole victim is collected at once and host programs on that die wait
    /// behind it.
    Burst,
    /// On demand: nothing until a die must open a block and has fewer than
    /// `gc_foreground_free_blocks_min` free; then that die is collected back up to the minimum
    /// while the host write that needed the block waits.
    OnDemand,
    /// Deferred (lazy): nothing until a die is down to its last free block; then every die
    /// is collected up to `gc_deferred_free_blocks_target` at once, host writes waiting behind
    /// it (drives.toml, Crucial m4: fast random writes "achieved by not defragmenting on the
    /// fly").
    Deferred,
}

/// The flash translation layer.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct FtlConfig {
    /// User-visible capacity, bytes (decimal GB x 10^9 for the presets).
    pub user_capacity_bytes: u64,
    /// Mapping granularity of the logical-to-physical table, bytes. Power of two, >= 512.
    #[serde(default = "default_mapping_unit_bytes")]
    pub mapping_unit_bytes: u32,
    /// User data the DRAM write buffer holds before it must flush to NAND, bytes.
    pub write_buffer_bytes: u64,
    /// RAIN: data pages per parity page (15 means 15:1). 0 disables RAIN.
    #[serde(default)]
    pub rain_data_pages_per_parity: u32,
    /// Blocks per die set aside for factory defects and grown bad blocks (never written).
    #[serde(default)]
    pub reserved_blocks_per_die: u32,
    #[serde(default = "default_gc_policy")]
    pub gc_policy: GcPolicy,
    /// d for the d-choices policy. >= 1.
    #[serde(default = "default_gc_d_choices")]
    pub gc_d_choices: u32,
    /// Foreground collection runs, paced with host writes, while a die has fewer free blocks
    /// than this. >= 2.
    #[serde(default = "default_gc_foreground_free_blocks_min")]
    pub gc_foreground_free_blocks_min: u32,
    #[serde(default = "default_gc_foreground_mode")]
    pub gc_foreground_mode: GcForegroundMode,
    /// Background collection, when the drive is idle, brings each die up to this many free
    /// blocks. >= gc_foreground_free_blocks_min.
    #[serde(default = "default_gc_background_free_blocks_target")]
    pub gc_background_free_blocks_target: u32,
    /// Deferred collection brings every die up to this many free blocks. >= 3.
    #[serde(default = "default_gc_deferred_free_blocks_target")]
    pub gc_deferred_free_blocks_target: u32,
    /// Idle time before background collection starts, microseconds.
    #[serde(default = "default_gc_background_idle_us")]
    pub gc_background_idle_us: u64,
    /// Garbage-collected data goes to its own open block, apart from host writes. Only `true`
    /// is accepted (a shared stream could take a die's last free block for copied data).
    #[serde(default = "default_true")]
    pub gc_separate_stream: bool,
    /// Dynamic wear levelling: allocate the least-worn free block.
    #[serde(default = "default_true")]
    pub wear_leveling_dynamic: bool,
    /// Static wear levelling: collect the least-worn sealed block when the die's erase-count
    /// spread (max - min) exceeds this. 0 disables.
    #[serde(default = "default_wear_leveling_static_spread_max")]
    pub wear_leveling_static_spread_max: u32,
    /// Map persistence: bytes of one journal record of a map update (LBA and new physical
    /// address). Every host write, TRIM and GC move appends one; a full NAND page of records
    /// is programmed. 0: map persistence not modelled (no metadata writes).
    #[serde(default)]
    pub map_journal_entry_bytes: u32,
    /// Journal pages written between two checkpoints of the map: at a checkpoint every map
    /// page dirtied since the last one (one NAND page holds page_size / 4 entries) is
    /// programmed, spread over the next this-many journal pages; this bounds the journal
    /// replayed at power-up. >= 1 when persistence is on.
    #[serde(default)]
    pub map_checkpoint_journal_pages: u32,
    /// Blocks per die the firmware holds for map pages, journal and block summaries (not
    /// available to user data or garbage collection). >= 1 when persistence is on.
    #[serde(default)]
    pub map_blocks_per_die: u32,
    /// A summary page (the block's physical-to-logical list, for rebuilding the map) is
    /// programmed into the metadata blocks when a data block is sealed.
    #[serde(default)]
    pub block_summary_pages: bool,
}

fn default_mapping_unit_bytes() -> u32 {
    4096
}
fn default_gc_policy() -> GcPolicy {
    GcPolicy::Greedy
}
fn default_gc_d_choices() -> u32 {
    8
}
fn default_gc_foreground_free_blocks_min() -> u32 {
    3
}
fn default_gc_foreground_mode() -> GcForegroundMode {
    GcForegroundMode::Paced
}
fn default_gc_background_free_blocks_target() -> u32 {
    6
}
fn default_gc_deferred_free_blocks_target() -> u32 {
    8
}
fn default_gc_background_idle_us() -> u64 {
    5_000
}
fn default_wear_leveling_static_spread_max() -> u32 {
    0
}

/// Host interface kind.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum HostInterfaceKind {
    /// SATA: one half-duplex link, NCQ.
    Sata,
    /// NVMe over PCIe: full duplex, several deep queues.
    Nvme,
}

/// The host interface.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct HostConfig {
    pub interface: HostInterfaceKind,
    /// SATA line rate, Gbit/s (6.0 for SATA 6 Gb/s). SATA only.
    #[serde(default)]
    pub sata_line_gbit_per_s: f64,
    /// PCIe generation 1..=4. NVMe only.
    #[serde(default)]
    pub pcie_generation: u32,
    /// PCIe lanes 1..=16. NVMe only.
    #[serde(default)]
    pub pcie_lanes: u32,
    /// Share of the encoded link rate left for data after framing (FIS or TLP headers).
    #[serde(default = "default_link_protocol_efficiency")]
    pub link_protocol_efficiency: f64,
    /// Link time per command for command, status and setup frames, nanoseconds.
    #[serde(default = "default_link_command_ns")]
    pub link_command_ns: u64,
    /// Commands the drive accepts at once (NCQ: at most 32). The host queues the rest.
    pub queue_depth_max: u32,
    /// Latency every command carries that no resource of the drive serialises (host driver
    /// and AHCI/NVMe doorbell and interrupt path, firmware command and completion handling),
    /// nanoseconds. Commands overlap in it, so it bounds low queue depths (QD / latency) and
    /// vanishes under the throughput caps at deep queues.
    #[serde(default)]
    pub command_latency_ns: u64,
}

fn default_link_protocol_efficiency() -> f64 {
    0.95
}
fn default_link_command_ns() -> u64 {
    1_000
}

impl HostConfig {
    /// The link's line rate after encoding, before protocol overhead, one direction, bytes
    /// per second: the physical cap.
    pub fn link_line_bytes_per_s(&self) -> f64 {
        match self.interface {
            // 8b/10b: 10 line bits per byte.
            HostInterfaceKind::Sata => self.sata_line_gbit_per_s * 1e9 / 10.0,
            HostInterfaceKind::Nvme => {
                // Per lane: gen1 2.5 GT/s and gen2 5 GT/s with 8b/10b; gen3 8 GT/s and gen4
                // 16 GT/s with 128b/130b (PCI Express Base Specification).
                let lane = match self.pcie_generation {
                    1 => 2.5e9 / 10.0,
                    2 => 5.0e9 / 10.0,
                    3 => 8.0e9 * 128.0 / 130.0 / 8.0,
                    _ => 16.0e9 * 128.0 / 130.0 / 8.0,
                };
                lane * self.pcie_lanes as f64
            }
        }
    }

    /// Data throughput of the link in one direction, bytes per second: the line rate less
    /// `link_protocol_efficiency`.
    pub fn link_bytes_per_s(&self) -> u64 {
        (self.link_line_bytes_per_s() * self.link_protocol_efficiency) as u64
    }
}

/// Numbers derived from a validated configuration, used throughout the model.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Geometry {
    pub dies: u32,
    pub channels: u32,
    pub planes_per_die: u32,
    /// Erase unit of the FTL: one block in each plane of a die, erased together.
    pub blocks_per_die: u32,
    /// Program unit (PU): one page in each plane, programmed together. PUs per block.
    pub pus_per_block: u32,
    pub units_per_page: u32,
    /// Mapping units in one PU.
    pub units_per_pu: u32,
    /// RAIN: every `rain_period`-th PU of a block holds parity (0 = none).
    pub rain_period: u32,
    /// PUs per block that hold data (the rest hold parity).
    pub data_pus_per_block: u32,
    pub units_per_block: u32,
    pub data_units_per_block: u32,
    pub physical_units: u64,
    pub logical_units: u64,
    pub mapping_unit_bytes: u32,
    pub raw_bytes: u64,
    /// Raw capacity less RAIN parity and held blocks: what can hold user data and serve GC.
    pub usable_bytes: u64,
    /// Data capacity of the blocks the firmware holds back from user data (defect reserve,
    /// `reserved_blocks_per_die`, and the metadata blocks, `map_blocks_per_die`): part of the
    /// vendor's over-provisioning that garbage collection cannot use.
    pub held_bytes: u64,
    /// DRAM the flat map and its persistence need (`ftl::persist::map_dram_bytes`).
    pub map_dram_bytes: u64,
}

impl Geometry {
    /// Is PU `pu` of a block a RAIN parity PU?
    #[inline]
    pub fn is_parity_pu(&self, pu: u32) -> bool {
        self.rain_period != 0 && pu % self.rain_period == self.rain_period - 1
    }
    /// Spare that garbage collection can use, spare / user (the "7%" convention): held
    /// blocks excluded.
    pub fn over_provisioning_of_user(&self) -> f64 {
        let user = self.logical_units as f64 * self.mapping_unit_bytes as f64;
        (self.usable_bytes as f64 - user) / user
    }
    /// Over-provisioning, spare / raw, as vendors quote it ("effective over-provisioning",
    /// drives.toml): raw capacity less RAIN parity and user capacity, held blocks included.
    pub fn over_provisioning_of_raw(&self) -> f64 {
        let user = self.logical_units as f64 * self.mapping_unit_bytes as f64;
        ((self.usable_bytes + self.held_bytes) as f64 - user) / self.raw_bytes as f64
    }
}

impl DriveConfig {
    /// Parse a TOML document. Errors carry the line and the field.
    pub fn from_toml_str(text: &str) -> Result<DriveConfig, String> {
        toml::from_str::<DriveConfig>(text).map_err(|e| e.to_string())
    }

    pub fn to_toml_string(&self) -> String {
        toml::to_string(self).expect("a DriveConfig always serialises")
    }

    /// Check every field and the relationships between them; derive the geometry. The checks
    /// go by area, each in its own function: seeded faults, the NAND, the FTL's layout (which
    /// gives the geometry), what the layout must hold (map DRAM, user capacity with the
    /// collector's reserve, the write buffer), garbage collection, the controller, the host.
    pub fn validate(&self) -> Result<Geometry, ConfigError> {
        self.check_faults()?;
        self.check_nand()?;
        let g = self.geometry()?;
        self.check_capacity(&g)?;
        self.check_gc()?;
        self.check_controller()?;
        self.check_host()?;
        Ok(g)
    }

    fn check_faults(&self) -> Result<(), ConfigError> {
        self.faults
            .check()
            .map_err(|(field, message)| ConfigError { field, message })?;
        if let Some(die) = self.faults.die {
            if self.nand.dies < 2 || die >= self.nand.dies {
                return Err(ConfigError {
                    field: "faults.die".into(),
                    message: format!(
                        "die {die}: the drive has {} dies (accepted: 0 to {}, on a drive of 2 or more dies)",
                        self.nand.dies,
                        self.nand.dies.saturating_sub(1)
                    ),
                });
            }
        }
        Ok(())
    }

    /// Every count at least 1, times positive, at most 4 planes.
    fn check_nand(&self) -> Result<(), ConfigError> {
        let (n, f, h) = (&self.nand, &self.ftl, &self.host);
        let positive = [
            ("nand.channels", n.channels as u64),
            ("nand.dies", n.dies as u64),
            ("nand.planes_per_die", n.planes_per_die as u64),
            ("nand.blocks_per_plane", n.blocks_per_plane as u64),
            ("nand.pages_per_block", n.pages_per_block as u64),
            ("nand.page_size_bytes", n.page_size_bytes as u64),
            ("ftl.user_capacity_bytes", f.user_capacity_bytes),
            ("host.queue_depth_max", h.queue_depth_max as u64),
        ];
        for (field, value) in positive {
            if value == 0 {
                return Err(err(field, "must be at least 1"));
            }
        }
        if n.planes_per_die > 4 {
            return Err(err(
                "nand.planes_per_die",
                format!("{} planes; accepted: 1 to 4", n.planes_per_die),
            ));
        }
        for (field, value) in [
            ("nand.read_page_us", n.read_page_us),
            ("nand.program_page_us", n.program_page_us),
            ("nand.erase_block_us", n.erase_block_us),
            ("nand.bus_mb_per_s", n.bus_mb_per_s),
        ] {
            if !(value.is_finite() && value > 0.0) {
                return Err(err(field, format!("{value}; must be a positive number")));
            }
        }
        if !(0.0..=100.0).contains(&n.multi_plane_overhead_pct) {
            return Err(err("nand.multi_plane_overhead_pct", "accepted: 0 to 100"));
        }
        Ok(())
    }

    /// The FTL's layout on the NAND: mapping units, program units, RAIN, held blocks, the
    /// map's persistence, and the sizes that follow.
    fn geometry(&self) -> Result<Geometry, ConfigError> {
        let (n, f) = (&self.nand, &self.ftl);
        let unit = f.mapping_unit_bytes;
        if unit < 512 || !unit.is_power_of_two() {
            return Err(err(
                "ftl.mapping_unit_bytes",
                format!("{unit}; accepted: a power of two >= 512"),
            ));
        }
        if !n.page_size_bytes.is_multiple_of(unit) {
            return Err(err(
                "nand.page_size_bytes",
                format!(
                    "{} is not a multiple of ftl.mapping_unit_bytes = {unit}",
                    n.page_size_bytes
                ),
            ));
        }
        let dies = n.dies;
        let units_per_page = n.page_size_bytes / unit;
        let units_per_pu = units_per_page * n.planes_per_die;
        let pus_per_block = n.pages_per_block;
        let rain_period = if f.rain_data_pages_per_parity == 0 {
            0
        } else {
            f.rain_data_pages_per_parity + 1
        };
        if rain_period != 0 && rain_period > pus_per_block {
            return Err(err(
                "ftl.rain_data_pages_per_parity",
                format!(
                    "{} exceeds the {} pages of a block",
                    f.rain_data_pages_per_parity, pus_per_block
                ),
            ));
        }
        let parity_pus = pus_per_block.checked_div(rain_period).unwrap_or(0);
        let data_pus_per_block = pus_per_block - parity_pus;
        let blocks_per_die = n.blocks_per_plane;
        let held_blocks_per_die = f.reserved_blocks_per_die as u64 + f.map_blocks_per_die as u64;
        if held_blocks_per_die >= blocks_per_die as u64 {
            return Err(err(
                "ftl.reserved_blocks_per_die",
                format!(
                    "{} reserved + {} map blocks per die leave none of the {blocks_per_die} to write",
                    f.reserved_blocks_per_die, f.map_blocks_per_die
                ),
            ));
        }
        if f.map_journal_entry_bytes > 0 {
            if f.map_journal_entry_bytes > n.page_size_bytes {
                return Err(err(
                    "ftl.map_journal_entry_bytes",
                    format!(
                        "{}; accepted: 0 (off) up to the page size {}",
                        f.map_journal_entry_bytes, n.page_size_bytes
                    ),
                ));
            }
            if f.map_checkpoint_journal_pages == 0 {
                return Err(err(
                    "ftl.map_checkpoint_journal_pages",
                    "accepted: 1 or more when ftl.map_journal_entry_bytes > 0",
                ));
            }
            if f.map_blocks_per_die == 0 {
                return Err(err(
                    "ftl.map_blocks_per_die",
                    "accepted: 1 or more when ftl.map_journal_entry_bytes > 0 (the metadata needs blocks)",
                ));
            }
        }
        let units_per_block = units_per_pu * pus_per_block;
        let data_units_per_block = units_per_pu * data_pus_per_block;
        let physical_units = dies as u64 * blocks_per_die as u64 * units_per_block as u64;
        if physical_units >= u32::MAX as u64 {
            return Err(err(
                "nand.blocks_per_plane",
                format!("{physical_units} mapping units in all; the map holds at most {} (use a larger ftl.mapping_unit_bytes)", u32::MAX - 1),
            ));
        }
        let usable_blocks = dies as u64 * (blocks_per_die as u64 - held_blocks_per_die);
        let usable_units = usable_blocks * data_units_per_block as u64;
        let logical_units = f.user_capacity_bytes / unit as u64;
        if logical_units == 0 {
            return Err(err(
                "ftl.user_capacity_bytes",
                format!("smaller than one mapping unit ({unit} bytes)"),
            ));
        }
        let map_dram_bytes = map_dram_bytes(
            logical_units,
            n.page_size_bytes,
            f.map_journal_entry_bytes > 0,
        );
        let raw_bytes = dies as u64
            * blocks_per_die as u64
            * pus_per_block as u64
            * n.planes_per_die as u64
            * n.page_size_bytes as u64;
        Ok(Geometry {
            dies,
            channels: n.channels,
            planes_per_die: n.planes_per_die,
            blocks_per_die,
            pus_per_block,
            units_per_page,
            units_per_pu,
            rain_period,
            data_pus_per_block,
            units_per_block,
            data_units_per_block,
            physical_units,
            logical_units,
            mapping_unit_bytes: unit,
            raw_bytes,
            usable_bytes: usable_units * unit as u64,
            held_bytes: dies as u64
                * held_blocks_per_die
                * data_units_per_block as u64
                * unit as u64,
            map_dram_bytes,
        })
    }

    /// What the layout must hold: the map in DRAM, the user capacity with the open blocks and
    /// the collector's reserve, two program units in the write buffer.
    fn check_capacity(&self, g: &Geometry) -> Result<(), ConfigError> {
        let f = &self.ftl;
        let (dies, unit, logical_units) = (g.dies, g.mapping_unit_bytes, g.logical_units);
        let (units_per_pu, data_units_per_block) = (g.units_per_pu, g.data_units_per_block);
        let usable_units = g.usable_bytes / unit as u64;
        let map_dram_bytes = g.map_dram_bytes;
        let dram = self.controller.dram_bytes;
        if dram > 0 && map_dram_bytes > dram {
            return Err(err(
                "controller.dram_bytes",
                format!(
                    "{dram} bytes cannot hold the flat map of {logical_units} mapping units and its persistence ({map_dram_bytes} bytes); accepted: at least {map_dram_bytes}, a larger ftl.mapping_unit_bytes, or 0 (DRAM not checked)"
                ),
            ));
        }
        // Each die must keep its open blocks and the collection reserve beyond its share of
        // user data, or garbage collection could find no block worth collecting.
        let reserve_blocks_per_die =
            f.gc_foreground_free_blocks_min
                .max(match f.gc_foreground_mode {
                    GcForegroundMode::Deferred => f.gc_deferred_free_blocks_target,
                    _ => 0,
                }) as u64
                + 2;
        let spare_units = usable_units as i64
            - logical_units as i64
            - (dies as u64 * reserve_blocks_per_die * data_units_per_block as u64) as i64;
        if spare_units <= dies as i64 * data_units_per_block as i64 {
            let usable_bytes = usable_units * unit as u64;
            let open_bytes = dies as u64
                * (reserve_blocks_per_die + 1)
                * data_units_per_block as u64
                * unit as u64;
            return Err(err(
                "ftl.user_capacity_bytes",
                format!(
                    "{} bytes does not fit: the NAND can hold {usable_bytes} bytes of data after RAIN and reserved blocks, and {open_bytes} of that must stay free for open blocks and garbage collection; accepted: at most {}",
                    f.user_capacity_bytes,
                    usable_bytes.saturating_sub(open_bytes)
                ),
            ));
        }
        if f.write_buffer_bytes < 2 * units_per_pu as u64 * unit as u64 {
            return Err(err(
                "ftl.write_buffer_bytes",
                format!(
                    "{}; must hold at least two program units ({} bytes)",
                    f.write_buffer_bytes,
                    2 * units_per_pu as u64 * unit as u64
                ),
            ));
        }
        Ok(())
    }

    fn check_gc(&self) -> Result<(), ConfigError> {
        let f = &self.ftl;
        if !f.gc_separate_stream {
            return Err(err(
                "ftl.gc_separate_stream",
                "false is not supported: copied data shares the host's open block, and collection could take a die's last free block; accepted: true",
            ));
        }
        if f.gc_deferred_free_blocks_target < 3 {
            return Err(err(
                "ftl.gc_deferred_free_blocks_target",
                "accepted: 3 or more",
            ));
        }
        if f.gc_foreground_free_blocks_min < 2 {
            return Err(err(
                "ftl.gc_foreground_free_blocks_min",
                "accepted: 2 or more",
            ));
        }
        if f.gc_background_free_blocks_target < f.gc_foreground_free_blocks_min {
            return Err(err(
                "ftl.gc_background_free_blocks_target",
                "must be >= ftl.gc_foreground_free_blocks_min",
            ));
        }
        if f.gc_d_choices == 0 {
            return Err(err("ftl.gc_d_choices", "accepted: 1 or more"));
        }
        Ok(())
    }

    fn check_controller(&self) -> Result<(), ConfigError> {
        for (field, v) in [
            ("controller.read_mb_per_s", self.controller.read_mb_per_s),
            ("controller.write_mb_per_s", self.controller.write_mb_per_s),
        ] {
            if !(v >= 0.0 && v.is_finite()) {
                return Err(err(field, "accepted: 0 (no limit) or a positive MB/s"));
            }
        }
        if self.controller.command_ns == 0 {
            return Err(err("controller.command_ns", "must be at least 1"));
        }
        Ok(())
    }

    fn check_host(&self) -> Result<(), ConfigError> {
        let h = &self.host;
        match h.interface {
            HostInterfaceKind::Sata => {
                if !(h.sata_line_gbit_per_s > 0.0 && h.sata_line_gbit_per_s <= 24.0) {
                    return Err(err(
                        "host.sata_line_gbit_per_s",
                        "accepted: 1.5, 3.0 or 6.0 (any value in (0, 24])",
                    ));
                }
                if h.queue_depth_max > 32 {
                    return Err(err(
                        "host.queue_depth_max",
                        format!("{}; SATA NCQ accepts at most 32", h.queue_depth_max),
                    ));
                }
            }
            HostInterfaceKind::Nvme => {
                if !(1..=4).contains(&h.pcie_generation) {
                    return Err(err("host.pcie_generation", "accepted: 1 to 4"));
                }
                if !matches!(h.pcie_lanes, 1 | 2 | 4 | 8 | 16) {
                    return Err(err("host.pcie_lanes", "accepted: 1, 2, 4, 8 or 16"));
                }
                if h.queue_depth_max > 65_536 {
                    return Err(err("host.queue_depth_max", "NVMe accepts at most 65536"));
                }
            }
        }
        if !(h.link_protocol_efficiency > 0.0 && h.link_protocol_efficiency <= 1.0) {
            return Err(err("host.link_protocol_efficiency", "accepted: (0, 1]"));
        }
        Ok(())
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A small drive for tests: 4 dies on 2 channels, 64 blocks of 32 two-plane pages.
    pub fn small() -> DriveConfig {
        DriveConfig {
            name: "test-small".into(),
            description: String::new(),
            nand: NandConfig {
                part: "test".into(),
                channels: 2,
                dies: 4,
                planes_per_die: 2,
                blocks_per_plane: 64,
                pages_per_block: 32,
                page_size_bytes: 8192,
                read_page_us: 50.0,
                program_page_us: 1000.0,
                erase_block_us: 3000.0,
                bus_mb_per_s: 200.0,
                bus_command_ns: 200,
                multi_plane_overhead_pct: 2.0,
                cache_program: true,
                pe_cycles_rated: 3000,
                copyback: false,
            },
            controller: ControllerConfig {
                name: "test".into(),
                command_ns: 5_000,
                dram_bytes: 0,
                read_mb_per_s: 0.0,
                write_mb_per_s: 0.0,
                gc_copy_ns_per_unit: 0,
                gc_victim_ns: 0,
                power_loss_protection: PowerLossProtection::None,
            },
            ftl: FtlConfig {
                user_capacity_bytes: 4 * 64 * 32 * 16384 * 85 / 100,
                mapping_unit_bytes: 4096,
                write_buffer_bytes: 1 << 20,
                rain_data_pages_per_parity: 0,
                reserved_blocks_per_die: 0,
                gc_policy: GcPolicy::Greedy,
                gc_d_choices: 8,
                gc_foreground_free_blocks_min: 3,
                gc_foreground_mode: GcForegroundMode::Paced,
                gc_background_free_blocks_target: 6,
                gc_deferred_free_blocks_target: 8,
                gc_background_idle_us: 5000,
                gc_separate_stream: true,
                wear_leveling_dynamic: true,
                wear_leveling_static_spread_max: 0,
                map_journal_entry_bytes: 0,
                map_checkpoint_journal_pages: 0,
                map_blocks_per_die: 0,
                block_summary_pages: false,
            },
            host: HostConfig {
                interface: HostInterfaceKind::Sata,
                sata_line_gbit_per_s: 6.0,
                pcie_generation: 0,
                pcie_lanes: 0,
                link_protocol_efficiency: 0.95,
                link_command_ns: 1000,
                queue_depth_max: 32,
                command_latency_ns: 0,
            },
            datasheet: Datasheet::default(),
            faults: Default::default(),
        }
    }

    #[test]
    fn small_is_valid() {
        let g = small().validate().unwrap();
        assert_eq!(g.dies, 4);
        assert_eq!(g.units_per_pu, 4);
        assert_eq!(g.units_per_block, 128);
    }

    #[test]
    fn capacity_above_usable_is_rejected() {
        let mut c = small();
        c.ftl.user_capacity_bytes = 4 * 64 * 32 * 16384;
        let e = c.validate().unwrap_err();
        assert_eq!(e.field, "ftl.user_capacity_bytes");
        assert!(e.message.contains("accepted: at most"), "{e}");
    }

    #[test]
    fn impossible_geometry_is_rejected() {
        let mut c = small();
        c.nand.page_size_bytes = 6000;
        assert_eq!(c.validate().unwrap_err().field, "nand.page_size_bytes");
        let mut c = small();
        c.nand.planes_per_die = 0;
        assert_eq!(c.validate().unwrap_err().field, "nand.planes_per_die");
        let mut c = small();
        c.host.queue_depth_max = 64;
        assert_eq!(c.validate().unwrap_err().field, "host.queue_depth_max");
    }

    #[test]
    fn shared_gc_stream_is_rejected_not_a_panic_later() {
        // Regression: with gc_separate_stream = false the free pool could empty and panic
        // ("die 0: free pool empty") in the middle of a run.
        let mut c = small();
        c.ftl.gc_separate_stream = false;
        let e = c.validate().unwrap_err();
        assert_eq!(e.field, "ftl.gc_separate_stream");
        assert!(e.message.contains("accepted: true"), "{e}");
    }

    #[test]
    fn map_persistence_needs_its_blocks_and_checkpoints() {
        let mut c = small();
        c.ftl.map_journal_entry_bytes = 8;
        c.ftl.map_checkpoint_journal_pages = 4;
        assert_eq!(c.validate().unwrap_err().field, "ftl.map_blocks_per_die");
        c.ftl.map_blocks_per_die = 2;
        c.ftl.map_checkpoint_journal_pages = 0;
        assert_eq!(
            c.validate().unwrap_err().field,
            "ftl.map_checkpoint_journal_pages"
        );
        c.ftl.map_checkpoint_journal_pages = 4;
        let with_meta = c.validate().unwrap();
        // The metadata blocks are spare that does not serve garbage collection.
        let without = small().validate().unwrap();
        assert!(with_meta.usable_bytes < without.usable_bytes);
        assert_eq!(
            with_meta.usable_bytes + with_meta.held_bytes,
            without.usable_bytes
        );
        assert!(
            (with_meta.over_provisioning_of_raw() - without.over_provisioning_of_raw()).abs()
                < 1e-12
        );
        // The map needs 4 bytes per unit, its dirty bits and a journal page of DRAM.
        let map = with_meta.logical_units * 4;
        assert_eq!(without.map_dram_bytes, map);
        let map_pages = with_meta.logical_units.div_ceil(8192 / 4);
        assert_eq!(
            with_meta.map_dram_bytes,
            map + map_pages.div_ceil(64) * 8 + 8192
        );
        c.controller.dram_bytes = with_meta.map_dram_bytes - 1;
        let e = c.validate().unwrap_err();
        assert_eq!(e.field, "controller.dram_bytes");
        assert!(e.message.contains("accepted: at least"), "{e}");
        c.controller.dram_bytes = with_meta.map_dram_bytes;
        c.validate().unwrap();
    }

    #[test]
    fn unknown_field_names_the_field_and_line() {
        let mut text = small().to_toml_string();
        text = text.replace("[nand]\n", "[nand]\nplanes = 2\n");
        let e = DriveConfig::from_toml_str(&text).unwrap_err();
        assert!(e.contains("unknown field `planes`"), "{e}");
        assert!(e.contains("line"), "{e}");
    }

    #[test]
    fn toml_round_trip() {
        let c = small();
        assert_eq!(DriveConfig::from_toml_str(&c.to_toml_string()).unwrap(), c);
    }

    #[test]
    fn sata_link_rate() {
        // 6 Gb/s, 8b/10b: 600 MB/s encoded; 95% after FIS framing.
        assert_eq!(small().host.link_bytes_per_s(), 570_000_000);
    }
}
