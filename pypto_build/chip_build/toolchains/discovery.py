"""Finding the CANN toolkit, its compilers and its version.

The search order is the one the CANN tools themselves use (``ASCEND_HOME_PATH`` first in simpler's
``simpler_setup/toolchain.py`` and torch-npu; the ``ASCEND_OPP_PATH`` fallback of
hicann/ops-transformer's ``cmake/config.cmake``): ``ASCEND_HOME_PATH``, its older alias
``ASCEND_TOOLKIT_HOME``, the parent of ``ASCEND_OPP_PATH`` (``<root>/opp``), then the default
install roots of the classic and the newer (CANN 8.5+) layouts, system-wide then per user. The first
candidate holding both ``ccec`` and ``ld.lld`` (in any of the directories toolkits have put them:
``bin``, ``<arch>-linux/ccec_compiler/bin``, ``compiler/ccec_compiler/bin``,
``tools/ccec_compiler/bin``) and a readable version wins; every candidate passed over is remembered
with the reason, so that "not found" can say exactly what was searched.
"""

from __future__ import annotations

import os
import platform
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from pypto_build.chip_build.toolchains.base import ToolchainError, ToolkitNotFoundError
from pypto_build.chip_build.toolchains.version import Version
from pypto_build.files import read_regular

#: Environment variables naming a toolkit root, in search order, with how each names it.
_ROOT_VARIABLES = (
    ("ASCEND_HOME_PATH", False),
    ("ASCEND_TOOLKIT_HOME", False),
    ("ASCEND_OPP_PATH", True),  # <root>/opp: the root is its parent
)
#: Default roots, system-wide before per-user, the classic layout before the CANN 8.5+ one.
_SYSTEM_ROOTS = (
    "/usr/local/Ascend/ascend-toolkit/latest",
    "/usr/local/Ascend/cann",
    "/usr/local/Ascend/latest",
)
_USER_ROOTS = ("Ascend/ascend-toolkit/latest", "Ascend/cann")

#: Where the aarch64 host (AICPU) cross compiler lives, relative to the root.
HOST_CXX = Path("tools/hcc/bin/aarch64-target-linux-gnu-g++")


def host_arch() -> str:
    """The ``<arch>`` of the toolkit's ``<arch>-linux`` directories (``x86_64``, ``aarch64``)."""
    machine = platform.machine().lower()
    return {"amd64": "x86_64", "arm64": "aarch64"}.get(machine, machine)


def _compiler_dirs(root: Path, arch: str) -> tuple[Path, ...]:
    """The directories, in search order, that hold ``ccec`` / ``ld.lld`` in some toolkit."""
    return (
        root / "bin",
        root / f"{arch}-linux" / "ccec_compiler" / "bin",
        root / "compiler" / "ccec_compiler" / "bin",
        root / "tools" / "ccec_compiler" / "bin",
    )


@dataclass(frozen=True)
class CannToolkit:
    """An installed CANN toolkit: where it is, how it was found, its version and compilers."""

    root: Path
    #: Which search step found it (``ASCEND_HOME_PATH``, ..., ``default``).
    origin: str
    version: Version
    #: The file the version was read from.
    version_file: Path
    ccec: Path
    ld_lld: Path
    #: The aarch64 host cross compiler for orchestrations; None if this toolkit lacks it.
    host_cxx: Path | None


@dataclass(frozen=True)
class SearchedRoot:
    """One place the search looked, and why it was passed over ("" for the one chosen)."""

    origin: str
    path: Path | None
    reason: str

    def describe(self) -> str:
        """One line for the "not found" message and ``pypto-build doctor``."""
        where = self.origin if self.path is None else f"{self.origin}: {self.path}"
        return f"{where}: {self.reason}" if self.reason else where


@dataclass(frozen=True)
class ToolkitSearch:
    """The outcome of a search: the toolkit found (if any) and every place looked at."""

    toolkit: CannToolkit | None
    searched: tuple[SearchedRoot, ...]

    def require(self) -> CannToolkit:
        """The toolkit, or :class:`ToolkitNotFoundError` listing every place searched."""
        if self.toolkit is not None:
            return self.toolkit
        lines = "\n".join(f"  {place.describe()}" for place in self.searched)
        raise ToolkitNotFoundError(
            "toolchain 'cann' needs a CANN toolkit, and none was found; searched, in order:\n"
            f"{lines}\n"
            "Install the CANN toolkit and source its set_env.sh (or set ASCEND_HOME_PATH to its "
            "root), or build with toolchain 'sim'."
        )


