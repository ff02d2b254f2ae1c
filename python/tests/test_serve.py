"""`ssdlab serve` driven by the real NBD clients users have: nbdinfo, qemu-io, nbdcopy and fio's
nbd engine (Debian packages libnbd-bin, qemu-utils, fio; .ci/run installs them)."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import ssdlab
from ssdlab.serve import Server

TOOLS = ("nbdinfo", "nbdcopy", "qemu-io", "fio")


def _need(*tools):
    """Skip when a client is missing, except under CI (.ci/run sets SSDLAB_REQUIRE_TOOLS)."""
    missing = [t for t in tools if shutil.which(t) is None]
    if missing and not os.environ.get("SSDLAB_REQUIRE_TOOLS"):
        pytest.skip(f"not installed: {', '.join(missing)} (.ci/run installs them)")
    assert not missing, f"CI must have {missing}"


TINY_TOML = """\
name = "test-tiny"
description = "4 dies of 32 blocks: 128 MiB raw, for copying whole exports"

[nand]
part = "test"
channels = 2
dies = 4
planes_per_die = 2
blocks_per_plane = 32
pages_per_block = 64
page_size_bytes = 8192
read_page_us = 50.0
program_page_us = 1300.0
erase_block_us = 3000.0
bus_mb_per_s = 200.0

[controller]
name = "test"
command_ns = 12500

[ftl]
user_capacity_bytes = 100000000
write_buffer_bytes = 1048576

[host]
interface = "sata"
sata_line_gbit_per_s = 6.0
queue_depth_max = 32
"""


_STARTED: list = []


@pytest.fixture(autouse=True)
def _no_server_outlives_its_test():
    """A test that fails before stopping its server must not leave it running."""
    yield
    while _STARTED:
        proc = _STARTED.pop().proc
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)


class Served:
    """`ssdlab serve` as a subprocess on a Unix socket."""

    def __init__(self, tmp_path: Path, drive: str, *extra: str, tag: str = ""):
        self.sock = tmp_path / f"nbd{tag}.sock"
        self.stats_path = tmp_path / f"stats{tag}.json"
        # Opened for appending, and read through a handle of its own: the child shares this
        # handle's file offset, so a reader seeking it back would make the server's next line
        # overwrite the log's start (a power-cut message lost that way once in CI).
        self.log_path = tmp_path / f"serve{tag}.log"
        self.log = self.log_path.open("a")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "ssdlab.cli", "serve", "--drive", drive, "--socket", str(self.sock),
             "--stats-json", str(self.stats_path), *extra],
            stdout=self.log, stderr=subprocess.STDOUT, text=True)
        _STARTED.append(self)
        deadline = time.monotonic() + 600  # a hang's guard only
        # The socket exists once the server listens; the banner (after the store's line) follows.
        while not self.sock.exists() or "SIGINT or SIGTERM stops" not in self.output():
            assert self.proc.poll() is None, self.output()
            assert time.monotonic() < deadline, "server did not start"
            time.sleep(0.05)
        self.uri = f"nbd+unix:///?socket={self.sock}"

    def output(self) -> str:
        return self.log_path.read_text(errors="replace")  # a line may be half written

    def kill(self) -> None:
        """SIGKILL: no chance to answer, sync or clean up (the socket file stays)."""
        self.proc.kill()
        self.proc.wait(timeout=60)
        self.sock.unlink()

    def stop(self) -> dict:
        self.proc.send_signal(signal.SIGTERM)
        assert self.proc.wait(timeout=60) == 0, self.output()
        return json.loads(self.stats_path.read_text())


@pytest.fixture
def tiny_toml(tmp_path):
    p = tmp_path / "tiny.toml"
    p.write_text(TINY_TOML)
    return p


def run(cmd, timeout: float = 300, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kw)


def test_nbdinfo_lists_the_export_with_size_and_flags(tmp_path, tiny_toml):
    _need("nbdinfo")
    s = Served(tmp_path, str(tiny_toml))
    info = json.loads(run(["nbdinfo", "--json", s.uri]).stdout)
    export = info["exports"][0]
    assert export["export-size"] == ssdlab.Drive.from_toml(tiny_toml).user_bytes
    for flag in ("can_flush", "can_fua", "can_trim", "can_zero", "can_multi_conn"):
        assert export[flag] is True, flag
    assert export["is_read_only"] is False
    assert export["block_size_preferred"] == 4096
    listed = run(["nbdinfo", "--list", "--json", s.uri])
    assert [e["export-name"] for e in json.loads(listed.stdout)["exports"]] == ["test-tiny"]
    s.stop()


def test_qemu_io_writes_patterns_reads_them_back_discards_zeroes_and_flushes(tmp_path, tiny_toml):
    _need("qemu-io")
    s = Served(tmp_path, str(tiny_toml))
    cmds = [
        "write -P 0xab 0 1M", "read -P 0xab 0 1M",
        "write -P 0x11 4097 1000",            # partial units: read, merged, rewritten
        "read -P 0x11 4097 1000", "read -P 0xab 0 4097", "read -P 0xab 5097 8192",
        "write -z 64k 8k", "read -P 0 64k 8k", "read -P 0xab 72k 8k",
        "discard 512k 256k", "read -P 0 512k 256k", "read -P 0xab 768k 256k",
        "flush",
        "write -P 0x5a 90M 4k", "read -P 0x5a 90M 4k",
    ]
    args = ["qemu-io", "-f", "raw", s.uri]
    for c in cmds:
        args += ["-c", c]
    p = run(args)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "fail" not in (p.stdout + p.stderr).lower(), p.stdout + p.stderr
    assert p.stdout.count("read ") == sum(c.startswith("read") for c in cmds)
    # The pattern check can fail: the wrong pattern is reported.
    bad = run(["qemu-io", "-f", "raw", s.uri, "-c", "read -P 0xcd 0 4k"])
    assert "Pattern verification failed" in bad.stdout + bad.stderr
    stats = s.stop()
    assert stats["flushes"] >= 1 and stats["trims"] == 1 and stats["write_zeroes"] == 1


def test_nbdcopy_copies_in_and_out_byte_identical(tmp_path, tiny_toml):
    _need("nbdcopy")
    s = Served(tmp_path, str(tiny_toml))
    data = os.urandom(10_000_000 + 123)
    src = tmp_path / "in.bin"
    src.write_bytes(data)
    p = run(["nbdcopy", str(src), s.uri])
    assert p.returncode == 0, p.stderr
    out = tmp_path / "out.bin"
    p = run(["nbdcopy", s.uri, str(out)])
    assert p.returncode == 0, p.stderr
    back = out.read_bytes()
    size = ssdlab.Drive.from_toml(tiny_toml).user_bytes
    assert len(back) == size
    assert back[: len(data)] == data
    assert back[len(data):].count(0) == size - len(data)
    stats = s.stop()
    assert stats["bytes_written"] >= len(data)


def _fio(uri: str, out: Path, *opts: str) -> dict:
    # In the test's directory: fio leaves verify state files where it runs.
    p = run(["fio", "--name=t", "--ioengine=nbd", f"--uri={uri}", "--output-format=json",
             f"--output={out}", *opts], cwd=out.parent)
    assert out.exists(), p.stdout + p.stderr
    text = out.read_text()
    return json.loads(text[text.index("{"):])  # fio may print notes before the JSON


def test_fio_verify_through_garbage_collection_finds_no_errors(tmp_path, small_toml):
    _need("fio")
    # Every LBA mapped first, so collection must move valid data while fio overwrites 256 MiB
    # (256x the write buffer) in random order, reads every block back, and does it again.
    s = Served(tmp_path, str(small_toml), "--pace", "none", "--precondition", "fast-fill")
    r = _fio(s.uri, tmp_path / "fio.json", "--rw=randwrite", "--bs=4k", "--size=256m", "--loops=2",
             "--iodepth=16", "--randrepeat=0", "--verify=crc32c", "--do_verify=1", "--verify_fatal=1")
    job = r["jobs"][0]
    assert job["error"] == 0
    stats = s.stop()
    assert stats["bytes_written"] == 512 * 2**20, stats
    assert stats["bytes_read"] >= 512 * 2**20, stats  # each loop's verify pass read it all back
    assert stats["gc_units_copied"] > 10_000 and stats["blocks_erased"] > 100, stats


def test_fio_verify_detects_lost_data(tmp_path, small_toml):
    """The verify check above can fail: data discarded behind fio's back is reported."""
    _need("fio", "qemu-io")
    s = Served(tmp_path, str(small_toml), "--pace", "none")
    r = _fio(s.uri, tmp_path / "w.json", "--rw=randwrite", "--bs=4k", "--size=8m", "--iodepth=4",
             "--verify=crc32c", "--do_verify=0")
    assert r["jobs"][0]["error"] == 0
    assert run(["qemu-io", "-f", "raw", s.uri, "-c", "discard 0 1M"]).returncode == 0
    out = tmp_path / "v.json"
    p = run(["fio", "--name=t", "--ioengine=nbd", f"--uri={s.uri}", "--rw=randwrite", "--bs=4k", "--size=8m",
             "--iodepth=4", "--verify=crc32c", "--verify_only", "--output-format=json", f"--output={out}"],
            cwd=tmp_path)
    assert p.returncode != 0 or json.loads(out.read_text()[out.read_text().index("{"):])["jobs"][0]["error"] != 0
    s.stop()


