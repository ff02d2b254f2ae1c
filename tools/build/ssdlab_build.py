"""`pip install .`'s build backend: maturin, with profile-guided optimisation (PGO) when the
machine has an llvm-profdata that can read this rustc's profiles.

PGO builds the extension twice. First instrumented (`-Cprofile-generate`), to run the
training (pgo_train.py beside this file: the work users give the simulator most);
llvm-profdata merges what it counted; then maturin builds the extension with `-Cprofile-use`,
so the compiler inlines and lays out the hot paths as they are run. Results do not change
(the compiler keeps the program's meaning; README command 1's fio JSON is the same): only
speed. Measured 2026-11-26 on a 2-vCPU VM: README command 1 14.1-15.5 s plain, 11.8-12.6 s
profile-guided (docs/performance.md).

llvm-profdata is looked for in $LLVM_PROFDATA, in the Rust toolchain (rustup's llvm-tools
component), then as llvm-profdata-N and llvm-profdata on the PATH (Debian: `apt-get install
llvm-19` reads rustc 1.95's LLVM 22 profiles). Each found is tried until one merges the
profiles into a file rustc reads; when none is found, or none of those found works (Debian 12's
own llvm-profdata is LLVM 14), the build adds the toolchain's with `rustup component add
llvm-tools` where rustup is, and tries that. Without one the build goes on without PGO and
says why.

SSDLAB_PGO=0 builds without PGO (faster to build); SSDLAB_PGO=1 makes a build that cannot
have it fail instead (CI). Editable builds (`pip install -e`) never use it.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import maturin
from maturin import (  # noqa: F401  (the PEP 517 hooks this backend passes on unchanged)
    build_editable,
    build_sdist,
    get_requires_for_build_editable,
    get_requires_for_build_sdist,
    get_requires_for_build_wheel,
    prepare_metadata_for_build_editable,
    prepare_metadata_for_build_wheel,
)

ROOT = Path(__file__).resolve().parent.parent.parent
PGO_DIR = ROOT / "target" / "pgo"
PRESETS = ROOT / "python" / "ssdlab" / "presets"


class Unavailable(Exception):
    """PGO cannot be had on this machine; the message says why."""


def say(message: str) -> None:
    print(f"ssdlab build: {message}", file=sys.stderr, flush=True)


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    flag = profile_use_flag()
    saved = {k: os.environ.get(k) for k in ("RUSTFLAGS", "SSDLAB_BUILD_PGO")}
    if flag:
        os.environ["RUSTFLAGS"] = with_flag(saved["RUSTFLAGS"], flag)
    # What `ssdlab._ssdlab.BUILD` says.
    os.environ["SSDLAB_BUILD_PGO"] = "1" if flag else "0"
    try:
        return maturin.build_wheel(wheel_directory, config_settings, metadata_directory)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


OFF, REQUIRED, AUTO = ("0", "off", "no", "false"), ("1", "on", "yes", "true"), ("auto", "")


def with_flag(rustflags: str | None, flag: str) -> str:
    """RUSTFLAGS with `flag` added to what the user set."""
    return f"{rustflags} {flag}" if rustflags else flag


def profile_use_flag() -> str | None:
    """`-Cprofile-use=...` for the extension's build, or None (and why on stderr)."""
    mode = os.environ.get("SSDLAB_PGO", "auto").strip().lower()
    if mode not in OFF + REQUIRED + AUTO:
        raise SystemExit(f"ssdlab build: SSDLAB_PGO={os.environ['SSDLAB_PGO']!r} is not understood; "
                         "accepted: 0 (never), 1 (required: fail without it), auto (the default: when it can)")
    if mode in OFF:
        say(f"SSDLAB_PGO={mode}: without profile-guided optimisation")
        return None
    if os.environ.get("CARGO_ENCODED_RUSTFLAGS"):
        # cargo would ignore RUSTFLAGS, and with it the profile.
        reason = "CARGO_ENCODED_RUSTFLAGS is set, which overrides the RUSTFLAGS PGO needs"
        if mode in REQUIRED:
            raise SystemExit(f"ssdlab build: SSDLAB_PGO={mode}, but {reason}")
        say(f"without profile-guided optimisation: {reason}")
        return None
    try:
        return f"-Cprofile-use={train()}"
    except Unavailable as e:
        if mode in REQUIRED:
            raise SystemExit(f"ssdlab build: SSDLAB_PGO={mode}, but {e}") from None
        say(f"without profile-guided optimisation (the simulator runs about 15% slower): {e}")
        return None


