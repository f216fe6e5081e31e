"""``pypto-build build``: lower, render and compile a project's (or program files') kernels.

A thin adapter over the engine, through :mod:`pypto_build.plugin.project_build` as the hatch
hook builds, so both make the same kernels from the same settings: it reads the settings (the
options that set one are named by its key, :mod:`.cli_setting_options`), maps failures onto the
documented exit codes and prints either a short human summary or, with ``--json``, a document
for machines. The engine (and with it the program model) is imported only when it runs, so
``--help`` and ``--version`` stay fast.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from pypto_build.chip_build.toolchains.registry import TOOLCHAIN_NAMES, names_text
from pypto_build.errors import ExitCode
from pypto_build.plugin.cli_common import (
    UsageError,
    add_json_option,
    print_json,
    print_warning,
    print_warnings,
    whole_number,
)
from pypto_build.plugin.cli_setting_options import (
    RUNTIME_ROOT,
    SettingOption,
    add_config_setting_option,
    add_setting_options,
    apply_setting_options,
)

if TYPE_CHECKING:
    from pypto_build.chip_build.build import BuildResult
    from pypto_build.chip_build.compile_cache.cache import CompileCache
    from pypto_build.chip_build.compile_cache.remote import RemoteSummary
    from pypto_build.chip_build.toolchains import Toolchain
    from pypto_build.plugin.cli_common import Subparsers
    from pypto_build.plugin.settings import PyptoSettings


def _positive_int(text: str) -> int:
    value = whole_number(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value}: at least 1 is needed")
    return value


def _chip_names() -> tuple[str, ...]:
    from pypto_build.chip_build.chips import CHIPS

    return tuple(chip.name for chip in CHIPS)


#: The options that set a setting, in the order they are applied.
SETTING_OPTIONS = (
    SettingOption(
        "chips",
        "build for CHIP (repeatable; default: the settings' chips)",
        aliases=("--chip",),
        metavar="CHIP",
        choices=_chip_names(),
        repeatable=True,
        value=lambda chips: list(dict.fromkeys(chips)),
    ),
    SettingOption("toolchain", names_text(), choices=TOOLCHAIN_NAMES),
    SettingOption(
        "jobs", "compiler processes at once", aliases=("-j",), metavar="N", parse=_positive_int
    ),
    SettingOption(
        "compiler_launcher",
        "compiler launcher, e.g. ccache or sccache ('' for none)",
        aliases=("--launcher",),
        metavar="CMD",
        value=lambda command: command.strip() or None,
    ),
    SettingOption(
        "verbose",
        "print each compile's command lines and wall time on stderr (setting verbose); the "
        "log is OUT/.pypto-build-logs/<chip>.log",
        aliases=("-v",),
        parse=None,
    ),
    RUNTIME_ROOT,
)


def register(commands: Subparsers) -> None:
    """Add ``build`` to the main parser's subcommands."""
    parser = commands.add_parser(
        "build",
        help="lower, render and compile a project's (or a program file's) kernels",
        description=(
            "Build a project folder whose pyproject.toml has a [tool.pypto] table, or program "
            "files. Every program is lowered, rendered into OUT/<chip> and compiled with the "
            "chosen toolchain through the compile cache. Options override the settings, which "
            "the PYPTO_* environment variables override in turn."
        ),
    )
    parser.add_argument(
        "targets",
        nargs="*",
        metavar="PROJECT_OR_PROGRAM",
        help="one project folder, or program files (default: the current folder)",
    )
    parser.add_argument(
        "--source-root",
        metavar="DIR",
        help=(
            "with program files: the folder inputs are recorded relative to, which must hold "
            "them (default: the first file's folder)"
        ),
    )
    parser.add_argument(
        "--out", metavar="DIR", help="output folder (default: <project>/build/pypto)"
    )
    parser.add_argument("--no-cache", action="store_true", help="do not use the compile cache")
    parser.add_argument(
        "--stamp",
        metavar="FILE",
        help="after a successful build, write FILE (one line per chip tree) for a build system",
    )
    parser.add_argument(
        "--depfile",
        metavar="FILE",
        help="also write a Make-style dependency file listing every input, for the --stamp FILE",
    )
    add_json_option(parser)
    settings = parser.add_argument_group(
        "settings",
        "each option sets the [tool.pypto] key it is named after (docs/settings.md), over the "
        "file and the PYPTO_* variables",
    )
    add_setting_options(settings, SETTING_OPTIONS)
    add_config_setting_option(settings)
    parser.set_defaults(command=_build)


