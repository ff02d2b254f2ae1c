"""The [power] and [thermal] sections of the presets: the NAND, DRAM and controller figures
with their sources (tools/gen_presets.py writes them; docs/model.md 'Power')."""

from __future__ import annotations

from preset_ratings import POWER_LIMIT_W

# [power] of the SATA drives (crates/ssdlab-core/src/power/mod.rs), per controller where a figure
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
# NAND standby: every die draws its standby current while the drive is up (not in DevSleep).
NAND_STANDBY_MA = (0.01, "Micron MLC datasheets, DC characteristics: ISB standby current 10 uA typ (50 max) per die")

# The DRAM's background power by state (crates/ssdlab-core/src/power/mod.rs DramPower), from Micron
# datasheet currents of a 2 Gb die as DRAMPower's memspecs carry them
# (github.com/tukl-msd/DRAMPower memspecs/MICRON_2Gb_DDR3-1600_16bit_D.json and
# MICRON_2Gb_LPDDR2-1066-S4_16bit_A.json): (rail volts, IDD mA) per state; refresh the
# controller issues (IDD5 - IDD3N for tRFC of every tREFI) is added where the DRAM does not
# refresh itself. A die of another density (DRAM_DIE_GBIT) follows the form Micron's DDR3-1600
# 1 Gb (MICRON_1Gb_DDR3-1600_8bit_G) and 2 Gb dies show: standby and power-down currents the
# same per die, self refresh 8 -> 12 mA (a per-die part plus one in proportion to the cells:
# IDD6(d) = IDD6(2 Gb) x (1 + d) / 3), controller-issued refresh in proportion to the cells
# (GENERIC: the same form for LPDDR2).
DRAM_PARTS = {
    "DDR3": {
        "source": "Micron 2Gb DDR3-1600 x16 (DRAMPower memspec MICRON_2Gb_DDR3-1600_16bit_D): VDD 1.5 V",
        "rails_v": (1.5,),
        "idd2n": (42.0,), "idd2p0": (12.0,), "idd6": (12.0,), "idd3n": (45.0,), "idd5": (215.0,),
        "idd4w": (280.0,), "idd4r": (270.0,), "trfc_trefi": 128 / 6240,  # tREFI 7.8 us at 800 MHz (JESD79-3, to 85 C)
        "bytes_per_s": 1600e6 * 2,
    },
    "LPDDR2": {
        "source": "Micron 2Gb LPDDR2-1066 S4 x16 (DRAMPower memspec MICRON_2Gb_LPDDR2-1066-S4_16bit_A): VDD1 1.8 V, VDD2/VDDQ 1.2 V",
        "rails_v": (1.8, 1.2),
        "idd2n": (1.7, 22.0), "idd2p0": (0.5, 1.7), "idd6": (1.2, 2.6), "idd3n": (1.2, 30.0), "idd5": (15.0, 136.0),
        "idd4w": (10.0, 208.0), "idd4r": (5.0, 226.0), "trfc_trefi": 70 / 2080,  # tREFI 3.9 us at 533 MHz
        "bytes_per_s": 1066e6 * 2,
    },
}


def dram_die_gbit(dram_bytes: int) -> int:
    """ASSUMED (the drives' DRAM dies are not published): the fewest dies of at most 4 Gb,
    the densest DDR3 and LPDDR2 dies of 2013."""
    gbit = dram_bytes * 8 // (1 << 30)
    return max(1, min(4, gbit))


def dram_power(kind: str, dram_bytes: int) -> dict:
    """The DRAM's figures for `dram_bytes` of this kind: W per GiB by state, pJ per byte."""
    part = DRAM_PARTS[kind]
    v = part["rails_v"]
    d = dram_die_gbit(dram_bytes)
    dies_per_gib = 8 / d

    def mw(key):
        return sum(a * b for a, b in zip(v, part[key]))

    refresh = sum(a * (i5 - i3) * part["trfc_trefi"] for a, i5, i3 in zip(v, part["idd5"], part["idd3n"])) * d / 2
    self_refresh = mw("idd6") * (1 + d) / 3
    per_gib = dies_per_gib * 1e-3
    access_mw = (mw("idd4w") + mw("idd4r")) / 2 - mw("idd3n")
    return {
        "standby_w_per_gib": round((mw("idd2n") + refresh) * per_gib, 4),
        "power_down_w_per_gib": round((mw("idd2p0") + refresh) * per_gib, 4),
        "self_refresh_w_per_gib": round(self_refresh * per_gib, 4),
        "pj_per_byte": round(access_mw * 1e-3 / part["bytes_per_s"] * 1e12, 1),
        "refresh_mw": refresh,
        "die": f"{d} Gb dies, {dies_per_gib:g} per GiB",
        "source": part["source"],
    }


def dram_kind(dram: str) -> str:
    """DDR3 or LPDDR2, from the controller's DRAM as drives.toml names it."""
    return "LPDDR2" if dram.startswith("LPDDR2") else "DDR3"


