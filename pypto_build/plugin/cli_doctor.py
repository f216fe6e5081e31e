"""``pypto-build doctor``: what this machine has to build with — each toolchain of the registry
reports itself (:meth:`~pypto_build.chip_build.toolchains.kind.ToolchainKind.doctor`), then the
compiler launchers and the compile cache, and which toolchain ``auto`` selects."""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pypto_build.errors import ExitCode
from pypto_build.plugin.cli_common import (
    add_json_option,
    human_size,
    print_json,
)
from pypto_build.plugin.cli_setting_options import (
    RUNTIME_ROOT,
    add_setting_options,
    apply_setting_options,
)
from pypto_build.store.location import default_cache_dir

if TYPE_CHECKING:
    from pypto_build.chip_build.toolchains.target import TargetSettings
    from pypto_build.plugin.cli_common import Subparsers
    from pypto_build.plugin.settings import PyptoSettings


def register(commands: Subparsers) -> None:
    """Add ``doctor`` to the main parser's subcommands."""
    parser = commands.add_parser(
        "doctor",
        help="show the toolchains, runtime, launchers and cache this machine has",
        description=(
            "Report the CANN toolkit (or every place searched for one), PyPTO's runtime and the "
            "PTO-ISA root CANN builds are made for (with the folders derived for each platform "
            "and the revisions), the host compiler of the sim toolchain, ccache/sccache and the "
            "compile cache. The runtime settings come from PROJECT's [tool.pypto] (default: the "
            "current folder, when it has one) and the PYPTO_* variables. Exit 0 when some "
            "toolchain is usable, 1 otherwise."
        ),
    )
    parser.add_argument(
        "project", nargs="?", metavar="PROJECT", help="a project folder whose settings to read"
    )
    add_setting_options(parser, (RUNTIME_ROOT,))
    add_json_option(parser, "print JSON on stdout")
    parser.set_defaults(command=_doctor)


def _doctor(args: argparse.Namespace) -> int:
    from pypto_build.plugin.project_target import target_settings
    from pypto_build.plugin.settings import CHIP_NAMES

    project, settings = _doctor_settings(args.project)
    settings = apply_setting_options(settings, args, (RUNTIME_ROOT,))
    report, lines = _doctor_report(target_settings(project, settings), settings.chips or CHIP_NAMES)
    if args.json:
        print_json(report)
    else:
        print("\n".join(lines))
    return ExitCode.OK if report["auto_toolchain"] is not None else ExitCode.PROGRAM_ERROR


def _doctor_settings(project: str | None) -> tuple[Path, PyptoSettings]:
    """The settings of ``project`` (a folder that must have them), else of the current folder
    when its ``pyproject.toml`` has a ``[tool.pypto]`` table, else the defaults; the
    environment applied in every case."""
    from pypto_build.plugin.settings import (
        PyptoSettings,
        SettingsError,
        apply_environment,
        load_settings,
    )

    folder = Path(project or ".")
    if project is None and not _has_settings(folder / "pyproject.toml"):
        return folder, apply_environment(PyptoSettings())
    if not (folder / "pyproject.toml").is_file():
        raise SettingsError(f"{folder}: no pyproject.toml; give a project folder")
    return folder, load_settings(folder)


def _has_settings(pyproject: Path) -> bool:
    """Whether ``pyproject`` exists with a ``[tool.pypto]`` table (or is broken, for
    :func:`load_settings` to report)."""
    from pypto_build.plugin.settings import SettingsError, pypto_table, read_pyproject

    if not pyproject.is_file():
        return False
    try:
        return pypto_table(read_pyproject(pyproject), pyproject) is not None
    except SettingsError:
        return True


def _doctor_report(
    target: TargetSettings, chips: Sequence[str]
) -> tuple[dict[str, Any], list[str]]:
    """What ``doctor`` reports, as its ``--json`` document and as its lines: each toolchain's
    section in the registry's order, the launchers, the cache, and what ``auto`` selects (the
    first usable toolchain)."""
    from pypto_build.chip_build.compile_cache.cache import CompileCache
    from pypto_build.chip_build.toolchains.kind import ToolchainRequest
    from pypto_build.chip_build.toolchains.registry import AUTO, TOOLCHAINS, toolchain_kind

    request = ToolchainRequest(os.environ, target=target)
    sections = {
        entry.name: toolchain_kind(entry.name).doctor(request, chips) for entry in TOOLCHAINS
    }
    auto = next((name for name, section in sections.items() if section.usable), None)
    launchers = _launchers_report()
    stats = CompileCache(default_cache_dir()).stats()
    report: dict[str, Any] = {
        "auto_toolchain": auto,
        "cache": {"root": str(stats.root), "entries": stats.entries, "bytes": stats.size},
        "launchers": launchers,
    }
    lines: list[str] = []
    for section in sections.values():
        report.update(section.document)
        lines += section.lines
    for name, launcher in launchers.items():
        found = "not found" if launcher is None else f"{launcher['path']} ({launcher['version']})"
        lines.append(f"{name}: {found}")
    lines.append(f"cache: {stats.root}, {stats.entries} entries, {human_size(stats.size)}")
    lines.append(f"toolchain '{AUTO}' selects: {auto or 'nothing usable'}")
    return report, lines


def _launchers_report() -> dict[str, Any]:
    """Each known compiler launcher: where it is and its version, or None when not found."""
    from pypto_build.chip_build.toolchains import ToolchainError, find_launchers
    from pypto_build.chip_build.toolchains.base import first_output_line

    launchers: dict[str, Any] = {}
    for name, path in find_launchers().items():
        if path is None:
            launchers[name] = None
            continue
        try:
            version = first_output_line([str(path), "--version"])
        except ToolchainError as exc:
            version = f"unknown ({exc})"
        launchers[name] = {"path": str(path), "version": version}
    return launchers
