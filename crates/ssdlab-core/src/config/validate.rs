//! Validation by area, once, before a drive is built: every field and the relationships
//! between them, each check in the function of its area, and the geometry that follows
//! (`DriveConfig::validate`). An error names the field and what is accepted.

use super::*;

impl DriveConfig {
    /// Check every field and the relationships between them; derive the geometry. The checks
    /// go by area, each in its own function: seeded faults, the NAND, the FTL's layout (which
    /// gives the geometry), what the layout must hold (map DRAM, user capacity with the
    /// collector's reserve, the write buffer), garbage collection, the controller, the host.
    pub fn validate(&self) -> Result<Geometry, ConfigError> {
        self.check_faults()?;
        self.check_nand()?;
        let g = self.geometry()?;
        self.check_capacity(&g)?;
        if let Some(p) = &self.placement {
            p.check(&g, self.spare_blocks_per_die(&g))?;
        }
        self.check_gc()?;
        self.check_controller()?;
        self.check_host()?;
        if let Some(p) = &self.power {
            p.check()
                .map_err(|(field, message)| ConfigError { field, message })?;
            if p.dram.is_some() && self.controller.dram_bytes == 0 {
                return Err(ConfigError {
                    field: "power.dram".into(),
                    message: "the DRAM's power is given per GiB, but controller.dram_bytes is 0; accepted: the DRAM's size in controller.dram_bytes, or no [power.dram] (its power then in the idle figures)".into(),
                });
            }
        }
        if let Some(t) = &self.thermal {
            if self.power.is_none() {
                return Err(ConfigError {
                    field: "thermal".into(),
                    message: "a heat model needs the drive's power: add a [power] section".into(),
                });
            }
            t.check()
                .map_err(|(field, message)| ConfigError { field, message })?;
        }
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
        n.check_page_types(f.mapping_unit_bytes.max(1))?;
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
        let sector = n.read_sector_bytes;
        if sector != 0 && (sector < 512 || !sector.is_power_of_two() || sector > unit) {
            return Err(err(
                "nand.read_sector_bytes",
                format!("{sector}; accepted: 0 (whole mapping units) or a power of two from 512 to ftl.mapping_unit_bytes = {unit}"),
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
        // A block's valid count shares its entry with the greedy collector's key.
        let most = super::MAX_UNITS_PER_BLOCK;
        if units_per_block > most {
            return Err(err(
                "nand.pages_per_block",
                format!("{units_per_block} mapping units per block; accepted: up to {most} (fewer pages per block, or a larger ftl.mapping_unit_bytes)"),
            ));
        }
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

    /// Blocks each die keeps beyond its share of user data, the collector's reserve and its
    /// two open blocks (host, collector): what further streams' open blocks can take.
    fn spare_blocks_per_die(&self, g: &Geometry) -> u64 {
        let usable_units = g.usable_bytes / g.mapping_unit_bytes as u64;
        let spare_units = usable_units.saturating_sub(g.logical_units);
        let per_die = spare_units / (g.dies as u64 * g.data_units_per_block as u64);
        per_die.saturating_sub(self.collection_reserve_blocks_per_die() + 1)
    }

    /// Free blocks each die keeps for collection, and its two open blocks.
    fn collection_reserve_blocks_per_die(&self) -> u64 {
        let f = &self.ftl;
        f.gc_foreground_free_blocks_min
            .max(match f.gc_foreground_mode {
                GcForegroundMode::Deferred => f.gc_deferred_free_blocks_target,
                _ => 0,
            })
            .max(match f.gc_pace {
                GcPace::Nominal => f.gc_free_blocks_high,
                GcPace::Victim => 0,
            }) as u64
            + 2
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
        let fits = |reserve_blocks_per_die: u64| {
            usable_units as i64
                - logical_units as i64
                - (dies as u64 * reserve_blocks_per_die * data_units_per_block as u64) as i64
                > dies as i64 * data_units_per_block as i64
        };
        let minimum = f.gc_foreground_free_blocks_min as u64 + 2;
        // A schedule that keeps more free blocks than the foreground minimum is named when it
        // is what does not fit (deferred collection's target, the nominal pace's high
        // watermark): the largest value that would.
        for (field, blocks, applies) in [
            (
                "ftl.gc_deferred_free_blocks_target",
                f.gc_deferred_free_blocks_target,
                f.gc_foreground_mode == GcForegroundMode::Deferred,
            ),
            (
                "ftl.gc_free_blocks_high",
                f.gc_free_blocks_high,
                f.gc_pace == GcPace::Nominal,
            ),
        ] {
            if applies && fits(minimum) && !fits(blocks as u64 + 2) {
                let most = (f.gc_foreground_free_blocks_min as u64..blocks as u64)
                    .take_while(|&b| fits(b + 2))
                    .last()
                    .unwrap_or(f.gc_foreground_free_blocks_min as u64);
                return Err(err(
                    field,
                    format!(
                        "{blocks} free blocks per die leave no spare for garbage collection beyond the user data; accepted: at most {most}"
                    ),
                ));
            }
        }
        let reserve_blocks_per_die = self.collection_reserve_blocks_per_die();
        if !fits(reserve_blocks_per_die) {
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
        if f.gc_free_blocks_low < f.gc_foreground_free_blocks_min {
            return Err(err(
                "ftl.gc_free_blocks_low",
                "must be >= ftl.gc_foreground_free_blocks_min",
            ));
        }
        if f.gc_free_blocks_high < f.gc_free_blocks_low {
            return Err(err(
                "ftl.gc_free_blocks_high",
                "must be >= ftl.gc_free_blocks_low",
            ));
        }
        if f.gc_pace == GcPace::Nominal
            && !matches!(
                f.gc_foreground_mode,
                GcForegroundMode::Paced | GcForegroundMode::Burst
            )
        {
            return Err(err(
                "ftl.gc_pace",
                "nominal pacing applies to ftl.gc_foreground_mode paced or burst; accepted: \"victim\" with on-demand or deferred collection",
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
        if f.host_die_candidates != 0 && f.host_die_choice != super::HostDieChoice::SkipCollecting {
            return Err(err(
                "ftl.host_die_candidates",
                "applies to ftl.host_die_choice = \"skip-collecting\"; accepted: 0 (or leave it out) with round-robin",
            ));
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
