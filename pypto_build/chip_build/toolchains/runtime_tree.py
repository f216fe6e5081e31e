"""The PyPTO runtime a CANN build targets, and what its compile path takes from it per platform.

PyPTO's runtime is simpler (``hw-native-sys/simpler``). Its own compile path
(``simpler_setup/kernel_compiler.py`` with PyPTO's ``get_kernel_include_dirs``, reference
revision simpler 6ebaf77 / pypto e2d0f78) takes the headers of both kernels and orchestrations,
and sources the orchestration links, from the runtime's folder for the chip's platform
(``src/a2a3/...`` or ``src/a5/...``). A binary built against another platform's headers, or
without those sources, does not run on the device, so the build derives the same lists, in the
same order, from one folder: a simpler checkout, or an installed simpler's asset root
(``site-packages/simpler_setup/_assets``, the folder ``simpler_setup/environment.py`` takes as
its project root once it holds ``src/``). For one platform:

* **orchestration include dirs** (``get_orchestration_include_dirs``, then the runtime's
  ``build_config.py`` ``orchestration.include_dirs``; ten in all, duplicates kept as upstream
  passes them);
* **orchestration sources** compiled into the ``.so`` (``get_orchestration_cache_inputs``):
  every ``.cpp``/``.c`` of the ``orchestration.source_dirs`` (``common.cpp``, which defines
  ``framework_current_runtime`` and ``framework_bind_runtime``), then the onboard AICPU
  ``cache_ops.cpp`` and ``device_time.cpp``;
* **kernel include dirs** (``get_incore_include_dirs``: ``simpler_setup/incore``,
  ``src/common/platform/include``; then ``get_kernel_include_dirs``: the ``aicore.include_dirs``
  of ``build_config.py``, ``src/common``, ``src/common/task_interface``).

Upstream imports ``build_config.py``; it is read here with ``ast`` as a literal, never run.
"""

from __future__ import annotations

import ast
import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from pypto_build.chip_build.toolchains.base import ToolchainError
from pypto_build.chip_build.toolchains.includes import include_closure
from pypto_build.files import read_text

#: The runtime every sub-build names in its ``RUNTIME_CONFIG`` (the device-orchestration one).
RUNTIME_NAME = "tensormap_and_ringbuffer"
#: Onboard AICPU helpers every device orchestration links (upstream's
#: ``_get_orchestration_platform_sources`` for a hardware platform).
_PLATFORM_SOURCES = ("cache_ops.cpp", "device_time.cpp")
_PLATFORM_SOURCE_DIR = Path("src/common/platform/onboard/aicpu")
_SOURCE_SUFFIXES = (".cpp", ".c")


@dataclass(frozen=True)
class BuildConfig:
    """The parts of a runtime's ``build_config.py`` a build reads: folders relative to it."""

    kernel_include_dirs: tuple[str, ...]
    orchestration_include_dirs: tuple[str, ...]
    orchestration_source_dirs: tuple[str, ...]


def read_build_config(path: Path) -> BuildConfig:
    """The ``BUILD_CONFIG`` literal of ``path`` (``aicore`` and ``orchestration`` sections);
    a file that does not hold one is a :class:`ToolchainError` naming it."""
    try:
        module = ast.parse(read_text(path), filename=str(path))
    except (OSError, SyntaxError, ValueError) as exc:
        raise ToolchainError(
            f"{path}: cannot read the runtime's build configuration: {exc}"
        ) from None
    values = [
        node.value
        for node in module.body
        if isinstance(node, ast.Assign)
        and [getattr(target, "id", None) for target in node.targets] == ["BUILD_CONFIG"]
    ]
    try:
        config = ast.literal_eval(values[-1]) if values else None
    except ValueError:
        config = None
    if not isinstance(config, dict):
        raise ToolchainError(f"{path}: no BUILD_CONFIG dictionary literal")
    return BuildConfig(
        kernel_include_dirs=_folders(config, "aicore", "include_dirs", path),
        orchestration_include_dirs=_folders(config, "orchestration", "include_dirs", path),
        orchestration_source_dirs=_folders(config, "orchestration", "source_dirs", path),
    )


def _folders(
    config: Mapping[object, object], section: str, key: str, path: Path
) -> tuple[str, ...]:
    block = config.get(section)
    value = block.get(key) if isinstance(block, dict) else None
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ToolchainError(f"{path}: BUILD_CONFIG['{section}']['{key}'] is not a list of paths")
    return tuple(value)


