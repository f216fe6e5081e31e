"""STAND-INS for PyPTO's compiled C++ core (``pypto.pypto_core``), for ``run_upstream.py``.

The compatibility check runs PyPTO's real loader from a source checkout whose C++ core is not
built. Everything it runs is the checkout's own Python code, except these stand-ins at that one
boundary:

* ``pypto`` and ``pypto.runtime`` are registered as bare packages over the checkout's folders, so
  their ``__init__`` modules, which import the core (``pypto/__init__.py``, ``pypto/ir``) and
  the whole runtime eagerly, never run. Every submodule imported below them
  (``pypto.runtime.device_runner``, ``distributed_runner``, ``tensor_arg``, ...) is the
  checkout's file, unchanged.
* ``pypto.pypto_core`` is an empty package: a module that imports any other part of the core
  fails with ``No module named 'pypto.pypto_core.<name>'``, which names the stand-in missing.
* ``pypto.pypto_core.passes`` provides ``RuntimeKind`` and ``runtime_kind_to_name``, the only
  core names the loader needs: ``device_runner`` imports them to default
  ``RUNTIME_CONFIG["runtime"]`` (pypto ``python/pypto/runtime/device_runner.py:50, :552``). The
  wire names are the core's (``src/ir/transforms/pass_context.cpp``, ``kRuntimeNames``).

Nothing here imports torch or simpler.
"""

from __future__ import annotations

import enum
import sys
import types
from pathlib import Path

#: What ``install`` registers, for the report.
STANDIN_MODULES = ("pypto.pypto_core", "pypto.pypto_core.passes")


class RuntimeKind(enum.Enum):
    """STAND-IN for ``pypto.pypto_core.passes.RuntimeKind``; values are the wire names."""

    TENSORMAP_AND_RINGBUFFER = "tensormap_and_ringbuffer"
    HOST_BUILD_GRAPH = "host_build_graph"


def runtime_kind_to_name(kind: RuntimeKind) -> str:
    """STAND-IN for ``pypto.pypto_core.passes.runtime_kind_to_name``."""
    return kind.value


def _package(name: str, path: list[str]) -> types.ModuleType:
    module = types.ModuleType(name)
    module.__path__ = path
    module.__package__ = name
    return module


def install(pypto_python: Path) -> None:
    """Make ``import pypto.runtime.<module>`` load the checkout's modules under ``pypto_python``
    (the checkout's ``python/`` folder) with the stand-ins above for the compiled core.

    Refuses when a real ``pypto`` is already imported, so the stand-ins never shadow a built
    core."""
    package = pypto_python / "pypto"
    for required in (
        package / "runtime" / "distributed_runner.py",
        package / "_external_source.py",
    ):
        if not required.is_file():
            raise FileNotFoundError(f"{required}: not a PyPTO checkout's python/ folder")
    if "pypto" in sys.modules:
        raise RuntimeError("pypto is already imported; the stand-ins must be installed first")
    passes = types.ModuleType("pypto.pypto_core.passes")
    passes.__doc__ = "STAND-IN (compat/pypto_core_standins.py) for the compiled core's passes."
    passes.RuntimeKind = RuntimeKind  # type: ignore[attr-defined]
    passes.runtime_kind_to_name = runtime_kind_to_name  # type: ignore[attr-defined]
    core = _package("pypto.pypto_core", [])
    core.__doc__ = "STAND-IN (compat/pypto_core_standins.py): the compiled core is not built."
    core.passes = passes  # type: ignore[attr-defined]
    sys.modules.update(
        {
            "pypto": _package("pypto", [str(package)]),
            "pypto.runtime": _package("pypto.runtime", [str(package / "runtime")]),
            "pypto.pypto_core": core,
            "pypto.pypto_core.passes": passes,
        }
    )
