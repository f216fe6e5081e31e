"""The ``pypto-build`` command line.

A thin adapter: it parses arguments, calls the program model and maps the outcome onto
documented exit codes (``docs/cli.md``). The front end, printer and passes are imported only by
the command that needs them, so ``--version`` and ``--help`` stay fast and keep working even
when one of those parts fails to import.
"""

from __future__ import annotations

import argparse
import enum
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from pypto_build import __version__
from pypto_build.lowering.diagnostics import InternalError, ProgramError

if TYPE_CHECKING:
    from pypto_build.lowering.ir import Program
    from pypto_build.lowering.passes.base import PassManager

PROG = "pypto-build"


class ExitCode(enum.IntEnum):
    """The process exit status, as documented in docs/cli.md."""

    OK = 0
    PROGRAM_ERROR = 1
    USAGE_ERROR = 2
    INTERNAL_ERROR = 3


class UsageError(Exception):
    """The command line asks for something that does not exist (a file, a class, a pass)."""


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line on ``argv`` (default: ``sys.argv[1:]``) and return the exit code."""
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as stop:  # --help, --version and argparse's own usage errors
        return _exit_status(stop.code)
    command: Callable[[argparse.Namespace], int] | None = getattr(args, "command", None)
    if command is None:
        parser.print_usage(sys.stderr)
        print(f"{PROG}: error: a command is required", file=sys.stderr)
        return ExitCode.USAGE_ERROR
    try:
        return command(args)
    except UsageError as err:
        print(f"{PROG}: error: {err}", file=sys.stderr)
        return ExitCode.USAGE_ERROR
    except ProgramError as err:
        print(err.render(), file=sys.stderr)
        return ExitCode.PROGRAM_ERROR
    except InternalError as err:
        print(f"{PROG}: {err}", file=sys.stderr)
        return ExitCode.INTERNAL_ERROR


def _exit_status(code: str | int | None) -> int:
    """argparse exits with 0 after --help/--version and with 2 on a usage error."""
    return code if isinstance(code, int) else ExitCode.USAGE_ERROR


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Build plugin and kernel packaging service for PyPTO model packages.",
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    commands = parser.add_subparsers(title="commands", metavar="COMMAND")
    lower = commands.add_parser(
        "lower",
        help="parse a program file and print its programs as IR",
        description=(
            "Parse PATH statically (it is never imported) and print each @pl.program class it "
            "defines, optionally after running the pass pipeline up to a pass."
        ),
    )
    lower.add_argument("path", metavar="PATH", help="a Python file holding @pl.program classes")
    lower.add_argument(
        "--class",
        dest="class_name",
        metavar="NAME",
        help="print only the program class NAME",
    )
    lower.add_argument(
        "--after",
        metavar="PASS",
        help="run the pass pipeline up to and including PASS ('all' for every pass) first",
    )
    lower.set_defaults(command=_lower)
    return parser


def _lower(args: argparse.Namespace) -> int:
    from pypto_build.lowering.frontend import parse_file
    from pypto_build.lowering.printer import print_programs

    if not Path(args.path).is_file():
        raise UsageError(f"{args.path}: no such file")
    pipeline = None if args.after is None else _pipeline(args.after)
    programs = parse_file(args.path)
    if not programs:
        print(f"{PROG}: error: {args.path} defines no @pl.program class", file=sys.stderr)
        return ExitCode.PROGRAM_ERROR
    selected = _select(programs, args.class_name, args.path)
    if pipeline is not None:
        selected = [pipeline.run(program) for program in selected]
    text = print_programs(selected)
    sys.stdout.write(text if text.endswith("\n") else text + "\n")
    return ExitCode.OK


def _select(programs: Sequence[Program], class_name: str | None, path: str) -> list[Program]:
    if class_name is None:
        return list(programs)
    chosen = [program for program in programs if program.name == class_name]
    if not chosen:
        known = ", ".join(program.name for program in programs)
        raise UsageError(f"{path} has no @pl.program class '{class_name}'; classes: {known}")
    return chosen


def _pipeline(after: str) -> PassManager:
    """The default pipeline, cut after the pass named ``after`` (``all``: not cut)."""
    from pypto_build.lowering.passes import default_pipeline

    pipeline = default_pipeline()
    if after == "all":
        return pipeline
    if after not in pipeline.names():
        known = ", ".join(pipeline.names())
        raise UsageError(f"--after: unknown pass '{after}'; passes (in order): {known}, all")
    return pipeline.until(after)
