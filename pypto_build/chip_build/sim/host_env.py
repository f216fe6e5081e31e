"""Running a HOST orchestrator module in the simulator: the names it imports from PyPTO's runtime,
served by the simulated world.

A tree's ``orchestration/host_orch.py`` is written for PyPTO's runtime, as pypto's own generated
modules are: it imports ``torch``, ``CallConfig``, ``CommBufferSpec``, ``DataType``, ``TaskArgs``
and ``TensorArgType`` from ``simpler.task_interface``, ``make_tensor_arg`` from
``pypto.runtime.tensor_arg`` and ``_submit_chip`` from ``pypto.runtime.distributed_runner``. The
simulator runs the same file: :func:`load_host_module` executes it with an import function that
hands it this module's stand-ins for exactly those names (and refuses any other import), so
neither torch, simpler nor pypto needs to be installed and nothing outside the module is
touched. Of torch a generated module only allocates the per-rank ordering tokens
(``torch.zeros(shape, dtype=torch.int32).share_memory_()``); here a token is a NumPy array. The
entry is found as PyPTO's loader finds it: the one function of the module marked
``_pypto_distributed_entry``.
"""

from __future__ import annotations

import builtins
import types
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from pypto_build.chip_build.host_orch_codegen import ALLOC_INTERMEDIATES, ENTRY_MARKER
from pypto_build.chip_build.runtime_types import DataType, TensorArgType
from pypto_build.chip_build.sim.l3 import (
    CallConfig,
    CommBufferSpec,
    TaskArgs,
    make_tensor_arg,
    submit_chip,
)
from pypto_build.errors import PyptoUsageError


class HostModuleError(PyptoUsageError, ValueError):
    """A HOST orchestrator module the simulator cannot run (its path and the reason)."""


class _SharedArray(np.ndarray):
    """A NumPy array with torch's ``share_memory_()`` (host memory is shared here already)."""

    def share_memory_(self) -> _SharedArray:
        return self


_FLOAT32 = np.dtype(np.float32)


def _zeros(shape: Sequence[int], dtype: np.dtype[Any] = _FLOAT32) -> _SharedArray:
    return np.zeros(tuple(shape), dtype=dtype).view(_SharedArray)


def _module(name: str, **attributes: object) -> types.ModuleType:
    module = types.ModuleType(name)
    module.__dict__.update(attributes)
    return module


def _torch() -> types.ModuleType:
    dtypes = {
        "float32": np.float32,
        "float16": np.float16,
        "int8": np.int8,
        "uint8": np.uint8,
        "int16": np.int16,
        "int32": np.int32,
        "int64": np.int64,
        "bool": np.bool_,
    }
    return _module("torch", zeros=_zeros, **{k: np.dtype(v) for k, v in dtypes.items()})


def _provided() -> dict[str, types.ModuleType]:
    """The stand-in modules by import name (packages included, for ``import a.b``)."""
    task_interface = _module(
        "simpler.task_interface",
        CallConfig=CallConfig,
        CommBufferSpec=CommBufferSpec,
        DataType=DataType,
        TaskArgs=TaskArgs,
        TensorArgType=TensorArgType,
    )
    tensor_arg = _module("pypto.runtime.tensor_arg", make_tensor_arg=make_tensor_arg)
    runner = _module("pypto.runtime.distributed_runner", _submit_chip=submit_chip)
    runtime = _module("pypto.runtime", tensor_arg=tensor_arg, distributed_runner=runner)
    return {
        "torch": _torch(),
        "simpler": _module("simpler", task_interface=task_interface),
        "simpler.task_interface": task_interface,
        "pypto": _module("pypto", runtime=runtime),
        "pypto.runtime": runtime,
        "pypto.runtime.tensor_arg": tensor_arg,
        "pypto.runtime.distributed_runner": runner,
    }


def _importer(path: Path, provided: Mapping[str, types.ModuleType]) -> Callable[..., object]:
    def import_(
        name: str,
        globals_: object = None,
        locals_: object = None,
        fromlist: Sequence[str] | None = (),
        level: int = 0,
    ) -> types.ModuleType:
        if level == 0 and name in provided:
            return provided[name] if fromlist else provided[name.partition(".")[0]]
        raise ImportError(
            f"{path} imports {name!r}, which a HOST orchestrator running in the simulator cannot "
            f"import (it provides: {', '.join(sorted(provided))})"
        )

    return import_


def load_host_module(path: Path) -> types.ModuleType:
    """Execute the HOST orchestrator module at ``path`` with the simulator's runtime names."""
    try:
        source = path.read_text(encoding="utf-8")
        code = compile(source, str(path), "exec")
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError) as exc:
        raise HostModuleError(f"{path}: unreadable HOST orchestrator: {exc}") from None
    module = types.ModuleType(f"pypto_build_host_{path.stem}")
    module.__file__ = str(path)
    module.__dict__["__builtins__"] = {
        **builtins.__dict__,
        "__import__": _importer(path, _provided()),
    }
    exec(code, module.__dict__)
    return module


def entry_of(module: types.ModuleType, path: Path) -> Callable[..., object]:
    """The module's entry: its one function marked ``_pypto_distributed_entry``."""
    entries = [
        value
        for value in vars(module).values()
        if isinstance(value, types.FunctionType)
        and value.__module__ == module.__name__
        and getattr(value, ENTRY_MARKER, False)
    ]
    if len(entries) != 1:
        raise HostModuleError(
            f"{path}: expected one function marked {ENTRY_MARKER}, found {len(entries)}"
        )
    return entries[0]


def allocate_intermediates(
    module: types.ModuleType, tensors: dict[str, object], world_size: int
) -> None:
    """Run the module's ``_alloc_intermediates`` on ``tensors`` (if it has one)."""
    allocate = getattr(module, ALLOC_INTERMEDIATES, None)
    if callable(allocate):
        allocate(tensors, world_size=world_size)
