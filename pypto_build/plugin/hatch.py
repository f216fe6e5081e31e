"""The hatchling build hook: ``pip wheel`` of a model package builds its kernels and ships them
(``docs/packaging.md``).

A model package turns the hook on with ``build-backend = "pypto_build.backend"``
(:mod:`pypto_build.backend`), or under ``hatchling.build`` with an empty
``[tool.hatch.build.targets.wheel.hooks.pypto]`` table, and lists ``pypto-build`` in
``build-system.requires``; the hook reads ``[tool.pypto]`` (:mod:`pypto_build.plugin.settings`,
with the ``PYPTO_*`` environment overrides and, under that backend, the front end's ``-C``
config settings, which hatchling itself hands hooks none of) and runs the engine.

* **Wheel target only.** An sdist ships the program files and kernel sources, never build
  output; the hook does nothing for any other target.
* **Standard wheels.** The engine builds into a fresh temporary directory, never into the source
  tree, and every file of ``<out>/<chip>/`` goes into the wheel as ``<package>/<chip>/...``
  through ``force_include``, one entry per file in sorted order (hatchling writes forced files
  in insertion order). The compile logs stay beside the chip trees, so no log is shipped; the
  directory is removed once the wheel is written, and kept when a compile fails, so that the
  log path in the error still points at the log.
* **The tag is explicit** (setting ``platform-tag``), its platform asked of the toolchain. The
  kernels are not CPython extensions, so the tag never names an interpreter or ABI:
  ``py3-none-<platform>``. ``sim`` binaries are shared
  objects for this host, so by default they are tagged with its platform
  (``py3-none-linux_x86_64``, which ``auditwheel repair`` turns into the manylinux tag their
  symbols allow); ``cann`` binaries run on the NPU (AI Core images, and orchestrations built
  with the toolkit's aarch64 device compiler), whatever the host, so that wheel is
  ``py3-none-any`` with ``Root-Is-Purelib: false``. Which chips it holds cannot be said in a
  tag; the runtime picks ``<package>/<chip>/`` itself.
* **Editable installs** build in place: hatchling's editable wheel points the interpreter at the
  source tree, where kernels put into the wheel would never be seen, so the sub-builds are
  written into the source folder of ``package`` (``src/moe/_kernels`` for
  ``package = "moe/_kernels"`` with a ``src`` layout), published as every build is (a staging
  sibling replaces the folder whole, :mod:`pypto_build.chip_build.publish`), and re-running
  ``pip install -e .`` refreshes them. That folder, and the names a killed build leaves beside
  it, are listed in the project's ``.gitignore`` (:mod:`.vcs_ignore`) before the build, so git,
  sdists and later wheels leave them out, and a standard wheel's build removes such leftovers
  first; ``hatch clean`` removes the folder (:meth:`clean`).
  Without ``dev-mode-dirs`` hatchling's editable wheel needs the ``editables`` package; the hook
  checks for it before it builds anything and says what to add when it is missing.
* **Reproducible.** Hatchling writes reproducible archives (``SOURCE_DATE_EPOCH``, fixed modes,
  sorted walks); the engine's outputs are pure functions of the inputs, with no absolute path.

Every failure of the build's inputs or machine (a :class:`~pypto_build.errors.PyptoError`, or
an operating-system error) is raised as :class:`PyptoBuildError`, whose message is what the user
must read, as the command line prints it: the settings key path at fault, a program diagnostic
in compiler style, a broken builtin package's manifest, or the failed compiles with the log's
path. It ends the backend's process with that message and no traceback.
"""

from __future__ import annotations

import importlib.util
import shutil
import sys
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from hatchling.builders.config import BuilderConfig
from hatchling.builders.hooks.plugin.interface import BuildHookInterface

from pypto_build.errors import PyptoError, describe_os_error

if TYPE_CHECKING:
    from pypto_build.chip_build.toolchains import Toolchain
    from pypto_build.plugin.last_build import Unchanged
    from pypto_build.plugin.settings import PyptoSettings

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


class PyptoBuildError(SystemExit):
    """The kernels could not be built; the message says why and what to change.

    A :class:`SystemExit` whose code is the message: every front end runs a PEP 517 backend in
    a process of its own (pip, build and uv through ``pyproject_hooks``, hatch through
    ``hatchling build``), none of which catches it, so that process prints the message alone
    to stderr and exits with status 1, and the front end fails the build showing it. Any other
    exception would print a Python traceback above the message.
    """

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


