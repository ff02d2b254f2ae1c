"""Drive configurations as text: the shipped presets, a drive file or text held in memory, a
`--faults` spec applied to one, the TOML written back, and what the model derives from a
configuration (`ssdlab drives`' table) without building the drive."""

from __future__ import annotations

import json
import sys
import tomllib
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from . import _ssdlab
from .errors import SsdlabError, read_text

PRESET_PACKAGE = "ssdlab.presets"


def preset_names() -> list[str]:
    """Names of the shipped presets (the drives of drives.toml at every capacity)."""
    files = resources.files(PRESET_PACKAGE).iterdir()
    return sorted(f.name[: -len(".toml")] for f in files if f.name.endswith(".toml"))


def preset_path(name: str) -> Path:
    p = resources.files(PRESET_PACKAGE) / f"{name}.toml"
    if not p.is_file():
        raise SsdlabError(f"unknown drive '{name}'; accepted: {', '.join(preset_names())} (or a path to a .toml file)")
    return Path(str(p))


@dataclass(frozen=True)
class DriveText:
    """A drive file's text held in memory, taken wherever a preset name or a .toml path is
    (`Drive.open`, `run_procedure`): a sweep's worker gets its point's resolved drive this
    way and writes no file (a worker killed mid-point then leaves nothing behind). `name`
    stands for the file's name in messages."""

    text: str
    name: str


def config_text(name_or_path: str | DriveText, faults: str | None = None,
                placement: str | None = None) -> tuple[str, str]:
    """The TOML text of a preset (by name), of a drive file (by path) or held in a
    `DriveText`, and its source name; with `faults` (a `--faults` spec) its `[faults]` table
    replaced by the spec's; with `placement="fdp"` and no `[placement]` table, the default one
    (`with_default_placement`)."""
    if isinstance(name_or_path, DriveText):
        text = name_or_path.text
        name_or_path = name_or_path.name
    elif name_or_path.endswith(".toml") or "/" in name_or_path:
        text = read_text(name_or_path, "a preset name (`ssdlab drives`) or a drive TOML file")
    else:
        text = preset_path(name_or_path).read_text()
    if placement is not None:
        text = with_default_placement(text, name_or_path, placement)
    if faults is None:
        return text, name_or_path
    try:
        table = json.loads(_ssdlab.parse_faults(faults))
    except ValueError as e:
        raise SsdlabError(f"--faults {faults!r}: {e}") from None
    try:
        cfg = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise SsdlabError(f"{name_or_path}: {e}") from None
    cfg["faults"] = {k: v for k, v in table.items() if v is not None}
    return dump_toml(cfg), name_or_path


def with_default_placement(text: str, source: str, mode: str) -> str:
    """A drive file's text with a default `[placement]` table when it has none, said in one
    line on stderr; unchanged when it has one. `mode` "fdp": FDP as Samsung's PM9D3 ships (one
    reclaim group, 8 initially isolated handles, a superblock reclaim unit); "zns:SIZE[:MOR[:CAP]]":
    a zoned namespace of zones of SIZE (a power of two), at most MOR open and active (default
    14, the ZN540's), their capacity CAP or the whole erase blocks that fit in a zone."""
    from .job import parse_size
    if mode == "fdp":
        table = json.loads(_ssdlab.default_placement())
        said = (f"FDP on the default configuration (one reclaim group, {len(table['handles'])} initially isolated "
                "handles, a reclaim unit of one block on every die, as Samsung's PM9D3 ships)")
    elif mode.startswith("zns:"):
        parts = mode.split(":")[1:]
        if not 1 <= len(parts) <= 3 or not parts[0]:
            raise SsdlabError(f"placement {mode!r}: accepted: fdp, or zns:SIZE[:MAX_OPEN[:CAPACITY]] (e.g. zns:256M:14)")
        size = parse_size(parts[0], "the zone size")
        try:
            mor = int(parts[1]) if len(parts) > 1 and parts[1] else DEFAULT_MAX_OPEN_ZONES
        except ValueError:
            raise SsdlabError(f"placement {mode!r}: {parts[1]!r} is not a count of zones") from None
        cap = parse_size(parts[2], "the zone capacity") if len(parts) > 2 and parts[2] else 0
        table = json.loads(_ssdlab.default_zoned_placement(size, mor, cap))
        said = (f"a zoned namespace on the default configuration (zones of {parts[0]}, their capacity "
                f"{parts[2] if cap else 'the whole erase blocks that fit in one'}, at most {mor} open)")
    else:
        raise SsdlabError(f"placement {mode!r}: accepted: fdp, or zns:SIZE[:MAX_OPEN[:CAPACITY]] (e.g. zns:256M:14)")
    try:
        cfg = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise SsdlabError(f"{source}: {e}") from None
    if "placement" in cfg:
        return text
    cfg["placement"] = {k: v for k, v in table.items() if v not in ([], "", 0) or k == "mode"}
    print(f"{source}: no [placement] table: {said}", file=sys.stderr)
    return dump_toml(cfg)


