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

from preset_power import power_lines, thermal_lines
from preset_ratings import CONDITIONS, LATENCY_RATINGS, POWER_LIMIT_W, POWER_RATINGS

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "python" / "ssdlab" / "presets"
GIB = 1 << 30

# Controller firmware time per command, calibrated once per controller (not per drive): the
# 4 KiB random-read ratings where the NAND is far from the limit, so 1e9 / rating is the
# command cost (one rating, or the value with the least largest error over a drive line's
# ratings). See docs/fidelity.md.
CONTROLLER_COMMAND_NS = {
    "marvell-88ss9174": (17_950, "1e9 / 55.7K IOPS: the P400m's random-read ratings 52K / 54K / 60K (100/200/400GB; NAND far from the limit), the value with the least largest error (+-7.1%); the m4 has no rating"),
    "marvell-88ss9187": (12_500, "1e9 / 80K IOPS: M500 480GB/960GB random-read rating"),
    "marvell-88ss9189": (10_500, "1e9 / 95K IOPS: M550 512GB/1TB random-read rating"),
    "idt-32ch-pcie": (1_270, "1e9 / 785K IOPS: P320h random-read rating"),
}

# Firmware families: the firmware a drive line runs on its controller (Micron's client,
# enterprise, XPERT and PCIe firmware differ on the same silicon: the M500 and M500DC share
# the 88SS9187; the P320h's SLC firmware and the P420m's MLC firmware share the IDT controller).
FAMILY = {
    "crucial-m4": "client", "crucial-m500": "client", "crucial-m550": "client",
    "micron-m500dc": "enterprise", "micron-p400e": "enterprise",
    "micron-p400m": "enterprise-xpert", "micron-p320h": "enterprise-slc", "micron-p420m": "enterprise-mlc",
}

