"""Host-directed placement on a `Drive`: NVMe FDP's RUH Update and its logs (the statistics
log, the RUH status, the events), read from the model (`ftl::placement`)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from .errors import SsdlabError

if TYPE_CHECKING:
    from . import _ssdlab

#: What a drive without `[placement]` needs for an FDP job.
FDP_HOW = 'accepted: Drive.open(..., placement="fdp") (the default one), or one in the drive file'


class PlacementLogs:
    """What a `Drive` offers of FDP: its `_sim` is the model's simulation."""

    _sim: _ssdlab.Simulation

    def ruh_update(self, pid: int) -> None:
        """NVMe FDP's RUH Update: the handle `pid` names starts a new reclaim unit (its open one
        closes where it is; RU Not Fully Written is logged if it was written)."""
        try:
            self._sim.ruh_update(pid)
        except (ValueError, OverflowError) as e:
            raise SsdlabError(f"ruh_update({pid}): {e}") from None

    def placement(self) -> dict | None:
        """FDP's logs now (as `summary["placement"]`), or None on a drive without placement."""
        return json.loads(self._sim.placement_json())

    def media_statistics(self) -> dict:
        """The statistics log of any drive: host and media bytes written, media bytes erased."""
        return json.loads(self._sim.media_statistics_json())
