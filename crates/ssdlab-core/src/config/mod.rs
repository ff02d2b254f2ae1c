//! Drive configuration: the fields of a preset TOML file, with units in their names, and the
//! one place they are checked against each other ([`DriveConfig::validate`]).

use serde::{Deserialize, Serialize};
use std::fmt;

mod nand;
mod placement;
mod validate;
pub use nand::{page_type, paired_lower_page, NandConfig};
pub use placement::{PlacementConfig, PlacementMode, RuhType, ZoneGeometry, MAX_HANDLES};

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

/// The most mapping units a block may hold (the check refuses more): a block's valid count
/// takes the top 16 bits of its entry in the map's block table, beside the greedy collector's
/// key, and all ones is kept out (`ftl::map::VALID_SHIFT`).
pub const MAX_UNITS_PER_BLOCK: u32 = u16::MAX as u32 - 1;

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
    /// Power figures (`[power]`; none: no power model): see [`crate::power`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub power: Option<crate::power::PowerConfig>,
    /// Thermal figures and surroundings (`[thermal]`; needs `[power]`; none: no heat model):
    /// see [`crate::thermal`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thermal: Option<crate::thermal::ThermalConfig>,
    /// Host-directed placement (`[placement]`; none: conventional): `ftl::placement`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placement: Option<PlacementConfig>,
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
    /// Average power the vendor rates under a light client workload with device-initiated
    /// link power management (Micron's "active average power, MobileMark with DIPM"), W.
    pub power_active_average_w: Option<f64>,
    /// Typical power under load the vendor rates as an upper bound ("<7.5 W TYP"), W.
    pub power_typical_max_w: Option<f64>,
    /// Where the power ratings come from.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub power_source: String,
    /// The conditions the vendor rates under (`ssdlab validate --groups datasheet` measures
    /// under them): outstanding commands in all (default 32, SATA NCQ) ...
    pub queue_depth: Option<u32>,
    /// ... spread over this many workers (fio jobs; default 1) ...
    pub workers: Option<u32>,
    /// ... and the sequential figures' transfer size, KiB (default 128).
    pub seq_transfer_kib: Option<u32>,
    /// Where those conditions are written.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub conditions_source: String,
    /// Published latency ratings, each at its own conditions (`ssdlab validate --groups
    /// latency` measures them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub latency: Vec<LatencyRating>,
}

/// One published latency rating (a datasheet's "READ latency <47 us", "WRITE latency 13 us
/// (posted) MIN") and the conditions it was measured under.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct LatencyRating {
    /// "read" or "write" (random, of `transfer_bytes`).
    pub op: String,
    /// Which statistic: "typ" or "mean" (the mean), "min", "max"; `bound`: the figure is an
    /// upper bound ("<47 us").
    pub figure: String,
    #[serde(default)]
    pub bound: bool,
    pub us: f64,
    pub queue_depth: u32,
    pub transfer_bytes: u32,
    /// "fresh" (fresh out of box: secure-erased) or "steady" (random-write steady state).
    pub state: String,
    /// false: the write is acknowledged after its NAND program ("nonposted", write cache
    /// off).
    #[serde(default = "default_true")]
    pub posted: bool,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub source: String,
}

pub(crate) fn default_true() -> bool {
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
    /// The controller's command path outside its serialised processor, nanoseconds: what a
    /// command waits for in the front end (the host-interface hardware's command fetch and
    /// FIS or doorbell handling, the hand-over to the firmware, DMA set-up) while other
    /// commands proceed. Fitted once per controller on a published QD1 latency rating; 0
    /// where the controller has none (docs/model.md "The command path").
    #[serde(default)]
    pub front_end_ns: u64,
    /// Whether writes are acknowledged from the DRAM write buffer (the volatile write cache
    /// on, as every datasheet rates: "write cache enabled"). false: every write is
    /// acknowledged once its NAND program is done, as a FUA write (the datasheets'
    /// "nonposted" writes; ATA SET FEATURES write cache off). Default true.
    #[serde(default = "default_true")]
    pub write_cache: bool,
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
    /// Extra firmware time per host read command on the same processor, nanoseconds: the
    /// enterprise read path, which checks the LBA stored with the data against the map and
    /// carries end-to-end protection through the controller (M500DC: "LBA stored with each
    /// page and checked against the mapping table on read", "end-to-end data path ECC").
    /// 0: a read costs `command_ns`.
    #[serde(default)]
    pub read_extra_ns: u64,
    /// Extra firmware time per host write command on the same processor, nanoseconds (the
    /// buffer and map bookkeeping of a write beyond a read's; calibrated per controller where
    /// its drives rate random writes below random reads with the NAND far from the limit).
    /// 0: a write costs `command_ns`.
    #[serde(default)]
    pub write_extra_ns: u64,
    /// What the drive's hold-up energy (capacitors) covers at a power cut
    /// (`ssdlab crashtest`, docs/model.md "Power loss"). Default `none`.
    #[serde(default)]
    pub power_loss_protection: PowerLossProtection,
    /// Always-on encryption of everything written (an inline AES engine at line rate: no cost
    /// in time), so that a crypto erase (`Device::crypto_erase`) can make every earlier byte
    /// unreadable by replacing the media key. Default false.
    #[serde(default)]
    pub self_encrypting: bool,
    /// How long a crypto erase takes (a new media key, the map emptied), microseconds.
    #[serde(default)]
    pub crypto_erase_us: u64,
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

/// How much foreground collection copies per host unit written while it runs.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum GcPace {
    /// As much as the current victim needs to be freed by the time the host has filled the
    /// space it gives back: v / (capacity - v) for a victim holding v valid units.
    Victim,
    /// A fixed ratio the firmware sizes for its own spare area: the copies per host unit that
    /// greedy collection needs in the uniform random-write steady state of the drive as
    /// built (`meanfield::greedy_waf` at the drive's nominal over-provisioning, minus one),
    /// whatever the victims actually hold; between free-block watermarks with hysteresis
    /// (`gc_free_blocks_low`, `gc_free_blocks_high`). With extra spare the victims are
    /// emptier, collection gets ahead and stops at the high watermark; host writes then run
    /// at fresh speed until the low one. Below `gc_foreground_free_blocks_min` a die copies
    /// at least what its victim needs. GENERIC: US 9,645,924 ("garbage collection scaling": a
    /// write-amplification target from the over-provisioning ratio), US 9,213,637 (host-write
    /// credits kept between two thresholds); no source names the drives' own firmware.
    Nominal,
}

