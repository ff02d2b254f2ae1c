import os
import socket
import subprocess
import sys

import pytest

SMALL_TOML = """\
name = "test-small"
description = "4 dies, 16 MiB blocks scaled down: a drive small enough for tests"

[nand]
part = "test"
channels = 2
dies = 4
planes_per_die = 2
blocks_per_plane = 64
pages_per_block = 64
page_size_bytes = 16384
read_page_us = 115.0
program_page_us = 1600.0
erase_block_us = 3800.0
bus_mb_per_s = 330.0
pe_cycles_rated = 3000

[controller]
name = "test"
command_ns = 12500

[ftl]
user_capacity_bytes = 460000000
write_buffer_bytes = 1048576
gc_foreground_mode = "burst"

[host]
interface = "sata"
sata_line_gbit_per_s = 6.0
queue_depth_max = 32
"""


@pytest.fixture
def small_toml(tmp_path):
    p = tmp_path / "small.toml"
    p.write_text(SMALL_TOML)
    return p


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def ray_cluster():
    """A local Ray head of two CPUs on loopback (the sweep and fit tests); its address."""
    # Ray as this Python has it (a `ray` on PATH may belong to another Python).
    import importlib.util
    if importlib.util.find_spec("ray") is None:
        if os.environ.get("SSDLAB_REQUIRE_TOOLS") == "1":
            raise RuntimeError("ray is not installed")
        pytest.skip("ray not installed")
    port = _free_port()
    ray = [sys.executable, "-m", "ray.scripts.scripts"]
    p = subprocess.run([*ray, "start", "--head", "--node-ip-address", "127.0.0.1", "--port", str(port), "--num-cpus", "2",
                        "--include-dashboard=false", "--disable-usage-stats"], capture_output=True, text=True,
                       env=os.environ | {"RAY_ADDRESS": ""})
    assert p.returncode == 0, p.stderr
    try:
        yield f"127.0.0.1:{port}"
    finally:
        subprocess.run([*ray, "stop", "--force"], capture_output=True)
