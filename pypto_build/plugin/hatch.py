"""The hatchling build hook: ``pip wheel`` of a model package builds its kernels and ships them
(DESIGN §1, §10).

A model package turns the hook on with an empty ``[tool.hatch.build.targets.wheel.hooks.pypto]``
table and lists ``pypto-build`` in ``build-system.requires``; the hook reads ``[tool.pypto]``
(:mod:`pypto_build.plugin.settings`, with the ``PYPTO_*`` environment overrides, since hatchling
hands hooks no ``config_settings``) and runs the engine.

* **Wheel target only.** An sdist ships the program files and kernel sources, never build
  output; the hook does nothing for any other target.
* **Standard wheels.** The engine builds into a fresh temporary directory, never into the source
  tree, and every file of ``<out>/<chip>/`` goes into the wheel as ``<package>/<chip>/...``
  through ``force_include``, one entry per file in sorted order (hatchling writes forced files
  in insertion order). The compile logs stay beside the chip trees, so no log is shipped; the
  directory is removed once the wheel is written, and kept when a compile fails, so that the
  log path in the error still points at the log.
* **The tag is explicit.** The kernels are not CPython extensions, so the tag never names an
  interpreter or ABI. ``sim`` binaries are shared objects for this host, so they are tagged with
  its platform (``py3-none-linux_x86_64``); ``cann`` binaries run on the NPU (AI Core images,
  and orchestrations built with the toolkit's aarch64 device compiler), whatever the host, so
  that wheel is ``py3-none-any`` with ``Root-Is-Purelib: false``. Which chips it holds cannot be
  said in a tag; the runtime picks ``<package>/<chip>/`` itself.
* **Editable installs** build in place: hatchling's editable wheel points the interpreter at the
  source tree, where kernels put into the wheel would never be seen, so the sub-builds are
  written into the source folder of ``package`` (``src/moe/_kernels`` for
  ``package = "moe/_kernels"`` with a ``src`` layout) and re-running ``pip install -e .``
  refreshes them. That folder belongs in ``.gitignore``: a later standard wheel would otherwise
  ship it as well, and the hook refuses that build, saying so.
* **Reproducible.** Hatchling writes reproducible archives (``SOURCE_DATE_EPOCH``, fixed modes,
  sorted walks); the engine's outputs are pure functions of the inputs, with no absolute path.

Every failure is raised as :class:`PyptoBuildError`, whose message is what the user must read:
the settings key path at fault, a program diagnostic in compiler style, or the failed compiles
with the log's path. hatchling (and pip) print it.
"""

from __future__ import annotations

import shutil
import sys
import sysconfig
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path, PurePosixPath
from typing import Any

from hatchling.builders.config import BuilderConfig
from hatchling.builders.hooks.plugin.interface import BuildHookInterface

from pypto_build.chip_build.compile import BuildFailed
from pypto_build.chip_build.fs import walk_files
from pypto_build.chip_build.subbuild import RenderError
from pypto_build.chip_build.toolchains import ToolchainError
from pypto_build.lowering.diagnostics import ProgramError
from pypto_build.plugin.project_build import build_project, project_cache, project_toolchain
from pypto_build.plugin.settings import (
    TABLE,
    PyptoSettings,
    SettingsError,
    apply_environment,
    settings_from_table,
)

PLUGIN_NAME = "pypto"
#: Keys of a hook's table that hatchling itself reads; pypto-build's own settings live in
#: ``[tool.pypto]``, shared with the command line and the CMake package.
HATCH_HOOK_KEYS = frozenset(
    {
        "dependencies",
        "require-runtime-dependencies",
        "require-runtime-features",
        "enable-by-default",
    }
)
#: The tag of a wheel whose kernels run on the NPU only.
DEVICE_WHEEL_TAG = "py3-none-any"


class PyptoBuildError(Exception):
    """The kernels could not be built; the message says why and what to change."""


def host_platform_tag() -> str:
    """This interpreter's platform as a wheel tag (``linux_x86_64``), spelt as ``packaging``
    spells it: ``sysconfig.get_platform()`` with ``-`` and ``.`` replaced by ``_``."""
    return sysconfig.get_platform().replace("-", "_").replace(".", "_")


def wheel_tag(toolchain: str) -> str:
    """The wheel tag for kernels built by ``toolchain``: host shared objects (``sim``) are
    tied to this platform, device binaries (``cann``) to none."""
    if toolchain == "sim":
        return f"py3-none-{host_platform_tag()}"
    return DEVICE_WHEEL_TAG


def wheel_files(out_dir: Path, chips: Sequence[str], package: str) -> dict[str, str]:
    """``force_include`` entries shipping every file of ``out_dir/<chip>`` as
    ``<package>/<chip>/...``, ordered by their path in the wheel."""
    shipped: dict[str, str] = {}
    for chip in chips:
        tree = out_dir / chip
        for relative in walk_files(tree):
            shipped[f"{package}/{chip}/{relative.as_posix()}"] = str(tree / relative)
    return {source: target for target, source in sorted(shipped.items())}


def source_folder(root: Path, sources: Mapping[str, str], package: str) -> Path | None:
    """Where the wheel path ``package`` lives in the source tree, undoing hatchling's
    ``sources`` rewrite (``src/`` -> ``""`` for ``packages = ["src/moe"]``); None when no
    source folder holds its parent."""
    candidates = [package] if not sources else []
    for source, replacement in sources.items():
        if package.startswith(replacement):
            candidates.append(source + package[len(replacement) :])
    for candidate in candidates:
        path = root / candidate
        if path.parent.is_dir():
            return path
    return None