# Per controller and firmware family, each value with where it comes from. Every value is
# fitted once, on the one rating of that family where it binds and the NAND does not
# (docs/fidelity.md "Calibrated parameters" lists the fits and their residuals):
# - read_mb_per_s / write_mb_per_s: the data path (ECC, DRAM, DMA; end-to-end protection in
#   the enterprise firmware), MB/s; 0 = only the link limits.
# - read_extra_ns / write_extra_ns: processor time a read / a write costs beyond command_ns
#   (the enterprise read path's LBA check; a write's map and buffer bookkeeping).
# - gc_copy_ns: processor time per unit garbage collection copies.
FIRMWARE = {
    ("marvell-88ss9174", "client"): {
        "read_mb_per_s": (0, "m4 note (drives.toml): firmware 0009 raised sequential read past 500 MB/s: only the link limits"),
        "write_mb_per_s": (250, "fitted: m4 256GB fresh sequential write, 250 MB/s measured (drives.toml spec_seq_write_mbps_measured_fob; 32 dies could program 400)"),
        "gc_copy_ns": (None, "carried"),
    },
    ("marvell-88ss9174", "enterprise"): {
        "read_mb_per_s": (430, "fitted: P400e 100-400GB sequential read rating 430 MB/s"),
        "read_extra_ns": (3_300, "fitted: P400e 200GB/400GB random read 47K IOPS = 1e9 / (17,950 + 3,300) (the P400m's XPERT firmware, on which command_ns is fitted, reads faster)"),
        "write_mb_per_s": (240, "fitted: P400e 200/400GB sequential write rating 240 MB/s"),
        "gc_copy_ns": (83_000, "calibrated: P400e 200GB steady-state random write 9.5K IOPS"),
    },
    ("marvell-88ss9174", "enterprise-xpert"): {
        "read_mb_per_s": (380, "fitted: P400m sequential 64KB read rating 380 MB/s (all capacities)"),
        "write_mb_per_s": (310, "fitted: P400m 200/400GB sequential 64KB write rating 310 MB/s"),
        "gc_copy_ns": (48_000, "calibrated: P400m 400GB steady-state random write 26K IOPS"),
    },
    ("marvell-88ss9187", "client"): {
        "read_mb_per_s": (500, "fitted: M500 480GB/960GB sequential read rating (32-64 dies: NAND far from the limit)"),
        "write_mb_per_s": (400, "fitted: M500 480GB/960GB sequential write rating"),
        "gc_copy_ns": (33_000, "calibrated: M500 960GB consistency floor (measurements.md)"),
    },
    ("marvell-88ss9187", "enterprise"): {
        "read_mb_per_s": (425, "fitted: M500DC sequential read rating 425 MB/s (all capacities; end-to-end data path ECC, drives.toml features)"),
        "write_mb_per_s": (375, "fitted: M500DC 480GB/800GB sequential write rating 375 MB/s"),
        "read_extra_ns": (3_400, "fitted: M500DC 480GB random read 63K IOPS = 1e9 / (12,500 + 3,400) (LBA stored with each page and checked against the map on read, drives.toml features)"),
        "gc_copy_ns": (21_000, "calibrated: M500DC 480GB/800GB steady-state random-write ratings"),
    },
    ("marvell-88ss9189", "client"): {
        "read_mb_per_s": (550, "fitted: M550 512GB/1TB sequential read rating"),
        "write_mb_per_s": (500, "fitted: M550 512GB/1TB sequential write rating"),
        "write_extra_ns": (1_260, "fitted: M550 512GB/1TB random write 85K IOPS = 1e9 / (10,500 + 1,260), below their 95K reads with 32-64 dies"),
        "gc_copy_ns": (None, "carried"),
    },
    ("idt-32ch-pcie", "enterprise-slc"): {
        "read_mb_per_s": (3250, "fitted: the middle of P320h 3200 and P420m 3300 MB/s (the controller's read path)"),
        "write_mb_per_s": (1900, "fitted: P320h 700GB sequential write rating 1900 MB/s"),
        "gc_copy_ns": (3_500, "calibrated: P320h 700GB steady-state random write 205K IOPS at QD256"),
    },
    ("idt-32ch-pcie", "enterprise-mlc"): {
        "read_mb_per_s": (3250, "fitted: the middle of P320h 3200 and P420m 3300 MB/s (the controller's read path)"),
        "write_mb_per_s": (630, "fitted: P420m 1.4TB sequential write rating 630 MB/s (MLC firmware)"),
        "gc_copy_ns": (None, "carried"),
    },
}


# When foreground collection runs (ftl.gc_foreground_mode). The m4's firmware defers cleanup
# (drives.toml: fast random writes "achieved by not defragmenting on the fly"; a sequential
# pass after random writes is far slower, a second one recovers); the others collect paced
# with host writes (measurements.md: the M500 holds a floor "with the per-second values
# consistent around it"); ASSUMED for the drives without a measurement.
GC_MODE = {"crucial-m4": ("deferred", "drives.toml m4 note: not defragmenting on the fly")}
# The enterprise families (issue 71): no source names their schedulers, so GENERIC, the same form
# and constants for every one of them: a victim collected whole in one non-preemptive bite once
# the pace's credit covers it (the baseline collector of Lee et al., "A Semi-Preemptive Garbage
# Collector for Solid State Drives", ISPASS 2011), host data placed on the next die in turn or,
# when that die has collection queued, on the one after it (dynamic allocation with two
# candidate dies: Tavakkol et al., "Performance Evaluation of Dynamic Page Allocation
# Strategies in SSDs", ACM TOMPECS 2016, its "degree of freedom"; the two ASSUMED). The bites
# are the per-second spread's named cause (`--ablate gc-scheduling` takes them out); with every
# die a candidate the dies fall into step on the M500DC 800GB (docs/fidelity.md). The M500's
# client firmware stays paced: measurements.md's floor "with the per-second values consistent
# around it" rules bites out there.
ENTERPRISE_GC = ("burst", "GENERIC: whole-victim bites (Lee et al., ISPASS 2011); see docs/fidelity.md")
HOST_DIE_CANDIDATES = 2
# How much paced collection copies per host write (ftl.gc_pace) and its free-block watermarks.
# GENERIC (no source names these firmwares' schedulers): a pacer sized for the drive's own
# spare, not for what the victims hold (US 9,645,924, "garbage collection scaling": a
# write-amplification target from the over-provisioning ratio), between two free-block
# thresholds with hysteresis (US 9,213,637: host-write credits kept between a first and a
# second threshold "to maximize average write performance ... while minimizing variation").
# Applied to the client families that pace (the M500's and M550's): their reviews describe
# extra spare area as bursts at fresh speed over a floor near the default one (issue 71). The
# watermarks, 3 and 6 free blocks per die, are the collector's foreground minimum and its
# background target (ASSUMED, as before); the m4 defers collection and does not pace.
GC_PACE = {
    "crucial-m500": "nominal",
    "crucial-m550": "nominal",
}
GC_PACE_NOTE = ("GENERIC: a pace sized for the drive's own spare (US 9,645,924) between free-block "
                "watermarks with hysteresis (US 9,213,637); see docs/fidelity.md")