def wheel_tag(toolchain: Toolchain, platform_tag: str = "auto") -> str:
    """The wheel tag for kernels built by ``toolchain`` with the ``platform-tag`` setting.

    ``auto`` is the platform the toolchain gives its binaries (this host's for host shared
    objects, none for device binaries); an explicit platform the toolchain refuses (``any`` or a
    foreign platform for kernels this host's interpreter loads) is a settings error."""
    if platform_tag == "auto":
        return f"py3-none-{toolchain.wheel_platform()}"
    problem = toolchain.wheel_platform_problem(platform_tag)
    if problem is not None:
        from pypto_build.plugin.settings import TABLE, SettingsError, setting_key

        raise SettingsError(f"{TABLE}.{setting_key('platform_tag')}: {problem}")
    return f"py3-none-{platform_tag}"


def wheel_files(out_dir: Path, chips: Sequence[str], package: str) -> dict[str, str]:
    """``force_include`` entries shipping every file of ``out_dir/<chip>`` as
    ``<package>/<chip>/...``, ordered by their path in the wheel."""
    from pypto_build.files import walk_files

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


#: The folder of the wheel's import package that the chip trees go to when ``package`` is not
#: set: ``my_model/_kernels`` for the package ``my_model``.
KERNELS_FOLDER = "_kernels"


def default_package(config: BuilderConfig, project_name: str) -> str:
    """``<import package>/_kernels``, the import package being the one hatchling ships (its
    ``packages`` setting, else the folder its default file selection finds for the project's
    name), as a path in the wheel. Several packages: the one named like the project; none
    (a single-module project), or several with none of the project's name, is a
    :class:`~pypto_build.plugin.settings.SettingsError` asking for ``package``."""
    from pypto_build.plugin.settings import TABLE, SettingsError

    packages = [config.get_distribution_path(package) for package in config.packages]
    if len(packages) > 1:
        named = project_name.replace("-", "_").replace(".", "_").lower()
        packages = [p for p in packages if PurePosixPath(p).name.lower() == named] or packages
    if len(packages) != 1:
        found = ", ".join(packages) or "none"
        raise SettingsError(
            f"{TABLE}: missing key 'package'; the wheel's import package cannot be told "
            f"(packages: {found}), so say where the kernels go, such as "
            f'package = "my_model/{KERNELS_FOLDER}"'
        )
    return f"{PurePosixPath(packages[0]).as_posix()}/{KERNELS_FOLDER}"


def _user_message(err: Exception) -> str | None:
    """What the user must read of ``err``; None when it is not a failure of the build's
    inputs or environment (a bug, which keeps its traceback)."""
    if isinstance(err, PyptoError):
        return err.render()
    if isinstance(err, OSError):
        return describe_os_error(err)
    return None


@contextmanager
def _user_errors() -> Iterator[None]:
    """Turn the engine's failures into :class:`PyptoBuildError` with the message a user reads.

    The engine is imported in the hook's methods, and only when a build needs it: hatchling
    imports every plugin of its group for every build that asks for one, and a plugin's import
    must not cost a build that does not use it. Its failures are told from bugs by the error
    root alone, :mod:`pypto_build.errors`, which imports nothing."""
    try:
        yield
    except Exception as err:
        message = _user_message(err)
        if message is None:
            raise
        raise PyptoBuildError(message) from None