@contextmanager
def _user_errors() -> Iterator[None]:
    """Turn the engine's failures into :class:`PyptoBuildError` with the message a user reads."""
    try:
        yield
    except ProgramError as err:
        raise PyptoBuildError(err.render()) from None
    except (SettingsError, RenderError, ToolchainError, BuildFailed) as err:
        raise PyptoBuildError(str(err)) from None


class PyptoBuildHook(BuildHookInterface[BuilderConfig]):
    """Builds the kernels ``[tool.pypto]`` describes into the wheel (see the module)."""

    PLUGIN_NAME = PLUGIN_NAME

    #: The temporary build directory of the standard wheel being built.
    _scratch: Path | None = None

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name != "wheel":
            return
        with _user_errors():
            settings = self._settings()
            package = self._package(settings)
            if version == "editable":
                self._build(settings, self._in_place_folder(package))
                return
            self._refuse_in_place_leftovers(package)
            self._scratch = Path(tempfile.mkdtemp(prefix="pypto-build-wheel-"))
            out = self._scratch / "kernels"
            try:
                toolchain = self._build(settings, out)
            except BuildFailed:
                raise  # keep the directory: the error names the log inside it
            except BaseException:
                self._remove_scratch()
                raise
        build_data["force_include"].update(wheel_files(out, settings.chips, package))
        build_data["pure_python"] = False
        build_data["infer_tag"] = False
        build_data["tag"] = wheel_tag(toolchain)

    def finalize(self, version: str, build_data: dict[str, Any], artifact_path: str) -> None:
        self._remove_scratch()

    def _remove_scratch(self) -> None:
        if self._scratch is not None:
            shutil.rmtree(self._scratch, ignore_errors=True)
            self._scratch = None

    def _hook_table(self) -> str:
        """The key path of this hook's table in ``pyproject.toml``."""
        if PLUGIN_NAME in self.build_config.target_config.get("hooks", {}):
            return f"tool.hatch.build.targets.{self.target_name}.hooks.{PLUGIN_NAME}"
        return f"tool.hatch.build.hooks.{PLUGIN_NAME}"

    def _settings(self) -> PyptoSettings:
        unknown = sorted(set(self.config) - HATCH_HOOK_KEYS)
        if unknown:
            raise SettingsError(
                f"{self._hook_table()}: unknown key '{unknown[0]}'; this table only turns the "
                f"hook on, pypto-build reads its settings from [{TABLE}]"
            )
        table = self.metadata.config.get("tool", {}).get("pypto")
        if not isinstance(table, dict):
            raise SettingsError(
                f"pyproject.toml: no [{TABLE}] table; the {PLUGIN_NAME} build hook needs one "
                "naming at least the program files and the package the kernels go to"
            )
        return apply_environment(settings_from_table(table))

    def _package(self, settings: PyptoSettings) -> str:
        if settings.package is None:
            raise SettingsError(
                f"{TABLE}.package: missing; the {PLUGIN_NAME} build hook needs to know where the "
                "kernels go inside the wheel (a package path such as 'moe/_kernels')"
            )
        return PurePosixPath(settings.package).as_posix()

    def _build(self, settings: PyptoSettings, out: Path) -> str:
        """Build the kernels into ``out/<chip>``; the toolchain's name."""
        project = Path(self.root)
        toolchain = project_toolchain(project, settings)
        chips = ", ".join(settings.chips)
        self.app.display_waiting(f"{PLUGIN_NAME}: building kernels for {chips} ({toolchain.name})")
        result = build_project(
            project,
            settings,
            out,
            toolchain=toolchain,
            cache=project_cache(settings),
            progress=sys.stderr,
        )
        for report in result.reports:
            self.app.display_info(
                f"{PLUGIN_NAME}: {report.chip}: {report.compiled} compiled, {report.cache_hits} "
                f"from cache ({report.toolchain} {report.toolchain_version})"
            )
        return toolchain.name

    def _in_place_folder(self, package: str) -> Path:
        """Where an editable install's kernels go: the source folder of ``package``."""
        folder = source_folder(Path(self.root), self.build_config.sources, package)
        if folder is None:
            raise SettingsError(
                f"{TABLE}.package: '{package}' is not inside a package of this project's source "
                "tree, so an editable install cannot build its kernels in place; point it into "
                "one of the wheel's packages or build a regular wheel"
            )
        return folder

    def _refuse_in_place_leftovers(self, package: str) -> None:
        """Refuse a standard wheel that would ship an editable install's kernels too."""
        root = Path(self.root)
        folder = source_folder(root, self.build_config.sources, package)
        if folder is None or not folder.is_dir():
            return
        where = folder.relative_to(root).as_posix()
        shipped = [
            path
            for path in walk_files(folder)
            if not self.build_config.path_is_excluded(f"{where}/{path.as_posix()}")
        ]
        if shipped:
            raise SettingsError(
                f"{where}/ holds kernels an editable install built in place, and this wheel "
                f"would ship them besides its own build; add '/{where}/' to .gitignore "
                "(hatchling then leaves it out) or delete it"
            )
