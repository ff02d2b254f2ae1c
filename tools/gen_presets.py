"""Generate python/ssdlab/presets/*.toml from ../shared/reference/{drives,nand-parts}.toml.

Every value is taken from the reference files, from physics, or from a calibration named in
docs/fidelity.md; every assumption is marked "ASSUMED" in the generated file. Run:

    python tools/gen_presets.py [--reference ../shared/reference] [--check]

--check compares with the committed files instead of writing them (used by the tests).
"""

from __future__ import annotations

import argparse
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "python" / "ssdlab" / "presets"
GIB = 1 << 30

# Controller firmware time per command, calibrated once per controller (not per drive): the
# 4 KiB random-read rating of the controller's largest client drive, where the NAND is far
# from the limit, so 1e9 / rating is the command cost. See docs/fidelity.md.
CONTROLLER_COMMAND_NS = {
    "marvell-88ss9174": (16_700, "1e9 / 60K IOPS: P400m 400GB random-read rating (the m4 has no rating)"),
    "marvell-88ss9187": (12_500, "1e9 / 80K IOPS: M500 480GB/960GB random-read rating"),
    "marvell-88ss9189": (10_500, "1e9 / 95K IOPS: M550 512GB/1TB random-read rating"),
    "idt-32ch-pcie": (1_270, "1e9 / 785K IOPS: P320h random-read rating"),
}

# Controller data-path rates (MB/s; 0 = only the link limits), calibrated once per controller
# on the sequential ratings of its drives where the NAND is far from the limit. See
# docs/fidelity.md for the residuals.
CONTROLLER_DATA_PATH = {
    "marvell-88ss9174": (405, 0, "read: 405 MB/s, the middle of the P400m (380) and P400e (430-440) sequential-read ratings; "
                                 "write: none (the m4 256GB 250, P400e 240 and P400m 310 MB/s disagree by 29%)"),
    "marvell-88ss9187": (500, 400, "M500 480GB/960GB sequential ratings (500 read, 400 write), 32-64 dies: NAND far from the limit"),
    "marvell-88ss9189": (550, 500, "M550 512GB/1TB sequential ratings (550 read, 500 write)"),
    "idt-32ch-pcie": (3250, 0, "read: the middle of P320h 3200 and P420m 3300 MB/s; write: none (P320h SLC 1900, P420m MLC 600-630)"),
}


# Firmware behaviour under sustained load, per controller and firmware family (client drives
# are rated fresh, enterprise drives at steady state; the M500 and M500DC share the 88SS9187
# with different firmware). `gc_copy_ns` is the processor time per unit garbage collection
# copies (controller.gc_copy_ns_per_unit), calibrated once per family on the 88SS9187: the
# client family on the one client steady-state measurement (measurements.md: M500 960GB
# consistency floor about 2,600 IOPS), the enterprise family on the M500DC steady-state
# random-write ratings of the capacities the NAND does not bound (480GB 35K, 800GB 24K IOPS).
# Controllers without such data carry the nearest family's value over, scaled by their
# per-command firmware time (the same processor work on a slower or faster processor):
# ASSUMED. docs/fidelity.md gives the fits and their residuals.
GC_COPY_NS_9187 = {"client": 33_000, "enterprise": 21_000}
FIRMWARE_SOURCE = {
    ("marvell-88ss9187", "client"): "calibrated: M500 960GB consistency floor (measurements.md)",
    ("marvell-88ss9187", "enterprise"): "calibrated: M500DC 480GB/800GB steady-state random-write ratings",
}
# When foreground collection runs (ftl.gc_foreground_mode). The m4's firmware defers cleanup
# (drives.toml: fast random writes "achieved by not defragmenting on the fly"; a sequential
# pass after random writes is far slower, a second one recovers); the others collect paced
# with host writes (measurements.md: the M500 holds a floor "with the per-second values
# consistent around it"); ASSUMED for the drives without a measurement.
GC_MODE = {"crucial-m4": ("deferred", "drives.toml m4 note: not defragmenting on the fly")}
# Host command latency outside the drive's serialised resources (host.command_latency_ns).
# ASSUMED: SATA 20 us = AHCI driver path about 6 us (Intel's NVMe-versus-AHCI comparison:
# 6 us AHCI, 2.8 us NVMe) plus the FPDMA queued protocol's frames and the firmware's command
# and completion handling; PCIe 10 us.
COMMAND_LATENCY_NS = {"sata": 20_000, "pcie": 10_000}

