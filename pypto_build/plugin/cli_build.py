"""The build-side commands of ``pypto-build``: ``build``, ``cache stats|prune`` and ``doctor``.

Thin adapters over the engine (through :mod:`pypto_build.plugin.project_build`, as the hatch
hook builds, so both make the same kernels from the same settings), the compile cache and
toolchain discovery: they read the settings, map failures onto the documented exit codes
and print either a short human summary or, with ``--json``, a document for machines.
:func:`register` adds them to the main parser. The engine (and with it the program model) is
imported only when ``build`` or ``doctor`` runs, so ``--help`` and ``--version`` stay fast.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pypto_build.chip_build.cache_location import default_cache_dir
from pypto_build.chip_build.toolchains.names import TOOLCHAIN_NAMES
from pypto_build.errors import ExitCode
from pypto_build.plugin.cli_common import (
    UsageError,
    add_chip_option,
    add_json_option,
    add_verbose_option,
    print_error,
    print_json,
    print_warnings,
    whole_number,
)

if TYPE_CHECKING:
    from pypto_build.chip_build.build import BuildResult
    from pypto_build.chip_build.cache import CompileCache
    from pypto_build.chip_build.remote_cache import RemoteSummary
    from pypto_build.chip_build.toolchains import Revision, TargetSettings, Toolchain
    from pypto_build.plugin.cli_common import Subparsers
    from pypto_build.plugin.settings import PyptoSettings


def register(commands: Subparsers) -> None:
    """Add ``build``, ``cache`` and ``doctor`` to the main parser's subcommands."""
    _add_build(commands)
    _add_cache(commands)
    _add_doctor(commands)


def _positive_int(text: str) -> int:
    value = whole_number(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value}: at least 1 is needed")
    return value


def _size(text: str) -> int:
    from pypto_build.chip_build.cache import parse_size

    try:
        return parse_size(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _add_build(commands: Subparsers) -> None:
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
    parser.add_argument("--toolchain", choices=TOOLCHAIN_NAMES, help="auto, cann or sim")
    add_chip_option(
        parser, "build for CHIP (repeatable; default: the settings' chips)", repeatable=True
    )
    parser.add_argument(
        "--jobs", "-j", type=_positive_int, metavar="N", help="compiler processes at once"
    )
    parser.add_argument(
        "--out", metavar="DIR", help="output folder (default: <project>/build/pypto)"
    )
    parser.add_argument(
        "--launcher",
        metavar="CMD",
        help="compiler launcher, e.g. ccache or sccache ('' for none)",
    )
    _add_runtime_root_option(parser)
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
    add_verbose_option(
        parser,
        "print each compile's command lines and wall time on stderr (setting verbose); the "
        "log is OUT/.pypto-build-logs/<chip>.log",
    )
    parser.set_defaults(command=_build)


def _add_runtime_root_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--runtime-root",
        metavar="DIR",
        help=(
            "PyPTO's runtime the CANN binaries are built for (a simpler checkout or an installed "
            "simpler's simpler_setup/_assets folder); overrides tool.pypto.runtime-root"
        ),
    )


def _with_runtime_root(settings: PyptoSettings, option: str | None) -> PyptoSettings:
    """``settings`` with ``--runtime-root`` applied: a command-line path is relative to the
    current folder, so it is made absolute before it meets the project-relative setting."""
    from pypto_build.plugin.settings import override

    if option is None:
        return settings
    return override(settings, "--runtime-root", "runtime_root", str(Path(option).absolute()))


def _add_cache(commands: Subparsers) -> None:
    parser = commands.add_parser(
        "cache",
        help="show or prune the compile cache",
        description=f"The compile cache lives in $PYPTO_CACHE_DIR (now: {default_cache_dir()}).",
    )
    actions = parser.add_subparsers(title="actions", metavar="ACTION", required=True)
    stats = actions.add_parser("stats", help="entries, size and the last build's hits")
    add_json_option(stats, "print JSON on stdout")
    stats.set_defaults(command=_cache_stats)
    prune = actions.add_parser("prune", help="evict least recently used entries")
    limit = prune.add_mutually_exclusive_group(required=True)
    limit.add_argument(
        "--max-size", type=_size, metavar="SIZE", help="keep at most SIZE (500M, 2G, 1.5GiB)"
    )
    limit.add_argument("--all", action="store_true", help="remove every entry")
    add_json_option(prune, "print JSON on stdout")
    prune.set_defaults(command=_cache_prune)


def _add_doctor(commands: Subparsers) -> None:
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
    _add_runtime_root_option(parser)
    add_json_option(parser, "print JSON on stdout")
    parser.set_defaults(command=_doctor)


# --- build -------------------------------------------------------------------------------------


