"""Which builtin template packages exist, and resolving a template-dir handle to one of them.

Handles keep the upstream form ``":<dotted.name>"`` so that the attrs the lowering writes read
exactly as upstream's, but a handle is a name, not an import path: it resolves only to a package
folder that is registered — one of ours (a folder under this directory holding a
``builtin.toml``) or a third-party one announced through the ``pypto_build.builtins`` entry-point
group — never to an arbitrary path or module. The same group carries the code a manifest may
name, an op contract or a launch-width rule: an entry point whose value names an object
(``module:attr``). This leaf only lists those (:attr:`BuiltinRegistry.code`); the lowering,
which knows what a contract is, loads them when a manifest names one that is not ours.
Discovery runs once per process (:func:`default_registry`); tools and tests that change the
environment build their own registry with :meth:`BuiltinRegistry.discover`.
"""

from __future__ import annotations

import functools
import importlib.metadata
import sys
from collections.abc import Iterable
from importlib.machinery import ModuleSpec
from pathlib import Path

from pypto_build.builtins.manifest import (
    MANIFEST_NAME,
    BuiltinPackage,
    ManifestError,
    load_package,
)
from pypto_build.errors import PyptoError, PyptoUsageError

#: Entry-point group through which other distributions register builtin packages. The value of
#: each entry point is the dotted name of a package whose folder holds a ``builtin.toml``, or
#: (``module:attr``) an op contract or launch-width rule, named by the entry point's name.
ENTRY_POINT_GROUP = "pypto_build.builtins"

_BUILTINS_DIR = Path(__file__).resolve().parent


class BuiltinRegistryError(PyptoUsageError, ValueError):
    """A builtin package registration is broken or conflicts with another one."""


class UnknownBuiltinError(PyptoError, LookupError):
    """A well-formed handle that no registered builtin package declares."""


def include_dir() -> Path:
    """The include root of the headers every rendered kernel and entry includes
    (``pypto_build/portability.h``, ``pypto_build/orchestration.h``, ...); a sub-build carries
    copies of the ones its sources include (:mod:`pypto_build.builtins.headers`)."""
    return _BUILTINS_DIR / "include"


class BuiltinRegistry:
    """A set of builtin packages keyed by handle; a handle is declared by exactly one folder."""

    def __init__(
        self,
        packages: Iterable[BuiltinPackage],
        broken: Iterable[str] = (),
        code: Iterable[importlib.metadata.EntryPoint] = (),
    ) -> None:
        #: Why each registered third-party package that could not be loaded was set aside.
        self.broken = tuple(broken)
        #: The entry points that name code (a contract or a launch-width rule), not loaded.
        self.code = tuple(code)
        by_handle: dict[str, BuiltinPackage] = {}
        for package in packages:
            known = by_handle.get(package.handle)
            if known is None:
                by_handle[package.handle] = package
            elif known.root != package.root:
                raise BuiltinRegistryError(
                    f"builtin handle {package.handle} is declared twice: by "
                    f"{known.manifest_path} and by {package.manifest_path}"
                )
        self._packages = dict(sorted(by_handle.items()))
        _require_distinct_ops(self._packages.values())

    @classmethod
    def discover(cls, extra_roots: Iterable[Path] = ()) -> BuiltinRegistry:
        """Ours, the entry-point registrations, and every package folder under ``extra_roots``.

        A registration whose package cannot be found or whose manifest is broken is set aside
        with its error (:attr:`broken`), not raised: it is a third party's mistake, and it must
        not fail the builds of projects that never call its op. A program that calls an op no
        loaded package implements gets the error then (:meth:`require_none_broken`)."""
        packages = [load_package(root) for root in _package_roots(_BUILTINS_DIR)]
        broken: list[str] = []
        code: list[importlib.metadata.EntryPoint] = []
        for entry_point in _entry_points():
            if ":" in entry_point.value:
                code.append(entry_point)
                continue
            try:
                packages.append(load_package(_entry_point_root(entry_point)))
            except (BuiltinRegistryError, ManifestError) as error:
                broken.append(str(error))
        packages += [load_package(found) for root in extra_roots for found in _package_roots(root)]
        return cls(packages, broken, code)

    def require_none_broken(self) -> None:
        """Raise the errors of the packages set aside, if any: the op a program calls, which no
        loaded package implements, may be one of theirs."""
        if self.broken:
            raise BuiltinRegistryError("; ".join(self.broken))

    def packages(self) -> tuple[BuiltinPackage, ...]:
        """Every registered package, sorted by handle."""
        return tuple(self._packages.values())

    def handles(self) -> tuple[str, ...]:
        return tuple(self._packages)

    def resolve(self, handle: str) -> BuiltinPackage:
        """The package that declares ``handle``."""
        _require_handle_form(handle)
        package = self._packages.get(handle)
        if package is None:
            self.require_none_broken()
            raise UnknownBuiltinError(
                f"unknown builtin template_dir {handle!r}: no registered builtin package declares "
                f"it; registered: {', '.join(self._packages) or '(none)'}. Third-party packages "
                f"register through the entry-point group {ENTRY_POINT_GROUP!r}"
            )
        return package