# [power] of the SATA drives (crates/ssdlab-core/src/power.rs), per controller where a figure
# is the controller's and per NAND generation where it is the part's. (value, source).
# The PCIe drives have no power model yet (issue 23: their vendors rate maximum power and
# power modes, which need the power budget of the scheduler first).
NAND_POWER = [
    ("nand_vcc_v", 3.3, "ONFI core supply (nand-parts.toml parts run VCC 2.7-3.6 V)"),
    ("nand_icc_read_ma", 25.0, "Micron MLC datasheets, DC characteristics: ICC1 array read 25 mA typ (50 max)"),
    ("nand_icc_program_ma", 25.0, "Micron MLC datasheets: ICC2 array program 25 mA typ (50 max)"),
    ("nand_icc_erase_ma", 25.0, "Micron MLC datasheets: ICC3 erase 25 mA typ (50 max)"),
    ("nand_vccq_v", 1.8, "ASSUMED: 1.8 V I/O, as the parts' synchronous ONFI 2/3 mode runs it"),
    ("nand_iccq_io_ma", 20.0, "ASSUMED: I/O burst current at the bus rate (Micron datasheets give ICCQ per mode; not taken here)"),
]
# Idle powers and link timings: no vendor publishes them for these drives. The M500 and M550
# datasheets rate "150 mW TYP: active average power measured during MobileMark with DIPM
# enabled" (Micron m500_2_5_ssd.pdf Rev G and m550 datasheets, feature list note 4): a
# mostly idle, DIPM workload, so the slumber figure is set to keep that average near 150 mW.
CONTROLLER_POWER = {
    # (controller_busy_w, idle_active_w, idle_partial_w, idle_slumber_w, idle_devsleep_w)
    "marvell-88ss9174": (0.5, 1.0, 0.4, 0.15, 0.15, "ASSUMED: figures as the 9187's, slumber higher (older PHY); no DevSleep (drives.toml lists none): DEVSLP leaves it in Slumber"),
    "marvell-88ss9187": (0.5, 1.0, 0.35, 0.10, 0.005, "ASSUMED, slumber fitted to the M500's 150 mW TYP MobileMark/DIPM rating (validate --groups power: residual in docs/fidelity.md); DevSleep at the 5 mW the DevSleep feature targets"),
    "marvell-88ss9189": (0.5, 0.8, 0.25, 0.11, 0.004, "ASSUMED, active and partial below the 9187's for the 9189's 'enhanced power management' and LPDDR2 (drives.toml notes); slumber fitted to the M550's 150 mW TYP MobileMark/DIPM rating (validate --groups power: residual in docs/fidelity.md)"),
}
LINK_POWER = [
    ("partial_exit_us", 10.0, "SATA 3.2 limit for Partial -> active (drives' own not published)"),
    ("slumber_exit_us", 10000.0, "SATA 3.2 limit for Slumber -> active (drives' own not published)"),
    ("devsleep_exit_us", 20000.0, "SATA 3.2 DevSleep exit timeout default (DETO 20 ms; drives' own not published)"),
    ("dipm_partial_after_us", 100.0, "ASSUMED: firmware's DIPM timer to Partial"),
    ("dipm_slumber_after_us", 10000.0, "ASSUMED: firmware's DIPM timer to Slumber"),
]


