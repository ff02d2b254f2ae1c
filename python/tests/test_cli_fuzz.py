"""Issue 73, item 5's must-show: hostile values for the CLI's flags (empty, non-numbers, NaN and
infinities, negatives, huge, tiny, control characters, paths that cannot be used, a binary file
where text is read) give one clear error and exit 2, or run; never a traceback. The flags are
taken from the parser itself, so a flag added later is fuzzed too."""

from __future__ import annotations

import argparse
import subprocess
import sys

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ssdlab.cli import build_parser

HOSTILE = ["", " ", "nan", "-nan", "inf", "-inf", "1e400", "-1", "-4k", "0", "1e-9", "0x10", "4kk", "k",
           "1,2", "3:", "=", "--", "999999999999999999999999", "\x01", "é", "../..", "/proc/no/such",
           "/dev/null/x", "/", "{binary}", "{dir}", "a=b", "read_retry=", "seq", "1%", "-0.5"]

# Each command's arguments that make the rest of its line mean something (a drive, a trace),
# and little work if every fuzzed flag turns out valid.
BASE = {
    "run": ["--drive", "crucial-m4-128", "--rw", "randread", "--runtime", "1", "--quiet"],
    "replay": ["{trace}", "--drive", "crucial-m4-128", "--quiet"],
    "crashtest": ["--drive", "crucial-m4-128", "--cycles", "1", "--commands", "20"],
    "synth-trace": ["light-2011", "--out", "{out}"],
    "drives": [],
    "crypto-erase": [],
}


def _flags(command: str) -> list[argparse.Action]:
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return [a for a in sub.choices[command]._actions
            if a.option_strings and a.option_strings[0] not in ("-h", "--help", "--quiet")]


FLAGS = {c: _flags(c) for c in BASE}


def _prepare(tmp) -> dict:
    binary = tmp / "binary.bin"
    binary.write_bytes(bytes(range(256)) * 4)
    trace = tmp / "t.csv"
    trace.write_text("128166372003061629,hm,0,Write,3446592512,4096,1331\n"
                     "128166372016382155,hm,0,Read,3446592512,4096,1331\n")
    return {"{binary}": str(binary), "{dir}": str(tmp), "{trace}": str(trace), "{out}": str(tmp / "o.csv")}


def _run(argv: list[str], tmp, subst: dict) -> subprocess.CompletedProcess:
    argv = list(argv)
    for k in range(len(argv)):
        for key, val in subst.items():
            argv[k] = argv[k].replace(key, val)
    return subprocess.run([sys.executable, "-m", "ssdlab.cli", *argv], capture_output=True, text=True,
                          timeout=120, cwd=tmp, errors="replace")


def test_every_base_line_runs(tmp_path):
    """The lines the fuzzed flags are added to work alone, so that a refusal below is the flag's."""
    subst = _prepare(tmp_path)
    for command, base in BASE.items():
        if command == "crypto-erase":
            continue  # needs --store: every line of it is a fuzzed --store
        p = _run([command, *base], tmp_path, subst)
        assert p.returncode == 0, (command, p.stderr[-2000:])


@st.composite
def command_lines(draw):
    command = draw(st.sampled_from(sorted(BASE)))
    line = [command, *BASE[command]]
    for action in draw(st.lists(st.sampled_from(FLAGS[command]), min_size=1, max_size=2, unique_by=id)):
        flag = action.option_strings[-1]
        if action.nargs == 0:
            line.append(flag)
        else:
            value = draw(st.sampled_from(HOSTILE))
            line += [flag, value] if draw(st.booleans()) else [f"{flag}={value}"]
    return line


@settings(max_examples=150, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(line=command_lines())
def test_hostile_flag_values_never_give_a_traceback(tmp_path_factory, line):
    tmp = tmp_path_factory.mktemp("fuzz")
    try:
        p = _run(line, tmp, _prepare(tmp))
    except subprocess.TimeoutExpired:
        raise AssertionError(f"{line}: still running after 120 s") from None
    argv = line
    assert "Traceback" not in p.stderr, (argv, p.stderr[-2000:])
    assert p.returncode in (0, 2), (argv, p.returncode, p.stderr[-2000:])
    if p.returncode == 2:
        lines = [ln for ln in p.stderr.splitlines() if "error" in ln]
        assert lines, (argv, p.stderr)
