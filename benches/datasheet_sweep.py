"""Fresh-drive datasheet sanity sweep (not the vendors' exact procedure; issue 4 does that):
128 KiB sequential write and 4 KiB random write over 8 GiB of a secure-erased drive, then
128 KiB sequential read and 4 KiB random read of a filled drive, all at QD32, next to the
drives.toml ratings. Prints figures; never fails.

    python benches/datasheet_sweep.py [PRESET ...]
"""

import sys
import time
import tomllib
from pathlib import Path

import ssdlab
from ssdlab import Job

REFERENCE = Path(__file__).resolve().parents[2] / "shared" / "reference" / "drives.toml"
DEFAULT = ["crucial-m500-120", "crucial-m500-480", "crucial-m550-128", "micron-p420m-700"]


def main() -> None:
    spec = tomllib.loads(REFERENCE.read_text())["drives"] if REFERENCE.exists() else {}
    for name in sys.argv[1:] or DEFAULT:
        family, cap = name.rsplit("-", 1)
        s = spec.get(family, {})
        i = s["capacities_gb"].index(int(cap)) if s else 0
        rating = lambda k: (s[k][i] if isinstance(s.get(k), list) else s.get(k, "?"))  # noqa: E731
        d = ssdlab.Drive.preset(name)
        t = time.perf_counter()
        d.secure_erase()
        sw = d.run(Job(rw="write", bs="128k", iodepth=32, size="8g")).summary["write"]["mb_per_s"]
        rw = d.run(Job(rw="randwrite", bs="4k", iodepth=32, size="8g", number_ios=300_000)).summary["write"]["iops"]
        d.precondition("fast-fill")
        sr = d.run(Job(rw="read", bs="128k", iodepth=32, size="8g")).summary["read"]["mb_per_s"]
        rr = d.run(Job(rw="randread", bs="4k", iodepth=32, number_ios=300_000)).summary["read"]["iops"]
        print(f"{name:18} seqW {sw:6.0f} MB/s (rated {rating('spec_seq_write_mbps')})  rndW {rw:8.0f} IOPS (rated {rating('spec_rand_write_iops')})  "
              f"seqR {sr:6.0f} (rated {rating('spec_seq_read_mbps')})  rndR {rr:8.0f} (rated {rating('spec_rand_read_iops')})  wall {time.perf_counter() - t:.1f} s")


if __name__ == "__main__":
    main()