# [thermal] of the SATA drives (crates/ssdlab-core/src/thermal.rs).
THERMAL = [
    ("ambient_c", 25.0, "the air around the drive (edit for a hot case)"),
    ("airflow_m_per_s", 0.0, "still air (edit for a fan)"),
    ("resistance_still_air_c_per_w", 10.0, "ASSUMED: controller to ambient of a 2.5-inch drive in still air (not published)"),
    ("capacitance_j_per_c", 60.0, "70 g drive (M500 datasheet: 70 g max), mostly aluminium case at 0.9 J/(g C): about 60 J/C"),
]
# Throttling where a source names it.
THROTTLE = {
    "crucial-m500": (70.0, "drives.toml: thermal throttling above 70 C controller temperature"),
    "crucial-m550": (70.0, "ASSUMED 70 C as the M500's: the M550 datasheet lists 'adaptive thermal monitoring' without a threshold"),
}


def thermal_lines(key: str, controller: str) -> list[str]:
    """The [thermal] section of a SATA drive (empty for the others)."""
    if controller not in CONTROLLER_POWER:
        return []
    lines = ["[thermal]                       # crates/ssdlab-core/src/thermal.rs; docs/model.md 'Power'"]
    lines += [f"{k} = {v}    # {why}" for k, v, why in THERMAL]
    limit, src = THROTTLE.get(key, (0.0, "no throttling: drives.toml names none for this drive"))
    lines.append(f"throttle_c = {limit}    # {src}")
    lines.append(f"throttle_release_c = {limit - 5.0 if limit else 0.0}    # ASSUMED: 5 C of hysteresis")
    lines.append("throttle_active_dies_pct = 50.0    # ASSUMED: how far the firmware slows the NAND (not published)")
    return lines + [""]


def encryption_lines(d: dict) -> list[str]:
    """self_encrypting and crypto_erase_us of a drive whose features name always-on AES."""
    aes = [f for f in d.get("features", []) if f.startswith("AES-256")]
    if not aes:
        return []
    return [
        f'self_encrypting = true         # drives.toml features: "{aes[0]}"; the engine is always on, so every rating already runs through it (no cost in time)',
        "crypto_erase_us = 2000000       # ASSUMED: the datasheet says 'fast and secure erase' without a time",
    ]


# The PCIe drives: no link power states modelled (PCIe ASPM is not), so every idle state is
# the active one; a power budget where the datasheet rates the drive's power.
PCIE_POWER = (2.0, 8.0, "ASSUMED: controller ASIC, DDR3 and PCIe PHY of a 32-channel card (not published)")
P320H_POWER = ("P320h HHHL datasheet (realssd_p320h_hhhl_distribution.pdf Rev V): 25 W, 10 ms RMS "
               "('transient peaks above 25W are possible under heavy write workloads')")
POWER_LIMIT_W = {
    ("micron-p320h", 350): (25.0, P320H_POWER),
    ("micron-p320h", 700): (25.0, P320H_POWER),
    ("micron-p420m", 700): (25.0, "P420m HHHL datasheet (p420m_hhhl.pdf Rev O): power 700GB 25W RMS; 256 dies could draw far more, so the firmware must hold the NAND to it"),
    ("micron-p420m", 1400): (25.0, "P420m HHHL datasheet (p420m_hhhl.pdf Rev O): power 1.4TB 25W RMS; 256 dies could draw far more, so the firmware must hold the NAND to it"),
}


DRAM_LINE = ("dram_pj_per_byte = 160.0    # ASSUMED: DDR3 read/write energy of the order of 20 pJ per bit "
             "(I/O and core); idle and refresh are in the idle figures")