GC_FREE_BLOCKS_LOW, GC_FREE_BLOCKS_HIGH = 3, 6
# The command path in parts (docs/model.md "The command path"). The host's software stack per
# command (host.driver_ns): Linux's AHCI stack 6.0 us against NVMe's 2.8 us (Intel's
# comparison, AnandTech "Testing SATA Express", 2014: AHCI needs four uncachable register
# reads per command, about 2.5 us of it). The P320h/P420m controller "provides an embedded
# ATA host bus adapter" (datasheets) driven by Micron's own driver with AHCI-style command
# slots (Linux mtip32xx): the AHCI figure is taken for it too.
DRIVER_NS = {
    "sata": (6_000, "Linux AHCI stack 6.0 us (Intel's AHCI-versus-NVMe comparison)"),
    "pcie": (6_000, "the controller's embedded ATA host bus adapter with Micron's AHCI-style driver (mtip32xx): the AHCI stack's 6.0 us (Intel's comparison)"),
}
# The controller's front end outside its processor (controller.front_end_ns): fitted once per
# controller on a published QD1 latency rating, as the rating less every other part of the
# path the model times (driver, frames, processor, data across the link into DRAM).
# Controllers without such a rating get none (ASSUMED 0: the processor's command_ns is their
# whole firmware command path).
FRONT_END_NS = {
    "marvell-88ss9174": (22_860, "fitted: C400 (= m4) READ/WRITE latency 55 us TYP, 4KB, write cache on (realssd_c400_2_5 datasheet): 55 us less the 32.14 us of driver, frames, command_ns and the 4 KiB data crossing (validate --groups latency)"),
    "marvell-88ss9187": (0, "ASSUMED: no TYP/MIN latency rating (the M500's and M500DC's are MAX under load)"),
    "marvell-88ss9189": (0, "ASSUMED: no TYP/MIN latency rating (the M550's is MAX under load)"),
    "idt-32ch-pcie": (4_550, "fitted: P420m WRITE latency 13 us posted MIN at QD1, 4KB (p420m_hhhl datasheet): 13 us less the 8.45 us of driver, doorbell packets, command_ns and the 4 KiB data crossing (validate --groups latency)"),
}
# Link time of a command's own frames on PCIe (host.link_command_ns; SATA keeps the default
# 1,000 ns of FIS exchanges): submission entry, completion entry, doorbells and interrupt are
# a few transaction-layer packets of 16-64 bytes plus about 24 bytes of header each, about
# 400 bytes at gen2 x8's 4 GB/s: 100 ns.
PCIE_LINK_COMMAND_NS = 100

def encryption_lines(d: dict) -> list[str]:
    """self_encrypting and crypto_erase_us of a drive whose features name always-on AES."""
    aes = [f for f in d.get("features", []) if f.startswith("AES-256")]
    if not aes:
        return []
    return [
        f'self_encrypting = true         # drives.toml features: "{aes[0]}"; the engine is always on, so every rating already runs through it (no cost in time)',
        "crypto_erase_us = 2000000       # ASSUMED: the datasheet says 'fast and secure erase' without a time",
    ]


