"""``distributed_meta.json``: what PyPTO's L3 loader needs to know about a tree's HOST orchestrator.

PyPTO (pypto e2d0f78, ``DistributedCompiledProgram.from_dir``) reloads a distributed program
from its output folder through this file: the orchestrator's parameters in order (name,
direction, shape, element type), how many values it returns, the platform and backend, and the
run configuration (the devices, the runtime). The format is pypto's schema 2, key for key, so a
tree built here loads there unchanged; our simulator reads the parameters from the same file, so
inputs are checked and ``Out`` tensors allocated before anything runs.

Element types are written as PyPTO's ``str(DataType)`` (``fp32``, ``bfloat16``, ...), directions
as its ``ParamDirection`` names. A rendered tree names no platform (it depends on the toolchain);
a build adds the one its binaries are for (:func:`with_platform`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

from pypto_build.chip_build.chips import CHIPS, Chip
from pypto_build.chip_build.runtime_types import DataType
from pypto_build.errors import PyptoUsageError
from pypto_build.files import atomic_write_text, read_text

#: pypto's ``_META_SCHEMA``: a reader refuses any other.
SCHEMA = 2
RUNTIME = "tensormap_and_ringbuffer"

#: A parameter is a tensor or a scalar.
ParameterKind = Literal["tensor", "scalar"]
#: How the orchestrator uses a parameter, spelled as PyPTO's ``ParamDirection`` names.
ParameterDirection = Literal["In", "Out", "InOut"]

#: PyPTO's ``str(DataType)`` of each runtime element type.
DTYPE_NAMES: dict[DataType, str] = {
    DataType.FLOAT32: "fp32",
    DataType.FLOAT16: "fp16",
    DataType.BFLOAT16: "bfloat16",
    DataType.INT8: "int8",
    DataType.UINT8: "uint8",
    DataType.INT16: "int16",
    DataType.UINT16: "uint16",
    DataType.INT32: "int32",
    DataType.UINT32: "uint32",
    DataType.INT64: "int64",
    DataType.UINT64: "uint64",
    DataType.BOOL: "bool",
}
_DTYPES = {name: dtype for dtype, name in DTYPE_NAMES.items()}

#: Every backend a ``distributed_meta.json`` may name: the chip catalog's.
BACKEND_TYPES = frozenset(chip.backend_type for chip in CHIPS)


def dtype_of_name(name: object) -> DataType:
    """The element type PyPTO's ``str(DataType)`` spells ``name``; a ValueError for any other."""
    if not isinstance(name, str) or name not in _DTYPES:
        raise ValueError(f"element type {name!r} is not one of {sorted(_DTYPES)}")
    return _DTYPES[name]


class MetaError(PyptoUsageError, ValueError):
    """A ``distributed_meta.json`` this module cannot read."""


@dataclass(frozen=True)
class Parameter:
    """One parameter of a HOST orchestrator, in declaration order.

    The orchestrator finds each one in its ``tensors`` argument under ``name``; a runtime checks
    its inputs against the shape and element type and allocates the ``Out`` tensors it is not
    given. A scalar has shape ``()`` and is always ``In``.
    """

    name: str
    kind: ParameterKind
    shape: tuple[int, ...]
    dtype: DataType
    direction: ParameterDirection

    def __post_init__(self) -> None:
        if self.kind not in ("tensor", "scalar"):
            raise ValueError(f"parameter {self.name}: unknown kind {self.kind!r}")
        if self.direction not in ("In", "Out", "InOut"):
            raise ValueError(f"parameter {self.name}: unknown direction {self.direction!r}")
        if self.kind == "scalar" and (self.shape or self.direction != "In"):
            raise ValueError(f"parameter {self.name}: a scalar has shape () and direction In")

    @property
    def is_tensor(self) -> bool:
        return self.kind == "tensor"


@dataclass(frozen=True)
class DistributedMeta:
    """The content of one ``distributed_meta.json``."""

    parameters: tuple[Parameter, ...]
    #: How many values the orchestrator returns.
    returns: int
    #: PyPTO's backend (``Ascend910B``, ``Ascend950``).
    backend_type: str
    #: The ranks the program was written for (its windows are sized for them).
    world_size: int
    #: The platform the binaries are for (``a2a3sim``, ``a2a3``, ...); None for sources only.
    platform: str | None = None

    def render(self) -> str:
        """The file's text: pypto's keys, in pypto's order, two-space indented."""
        document: dict[str, object] = {
            "schema": SCHEMA,
            "params": [_param_dict(parameter) for parameter in self.parameters],
            "num_return_types": self.returns,
        }
        if self.platform is not None:
            document["platform"] = self.platform
        document["backend_type"] = self.backend_type
        document["distributed_config"] = {
            "device_ids": list(range(self.world_size)),
            "num_sub_workers": 0,
            "runtime": RUNTIME,
            "aicpu_thread_num": 0,
        }
        return json.dumps(document, indent=2) + "\n"


