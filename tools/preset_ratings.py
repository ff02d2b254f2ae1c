"""Published ratings the presets carry in `[datasheet]` that drives.toml does not hold, each
with its source: the rating conditions, the latency ratings and the power ratings
(tools/gen_presets.py writes them into every preset)."""

SATA_QD32 = "Micron SATA SSD datasheets: Iometer at queue depth 32 (NCQ's 32 slots)"
CONDITIONS = {
    "crucial-m500": (32, 1, 128, SATA_QD32 + "; 128KB sequential; fresh out of box (drives.toml)"),
    "crucial-m550": (32, 1, 128, SATA_QD32 + "; 128KB sequential; fresh out of box (drives.toml)"),
    "crucial-m4": (32, 1, 128, SATA_QD32 + "; fresh out of box"),
    "micron-m500dc": (32, 1, 128, SATA_QD32 + "; full drive, steady state (drives.toml rating_condition)"),
    "micron-p400m": (32, 1, 64, "P400m datasheet: steady state, sequential 64KB read/write, random 4KB; " + SATA_QD32),
    "micron-p400e": (32, 1, 128, "P400e: steady state; ASSUMED 128KB sequential and " + SATA_QD32),
    "micron-p320h": (256, 1, 128, "P320h HHHL datasheet Rev V, performance note 4: FIO, steady state (SNIA PTS 1.0), preconditioned, queue depth 256, raw device"),
    "micron-p420m": (256, 1, 128, "ASSUMED as the P320h (same controller and driver; P420m datasheet: up to 256 outstanding commands, 128KB sequential, steady state; Tom's Hardware: peak performance not before QD256)"),
}


# Published latency ratings (not in drives.toml), each with the conditions it was measured
# under; `ssdlab validate --groups latency` measures each one.
_C400 = ("Micron C400 2.5-inch datasheet (MTFDDAK256MAM; pdf.datasheet.live/e3c1bb1c/micron.com/MTFDDAK256MAM-1K1.txt): "
         "READ/WRITE latency 55us (TYP), 4K transfers, Iometer, write cache enabled; queue depth 1 ASSUMED (at QD32 no drive reaches 55 us); fresh out of box")
_M500 = ("Micron M500 2.5-inch datasheet (m500_2_5_ssd.pdf Rev G; manualmachine.com/micron/mtfddak120mav/8099442): "
         "READ/WRITE latency 5ms/25ms (MAX), 4KB transfers, Iometer at queue depth 32, fresh out of box, write cache enabled")
_M550 = ("Micron M550 mSATA and M.2 datasheets (m550_m2_2280_ssd.pdf Rev E): READ/WRITE latency 5ms/25ms (MAX), 4KB, "
         "Iometer at queue depth 32, fresh out of box, write cache enabled (the 2.5-inch's ASSUMED the same)")
_P400M = ("Micron P400m datasheet (manualzilla.com/doc/7119476): steady state READ latency 0.57ms (100GB) / 0.51ms (200/400GB), "
          "WRITE latency 2ms, 4KB; ASSUMED the mean at the datasheet's queue depth 32")
_P320H = ("Micron P320h HHHL datasheet Rev V (omo-ic.com/pdf/631749), note 7: FIO, queue depth 1, random, 512-byte READ, "
          "4KB WRITE; READ latency <47us, WRITE latency <311us (nonposted); preconditioned (note 2)")
_P420M = ("Micron P420m HHHL datasheet Rev O (docplayer.net/amp/2931262): latency (queue depth 1), steady state (note 8): "
          "READ latency <100us (MIN), WRITE latency 13us (posted) (MIN), 4KB")
LATENCY_RATINGS = {
    "crucial-m4": [
        {"op": "read", "figure": "typ", "us": 55, "qd": 1, "bytes": 4096, "state": "fresh", "source": _C400},
        {"op": "write", "figure": "typ", "us": 55, "qd": 1, "bytes": 4096, "state": "fresh", "source": _C400},
    ],
    "crucial-m500": [
        {"op": "read", "figure": "max", "bound": True, "us": 5000, "qd": 32, "bytes": 4096, "state": "fresh", "source": _M500},
        {"op": "write", "figure": "max", "bound": True, "us": 25000, "qd": 32, "bytes": 4096, "state": "fresh", "source": _M500},
    ],
    "crucial-m550": [
        {"op": "read", "figure": "max", "bound": True, "us": 5000, "qd": 32, "bytes": 4096, "state": "fresh", "source": _M550},
        {"op": "write", "figure": "max", "bound": True, "us": 25000, "qd": 32, "bytes": 4096, "state": "fresh", "source": _M550},
    ],
    "micron-p400m": [
        {"op": "read", "figure": "mean", "us": lambda gb: 570 if gb == 100 else 510, "qd": 32, "bytes": 4096, "state": "steady", "source": _P400M},
        {"op": "write", "figure": "mean", "us": 2000, "qd": 32, "bytes": 4096, "state": "steady", "source": _P400M},
    ],
    "micron-p320h": [
        {"op": "read", "figure": "mean", "bound": True, "us": 47, "qd": 1, "bytes": 512, "state": "steady", "source": _P320H},
        {"op": "write", "figure": "mean", "bound": True, "us": 311, "qd": 1, "bytes": 4096, "state": "steady", "posted": False, "source": _P320H},
    ],
    "micron-p420m": [
        {"op": "read", "figure": "min", "bound": True, "us": 100, "qd": 1, "bytes": 4096, "state": "steady", "source": _P420M},
        {"op": "write", "figure": "min", "us": 13, "qd": 1, "bytes": 4096, "state": "steady", "source": _P420M},
    ],
}


# Published power ratings (not in drives.toml): (field, watts, source).
POWER_RATINGS = {
    "crucial-m500": ("power_active_average_w", 0.150, "Micron M500 2.5-inch datasheet (m500_2_5_ssd.pdf Rev G): low power consumption 150mW TYP, active average power measured during MobileMark with DIPM enabled"),
    "crucial-m550": ("power_active_average_w", 0.150, "Micron M550 datasheets (m550 M.2 2280 Rev E): low power consumption 150mW TYP, active average power (MobileMark with DIPM), as the M500's"),
    "micron-p400m": ("power_typical_max_w", 7.5, "Micron P400m 2.5-inch datasheet: power consumption <7.5W (TYP)"),
}


P320H_POWER = ("P320h HHHL datasheet (realssd_p320h_hhhl_distribution.pdf Rev V): 25 W, 10 ms RMS "
               "('transient peaks above 25W are possible under heavy write workloads')")
POWER_LIMIT_W = {
    ("micron-p320h", 350): (25.0, P320H_POWER),
    ("micron-p320h", 700): (25.0, P320H_POWER),
    ("micron-p420m", 700): (25.0, "P420m HHHL datasheet (p420m_hhhl.pdf Rev O): power 700GB 25W RMS; 256 dies could draw far more, so the firmware must hold the NAND to it"),
    ("micron-p420m", 1400): (25.0, "P420m HHHL datasheet (p420m_hhhl.pdf Rev O): power 1.4TB 25W RMS; 256 dies could draw far more, so the firmware must hold the NAND to it"),
}