MAP_JOURNAL_ENTRY_BYTES = 8   # ASSUMED: 4-byte LBA + 4-byte physical address per record


def firmware(controller: str, family: str) -> dict:
    """The firmware values of a controller's family: {field: (value, source)}. A family
    without its own garbage-collection fit carries the 88SS9187's value of its kind (client or
    enterprise) over, scaled by the per-command firmware time (the same work on a slower or
    faster processor): ASSUMED."""
    fw = dict(FIRMWARE[(controller, family)])
    value, src = fw["gc_copy_ns"]
    if value is None:
        kind = "client" if family == "client" else "enterprise"
        base = FIRMWARE[("marvell-88ss9187", kind)]["gc_copy_ns"][0]
        ratio = CONTROLLER_COMMAND_NS[controller][0] / CONTROLLER_COMMAND_NS["marvell-88ss9187"][0]
        fw["gc_copy_ns"] = (int(round(base * ratio, -2)),
                            f"ASSUMED: 88SS9187 {kind} firmware's {base} ns carried over, x {ratio:.3f} (command_ns ratio)")
    fw.setdefault("read_extra_ns", (0, "reads cost command_ns"))
    fw.setdefault("write_extra_ns", (0, "writes cost command_ns"))
    return fw


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
# typical 34nm SLC values, stated as such. The die is 16 Gb (P320h HHHL datasheet Rev V,
# table 1: 64 packages x 4 or 8 dies of 16 Gb 34 nm SLC). ASSUMED: 4 KiB page, 64 pages per
# block, tR 25 us, tPROG 250 us, tBERS 1.5 ms, 2 planes, ONFI 2.x bus, 100K P/E.
SLC_34NM = {
    "die_capacity_gbit": 16, "page_size_kib": 4, "pages_per_block": 64, "read_page_us_max": 25,
    "program_page_us_typ": 250, "erase_block_ms_typ": 1.5, "planes_per_die": 2, "onfi": "2.x",
    "pe_cycles_rated": 100_000, "bits_per_cell": 1,
}


# Dies of another capacity than the part drives.toml names, where the drive's own documents
# say so: (part name in the preset, die Gbit, source). Everything else is the named part's.
DIE_OVERRIDE = {
    "micron-p420m": ("imft-25nm-32gbit-mlc", 32,
                     "32 Gb dies: P420m HHHL datasheet Rev O part-number chart (NAND component AG = 32Gb MLC 25nm) and "
                     "Tom's Hardware's teardown (eight 32 Gb dies per package on the 1.4TB); page, block and timing "
                     "ASSUMED those of the 25nm 64 Gb part drives.toml names"),
}

# Effective array times per NAND part: the datasheet gives tPROG typical and tR maximum, the
# drive sees the average over lower and upper MLC pages (and read levels) as its firmware
# drives them. Fitted once per part on the drive where that part alone binds the figure (the
# fewest dies, far from every controller limit); the datasheet value stays in the preset as
# program_page_us_typ and read_page_us_max (`ssdlab validate --ablate effective-times` puts
# them back).
EFFECTIVE_PROGRAM_US = {
    "imft-20nm-128gbit-mlc": (1860.0, "fitted: M500 120GB sequential write 130 MB/s (8 dies, the part binds)"),
    "imft-20nm-64gbit-mlc-16k": (1460.0, "fitted: M550 128GB sequential write 350 MB/s (16 dies, the part binds)"),
}
EFFECTIVE_READ_US = {
    "imft-20nm-128gbit-mlc": (101.0, "fitted: M500 120GB random read 62K IOPS (8 dies, the part binds); datasheet tR is a maximum"),
}


