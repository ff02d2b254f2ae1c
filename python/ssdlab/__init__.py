"""ssdlab: a software SSD.

NAND-flash drives modelled the way they are built (dies, channels, planes, a page-mapped FTL
with garbage collection, RAIN and wear levelling, a SATA or NVMe host interface), fast enough
to run review tests in seconds.

>>> import ssdlab
>>> drive = ssdlab.Drive.preset("crucial-m500-960")
>>> drive.precondition("fill")                       # doctest: +SKIP
>>> result = drive.run(ssdlab.Job(rw="randwrite", bs="4k", iodepth=32, runtime_s=2000, time_based=True))  # doctest: +SKIP
>>> result.series.write_iops                         # doctest: +SKIP
"""

from .drive import Drive, ReplayResult, Result, preset_names
from .errors import SsdlabError
from .job import Job, parse_fio
from .traces import trace_stats

__all__ = ["Drive", "Job", "ReplayResult", "Result", "SsdlabError", "parse_fio", "preset_names", "sweep", "trace_stats"]
__version__ = "0.1.0"


def __getattr__(name: str):
    # ssdlab.sweep(spec, out, ...): the sweep runner, loaded when first used.
    if name == "sweep":
        from .sweeps import sweep
        return sweep
    raise AttributeError(f"module 'ssdlab' has no attribute {name!r}")