def _build(args: argparse.Namespace) -> int:
    from pypto_build.chip_build.cache import parse_size
    from pypto_build.plugin.cache_bound import bound_after_build
    from pypto_build.plugin.depfile import write_build_files
    from pypto_build.plugin.project_build import build_project, project_cache
    from pypto_build.plugin.project_target import project_toolchain
    from pypto_build.plugin.vcs_ignore import ensure_ignored

    if args.depfile is not None and args.stamp is None:
        raise UsageError("--depfile needs --stamp: the depfile lists the stamp's inputs")
    project, settings = _build_settings(args)
    toolchain = project_toolchain(project, settings)
    cache = None if args.no_cache else project_cache(settings)
    out = Path(args.out) if args.out else project / "build" / "pypto"
    result = build_project(
        project, settings, out, toolchain=toolchain, cache=cache, progress=sys.stderr
    )
    if cache is not None:
        bound_after_build(cache.root, parse_size(settings.cache_max_size), warn=_warn)
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


def _warn(message: str) -> None:
    print(f"pypto-build: warning: {message}", file=sys.stderr, flush=True)


def _build_settings(args: argparse.Namespace) -> tuple[Path, PyptoSettings]:
    """The project folder and settings (file, environment, options merged); a missing program
    file is a usage error, found before any toolchain is looked for."""
    from pypto_build.plugin.project_target import program_paths
    from pypto_build.plugin.settings import load_settings, override

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
        project, settings = _program_settings(targets, args.source_root, chosen=bool(args.chips))
    program_paths(project, settings)
    if args.chips:
        settings = override(settings, "--chip", "chips", list(dict.fromkeys(args.chips)))
    if args.toolchain is not None:
        settings = override(settings, "--toolchain", "toolchain", args.toolchain)
    if args.jobs is not None:
        settings = override(settings, "--jobs", "jobs", args.jobs)
    if args.launcher is not None:
        settings = override(
            settings, "--launcher", "compiler_launcher", args.launcher.strip() or None
        )
    if args.verbose:
        settings = override(settings, "--verbose", "verbose", True)
    return project, _with_runtime_root(settings, args.runtime_root)


def _program_settings(
    files: Sequence[Path], source_root: str | None, *, chosen: bool
) -> tuple[Path, PyptoSettings]:
    """The source root and settings of a build of program ``files``, the environment applied.

    Unless the chips are ``chosen`` on the command line, they default to those the builtins of
    every file support, as for render (finding them lowers each file once more).
    """
    from pypto_build.chip_build.render_errors import RenderError
    from pypto_build.chip_build.subbuild import programs_default_chips
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
    if not chosen:
        try:
            chips = programs_default_chips(files)
        except RenderError as err:
            raise UsageError(f"{err}; choose --chip") from None
        settings = dataclasses.replace(settings, chips=chips)
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


# --- cache -------------------------------------------------------------------------------------


def _human_size(size: int) -> str:
    """``512 B``, ``3.4 KiB``, ``12.0 MiB``, ``1.2 GiB``."""
    if size < 1024:
        return f"{size} B"
    value = size / 1024
    for unit in ("KiB", "MiB"):
        if value < 1024:
            return f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GiB"


def _cache_stats(args: argparse.Namespace) -> int:
    from pypto_build.chip_build.cache import CompileCache

    stats = CompileCache(default_cache_dir()).stats()
    last = stats.last_build
    if args.json:
        document = {
            "root": str(stats.root),
            "entries": stats.entries,
            "bytes": stats.size,
            "last_build": None if last is None else dataclasses.asdict(last),
        }
        print_json(document)
        return ExitCode.OK
    print(f"cache: {stats.root}")
    print(f"entries: {stats.entries}")
    print(f"size: {_human_size(stats.size)}")
    recorded = "none recorded"
    if last is not None:
        remote = f" ({last.remote_hits} from the remote)" if last.remote_hits else ""
        recorded = f"{last.hits} hits{remote} / {last.misses} misses"
    print(f"last build: {recorded}")
    return ExitCode.OK


def _cache_prune(args: argparse.Namespace) -> int:
    from pypto_build.chip_build.cache import CompileCache
    from pypto_build.plugin.cache_bound import bound_cache
    from pypto_build.plugin.record_store import RecordStore

    cache = CompileCache(default_cache_dir())
    try:
        # Pruned to a size, the build records count against the bound too.
        result = cache.prune(0) if args.all else bound_cache(cache.root, args.max_size, warn=_warn)
    except OSError as err:  # a cache folder that cannot be written: nothing to prune there
        print_error(str(err))
        return ExitCode.PROGRAM_ERROR
    if args.all:
        # A build record would stand in for the next build, which must compile everything.
        RecordStore(cache.root, warn=print_error).clear()
    if args.json:
        document = {
            "removed_entries": result.removed_entries,
            "removed_bytes": result.removed_bytes,
            "remaining_entries": result.remaining_entries,
            "remaining_bytes": result.remaining_bytes,
        }
        print_json(document)
        return ExitCode.OK
    print(
        f"removed {result.removed_entries} entries ({_human_size(result.removed_bytes)}); "
        f"{result.remaining_entries} remain ({_human_size(result.remaining_bytes)})"
    )
    return ExitCode.OK


