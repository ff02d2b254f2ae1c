"""Serve a modelled drive over NBD: `ssdlab serve --drive NAME --socket PATH`.

The server itself is Rust (crates/ssdlab-nbd) and runs on its own threads; this module starts
it, reports statistics on SIGUSR1, and on SIGINT/SIGTERM answers what is in flight, prints the
final statistics and exits.
"""

from __future__ import annotations

import json
import signal
import sys
import threading
from pathlib import Path

from . import _ssdlab
from .drive import FAULTS_HELP, config_text, describe_text, format_faults
from .errors import SsdlabError

PACES = ("model", "none")
PRECONDITIONS = ("none", "fast-fill")


class Server:
    """A running NBD server for one drive. Use as a context manager or call `shutdown()`."""

    def __init__(self, drive: str, *, socket: str | Path | None = None, port: int | None = None,
                 bind: str = "127.0.0.1", pace: str = "model", precondition: str = "none",
                 seed: int = 0, log: bool = True, store: str | Path | None = None,
                 read_only: bool = False, max_connections: int = 32, io_timeout_s: float = 30.0,
                 power_cut_after: int | None = None, faults: str | None = None, transport_us: float = 0.0):
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
        self.user_bytes = d["user_bytes"]
        description = (f"ssdlab {self.name}: {d['controller']}, {d['dies']} dies, "
                       f"{d['user_gb']:.1f} GB, pace {pace}")
        try:
            self._server = _ssdlab.NbdServer(
                text, seed, precondition, pace, self.name, description,
                socket=str(socket) if socket is not None else None, port=port,
                bind=bind if port is not None else None, log=log,
                store=str(store) if store is not None else None, read_only=read_only,
                max_connections=max_connections, io_timeout_s=io_timeout_s, power_cut_after=power_cut_after,
                transport_us=transport_us)
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


def format_stats(s: dict) -> str:
    ops = s["reads"] + s["writes"] + s["write_zeroes"] + s["trims"] + s["flushes"]
    lines = [
        f"{ops:,} commands in {s['wall_s']:.1f} s wall ({s['simulated_s']:.1f} s simulated) from "
        f"{s['connections']} connection(s): {s['iops']:,.0f} IOPS",
        f"  reads {s['reads']:,} ({s['bytes_read'] / 1e6:,.1f} MB), writes {s['writes']:,} "
        f"({s['bytes_written'] / 1e6:,.1f} MB), write-zeroes {s['write_zeroes']:,}, trims {s['trims']:,}, "
        f"flushes {s['flushes']:,}, refused {s['errors']:,}",
        f"  write amplification {s['write_amplification']:.2f} (GC copied {s['gc_units_copied']:,} units, "
        f"{s['blocks_erased']:,} blocks erased); "
        f"data held {s['stored_bytes'] / 1e6:,.1f} MB",
    ]
    if s.get("power_cuts"):
        lines.append(f"  power cuts {s['power_cuts']}: {s['power_cut_lost_units']:,} host copies lost "
                     f"({s['power_cut_fell_back_units']:,} fell back to an older copy), "
                     f"{s['power_cut_corrupted_units']:,} units corrupted")
    if s.get("uncorrectable_reads"):
        lines.append(f"  reads answered EIO (uncorrectable units): {s['uncorrectable_reads']:,}")
    faults = format_faults(s.get("faults", {}))
    if faults:
        lines.append(faults)
    if s.get("store_error"):
        lines.append(f"  {s['store_error']}")
    if s["pace"] == "model":
        lines.append(f"  replies late behind the model: p50 {s['late_p50_us']:,.0f} us, "
                     f"p99 {s['late_p99_us']:,.0f} us, max {s['late_max_us']:,.0f} us")
    return "\n".join(lines)


def format_mount(m: dict) -> str:
    """One line on how `--store` was opened and what the modelled firmware read to get there."""
    r = m["report"]
    if m["created"]:
        return f"store {m['dir']}: new"
    how = "a clean stop" if m["clean"] else "an unclean stop (killed or crashed)"
    twins = (f"; {m['resolved_twins']:,} unit(s) caught mid-update, the newer copy kept"
             if m["resolved_twins"] else "")
    if not m["clean"]:
        twins += (f"; {m['lost_at_kill']:,} host copies not yet programmed were lost as the drive's "
                  f"power-loss protection allows ({m['fell_back_at_kill']:,} fell back to an older copy)")
    return (f"store {m['dir']}: rebuilt after {how}: {r['mapped_units']:,} units mapped in "
            f"{r['written_blocks']:,} blocks ({r['open_blocks']:,} open){twins}; modelled mount time "
            f"{r['mount_ns'] / 1e6:,.1f} ms (reads {r['map_pages']:,} map pages, {r['journal_pages']:,} "
            f"journal pages, {r['oob_pages']:,} out-of-band areas)")