/// Which die the host stream's next program unit goes to.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum HostDieChoice {
    /// The next die in turn (static striping, PU by PU).
    RoundRobin,
    /// The next die in turn that has no garbage-collection work queued, else the next in
    /// turn: host data is placed where it can be programmed soon, so a victim collected in
    /// one bite (`gc_foreground_mode = "burst"`) holds back no host data behind it. GENERIC:
    /// dynamic page allocation (Tavakkol et al., "Performance evaluation of dynamic page
    /// allocation strategies in SSDs", ACM TOMPECS 2016); no source names the drives' own.
    SkipCollecting,
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
    /// How much paced or burst collection copies per host unit. Default `victim`.
    #[serde(default = "default_gc_pace")]
    pub gc_pace: GcPace,
    /// Which die the host stream's next program unit goes to. Default `round-robin`.
    #[serde(default = "default_host_die_choice")]
    pub host_die_choice: HostDieChoice,
    /// `skip-collecting`: how many dies in turn the choice looks at (the next in turn and the
    /// ones after it; Tavakkol et al.'s degree of freedom). 0: every die. Default 0.
    #[serde(default)]
    pub host_die_candidates: u32,
    /// Nominal pace: paced collection starts when the drive's free blocks fall to this many
    /// per die (summed over the dies) and, once started, runs until they reach
    /// `gc_free_blocks_high` per die. >= gc_foreground_free_blocks_min.
    #[serde(default = "default_gc_free_blocks_low")]
    pub gc_free_blocks_low: u32,
    /// Nominal pace: the high watermark, free blocks per die. >= gc_free_blocks_low.
    #[serde(default = "default_gc_free_blocks_high")]
    pub gc_free_blocks_high: u32,
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
fn default_gc_pace() -> GcPace {
    GcPace::Victim
}
fn default_host_die_choice() -> HostDieChoice {
    HostDieChoice::RoundRobin
}
fn default_gc_free_blocks_low() -> u32 {
    3
}
fn default_gc_free_blocks_high() -> u32 {
    6
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
    /// The host's software stack per command (block layer, driver, the interrupt and the
    /// completion), nanoseconds: Linux's AHCI stack about 6.0 us, NVMe's 2.8 us (Intel's
    /// comparison, AnandTech 7843). Commands overlap in it, so it bounds low queue depths
    /// (QD / latency) and vanishes under the throughput caps at deep queues.
    #[serde(default)]
    pub driver_ns: u64,
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

/// Fields earlier versions had, with what replaced them (a drive file written for one gets
/// this after serde's unknown-field message).
pub const RETIRED_FIELDS: &[(&str, &str)] = &[(
    "command_latency_ns",
    "host.command_latency_ns (one ASSUMED per-command time) was replaced by the command path in parts: host.driver_ns (the host's driver and interrupt, 6000 for Linux's AHCI stack) and controller.front_end_ns (the controller's command decode, map look-up and DMA set-up); see docs/model.md 'The command path'",
)];

impl DriveConfig {
    /// Parse a TOML document. Errors carry the line and the field.
    /// Read a drive file; an error names the line and field, and for a field an earlier
    /// version had ([`RETIRED_FIELDS`]) what took its place.
    pub fn from_toml_str(text: &str) -> Result<DriveConfig, String> {
        toml::from_str::<DriveConfig>(text).map_err(|e| {
            let message = e.to_string();
            if let Some(hint) = RETIRED_FIELDS
                .iter()
                .find(|(field, _)| e.message().contains(&format!("unknown field `{field}`")))
                .map(|(_, hint)| hint)
            {
                return format!("{}\n{hint}", message.trim_end());
            }
            match (e.message().contains("wanted string or table"), e.span()) {
                (true, Some(span)) => match choices_at(text, span) {
                    Some(accepted) => format!("{}; accepted: {accepted}", message.trim_end()),
                    None => message,
                },
                _ => message,
            }
        })
    }

    pub fn to_toml_string(&self) -> String {
        toml::to_string(self).expect("a DriveConfig always serialises")
    }
}

/// A choice (an enum field) given as something other than a quoted name ("wanted string or
/// table" is all toml says): the names it takes, as serde lists them for an unknown name put in
/// its place.
fn choices_at(text: &str, span: std::ops::Range<usize>) -> Option<String> {
    let mut probe = text.to_string();
    probe.replace_range(span, "\"\"");
    let e = toml::from_str::<DriveConfig>(&probe).err()?;
    let (_, expected) = e.message().split_once("expected ")?;
    e.message()
        .starts_with("unknown variant")
        .then(|| expected.trim().to_string())
}

#[cfg(test)]
pub(crate) mod tests;
