"""The ssdlab command: one module per command (`run`: drives, run, synth-trace; `replay`: replay,
trace stats; `serve`; `review`: review, procedure; `validate`; `crashtest`; `sweep`; `fit`), what they
share in `common`, and here the parser they make together and `main`."""

from __future__ import annotations

import argparse
import sys

from ..errors import SsdlabError


def build_parser() -> argparse.ArgumentParser:
    from .. import __version__
    p = argparse.ArgumentParser(prog="ssdlab", description="A software SSD: model NAND-flash drives and run workloads on them.")
    p.add_argument("--version", action="version", version=f"ssdlab {__version__}")
    sub = p.add_subparsers(dest="command", required=True)
    from . import crashtest, fit, replay, review, run, serve, sweep, validate

    run.add_parsers(sub)
    replay.add_parsers(sub)
    serve.add_parser(sub)
    review.add_parsers(sub)
    validate.add_parser(sub)
    crashtest.add_parser(sub)
    sweep.add_parser(sub)
    fit.add_parser(sub)
    return p


def _negative_values_joined(argv: list[str]) -> list[str]:
    """`--bs -4k` as `--bs=-4k`: argparse takes a value starting with '-' for an option and
    says only "expected one argument"; joined, the option's own check names what is wrong
    with the value (issue 73 item 7). Only a long option followed by '-' and a digit."""
    out: list[str] = []
    for a in argv:
        if out and out[-1].startswith("--") and "=" not in out[-1] and len(a) > 1 and a[0] == "-" and (a[1].isdigit() or a[1] == "."):
            out[-1] = f"{out[-1]}={a}"
        else:
            out.append(a)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    argv = sys.argv[1:] if argv is None else list(argv)
    for a in argv:
        # argparse takes `--opt=--` for an empty list, not the value "--" (found by the CLI fuzz test).
        if a.startswith("--") and a.endswith("=--"):
            parser.error(f"{a}: '--' is not a value; accepted: {a[:-3]} VALUE")
    argv = _negative_values_joined(argv)
    if argv[:1] == ["run"]:
        from .run import _fio_values_joined
        run_parser = next(a for a in parser._subparsers._group_actions if a.dest == "command").choices["run"]
        argv = ["run", *_fio_values_joined(argv[1:], set(run_parser._option_string_actions))]
    args, extra = parser.parse_known_args(argv)
    if extra and args.command != "run":
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    # `ssdlab run` takes any fio option as fio's command line spells it (--bsrange=512-4k,
    # --ss iops:1%): the job-file reader checks them.
    args.fio_options = extra
    try:
        return args.func(args)
    except SsdlabError as e:
        print(f"ssdlab: error: {e}", file=sys.stderr)
        return 2
    except OSError as e:  # an output file or directory that cannot be written
        print(f"ssdlab: error: {e.filename or ''}: {e.strerror or e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("ssdlab: interrupted", file=sys.stderr)
        return 130
    except BaseException as e:  # a Rust panic arrives as pyo3's PanicException
        if type(e).__name__ != "PanicException":
            raise
        seed = getattr(args, "seed", None)
        print(f"ssdlab: internal error: {e}. This is a bug in ssdlab, not in your input; please report it "
              f"with the command line (seed {seed or 0}) and the drive file.", file=sys.stderr)
        return 3