def part_values(parts: dict, name: str) -> tuple[dict, list[str]]:
    """Fill a part's unpublished fields, returning the notes of what was assumed."""
    notes = []
    p = dict(parts[name])
    if name == "imft-34nm-slc":
        p.update(SLC_34NM)
        notes.append("16 Gb dies: P320h HHHL datasheet Rev V table 1; ASSUMED: the rest of the part (typical 34nm SLC values; nand-parts.toml publishes none)")
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
                # 200GB: 336 GiB (drives.toml raw_nand_gib_known); 400GB: twice that (Tom's
                # Hardware P400m review, endurance table: 340 / 680 GB raw for 200 / 400 GB).
                raw = {100: 168, 200: 336, 400: 672}[cap]
                if cap == 100:
                    notes.append("ASSUMED: raw NAND 168 GiB, half the 200GB model's 336 GiB (the 70% over-provisioning Tom's Hardware gives for every capacity)")
                elif cap == 400:
                    notes.append("raw NAND 672 GiB: Tom's Hardware P400m review (680 GB raw for 400 GB, twice the 200GB's 336 GiB)")
            elif key == "micron-p400e":
                raw = {50: 64, 100: 128, 200: 256, 400: 512}[cap]
                notes.append(f"ASSUMED: raw NAND {raw} GiB (next power of two; not published)")
            elif key == "micron-p320h":
                # P320h HHHL datasheet (Rev V, table 1): 350GB = 64 packages x 4 dies, 700GB =
                # 64 x 8, of 16 Gb 34 nm SLC; Tom's Hardware P320h review: 1 TB on the 700GB.
                raw = {175: 256, 350: 512, 700: 1024}[cap]
                if cap == 175:
                    notes.append("ASSUMED: raw NAND 256 GiB, 64 packages x 2 dies of 16 Gb (half the 350GB; the 175GB is not in the HHHL datasheet)")
                else:
                    notes.append(f"raw NAND {raw} GiB: P320h HHHL datasheet Rev V table 1 (64 packages x {raw // 128} dies of 16 Gb SLC)")
            elif key == "micron-p420m":
                # Tom's Hardware P420m review (teardown): 64 packages of eight 32 Gb dies on the
                # 1.4TB (2048 GB raw), four on the 700GB.
                raw = {350: 512, 700: 1024, 1400: 2048}[cap]
                if cap == 350:
                    notes.append("ASSUMED: raw NAND 512 GiB, half the 700GB's (the 2.5-inch 350GB was not torn down)")
                else:
                    notes.append(f"raw NAND {raw} GiB: Tom's Hardware P420m review (64 packages x {raw // 256} dies of 32 Gb)")
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
            elif key == "micron-p320h":
                rain = 7
                notes.append("RAIN 7:1: Tom's Hardware P320h review (RAIN takes 128 GB, 12.5%, of the 700GB's 1 TB: 7+1) and Micron's enterprise SSD FAQ")
            elif key == "micron-p400m":
                rain = 15
                notes.append("RAIN 15:1: The SSD Review, P400m review (a 15+1 scheme)")
            elif key == "micron-p420m":
                rain = 15
                notes.append("ASSUMED RAIN 15:1: Micron's enterprise SSD FAQ (stripes of 15 data pages + 1 parity; the P320h alone 7+1); the P420m datasheet lists RAIN without the stripe")
            elif key in ("crucial-m4", "micron-p400e"):
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


# The conditions each vendor rates under (queue depth in all, workers, sequential transfer
# size), and where they are written. `ssdlab validate --groups datasheet` measures under them.


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
    qd, workers, seq_kib, source = CONDITIONS[key]
    lines += [f"queue_depth = {qd}", f"workers = {workers}", f"seq_transfer_kib = {seq_kib}",
              f'conditions_source = "{source}"']
    for r in LATENCY_RATINGS.get(key, []):
        us = r["us"](d["capacities_gb"][i]) if callable(r["us"]) else r["us"]
        lines += ["", "[[datasheet.latency]]", f'op = "{r["op"]}"', f'figure = "{r["figure"]}"']
        if r.get("bound"):
            lines.append("bound = true")
        lines += [f"us = {us:g}", f"queue_depth = {r['qd']}", f"transfer_bytes = {r['bytes']}",
                  f'state = "{r["state"]}"']
        if not r.get("posted", True):
            lines.append("posted = false")
        lines.append(f'source = "{r["source"]}"')
    return lines, notes