def test_pace_model_is_never_faster_than_the_simulation(tmp_path):
    """Paced replies wait for the model: fio's 4 KiB QD32 random-read IOPS against the paced
    server never exceed what `ssdlab run` predicts for the same job (+2% for fio's own
    accounting), and the server reports its lateness. How close it gets from below depends
    on the host's spare CPU, so that figure is a benchmark (benches/bench_nbd.py), not a
    pass/fail test."""
    _need("fio")
    drive = "crucial-m500-120"
    s = Served(tmp_path, drive, "--precondition", "fast-fill")
    r = _fio(s.uri, tmp_path / "r.json", "--rw=randread", "--bs=4k", "--size=8g", "--iodepth=32",
             "--runtime=4", "--time_based", "--ramp_time=1")
    measured = r["jobs"][0]["read"]["iops"]
    stats = s.stop()
    predicted = paced_prediction(drive, 4)
    print(f"\nfio over NBD (pace model): {measured:,.0f} IOPS; ssdlab run: {predicted:,.0f} IOPS; "
          f"late p50 {stats['late_p50_us']:.0f} us p99 {stats['late_p99_us']:.0f} us")
    assert measured <= 1.02 * predicted, (measured, predicted)
    assert stats["late_p50_us"] > 0 and stats["late_max_us"] >= stats["late_p99_us"] >= stats["late_p50_us"]


def paced_prediction(drive: str, seconds: float) -> float:
    d = ssdlab.Drive.preset(drive)
    d.precondition("fast-fill")
    job = ssdlab.Job(rw="randread", bs="4k", iodepth=32, size="8g", runtime_s=seconds, time_based=True)
    return d.run(job).summary["read"]["iops"]


def test_malformed_clients_get_a_log_line_and_others_are_still_served(tmp_path, tiny_toml):
    _need("nbdinfo")
    s = Served(tmp_path, str(tiny_toml))
    for junk in (b"", b"\x00\x00\x00\x03" + b"garbage" * 10, b"\x00\x00\x00\x03IHAVEOPT" + b"\xff" * 30):
        c = socket.socket(socket.AF_UNIX)
        c.connect(str(s.sock))
        c.recv(18)
        c.sendall(junk)
        c.close()
    assert run(["nbdinfo", "--size", s.uri]).stdout.strip() == str(ssdlab.Drive.from_toml(tiny_toml).user_bytes)
    s.stop()
    out = s.output()
    assert "ssdlab serve: client" in out and "connection closed" in out, out
    assert "Traceback" not in out and "panicked" not in out


def test_a_reconnect_storm_of_silent_sockets_does_not_lock_real_clients_out(tmp_path, tiny_toml):
    """Issue 73 item 17: 32 half-open sockets that reconnect as soon as they are closed locked
    out 59% of real clients. The storm (this process) is penalised as one peer; nbdinfo
    (processes of their own) are served."""
    import threading
    _need("nbdinfo")
    s = Served(tmp_path, str(tiny_toml))
    stop = threading.Event()

    def half_open():
        while not stop.is_set():
            try:
                c = socket.socket(socket.AF_UNIX)
                c.settimeout(5)
                c.connect(str(s.sock))
                c.recv(18)  # the greeting, then silence until the server closes us
                c.recv(1)
                c.close()
            except OSError:
                time.sleep(0.001)

    storm = [threading.Thread(target=half_open, daemon=True) for _ in range(32)]
    for t in storm:
        t.start()
    # The storm is on once the server has had to deal with it (it logs the first such close or
    # refusal at once); waited for, not for a time.
    deadline = time.monotonic() + 600  # a hang's guard only
    while "closed in its handshake to make room" not in s.output() and "keeps opening connections" not in s.output():
        assert time.monotonic() < deadline, s.output()
        time.sleep(0.02)
    served = sum(run(["nbdinfo", "--size", s.uri]).returncode == 0 for _ in range(20))
    stop.set()
    for t in storm:
        t.join(timeout=10)
    s.stop()
    assert served == 20, f"{served} of 20 real clients served during the storm\n{s.output()}"
    # The storm was real: its sockets were closed to make room, or refused as one peer (the
    # server logs one such line per 10 s).
    out = s.output()
    assert "closed in its handshake to make room" in out or "keeps opening connections" in out, out


def test_the_signal_handlers_are_set_before_the_server_is_up(monkeypatch):
    """`serve` sets its SIGUSR1 and SIGTERM handlers before it starts the server, so a signal
    sent by a client that saw the server up finds them (SIGUSR1's default would end the process)."""
    import argparse

    import ssdlab.cli.serve as cli_serve
    seen = {}

    class Starting:
        def __init__(self, *a, **kw):
            seen.update({s: signal.getsignal(s) for s in (signal.SIGUSR1, signal.SIGTERM)})
            raise RuntimeError("stop here")

    monkeypatch.setattr(cli_serve, "Server", Starting)
    saved = {s: signal.getsignal(s) for s in (signal.SIGUSR1, signal.SIGTERM, signal.SIGINT)}
    try:
        with pytest.raises(RuntimeError, match="stop here"):
            cli_serve.run_cli(argparse.Namespace(**{k: None for k in (
                "drive", "socket", "port", "bind", "pace", "precondition", "seed", "quiet", "store", "read_only",
                "max_connections", "io_timeout", "power_cut_after", "faults", "transport_us", "link_power",
                "time_scale")}))
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)
    assert all(callable(h) for h in seen.values()), seen


def test_sigterm_answers_and_reports(tmp_path, tiny_toml):
    s = Served(tmp_path, str(tiny_toml))
    s.proc.send_signal(signal.SIGUSR1)
    # The report is out once --stats-json is (written whole at each SIGUSR1).
    deadline = time.monotonic() + 600  # a hang's guard only
    while not s.stats_path.exists():
        assert s.proc.poll() is None and time.monotonic() < deadline, s.output()
        time.sleep(0.01)
    assert "IOPS" in s.output()
    stats = s.stop()
    out = s.output()
    assert "stopped" in out and "IOPS" in out and "late behind the model" in out, out
    assert stats["pace"] == "model"
    assert not s.sock.exists()


def test_a_storm_of_signals_leaves_the_server_answering(tmp_path, tiny_toml):
    """Issue 101: `serve`'s signal handlers take no lock (a threading.Event's did, and a
    SIGUSR1 landing while the main loop held it hung the server for good, once in about
    1,300). Two thousand SIGUSR1s as fast as they go, then one more is answered with its
    statistics and SIGTERM stops it."""
    s = Served(tmp_path, str(tiny_toml))
    for _ in range(2000):
        s.proc.send_signal(signal.SIGUSR1)
    s.stats_path.unlink(missing_ok=True)
    s.proc.send_signal(signal.SIGUSR1)
    deadline = time.monotonic() + 600  # a hang's guard only
    while not s.stats_path.exists():
        assert s.proc.poll() is None and time.monotonic() < deadline, s.output()
        time.sleep(0.01)
    assert s.stop()["pace"] == "model"


def test_api_server_context_manager(tmp_path, tiny_toml):
    with Server(str(tiny_toml), socket=tmp_path / "a.sock", pace="none") as srv:
        assert srv.uri.startswith("nbd+unix:///test-tiny?socket=")
        assert srv.stats()["connections"] == 0


