"""The review suite: the procedures of methodology.md by name, on modelled drives or, through
fio, on real devices; and the report that puts them side by side."""

from .catalog import PROCEDURES, resolve_params, run_procedure
from .procedures import Outcome
from .runner import review

__all__ = ["PROCEDURES", "Outcome", "resolve_params", "review", "run_procedure"]