def read_sector_line(part: dict) -> str:
    """nand.read_sector_bytes: the ECC codeword a read of part of a mapping unit moves."""
    if part.get("bits_per_cell") == 1:
        return ("read_sector_bytes = 512        # ASSUMED: SLC pages carry their spare per 512-byte sector (Micron SLC: "
                "2112-byte pages = 4 x (512 + 16)); a 512-byte read moves one codeword (ONFI RANDOM DATA READ)")
    return ("read_sector_bytes = 1024       # ASSUMED: 1 KiB ECC codewords (BCH over 1 KiB sectors, as MLC controllers of "
            "the 25-20nm generations use); a read of part of a unit moves only its codewords (ONFI RANDOM DATA READ)")






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


# Page types of an MLC wordline: the lower page reads and programs faster than the upper one.
# Their ratios are FEMU's profile of Micron's L95B (20 nm 128 Gbit MLC, the M500's part) in
# CNEX's Open-Channel SSD (hw/femu/nand/nand.h: lower/upper read 48/64 us, program 850/2300
# us); the same ratios are ASSUMED for the other IMFT MLC parts (the 25 nm and the other 20 nm
# parts publish no split). The split keeps the part's time (effective where fitted) as the mean
# over a block's pages (the pairing of nand::paired_lower_page: lower pages 0, 1, 2 and the
# even ones from 4), so every calibration stands.
MLC_PAGE_TYPES = {"read": (48.0, 64.0), "program": (850.0, 2300.0)}


def lower_upper_pages(pages_per_block: int) -> tuple[int, int]:
    """Lower and upper pages of a block (nand::paired_lower_page: p >= 3 odd is upper)."""
    upper = sum(1 for p in range(3, pages_per_block, 2))
    return pages_per_block - upper, upper


def page_type_lines(part: dict, read_us: float, program_us: float) -> list[str]:
    """The lower and upper pages' times of an MLC part as multiples of its times, their mean
    over a block 1."""
    if part["bits_per_cell"] != 2:
        return []
    lower, upper = lower_upper_pages(part["pages_per_block"])
    lines = []
    for op, mean in (("read", read_us), ("program", program_us)):
        lo, up = MLC_PAGE_TYPES[op]
        k = (lower + upper) / (lower * lo + upper * up)
        f = (round(lo * k, 4), round(up * k, 4))
        lines.append(f"{op}_page_type_factors = [{f[0]}, {f[1]}]   # lower, upper ({f[0] * mean:.1f}, {f[1] * mean:.1f} us):"
                     f" FEMU's L95B profile {lo:g}/{up:g} us, mean 1 over {lower} lower and {upper} upper pages")
    return lines


def program_lines(part_name: str, part: dict) -> list[str]:
    """program_page_us (effective where fitted), the datasheet's typical value, and the page
    types' read and program times."""
    typ = float(part["program_page_us_typ"])
    value, src = EFFECTIVE_PROGRAM_US.get(part_name, (typ, "nand-parts.toml program_page_us_typ"))
    read_us, _ = EFFECTIVE_READ_US.get(part_name, (float(part["read_page_us_max"]), ""))
    return [f"program_page_us = {value}       # {src}",
            f"program_page_us_typ = {typ}   # nand-parts.toml program_page_us_typ (datasheet typical)",
            *page_type_lines(part, read_us, value)]


def read_lines(part_name: str, part: dict) -> list[str]:
    """read_page_us (effective where fitted) and the datasheet's maximum."""
    tmax = float(part["read_page_us_max"])
    value, src = EFFECTIVE_READ_US.get(part_name, (tmax, "nand-parts.toml read_page_us_max"))
    return [f"read_page_us = {value}           # {src}",
            f"read_page_us_max = {tmax}       # nand-parts.toml read_page_us_max (datasheet maximum)"]


