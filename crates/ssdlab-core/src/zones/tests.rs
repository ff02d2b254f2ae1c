//! A zoned namespace on the small test drive: the state machine's refusals change nothing,
//! appends in flight take distinct ascending LBAs, resets empty zones and erase their blocks,
//! and the drive never collects zone data.

use super::*;
use crate::config::tests::small;
use crate::config::{DriveConfig, PlacementConfig};
use crate::device::{Completion, Device, HostIo, IoKind};
use crate::ftl::{NO_PLACEMENT, UNMAPPED};

const ZONE: u64 = 2 << 20;

fn zoned(max_open: u32, max_active: u32) -> DriveConfig {
    let mut cfg = small();
    let mut p = PlacementConfig::default_zns(ZONE, max_open);
    p.max_active_zones = max_active;
    cfg.placement = Some(p);
    cfg
}

fn io(kind: IoKind, offset_bytes: u64, length_bytes: u64, tag: u64) -> HostIo {
    HostIo {
        kind,
        offset_bytes,
        length_bytes,
        fua: false,
        tag,
        placement: NO_PLACEMENT,
    }
}

/// Submit `ios` at the current time and run until they all complete.
fn run(dev: &mut Device, ios: &[HostIo]) -> Vec<Completion> {
    for &i in ios {
        let t = dev.now();
        dev.submit(i, t);
    }
    let mut done = Vec::new();
    while done.len() < ios.len() {
        assert!(dev.step(), "commands outstanding and no event");
        done.extend(dev.drain_completions());
    }
    done
}

fn one(dev: &mut Device, i: HostIo) -> Completion {
    run(dev, &[i])[0]
}

/// The FTL's map of every unit the namespace's zones can hold.
fn map_of(dev: &Device) -> Vec<u32> {
    let z = dev.zones().unwrap().geometry;
    (0..(z.zones as u64 * z.capacity_units) as u32)
        .map(|u| dev.ftl.lookup(u))
        .collect()
}

#[test]
fn the_zoned_namespace_takes_its_shape_from_the_zone_size() {
    let dev = Device::new(&zoned(4, 6), 1).unwrap();
    let z = dev.zones().unwrap().geometry;
    // 2 MiB zones of 512 KiB blocks over 4 dies: one block on every die, capacity = size.
    assert_eq!(
        (z.size_units, z.capacity_units, z.dies_per_zone),
        (512, 512, 4)
    );
    assert_eq!(z.zones as u64, dev.geometry.logical_units / 512);
    assert_eq!((z.max_open, z.max_active), (4, 6));
    assert_eq!(dev.namespace_bytes(), z.zones as u64 * ZONE);
}

#[test]
fn a_write_off_the_write_pointer_fails_and_changes_nothing() {
    let mut dev = Device::new(&zoned(4, 4), 1).unwrap();
    assert_eq!(
        one(&mut dev, io(IoKind::Write, 0, 65536, 1)).status,
        Status::Success
    );
    let (map, report, counters) = (
        map_of(&dev),
        dev.zone_report(0, 100),
        dev.ftl.counters.clone(),
    );
    for (offset, length, status) in [
        (0, 4096, Status::ZoneInvalidWrite), // behind the write pointer
        (65536 + 4096, 4096, Status::ZoneInvalidWrite), // beyond it
        (ZONE + 8192, 4096, Status::ZoneInvalidWrite), // an empty zone, not at its start
        (65536, ZONE, Status::ZoneBoundaryError), // past the zone's capacity
        (65536, 1000, Status::InvalidField), // not whole units
    ] {
        let c = one(&mut dev, io(IoKind::Write, offset, length, 2));
        assert!(c.failed);
        assert_eq!(c.status, status, "write at {offset} of {length}");
    }
    let beyond = dev.namespace_bytes();
    assert_eq!(
        one(&mut dev, io(IoKind::Write, beyond, 4096, 3)).status,
        Status::LbaOutOfRange
    );
    // Deallocate is advisory: a TRIM completes and empties nothing (zones are reset).
    assert_eq!(
        one(&mut dev, io(IoKind::Trim, 0, 4096, 4)).status,
        Status::Success
    );
    assert_eq!(map_of(&dev), map);
    assert_eq!(dev.zone_report(0, 100), report);
    assert_eq!(
        dev.ftl.counters.host_units_written,
        counters.host_units_written
    );
    // The write at the write pointer still goes.
    assert_eq!(
        one(&mut dev, io(IoKind::Write, 65536, 4096, 5)).status,
        Status::Success
    );
    assert_eq!(dev.zone_report(0, 1)[0].write_pointer_bytes, 65536 + 4096);
}