def _build(args: argparse.Namespace) -> int:
    from pypto_build.build_records.folder_bound import bound_after_build
    from pypto_build.chip_build.render_errors import NoCommonChip
    from pypto_build.plugin.depfile import write_build_files
    from pypto_build.plugin.project_build import build_project, project_cache
    from pypto_build.plugin.project_target import project_toolchain
    from pypto_build.plugin.vcs_ignore import ensure_ignored
    from pypto_build.store.size_limit import parse_size

    if args.depfile is not None and args.stamp is None:
        raise UsageError("--depfile needs --stamp: the depfile lists the stamp's inputs")
    project, settings = _build_settings(args)
    toolchain = project_toolchain(project, settings)
    cache = None if args.no_cache else project_cache(settings)
    out = Path(args.out) if args.out else project / "build" / "pypto"
    try:
        result = build_project(
            project, settings, out, toolchain=toolchain, cache=cache, progress=sys.stderr
        )
    except NoCommonChip as err:
        raise UsageError(f"{err}; choose --chip") from None
    if cache is not None:
        bound_after_build(cache.root, parse_size(settings.cache_max_size), warn=print_warning)
    print_warnings(result.warnings)
    if not args.out and (project / "pyproject.toml").is_file():
        gitignore = ensure_ignored(project, out)
        if gitignore is not None:
            print(
                f"pypto-build: listed {out} in {gitignore}: build output stays out of git and "
                "sdists",
                file=sys.stderr,
            )
    if args.stamp is not None:
        depfile = None if args.depfile is None else Path(args.depfile)
        write_build_files(result, project, stamp=Path(args.stamp), depfile=depfile)
    _print_build(result, toolchain, cache, as_json=args.json)
    return ExitCode.OK


def _build_settings(args: argparse.Namespace) -> tuple[Path, PyptoSettings]:
    """The project folder and settings (file, environment, options merged); a missing program
    file is a usage error, found before any toolchain is looked for."""
    from pypto_build.plugin.project_target import program_paths
    from pypto_build.plugin.settings import load_settings

    targets = [Path(target) for target in args.targets or ["."]]
    for target in targets:
        if not target.exists():
            raise UsageError(f"{target}: no such file or directory")
    if targets[0].is_dir():
        if len(targets) > 1:
            raise UsageError("give one project folder, or program files")
        if args.source_root is not None:
            raise UsageError("--source-root goes with program files; a project is its own root")
        project = targets[0]
        if not (project / "pyproject.toml").exists():
            raise UsageError(
                f"{project}: no pyproject.toml; give a project folder or program files"
            )
        settings = load_settings(project)
    else:
        project, settings = _program_settings(targets, args.source_root)
    program_paths(project, settings)
    return project, apply_setting_options(settings, args, SETTING_OPTIONS)


def _program_settings(files: Sequence[Path], source_root: str | None) -> tuple[Path, PyptoSettings]:
    """The source root and settings of a build of program ``files``, the environment applied.

    No chips unless the environment or the command line names them: the build then targets
    those the builtins of every file support, as for render, found by the build's own lowering.
    """
    from pypto_build.plugin.settings import PyptoSettings, apply_environment

    root = files[0].parent if source_root is None else Path(source_root)
    if not root.is_dir():
        raise UsageError(f"--source-root: {source_root}: no such directory")
    relative: list[str] = []
    for path in files:
        if path.is_dir():
            raise UsageError(f"{path}: a folder among program files; give one project folder")
        try:
            relative.append(path.resolve().relative_to(root.resolve()).as_posix())
        except ValueError:
            raise UsageError(
                f"{path} is not under the source root {root}: inputs are recorded by their "
                "path relative to it (set --source-root)"
            ) from None
    settings = PyptoSettings(programs=tuple(dict.fromkeys(relative)))
    return root, apply_environment(settings)


def _print_build(
    result: BuildResult, toolchain: Toolchain, cache: CompileCache | None, *, as_json: bool
) -> None:
    if as_json:
        document = {
            "out": str(result.out_dir),
            "toolchain": {
                "name": toolchain.name,
                "version": toolchain.version,
                "identity": toolchain.identity(),
            },
            "chips": {
                report.chip: {
                    "compiled": report.compiled,
                    "cache_hits": report.cache_hits,
                    "remote_hits": report.remote_hits,
                    "binaries": [r.artifact.as_posix() for r in report.results],
                    "log": str(report.log),
                }
                for report in result.reports
            },
            "cache": None if cache is None else str(cache.root),
            "remote_caches": [dataclasses.asdict(remote) for remote in _remotes(cache)],
        }
        print_json(document)
        return
    for report in result.reports:
        print(
            f"{report.chip}: {report.compiled} compiled, {report.cache_hits} from cache -> "
            f"{result.out_dir / report.chip} ({toolchain.name} {toolchain.version})"
        )
    if cache is not None:
        remote = f" ({result.remote_hits} from the remote)" if result.remote_hits else ""
        hits = f"{result.cache_hits} hits{remote}"
        print(f"cache: {hits} / {result.compiled} misses ({cache.root})")
    for summary in _remotes(cache):
        mode = "read only" if summary.read_only else f"{summary.uploaded} uploaded"
        state = "" if summary.problem is None else f"; {summary.problem}"
        print(f"remote cache: {mode}, {summary.damaged} damaged{state} ({summary.url})")


def _remotes(cache: CompileCache | None) -> tuple[RemoteSummary, ...]:
    """What each remote cache of the build did (none without a remote tier)."""
    return () if cache is None or cache.remote is None else cache.remote.summaries()