def _require_distinct_ops(packages: Iterable[BuiltinPackage]) -> None:
    """Each op is implemented by one package: a program's call must resolve to one kernel."""
    owners: dict[str, BuiltinPackage] = {}
    for package in packages:
        for op in (package.public_op, package.builtin_op):
            known = owners.setdefault(op, package)
            if known is not package:
                raise BuiltinRegistryError(
                    f"op {op} is implemented twice: by {known.manifest_path} and by "
                    f"{package.manifest_path}"
                )


@functools.cache
def default_registry() -> BuiltinRegistry:
    """The registry of this process's environment, discovered on first use."""
    return BuiltinRegistry.discover()


def resolve(handle: str) -> BuiltinPackage:
    """Resolve a ``builtin_template_dir`` handle against :func:`default_registry`."""
    _require_handle_form(handle)
    return default_registry().resolve(handle)


def all_packages() -> tuple[BuiltinPackage, ...]:
    """Every package of :func:`default_registry`, sorted by handle."""
    return default_registry().packages()


def _require_handle_form(handle: str) -> None:
    if not handle.startswith(":"):
        raise ValueError(f"builtin template_dir must be a package-resource handle, got {handle!r}")


def _package_roots(root: Path) -> list[Path]:
    """Folders under ``root`` (itself included) that hold a manifest, sorted."""
    return sorted(manifest.parent.resolve() for manifest in root.rglob(MANIFEST_NAME))


def _entry_points() -> list[importlib.metadata.EntryPoint]:
    entry_points = importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)
    return sorted(entry_points, key=lambda ep: (ep.name, ep.value))


def entry_point_text(entry_point: importlib.metadata.EntryPoint) -> str:
    """An entry point of the group as errors name it: its line, distribution and group."""
    dist = entry_point.dist
    source = f" of distribution {dist.name}" if dist is not None else ""
    return f"entry point {entry_point.name} = {entry_point.value!r}{source} ({ENTRY_POINT_GROUP})"


def _entry_point_root(entry_point: importlib.metadata.EntryPoint) -> Path:
    """The package folder an entry point names, found without importing anything: see
    :func:`_package_locations`."""
    where = entry_point_text(entry_point)
    name = entry_point.value
    try:
        locations = _package_locations(name)
    except _NotAPackage as error:
        raise BuiltinRegistryError(f"{where}: {error}") from None
    except Exception as error:  # a finder of the environment that fails; nothing of ours
        raise BuiltinRegistryError(f"{where}: cannot locate package {name!r}: {error}") from None
    folders = [location for location in locations if (location / MANIFEST_NAME).is_file()]
    if len(folders) != 1:
        raise BuiltinRegistryError(
            f"{where}: expected one folder of {name!r} holding {MANIFEST_NAME}, "
            f"found {len(folders)}"
        )
    return folders[0].resolve()


class _NotAPackage(LookupError):
    """A dotted name that names no installed package folder."""


def _package_locations(name: str) -> list[Path]:
    """The folders of the package ``name``, asked of the import system's finders one dotted
    part at a time, each part within its parent's folders, so that no module is imported.

    ``importlib.util.find_spec`` imports the parent packages, and so would run a plugin's
    ``__init__.py`` inside every build of every project in the environment: one that raises
    ``SystemExit(0)``, prints, or fails would end or change builds that never use its op. A
    template package is data (a manifest and templates), so its folder is all that is needed.
    """
    if not all(part.isidentifier() for part in name.split(".")):
        raise _NotAPackage(f"{name!r} is not a dotted package name")
    locations: list[str] | None = None  # the top level: sys.path
    parts = name.split(".")
    for count in range(1, len(parts) + 1):
        dotted = ".".join(parts[:count])
        spec = _find_spec(dotted, locations)
        if spec is None:
            raise _NotAPackage(f"no package {name!r} is installed")
        if spec.submodule_search_locations is None:
            raise _NotAPackage(f"{dotted!r} is a module, not a package folder")
        locations = list(spec.submodule_search_locations)
    return [Path(location) for location in locations or ()]


def _find_spec(dotted: str, locations: list[str] | None) -> ModuleSpec | None:
    """What the first finder of ``sys.meta_path`` that knows ``dotted`` says of it (the path
    finder, and the finders editable installs add), without loading it."""
    for finder in sys.meta_path:
        find_spec = getattr(finder, "find_spec", None)
        if find_spec is not None and (spec := find_spec(dotted, locations)) is not None:
            found: ModuleSpec = spec
            return found
    return None