#[test]
fn one_zone_more_than_the_open_or_active_limit_is_refused() {
    let mut dev = Device::new(&zoned(2, 3), 1).unwrap();
    dev.zone_manage(0, ZoneAction::Open).unwrap();
    dev.zone_manage(1, ZoneAction::Open).unwrap();
    // Both open zones are explicitly opened: a third cannot open.
    let c = one(&mut dev, io(IoKind::Write, 2 * ZONE, 4096, 1));
    assert_eq!(c.status, Status::TooManyOpenZones);
    assert_eq!(
        dev.zone_manage(2, ZoneAction::Open),
        Err(Status::TooManyOpenZones)
    );
    // Closed zones stay active: with three active, a fourth is refused.
    dev.zone_manage(1, ZoneAction::Close).unwrap();
    assert_eq!(
        one(&mut dev, io(IoKind::Write, 2 * ZONE, 4096, 2)).status,
        Status::Success
    );
    assert_eq!(dev.zones().unwrap().open_and_active(), (2, 3));
    let c = one(&mut dev, io(IoKind::Write, 3 * ZONE, 4096, 3));
    assert_eq!(c.status, Status::TooManyActiveZones);
    // An implicitly opened zone is closed to make room for another open.
    assert_eq!(
        one(&mut dev, io(IoKind::Write, ZONE, 4096, 4)).status,
        Status::Success
    );
    let states: Vec<ZoneState> = dev.zone_report(0, 3).iter().map(|d| d.state).collect();
    assert_eq!(
        states,
        [
            ZoneState::ExplicitlyOpened,
            ZoneState::ImplicitlyOpened,
            ZoneState::Closed
        ]
    );
    // Finishing one frees its active resource; the fourth zone opens by closing the
    // implicitly opened one.
    dev.zone_manage(2, ZoneAction::Finish).unwrap();
    assert_eq!(
        one(&mut dev, io(IoKind::Write, 3 * ZONE, 4096, 5)).status,
        Status::Success
    );
    let states: Vec<ZoneState> = dev.zone_report(0, 4).iter().map(|d| d.state).collect();
    assert_eq!(
        states,
        [
            ZoneState::ExplicitlyOpened,
            ZoneState::Closed,
            ZoneState::Full,
            ZoneState::ImplicitlyOpened
        ]
    );
    assert_eq!(dev.zones().unwrap().open_and_active(), (2, 3));
    // State transitions the specification does not allow.
    assert_eq!(
        dev.zone_manage(2, ZoneAction::Close),
        Err(Status::ZoneInvalidStateTransition)
    );
    assert_eq!(
        dev.zone_manage(5, ZoneAction::Close),
        Err(Status::ZoneInvalidStateTransition)
    );
    assert_eq!(
        one(&mut dev, io(IoKind::Write, 2 * ZONE, 4096, 7)).status,
        Status::ZoneIsFull
    );
}