def train() -> Path:
    """Build the extension instrumented, run the training through it and merge what it
    counted: the merged profile's path."""
    rustc = os.environ.get("RUSTC", "rustc")
    major = rustc_llvm_major(rustc)
    tools = profdata_candidates(rustc, major)
    added = not tools
    if added:
        tools = add_llvm_tools(rustc, major, tools)
    if not tools:
        raise Unavailable(f"no llvm-profdata found for rustc's LLVM {major} (set LLVM_PROFDATA, "
                          "`rustup component add llvm-tools`, or on Debian `apt-get install llvm-19`)")
    raw = PGO_DIR / "raw"
    # The extension itself, as maturin builds it: generic code is compiled (and named) where
    # it is used, so only the same crates' build matches the profile to the functions.
    env = dict(os.environ, CARGO_TARGET_DIR=str(PGO_DIR / "gen"), PYO3_PYTHON=sys.executable)
    env["RUSTFLAGS"] = with_flag(env.get("RUSTFLAGS"), f"-Cprofile-generate={raw}")
    t = time.monotonic()
    built = subprocess.run(["cargo", "build", "--release", "-p", "ssdlab-py", "--lib"],
                           cwd=ROOT, env=env, capture_output=True, text=True)
    if built.returncode != 0:
        raise Unavailable("the instrumented build failed:\n" + built.stderr[-2000:])
    build_s = time.monotonic() - t
    ext = PGO_DIR / "ext"
    ext.mkdir(parents=True, exist_ok=True)
    built_name, module_name = {"darwin": ("lib_ssdlab.dylib", "_ssdlab.abi3.so"),
                               "win32": ("_ssdlab.dll", "_ssdlab.pyd")}.get(sys.platform,
                                                                           ("lib_ssdlab.so", "_ssdlab.abi3.so"))
    try:
        shutil.copyfile(PGO_DIR / "gen" / "release" / built_name, ext / module_name)
    except OSError as e:
        raise Unavailable(f"the instrumented extension is not where it was expected: {e}") from None
    # Build scripts ran instrumented too: only the training's counts go in.
    shutil.rmtree(raw, ignore_errors=True)
    raw.mkdir(parents=True)
    t = time.monotonic()
    trained = subprocess.run([sys.executable, str(Path(__file__).with_name("pgo_train.py")), str(PRESETS)],
                             env=dict(env, PYTHONPATH=str(ext), LLVM_PROFILE_FILE=str(raw / "train-%p-%m.profraw")),
                             capture_output=True, text=True)
    if trained.returncode != 0:
        raise Unavailable("the training run failed:\n" + trained.stderr[-2000:])
    train_s = time.monotonic() - t
    profiles = sorted(str(p) for p in raw.glob("*.profraw"))
    if not profiles:
        raise Unavailable("the training run wrote no profile")
    merged, tried = merge(tools, profiles, rustc)
    if not merged and not added:
        # Only older tools on the PATH (Debian 12's llvm-profdata is LLVM 14, which cannot read
        # rustc 1.95's profiles): the toolchain's own, if rustup can add it.
        more = add_llvm_tools(rustc, major, tools)
        merged, tried_more = merge(more, profiles, rustc)
        tried += tried_more
    if not merged:
        raise Unavailable(f"no llvm-profdata read rustc's LLVM {major} profiles: " + "; ".join(tried))
    say(f"profile-guided optimisation with {merged[1]} (instrumented build {build_s:.0f} s, "
        f"training {train_s:.0f} s)")
    return merged[0]


