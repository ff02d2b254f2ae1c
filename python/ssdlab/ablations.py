"""`ssdlab validate --ablate`: each firmware mechanism and the preset fields that switch it off,
so a validate group can show what one mechanism contributes."""

from __future__ import annotations

import tomllib

from .configs import dump_toml
from .errors import SsdlabError

# Each firmware mechanism and the preset fields that switch it off (`--ablate`).
ABLATIONS = {
    "gc-cost": ({"controller": {"gc_copy_ns_per_unit": 0, "gc_victim_ns": 0}},
                "garbage collection costs the controller's processor nothing"),
    "gc-pacer": ({"ftl": {"gc_pace": "victim"}},
                 "collection copies what each victim needs (no pace sized for the nominal spare, no watermarks)"),
    "gc-scheduling": ({"ftl": {"gc_foreground_mode": "paced", "host_die_choice": "round-robin", "host_die_candidates": 0}},
                      "every preset collects paced with host writes, host data striped in turn (no deferred "
                      "collection, no whole-victim bites)"),
    "map-persistence": ({"ftl": {"map_journal_entry_bytes": 0, "block_summary_pages": False, "map_blocks_per_die": 0}},
                        "no map journal, checkpoints or block summaries, and their blocks serve garbage collection"),
    "held-spare": ({"ftl": {"rain_data_pages_per_parity": 0, "reserved_blocks_per_die": 0}},
                   "RAIN parity and the defect reserve are spare area for garbage collection instead"),
    "command-latency": ({"host": {"driver_ns": 0}, "controller": {"front_end_ns": 0}}, "no host stack or front-end latency outside the drive's serialised resources"),
    "effective-times": (lambda cfg: {"nand": {"program_page_us": cfg["nand"].get("program_page_us_typ", cfg["nand"]["program_page_us"]),
                                              "read_page_us": cfg["nand"].get("read_page_us_max", cfg["nand"]["read_page_us"])}},
                        "the NAND runs at the datasheet's typical tPROG and maximum tR instead of the part's effective times"),
    "read-path": ({"controller": {"read_extra_ns": 0}}, "no enterprise read path: a read costs the processor what a write does"),
    "write-command": ({"controller": {"write_extra_ns": 0}}, "a write costs the processor no more than a read"),
    "data-path": ({"controller": {"read_mb_per_s": 0, "write_mb_per_s": 0}},
                  "no firmware data-path limit: data moves at the link's rate (the NAND and processor still bind)"),
    "power-budget": (lambda cfg: (cfg.get("power", {}).pop("power_limit_w", None), {})[1],
                     "no power budget: every die may run at once"),
}


def check_mechanism(mechanism: str | None) -> None:
    """A mechanism `--ablate` knows (None: none is switched off), or a clear error."""
    if mechanism and mechanism not in ABLATIONS:
        raise SsdlabError(f"--ablate: unknown mechanism '{mechanism}'; accepted: {', '.join(ABLATIONS)}")


def ablated_text(text: str, mechanism: str | None) -> str:
    """A drive configuration with one firmware mechanism switched off."""
    check_mechanism(mechanism)
    if not mechanism:
        return text
    cfg = tomllib.loads(text)
    change = ABLATIONS[mechanism][0]
    for section, fields in (change(cfg) if callable(change) else change).items():
        cfg.setdefault(section, {}).update(fields)
    return dump_toml(cfg)