@pytest.mark.parametrize("args, message", [
    ([], "exactly one of --socket PATH or --port N"),
    (["--port", "70000"], "--port 70000"),
    (["--socket", "SOCK", "--port", "1"], "exactly one of"),
    (["--socket", "SOCK", "--max-connections", "0"], "--max-connections 0: accepted: 1..100000"),
    (["--socket", "SOCK", "--io-timeout", "-1"], "--io-timeout -1.0: accepted"),
    (["--socket", "SOCK", "--power-cut-after", "10"], "--power-cut-after needs --store DIR"),
    (["--socket", "SOCK", "--transport-us", "-5"], "--transport-us -5.0: accepted: 0 to 10000"),
    (["--socket", "SOCK", "--faults", "x=1"], "--faults 'x=1': 'x=1': unknown key 'x'"),
    (["--socket", "SOCK", "--time-scale", "0"], "--time-scale 0: accepted: a whole number from 1 to 1000"),
    (["--socket", "SOCK", "--time-scale", "10", "--pace", "none"], "--time-scale 10 needs --pace model"),
    (["--socket", "SOCK", "--time-scale", "2.5"], "--time-scale: invalid int value"),
])
def test_serve_argument_errors(tmp_path, tiny_toml, args, message):
    args = [a.replace("SOCK", str(tmp_path / "x.sock")) for a in args]
    p = run([sys.executable, "-m", "ssdlab.cli", "serve", "--drive", str(tiny_toml), *args])
    assert p.returncode == 2 and message in p.stderr, p.stderr
    assert "Traceback" not in p.stderr


@pytest.mark.parametrize("target, scale, message", [
    ("FILE", "10", "applies to an NBD export of `ssdlab serve --time-scale 10`"),
    ("nbd+unix:///?socket=/nonexistent.sock", "0", "--target-time-scale 0: accepted: a whole number from 1 to 1000"),
])
def test_a_target_time_scale_is_for_a_slowed_down_served_drive(tmp_path, target, scale, message):
    _need("fio")
    target = target.replace("FILE", str(tmp_path / "t.img"))
    p = _procedure("four-corners", "--target", target, "--target-time-scale", scale)
    assert p.returncode == 2 and message in p.stderr, p.stderr
    assert "Traceback" not in p.stderr


def test_serve_refuses_a_socket_path_that_is_a_file(tmp_path, tiny_toml):
    f = tmp_path / "not-a-socket"
    f.write_text("precious")
    p = run([sys.executable, "-m", "ssdlab.cli", "serve", "--drive", str(tiny_toml), "--socket", str(f)])
    assert p.returncode == 2 and "exists and is not a socket" in p.stderr, p.stderr
    assert f.read_text() == "precious"


def test_tcp_binds_loopback_by_default(tmp_path, tiny_toml):
    with Server(str(tiny_toml), port=0) as srv:
        assert srv.uri.startswith("nbd://127.0.0.1:")


def test_a_busy_port_is_a_clear_error_naming_drive_and_address(tiny_toml):
    with Server(str(tiny_toml), port=0) as srv:
        port = int(srv.uri.split(":")[2].split("/")[0])
        p = run([sys.executable, "-m", "ssdlab.cli", "serve", "--drive", str(tiny_toml), "--port", str(port)])
        assert p.returncode == 2, p.stderr
        assert f"serve test-tiny: cannot listen at 127.0.0.1:{port}" in p.stderr, p.stderr
        assert "--port 0" in p.stderr and "Traceback" not in p.stderr


def test_every_interface_gives_a_uri_a_client_can_use(tiny_toml):
    with Server(str(tiny_toml), port=0, bind="0.0.0.0") as srv:
        assert srv.all_interfaces and srv.uri.startswith("nbd://127.0.0.1:"), srv.uri


# ----- --store: data and drive state that survive restarts --------------------------------------

def _with_protection(tmp_path, text: str, protection: str) -> Path:
    p = tmp_path / f"drive-{protection}.toml"
    p.write_text(text.replace("[controller]\n", f'[controller]\npower_loss_protection = "{protection}"\n', 1))
    return p


def test_store_keeps_every_byte_across_kill_9_and_a_clean_stop(tmp_path):
    """On a drive with full power-loss protection, nbdcopy and qemu-io write, the server is
    killed with SIGKILL, restarted on the same store: every byte written (and discarded, and
    zeroed) reads back; then once more after a clean stop. The drive is rebuilt as its
    firmware would at power-on, with the modelled time."""
    _need("nbdcopy", "qemu-io")
    tiny_toml = _with_protection(tmp_path, TINY_TOML, "full")
    store = tmp_path / "store"
    data = tmp_path / "in.bin"
    data.write_bytes(os.urandom(24 * 2**20))
    s = Served(tmp_path, str(tiny_toml), "--pace", "none", "--store", str(store), tag="1")
    assert "store " + str(store) + ": new" in s.output()
    assert run(["nbdcopy", str(data), s.uri]).returncode == 0
    q = run(["qemu-io", "-f", "raw", s.uri, "-c", "write -P 0x5a 30000000 1000000",
             "-c", "discard 4194304 1048576", "-c", "write -z 8388608 65536"])
    assert q.returncode == 0, q.stderr
    s.kill()
    expect = bytearray(data.read_bytes())
    expect[4194304:4194304 + 1048576] = bytes(1048576)
    expect[8388608:8388608 + 65536] = bytes(65536)

    def check(served):
        out = tmp_path / "out.bin"
        out.unlink(missing_ok=True)
        assert run(["nbdcopy", served.uri, str(out)]).returncode == 0
        got = out.read_bytes()
        assert got[:len(expect)] == expect, "data differs after the restart"
        assert got[30000000:31000000] == b"\x5a" * 1000000
        assert got[31000000:] == bytes(len(got) - 31000000)

    s = Served(tmp_path, str(tiny_toml), "--pace", "none", "--store", str(store), tag="2")
    banner = s.output()
    assert "rebuilt after an unclean stop" in banner and "modelled mount time" in banner, banner
    check(s)
    stats = s.stop()
    assert stats["store_error"] == ""
    s = Served(tmp_path, str(tiny_toml), "--pace", "none", "--store", str(store), tag="3")
    assert "rebuilt after a clean stop" in s.output(), s.output()
    check(s)
    s.stop()


def test_fio_verify_passes_after_kill_9_through_garbage_collection(tmp_path, small_toml):
    """fio writes with verification headers while collection moves valid data (every LBA
    mapped first), the server is killed, and fio's verify pass over the restarted server
    finds every block it wrote (a drive with full power-loss protection)."""
    _need("fio")
    from conftest import SMALL_TOML
    small_toml = _with_protection(tmp_path, SMALL_TOML, "full")
    store = tmp_path / "store"
    s = Served(tmp_path, str(small_toml), "--pace", "none", "--precondition", "fast-fill",
               "--store", str(store), tag="1")
    opts = ["--rw=randwrite", "--bs=4k", "--size=256m", "--iodepth=16", "--verify=crc32c"]
    r = _fio(s.uri, tmp_path / "w.json", *opts, "--loops=2", "--do_verify=0")
    assert r["jobs"][0]["error"] == 0
    s.proc.send_signal(signal.SIGUSR1)  # statistics before the kill: collection did move data
    deadline = time.monotonic() + 600  # a hang's guard only
    while not s.stats_path.exists():  # written whole at each SIGUSR1
        assert time.monotonic() < deadline, s.output()
        time.sleep(0.05)
    copied = json.loads(s.stats_path.read_text())["gc_units_copied"]
    assert copied > 10_000, s.output()
    s.kill()
    s = Served(tmp_path, str(small_toml), "--pace", "none", "--store", str(store), tag="2")
    v = _fio(s.uri, tmp_path / "v.json", *opts, "--verify_only", "--verify_fatal=1")
    assert v["jobs"][0]["error"] == 0, v["jobs"][0]
    stats = s.stop()
    assert stats["bytes_read"] == 256 * 2**20, stats


@pytest.mark.parametrize("setup, args, message", [
    ("other-drive", [], "made for drive 'test-tiny'"),
    ("not-empty", [], "not empty and holds no store.json"),
    ("existing", ["--precondition", "fast-fill"], "a precondition applies to a new store only"),
])
def test_store_errors_name_the_directory_and_what_is_accepted(tmp_path, tiny_toml, small_toml, setup,
                                                              args, message):
    store = tmp_path / "store"
    drive = str(tiny_toml)
    if setup == "not-empty":
        store.mkdir()
        (store / "precious.txt").write_text("mine")
    else:
        Served(tmp_path, str(tiny_toml), "--store", str(store), tag="0").stop()
        if setup == "other-drive":
            drive = str(small_toml)
    p = run([sys.executable, "-m", "ssdlab.cli", "serve", "--drive", drive, "--socket",
             str(tmp_path / "x.sock"), "--store", str(store), *args])
    assert p.returncode == 2 and message in p.stderr and str(store) in p.stderr, p.stderr
    assert "Traceback" not in p.stderr
    if setup == "not-empty":
        assert (store / "precious.txt").read_text() == "mine"


