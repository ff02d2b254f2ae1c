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
            read_page_us_max: None,
            program_page_us: 1000.0,
            program_page_us_typ: None,
            read_page_type_factors: Vec::new(),
            program_page_type_factors: Vec::new(),
            one_shot_program: false,
            erase_block_us: 3000.0,
            bus_mb_per_s: 200.0,
            bus_command_ns: 200,
            multi_plane_overhead_pct: 2.0,
            cache_program: true,
            pe_cycles_rated: 3000,
            copyback: false,
            read_sector_bytes: 0,
        },
        controller: ControllerConfig {
            name: "test".into(),
            command_ns: 5_000,
            dram_bytes: 0,
            read_mb_per_s: 0.0,
            write_mb_per_s: 0.0,
            gc_copy_ns_per_unit: 0,
            gc_victim_ns: 0,
            read_extra_ns: 0,
            write_extra_ns: 0,
            front_end_ns: 0,
            write_cache: true,
            power_loss_protection: PowerLossProtection::None,
            self_encrypting: false,
            crypto_erase_us: 0,
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
            gc_pace: GcPace::Victim,
            host_die_choice: super::HostDieChoice::RoundRobin,
            host_die_candidates: 0,
            gc_free_blocks_low: 3,
            gc_free_blocks_high: 6,
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
            driver_ns: 0,
        },
        datasheet: Datasheet::default(),
        faults: Default::default(),
        power: None,
        thermal: None,
        placement: None,
    }
}