class PyptoBuildHook(BuildHookInterface[BuilderConfig]):
    """Builds the kernels ``[tool.pypto]`` describes into the wheel (see the module)."""

    PLUGIN_NAME = PLUGIN_NAME

    #: The temporary build directory of the standard wheel being built.
    _scratch: Path | None = None
    #: Whether a failure keeps it: a failed compile's message names the log inside it.
    _keep_scratch = False

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name != "wheel":
            return
        with _user_errors():
            settings = self._settings()
            package = self._package(settings)
            if version == "editable":
                self._build_in_place(settings, package)
                return
            self._refuse_in_place_leftovers(package)
            self._scratch = Path(tempfile.mkdtemp(prefix="pypto-build-wheel-"))
            try:
                toolchain, shipped = self._build_wheel_files(settings, package, self._scratch)
                tag = wheel_tag(toolchain, settings.platform_tag)
            except BaseException:
                if not self._keep_scratch:
                    self._remove_scratch()
                raise
        build_data["force_include"].update(shipped)
        build_data["pure_python"] = False
        build_data["infer_tag"] = False
        build_data["tag"] = tag

    def finalize(self, version: str, build_data: dict[str, Any], artifact_path: str) -> None:
        self._remove_scratch()

    def clean(self, versions: list[str]) -> None:
        """``hatch clean`` (and ``hatch build -c``): remove the kernels an editable install
        built in place, when that folder holds nothing but pypto-build's chip trees."""
        if self.target_name != "wheel":
            return
        from pypto_build.chip_build.subbuild import is_render_tree

        with _user_errors():
            folder = self._source_folder(self._package(self._settings()))
        if folder is not None and folder.is_dir() and is_render_tree(folder):
            shutil.rmtree(folder)
            self.app.display_info(f"{PLUGIN_NAME}: removed {folder}")

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
        from pypto_build.plugin.config_settings import current
        from pypto_build.plugin.settings import (
            TABLE,
            SettingsError,
            apply_config_settings,
            apply_environment,
            pypto_table,
            settings_from_table,
        )

        unknown = sorted(set(self.config) - HATCH_HOOK_KEYS)
        if unknown:
            raise SettingsError(
                [
                    f"{self._hook_table()}: unknown key '{key}'; this table only turns the hook "
                    f"on, pypto-build reads its settings from [{TABLE}]"
                    for key in unknown
                ]
            )
        table = pypto_table(self.metadata.config, "pyproject.toml")
        if table is None:
            raise SettingsError(
                f"pyproject.toml: no [{TABLE}] table; the {PLUGIN_NAME} build hook needs one "
                "naming at least the program files and the package the kernels go to"
            )
        settings = apply_environment(settings_from_table(table), warn=self._warn)
        return apply_config_settings(settings, current(), warn=self._warn)

    def _package(self, settings: PyptoSettings) -> str:
        """Where the chip trees go in the wheel: the ``package`` setting, else ``_kernels``
        in the wheel's own import package (:func:`default_package`)."""
        if settings.package is not None:
            return PurePosixPath(settings.package).as_posix()
        return default_package(self.build_config, self.metadata.core.name)

    def _build_wheel_files(
        self, settings: PyptoSettings, package: str, scratch: Path
    ) -> tuple[Toolchain, dict[str, str]]:
        """Build the kernels of a standard wheel in ``scratch``: the toolchain and the
        ``force_include`` entries shipping them."""
        unchanged = self._unchanged(settings)
        if unchanged.record is not None:
            shipped = unchanged.store.stage(unchanged.record, scratch / "kernels", package)
            if shipped is not None:
                self._reused(unchanged)
                return unchanged.toolchain, shipped
        out = scratch / "kernels"
        chips = self._full_build(settings, out, unchanged)
        return unchanged.toolchain, wheel_files(out, chips, package)

    def _build(self, settings: PyptoSettings, out: Path) -> None:
        """Build the kernels into the folder ``out`` (``out/<chip>``)."""
        unchanged = self._unchanged(settings)
        record = unchanged.record
        if record is not None and unchanged.store.restore(record, out):
            self._reused(unchanged)
            return
        self._full_build(settings, out, unchanged)

    def _unchanged(self, settings: PyptoSettings) -> Unchanged:
        """The toolchain the settings select, and the record of the project's last build when
        nothing it read has changed (:mod:`pypto_build.build_records.record`)."""
        from pypto_build.plugin.last_build import unchanged_build
        from pypto_build.plugin.project_target import project_toolchain

        project = Path(self.root)
        toolchain = project_toolchain(project, settings)
        chips = ", ".join(settings.chips or ["every chip the programs' ops support"])
        self.app.display_waiting(f"{PLUGIN_NAME}: building kernels for {chips} ({toolchain.name})")
        unchanged = unchanged_build(project, settings, toolchain, warn=self._warn)
        if unchanged.changed is not None:
            self.app.display_info(f"{PLUGIN_NAME}: {unchanged.changed} since the last build")
        return unchanged

    def _full_build(
        self, settings: PyptoSettings, out: Path, unchanged: Unchanged
    ) -> tuple[str, ...]:
        """Lower, render and compile into ``out``, record the build for the next one and bring
        the cache within its bound; the chips built."""
        from pypto_build.build_records.folder_bound import bound_after_build
        from pypto_build.chip_build.compile import BuildFailed
        from pypto_build.plugin.last_build import remember
        from pypto_build.plugin.project_build import build_project, project_cache
        from pypto_build.store.size_limit import parse_size

        project = Path(self.root)
        cache = project_cache(settings)
        try:
            result = build_project(
                project,
                settings,
                out,
                toolchain=unchanged.toolchain,
                cache=cache,
                progress=sys.stderr,
            )
        except BuildFailed:
            self._keep_scratch = True
            raise
        for warning in result.warnings:
            self.app.display_warning(warning.render())
        for report in result.reports:
            self.app.display_info(
                f"{PLUGIN_NAME}: {report.chip}: {report.compiled} compiled, {report.cache_hits} "
                f"from cache ({report.toolchain} {report.toolchain_version})"
            )
        remember(unchanged, project, result)
        bound_after_build(
            unchanged.cache_root, parse_size(settings.cache_max_size), warn=self._warn
        )
        return tuple(report.chip for report in result.reports)

    def _reused(self, unchanged: Unchanged) -> None:
        """Say what a build that changed nothing shipped, and count it in the compile cache's
        statistics as the build it stands for: every binary a hit, none compiled."""
        from pypto_build.chip_build.compile_cache.cache import CompileCache
        from pypto_build.chip_build.compile_cache.stats import BuildCounts

        assert unchanged.record is not None
        for warning in unchanged.record.warnings:
            self.app.display_warning(warning)
        for report in unchanged.record.reports:
            self.app.display_info(
                f"{PLUGIN_NAME}: {report.chip}: nothing changed since the last build, "
                f"{report.binaries} binaries reused ({report.toolchain} "
                f"{report.toolchain_version})"
            )
        hits = sum(report.binaries for report in unchanged.record.reports)
        CompileCache(unchanged.cache_root, warn=self._warn).record_build(BuildCounts(hits, 0))

    def _warn(self, message: str) -> None:
        self.app.display_warning(f"{PLUGIN_NAME}: warning: {message}")

    def _source_folder(self, package: str) -> Path | None:
        return source_folder(Path(self.root), self.build_config.sources, package)

    def _build_in_place(self, settings: PyptoSettings, package: str) -> None:
        """An editable install's kernels: built into the source folder of ``package``, which
        the project's ``.gitignore`` then lists."""
        from pypto_build.plugin.settings import TABLE, SettingsError
        from pypto_build.plugin.vcs_ignore import ensure_ignored

        self._refuse_editable_without_backend()
        folder = self._source_folder(package)
        if folder is None:
            raise SettingsError(
                f"{TABLE}.package: '{package}' is not inside a package of this project's "
                "source tree, so an editable install cannot build its kernels in place; point "
                "it into one of the wheel's packages or build a regular wheel"
            )
        # Listed before building: even a build killed halfway leaves nothing git or an sdist
        # would pick up.
        where = folder.relative_to(self.root).as_posix()
        if not self.build_config.path_is_excluded(f"{where}/"):
            gitignore = ensure_ignored(Path(self.root), folder)
            if gitignore is not None:
                self.app.display_info(
                    f"{PLUGIN_NAME}: listed /{where}/ in {gitignore} (kernels built in place "
                    "stay out of git, sdists and wheels)"
                )
        self._build(settings, folder)

    def _refuse_editable_without_backend(self) -> None:
        """hatchling builds an editable wheel without ``dev-mode-dirs`` with the ``editables``
        package; fail before building anything, saying what to add, when it is missing."""
        from pypto_build.plugin.settings import SettingsError

        if self.build_config.dev_mode_dirs or importlib.util.find_spec("editables") is not None:
            return
        packages = self.build_config.packages
        parents = sorted({str(PurePosixPath(p).parent) for p in packages} - {"."})
        dirs = ", ".join(f'"{parent}"' for parent in parents or ["."])
        raise SettingsError(
            f"tool.hatch.build.targets.wheel: an editable install needs dev-mode-dirs (or the "
            "editables package, which this build environment lacks); add "
            f"dev-mode-dirs = [{dirs}] to [tool.hatch.build.targets.wheel], the folder that "
            "holds the packages, as samples/moe_a2a does"
        )

    def _refuse_in_place_leftovers(self, package: str) -> None:
        """Refuse a standard wheel that would ship an editable install's kernels too, and
        remove what a killed editable build left beside them (a staging folder in the package
        would otherwise travel in the wheel)."""
        from pypto_build.chip_build.publish import clear_debris
        from pypto_build.files import walk_files
        from pypto_build.plugin.settings import SettingsError

        root = Path(self.root)
        folder = self._source_folder(package)
        if folder is None:
            return
        clear_debris(folder, notify=self.app.display_waiting)
        if not folder.is_dir():
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
                "(hatchling then leaves it out), delete it or run hatch clean"
            )