# The controllers' own idle power (controller, its SATA PHY and regulators; the DRAM and NAND
# are itemised where the DRAM's size is published). No vendor publishes them. The M500 and M550
# datasheets rate "150 mW TYP: active average power measured during MobileMark with DIPM
# enabled" (Micron m500_2_5_ssd.pdf Rev G and m550 datasheets, feature list note 4): a mostly
# idle, DIPM workload, so the 88SS9187's slumber figure is fitted once to that rating on the
# four M500 capacities (tools/fit_slumber.py; residuals in docs/fidelity.md). The 88SS9189 is
# an update of the 9187 (drives.toml) and is taken with the 9187's figures (ASSUMED): what
# differs at idle between the M500 and the M550 is then their DRAM (DDR3 against LPDDR2), and
# the M550's 150 mW rating is a check of that, not a second fit.
SLUMBER_9187_W = 0.0527  # fitted: tools/fit_slumber.py (worst residual over the four M500 capacities +-15.1%)
CONTROLLER_POWER = {
    # (controller_busy_w, idle_active_w, idle_partial_w, idle_slumber_w, idle_devsleep_w, source)
    "marvell-88ss9174": (0.5, 1.0, 0.4, 0.15, 0.15, "ASSUMED, the whole drive (no DRAM size published): figures as the 9187's, slumber higher (older PHY); no DevSleep (drives.toml lists none): DEVSLP leaves it in Slumber"),
    "marvell-88ss9187": (0.5, 0.93, 0.33, SLUMBER_9187_W, 0.005, "controller and PHY; ASSUMED active and partial (the earlier whole-drive 1.0 W and 0.35 W less a 240GB's DRAM); slumber fitted to the M500's 150 mW TYP MobileMark/DIPM rating (tools/fit_slumber.py); DevSleep at the 5 mW the DevSleep feature targets"),
    "marvell-88ss9189": (0.5, 0.93, 0.33, SLUMBER_9187_W, 0.004, "controller and PHY: ASSUMED the 88SS9187's (the 9189 is its update, drives.toml), slumber the 9187's fit (tools/fit_slumber.py), so the M550's MobileMark rating checks the LPDDR2's part; DevSleep 4 mW for its 'DevSleep optimisation' (ASSUMED)"),
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


# The PCIe drives: no link power states modelled (PCIe ASPM is not), so every idle state is
# the active one; a power budget where the datasheet rates the drive's power.
PCIE_POWER = (2.0, 8.0, "ASSUMED: controller ASIC, DDR3 and PCIe PHY of a 32-channel card (not published)")


DRAM_LINE = ("dram_pj_per_byte = 160.0    # ASSUMED: DDR3 read/write energy of the order of 20 pJ per bit "
             "(I/O and core); idle and refresh are in the idle figures")


def power_lines(key: str, cap: int, controller: str, dram_bytes: int = 0, dram_type: str = "DDR3") -> list[str]:
    """The [power] section of a drive with this controller and DRAM."""
    lines = ["[power]                         # crates/ssdlab-core/src/power/mod.rs; docs/model.md 'Power'"]
    lines += [f"{k} = {v}    # {why}" for k, v, why in NAND_POWER]
    itemised = controller in CONTROLLER_POWER and dram_bytes > 0
    if controller in CONTROLLER_POWER:
        busy, active, partial, slumber, devsleep, src = CONTROLLER_POWER[controller]
        lines += [f"controller_busy_w = {busy}    # ASSUMED: the processor above idle while it works"]
        if itemised:
            dram = dram_power(dram_kind(dram_type), dram_bytes)
            lines.append(f"dram_pj_per_byte = {dram['pj_per_byte']}    # {dram['source']}: mean of burst write and read "
                         "(IDD4W, IDD4R) above active standby (IDD3N) at the part's data rate; one access per byte on the NAND bus")
        else:
            lines += [DRAM_LINE]
        for k, v in (("idle_active_w", active), ("idle_partial_w", partial), ("idle_slumber_w", slumber), ("idle_devsleep_w", devsleep)):
            lines.append(f"{k} = {v}    # {src}")
        lines += [f"{k} = {v}    # {why}" for k, v, why in LINK_POWER]
        if itemised:
            lines.append(f"nand_standby_ma = {NAND_STANDBY_MA[0]}    # {NAND_STANDBY_MA[1]}")
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
    if itemised:
        dram = dram_power(dram_kind(dram_type), dram_bytes)
        r = f"{dram['refresh_mw']:.2f} mW of controller-issued refresh per die"
        lines += [
            "",
            f"[power.dram]                    # {dram['source']}, as {dram['die']} (tools/preset_power.py DRAM_PARTS); per GiB of controller.dram_bytes",
            f"standby_w_per_gib = {dram['standby_w_per_gib']}    # link active: precharge standby IDD2N x VDD + {r}",
            f"power_down_w_per_gib = {dram['power_down_w_per_gib']}    # Partial: precharge power-down IDD2P0 x VDD + {r}",
            f"self_refresh_w_per_gib = {dram['self_refresh_w_per_gib']}    # Slumber: self refresh IDD6 x VDD (DevSleep: powered down)",
        ]
    return lines + [""]