def run_cli(args) -> int:
    server = Server(args.drive, socket=args.socket, port=args.port, bind=args.bind, pace=args.pace,
                    precondition=args.precondition, seed=args.seed or 0, log=not args.quiet,
                    store=args.store, read_only=args.read_only, max_connections=args.max_connections,
                    io_timeout_s=args.io_timeout, power_cut_after=args.power_cut_after, faults=args.faults,
                    transport_us=args.transport_us)
    if server.mount is not None:
        print("ssdlab serve: " + format_mount(server.mount), flush=True)
    print(f"ssdlab serve: {server.name} ({server.user_bytes:,} bytes) at {server.uri} (pace {args.pace}"
          + (", read-only" if args.read_only else "") + "); "
          "SIGINT or SIGTERM stops, SIGUSR1 prints statistics"
          + (f"; listening on every interface ({args.bind}): other hosts use this machine's address"
             if server.all_interfaces else ""), flush=True)
    stop = threading.Event()
    report = threading.Event()

    def on_stop(signum, frame):
        stop.set()

    def on_report(signum, frame):
        report.set()

    signal.signal(signal.SIGINT, on_stop)
    signal.signal(signal.SIGTERM, on_stop)
    signal.signal(signal.SIGUSR1, on_report)
    failed = False
    while not stop.is_set():
        stop.wait(0.2)
        if server.failed():
            failed = True
            break
        if report.is_set():
            report.clear()
            print(format_stats(server.stats()), flush=True)
    stats = server.shutdown()
    print("ssdlab serve: stopped\n" + format_stats(stats), flush=True)
    if args.stats_json:
        Path(args.stats_json).write_text(json.dumps(stats, indent=2) + "\n")
    if failed:
        print("ssdlab serve: error: the simulation thread failed (an internal error, logged above); "
              "what was acknowledged before is kept", file=sys.stderr, flush=True)
        return 1
    return 0


def add_parser(sub) -> None:
    s = sub.add_parser("serve", help="serve a drive over NBD so real tools (qemu-io, nbdcopy, fio) use it as a disk",
                       description="Serve a modelled drive over the NBD protocol. Data written is kept where the FTL "
                                   "puts it and read back through its map; replies are paced to the model's completion times.")
    s.add_argument("--drive", required=True, help="preset name or drive .toml")
    s.add_argument("--socket", help="Unix socket path to listen on")
    s.add_argument("--port", type=int, help="TCP port to listen on (0: any free port)")
    s.add_argument("--bind", default="127.0.0.1", help="TCP address to bind (default 127.0.0.1)")
    s.add_argument("--pace", default="model", choices=PACES,
                   help="model: reply when the model completes the command, in wall-clock time (default); none: as fast as possible")
    s.add_argument("--precondition", default="none", choices=PRECONDITIONS,
                   help="drive state at start: none (fresh) or fast-fill (every LBA mapped, reads as zeros)")
    s.add_argument("--store", metavar="DIR",
                   help="keep the data and the drive's state in DIR (created if new; an existing store is "
                        "rebuilt as the firmware does at power-on); without it data lives in memory only")
    s.add_argument("--read-only", action="store_true", help="export read-only: WRITE, TRIM and WRITE_ZEROES are refused")
    s.add_argument("--max-connections", type=int, default=32, metavar="N",
                   help="clients served at once (default 32); more are closed at once. Each may hold 32 MiB of "
                        "requests in flight, so data held for clients stays under N x 32 MiB")
    s.add_argument("--io-timeout", type=float, default=30.0, metavar="SECONDS",
                   help="a client that takes no reply data, or stalls mid-request, this long is disconnected (default 30)")
    s.add_argument("--power-cut-after", type=int, metavar="N",
                   help="cut the power once after N commands (needs --store): what the drive's "
                        "power_loss_protection does not keep is lost, connections drop, the drive is rebuilt and served again")
    s.add_argument("--transport-us", type=float, default=0.0, metavar="US",
                   help="pace model: reply this many microseconds before the model's completion, for what the "
                        "client and the NBD transport add to each round trip (a drive on the host's bus has no NBD "
                        "hop); benches/bench_nbd.py --paced-only measures it on this machine (default 0)")
    s.add_argument("--faults", metavar="SPEC", help=FAULTS_HELP + "; a read the drive cannot correct is answered EIO")
    s.add_argument("--seed", type=int)
    s.add_argument("--stats-json", help="write the final statistics here as JSON")
    s.add_argument("--quiet", action="store_true", help="no log lines for refused requests or failed connections")
    s.set_defaults(func=run_cli)


if __name__ == "__main__":
    from .cli import main
    sys.exit(main(["serve", *sys.argv[1:]]))