def meta_for(
    chip: Chip, parameters: Sequence[Parameter], returns: int, world_size: int
) -> DistributedMeta:
    """The metadata of a HOST orchestrator of ``chip``'s tree (sources only: no platform)."""
    return DistributedMeta(tuple(parameters), returns, chip.backend_type, world_size)


def with_platform(path: Path, platform: str) -> None:
    """Record in the ``distributed_meta.json`` at ``path`` that its binaries are for
    ``platform`` (rewriting the file only when that changes it)."""
    text = read_text(path)
    updated = replace(read_meta_text(text, str(path)), platform=platform).render()
    if updated != text:
        atomic_write_text(path, updated)


def _param_dict(parameter: Parameter) -> dict[str, object]:
    return {
        "name": parameter.name,
        "direction": parameter.direction,
        "shape": list(parameter.shape) if parameter.is_tensor else None,
        "dtype": DTYPE_NAMES[parameter.dtype],
    }


def read_meta(path: Path) -> DistributedMeta:
    """Read ``path``; a :class:`MetaError` names what is wrong with it."""
    try:
        text = read_text(path)
    except (OSError, UnicodeDecodeError) as exc:
        raise MetaError(f"{path}: unreadable: {exc}") from None
    return read_meta_text(text, str(path))


def read_meta_text(text: str, where: str) -> DistributedMeta:
    """Parse the text of a ``distributed_meta.json`` (``where`` names it in errors)."""
    try:
        document = json.loads(text)
    except ValueError as exc:
        raise MetaError(f"{where}: not JSON: {exc}") from None
    if not isinstance(document, dict) or document.get("schema") != SCHEMA:
        raise MetaError(f"{where}: not a schema {SCHEMA} distributed_meta.json")
    params = document.get("params")
    config = document.get("distributed_config")
    returns = document.get("num_return_types")
    backend = document.get("backend_type")
    platform = document.get("platform")
    if not isinstance(params, list) or not isinstance(config, dict):
        raise MetaError(f"{where}: 'params' must be a list and 'distributed_config' an object")
    devices = config.get("device_ids")
    if not (isinstance(devices, list) and devices and all(type(d) is int for d in devices)):
        raise MetaError(f"{where}: distributed_config.device_ids must be a non-empty int list")
    if type(returns) is not int or returns < 0:
        raise MetaError(f"{where}: num_return_types must be a count")
    if not isinstance(backend, str) or backend not in BACKEND_TYPES:
        raise MetaError(f"{where}: backend_type must be one of {sorted(BACKEND_TYPES)}")
    if platform is not None and not isinstance(platform, str):
        raise MetaError(f"{where}: platform must be a string")
    parameters = tuple(_parameter(where, index, entry) for index, entry in enumerate(params))
    names = [parameter.name for parameter in parameters]
    if len(set(names)) != len(names):
        raise MetaError(f"{where}: a parameter is named twice")
    return DistributedMeta(parameters, returns, backend, len(devices), platform)


def _parameter(where: str, index: int, entry: object) -> Parameter:
    at = f"{where}: params[{index}]"
    if not isinstance(entry, dict):
        raise MetaError(f"{at} is not an object")
    name, direction, shape, dtype = (entry.get(k) for k in ("name", "direction", "shape", "dtype"))
    if not (isinstance(name, str) and name.isidentifier()):
        raise MetaError(f"{at}: name {name!r} is not an identifier")
    if dtype not in _DTYPES:
        raise MetaError(f"{at}: element type {dtype!r} of {name} is not one of {sorted(_DTYPES)}")
    if shape is None:
        kind: ParameterKind = "scalar"
        dims: tuple[int, ...] = ()
    elif isinstance(shape, list) and all(type(d) is int and d >= 0 for d in shape):
        kind, dims = "tensor", tuple(shape)
    else:
        raise MetaError(f"{at}: shape {shape!r} of {name} is not a list of sizes or null")
    try:
        return Parameter(name, kind, dims, _DTYPES[dtype], direction)  # type: ignore[arg-type]
    except ValueError as exc:
        raise MetaError(f"{at}: {exc}") from None
