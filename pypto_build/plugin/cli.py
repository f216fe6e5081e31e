"""The ``pypto-build`` command line.

A thin adapter: it parses arguments, calls the program model and maps the outcome onto
documented exit codes (``docs/cli.md``). The front end, printer and passes are imported only by
the command that needs them, so ``--version`` and ``--help`` stay fast and keep working even
when one of those parts fails to import.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from pypto_build import __version__
from pypto_build.errors import ExitCode, PyptoError, describe_os_error
from pypto_build.gc_pause import pauses_collector
from pypto_build.plugin import cli_build, cli_cache, cli_doctor, cli_reproducible, cli_run
from pypto_build.plugin.cli_common import (
    PROG,
    UsageError,
    add_chip_option,
    add_json_option,
    add_verbose_option,
    print_error,
    print_json,
    print_warnings,
    say_timed,
    timed,
    verbose_stream,
)

if TYPE_CHECKING:
    from pypto_build.chip_build.subbuild import SourceProgram
    from pypto_build.lowering.ir import Program
    from pypto_build.lowering.passes.base import PassManager
    from pypto_build.plugin.cli_common import Subparsers

__all__ = ["PROG", "ExitCode", "UsageError", "main"]


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
        print_error("a command is required")
        return ExitCode.USAGE_ERROR
    try:
        status = command(args)
        sys.stdout.flush()  # inside the try: a reader that went away shows up here
        return status
    except Exception as err:
        return _failed(err)


def _failed(err: Exception) -> int:
    """Report a command's failure as one message and return its exit code.

    Every failure of the user's input or machine is a :class:`~pypto_build.errors.PyptoError`
    that knows its status and its text; what else reaches here is a bug. The lowering's
    :class:`~pypto_build.lowering.diagnostics.InternalError` is imported once a command has
    failed, rather than when the command line starts: ``--version`` and ``--help`` must not
    load the engine.
    """
    from pypto_build.lowering.diagnostics import InternalError

    if isinstance(err, PyptoError):
        print(err.report(PROG), file=sys.stderr)
        return err.exit_code
    if isinstance(err, InternalError):
        print(f"{PROG}: {err}", file=sys.stderr)
        return ExitCode.INTERNAL_ERROR
    if isinstance(err, RecursionError):
        print(f"{PROG}: {InternalError(_recursion_report(err))}", file=sys.stderr)
        return ExitCode.INTERNAL_ERROR
    if isinstance(err, BrokenPipeError):
        # The reader went away (`pypto-build doctor --json | head`): not an error of ours.
        # Point stdout at /dev/null so the interpreter's final flush cannot fail again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return ExitCode.OK
    if isinstance(err, OSError):
        # A path the command names that cannot be read, written or created (too long, under a
        # regular file, on a read-only file system): the path and the reason.
        print_error(describe_os_error(err))
        return ExitCode.USAGE_ERROR
    # Whatever the input, a user sees one message, never a traceback: anything not mapped
    # above is a bug of pypto-build, reported as one.
    detail = f"{type(err).__name__}: {err}"
    print(f"{PROG}: {InternalError(detail)}", file=sys.stderr)
    return ExitCode.INTERNAL_ERROR


def _recursion_report(err: RecursionError) -> str:
    """What to report for a recursion past Python's limit, naming the function it happened in.

    The front end reports a program nested too deeply to parse as a program error; a program
    it accepts that a later part cannot handle is a limit of pypto-build, not a mistake in the
    program. Its thousand-frame traceback helps nobody: the innermost function is what a bug
    report needs.
    """
    import traceback

    innermost = None
    for frame, _ in traceback.walk_tb(err.__traceback__):
        innermost = frame
    where = (
        ""
        if innermost is None
        else f" in {innermost.f_globals.get('__name__', '?')}.{innermost.f_code.co_qualname}"
    )
    return (
        f"Python's recursion limit ({sys.getrecursionlimit()}) was exceeded{where}; the "
        "program is too large or too deeply nested for this part of pypto-build"
    )


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
    _add_path(lower)
    lower.add_argument(
        "--class",
        dest="class_name",
        metavar="NAME",
        help="print only the program class NAME",
    )
    lower.add_argument(
        "--after",
        metavar="PASS",
        help=(
            "run the pass pipeline up to and including PASS first ('all': every pass, and the "
            "checks a render makes, so it refuses exactly what a render refuses)"
        ),
    )
    add_chip_option(
        lower, "lower for a build targeting CHIP (repeatable; default: any chip)", repeatable=True
    )
    add_verbose_option(lower, "print the time of parsing and of the passes on stderr")
    lower.set_defaults(command=_lower)
    _add_render(commands)
    _add_check_render(commands)
    cli_build.register(commands)
    cli_cache.register(commands)
    cli_doctor.register(commands)
    cli_run.register(commands)
    cli_reproducible.register(commands)
    return parser


def _add_path(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", metavar="PATH", help="a Python file holding @pl.program classes")


def _add_program_options(parser: argparse.ArgumentParser) -> None:
    """PATH, --chip and --source-root, shared by render and check-render."""
    _add_path(parser)
    add_chip_option(
        parser,
        "render for CHIP (repeatable; default: every chip that supports the program)",
        repeatable=True,
    )
    parser.add_argument(
        "--source-root",
        metavar="DIR",
        help="the folder input paths are recorded relative to (default: PATH's folder)",
    )
    add_json_option(parser)
    add_verbose_option(parser, "print each step and its time on stderr")


def _add_render(commands: Subparsers) -> None:
    render = commands.add_parser(
        "render",
        help="render the per-chip sub-build trees of a program file",
        description=(
            "Parse and lower PATH, then write one sub-build tree per chip into DIR/<chip>: "
            "orchestration sources, kernels, kernel_config.py, the HOST orchestrator and a "
            "manifest. DIR is replaced as a whole."
        ),
    )
    _add_program_options(render)
    render.add_argument("--out", required=True, metavar="DIR", help="the output directory")
    render.set_defaults(command=_render)


def _add_check_render(commands: Subparsers) -> None:
    check = commands.add_parser(
        "check-render",
        help="check that renders are reproducible and that both rails render the same kernels",
        description=(
            "Compare the HOST- and CHIP-rail renders of every builtin kernel, two renders of "
            "the whole tree made under different paths and environments, and optionally a "
            "fresh render with an existing tree. Exit 0 when all are identical, 1 otherwise, "
            "with a report per difference."
        ),
    )
    _add_program_options(check)
    check.add_argument(
        "--report",
        default="check-render-report",
        metavar="DIR",
        help="where reports of differences go (default: ./check-render-report)",
    )
    check.add_argument(
        "--against", metavar="DIR", help="also compare a fresh render with the tree in DIR"
    )
    check.set_defaults(command=_check_render)


def _lower(args: argparse.Namespace) -> int:
    from pypto_build.files import file_problem
    from pypto_build.lowering.frontend import parse_file
    from pypto_build.lowering.lower import lower_programs
    from pypto_build.lowering.printer import print_programs

    problem = file_problem(Path(args.path))
    if problem is not None:
        raise UsageError(f"{args.path}: {problem}")
    chips = tuple(dict.fromkeys(args.chips))
    pipeline = None if args.after is None else _pipeline(args.after, chips)
    verbose = verbose_stream(args)
    with timed(verbose, f"parsed {args.path}"):
        programs = parse_file(args.path)
    if not programs:
        print_error(f"{args.path} defines no @pl.program class")
        return ExitCode.PROGRAM_ERROR
    selected = _select(programs, args.class_name, args.path)
    if args.after is not None:
        with timed(verbose, f"ran the passes up to {args.after} on {len(selected)} program(s)"):
            if args.after == "all":
                selected = list(lower_programs(selected, chips))
            elif pipeline is not None:
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


def _pipeline(after: str, chips: tuple[str, ...]) -> PassManager:
    """The default pipeline, cut after the pass named ``after`` (``all``: not cut)."""
    from pypto_build.lowering.passes import default_pipeline

    pipeline = default_pipeline(chips)
    if after == "all":
        return pipeline
    if after not in pipeline.names():
        known = ", ".join(pipeline.names())
        raise UsageError(f"--after: unknown pass '{after}'; passes (in order): {known}, all")
    return pipeline.until(after)


def _program_inputs(
    args: argparse.Namespace,
) -> tuple[Path, Path, tuple[str, ...], tuple[SourceProgram, ...]]:
    """The program file, source root, chips and lowered programs a render command names."""
    from pypto_build.chip_build.render_errors import NoPrograms
    from pypto_build.chip_build.subbuild import lower_file, lower_for_default_chips
    from pypto_build.files import file_problem

    path = Path(args.path)
    problem = file_problem(path)
    if problem is not None:
        raise UsageError(f"{args.path}: {problem}")
    source_root = path.parent if args.source_root is None else Path(args.source_root)
    if not source_root.is_dir():
        raise UsageError(f"--source-root: {args.source_root}: no such directory")
    chips = tuple(dict.fromkeys(args.chips))
    started = time.perf_counter()
    if chips:
        programs = lower_file(path, chips)
    else:
        chips, programs = lower_for_default_chips(path)
    say_timed(verbose_stream(args), f"lowered {path} for {', '.join(chips)}", started)
    if not programs:
        raise NoPrograms(path)
    return path, source_root, chips, programs


@pauses_collector  # for the whole command, as for chip_build.build.render
def _render(args: argparse.Namespace) -> int:
    from pypto_build.chip_build.subbuild import render_subbuilds

    _, source_root, chips, programs = _program_inputs(args)
    out = Path(args.out)
    with timed(verbose_stream(args), f"rendered {len(programs)} program(s) into {out}"):
        result = render_subbuilds(programs, chips, out, source_root=source_root)
    print_warnings(result.warnings)
    if args.json:
        summary = {"out": str(out), "chips": {chip: list(result.paths(chip)) for chip in chips}}
        print_json(summary)
    else:
        for chip in chips:
            print(f"{chip}: {len(result.paths(chip))} files in {out / chip}")
    return ExitCode.OK


@pauses_collector
def _check_render(args: argparse.Namespace) -> int:
    from pypto_build.chip_build.determinism.diffreport import find_diffoscope
    from pypto_build.chip_build.determinism.render import check_render
    from pypto_build.files import IrregularEntry

    path, source_root, chips, programs = _program_inputs(args)
    against = None if args.against is None else Path(args.against)
    if against is not None and not against.is_dir():
        raise UsageError(f"--against: {args.against}: no such directory")
    try:
        with timed(verbose_stream(args), "rendered and compared the trees"):
            result = check_render(
                path,
                programs,
                chips,
                source_root=source_root,
                report_dir=Path(args.report),
                against=against,
                diffoscope=find_diffoscope(),
            )
    except IrregularEntry as exc:  # a fresh render holds none: it is in --against's tree
        raise UsageError(
            f"--against: {args.against} holds a {exc.what} ({exc.relative}), which no render "
            "writes; it is not followed"
        ) from None
    if args.json:
        print_json(result.to_json())
    else:
        for check in result.checks:
            print(f"{'ok' if check.passed else 'FAILED'}: {check.name}: {check.description}")
            if check.error:
                print(f"  {check.error}")
            for label, paths in (
                ("only in the first tree", check.diff.only_left),
                ("only in the second tree", check.diff.only_right),
                ("differs", check.diff.changed),
            ):
                for difference in paths:
                    print(f"  {label}: {difference}")
            if check.report is not None:
                if check.report.note:
                    print(f"  {check.report.note}")
                for report in check.report.files:
                    print(f"  report: {report}")
    return ExitCode.OK if result.passed else ExitCode.PROGRAM_ERROR
