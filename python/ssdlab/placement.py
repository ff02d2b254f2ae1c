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

    def zone_report(self, first: int = 0, count: int = 2**32 - 1) -> list[dict]:
        """A zoned namespace's zones (Zone Management Receive), from `first`, at most `count`:
        each one's state, start, write pointer, capacity and size in bytes; [] on a
        conventional namespace."""
        try:
            return json.loads(self._sim.zone_report_json(first, count))
        except OverflowError:
            raise SsdlabError(f"zone_report({first}, {count}): accepted: zone numbers 0 to 2^32 - 1") from None

    def zones(self) -> dict | None:
        """A zoned namespace now (as `summary["zones"]`): zones by state, resets, refusals;
        None on a conventional namespace."""
        return json.loads(self._sim.zones_json())

    def zone_manage(self, zone: int, action: str) -> None:
        """Zone Management Send between runs: `action` open, close, finish or reset to `zone`.
        A reset empties the zone and erases its blocks. Refused (SsdlabError naming the
        status, e.g. Zone Invalid State Transition) as the specification says."""
        try:
            self._sim.zone_manage(zone, action)
        except (ValueError, OverflowError, RuntimeError) as e:
            raise SsdlabError(f"zone_manage({zone}, {action!r}): {e}") from None
