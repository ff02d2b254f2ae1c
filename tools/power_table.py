"""Each preset's power by state and under load, as a Markdown table (for notes and
docs/fidelity.md): idle with the link Active, Partial (DIPM), Slumber (HIPM+DIPM) and
DevSleep, and the average power of 5 s of 128 KiB sequential writes on a fresh drive and of
4 KiB random writes on a full one, both at QD32.

    python3 tools/power_table.py [preset ...]
"""
import sys

from ssdlab import Drive, Job, preset_names


def row(name: str, write_s: float = 5.0) -> str | None:
    d = Drive.open(name)
    if d.energy_j() is None:
        return None
    idle = {}
    for policy, seconds in (("none", 1.0), ("dipm", 0.009), ("hipm+dipm", 10.0), ("devsleep", 10.0)):
        d = Drive.open(name)
        if policy == "dipm":  # Partial: from DIPM's 100 us timer to its 10 ms slumber timer
            d.idle_power_w("dipm", 0.0002)
        idle[policy] = d.idle_power_w(policy, seconds)
    d = Drive.open(name)
    seq = d.run(Job(rw="write", bs="128k", iodepth=32, runtime_s=write_s, time_based=True)).summary["power"]["average_w"]
    d = Drive.open(name)
    d.fill()
    rand = d.run(Job(rw="randwrite", bs="4k", iodepth=32, runtime_s=write_s, time_based=True)).summary["power"]["average_w"]
    return (f"| {name} | {idle['none']:.3f} | {idle['dipm']:.3f} | {idle['hipm+dipm']:.3f} | {idle['devsleep']:.4f} "
            f"| {seq:.2f} | {rand:.2f} |")


def main(argv: list[str]) -> int:
    names = argv or preset_names()
    print("| preset | idle, link active (W) | partial (W) | slumber, HIPM+DIPM (W) | DevSleep (W) | 128K seq write QD32 (W) | 4K random write QD32, full (W) |")
    print("|---|---|---|---|---|---|---|")
    for name in names:
        line = row(name)
        if line:
            print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