@dataclass(frozen=True)
class PlatformDirs:
    """What one platform's builds take from the runtime (see the module docstring)."""

    platform: str
    orchestration_include_dirs: tuple[Path, ...]
    orchestration_sources: tuple[Path, ...]
    #: The orchestration sources and every file their ``#include`` lines can reach in the
    #: orchestration include dirs: what the compile cache must check besides the job's own
    #: dependency file, which lists what the job's source read only.
    orchestration_inputs: tuple[Path, ...]
    kernel_include_dirs: tuple[Path, ...]


def _join(base: Path, relative: str | Path) -> Path:
    """``base / relative`` with ``..`` folded, as upstream's compiler paths spell it."""
    return Path(os.path.normpath(base / relative))


class RuntimeTree:
    """The runtime at ``root``, named by the setting ``setting`` (its key path, for errors)."""

    def __init__(self, root: Path, setting: str) -> None:
        self.setting = setting
        self.root = root.resolve()
        if not (self.root / "src").is_dir():
            raise ToolchainError(
                f"{setting} = {root}: not a simpler checkout or installed simpler runtime (no "
                "src/ folder); name a simpler checkout or an installed simpler's "
                "simpler_setup/_assets folder"
            )
        self._platforms: dict[str, PlatformDirs] = {}
        self._lock = threading.Lock()

    @property
    def incore_dir(self) -> Path:
        """The kernels' helper headers (``pipe_sync.h``): ``simpler_setup/incore`` of a
        checkout, or beside the ``_assets`` root of an installed simpler."""
        installed = self.root.parent / "incore"
        if self.root.name == "_assets" and self.root.parent.name == "simpler_setup":
            return installed
        return self.root / "simpler_setup" / "incore"

    def runtime_dir(self, platform: str) -> Path:
        """``src/<platform>/runtime/tensormap_and_ringbuffer``."""
        return self.root / "src" / platform / "runtime" / RUNTIME_NAME

    def platform_dirs(self, platform: str) -> PlatformDirs:
        """The lists for ``platform`` (``a2a3``, ``a5``), derived once; a runtime without that
        platform's ``build_config.py`` or AICPU sources is a :class:`ToolchainError`."""
        with self._lock:
            if platform not in self._platforms:
                self._platforms[platform] = self._derive(platform)
            return self._platforms[platform]

    def _derive(self, platform: str) -> PlatformDirs:
        runtime = self.runtime_dir(platform)
        config_path = runtime / "build_config.py"
        if not config_path.is_file():
            raise ToolchainError(
                f"{self.setting} = {self.root}: no {config_path.relative_to(self.root)}; this "
                f"runtime has no {RUNTIME_NAME} runtime for platform {platform}"
            )
        config = read_build_config(config_path)
        common = self.root / "src" / "common"
        orchestration_include_dirs = (
            runtime / "runtime",
            runtime / "common",
            common / "task_interface",
            common,
            self.root / "src" / platform / "platform" / "include",
            common / "platform" / "include",
            *(_join(runtime, d) for d in config.orchestration_include_dirs),
        )
        sources = (
            *self._sources_in(runtime, config.orchestration_source_dirs),
            *self._platform_sources(),
        )
        kernel_include_dirs = (
            self.incore_dir,
            common / "platform" / "include",
            *(_join(runtime, d) for d in config.kernel_include_dirs),
            common,
            common / "task_interface",
        )
        return PlatformDirs(
            platform=platform,
            orchestration_include_dirs=orchestration_include_dirs,
            orchestration_sources=sources,
            orchestration_inputs=include_closure(sources, orchestration_include_dirs),
            kernel_include_dirs=kernel_include_dirs,
        )

    @staticmethod
    def _sources_in(runtime: Path, source_dirs: tuple[str, ...]) -> list[Path]:
        """Every C/C++ file of the source folders, sorted per folder, as upstream lists them."""
        sources: list[Path] = []
        for relative in source_dirs:
            folder = _join(runtime, relative)
            if folder.is_dir():
                sources += sorted(
                    path
                    for path in folder.iterdir()
                    if path.suffix in _SOURCE_SUFFIXES and path.is_file()
                )
        return sources

    def _platform_sources(self) -> list[Path]:
        sources = [self.root / _PLATFORM_SOURCE_DIR / name for name in _PLATFORM_SOURCES]
        missing = [path for path in sources if not path.is_file()]
        if missing:
            raise ToolchainError(
                f"{self.setting} = {self.root}: no {missing[0].relative_to(self.root)}, which "
                "every device orchestration links"
            )
        return sources