def test_a_second_server_on_one_store_is_refused_naming_the_first(tmp_path, tiny_toml):
    """Issue 25, item 3: two servers on one --store lost the first one's writes; the store is
    locked while open and the second is refused with the holder's process id. After the first
    stops, the store opens again with every byte it acknowledged."""
    _need("qemu-io")
    store = tmp_path / "store"
    first = Served(tmp_path, str(tiny_toml), "--store", str(store), tag="1")
    assert run(["qemu-io", "-f", "raw", first.uri, "-c", "write -P 0x5a 0 1M", "-c", "flush"]).returncode == 0
    p = run([sys.executable, "-m", "ssdlab.cli", "serve", "--drive", str(tiny_toml), "--socket",
             str(tmp_path / "second.sock"), "--store", str(store)])
    assert p.returncode == 2 and f"in use by process {first.proc.pid}" in p.stderr and str(store) in p.stderr, p.stderr
    assert "Traceback" not in p.stderr
    first.stop()
    again = Served(tmp_path, str(tiny_toml), "--store", str(store), tag="2")
    assert run(["qemu-io", "-f", "raw", again.uri, "-c", "read -P 0x5a 0 1M"]).returncode == 0
    again.stop()


@pytest.mark.parametrize("name, damage", [("data", "truncate"), ("oob", "truncate"), ("data", "delete"),
                                          ("oob", "delete")])
def test_a_damaged_store_is_refused_at_start_naming_the_file(tmp_path, tiny_toml, name, damage):
    """Issue 25, item 5: `data` truncated or deleted started and then answered EIO; `oob`
    truncated started as a clean, empty drive reading zeros. The store's files are checked
    against store.json at start: refused, the file named, nothing recreated or changed."""
    _need("qemu-io")
    store = tmp_path / "store"
    s = Served(tmp_path, str(tiny_toml), "--store", str(store), tag="1")
    assert run(["qemu-io", "-f", "raw", s.uri, "-c", "write -P 0x5a 0 1M", "-c", "flush"]).returncode == 0
    s.stop()
    target = store / name
    if damage == "truncate":
        os.truncate(target, 0)
    else:
        target.unlink()
    p = run([sys.executable, "-m", "ssdlab.cli", "serve", "--drive", str(tiny_toml), "--socket",
             str(tmp_path / "x.sock"), "--store", str(store)])
    assert p.returncode == 2 and str(target) in p.stderr and "damaged" in p.stderr, p.stderr
    assert "Traceback" not in p.stderr
    assert target.exists() == (damage == "truncate")


def _first_nonzero(path: Path, step: int = 1) -> int:
    b = path.read_bytes()
    return next(i for i in range(0, len(b), step) if any(b[i:i + step]))


