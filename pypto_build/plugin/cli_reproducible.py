"""``pypto-build check-reproducible``: build a project's wheel twice and prove the two identical.

A thin adapter over :mod:`pypto_build.chip_build.determinism.wheels`: it checks the project
folder, runs the check and prints the verdict, every difference and the report's files (or, with
``--json``, one document). Exit 0 when the wheels are identical; 1 when they differ or a build
fails; 2 when the check cannot run (no project there, build tools missing from the environment).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from pypto_build.errors import ExitCode
from pypto_build.plugin.cli_common import UsageError, add_json_option, print_json

if TYPE_CHECKING:
    from pypto_build.chip_build.determinism.wheels import ReproducibleResult
    from pypto_build.plugin.cli_common import Subparsers


def register(commands: Subparsers) -> None:
    """Add ``check-reproducible`` to the main parser's subcommands."""
    parser = commands.add_parser(
        "check-reproducible",
        help="build a project's wheel twice and check that the two are byte-identical",
        description=(
            "Copy PROJECT to two folders and build its wheel in each with `pip wheel "
            "--no-deps --no-build-isolation`, varying the path, working and temporary "
            "directories, PYTHONHASHSEED, locale, time zone, umask and job count, each with "
            "an empty compile cache. Exit 0 when the wheels are byte-identical, 1 when they "
            "differ (both wheels and a diffoscope or built-in report go to --report) or a build "
            "fails."
        ),
    )
    parser.add_argument(
        "project",
        nargs="?",
        default=".",
        metavar="PROJECT",
        help="the project folder, with its pyproject.toml (default: the current folder)",
    )
    parser.add_argument(
        "--report",
        default="check-reproducible-report",
        metavar="DIR",
        help="where the wheels and the report go when they differ "
        "(default: ./check-reproducible-report)",
    )
    add_json_option(parser)
    parser.set_defaults(command=_check_reproducible)


def _check_reproducible(args: argparse.Namespace) -> int:
    from pypto_build.chip_build.determinism.diffreport import find_diffoscope
    from pypto_build.chip_build.determinism.wheels import check_reproducible

    project = Path(args.project)
    if not (project / "pyproject.toml").is_file():
        raise UsageError(f"{args.project}: no pyproject.toml; give a project folder")
    result = check_reproducible(project, report_dir=Path(args.report), diffoscope=find_diffoscope())
    if args.json:
        print_json(result.to_json())
    else:
        _print_result(result)
    return ExitCode.OK if result.passed else ExitCode.PROGRAM_ERROR


def _print_result(result: ReproducibleResult) -> None:
    check = result.check
    name = " and ".join(sorted(set(check.names)))
    if check.passed:
        print(f"ok: two builds of {name} are byte-identical (sha256 {check.sha256[0]})")
        return
    print(f"FAILED: two builds of {name} differ")
    diff = check.diff
    for label, members in (
        ("only in the first wheel", diff.only_left),
        ("only in the second wheel", diff.only_right),
        ("content differs", diff.changed),
        ("archive entry differs", diff.metadata),
    ):
        for member in members:
            print(f"  {label}: {member}")
    if diff.reordered:
        print("  the members are in a different order")
    for wheel in check.kept:
        print(f"  wheel: {wheel}")
    if check.report is not None:
        if check.report.note:
            print(f"  {check.report.note}")
        for report in check.report.files:
            print(f"  report: {report}")
