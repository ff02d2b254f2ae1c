"""`ssdlab serve`: a modelled drive over NBD until SIGINT or SIGTERM; SIGUSR1 prints statistics."""

from __future__ import annotations

import argparse
import json
import select
import signal
import socket
import sys
from pathlib import Path

from ..drive import FAULTS_HELP, LINK_POLICIES, format_faults
from ..serve import PACES, PRECONDITIONS, Server, transport_floor_us
from .common import FAULTS_SPEC, SEED, STORE_DIR, power_line


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
    if s.get("gc_erases_held") or s.get("gc_erase_holds_broken"):
        lines.append(f"  erases held for a cut {s['gc_erases_held']:,} (victims kept until the writes superseding "
                     f"their copies were programmed), ended early {s['gc_erase_holds_broken']:,}")
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
    if power_line(s):
        lines.append(power_line(s))
    if s["pace"] == "model":
        lines.append(f"  replies late behind the model: p50 {s['late_p50_us']:,.0f} us, "
                     f"p99 {s['late_p99_us']:,.0f} us, max {s['late_max_us']:,.0f} us")
    return "\n".join(lines)


def _write_stats(path: str, stats: dict) -> None:
    """`--stats-json`: whole or not at all (written beside, then renamed into place), so a
    reader never sees half a report."""
    part = Path(f"{path}.part")
    part.write_text(json.dumps(stats, indent=2) + "\n")
    part.replace(path)


def format_mount(m: dict) -> str:
    """One line on how `--store` was opened and what the modelled firmware read to get there."""
    r = m["report"]
    if m["created"]:
        return f"store {m['dir']}: new"
    how = "a clean stop" if m["clean"] else "an unclean stop (killed or crashed)"
    if m.get("erase_finished"):
        how += ", after finishing a crypto erase that had been interrupted (no data from before it)"
    twins = (f"; {m['resolved_twins']:,} unit(s) caught mid-update, the newer copy kept"
             if m["resolved_twins"] else "")
    if m.get("damaged_records"):
        twins += (f"; {m['damaged_records']:,} damaged record(s) of superseded copies (checksums) ignored: "
                  "nothing reads them")
    if not m["clean"]:
        twins += (f"; {m['lost_at_kill']:,} host copies not yet programmed were lost as the drive's "
                  f"power-loss protection allows ({m['fell_back_at_kill']:,} fell back to an older copy)")
    return (f"store {m['dir']}: rebuilt after {how}: {r['mapped_units']:,} units mapped in "
            f"{r['written_blocks']:,} blocks ({r['open_blocks']:,} open){twins}; modelled mount time "
            f"{r['mount_ns'] / 1e6:,.1f} ms (reads {r['map_pages']:,} map pages, {r['journal_pages']:,} "
            f"journal pages, {r['oob_pages']:,} out-of-band areas)")


def _transport_us(text: str) -> float | str:
    """`--transport-us`: microseconds, or `auto` (measured at start, `serve.transport_floor_us`)."""
    if text == "auto":
        return text
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}': accepted: microseconds from 0 to 10000, or auto") from None


def run_cli(args) -> int:
    # What the signals asked, as plain flags: a handler runs on the main thread between two of
    # its bytecodes, so one that takes a lock deadlocks when the signal lands while that
    # thread holds it (CPython gh-144706). threading.Event.set did: once in about 1,300
    # SIGUSR1s of the SIGKILL loops (the 100-cycle soak, 2026-12-07), the statistics never
    # came and the server answered nothing more. The loop wakes at once through the wakeup
    # pipe, which CPython's own C handler writes.
    asked = {"stop": False, "report": False}

    def on_stop(signum, frame):
        asked["stop"] = True

    def on_report(signum, frame):
        asked["report"] = True

    wake_r, wake_w = socket.socketpair()
    wake_r.setblocking(False)
    wake_w.setblocking(False)
    signal.set_wakeup_fd(wake_w.fileno(), warn_on_full_buffer=False)

    # Before the server starts: a SIGUSR1 or SIGTERM sent once a client has seen it up must find
    # its handler (SIGUSR1's default ends the process: the likeliest reading of a CI run where a
    # server printed its banner, took commands, and gave no statistics for 30 s after a SIGUSR1;
    # the handlers were set after the banner). Ctrl-C still interrupts a long start (a fill).
    signal.signal(signal.SIGTERM, on_stop)
    signal.signal(signal.SIGUSR1, on_report)
    transport_us = args.transport_us
    if transport_us == "auto":
        transport_us = round(transport_floor_us(), 1)
        print(f"ssdlab serve: transport floor {transport_us:,.1f} us (fio's 4 KiB reads at QD1 against "
              "nbdkit memory): replies leave that much before the model's completion", flush=True)
    server = Server(args.drive, socket=args.socket, port=args.port, bind=args.bind, pace=args.pace,
                    precondition=args.precondition, seed=args.seed or 0, log=not args.quiet,
                    store=args.store, read_only=args.read_only, max_connections=args.max_connections,
                    io_timeout_s=args.io_timeout, power_cut_after=args.power_cut_after, faults=args.faults,
                    transport_us=transport_us, link_power=args.link_power, time_scale=args.time_scale)
    signal.signal(signal.SIGINT, on_stop)
    if server.mount is not None:
        print("ssdlab serve: " + format_mount(server.mount), flush=True)
    print(f"ssdlab serve: {server.name} ({server.user_bytes:,} bytes) at {server.uri} (pace {args.pace}"
          + (f", {args.time_scale}x slower than real time" if args.time_scale > 1 else "")
          + (", read-only" if args.read_only else "") + "); "
          "SIGINT or SIGTERM stops, SIGUSR1 prints statistics"
          + (f"; listening on every interface ({args.bind}): other hosts use this machine's address"
             if server.all_interfaces else ""), flush=True)
    failed = False
    while not asked["stop"]:
        select.select([wake_r], [], [], 0.2)
        try:
            while wake_r.recv(4096):
                pass
        except BlockingIOError:
            pass
        if server.failed():
            failed = True
            break
        if asked["report"]:
            asked["report"] = False
            stats = server.stats()
            print(format_stats(stats), flush=True)
            if args.stats_json:
                _write_stats(args.stats_json, stats)
    stats = server.shutdown()
    print("ssdlab serve: stopped\n" + format_stats(stats), flush=True)
    if args.stats_json:
        _write_stats(args.stats_json, stats)
    if failed or stats.get("store_error"):
        why = stats.get("store_error") or ""
        if not why or "internal error" in why:
            why = ("the simulation thread failed (an internal error, logged above); what the store holds is "
                   "what the drive keeps at a power cut")
        print(f"ssdlab serve: error: {why}", file=sys.stderr, flush=True)
        return 1
    return 0


