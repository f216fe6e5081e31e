"""What every command module of ``pypto-build`` shares: the command line's usage error, the
options several commands take, and how results and errors are printed (the exit codes and the
error root are :mod:`pypto_build.errors`).

The commands live in several modules (:mod:`~pypto_build.plugin.cli`,
:mod:`~pypto_build.plugin.cli_build`, :mod:`~pypto_build.plugin.cli_cache`,
:mod:`~pypto_build.plugin.cli_doctor`, :mod:`~pypto_build.plugin.cli_run`,
:mod:`~pypto_build.plugin.cli_reproducible`); an option such as
``--json`` or ``--chip`` must read and validate alike in all of them, and every command reports
in one format, so each is defined once here. This module imports no engine code, so every
command module can use it without cycles.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Protocol, TextIO

from pypto_build import PROG as PROG
from pypto_build.errors import PyptoUsageError

if TYPE_CHECKING:
    from typing import TypeAlias

    #: The main parser's subcommands, as the command modules' ``register`` functions get them.
    Subparsers: TypeAlias = argparse._SubParsersAction[argparse.ArgumentParser]


class HasRender(Protocol):
    """A located message that formats itself (a build warning)."""

    def render(self) -> str: ...


class UsageError(PyptoUsageError):
    """The command line asks for something that does not exist (a file, a class, a pass)."""


def whole_number(text: str) -> int:
    """An argparse type: ``text`` as an integer (callers add their own range check)."""
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a whole number") from None


def add_json_option(
    parser: argparse.ArgumentParser, help: str = "print a JSON summary on stdout"
) -> None:
    """``--json``: print a document for machines instead of the human summary."""
    parser.add_argument("--json", action="store_true", help=help)


def add_verbose_option(parser: argparse.ArgumentParser, help: str) -> None:
    """``-v``/``--verbose``: say on stderr what the command does and how long each step
    takes."""
    parser.add_argument("-v", "--verbose", action="store_true", help=help)


def verbose_stream(args: argparse.Namespace) -> TextIO | None:
    """stderr under ``--verbose``, else None: where a command's steps are told."""
    return sys.stderr if args.verbose else None


@contextlib.contextmanager
def timed(stream: TextIO | None, what: str) -> Iterator[None]:
    """Print ``pypto-build: <what> (<seconds> s)`` on ``stream`` once the block has run
    (nothing without a stream, or when the block fails: its error says enough)."""
    started = time.perf_counter()
    yield
    say_timed(stream, what, started)


def say_timed(stream: TextIO | None, what: str, started: float) -> None:
    """Print ``pypto-build: <what> (<seconds since started> s)`` on ``stream``, if any: what
    :func:`timed` prints, for a step that knows what it did only once it has run."""
    if stream is not None:
        print(f"{PROG}: {what} ({time.perf_counter() - started:.2f} s)", file=stream, flush=True)


def add_chip_option(parser: argparse.ArgumentParser, help: str, *, repeatable: bool) -> None:
    """``--chip CHIP``, one of the known chips; a repeatable one collects ``args.chips`` (empty
    when not given), a single one sets ``args.chip`` (None when not given)."""
    from pypto_build.chip_build.chips import CHIPS

    names = [chip.name for chip in CHIPS]
    if repeatable:
        parser.add_argument(
            "--chip",
            dest="chips",
            action="append",
            default=[],
            choices=names,
            metavar="CHIP",
            help=help,
        )
    else:
        parser.add_argument("--chip", choices=names, metavar="CHIP", help=help)


def print_json(document: object) -> None:
    """Print ``document`` on stdout as every ``--json`` output is: indented, keys sorted."""
    print(json.dumps(document, indent=2, sort_keys=True))


def print_warnings(warnings: Iterable[HasRender]) -> None:
    """Print what a render found that will fail later (``path:line:col: warning: ...``) on
    stderr."""
    for warning in warnings:
        print(warning.render(), file=sys.stderr)


def print_error(message: str) -> None:
    """Print ``pypto-build: error: <message>`` on stderr."""
    print(f"{PROG}: error: {message}", file=sys.stderr)


def print_warning(message: str) -> None:
    """Print ``pypto-build: warning: <message>`` on stderr at once (a long build follows)."""
    print(f"{PROG}: warning: {message}", file=sys.stderr, flush=True)


def human_size(size: int) -> str:
    """``512 B``, ``3.4 KiB``, ``12.0 MiB``, ``1.2 GiB``."""
    if size < 1024:
        return f"{size} B"
    value = size / 1024
    for unit in ("KiB", "MiB"):
        if value < 1024:
            return f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GiB"