/// `small` with the firmware's map persistence on: journal records of 8 bytes (1024 per
/// 8 KiB page), a checkpoint every `checkpoint_journal_pages` journal pages, two metadata
/// blocks per die.
pub fn small_journaled(checkpoint_journal_pages: u32) -> DriveConfig {
    let mut cfg = small();
    cfg.ftl.map_journal_entry_bytes = 8;
    cfg.ftl.map_checkpoint_journal_pages = checkpoint_journal_pages;
    cfg.ftl.map_blocks_per_die = 2;
    cfg
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
fn a_high_watermark_beyond_the_spare_is_named_with_what_fits() {
    let mut c = small();
    c.ftl.gc_pace = GcPace::Nominal;
    c.ftl.gc_free_blocks_high = 1_000_000;
    let e = c.validate().unwrap_err();
    assert_eq!(e.field, "ftl.gc_free_blocks_high");
    let most: u32 = e
        .message
        .rsplit("at most ")
        .next()
        .unwrap()
        .parse()
        .unwrap();
    c.ftl.gc_free_blocks_high = most;
    c.validate().unwrap();
    c.ftl.gc_free_blocks_high = most + 1;
    assert_eq!(c.validate().unwrap_err().field, "ftl.gc_free_blocks_high");
}

#[test]
fn gc_watermarks_and_pace_are_checked() {
    let mut c = small();
    c.ftl.gc_free_blocks_low = 2;
    assert_eq!(c.validate().unwrap_err().field, "ftl.gc_free_blocks_low");
    let mut c = small();
    c.ftl.gc_free_blocks_high = 2;
    assert_eq!(c.validate().unwrap_err().field, "ftl.gc_free_blocks_high");
    let mut c = small();
    c.ftl.gc_pace = GcPace::Nominal;
    c.ftl.gc_foreground_mode = GcForegroundMode::OnDemand;
    let e = c.validate().unwrap_err();
    assert_eq!(e.field, "ftl.gc_pace");
    assert!(e.message.contains("accepted"), "{e}");
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
    // 16,384 pages of 4 units: a block's count would not fit its 16 bits.
    let mut c = small();
    c.nand.pages_per_block = 16384;
    let e = c.validate().unwrap_err();
    assert_eq!(e.field, "nand.pages_per_block");
    assert!(e.message.contains("accepted: up to 65534"), "{e}");
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
        (with_meta.over_provisioning_of_raw() - without.over_provisioning_of_raw()).abs() < 1e-12
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
fn a_retired_field_says_what_replaced_it() {
    let mut text = small().to_toml_string();
    text = text.replace("[host]\n", "[host]\ncommand_latency_ns = 20000\n");
    let e = DriveConfig::from_toml_str(&text).unwrap_err();
    assert!(e.contains("unknown field `command_latency_ns`"), "{e}");
    assert!(
        e.contains("host.driver_ns") && e.contains("controller.front_end_ns"),
        "{e}"
    );
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

/// A choice given as a number (or any other non-string) names the choices it takes, where toml
/// alone says only "wanted string or table"; the line and column stay.
#[test]
fn a_choice_given_as_a_number_names_its_accepted_values() {
    let text = crate::EXAMPLE_DRIVE_TOML.replace("[ftl]\n", "[ftl]\nhost_die_choice = 7\n");
    let e = DriveConfig::from_toml_str(&text).unwrap_err();
    assert!(e.contains("wanted string or table"), "{e}");
    assert!(e.contains("host_die_choice = 7"), "{e}");
    assert!(
        e.contains("accepted: `round-robin` or `skip-collecting`"),
        "{e}"
    );
    // A misspelt name keeps serde's own list.
    let text = crate::EXAMPLE_DRIVE_TOML.replace("[ftl]\n", "[ftl]\nhost_die_choice = \"fast\"\n");
    let e = DriveConfig::from_toml_str(&text).unwrap_err();
    assert!(
        e.contains("unknown variant `fast`, expected `round-robin` or `skip-collecting`"),
        "{e}"
    );
}

/// `small` with FDP: `handles` initially isolated handles.
fn small_fdp(handles: usize) -> DriveConfig {
    let mut cfg = small();
    cfg.placement = Some(PlacementConfig {
        mode: PlacementMode::Fdp,
        reclaim_groups: 1,
        reclaim_unit_blocks: 1,
        handles: vec![RuhType::InitiallyIsolated; handles],
        max_pids: 0,
        pids: Vec::new(),
        source: String::new(),
        ..PlacementConfig::default_fdp()
    });
    cfg
}

#[test]
fn bad_placement_names_its_field_and_what_is_accepted() {
    assert!(small_fdp(4).validate().is_ok());
    type Spoil = fn(&mut PlacementConfig);
    let cases: [(&str, Spoil, &str); 6] = [
        (
            "placement.handles",
            |p| p.handles.clear(),
            "accepted: 1 to 128",
        ),
        (
            "placement.reclaim_groups",
            |p| p.reclaim_groups = 3,
            "accepted: a divisor of the dies",
        ),
        (
            "placement.pids",
            |p| {
                p.max_pids = 2;
                p.pids = vec![0, 1, 2];
            },
            "accepted: at most MAXPIDS (2",
        ),
        (
            "placement.pids[1]",
            |p| p.pids = vec![0, 4],
            "accepted: a reclaim unit handle, 0 to 3",
        ),
        (
            "placement.reclaim_unit_blocks",
            |p| p.reclaim_unit_blocks = 65,
            "a reclaim unit no larger than its group",
        ),
        (
            "placement.handles",
            |p| p.handles = vec![RuhType::PersistentlyIsolated; 4],
            "accepted: fewer handles, or more spare",
        ),
    ];
    for (field, spoil, accepted) in cases {
        let mut cfg = small_fdp(4);
        spoil(cfg.placement.as_mut().unwrap());
        let e = cfg.validate().unwrap_err();
        assert_eq!(e.field, field, "{e}");
        assert!(e.message.contains(accepted), "{e}");
    }
}

#[test]
fn page_types_that_change_the_parts_time_are_refused() {
    // small(): 32 pages per block (17 lower, 15 upper), tR 50 us, tPROG 1000 us.
    let with = |read: &[f64], program: &[f64], one_shot: bool| {
        let mut c = small();
        c.nand.read_page_type_factors = read.to_vec();
        c.nand.program_page_type_factors = program.to_vec();
        c.nand.one_shot_program = one_shot;
        c.validate().map(|_| ()).map_err(|e| e.to_string())
    };
    // 17 x 0.8 + 15 x 1.2267 = 32 (within 0.5%); 17 x 0.6 + 15 x 1.4533 = 32.
    assert_eq!(with(&[0.8, 1.2267], &[0.6, 1.4533], false), Ok(()));
    let cases: [(&[f64], &[f64], bool, &str); 6] = [
        (&[0.96, 1.28], &[0.6, 1.4533], false, "field `nand.read_page_type_factors`: their mean over a block (17, 15 of each type) is 1.1100, not 1 (within 0.5%): the page types split nand.read_page_us = 50 us, they do not change it (the types' times here average 55.5 us)"),
        (&[0.8, 1.2267], &[0.85, 2.3], false, "field `nand.program_page_type_factors`: their mean over a block (17, 15 of each type) is 1.5297, not 1"),
        (&[0.8, 1.2267], &[], false, "field `nand.program_page_type_factors`: 0 factors for 2 read factors"),
        (&[1.0; 4], &[1.0; 4], false, "field `nand.read_page_type_factors`: 4 page types; accepted: 1 (SLC), 2 (MLC: lower, upper) or 3 (TLC"),
        (&[0.8, 1.0, 1.2], &[1.0; 3], true, "field `nand.program_page_type_factors`: must be empty with nand.one_shot_program"),
        (&[0.8, -1.2267], &[0.6, 1.4533], false, "field `nand.read_page_type_factors`: -1.2267; each factor must be a positive number"),
    ];
    for (read, program, one_shot, message) in cases {
        let got = with(read, program, one_shot).unwrap_err();
        assert!(got.starts_with(message), "{got}");
    }
    // A one-shot wordline of 8 KiB does not split into 3 types of 4 KiB units.
    let got = with(&[0.8, 1.0, 1.2], &[], true).unwrap_err();
    assert!(got.contains("do not split into 3 page types"), "{got}");
}