# --- doctor ------------------------------------------------------------------------------------


def _doctor(args: argparse.Namespace) -> int:
    from pypto_build.plugin.project_target import target_settings
    from pypto_build.plugin.settings import CHIP_NAMES

    project, settings = _doctor_settings(args.project)
    settings = _with_runtime_root(settings, args.runtime_root)
    report = _doctor_report(target_settings(project, settings), settings.chips or CHIP_NAMES)
    if args.json:
        print_json(report)
    else:
        print("\n".join(_doctor_lines(report)))
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


def _doctor_report(target: TargetSettings, chips: Sequence[str]) -> dict[str, Any]:
    """What ``doctor`` reports, as its ``--json`` document."""
    from pypto_build.chip_build.cache import CompileCache
    from pypto_build.chip_build.toolchains.target import unknown_revisions

    cann = _cann_report()
    runtime, runtime_revision = _runtime_report(target, chips)
    pto_isa, pto_isa_revision = _pto_isa_report(target)
    sim = _sim_report()
    launchers = _launchers_report()
    stats = CompileCache(default_cache_dir()).stats()
    auto = "cann" if cann["found"] else ("sim" if "error" not in sim else None)
    warning = None
    if runtime_revision is not None and pto_isa_revision is not None:
        warning = unknown_revisions(runtime_revision, pto_isa_revision)
    return {
        "auto_toolchain": auto,
        "binary_context_warning": warning,
        "cache": {"root": str(stats.root), "entries": stats.entries, "bytes": stats.size},
        "cann": cann,
        "launchers": launchers,
        "pto_isa": pto_isa,
        "runtime": runtime,
        "sim": sim,
    }


def _cann_report() -> dict[str, Any]:
    """The CANN toolkit found, or every place searched for one and why it was passed over."""
    from pypto_build.chip_build.toolchains import find_toolkit

    search = find_toolkit()
    toolkit = search.toolkit
    cann: dict[str, Any] = {
        "found": toolkit is not None,
        "searched": [
            {
                "origin": place.origin,
                "path": None if place.path is None else str(place.path),
                "reason": place.reason,
                "description": place.describe(),
            }
            for place in search.searched
        ],
    }
    if toolkit is not None:
        cann.update(
            root=str(toolkit.root),
            origin=toolkit.origin,
            version=str(toolkit.version),
            version_file=str(toolkit.version_file),
            ccec=str(toolkit.ccec),
            ld_lld=str(toolkit.ld_lld),
            host_cxx=None if toolkit.host_cxx is None else str(toolkit.host_cxx),
        )
    return cann


def _runtime_report(
    target: TargetSettings, chips: Sequence[str]
) -> tuple[dict[str, Any], Revision | None]:
    """The runtime root, the folders and sources derived for the chips' platforms (each with
    whether it exists) and its revision; the revision too, None without a usable root."""
    from pypto_build.chip_build.chips import get_chip
    from pypto_build.chip_build.toolchains import RuntimeTree, ToolchainError
    from pypto_build.chip_build.toolchains.revisions import settled_revision
    from pypto_build.chip_build.toolchains.target import RUNTIME_REVISION_KEY, RUNTIME_ROOT_KEY

    if target.runtime_root is None:
        return {"root": None, "error": "not configured"}, None
    try:
        tree = RuntimeTree(target.runtime_root, RUNTIME_ROOT_KEY)
    except ToolchainError as exc:
        return {"root": str(target.runtime_root), "error": str(exc)}, None
    revision = settled_revision(target.runtime_revision, RUNTIME_REVISION_KEY, tree.root)
    platforms: dict[str, Any] = {}
    for platform in dict.fromkeys(get_chip(chip).platform for chip in chips):
        try:
            dirs = tree.platform_dirs(platform)
        except ToolchainError as exc:
            platforms[platform] = {"error": str(exc)}
            continue
        platforms[platform] = {
            kind: [{"path": str(path), "exists": path.exists()} for path in paths]
            for kind, paths in (
                ("orchestration_include_dirs", dirs.orchestration_include_dirs),
                ("orchestration_sources", dirs.orchestration_sources),
                ("kernel_include_dirs", dirs.kernel_include_dirs),
            )
        }
    report = {
        "root": str(tree.root),
        "platforms": platforms,
        "revision": dataclasses.asdict(revision),
    }
    return report, revision


