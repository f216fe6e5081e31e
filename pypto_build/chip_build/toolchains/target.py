"""What CANN binaries are built for: PyPTO's runtime and PTO-ISA, and their revisions.

A CANN build compiles against the runtime's headers and links its sources (see
:mod:`~pypto_build.chip_build.toolchains.runtime_tree`), and its kernels include PTO-ISA. The
settings name them; paths arrive resolved against the project:

* the runtime: ``tool.pypto.runtime-root``, required (nothing guesses which runtime the
  binaries must run under);
* PTO-ISA: ``tool.pypto.pto-isa-root``, else ``$PTO_ISA_ROOT``, else the runtime's managed
  clone ``<runtime-root>/build/pto-isa``, the one PyPTO's runtime itself compiles with
  (``simpler_setup/pto_isa.py``, ``get_pto_isa_clone_path``);
* the revisions recorded in each sub-build's ``cache/binary_context.json``:
  ``tool.pypto.runtime-revision`` / ``tool.pypto.pto-isa-revision``, else the folders' clean
  git ``HEAD`` (:mod:`~pypto_build.chip_build.toolchains.revisions`). When one is unknown the
  build writes no context, and PyPTO's runtime rebuilds those binaries instead of trusting them.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from pypto_build.chip_build.toolchains.base import ToolchainError
from pypto_build.chip_build.toolchains.revisions import Revision, settled_revision
from pypto_build.chip_build.toolchains.runtime_tree import RUNTIME_NAME, RuntimeTree

RUNTIME_ROOT_KEY = "tool.pypto.runtime-root"
PTO_ISA_ROOT_KEY = "tool.pypto.pto-isa-root"
RUNTIME_REVISION_KEY = "tool.pypto.runtime-revision"
PTO_ISA_REVISION_KEY = "tool.pypto.pto-isa-revision"
#: The managed PTO-ISA clone inside a runtime root.
MANAGED_PTO_ISA = Path("build/pto-isa")
#: ``_BINARY_CONTEXT_SCHEMA`` of ``pypto/runtime/_binary_cache.py``.
BINARY_CONTEXT_SCHEMA = 1


@dataclass(frozen=True)
class TargetSettings:
    """The settings a CANN build reads about its target, paths resolved against the project."""

    runtime_root: Path | None = None
    pto_isa_root: Path | None = None
    runtime_revision: str | None = None
    pto_isa_revision: str | None = None


@dataclass(frozen=True)
class PtoIsaRoot:
    """A PTO-ISA checkout and which setting named it."""

    path: Path
    #: ``tool.pypto.pto-isa-root``, ``PTO_ISA_ROOT`` or ``the runtime's managed clone``.
    origin: str


def resolve_pto_isa_root(
    settings: TargetSettings, environ: Mapping[str, str] | None = None
) -> PtoIsaRoot | None:
    """The PTO-ISA root in the order of the module docstring, or None when nothing names one;
    a named root without ``include/`` is a :class:`ToolchainError`."""
    environ = os.environ if environ is None else environ
    if settings.pto_isa_root is not None:
        root, origin = settings.pto_isa_root, PTO_ISA_ROOT_KEY
    elif environ.get("PTO_ISA_ROOT"):
        root, origin = Path(environ["PTO_ISA_ROOT"]), "PTO_ISA_ROOT"
    elif settings.runtime_root is not None:
        root = settings.runtime_root / MANAGED_PTO_ISA
        origin = "the runtime's managed clone"
    else:
        return None
    if not (root / "include").is_dir():
        raise ToolchainError(
            f"PTO-ISA root {root} ({origin}) is not a PTO-ISA checkout (no include/ folder); "
            f"set {PTO_ISA_ROOT_KEY} or PTO_ISA_ROOT to one"
        )
    return PtoIsaRoot(root.resolve(), origin)


class CannTarget:
    """The runtime and PTO-ISA of a CANN build, with their revisions (found on first use)."""

    def __init__(self, runtime: RuntimeTree, pto_isa: PtoIsaRoot, settings: TargetSettings) -> None:
        self.runtime = runtime
        self.pto_isa = pto_isa
        self._settings = settings

    @functools.cached_property
    def runtime_revision(self) -> Revision:
        return settled_revision(
            self._settings.runtime_revision, RUNTIME_REVISION_KEY, self.runtime.root
        )

    @functools.cached_property
    def pto_isa_revision(self) -> Revision:
        return settled_revision(
            self._settings.pto_isa_revision, PTO_ISA_REVISION_KEY, self.pto_isa.path
        )

    def binary_context(self, platform: str) -> dict[str, object] | None:
        """PyPTO's ``BinaryCacheContext`` for binaries of ``platform``; None while a revision
        is unknown (PyPTO's runtime then trusts no binary, and neither is a context written)."""
        runtime, pto_isa = self.runtime_revision.commit, self.pto_isa_revision.commit
        if runtime is None or pto_isa is None:
            return None
        return {
            "platform": platform,
            "pto_isa_revision": pto_isa,
            "runtime_name": RUNTIME_NAME,
            "runtime_revision": runtime,
            "schema": BINARY_CONTEXT_SCHEMA,
        }

    def unknown_revisions(self) -> str | None:
        """One line saying which revisions are unknown and what follows, or None."""
        return unknown_revisions(self.runtime_revision, self.pto_isa_revision)


def unknown_revisions(runtime: Revision, pto_isa: Revision) -> str | None:
    """One line saying which of the two revisions are unknown and what follows, or None."""
    unknown = [
        (name, revision.source, key)
        for name, revision, key in (
            ("runtime", runtime, RUNTIME_REVISION_KEY),
            ("PTO-ISA", pto_isa, PTO_ISA_REVISION_KEY),
        )
        if revision.commit is None
    ]
    if not unknown:
        return None
    reasons = ", ".join(f"the {name} revision is unknown ({why})" for name, why, _ in unknown)
    keys = " and ".join(key for _, _, key in unknown)
    return (
        f"CANN builds write no cache/binary_context.json, as {reasons}; PyPTO's runtime will "
        f"rebuild their binaries instead of reusing them (set {keys})"
    )


def resolve_target(
    settings: TargetSettings, environ: Mapping[str, str] | None = None, *, needed_by: str
) -> CannTarget:
    """The target the settings name; ``needed_by`` (``toolchain 'cann'``) says, in the error
    for a missing runtime root, what needs one."""
    if settings.runtime_root is None:
        raise ToolchainError(
            f"{needed_by} builds for PyPTO's runtime, and none is configured: set "
            f"{RUNTIME_ROOT_KEY} (or PYPTO_RUNTIME_ROOT) to a simpler checkout or an installed "
            "simpler's simpler_setup/_assets folder; orchestrations link its sources, and "
            "kernels and orchestrations include its headers for the chip's platform. Or build "
            "with toolchain 'sim'."
        )
    runtime = RuntimeTree(settings.runtime_root, RUNTIME_ROOT_KEY)
    pto_isa = resolve_pto_isa_root(settings, environ)
    assert pto_isa is not None  # a runtime root gives a default
    return CannTarget(runtime, pto_isa, settings)