@pytest.mark.parametrize("encrypted", [False, True], ids=["plain", "self-encrypting"])
@pytest.mark.parametrize("name", ["data", "oob", "erase_counts", "store.json", "media_key", "lock"])
def test_one_damaged_byte_in_any_store_file_is_an_error_never_wrong_data(tmp_path, tiny_toml, name, encrypted):
    """Issue 73, item 12: one byte flipped in any file of a cleanly stopped store, plain or
    self-encrypting. The start either refuses, naming the file and saying it is damaged, or
    serves a drive where every 64 KiB reads back as written or as an I/O error (EIO, the
    uncorrectable path); never other bytes. A flipped data byte is found by the unit's CRC, a
    flipped record byte by the record's, a flipped key byte by the key check."""
    _need("qemu-io")
    if name == "media_key" and not encrypted:
        pytest.skip("a store in the clear has no media_key")
    toml = tiny_toml
    if encrypted:
        toml = tmp_path / "sed.toml"
        toml.write_text(TINY_TOML.replace("[controller]\n", "[controller]\nself_encrypting = true\n", 1))
    store = tmp_path / "store"
    s = Served(tmp_path, str(toml), "--pace", "none", "--store", str(store), tag="1")
    chunks = 16
    writes = [c for k in range(chunks) for c in ("-c", f"write -P {0x40 + k} {k * 65536} 64k")]
    assert run(["qemu-io", "-f", "raw", s.uri, *writes, "-c", "flush"]).returncode == 0
    s.stop()
    target = store / name
    at = {"data": lambda: _first_nonzero(target, 4096) + 100, "oob": lambda: _first_nonzero(target, 24) + 1,
          "store.json": lambda: target.read_bytes().index(b'"clean"') + 2}.get(name, lambda: 0)()
    b = bytearray(target.read_bytes())
    if b:
        b[at] ^= 0x20
    else:  # erase_counts before any erase: block 0's count written, its retired bit (31) set
        b = bytearray(b"\x00\x00\x00\x80")
    target.write_bytes(bytes(b))
    p = subprocess.Popen([sys.executable, "-m", "ssdlab.cli", "serve", "--drive", str(toml), "--socket",
                          str(tmp_path / "d.sock"), "--pace", "none", "--store", str(store)],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 600  # a hang's guard only
    while not (tmp_path / "d.sock").exists() and p.poll() is None:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    if p.poll() is not None:
        out = p.stdout.read()
        assert p.returncode == 2 and str(target) in out and "damaged" in out and "Traceback" not in out, out
        assert name in ("oob", "store.json", "media_key", "erase_counts"), f"{name}: refused: {out}"
        return
    try:
        uri = f"nbd+unix:///?socket={tmp_path / 'd.sock'}"
        errors = 0
        for k in range(chunks):
            q = run(["qemu-io", "-f", "raw", uri, "-c", f"read -P {0x40 + k} {k * 65536} 64k"])
            out = q.stdout + q.stderr
            assert "Pattern verification failed" not in out, (name, k, out)
            errors += "read failed" in out
        assert errors == (1 if name == "data" else 0), (name, errors)
    finally:
        p.send_signal(signal.SIGTERM)
        p.wait(timeout=60)


# ----- hostile clients ---------------------------------------------------------------------------

def _raw_client(sock: Path) -> socket.socket:
    """A bare NBD client: fixed newstyle handshake, OPT_GO, simple replies."""
    import struct
    c = socket.socket(socket.AF_UNIX)
    c.connect(str(sock))
    hello = b""
    while len(hello) < 18:
        hello += c.recv(18 - len(hello))
    c.sendall(struct.pack(">I", 3))  # FIXED_NEWSTYLE | NO_ZEROES
    go = struct.pack(">I", 0) + struct.pack(">H", 0)  # export "" and no info requests
    c.sendall(b"IHAVEOPT" + struct.pack(">II", 7, len(go)) + go)
    while True:  # option replies until ACK
        h = b""
        while len(h) < 20:
            h += c.recv(20 - len(h))
        _, _, rep, length = struct.unpack(">QIII", h)
        left = length
        while left:
            left -= len(c.recv(left))
        if rep == 1:
            return c


def _request(cmd: int, handle: int, offset: int, length: int) -> bytes:
    import struct
    return struct.pack(">IHHQQI", 0x25609513, 0, cmd, handle, offset, length)


def _rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def test_a_client_that_never_reads_stalls_nobody_and_sigterm_still_stops(tmp_path, tiny_toml):
    """A raw client pipelines 256 reads of 1 MiB and never reads a reply; qemu-io is served
    meanwhile, and SIGTERM stops the server (it does not wait on the stalled socket)."""
    _need("qemu-io")
    s = Served(tmp_path, str(tiny_toml), "--pace", "none")
    hog = _raw_client(s.sock)
    hog.sendall(b"".join(_request(0, h, (h % 64) << 20, 1 << 20) for h in range(256)))
    q = run(["qemu-io", "-f", "raw", s.uri, "-c", "write -P 0x33 0 1M", "-c", "read -P 0x33 0 1M"])
    assert q.returncode == 0 and "read 1048576/1048576" in q.stdout, q.stdout + q.stderr
    stats = s.stop()
    assert stats["reads"] >= 1
    hog.close()


def test_a_write_flood_keeps_server_memory_bounded(tmp_path, tiny_toml):
    """One client pipelining 32 MiB writes as fast as the socket takes them, never reading a
    reply: the server reads no faster than the (paced) model answers, so its memory stays
    within the connection's 32 MiB in-flight budget (and the request being read), not
    what the client pushes."""
    import threading
    s = Served(tmp_path, str(tiny_toml))
    base = _rss_mib(s.proc.pid)
    flood = _raw_client(s.sock)
    payload = bytes([0x7e]) * (32 << 20)
    sent = [0]

    def push():
        try:
            for h in range(64):
                flood.sendall(_request(1, h, 0, len(payload)) + payload)
                sent[0] += len(payload)
        except OSError:
            pass

    t = threading.Thread(target=push, daemon=True)
    t.start()
    peak = base
    for _ in range(30):
        time.sleep(0.1)
        peak = max(peak, _rss_mib(s.proc.pid))
    flood.close()
    t.join(timeout=30)
    s.stop()
    print(f"\nwrite flood: server RSS {base:.0f} -> peak {peak:.0f} MiB; client pushed {sent[0] / 2**20:.0f} MiB")
    assert peak - base < 200, (base, peak)


def test_read_only_export_with_real_clients(tmp_path, tiny_toml):
    _need("nbdinfo", "qemu-io")
    s = Served(tmp_path, str(tiny_toml), "--read-only")
    assert "read-only" in s.output()
    info = json.loads(run(["nbdinfo", "--json", s.uri]).stdout)
    assert info["exports"][0]["is_read_only"] is True
    q = run(["qemu-io", "-f", "raw", "-r", s.uri, "-c", "read -P 0 0 64k"])
    assert q.returncode == 0 and "read 65536/65536" in q.stdout, q.stdout + q.stderr
    w = run(["qemu-io", "-f", "raw", s.uri, "-c", "write -P 1 0 4k"])
    assert "read-only" in (w.stdout + w.stderr).lower() or w.returncode != 0, w.stdout + w.stderr
    stats = s.stop()
    assert stats["writes"] == 0


def _store_snapshot(store: Path) -> dict:
    return {f.name: (f.read_bytes(), f.stat().st_mtime_ns) for f in sorted(store.iterdir())}


def _write_fds(pid: int, under: Path) -> list[str]:
    """Files under `under` the process has open for writing (from /proc/PID/fdinfo's flags)."""
    out = []
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
            flags = int(Path(f"/proc/{pid}/fdinfo/{fd.name}").read_text().split("flags:")[1].split()[0], 8)
        except (OSError, IndexError):
            continue
        if target.startswith(str(under)) and flags & os.O_ACCMODE != os.O_RDONLY:
            out.append(target)
    return out


def test_read_only_serves_a_store_on_read_only_media_and_writes_nothing(tmp_path, tiny_toml):
    """Issue 73, item 18: `--read-only --store` of a store left by a SIGKILL (so its start
    rebuilds, as the firmware does) on read-only media: the store's files are opened for
    reading only, no `lock` or `store.json` is made or written, every file is byte-identical
    and untouched after the run, and the data a FLUSH made durable reads back (twice: the
    rebuild's writes stayed in memory)."""
    _need("qemu-io", "nbdcopy")
    toml = _with_protection(tmp_path, TINY_TOML, "map")
    store = tmp_path / "store"
    s = Served(tmp_path, str(toml), "--pace", "none", "--store", str(store), tag="w")
    q = run(["qemu-io", "-f", "raw", s.uri, "-c", "write -P 0x6b 0 1m", "-c", "flush", "-c", "write -P 0x33 4m 64k"])
    assert q.returncode == 0, q.stderr
    s.kill()
    (store / "lock").unlink()
    before = _store_snapshot(store)
    for f in store.iterdir():
        f.chmod(0o444)
    store.chmod(0o555)
    try:
        for tag in ("r1", "r2"):
            r = Served(tmp_path, str(toml), "--pace", "none", "--store", str(store), "--read-only", tag=tag)
            assert "rebuilt after an unclean stop" in r.output(), r.output()
            assert _write_fds(r.proc.pid, store) == []
            out = tmp_path / f"{tag}.bin"
            assert run(["nbdcopy", r.uri, str(out)]).returncode == 0
            got = out.read_bytes()
            assert got[:1 << 20] == b"\x6b" * (1 << 20), "flushed data lost"
            assert got[4 << 20:(4 << 20) + 65536] in (b"\x33" * 65536, bytes(65536))
            w = run(["qemu-io", "-f", "raw", r.uri, "-c", "write -P 1 0 4k"])
            assert w.returncode != 0 or "read-only" in (w.stdout + w.stderr).lower()
            assert r.stop()["store_error"] == ""
            assert _store_snapshot(store) == before, "a file of the store changed"
    finally:
        store.chmod(0o755)
    # Where the store has its lock file, a read-only server holds it shared: a writer is refused.
    (store / "lock").touch()
    r = Served(tmp_path, str(toml), "--pace", "none", "--store", str(store), "--read-only", tag="r3")
    p = run([sys.executable, "-m", "ssdlab.cli", "serve", "--drive", str(toml), "--socket",
             str(tmp_path / "w.sock"), "--store", str(store)])
    assert p.returncode == 2 and "in use by a `serve --read-only`" in p.stderr, p.stderr
    r.stop()
    # What a read-only start refuses, before it opens anything.
    empty = tmp_path / "empty"
    empty.mkdir()
    for args, message in ((["--store", str(empty), "--read-only"], "holds no store.json; accepted with --read-only"),
                          (["--store", str(store), "--read-only", "--precondition", "fast-fill"],
                           "--precondition fast-fill with --read-only")):
        p = run([sys.executable, "-m", "ssdlab.cli", "serve", "--drive", str(toml), "--socket",
                 str(tmp_path / "x.sock"), *args])
        assert p.returncode == 2 and message in p.stderr and "Traceback" not in p.stderr, p.stderr
    assert list(empty.iterdir()) == []


def test_a_seeded_power_cut_drops_clients_and_the_drive_comes_back_with_what_it_promised(tmp_path):
    """`--power-cut-after N` on a drive with full protection: qemu-io's writes before the cut
    are all there when a new client connects to the rebuilt drive."""
    _need("qemu-io")
    toml = tmp_path / "full.toml"
    toml.write_text(TINY_TOML.replace('command_ns = 12500', 'command_ns = 12500\npower_loss_protection = "full"'))
    s = Served(tmp_path, str(toml), "--pace", "none", "--store", str(tmp_path / "store"), "--power-cut-after", "30")
    first = run(["qemu-io", "-f", "raw", s.uri, *sum((["-c", f"write -P {i + 1} {i * 65536} 64k"] for i in range(20)), [])])
    assert first.returncode == 0, first.stderr
    second = run(["qemu-io", "-f", "raw", s.uri, *sum((["-c", f"write -P 99 {(100 + i) * 65536} 64k"] for i in range(40)), [])])
    deadline = time.monotonic() + 600  # a hang's guard only
    while "power cut after 30 commands" not in s.output():
        assert time.monotonic() < deadline, s.output()
        time.sleep(0.05)
    assert "full protection): 0 host copies lost" in s.output(), s.output()
    check = run(["qemu-io", "-f", "raw", s.uri, *sum((["-c", f"read -P {i + 1} {i * 65536} 64k"] for i in range(20)), [])])
    assert check.returncode == 0 and "Pattern verification failed" not in check.stdout, check.stdout + check.stderr
    stats = s.stop()
    assert stats["power_cuts"] == 1
    del second


def test_kill_9_of_a_drive_without_full_protection_loses_only_unflushed_data(tmp_path):
    """A drive whose capacitors flush only the map (the M500's design): data written before a
    completed FLUSH survives a SIGKILL of the emulator; data written after it and still in the
    drive's buffer is lost (each unit reads as its new data or as before, never anything else)."""
    import struct
    toml = _with_protection(tmp_path, TINY_TOML, "map")
    store = tmp_path / "store"
    s = Served(tmp_path, str(toml), "--pace", "none", "--store", str(store), tag="1")
    c = _raw_client(s.sock)

    def write(handle, offset, data):
        c.sendall(_request(1, handle, offset, len(data)) + data)
        reply = b""
        while len(reply) < 16:
            reply += c.recv(16 - len(reply))
        assert struct.unpack(">IIQ", reply)[1] == 0

    flushed = bytes([0x41]) * (256 * 1024)
    write(1, 0, flushed)
    c.sendall(_request(3, 2, 0, 0))  # FLUSH
    assert len(c.recv(16)) == 16
    unflushed = bytes([0x42]) * 4096
    for i in range(5):
        write(10 + i, (1 << 20) + i * 8192, unflushed)
    s.kill()
    c.close()
    s = Served(tmp_path, str(toml), "--pace", "none", "--store", str(store), tag="2")
    banner = s.output()
    assert "rebuilt after an unclean stop" in banner and "host copies not yet programmed were lost" in banner, banner
    out = tmp_path / "out.bin"
    assert run(["nbdcopy", s.uri, str(out)]).returncode == 0
    got = out.read_bytes()
    assert got[:len(flushed)] == flushed, "flushed data lost"
    kept = 0
    for i in range(5):
        unit = got[(1 << 20) + i * 8192:(1 << 20) + i * 8192 + 4096]
        assert unit in (unflushed, bytes(4096)), i
        kept += unit == unflushed
    assert kept < 5, "nothing unflushed was lost: the kill should take what the buffer held"
    s.stop()


def _starved_m500(tmp_path: Path, protection: str) -> Path:
    """The M500-120's controller, NAND and firmware on 2 dies of 24 blocks a plane, its user
    capacity a little under what the collection thresholds accept (issue 73, item 14)."""
    preset = Path(ssdlab.__file__).parent / "presets" / "crucial-m500-120.toml"
    text = preset.read_text()
    for old, new in (("dies = 8 ", "dies = 2 "), ("blocks_per_plane = 1024 ", "blocks_per_plane = 24 "),
                     ("user_capacity_bytes = 120000000000", "user_capacity_bytes = 360000000"),
                     ('power_loss_protection = "map"', f'power_loss_protection = "{protection}"')):
        assert old in text, old
        text = text.replace(old, new, 1)
    p = tmp_path / f"starved-{protection}.toml"
    p.write_text(text)
    return p


def _sigkill_loop(tmp_path: Path, cycles: int) -> None:
    """Issue 73, item 14: a real `serve` on a starved map or none drive (prefilled, random
    writes over the whole drive so that collection reaches fresh copies), killed with SIGKILL
    at a random point of each cycle with commands in flight, started again on its store: at
    every restart every unit holds what a FLUSH or FUA made durable or a later write, and no
    erase hold was ever ended early while victims were held (the server's statistics before
    each kill). The map and none drives run at once."""
    from concurrent.futures import ThreadPoolExecutor

    from kill_loop import kill_loop

    def loop(protection: str, seed: int):
        base = tmp_path / protection
        base.mkdir()
        drive = _starved_m500(base, protection)
        store = base / "store"

        def start(k):
            extra = ["--precondition", "fast-fill"] if k == 0 else []
            return Served(base, str(drive), "--pace", "none", "--store", str(store), *extra, tag=str(k))

        return kill_loop(start, 360_000_000 // 4096, cycles=cycles, seed=seed, commands=2000, queue_depth=32)

    with ThreadPoolExecutor(2) as pool:
        runs = dict(zip(("map", "none"), pool.map(loop, ("map", "none"), (1, 2))))
    for protection, (tally, (held, ended_early)) in runs.items():
        print(f"\n{protection}: {tally.cycles} SIGKILL cycles, {tally.units_checked:,} units checked, "
              f"{tally.flushes:,} FLUSHes, {tally.fua:,} FUA writes, {held:,} erases held, "
              f"{len(tally.violations)} violations")
        assert tally.violations == [], (protection, tally.violations[:5])
        assert tally.flushes > 0 and tally.fua > 0 and tally.units_checked == tally.cycles * 87_890
        assert ended_early == 0, protection
        assert held > 0, f"{protection}: no victim was held: the loop never reached the hold"


def test_a_sigkill_loop_on_a_starved_drive_never_loses_flushed_data(tmp_path):
    """The gate's SIGKILL loop: 25 restarts of each drive (`make soak` runs a hundred)."""
    _sigkill_loop(tmp_path, cycles=25)


@pytest.mark.soak
def test_a_hundred_sigkills_on_a_starved_drive_never_lose_flushed_data(tmp_path):
    """The SIGKILL loop over a hundred restarts of each drive (SSDLAB_KILL_CYCLES: another count)."""
    _sigkill_loop(tmp_path, cycles=int(os.environ.get("SSDLAB_KILL_CYCLES", "100")))


# ----- always-on encryption: data at rest and crypto erase ------------------------------------

def test_a_self_encrypting_drive_keeps_ciphertext_at_rest_and_a_crypto_erase_leaves_nothing(tmp_path):
    """A self-encrypting drive's store holds AES-XTS ciphertext: the pattern written through
    qemu-io is not in the store's files, yet reads back across a restart; after `ssdlab
    crypto-erase` no earlier byte reads back, through the server or from the files."""
    _need("qemu-io")
    toml = tmp_path / "sed.toml"
    toml.write_text(TINY_TOML.replace('command_ns = 12500', 'command_ns = 12500\nself_encrypting = true\ncrypto_erase_us = 1000'))
    store = tmp_path / "store"
    pattern = "0x5c"
    s = Served(tmp_path, str(toml), "--pace", "none", "--store", str(store), tag="1")
    p = run(["qemu-io", "-f", "raw", s.uri, "-c", f"write -P {pattern} 0 2M", "-c", "flush"])
    assert p.returncode == 0, p.stdout + p.stderr
    s.stop()
    files = {f.name: f.read_bytes() for f in store.iterdir() if f.is_file()}
    assert len(files["media_key"]) == 64
    assert json.loads(files["store.json"])["encrypted"] is True
    plain = bytes([0x5C]) * 64
    assert len(files["data"].strip(b"\0")) > 2 * 1024 * 1024 * 0.9, "the data is stored"
    assert not any(plain in b for b in files.values()), "plaintext found in the store's files"
    # Restarted on the same store: the data decrypts to what was written.
    s = Served(tmp_path, str(toml), "--pace", "none", "--store", str(store), tag="2")
    p = run(["qemu-io", "-f", "raw", s.uri, "-c", f"read -P {pattern} 0 2M"])
    assert p.returncode == 0 and "fail" not in (p.stdout + p.stderr).lower(), p.stdout + p.stderr
    # A running server's store is refused; a stopped one is crypto erased.
    busy = run([sys.executable, "-m", "ssdlab.cli", "crypto-erase", "--store", str(store)])
    # The store is locked while its server runs: the error names the server's process.
    assert busy.returncode != 0 and "in use by process" in busy.stderr, busy.stderr
    s.stop()
    old_key = files["media_key"]
    done = run([sys.executable, "-m", "ssdlab.cli", "crypto-erase", "--store", str(store)])
    assert done.returncode == 0, done.stderr
    assert (store / "media_key").read_bytes() != old_key
    assert (store / "data").stat().st_size == 0 and (store / "oob").stat().st_size == 0
    s = Served(tmp_path, str(toml), "--pace", "none", "--store", str(store), tag="3")
    p = run(["qemu-io", "-f", "raw", s.uri, "-c", "read -P 0 0 2M"])
    assert p.returncode == 0 and "fail" not in (p.stdout + p.stderr).lower(), p.stdout + p.stderr
    s.stop()


def test_crypto_erase_of_a_drive_without_encryption_is_refused(tmp_path, tiny_toml):
    store = tmp_path / "store"
    s = Served(tmp_path, str(tiny_toml), "--pace", "none", "--store", str(store))
    s.stop()
    p = run([sys.executable, "-m", "ssdlab.cli", "crypto-erase", "--store", str(store)])
    assert p.returncode != 0 and "without always-on encryption" in p.stderr, p.stderr
    assert "Traceback" not in p.stderr


def test_drive_crypto_erase_reads_as_fresh_in_the_stated_time():
    d = ssdlab.Drive.preset("crucial-m500-120")
    d.fill()
    assert d.counters()["mapped_units"] > 0
    erased = d.counters()["ftl"]["blocks_erased"]
    took = d.crypto_erase()
    assert took == 2.0
    assert d.counters()["mapped_units"] == 0, "every LBA reads as zeros"
    assert d.counters()["ftl"]["blocks_erased"] == erased, "no block erased"
    r = d.run(ssdlab.Job(rw="randread", bs="4k", iodepth=4, number_ios=1000))
    assert r.summary["read"]["ios"] == 1000
    with pytest.raises(ssdlab.SsdlabError, match="not a self-encrypting drive"):
        ssdlab.Drive.preset("crucial-m4-128").crypto_erase()


def test_serve_reports_the_drives_power_with_the_hosts_link_policy(tmp_path):
    _need("qemu-io")
    s = Served(tmp_path, "crucial-m500-120", "--pace", "none", "--link-power", "hipm+dipm")
    p = run(["qemu-io", "-f", "raw", s.uri, "-c", "write -P 0x33 0 4M", "-c", "read -P 0x33 0 4M"])
    assert p.returncode == 0, p.stdout + p.stderr
    stats = s.stop()
    power = stats["power"]
    assert power["energy_j"] > 0 and power["peak_w"] >= power["average_w"] > 0
    assert "power: average" in s.output()
    bad = run([sys.executable, "-m", "ssdlab.cli", "serve", "--drive", "crucial-m500-120", "--socket",
               str(tmp_path / "x.sock"), "--link-power", "sometimes"])
    assert bad.returncode != 0 and "hipm+dipm" in bad.stderr


def _procedure(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return run([sys.executable, "-m", "ssdlab.cli", "procedure", *args], timeout=timeout)


def test_a_served_drive_is_measured_through_fio_as_a_real_one_is(tmp_path, tiny_toml):
    """`ssdlab procedure --target NBD-URI`: fio's nbd engine against `ssdlab serve`, the same
    procedure and tables as a file or block device gets (issue 76's closed loop measures a
    hidden drive this way). Paced replies wait for the model, so no figure is above the model's
    own run of the procedure (+5% for the two preparations' differences: fio fills with 1 MiB
    writes); the export's data is overwritten only with --yes-destroy-data."""
    _need("fio", "nbdinfo")
    s = Served(tmp_path, str(tiny_toml))
    fast = ("--set", "span=16m", "--set", "random_s=1", "--set", "seq_s=1", "--quiet")
    p = _procedure("four-corners", "--target", s.uri, *fast)
    assert p.returncode == 2 and "is an NBD export" in p.stderr and "--yes-destroy-data" in p.stderr, p.stderr
    p = _procedure("four-corners", "--target", s.uri, "--yes-destroy-data", "--out", str(tmp_path / "o"), *fast)
    assert p.returncode == 0, p.stderr
    served = pd.read_csv(tmp_path / "o" / "four-corners-results.csv")
    assert len(served) == 5 and (served.iops > 0).all() and (served.mb_per_s > 0).all()
    assert json.loads((tmp_path / "o" / "four-corners-summary.json").read_text())[0]["drive"] == f"target {s.uri}"
    p = _procedure("four-corners", "--drive", str(tiny_toml), "--out", str(tmp_path / "m"), *fast)
    assert p.returncode == 0, p.stderr
    model = pd.read_csv(tmp_path / "m" / "four-corners-results.csv")
    assert list(served.test) == list(model.test)
    assert (served.mb_per_s <= 1.05 * model.mb_per_s).all(), (served, model)
    stats = s.stop()
    # Filled, and trimmed end to end first, with a FLUSH after each TRIM (fio's end_fsync).
    assert stats["writes"] > 0 and stats["trims"] >= 1 and stats["flushes"] >= 1


@pytest.mark.parametrize("extra, args, message", [
    ((), ("--target-size", "1g"), "an NBD export has the size its server gives it"),
    (("--read-only",), (), "the export is read-only"),
])
def test_nbd_targets_that_cannot_be_measured_are_one_line(tmp_path, tiny_toml, extra, args, message):
    _need("fio", "nbdinfo")
    s = Served(tmp_path, str(tiny_toml), *extra)
    p = _procedure("sequential-qd", "--target", s.uri, "--yes-destroy-data", *args, "--quiet")
    assert p.returncode == 2 and message in p.stderr and len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert "Traceback" not in p.stderr
    assert s.stop()["writes"] == 0


def test_transport_floor_is_measured_when_asked_and_a_bad_value_is_one_line(tmp_path, tiny_toml):
    """`--transport-us auto`: the server first measures what fio, libnbd and the socket add to an
    NBD reply on this machine (fio's 4 KiB reads at QD1 against `nbdkit memory`), says so and
    replies that much early; a value that is neither microseconds nor auto is one line."""
    _need("fio", "nbdinfo", "nbdkit")
    s = Served(tmp_path, str(tiny_toml), "--transport-us", "auto")
    floor = re.search(r"transport floor ([\d,.]+) us", s.output())
    assert floor and 1 <= float(floor.group(1).replace(",", "")) <= 10_000, s.output()
    assert json.loads(run(["nbdinfo", "--json", s.uri]).stdout)["exports"][0]["export-size"] > 0
    s.stop()
    p = run([sys.executable, "-m", "ssdlab.cli", "serve", "--drive", str(tiny_toml), "--socket",
             str(tmp_path / "bad.sock"), "--transport-us", "soon"])
    assert p.returncode == 2 and "--transport-us: 'soon': accepted: microseconds from 0 to 10000, or auto" in p.stderr
    assert "Traceback" not in p.stderr


def test_an_nbd_target_nobody_serves_or_an_unknown_scheme_is_one_line(tmp_path):
    _need("fio", "nbdinfo")
    p = _procedure("sequential-qd", "--target", f"nbd+unix:///?socket={tmp_path / 'none.sock'}", "--yes-destroy-data",
                   "--quiet")
    assert p.returncode == 2 and "nbdinfo could not open it" in p.stderr, p.stderr
    assert len(p.stderr.strip().splitlines()) == 1 and "Traceback" not in p.stderr
    p = _procedure("sequential-qd", "--target", "http://example.invalid/disk", "--quiet")
    assert p.returncode == 2 and "NBD URIs start with nbd://" in p.stderr, p.stderr


# Issue 76's closed loop through the real tools, one drive per controller family: the shipped
# preset shrunk to a 256 MB drive of the same dies (so fio fills it through NBD in seconds), the
# parameters changed and hidden, those left free, and the figures whose parameters four-corners
# on a fresh drive cannot see (garbage collection) named.
NBD_FAMILIES = [
    ("crucial-m500-120", ("blocks_per_plane = 1024 ", 24), "user_capacity_bytes = 120000000000",  # 88SS9187
     {"nand.read_page_us": 0.85, "nand.program_page_us": 1.15},
     "nand.read_page_us,nand.program_page_us,controller.command_ns,controller.read_mb_per_s"),
    ("crucial-m550-128", ("blocks_per_plane = 512 ", 24), "user_capacity_bytes = 128000000000",   # 88SS9189
     {"controller.command_ns": 1.2, "controller.write_extra_ns": 0.7, "nand.program_page_us": 1.1},
     "controller.command_ns,controller.write_extra_ns,nand.program_page_us,nand.read_page_us"),
    ("micron-p400e-50", ("blocks_per_plane = 2048 ", 64), "user_capacity_bytes = 50000000000",    # 88SS9174
     {"controller.read_extra_ns": 1.3, "nand.program_page_us": 0.9},
     "controller.read_extra_ns,nand.program_page_us,controller.read_mb_per_s,controller.gc_copy_ns_per_unit"),
]
NBD_CORNERS = ("span=64m", "random_s=1", "seq_s=1")
# The NBD hop's share of the drive's shortest mean latency in four-corners that the time scale
# keeps it under (the server also replies the measured floor early, `--transport-us`).
HOP_SHARE = 0.05


def _time_scale(floor_us: float, drive_text: str, name: str) -> int:
    """How many times slower than real time to serve a drive so that the NBD hop (`floor_us` of
    wall time, measured on this machine) is at most HOP_SHARE of the drive's shortest mean
    latency in four-corners as fio's path runs it on the model (at least 10x: the hop of a
    128 KiB read is more than the 4 KiB floor)."""
    from ssdlab.review.fio_target import model_target, run_fio_procedure
    sets = dict(kv.split("=") for kv in NBD_CORNERS)
    rows = run_fio_procedure("four-corners", model_target(drive_text, name),
                             {k: int(v) if v.isdigit() else v for k, v in sets.items()})[0].tables["results"]
    shortest_us = float(rows.latency_us_mean.min())
    return max(10, int(np.ceil(floor_us / (HOP_SHARE * shortest_us))))


def _shrunk(preset: str, blocks: tuple, capacity: str, changes: dict) -> str:
    import tomllib
    text = (Path(ssdlab.__file__).parent / "presets" / f"{preset}.toml").read_text()
    for old, new in ((blocks[0], f"blocks_per_plane = {blocks[1]} "), (capacity, "user_capacity_bytes = 256000000")):
        assert old in text, old
        text = text.replace(old, new, 1)
    cfg = tomllib.loads(text)
    for name, factor in changes.items():
        sec, key = name.split(".")
        line = next(ln for ln in text.splitlines() if ln.startswith(f"{key} = "))
        v = cfg[sec][key] * factor
        value = str(int(round(v))) if isinstance(cfg[sec][key], int) else f"{v:.1f}"
        text = text.replace(line, f"{key} = {value}", 1)
    return text


@pytest.mark.parametrize("family", NBD_FAMILIES, ids=lambda f: f[0])
def test_fio_s_steps_read_the_same_whatever_count_of_writes_the_wall_clock_let_through(family, monkeypatch):
    """Issue 101: through NBD a time-based step of 4 KiB random writes makes as many writes as
    the wall clock lets through, and a drive keeps its open program units as that count left
    them across the TRIM that prepares the next step (a served P400e-like drive then read 214
    or 246 MB/s sequentially by the count modulo its 4 units a program unit). fio's path
    (`ModelFio`: the steps fio runs, on the model) with N more such writes after every random
    write step: every step that is not a random write reads the same for every N. Without
    power-loss protection the FLUSH after each TRIM closes the program units; with it (the
    P400e) the FLUSH is acknowledged at once and they stay open, so four-corners runs its
    sequential reads before any random write."""
    from ssdlab.review import fio_target
    preset, blocks, capacity, changes, _ = family
    text = _shrunk(preset, blocks, capacity, changes)
    sets = {k: int(v) if v.isdigit() else v for k, v in (kv.split("=") for kv in NBD_CORNERS)}

    class MoreWrites(fio_target.ModelFio):
        extra_units = 0

        def run(self, **kw):
            out = super().run(**kw)
            if kw["rw"] == "randwrite" and kw.get("runtime_s") and self.extra_units:
                super().run(rw="randwrite", bs="4k", iodepth=1, size=kw["size"], io_size=4096 * self.extra_units)
            return out

    monkeypatch.setattr(fio_target, "ModelFio", MoreWrites)
    rows = {}
    for n in (0, 1, 2, 3, 5):
        MoreWrites.extra_units = n
        t = fio_target.run_fio_procedure("four-corners", fio_target.model_target(text, preset), sets)[0].tables["results"]
        rows[n] = t.set_index("test").mb_per_s
    print(f"\n{preset}: " + "; ".join(f"N={n}: " + ", ".join(f"{v:.1f}" for v in r) for n, r in rows.items()))
    steady = [k for k in rows[0].index if "random write" not in k]
    for n, r in rows.items():
        # Within 0.5%: an MLC drive's QD1 sequential writes after the random ones start on a
        # lower or an upper page as N left them (issue 100's page types: 116.53 against 116.56
        # MB/s on the M500, 113.5 against 113.3 on the P400e 50GB's 8 dies; 113.4199 against
        # 113.4207 before them); 214 against 246 before issue 101.
        assert list(r[steady]) == pytest.approx(list(rows[0][steady]), rel=5e-3), (preset, n, r, rows[0])


def _fitted_through_nbd(tmp_path: Path, families: list) -> None:
    """Issue 76's closed loop through the real tools: each drive with hidden parameters served by
    `ssdlab serve` slower than real time (the scale from the NBD hop measured on this machine,
    `_time_scale`, and that hop replied early, `--transport-us`), measured by four-corners
    through fio's nbd engine exactly as a real drive is (`ssdlab procedure --target URI
    --target-time-scale N`), fitted from the shrunk shipped preset: every parameter the fit
    calls identified within 10% of the hidden value, garbage collection's cost named as not
    identifiable from a fresh drive's figures, and four-corners at QD1 and QD8 and
    sequential-qd (128 KiB at QD32), not measured, predicted within 10% of the hidden drive's
    own. Served one after another: three at once on two cores came out up to 16% low."""
    _need("fio", "nbdinfo", "nbdkit")
    import tomllib

    from ssdlab.serve import transport_floor_us
    floor_us = transport_floor_us()
    for preset, blocks, capacity, changes, free in families:
        d = tmp_path / preset
        d.mkdir()
        (d / "start.toml").write_text(_shrunk(preset, blocks, capacity, {}))
        (d / "hidden.toml").write_text(_shrunk(preset, blocks, capacity, changes))
        scale = _time_scale(floor_us, (d / "start.toml").read_text(), preset)
        s = Served(d, str(d / "hidden.toml"), "--time-scale", str(scale), "--transport-us", f"{floor_us:.1f}")
        t0 = time.monotonic()
        p = _procedure("four-corners", "--target", s.uri, "--target-time-scale", str(scale), "--yes-destroy-data",
                       *[a for kv in NBD_CORNERS for a in ("--set", kv)], "--out", str(d / "m"), "--quiet",
                       timeout=60 * scale)  # a hang's guard: about 10 s of the drive's time
        s.stop()
        assert p.returncode == 0, p.stderr
        print(f"\n{preset}: transport floor {floor_us:.1f} us, served {scale}x slower than real time, "
              f"four-corners through NBD in {time.monotonic() - t0:.0f} s")
        hidden = tomllib.loads((d / "hidden.toml").read_text())
        measured = json.loads((d / "m" / "four-corners-summary.json").read_text())[0]["summary"]
        from ssdlab.review.fio_target import model_target, run_fio_procedure
        sets = {k: int(v) if v.isdigit() else v for k, v in (kv.split("=") for kv in NBD_CORNERS)}
        own = run_fio_procedure("four-corners", model_target((d / "hidden.toml").read_text(), preset), sets)[0].summary
        print("  through NBD against fio's steps on the hidden model: "
              + "; ".join(f"{k} {measured[k]:,.0f} vs {own[k]:,.0f} ({100 * (measured[k] / own[k] - 1):+.1f}%)"
                          for k in own if isinstance(own[k], float) and k in measured))
        p = run([sys.executable, "-m", "ssdlab.cli", "fit", str(d / "m" / "four-corners-summary.json"), "--drive",
                 str(d / "start.toml"), "--free", free, "--jobs", "2", "--out", str(d / "fit.toml")])
        assert p.returncode == 0, p.stderr
        fitted = tomllib.loads((d / "fit.toml").read_text())
        identified = 0
        for name in free.split(","):
            sec, key = name.split(".")
            line = next(ln for ln in p.stdout.splitlines() if name in ln and ("->" in ln or "held:" in ln))
            print(f"  {name}: hidden {hidden[sec][key]:g}, fitted {fitted[sec][key]:g} ({line.strip()})")
            if "held:" in line:
                continue
            identified += 1
            # Each fitted value within 10%, a weakly identified one (over 5%) too unless its own
            # uncertainty is wider than that (CI's run of 2026-12-04: the P400e's read path 420
            # for 430, +-5.3%, weak).
            if float(re.search(r"\+-([\d.]+|inf)%", line).group(1)) <= 10:
                assert fitted[sec][key] == pytest.approx(hidden[sec][key], rel=0.10), (preset, name, line)
        assert identified >= 2, p.stdout
        if "controller.gc_copy_ns_per_unit" in free:
            assert any("gc_copy_ns_per_unit" in ln and "held: not identifiable" in ln for ln in p.stdout.splitlines()), p.stdout
        # Held back: four-corners at QD1 and QD8 and sequential-qd (128 KiB at QD32), the fitted
        # drive against the hidden one.
        for proc, sets in (("four-corners", (*NBD_CORNERS, "qd_low=1", "qd_high=8")), ("sequential-qd", ("duration_s=1",))):
            want, got = ({k: v for k, v in _own(proc, drive, d / f"{tag}-{proc}", sets).items() if isinstance(v, float)}
                         for drive, tag in ((d / "hidden.toml", "h"), (d / "fit.toml", "f")))
            print(f"  held back, {proc}, fitted against hidden: "
                  + "; ".join(f"{k} {100 * (got[k] / want[k] - 1):+.1f}%" for k in want))
            for k in want:
                assert got[k] == pytest.approx(want[k], rel=0.10), (preset, k, got[k], want[k])


@pytest.mark.wallclock
def test_a_hidden_drive_served_over_nbd_is_fitted_from_fio_s_figures(tmp_path):
    """The gate's closed loop through NBD: one family (the P400e's 88SS9174, whose read path,
    program time and garbage collection's cost are all in play); `make soak` runs all three."""
    _fitted_through_nbd(tmp_path, [f for f in NBD_FAMILIES if f[0] == "micron-p400e-50"])


@pytest.mark.soak
def test_hidden_drives_of_every_family_served_over_nbd_are_fitted_from_fio_s_figures(tmp_path):
    """The closed loop through NBD on a drive of each controller family (`make soak`)."""
    _fitted_through_nbd(tmp_path, NBD_FAMILIES)


def _own(proc: str, drive: Path, out: Path, sets) -> dict:
    p = _procedure(proc, "--drive", str(drive), *[a for kv in sets for a in ("--set", kv)], "--out", str(out), "--quiet")
    assert p.returncode == 0, p.stderr
    return json.loads((out / f"{proc}-summary.json").read_text())[0]["summary"]