def merge(tools: list[str], profiles: list[str], rustc: str) -> tuple[tuple[Path, str] | None, list[str]]:
    """The first of `tools` to merge `profiles` into a profile rustc reads: (the merged
    profile, the tool), or None; and what each tool tried said."""
    merged = PGO_DIR / "ssdlab.profdata"
    tried = []
    for tool in tools:
        merged.unlink(missing_ok=True)
        try:
            m = subprocess.run([tool, "merge", "-o", str(merged), *profiles], capture_output=True, text=True)
        except OSError as e:  # $LLVM_PROFDATA naming nothing runnable, say
            tried.append(f"{tool} ({e.strerror or e})")
            continue
        refused = rustc_refuses(rustc, merged) if m.returncode == 0 else None
        if m.returncode == 0 and not refused:
            return (merged, tool), tried
        why = (f"rustc cannot read its output: {refused}" if m.returncode == 0
               else " ".join(m.stderr.split())[:200])
        tried.append(f"{tool} ({why})")
    return None, tried


def add_llvm_tools(rustc: str, major: int, have: list[str]) -> list[str]:
    """The toolchain's own llvm-profdata (LLVM's tools of rustc's own version), added with
    `rustup component add llvm-tools` where rustup is: the tools found then that `have` lacks."""
    if not shutil.which("rustup"):
        return []
    say("`rustup component add llvm-tools`" + (" (no llvm-profdata found)" if not have else ""))
    try:
        subprocess.run(["rustup", "component", "add", "llvm-tools"], capture_output=True, timeout=600)
    except (OSError, subprocess.TimeoutExpired) as e:
        say(f"`rustup component add llvm-tools` failed: {e}")
        return []
    return [t for t in profdata_candidates(rustc, major) if t not in have]


def rustc_llvm_major(rustc: str) -> int:
    try:
        out = subprocess.run([rustc, "-vV"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        raise Unavailable(f"`{rustc} -vV` failed: {e}") from None
    found = re.search(r"^LLVM version: (\d+)", out, re.M)
    if not found:
        raise Unavailable(f"`{rustc} -vV` names no LLVM version")
    return int(found.group(1))


def profdata_candidates(rustc: str, major: int) -> list[str]:
    """llvm-profdata tools to try, the likeliest to match rustc's LLVM first."""
    found = []
    if os.environ.get("LLVM_PROFDATA"):
        found.append(os.environ["LLVM_PROFDATA"])
    sysroot = subprocess.run([rustc, "--print", "sysroot"], capture_output=True, text=True).stdout.strip()
    if sysroot:
        found += sorted(str(p) for p in Path(sysroot).glob("lib/rustlib/*/bin/llvm-profdata"))
    # The same major first; an older llvm-profdata may read newer raw profiles (LLVM 19's reads
    # LLVM 22's) and write an indexed profile rustc still reads; a newer one may not.
    for n in [major, *range(major - 1, 13, -1), None, *range(major + 1, major + 4)]:
        path = shutil.which(f"llvm-profdata-{n}" if n else "llvm-profdata")
        if path and path not in found:
            found.append(path)
    return found


def rustc_refuses(rustc: str, profile: Path) -> str | None:
    """What rustc says of `profile` if it cannot read it (one it cannot read is only warned
    about, and ignored), None if it reads it."""
    src = PGO_DIR / "check.rs"
    src.write_text("fn main() {}\n")
    r = subprocess.run([rustc, "-O", f"-Cprofile-use={profile}", "--emit=obj", "-o", str(PGO_DIR / "check.o"),
                        str(src)], capture_output=True, text=True)
    if r.returncode == 0 and not r.stderr.strip():
        return None
    return " ".join(r.stderr.split())[:300] or f"exit {r.returncode}"