#[test]
fn appends_in_flight_to_one_zone_return_distinct_ascending_lbas() {
    let mut dev = Device::new(&zoned(4, 4), 1).unwrap();
    let zone = 3 * ZONE;
    let appends: Vec<HostIo> = (0..16)
        .map(|t| io(IoKind::ZoneAppend, zone, 16384, t))
        .collect();
    let mut done = run(&mut dev, &appends);
    done.sort_by_key(|c| c.io.tag);
    let lbas: Vec<u64> = done.iter().map(|c| c.io.offset_bytes).collect();
    assert!(done.iter().all(|c| c.status == Status::Success));
    assert_eq!(lbas, (0..16).map(|k| zone + k * 16384).collect::<Vec<_>>());
    assert_eq!(
        dev.zone_report(3, 1)[0].write_pointer_bytes,
        zone + 16 * 16384
    );
    // An append not naming the zone's start is refused.
    let c = one(&mut dev, io(IoKind::ZoneAppend, zone + 4096, 4096, 99));
    assert_eq!(c.status, Status::InvalidField);
}

#[test]
fn reset_empties_a_zone_erases_its_blocks_and_its_reads_return_unwritten_data() {
    let mut dev = Device::new(&zoned(4, 4), 1).unwrap();
    let writes: Vec<HostIo> = (0..ZONE / 131072)
        .map(|k| io(IoKind::Write, ZONE + k * 131072, 131072, k))
        .collect();
    for w in writes {
        assert_eq!(one(&mut dev, w).status, Status::Success);
    }
    assert_eq!(dev.zone_report(1, 1)[0].state, ZoneState::Full);
    let z = dev.zones().unwrap().geometry;
    let units = z.capacity_units as u32..2 * z.capacity_units as u32;
    assert!(units.clone().all(|u| dev.ftl.lookup(u) != UNMAPPED));
    let erased = dev.ftl.counters.blocks_erased;
    dev.zone_manage(1, ZoneAction::Reset).unwrap();
    assert!(units.clone().all(|u| dev.ftl.lookup(u) == UNMAPPED));
    // Its four blocks (one a die) erased at once, nothing copied.
    assert_eq!(dev.ftl.counters.blocks_erased - erased, 4);
    assert_eq!(dev.ftl.counters.gc_units_copied, 0);
    let d = dev.zone_report(1, 1)[0];
    assert_eq!((d.state, d.write_pointer_bytes), (ZoneState::Empty, ZONE));
    let read = dev.ftl.counters.host_units_read;
    let c = one(&mut dev, io(IoKind::Read, ZONE, 65536, 7));
    assert_eq!(c.status, Status::Success);
    assert_eq!(dev.ftl.counters.host_units_read - read, 16);
    // The zone takes writes from its start again.
    assert_eq!(
        one(&mut dev, io(IoKind::Write, ZONE, 4096, 8)).status,
        Status::Success
    );
}

#[test]
fn resets_and_rewrites_never_collect_zone_data() {
    let mut dev = Device::new(&zoned(8, 8), 3).unwrap();
    let z = dev.zones().unwrap().geometry;
    let mut rng = crate::rng::Rng::new(5);
    let chunk = 262144;
    let mut written = 0u64;
    // Four namespace-writes of whole zones, each to a random zone reset first if written.
    while written < 4 * z.zones as u64 * ZONE {
        let zone = rng.below(z.zones as u64) as u32;
        if dev.zone_report(zone, 1)[0].state != ZoneState::Empty {
            dev.zone_manage(zone, ZoneAction::Reset).unwrap();
        }
        let ios: Vec<HostIo> = (0..ZONE / chunk)
            .map(|k| io(IoKind::Write, zone as u64 * ZONE + k * chunk, chunk, k))
            .collect();
        for c in run(&mut dev, &ios) {
            assert_eq!(c.status, Status::Success);
        }
        written += ZONE;
    }
    let c = &dev.ftl.counters;
    assert_eq!(c.gc_units_copied, 0);
    assert_eq!(c.gc_victims, 0);
    assert_eq!(c.host_units_written, written / 4096);
    assert!(c.blocks_erased > 0);
    assert!(dev.ftl.verify().is_ok(), "{:?}", dev.ftl.verify());
}

