"""Sweeps: grids of drives x parameters x procedures (or fio-like jobs), run on a local
process pool or a Ray cluster, results in one Parquet dataset with a DuckDB catalog.

    import ssdlab
    result = ssdlab.sweep("spare.toml", "out/")          # or a dict spec; backend="ray"
    result.summary                                       # pandas DataFrame, one row per point

See `spec.py` for the spec's keys, `run.py` for the backends and `catalog.py` for the layout
of the results.
"""

from .run import SweepResult, sweep
from .spec import Point, load_spec

__all__ = ["Point", "SweepResult", "load_spec", "sweep"]
