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