def _pto_isa_report(target: TargetSettings) -> tuple[dict[str, Any], Revision | None]:
    """The PTO-ISA root, which setting named it and its revision (or why there is none); the
    revision too, None without a usable root."""
    from pypto_build.chip_build.toolchains import ToolchainError, resolve_pto_isa_root
    from pypto_build.chip_build.toolchains.revisions import settled_revision
    from pypto_build.chip_build.toolchains.target import PTO_ISA_REVISION_KEY

    try:
        pto = resolve_pto_isa_root(target)
    except ToolchainError as exc:
        return {"root": None, "error": str(exc)}, None
    if pto is None:
        return {"root": None, "error": "not configured"}, None
    revision = settled_revision(target.pto_isa_revision, PTO_ISA_REVISION_KEY, pto.path)
    report = {"root": str(pto.path), "origin": pto.origin, "revision": dataclasses.asdict(revision)}
    return report, revision


def _sim_report() -> dict[str, Any]:
    from pypto_build.chip_build.toolchains import SimToolchain, ToolchainError

    try:
        sim_toolchain = SimToolchain.discover()
    except ToolchainError as exc:
        return {"error": str(exc)}
    return {
        "compiler": str(sim_toolchain.compiler),
        "version": sim_toolchain.version,
        "identity": sim_toolchain.identity(),
    }


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


def _doctor_lines(report: dict[str, Any]) -> list[str]:
    from pypto_build.chip_build.toolchains import Revision

    cann = report["cann"]
    if cann["found"]:
        host = cann["host_cxx"] or "missing (orchestrations cannot be built)"
        lines = [
            f"cann: {cann['version']} at {cann['root']} (found via {cann['origin']})",
            f"  ccec: {cann['ccec']}",
            f"  ld.lld: {cann['ld_lld']}",
            f"  aarch64 host compiler: {host}",
        ]
    else:
        lines = ["cann: not found; searched:"]
        lines += [f"  {place['description']}" for place in cann["searched"]]
    lines += _runtime_lines(report["runtime"])
    pto = report["pto_isa"]
    if pto["root"] is None:
        lines.append(_root_problem("pto-isa", pto["error"]))
    else:
        revision = Revision(**pto["revision"]).describe()
        lines.append(f"pto-isa: {pto['root']} ({pto['origin']}), revision {revision}")
    if report["binary_context_warning"] is not None:
        lines.append(f"warning: {report['binary_context_warning']}")
    sim = report["sim"]
    lines.append(
        f"sim: {sim['error']}"
        if "error" in sim
        else f"sim: {sim['compiler']} {sim['version']} ({sim['identity']})"
    )
    for name, launcher in report["launchers"].items():
        found = "not found" if launcher is None else f"{launcher['path']} ({launcher['version']})"
        lines.append(f"{name}: {found}")
    cache = report["cache"]
    lines.append(
        f"cache: {cache['root']}, {cache['entries']} entries, {_human_size(cache['bytes'])}"
    )
    lines.append(f"toolchain 'auto' selects: {report['auto_toolchain'] or 'nothing usable'}")
    return lines


def _root_problem(what: str, error: str) -> str:
    """``<what>: <error>``, the error of a root, or for one not configured what to set."""
    from pypto_build.plugin.settings import TABLE

    unconfigured = {
        "runtime": f"set {TABLE}.runtime-root or PYPTO_RUNTIME_ROOT; toolchain 'cann' needs it",
        "pto-isa": (
            f"set {TABLE}.pto-isa-root or PTO_ISA_ROOT, or {TABLE}.runtime-root for its "
            "managed clone; toolchain 'cann' needs it"
        ),
    }
    if error == "not configured":
        error = f"not configured ({unconfigured[what]})"
    return f"{what}: {error}"


def _runtime_lines(runtime: dict[str, Any]) -> list[str]:
    """The runtime root with its revision, then per platform how many derived folders and
    sources there are, and each one missing."""
    from pypto_build.chip_build.toolchains import Revision

    if "error" in runtime:
        return [_root_problem("runtime", runtime["error"])]
    revision = Revision(**runtime["revision"]).describe()
    lines = [f"runtime: {runtime['root']}, revision {revision}"]
    for platform, derived in runtime["platforms"].items():
        if "error" in derived:
            lines.append(f"  {platform}: {derived['error']}")
            continue
        counts = ", ".join(
            f"{len(entries)} {kind.replace('_', ' ')}" for kind, entries in derived.items()
        )
        missing = [
            entry["path"]
            for entries in derived.values()
            for entry in entries
            if not entry["exists"]
        ]
        state = f"{len(missing)} missing:" if missing else "all present"
        lines.append(f"  {platform}: {counts}; {state}")
        lines += [f"    {path}" for path in missing]
    return lines