#[test]
fn zone_commands_to_a_conventional_namespace_are_refused() {
    let mut dev = Device::new(&small(), 1).unwrap();
    assert_eq!(
        dev.zone_manage(0, ZoneAction::Reset),
        Err(Status::InvalidCommand)
    );
    let c = one(&mut dev, io(IoKind::ZoneAppend, 0, 4096, 1));
    assert_eq!(c.status, Status::InvalidCommand);
    assert!(dev.zone_report(0, 10).is_empty());
}

#[test]
fn a_zone_size_not_a_power_of_two_or_below_a_block_names_its_field() {
    for bytes in [3 << 20, 256 << 10, 0] {
        let mut cfg = zoned(4, 4);
        cfg.placement.as_mut().unwrap().zone_bytes = bytes;
        let e = cfg.validate().unwrap_err();
        assert_eq!(e.field, "placement.zone_bytes", "{bytes}");
        assert!(e.message.contains("a power of two"), "{}", e.message);
    }
    let mut cfg = zoned(6, 4);
    cfg.placement.as_mut().unwrap().max_active_zones = 4;
    assert_eq!(
        cfg.validate().unwrap_err().field,
        "placement.max_open_zones"
    );
}

/// Reads of a zone's data (full, and partly written) complete at a NAND read's time, with
/// reads moving only the sectors asked for: a zone's units are numbered by its capacity, not
/// its size (a partial read once took its bytes from the unit's number as if it were the
/// offset's, underflowed, and held the bus for centuries).
#[test]
fn reads_of_written_zone_data_complete() {
    let mut cfg = zoned(6, 6);
    cfg.nand.read_sector_bytes = 512;
    // Three of a zone's four blocks: zone z's units start at 3/4 of z's offset / unit.
    cfg.placement.as_mut().unwrap().zone_capacity_bytes = ZONE / 4 * 3;
    let mut dev = Device::new(&cfg, 1).unwrap();
    for k in 0..ZONE / 4 * 3 / 131072 {
        let c = one(&mut dev, io(IoKind::Write, ZONE + k * 131072, 131072, k));
        assert_eq!(c.status, Status::Success);
    }
    for k in 0..3 {
        let c = one(
            &mut dev,
            io(IoKind::Write, 2 * ZONE + k * 4096, 4096, 100 + k),
        );
        assert_eq!(c.status, Status::Success);
    }
    // Four zones open at once, each partly written (their units interleaved on the dies).
    for k in 0..12u64 {
        let zone = 3 + k % 4;
        let c = one(
            &mut dev,
            io(
                IoKind::Write,
                zone * ZONE + (k / 4) * 131072,
                131072,
                300 + k,
            ),
        );
        assert_eq!(c.status, Status::Success);
    }
    // Everything on the NAND (a FLUSH pads the zones' partial program units), then read.
    one(&mut dev, HostIo::flush(400));
    dev.run_until(crate::time::SimTime(u64::MAX));
    let reads = [
        (ZONE, 200),
        (ZONE + 65536, 201),
        (2 * ZONE, 202),
        (3 * ZONE, 203),
        (4 * ZONE + 131072, 204),
        (6 * ZONE + 4096, 205),
    ];
    for (at, tag) in reads {
        let t = dev.now();
        let (nand_reads, bus) = (
            dev.nand().counters.page_reads,
            dev.nand().counters.bus_bytes,
        );
        let c = one(&mut dev, io(IoKind::Read, at, 4096, tag));
        assert_eq!(c.status, Status::Success);
        assert!(
            dev.nand().counters.page_reads > nand_reads,
            "read at {at}: from the buffer"
        );
        // The eight sectors asked for cross the bus, and nothing else.
        assert_eq!(dev.nand().counters.bus_bytes - bus, 4096, "read at {at}");
        let took = c.completed.ns() - t.ns();
        assert!(took < 10_000_000, "read at {at}: {took} ns");
    }
}
