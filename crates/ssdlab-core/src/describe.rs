//! What a drive configuration amounts to, derived in one place: capacities, over-provisioning
//! as vendors quote it and as garbage collection sees it, the host link, the NAND, bus and
//! link ceilings, and the DRAM the map needs. The Python API (`Drive.describe`, the drive
//! table of `ssdlab drives`), `ssdlab validate`'s physical ceilings and the timed fill read
//! these figures instead of deriving them again.

use crate::config::{ConfigError, DriveConfig, Geometry};
use serde::Serialize;

/// A validated configuration's derived figures. Rates in bytes per second, shares as
/// fractions (0.07 = 7%).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Description {
    pub geometry: Geometry,
    pub user_bytes: u64,
    /// Spare over user capacity as vendors quote it: raw less RAIN parity less user, the
    /// blocks the firmware holds back (defect reserve, metadata) counted as spare.
    pub over_provisioning_of_user: f64,
    /// The same spare over raw capacity ("effective over-provisioning", drives.toml).
    pub over_provisioning_of_raw: f64,
    /// Spare garbage collection can use, over user capacity (held blocks excluded).
    pub gc_spare_of_user: f64,
    /// The host link after line encoding (8b/10b, 128b/130b), before protocol overhead: the
    /// physical cap, one direction.
    pub link_line_bytes_per_s: f64,
    /// The host link's data rate after protocol overhead (`host.link_protocol_efficiency`).
    pub link_bytes_per_s: u64,
    /// Every die programming (reading) whole multi-plane pages back to back.
    pub nand_program_bytes_per_s: f64,
    pub nand_read_bytes_per_s: f64,
    /// Every channel's bus busy.
    pub bus_bytes_per_s: f64,
    /// Sequential ceilings: the least of NAND, bus and link line rate.
    pub seq_write_ceiling_bytes_per_s: f64,
    pub seq_read_ceiling_bytes_per_s: f64,
    /// A 4 KiB random read holds a die for tR (one plane), then the bus and the link.
    pub rand_read_ceiling_iops: f64,
    pub map_dram_bytes: u64,
    /// Units greedy collection copies per host unit in the uniform random-write steady state
    /// of the drive as built (the mean field at its own spare less the low watermark's free
    /// blocks): the ratio `ftl.gc_pace = "nominal"` paces at ([`crate::ftl::nominal_pace`]).
    pub gc_steady_copies_per_host_unit: f64,
}

impl DriveConfig {
    /// Validate and describe (see [`Description`]).
    pub fn describe(&self) -> Result<Description, ConfigError> {
        let g = self.validate()?;
        let (n, h) = (&self.nand, &self.host);
        let user = g.logical_units * g.mapping_unit_bytes as u64;
        let spare = |held: bool| {
            (g.usable_bytes + if held { g.held_bytes } else { 0 }) as f64 - user as f64
        };
        let link_line = h.link_line_bytes_per_s();
        let page_bytes = (n.dies * n.planes_per_die * n.page_size_bytes) as f64;
        let nand_program = page_bytes / (n.program_page_us * 1e-6);
        let nand_read = page_bytes / (n.read_page_us * 1e-6);
        let bus = n.channels as f64 * n.bus_mb_per_s * 1e6;
        Ok(Description {
            user_bytes: user,
            over_provisioning_of_user: spare(true) / user as f64,
            over_provisioning_of_raw: spare(true) / g.raw_bytes as f64,
            gc_spare_of_user: spare(false) / user as f64,
            link_line_bytes_per_s: link_line,
            link_bytes_per_s: h.link_bytes_per_s(),
            nand_program_bytes_per_s: nand_program,
            nand_read_bytes_per_s: nand_read,
            bus_bytes_per_s: bus,
            seq_write_ceiling_bytes_per_s: nand_program.min(bus).min(link_line),
            seq_read_ceiling_bytes_per_s: nand_read.min(bus).min(link_line),
            rand_read_ceiling_iops: (n.dies as f64 / (n.read_page_us * 1e-6))
                .min(bus / 4096.0)
                .min(link_line / 4096.0),
            map_dram_bytes: g.map_dram_bytes,
            gc_steady_copies_per_host_unit: crate::ftl::nominal_pace(&self.ftl, &g),
            geometry: g,
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::config::DriveConfig;

    #[test]
    fn the_example_drive_describes_itself() {
        let cfg = DriveConfig::from_toml_str(crate::EXAMPLE_DRIVE_TOML).unwrap();
        let d = cfg.describe().unwrap();
        let g = &d.geometry;
        assert_eq!(d.user_bytes, g.logical_units * g.mapping_unit_bytes as u64);
        assert!(
            d.over_provisioning_of_user >= d.gc_spare_of_user,
            "held blocks count as spare"
        );
        assert!(d.gc_spare_of_user > 0.0 && d.over_provisioning_of_raw < 1.0);
        assert_eq!(
            d.link_line_bytes_per_s,
            cfg.host.sata_line_gbit_per_s * 1e9 / 10.0
        );
        assert!(d.link_bytes_per_s as f64 <= d.link_line_bytes_per_s);
        assert!(d.seq_read_ceiling_bytes_per_s <= d.link_line_bytes_per_s);
        assert_eq!(d.map_dram_bytes, g.map_dram_bytes);
    }
}