def power_lines(key: str, cap: int, controller: str) -> list[str]:
    """The [power] section of a drive with this controller."""
    lines = ["[power]                         # crates/ssdlab-core/src/power.rs; docs/model.md 'Power'"]
    lines += [f"{k} = {v}    # {why}" for k, v, why in NAND_POWER]
    if controller in CONTROLLER_POWER:
        busy, active, partial, slumber, devsleep, src = CONTROLLER_POWER[controller]
        lines += [f"controller_busy_w = {busy}    # ASSUMED: the processor above idle while it works"]
        lines += [DRAM_LINE]
        for k, v in (("idle_active_w", active), ("idle_partial_w", partial), ("idle_slumber_w", slumber), ("idle_devsleep_w", devsleep)):
            lines.append(f"{k} = {v}    # {src}")
        lines += [f"{k} = {v}    # {why}" for k, v, why in LINK_POWER]
    else:
        busy, active, src = PCIE_POWER
        lines += [f"controller_busy_w = {busy}    # {src}", DRAM_LINE]
        for k in ("idle_active_w", "idle_partial_w", "idle_slumber_w", "idle_devsleep_w"):
            lines.append(f"{k} = {active}    # {src}; no link power states (ASPM not modelled)")
        for k, _, _ in LINK_POWER:
            lines.append(f"{k} = 0.0    # no link power states modelled for PCIe")
    if (key, cap) in POWER_LIMIT_W:
        limit, src = POWER_LIMIT_W[(key, cap)]
        lines.append(f"power_limit_w = {limit}    # {src}")
    return lines + [""]
MAP_JOURNAL_ENTRY_BYTES = 8   # ASSUMED: 4-byte LBA + 4-byte physical address per record


def firmware(controller: str, family: str) -> tuple[int, str]:
    """gc_copy_ns_per_unit of a controller's firmware family, and where it comes from."""
    if (controller, family) in FIRMWARE_SOURCE:
        return GC_COPY_NS_9187[family], FIRMWARE_SOURCE[(controller, family)]
    ratio = CONTROLLER_COMMAND_NS[controller][0] / CONTROLLER_COMMAND_NS["marvell-88ss9187"][0]
    value = int(round(GC_COPY_NS_9187[family] * ratio, -2))
    return value, (f"ASSUMED: 88SS9187 {family} firmware's {GC_COPY_NS_9187[family]} ns carried over, "
                   f"x {ratio:.3f} (command_ns ratio)")