# The ZN540's MOR = MAR (shared/reference/placement.md): a zoned default's open zones when the
# job names no limit.
DEFAULT_MAX_OPEN_ZONES = 14


FAULTS_HELP = ("seeded NAND faults, e.g. read_retry=1e-3,uncorrectable=1e-5,program_fail=1e-4,erase_fail=1e-4,seed=7 "
               "(rates per operation), die_fail=DIE@SECONDS (a whole die fails then); replaces the drive's [faults] table")


def format_faults(f: dict) -> str | None:
    """One line on what seeded NAND faults did; None if they did nothing."""
    if not any(f.values()):
        return None
    return (f"  faults: {f['read_retries']:,} read retries ({f['read_retry_reads']:,} extra reads), "
            f"{f['uncorrectable_pages']:,} uncorrectable pages ({f['rain_rebuilds']:,} rebuilt by RAIN "
            f"with {f['rain_rebuild_reads']:,} reads; {f['failed_reads']:,} reads failed, "
            f"{f['unreadable_units']:,} units unreadable), {f['program_failures']:,} program and "
            f"{f['erase_failures']:,} erase failures, {f['grown_bad_blocks']:,} grown bad blocks"
            + (f"; {f['failed_dies']} die failed ({f['die_rebuilds']:,} page reads rebuilt from the other dies)"
               if f.get("failed_dies") else ""))


def description(cfg: dict) -> dict:
    """What the model derives from a configuration (as tomllib reads it): geometry,
    over-provisioning, the host link, NAND, bus and link ceilings, map DRAM
    (ssdlab_core::describe)."""
    try:
        return json.loads(_ssdlab.describe_config(dump_toml(cfg)))
    except ValueError as e:
        raise SsdlabError(str(e)) from None


def dump_toml(cfg: dict) -> str:
    """A drive configuration (as tomllib reads it) back to TOML: top-level keys, then tables,
    each followed by its subtables ([power.dram]) and arrays of tables ([[datasheet.latency]])."""
    def value(v) -> str:
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, str):
            return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
        return repr(v)

    def tables(v) -> bool:  # an array of tables ([[datasheet.latency]])
        return isinstance(v, list) and bool(v) and all(isinstance(t, dict) for t in v)

    def plain(table: dict) -> list[str]:
        return [f"{k} = {value(v)}" for k, v in table.items() if not isinstance(v, dict) and not tables(v)]

    def section(name: str, table: dict) -> list[str]:
        out = [f"[{name}]", *plain(table)]
        for k, v in table.items():
            if isinstance(v, dict):
                out += section(f"{name}.{k}", v)
            elif tables(v):
                for t in v:
                    out += [f"[[{name}.{k}]]", *plain(t)]
        return out

    lines = plain(cfg)
    for name, table in cfg.items():
        if isinstance(table, dict):
            lines += section(name, table)
    return "\n".join(lines) + "\n"


def describe_text(text: str, source: str) -> dict:
    """describe() of a drive configuration without building the drive (no tables allocated)."""
    try:
        config = tomllib.loads(text)
        d = json.loads(_ssdlab.describe_config(text))
    except (tomllib.TOMLDecodeError, ValueError) as e:
        raise SsdlabError(f"{source}: {e}") from None
    return describe_config(config, d) | {"user_bytes": d["user_bytes"]}


def describe_preset(name: str) -> dict:
    """describe() of a preset without building the drive (no mapping tables allocated)."""
    text = preset_path(name).read_text()
    return describe_config(tomllib.loads(text), json.loads(_ssdlab.describe_config(text)))


def describe_config(config: dict, d: dict) -> dict:
    """The drive table's row: the configuration's names and the model's description `d`."""
    g = d["geometry"]
    return {
        "name": config.get("name", ""),
        "controller": config.get("controller", {}).get("name", ""),
        "interface": config.get("host", {}).get("interface", ""),
        "dies": g["dies"],
        "channels": g["channels"],
        "raw_gib": g["raw_bytes"] / 2**30,
        "usable_gib": g["usable_bytes"] / 2**30,
        "user_gb": d["user_bytes"] / 1e9,
        "op_of_user_pct": 100 * d["over_provisioning_of_user"],
        "op_of_raw_pct": 100 * d["over_provisioning_of_raw"],
        "gc_spare_of_user_pct": 100 * d["gc_spare_of_user"],
        "map_dram_mib": d["map_dram_bytes"] / 2**20,
        "dram_mib": config.get("controller", {}).get("dram_bytes", 0) / 2**20,
        "power_loss_protection": config.get("controller", {}).get("power_loss_protection", "none"),
        "rain": f"{config['ftl'].get('rain_data_pages_per_parity', 0)}:1" if config["ftl"].get("rain_data_pages_per_parity") else "none",
    }
