"""The 88SS9187's slumber power, fitted once to the M500's published "150 mW TYP: active
average power measured during MobileMark with DIPM enabled" (m500_2_5_ssd.pdf Rev G) on all
four M500 capacities, with the validate power group's light client workload (validate.py
LIGHT_IOPS, LIGHT_S). The average is linear in the controller's slumber figure, so two runs a
preset give it exactly. The capacities differ in their DRAM (256 MiB to 1 GiB, drives.toml),
so the one rating cannot hold exactly for all four: the fit makes the largest relative error
over the four as small as it can be (to 0.1 mW). The M550
(88SS9189, taken with the 9187's figures) is printed as the check it is.

    python3 tools/fit_slumber.py        # prints the fit and every residual
Then set SLUMBER_9187_W in tools/preset_power.py and regenerate the presets.
"""
import sys
import tempfile
import tomllib
from pathlib import Path

from ssdlab import Drive
from ssdlab.configs import DriveText, dump_toml, preset_path
from ssdlab.validate import LIGHT_S, light_client_trace

RATING_W = 0.150
FIT = ["crucial-m500-120", "crucial-m500-240", "crucial-m500-480", "crucial-m500-960"]
CHECK = ["crucial-m550-128", "crucial-m550-256", "crucial-m550-512", "crucial-m550-1024"]


def average_w(name: str, slumber_w: float, trace: Path) -> float:
    cfg = tomllib.loads(preset_path(name).read_text())
    cfg["power"]["idle_slumber_w"] = slumber_w
    d = Drive.open(DriveText(dump_toml(cfg), name))
    d.set_link_power("dipm")
    return d.replay(str(trace), "timed", format="disksim").summary["power"]["average_w"]


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        trace = light_client_trace(Path(tmp) / "light.trace", seconds=LIGHT_S)
        lines = {n: (average_w(n, 0.0, trace), average_w(n, 0.1, trace)) for n in FIT + CHECK}
    # average = a + b * slumber, per preset; the slumber (whole mW) of the smallest worst error.
    def worst(s: float) -> float:
        return max(abs(lo + (hi - lo) / 0.1 * s - RATING_W) for lo, hi in (lines[n] for n in FIT))
    s = round(min((k / 10000 for k in range(0, 3001)), key=worst), 4)
    print(f"88SS9187 controller slumber: {s:.4f} W (fitted on {len(FIT)} M500 capacities, {LIGHT_S:.0f} s each)")
    print("| preset | light client IO, DIPM (W) | against 150 mW |")
    print("|---|---|---|")
    for n in FIT + CHECK:
        lo, hi = lines[n]
        w = lo + (hi - lo) / 0.1 * s
        print(f"| {n}{' (check)' if n in CHECK else ''} | {w:.4f} | {100 * (w / RATING_W - 1):+.1f}% |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