def map_blocks_per_die(logical_units: int, dies: int, block_bytes: int) -> int:
    """Blocks per die for the map's persistence: room for the whole map (4 bytes per 4 KiB
    unit) and as much journal (a checkpoint is due when the journal is as long as the map), plus
    one block for block summaries and the block being reclaimed."""
    map_bytes = logical_units * 4
    return -(-2 * map_bytes // (dies * block_bytes)) + 1


# Channel bus as each controller runs it (nand-parts.toml header: ONFI 2.x about 200 MB/s;
# ONFI 3.0 up to 400 MB/s, the 88SS9187/9189 run it at about 330 MB/s).
def bus_mb_per_s(controller: str, onfi: str) -> float:
    if onfi.startswith("3") and controller in ("marvell-88ss9187", "marvell-88ss9189"):
        return 330.0
    if onfi.startswith("3"):
        return 400.0
    return 200.0


# imft-34nm-slc: nand-parts.toml says geometry and timing are not published and asks for
# typical 34nm SLC values, stated as such. ASSUMED: 32 Gbit die, 4 KiB page, 64 pages per
# block, tR 25 us, tPROG 250 us, tBERS 1.5 ms, 2 planes, ONFI 2.x bus, 100K P/E.
SLC_34NM = {
    "die_capacity_gbit": 32, "page_size_kib": 4, "pages_per_block": 64, "read_page_us_max": 25,
    "program_page_us_typ": 250, "erase_block_ms_typ": 1.5, "planes_per_die": 2, "onfi": "2.x",
    "pe_cycles_rated": 100_000, "bits_per_cell": 1,
}


def part_values(parts: dict, name: str) -> tuple[dict, list[str]]:
    """Fill a part's unpublished fields, returning the notes of what was assumed."""
    notes = []
    p = dict(parts[name])
    if name == "imft-34nm-slc":
        p.update(SLC_34NM)
        notes.append("ASSUMED: whole part (typical 34nm SLC values; nand-parts.toml publishes none)")
    if "read_page_us_max" not in p:
        p["read_page_us_max"] = 115
        notes.append("ASSUMED: read_page_us = 115 (tR of the 128Gbit 20nm part with the same page size)")
    if "erase_block_ms_typ" not in p:
        p["erase_block_ms_typ"] = 3.8
        notes.append("ASSUMED: erase_block_us = 3800 (tBERS of the 128Gbit 20nm part)")
    if "planes_per_die" not in p:
        p["planes_per_die"] = 2
        notes.append("ASSUMED: planes_per_die = 2")
    if "onfi" not in p:
        p["onfi"] = "2.x"
        notes.append("ASSUMED: ONFI 2.x bus")
    for key in ("note",):
        if key in parts[name]:
            notes.append(f"part note: {parts[name][key]}")
    return p, notes


def listed(value, i):
    return value[i] if isinstance(value, list) else value


def drive_variants(drives: dict):
    """(preset name, drive key, index, capacity_gb, raw_gib, dies, rain, notes) for every drive."""
    for key, d in drives.items():
        caps = d["capacities_gb"]
        for i, cap in enumerate(caps):
            notes: list[str] = []
            if "raw_nand_gib" in d:
                raw = d["raw_nand_gib"][i]
            elif key == "micron-p400m":
                # 200GB model: 336 GiB raw (raw_nand_gib_known); the others scale with capacity.
                raw = 336 * cap // 200
                notes.append(f"ASSUMED: raw NAND {raw} GiB, scaled from the 200GB model's 336 GiB")
            elif key == "micron-p400e":
                raw = {50: 64, 100: 128, 200: 256, 400: 512}[cap]
                notes.append(f"ASSUMED: raw NAND {raw} GiB (next power of two; not published)")
            elif key == "micron-p320h":
                raw = {175: 256, 350: 512, 700: 1024}[cap]
                notes.append(f"ASSUMED: raw NAND {raw} GiB (not published)")
            elif key == "micron-p420m":
                raw = {350: 512, 700: 1024, 1400: 2048}[cap]
                notes.append(f"ASSUMED: raw NAND {raw} GiB (not published)")
            else:
                raise SystemExit(f"{key}: no raw capacity")
            rain = 0
            if "rain_stripe" in d:
                rain = int(d["rain_stripe"][i].split(":")[0])
            elif "rain_parity_ratio" in d:
                rain = int(d["rain_parity_ratio"].split(":")[0])
            elif key == "crucial-m500":
                rain = 15
                notes.append(
                    "ASSUMED: RAIN 15:1. drives.toml: about 14% of NAND set aside, about half of it "
                    "RAIN parity and defect reserve, about 7% left; 1/16 = 6.25% of raw for parity "
                    "leaves 7.4% spare over user capacity at every capacity"
                )
            elif key in ("crucial-m4", "micron-p400m", "micron-p400e", "micron-p320h", "micron-p420m"):
                if key != "crucial-m4":
                    notes.append("ASSUMED: no RAIN (not published)")
            yield f"{key}-{cap}", key, i, cap, raw, rain, notes


ENTERPRISE = ("micron-m500dc", "micron-p400m", "micron-p400e", "micron-p320h", "micron-p420m")


def rating(value, i: int, n: int) -> tuple[float | None, str]:
    """The datasheet figure of capacity i of n, and a note when the mapping is an assumption.
    drives.toml gives lists (one per capacity), one number for all, or strings such as
    "52K / 54K / 60K" or "200 / 310 (smallest / larger capacities)"."""
    if value is None:
        return None, ""
    if isinstance(value, list):
        return (float(value[i]) or None), ""
    if isinstance(value, (int, float)):
        return float(value), ""
    text = value.split("(")[0]
    nums = [float(v.strip().rstrip("Kk")) * (1000 if v.strip()[-1:] in "Kk" else 1) for v in text.split("/")]
    if len(nums) == n:
        return nums[i], ""
    if "smallest / larger" in value or len(nums) == 2:
        return (nums[0] if i == 0 else nums[1]), f"ASSUMED: '{value}' read as the first figure for the smallest capacity, the second for the larger ones"
    v = nums[min(i, len(nums) - 1)]
    return v, f"ASSUMED: '{value}' ({len(nums)} figures for {n} capacities) read in capacity order, the last repeated"


def datasheet_lines(key: str, i: int, d: dict) -> tuple[list[str], list[str]]:
    n = len(d["capacities_gb"])
    lines = ["[datasheet]                     # drives.toml spec_*: for reports and validation; the model never reads them",
             f'segment = "{"enterprise" if key in ENTERPRISE else "client"}"' + ("   # rated full, at steady state" if key in ENTERPRISE else "       # rated fresh out of box")]
    notes = []
    for field, spec in (("seq_read_mbps", "spec_seq_read_mbps"), ("seq_write_mbps", "spec_seq_write_mbps"),
                        ("rand_read_iops", "spec_rand_read_iops"), ("rand_write_iops", "spec_rand_write_iops")):
        v, note = rating(d.get(spec), i, n)
        if v is not None:
            lines.append(f"{field} = {v:g}")
            if note:
                notes.append(f"{spec}: {note}")
    if "spec_endurance_tbw" in d:
        v, note = rating(d["spec_endurance_tbw"], i, n)
    else:
        v, note = rating(d.get("spec_endurance_pb"), i, n)
        v = v * 1000 if v is not None else None
    if v is not None:
        lines.append(f"endurance_tbw = {v:g}")
        if note:
            notes.append(f"endurance: {note}")
    if key in POWER_RATINGS:
        field, watts, source = POWER_RATINGS[key]
        lines.append(f"{field} = {watts:g}")
        lines.append(f'power_source = "{source}"')
    elif (key, d["capacities_gb"][i]) in POWER_LIMIT_W:
        watts, source = POWER_LIMIT_W[(key, d["capacities_gb"][i])]
        lines.append(f"power_typical_max_w = {watts:g}")
        lines.append(f'power_source = "{source}"')
    return lines, notes


# Published power ratings (not in drives.toml): (field, watts, source).
POWER_RATINGS = {
    "crucial-m500": ("power_active_average_w", 0.150, "Micron M500 2.5-inch datasheet (m500_2_5_ssd.pdf Rev G): low power consumption 150mW TYP, active average power measured during MobileMark with DIPM enabled"),
    "crucial-m550": ("power_active_average_w", 0.150, "Micron M550 datasheets (m550 M.2 2280 Rev E): low power consumption 150mW TYP, active average power (MobileMark with DIPM), as the M500's"),
    "micron-p400m": ("power_typical_max_w", 7.5, "Micron P400m 2.5-inch datasheet: power consumption <7.5W (TYP)"),
}


def power_loss_protection(key: str, d: dict) -> tuple[str, str]:
    """The drive's power-loss protection class and where it comes from (drives.toml features)."""
    features = [f for f in d.get("features", []) if "power loss" in f]
    text = features[0] if features else ""
    if "covering in-flight writes" in text:
        return "full", f'drives.toml features: "{text}"'
    if "flush the mapping table" in text:
        return "map", f'drives.toml features: "{text}"'
    if "complete in-flight NAND writes" in text:
        return "map", (f'drives.toml features: "{text}"; the DRAM buffer is not said to be covered '
                       "(ASSUMED map)")
    if key in ("micron-p400m", "micron-p400e", "micron-p320h", "micron-p420m"):
        return "full", "ASSUMED: enterprise drive; drives.toml lists no features for it"
    return "none", "ASSUMED: drives.toml lists no power-loss protection for this drive"


def render(name, key, i, cap, raw_gib, rain, notes, d, controllers, parts) -> str:
    part_name = listed(d["nand"], i)
    part, part_notes = part_values(parts, part_name)
    ctrl = controllers[d["controller"]]
    die_gib = part["die_capacity_gbit"] // 8
    dies = raw_gib // die_gib
    if "dies" in d:
        assert d["dies"][i] == dies, (name, d["dies"][i], dies)
    if "packages" in d:
        assert d["packages"][i] * d["dies_per_package"][i] == dies, name
    planes = part["planes_per_die"]
    page = part["page_size_kib"] * 1024
    ppb = part["pages_per_block"]
    blocks_per_plane = die_gib * GIB // (planes * ppb * page)
    command_ns, command_src = CONTROLLER_COMMAND_NS[d["controller"]]
    plp, plp_src = power_loss_protection(key, d)
    host = ctrl["host"]
    dram = d.get("dram_mib")
    dram_bytes = listed(dram, i) * (1 << 20) if dram else 0
    if host.startswith("sata"):
        host_lines = [
            'interface = "sata"',
            "sata_line_gbit_per_s = 6.0      # drives.toml controller host = sata-6g",
            "queue_depth_max = 32            # NCQ",
            f"command_latency_ns = {COMMAND_LATENCY_NS['sata']}     # ASSUMED: AHCI driver ~6 us + FPDMA frames and firmware command path (docs/model.md)",
        ]
        buffer = 4 << 20
        buffer_note = "drives.toml (M500): under 5 MB of user data is ever buffered in DRAM; the same is ASSUMED for every Marvell SATA drive"
    else:
        gen, lanes = 2, 8
        host_lines = [
            'interface = "nvme"              # PCIe host interface (the P320h/P420m use a PCIe driver of their own; modelled as NVMe-style queues)',
            f"pcie_generation = {gen}            # drives.toml controller host = pcie-gen2-x8",
            f"pcie_lanes = {lanes}",
            "queue_depth_max = 1024          # ASSUMED",
            f"command_latency_ns = {COMMAND_LATENCY_NS['pcie']}     # ASSUMED: driver ~3 us + doorbell, interrupt and firmware command path",
        ]
        buffer = 16 << 20
        buffer_note = "ASSUMED: 16 MiB (enough to keep every die programming)"
    out = [
        f"# ssdlab preset {name}: generated by tools/gen_presets.py from ../shared/reference/.",
        "# Edit a copy freely: every field is documented in crates/ssdlab-core/src/config/mod.rs.",
    ]
    sheet, sheet_notes = datasheet_lines(key, i, d)
    family = "enterprise" if key in ENTERPRISE else "client"
    copy_ns, copy_src = firmware(d["controller"], family)
    gc_mode, gc_mode_src = GC_MODE.get(key, ("paced", "ASSUMED: collects paced with host writes (see docs/fidelity.md)"))
    page_bytes = page
    block_bytes = planes * ppb * page_bytes
    logical_units = cap * 10**9 // 4096
    meta_blocks = map_blocks_per_die(logical_units, dies, block_bytes)
    map_pages = -(-logical_units // (page_bytes // 4))
    for n in notes + part_notes + sheet_notes:
        out.append(f"# {n}")
    out += [
        f'name = "{name}"',
        f'description = "{d.get("controller")} controller, {dies} x {part_name} dies, {cap} GB"',
        "",
        "[nand]",
        f'part = "{part_name}"',
        f"channels = {ctrl['channels']}                    # drives.toml controllers.{d['controller']}.channels",
        f"dies = {dies}                        # raw {raw_gib} GiB / {die_gib} GiB per die",
        f"planes_per_die = {planes}",
        f"blocks_per_plane = {blocks_per_plane}          # die capacity / (planes x pages per block x page size)",
        f"pages_per_block = {ppb}",
        f"page_size_bytes = {page}",
        f"read_page_us = {float(part['read_page_us_max'])}           # nand-parts.toml read_page_us_max",
        f"program_page_us = {float(part['program_page_us_typ'])}       # nand-parts.toml program_page_us_typ",
        f"erase_block_us = {float(part['erase_block_ms_typ']) * 1000}       # nand-parts.toml erase_block_ms_typ",
        f"bus_mb_per_s = {bus_mb_per_s(d['controller'], part['onfi'])}           # ONFI {part['onfi']} as the controller runs it (nand-parts.toml header)",
        "multi_plane_overhead_pct = 2.0  # nand-parts.toml header: two-plane overhead about 2%",
        "cache_program = true",
        f"pe_cycles_rated = {part['pe_cycles_rated']}",
        "",
        "[controller]",
        f'name = "{d["controller"]}"',
        f"command_ns = {command_ns}             # calibrated per controller: {command_src}",
        f"dram_bytes = {dram_bytes}",
        f"read_mb_per_s = {CONTROLLER_DATA_PATH[d['controller']][0]}             # calibrated per controller: see the note below",
        f"write_mb_per_s = {CONTROLLER_DATA_PATH[d['controller']][1]}            # {CONTROLLER_DATA_PATH[d['controller']][2]}",
        f"gc_copy_ns_per_unit = {copy_ns}     # {family} firmware; {copy_src}",
        "gc_victim_ns = 0                # not separable from gc_copy_ns_per_unit with one measurement",
        f'power_loss_protection = "{plp}"   # {plp_src}',
        *encryption_lines(d),
        "",
        "[ftl]",
        f"user_capacity_bytes = {cap * 10**9}",
        "mapping_unit_bytes = 4096",
        f"write_buffer_bytes = {buffer}      # {buffer_note}",
        f"rain_data_pages_per_parity = {rain}",
        "reserved_blocks_per_die = 0       # defects come out of the part's spare blocks (the 128 Gbit part has 1048 blocks per plane for a nominal 1024)",
        'gc_policy = "greedy"',
        "gc_foreground_free_blocks_min = 3",
        f'gc_foreground_mode = "{gc_mode}"     # {gc_mode_src}',
        "gc_background_free_blocks_target = 6",
        "gc_deferred_free_blocks_target = 8   # ASSUMED (deferred mode only)",
        "gc_background_idle_us = 5000",
        f"map_journal_entry_bytes = {MAP_JOURNAL_ENTRY_BYTES}     # ASSUMED: 4-byte LBA + 4-byte physical address",
        f"map_checkpoint_journal_pages = {map_pages}   # ASSUMED: a checkpoint when the journal is as long as the map ({map_pages} map pages)",
        f"map_blocks_per_die = {meta_blocks}          # map + as much journal + 1, rounded up to blocks",
        "block_summary_pages = true",
        "",
        "[host]",
        *host_lines,
        "",
        *power_lines(key, cap, d["controller"]),
        *thermal_lines(key, d["controller"]),
        *sheet,
        "",
    ]
    return "\n".join(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reference", type=Path, default=ROOT.parent / "shared" / "reference")
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()
    drives = tomllib.loads((args.reference / "drives.toml").read_text())
    parts = tomllib.loads((args.reference / "nand-parts.toml").read_text())["parts"]
    stale = []
    for name, key, i, cap, raw, rain, notes in drive_variants(drives["drives"]):
        text = render(name, key, i, cap, raw, rain, notes, drives["drives"][key], drives["controllers"], parts)
        path = OUT / f"{name}.toml"
        if args.check:
            if not path.exists() or path.read_text() != text:
                stale.append(path.name)
        else:
            path.write_text(text)
    if stale:
        print("presets out of date (run tools/gen_presets.py):", ", ".join(stale), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
