"""Serve a modelled drive over NBD: `ssdlab serve --drive NAME --socket PATH`.

The server itself is Rust (crates/ssdlab-nbd) and runs on its own threads; this module starts
it, reports statistics on SIGUSR1, and on SIGINT/SIGTERM answers what is in flight, prints the
final statistics and exits.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

from . import _ssdlab
from .drive import LINK_POLICIES, config_text, describe_text
from .errors import SsdlabError

PACES = ("model", "none")
PRECONDITIONS = ("none", "fast-fill")


def transport_floor_us(qd: int = 1, seconds: int = 2) -> float:
    """What fio's nbd engine, libnbd and the socket add to any NBD server's replies on this
    machine: fio's mean latency of 4 KiB random reads at QD `qd` against `nbdkit memory`, a
    server that answers at once, over a Unix socket (`ssdlab serve --transport-us auto`; about
    3.5 s with the defaults). On the 2-vCPU VM of 2026-12-07 it read 69-81 us, and it decided
    whether a closed-loop measurement through NBD read right there: crucial-m550-128 shrunk,
    served 10x slower than real time, gave fio's 4 KiB random writes at QD3 57% under the
    model's own figure without it and 1.9% under with 80 us (python/tests/test_serve.py's
    fit through NBD). Needs fio and nbdkit (Debian's `fio`, `nbdkit`)."""
    missing = [t for t in ("fio", "nbdkit") if shutil.which(t) is None]
    if missing:
        raise SsdlabError(f"--transport-us auto measures fio against nbdkit: not installed: {', '.join(missing)} "
                          "(apt-get install fio nbdkit); or give the microseconds")
    with tempfile.TemporaryDirectory(prefix="ssdlab-floor-") as tmp:
        sock = Path(tmp) / "floor.sock"
        kit = subprocess.Popen(["nbdkit", "--foreground", "-U", str(sock), "memory", "1G"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.monotonic() + 30
            while not sock.exists():
                if kit.poll() is not None or time.monotonic() > deadline:
                    raise SsdlabError(f"--transport-us auto: nbdkit memory did not start: {_last_line(kit)}")
                time.sleep(0.02)
            out = Path(tmp) / "fio.json"
            fio = subprocess.run(["fio", "--name=floor", "--ioengine=nbd", f"--uri=nbd+unix:///?socket={sock}",
                                  "--rw=randread", "--bs=4k", f"--iodepth={qd}", "--size=1g", f"--runtime={seconds}",
                                  "--time_based", "--ramp_time=1", "--output-format=json", f"--output={out}"],
                                 capture_output=True, text=True)
            if fio.returncode != 0:
                raise SsdlabError(f"--transport-us auto: fio against nbdkit failed: "
                                  f"{(fio.stderr.strip().splitlines() or ['no message'])[-1]}")
            text = out.read_text()
            return json.loads(text[text.index("{"):])["jobs"][0]["read"]["clat_ns"]["mean"] / 1e3
        finally:
            kit.terminate()
            kit.wait(timeout=60)


def _last_line(proc: subprocess.Popen) -> str:
    err = proc.stderr.read() if proc.poll() is not None and proc.stderr else ""
    return (err.strip().splitlines() or ["no message"])[-1]


class Server:
    """A running NBD server for one drive. Use as a context manager or call `shutdown()`."""

    def __init__(self, drive: str, *, socket: str | Path | None = None, port: int | None = None,
                 bind: str = "127.0.0.1", pace: str = "model", precondition: str = "none",
                 seed: int = 0, log: bool = True, store: str | Path | None = None,
                 read_only: bool = False, max_connections: int = 32, io_timeout_s: float = 30.0,
                 power_cut_after: int | None = None, faults: str | None = None, transport_us: float = 0.0,
                 link_power: str = "none", time_scale: int = 1):
        if pace not in PACES:
            raise SsdlabError(f"--pace '{pace}': accepted: {', '.join(PACES)}")
        if precondition not in PRECONDITIONS:
            raise SsdlabError(f"--precondition '{precondition}': accepted: {', '.join(PRECONDITIONS)}")
        if (socket is None) == (port is None):
            raise SsdlabError("give exactly one of --socket PATH or --port N")
        if power_cut_after is not None and store is None:
            raise SsdlabError("--power-cut-after needs --store DIR (the drive is rebuilt from it)")
        if power_cut_after is not None and not 1 <= power_cut_after <= 2**62:
            raise SsdlabError(f"--power-cut-after {power_cut_after}: accepted: 1 or more commands")
        if link_power not in LINK_POLICIES:
            raise SsdlabError(f"--link-power '{link_power}': accepted: {', '.join(LINK_POLICIES)}")
        if isinstance(time_scale, bool) or not isinstance(time_scale, int) or not 1 <= time_scale <= 1000:
            raise SsdlabError(f"--time-scale {time_scale}: accepted: a whole number from 1 to 1000")
        if time_scale > 1 and pace != "model":
            raise SsdlabError(f"--time-scale {time_scale} needs --pace model (the scale is of the model's time)")
        if not 0 <= transport_us <= 10_000:
            raise SsdlabError(f"--transport-us {transport_us}: accepted: 0 to 10000 microseconds")
        if not 0.001 <= io_timeout_s <= 86_400:
            raise SsdlabError(f"--io-timeout {io_timeout_s}: accepted: 0.001 to 86400 seconds")
        if not 1 <= max_connections <= 100_000:
            raise SsdlabError(f"--max-connections {max_connections}: accepted: 1..100000")
        if port is not None and not 0 <= port <= 65535:
            raise SsdlabError(f"--port {port}: accepted: 0..65535 (0 picks a free port)")
        text, source = config_text(drive, faults)
        d = describe_text(text, source)
        self.name = d["name"] or source
        placement = tomllib.loads(text).get("placement")
        if placement is not None and placement.get("mode") == "zns":
            # A zoned namespace takes writes only at its zones' write pointers: an NBD client's
            # writes anywhere else would fail, and NBD has no zone commands to reset them.
            raise SsdlabError(f"{source}: a zoned namespace ([placement] mode = \"zns\") cannot be served through NBD "
                              "(it has no zones, and writes off a write pointer would fail); accepted: a drive file "
                              "without mode = \"zns\" (FDP is served, every write on placement handle 0)")
        if placement is not None:
            # NBD's commands carry no placement identifier and no zone: every write is placed
            # as one without a directive (the namespace's placement handle 0).
            print(f"ssdlab serve: {source}'s [placement] is not reachable through NBD (its commands carry no "
                  "placement identifiers or zones): every write goes to placement handle 0", file=sys.stderr)
        self.user_bytes = d["user_bytes"]
        description = (f"ssdlab {self.name}: {d['controller']}, {d['dies']} dies, "
                       f"{d['user_gb']:.1f} GB, pace {pace}" + (f", {time_scale}x slower than real time" if time_scale > 1 else ""))
        try:
            self._server = _ssdlab.NbdServer(
                text, seed, precondition, pace, self.name, description,
                socket=str(socket) if socket is not None else None, port=port,
                bind=bind if port is not None else None, log=log,
                store=str(store) if store is not None else None, read_only=read_only,
                max_connections=max_connections, io_timeout_s=io_timeout_s, power_cut_after=power_cut_after,
                transport_us=transport_us, link_power=link_power, time_scale=time_scale)
        except ValueError as e:
            if str(e).startswith("store "):
                raise SsdlabError(f"serve {self.name}: --{e}") from None
            raise SsdlabError(f"{source or self.name}: {e}") from None
        except OSError as e:  # the socket path or TCP address cannot be listened on
            hint = ("a free port, or --port 0 for any free port" if port is not None
                    else "a path that does not exist or is a stale socket")
            raise SsdlabError(f"serve {self.name}: cannot listen at {e}; accepted: {hint}") from None
        # Bound to every interface: the address a client on this machine can use (others use
        # this machine's address with the same port).
        self.all_interfaces = port is not None and bind in ("0.0.0.0", "::")
        self.uri = (self._server.uri().replace("nbd://0.0.0.0:", "nbd://127.0.0.1:", 1)
                    .replace("nbd://[::]:", "nbd://[::1]:", 1))

        # How the store was opened: None without one (data in memory).
        self.mount: dict | None = json.loads(self._server.mount_json())

    def stats(self) -> dict:
        return json.loads(self._server.stats_json())

    def failed(self) -> bool:
        """The simulation thread died of an internal error: nothing more will be answered."""
        return self._server.failed()

    def shutdown(self) -> dict:
        return json.loads(self._server.shutdown())

    def __enter__(self) -> "Server":
        return self

    def __exit__(self, *exc) -> None:
        try:
            self.shutdown()
        except RuntimeError:
            pass  # already stopped