def _candidates(environ: Mapping[str, str], home: Path) -> list[tuple[str, Path | None, str]]:
    """(origin, path, reason it cannot be used) for every place in search order; the reason
    is "" for a candidate that exists and must be inspected."""
    found: list[tuple[str, Path | None, str]] = []
    for variable, is_opp in _ROOT_VARIABLES:
        value = environ.get(variable, "")
        origin = f"{variable} (its parent)" if is_opp else variable
        if not value:
            found.append((origin, None, "not set"))
            continue
        path = Path(value).parent if is_opp else Path(value)
        found.append((origin, path, "" if path.is_dir() else "not a directory"))
    defaults = [Path(root) for root in _SYSTEM_ROOTS] + [home / root for root in _USER_ROOTS]
    for path in defaults:
        found.append(("default", path, "" if path.is_dir() else "does not exist"))
    return found


def find_toolkit(
    environ: Mapping[str, str] | None = None, *, home: Path | None = None, arch: str | None = None
) -> ToolkitSearch:
    """Search for a CANN toolkit in the documented order (see the module docstring)."""
    environ = os.environ if environ is None else environ
    home = Path.home() if home is None else home
    arch = host_arch() if arch is None else arch
    searched: list[SearchedRoot] = []
    for origin, path, reason in _candidates(environ, home):
        if path is None or reason:
            searched.append(SearchedRoot(origin, path, reason))
            continue
        try:
            toolkit = inspect_toolkit(path, origin, arch)
        except ToolchainError as exc:
            searched.append(SearchedRoot(origin, path, str(exc)))
            continue
        searched.append(SearchedRoot(origin, path, ""))
        return ToolkitSearch(toolkit, tuple(searched))
    return ToolkitSearch(None, tuple(searched))


def inspect_toolkit(path: Path, origin: str, arch: str) -> CannToolkit:
    """Read the toolkit at ``path``: its compilers and version, or why it is unusable."""
    root = path.resolve()
    dirs = _compiler_dirs(root, arch)
    tools: dict[str, Path] = {}
    for name in ("ccec", "ld.lld"):
        located = next((d / name for d in dirs if _is_executable(d / name)), None)
        if located is None:
            places = ", ".join(str(d.relative_to(root)) for d in dirs)
            raise ToolchainError(f"no executable {name} in {places}")
        tools[name] = located
    version_file, version = read_version(root, arch)
    host_cxx = root / HOST_CXX
    return CannToolkit(
        root=root,
        origin=origin,
        version=version,
        version_file=version_file,
        ccec=tools["ccec"],
        ld_lld=tools["ld.lld"],
        host_cxx=host_cxx if _is_executable(host_cxx) else None,
    )


def _is_executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def _version_files(root: Path, arch: str) -> list[tuple[Path, tuple[str, ...]]]:
    """The files a toolkit records its version in, in the order they are trusted, each with
    the keys (lowercase) whose value is the version."""
    preferred = root / f"{arch}-linux" / "ascend_toolkit_install.info"
    others = sorted(root.glob("*/ascend_toolkit_install.info"))
    install_infos = [preferred, *(info for info in others if info != preferred)]
    files: list[tuple[Path, tuple[str, ...]]] = [(info, ("version",)) for info in install_infos]
    files += [
        (root / package / "version.info", ("version",))
        for package in ("compiler", "toolkit", "opp")
    ]
    # version.cfg lists per-package "<package>_running_version=[<internal>:<public>]" lines.
    files.append((root / "version.cfg", ("version", "*_running_version")))
    return files


def read_version(root: Path, arch: str) -> tuple[Path, Version]:
    """The toolkit's version and the file it came from (see :func:`_version_files`)."""
    for path, keys in _version_files(root, arch):
        if not path.is_file():
            continue
        value = _key_value(read_regular(path).decode("utf-8", errors="replace"), keys)
        if value is None:
            continue
        try:
            return path, Version.parse(value)
        except ValueError as exc:
            raise ToolchainError(f"{path.relative_to(root)}: {exc}") from None
    names = ", ".join(str(path.relative_to(root)) for path, _ in _version_files(root, arch))
    raise ToolchainError(f"no version in any of {names}")


def _key_value(text: str, keys: tuple[str, ...]) -> str | None:
    """The value of the first of ``keys`` present in ``key=value`` lines (case-insensitive; a
    key ``*suffix`` matches any key ending in ``suffix``, the first such line wins).

    ``version.cfg`` writes versions as ``[<internal>:<public>]``; the public part is returned.
    """
    values: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep and value.strip():
            values.setdefault(key.strip().lower(), value.strip().strip("\"'"))
    for pattern in keys:
        suffix = pattern.removeprefix("*")
        matches = [
            value
            for key, value in values.items()
            if (key.endswith(suffix) if pattern.startswith("*") else key == pattern)
        ]
        if matches:
            value = matches[0]
            if value.startswith("[") and value.endswith("]"):
                value = value[1:-1].rpartition(":")[2]
            return value
    return None
