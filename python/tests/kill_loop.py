"""A SIGKILL loop with a shadow: a real `ssdlab serve` on a store is written through a bare NBD
client (writes of versioned units, some with FUA, FLUSHes, several commands in flight), killed
with SIGKILL at a random point, started again on the same store, and every unit of the span
read back and checked against what the client was promised: a unit holds the version a
completed FLUSH or FUA made durable or a version written after it, never an older one, zeros
or anything else (what `ssdlab crashtest` checks inside one process, here across real
restarts of the server)."""

from __future__ import annotations

import json
import random
import select
import signal
import socket
import struct
import time
from dataclasses import dataclass, field
from pathlib import Path

UNIT = 4096
MAGIC = 0x5353444C  # "SSDL"
WRITE, FLUSH, READ = 1, 3, 0
FLAG_FUA = 1


_ZERO = bytes(UNIT)
_HEAD = struct.Struct(">IIQ")
_FILL = [bytes([b]) * (UNIT - _HEAD.size) for b in range(256)]


def unit_bytes(lba: int, version: int) -> bytes:
    return _HEAD.pack(MAGIC, lba, version) + _FILL[version & 0xFF]


def decode(lba: int, data: bytes | bytearray, at: int = 0) -> int | str:
    """The version the unit at `data[at:at + UNIT]` holds: 0 for zeros (never written), else
    its version; a string saying what is wrong when it is neither."""
    if data[at:at + UNIT] == _ZERO:
        return 0
    magic, got_lba, version = _HEAD.unpack_from(data, at)
    if magic != MAGIC or got_lba != lba or data[at + _HEAD.size:at + UNIT] != _FILL[version & 0xFF]:
        return f"foreign bytes (magic {magic:#x}, lba {got_lba})"
    return version


def connect(sock: Path) -> socket.socket:
    """Fixed newstyle handshake and OPT_GO on the default export; simple replies."""
    c = socket.socket(socket.AF_UNIX)
    c.connect(str(sock))
    recv_exact(c, 18)
    c.sendall(struct.pack(">I", 3))
    go = struct.pack(">I", 0) + struct.pack(">H", 0)
    c.sendall(b"IHAVEOPT" + struct.pack(">II", 7, len(go)) + go)
    while True:
        _, _, rep, length = struct.unpack(">QIII", recv_exact(c, 20))
        recv_exact(c, length)
        if rep == 1:
            return c


def recv_exact(c: socket.socket, n: int) -> bytes:
    out = bytearray()
    while len(out) < n:
        got = c.recv(n - len(out))
        if not got:
            raise ConnectionError("server closed the connection")
        out += got
    return bytes(out)


def recv_into(c: socket.socket, buf: memoryview) -> None:
    """Fill `buf` from the socket (a read's data: no copies)."""
    got = 0
    while got < len(buf):
        n = c.recv_into(buf[got:])
        if not n:
            raise ConnectionError("server closed the connection")
        got += n


def request(cmd: int, handle: int, offset: int, length: int, flags: int = 0) -> bytes:
    return struct.pack(">IHHQQI", 0x25609513, flags, cmd, handle, offset, length)


@dataclass
class Shadow:
    """Per unit: the version durable now (a FLUSH or FUA completed after it was acknowledged,
    or what was read back after the last restart), every version written since, and the
    versions acknowledged."""

    durable: list[int]
    written: list[set] = field(default_factory=list)
    acked: list[int] = field(default_factory=list)

    def __post_init__(self):
        self.written = [set() for _ in self.durable]
        self.acked = list(self.durable)

    def allows(self, lba: int, v: int) -> bool:
        return v == self.durable[lba] or (v in self.written[lba] and v > self.durable[lba])


@dataclass
class Tally:
    cycles: int = 0
    writes: int = 0
    fua: int = 0
    flushes: int = 0
    violations: list = field(default_factory=list)
    units_checked: int = 0