def _crypto_erase(args) -> int:
    from .. import _ssdlab
    from ..errors import SsdlabError
    try:
        print(_ssdlab.crypto_erase_store(args.store))
    except ValueError as e:
        raise SsdlabError(str(e)) from None
    return 0


def add_parser(sub) -> None:
    c = sub.add_parser("crypto-erase", help="crypto erase a stopped --store of a self-encrypting drive (a new media key; nothing earlier readable)",
                       description="Crypto erase the store of a self-encrypting drive (controller.self_encrypting): the data at rest "
                                   "is AES-256-XTS under the store's media key; this drops every record and data byte and writes a new "
                                   "key over the old one. The server must be stopped. The drive starts empty at its next serve.")
    c.add_argument("--store", type=STORE_DIR, metavar="DIR", required=True, help="the store directory `ssdlab serve --store` made")
    c.set_defaults(func=_crypto_erase)

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
    s.add_argument("--store", type=STORE_DIR, metavar="DIR",
                   help="keep the data and the drive's state in DIR (created if new; an existing store is "
                        "rebuilt as the firmware does at power-on); without it data lives in memory only")
    s.add_argument("--read-only", action="store_true", help="export read-only: WRITE, TRIM and WRITE_ZEROES are refused; a --store is only read (it may be on read-only media): what the firmware writes stays in memory")
    s.add_argument("--max-connections", type=int, default=32, metavar="N",
                   help="clients served at once (default 32); more are closed at once. Each may hold 32 MiB of "
                        "requests in flight, so data held for clients stays under N x 32 MiB")
    s.add_argument("--io-timeout", type=float, default=30.0, metavar="SECONDS",
                   help="a client that takes no reply data, or stalls mid-request, this long is disconnected (default 30)")
    s.add_argument("--power-cut-after", type=int, metavar="N",
                   help="cut the power once after N commands (needs --store): what the drive's "
                        "power_loss_protection does not keep is lost, connections drop, the drive is rebuilt and served again")
    s.add_argument("--link-power", default="none", choices=LINK_POLICIES,
                   help="the host's link power management (drives with a power model): an idle link sleeps and the first command after pays its wake-up")
    s.add_argument("--transport-us", type=_transport_us, default=0.0, metavar="US|auto",
                   help="pace model: reply this many microseconds before the model's completion, for what the "
                        "client and the NBD transport add to each round trip (a drive on the host's bus has no NBD "
                        "hop); auto: measure it first (fio's 4 KiB reads at QD1 against nbdkit memory, about 4 s; "
                        "needs fio and nbdkit), as a closed-loop measurement through NBD should (default 0)")
    s.add_argument("--time-scale", type=int, default=1, metavar="N",
                   help="pace model: the drive runs N times slower than real time (each of its microseconds takes N "
                        "on the wall), so what the client and the NBD hop add to each round trip is N times smaller "
                        "against the drive's own time; measure it with `ssdlab procedure --target URI "
                        "--target-time-scale N`, which runs fio N times as long and takes its rates N times (default 1)")
    s.add_argument("--faults", metavar="SPEC", type=FAULTS_SPEC, help=FAULTS_HELP + "; a read the drive cannot correct is answered EIO")
    s.add_argument("--seed", type=SEED)
    s.add_argument("--stats-json", help="write the statistics here as JSON, at each SIGUSR1 and at the end (whole: renamed into place)")
    s.add_argument("--quiet", action="store_true", help="no log lines for refused requests or failed connections")
    s.set_defaults(func=run_cli)