def render(name, key, i, cap, raw_gib, rain, notes, d, controllers, parts) -> str:
    part_name = listed(d["nand"], i)
    part, part_notes = part_values(parts, part_name)
    if key in DIE_OVERRIDE:
        part_name, part["die_capacity_gbit"], src = DIE_OVERRIDE[key]
        part_notes.append(src)
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
            f"driver_ns = {DRIVER_NS['sata'][0]}               # {DRIVER_NS['sata'][1]}",
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
            f"link_command_ns = {PCIE_LINK_COMMAND_NS}           # PCIe: a command, its completion and doorbells are a few small packets (about 400 bytes with headers) at 4 GB/s",
            f"driver_ns = {DRIVER_NS['pcie'][0]}               # {DRIVER_NS['pcie'][1]}",
        ]
        buffer = 16 << 20
        buffer_note = "ASSUMED: 16 MiB (enough to keep every die programming)"
    out = [
        f"# ssdlab preset {name}: generated by tools/gen_presets.py from ../shared/reference/.",
        "# Edit a copy freely: every field is documented in crates/ssdlab-core/src/config/ (mod.rs; [nand] nand.rs).",
    ]
    sheet, sheet_notes = datasheet_lines(key, i, d)
    family = FAMILY[key]
    fw = firmware(d["controller"], family)
    gc_mode, gc_mode_src = GC_MODE.get(key, ENTERPRISE_GC if key in ENTERPRISE else
                                       ("paced", "ASSUMED: collects paced with host writes (see docs/fidelity.md)"))
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
        *read_lines(part_name, part),
        *program_lines(part_name, part),
        f"erase_block_us = {float(part['erase_block_ms_typ']) * 1000}       # nand-parts.toml erase_block_ms_typ",
        f"bus_mb_per_s = {bus_mb_per_s(d['controller'], part['onfi'])}           # ONFI {part['onfi']} as the controller runs it (nand-parts.toml header)",
        "multi_plane_overhead_pct = 2.0  # nand-parts.toml header: two-plane overhead about 2%",
        "cache_program = true",
        f"pe_cycles_rated = {part['pe_cycles_rated']}",
        read_sector_line(part),
        "",
        "[controller]",
        f'name = "{d["controller"]}"',
        f"command_ns = {command_ns}             # calibrated per controller: {command_src}",
        f"front_end_ns = {FRONT_END_NS[d['controller']][0]}             # per controller: {FRONT_END_NS[d['controller']][1]}",
        f"dram_bytes = {dram_bytes}",
        f"read_mb_per_s = {fw['read_mb_per_s'][0]}             # {family} firmware: {fw['read_mb_per_s'][1]}",
        f"write_mb_per_s = {fw['write_mb_per_s'][0]}            # {family} firmware: {fw['write_mb_per_s'][1]}",
        f"read_extra_ns = {fw['read_extra_ns'][0]}             # {family} firmware: {fw['read_extra_ns'][1]}",
        f"write_extra_ns = {fw['write_extra_ns'][0]}            # {family} firmware: {fw['write_extra_ns'][1]}",
        f"gc_copy_ns_per_unit = {fw['gc_copy_ns'][0]}     # {family} firmware; {fw['gc_copy_ns'][1]}",
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
        *(['host_die_choice = "skip-collecting"   # GENERIC: dynamic allocation (Tavakkol et al., TOMPECS 2016): a die with collection queued is passed over',
           f"host_die_candidates = {HOST_DIE_CANDIDATES}        # ASSUMED: the next die in turn or the one after it"]
          if key in ENTERPRISE else []),
        *([f'gc_pace = "nominal"          # {GC_PACE_NOTE}',
           f"gc_free_blocks_low = {GC_FREE_BLOCKS_LOW}          # GENERIC watermarks, free blocks per die over the drive: ASSUMED, the foreground minimum",
           f"gc_free_blocks_high = {GC_FREE_BLOCKS_HIGH}         # ASSUMED: the background target"]
          if GC_PACE.get(key) == "nominal" else []),
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
        *power_lines(key, cap, d["controller"], dram_bytes, ctrl.get("dram", "DDR3")),
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