def run_cycle(c: socket.socket, shadow: Shadow, rng: random.Random, tally: Tally, commands: int,
              queue_depth: int, next_version: list) -> None:
    """Send `commands` commands (some left unanswered when the kill comes), keeping up to
    `queue_depth` in flight on units no other command in flight touches."""
    span = len(shadow.durable)
    flights: dict[int, tuple] = {}
    busy: set[int] = set()
    # Each acknowledgement in order, (unit, version): a FLUSH makes durable what was
    # acknowledged before it was sent, the log's first `len(acks)` entries then.
    acks: list[tuple[int, int]] = []
    applied = 0
    handle = 0
    sent = 0
    while sent < commands:
        while len(flights) < queue_depth and sent < commands:
            handle += 1
            roll = rng.random()
            if roll < 0.08:
                flights[handle] = ("flush", len(acks))
                c.sendall(request(FLUSH, handle, 0, 0))
                tally.flushes += 1
            else:
                units = rng.randint(1, 8)
                first = rng.randrange(span - units)
                lbas = range(first, first + units)
                if any(lba in busy for lba in lbas):
                    continue
                version = next_version[0]
                next_version[0] += 1
                fua = rng.random() < 0.15
                for lba in lbas:
                    shadow.written[lba].add(version)
                    busy.add(lba)
                data = b"".join(unit_bytes(lba, version) for lba in lbas)
                flights[handle] = ("write", lbas, version, fua)
                c.sendall(request(WRITE, handle, first * UNIT, len(data), FLAG_FUA if fua else 0) + data)
                tally.writes += 1
                tally.fua += fua
            sent += 1
        # A reply if one is ready (some are left in flight for the kill).
        while select.select([c], [], [], 0 if len(flights) < queue_depth else 5)[0]:
            magic, error, h = struct.unpack(">IIQ", recv_exact(c, 16))
            assert magic == 0x67446698 and error == 0, (magic, error)
            f = flights.pop(h)
            if f[0] == "flush":
                for lba, v in acks[applied:f[1]]:
                    shadow.durable[lba] = max(shadow.durable[lba], v)
                applied = max(applied, f[1])
            else:
                _, lbas, version, fua = f
                for lba in lbas:
                    busy.discard(lba)
                    shadow.acked[lba] = max(shadow.acked[lba], version)
                    acks.append((lba, version))
                    if fua:
                        shadow.durable[lba] = max(shadow.durable[lba], version)
            if len(flights) < queue_depth:
                break


def check(c: socket.socket, shadow: Shadow, tally: Tally, cycle: int) -> list[int]:
    """Read the span back after a restart; violations into `tally`; what each unit holds."""
    span = len(shadow.durable)
    holds = []
    chunk = 256
    data = bytearray(chunk * UNIT)
    for first in range(0, span, chunk):
        n = min(chunk, span - first)
        c.sendall(request(READ, first, first * UNIT, n * UNIT))
        magic, error, _ = struct.unpack(">IIQ", recv_exact(c, 16))
        assert magic == 0x67446698
        if error == 0:
            recv_into(c, memoryview(data)[:n * UNIT])
        for k in range(n):
            lba = first + k
            v = "a read error" if error else decode(lba, data, k * UNIT)
            tally.units_checked += 1
            if isinstance(v, str) or not shadow.allows(lba, v):
                tally.violations.append(
                    f"cycle {cycle}: unit {lba} holds {v if isinstance(v, str) else f'version {v}'}; "
                    f"durable {shadow.durable[lba]}, acknowledged {shadow.acked[lba]}, "
                    f"written since {sorted(shadow.written[lba])[-4:]}")
                v = 0 if isinstance(v, str) else v
            holds.append(v)
    return holds


def kill_loop(start, span_units: int, cycles: int, seed: int, commands: int = 600,
              queue_depth: int = 16) -> tuple[Tally, list[int]]:
    """`start(k)` starts the k-th server on the store and returns it (a tests' `Served`).
    Returns the tally and [erases held, holds ended early] summed over the killed servers."""
    rng = random.Random(seed)
    tally = Tally()
    next_version = [1]
    served = start(0)
    c = connect(served.sock)
    shadow = Shadow(check(c, Shadow([0] * span_units), Tally(), -1))
    held = [0, 0]
    for cycle in range(cycles):
        run_cycle(c, shadow, rng, tally, rng.randint(1, commands), queue_depth, next_version)
        # Statistics (cumulative for this server), then SIGKILL with commands in flight.
        for k, n in enumerate(_held(served)):
            held[k] += n
        served.kill()
        c.close()
        served = start(cycle + 1)
        c = connect(served.sock)
        shadow = Shadow(check(c, shadow, tally, cycle))
        tally.cycles += 1
    c.close()
    served.stop()
    return tally, held


def _held(served) -> tuple[int, int]:
    """SIGUSR1's statistics: (erases held, holds ended early) of this server so far, read from
    the `--stats-json` file the report writes whole (renamed into place): waited for as it
    appears, not for a time."""
    served.stats_path.unlink(missing_ok=True)
    served.proc.send_signal(signal.SIGUSR1)
    deadline = time.monotonic() + 600  # a hang's guard only
    while not served.stats_path.exists():
        assert served.proc.poll() is None, f"the server ended ({served.proc.returncode}) on SIGUSR1: {served.output()}"
        assert time.monotonic() < deadline, served.output()
        time.sleep(0.01)
    stats = json.loads(served.stats_path.read_text())
    return stats.get("gc_erases_held", 0), stats.get("gc_erase_holds_broken", 0)
