"""Binding a run's inputs to a HOST orchestrator's parameters (``distributed_meta.json``).

Everything is checked before anything runs, so a wrong input is an error that names the
parameter instead of a kernel reading past a buffer: every ``In`` and ``InOut`` parameter must be
given and nothing else may be; a tensor must have exactly the declared shape and element type
(no silent conversion: a float64 array for an FP32 tensor is an error, not a rounded copy); a
scalar must be one value its type holds. An ``Out`` tensor that is not given starts
zero-filled; one that is given starts as given. Given arrays are copied, never modified.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from pypto_build.chip_build.distributed_meta import Parameter
from pypto_build.chip_build.runtime_types import DataType, ScalarValue, scalar_type
from pypto_build.chip_build.sim.tensors import NUMPY_DTYPES

#: NumPy kinds a scalar of each Python type accepts: bool, signed, unsigned, floating.
_SCALAR_KINDS = {bool: "b", int: "iu", float: "iuf"}


class InputError(ValueError):
    """Inputs that do not match the program's parameters: missing, unknown, or of the wrong
    shape or element type."""


@dataclass(frozen=True)
class BoundArguments:
    """A run's arguments by parameter name, in declaration order."""

    #: Every tensor parameter.
    tensors: dict[str, npt.NDArray[np.generic]]
    #: Every scalar parameter.
    scalars: dict[str, ScalarValue]

    def values(self) -> dict[str, object]:
        """Every parameter by name, in declaration order: the orchestrator's ``tensors``."""
        return {**self.tensors, **self.scalars}


def bind_arguments(
    program: str, parameters: Sequence[Parameter], inputs: Mapping[str, npt.ArrayLike]
) -> BoundArguments:
    """Check ``inputs`` against ``parameters`` of HOST orchestrator ``program`` and bind them
    (see the module); an :class:`InputError` names every problem of one kind at once."""
    names = [parameter.name for parameter in parameters]
    unknown = sorted(set(inputs) - set(names))
    missing = [
        parameter.name
        for parameter in parameters
        if parameter.name not in inputs and parameter.direction != "Out"
    ]
    if unknown or missing:
        problems = []
        if missing:
            problems.append(f"missing {', '.join(missing)}")
        if unknown:
            problems.append(f"unknown {', '.join(unknown)}")
        raise InputError(
            f"inputs of {program}: {'; '.join(problems)} "
            f"(parameters: {_signature(parameters) or 'none'})"
        )
    tensors: dict[str, npt.NDArray[np.generic]] = {}
    scalars: dict[str, ScalarValue] = {}
    for parameter in parameters:
        if parameter.is_tensor:
            tensors[parameter.name] = _tensor(program, parameter, inputs.get(parameter.name))
        else:
            scalars[parameter.name] = _scalar(program, parameter, inputs[parameter.name])
    return BoundArguments(tensors, scalars)


def _signature(parameters: Sequence[Parameter]) -> str:
    """``inp, out (Out, optional), core_num``: the parameters, the optional ones marked."""
    return ", ".join(
        f"{parameter.name} (Out, optional)" if parameter.direction == "Out" else parameter.name
        for parameter in parameters
    )


def _dtype_name(dtype: DataType) -> str:
    """The element type as a NumPy user spells it; BFLOAT16 is held as its uint16 bits."""
    if dtype is DataType.BFLOAT16:
        return "bfloat16 (as uint16 bit patterns)"
    return str(NUMPY_DTYPES[dtype])


def _tensor(
    program: str, parameter: Parameter, value: npt.ArrayLike | None
) -> npt.NDArray[np.generic]:
    expected = NUMPY_DTYPES[parameter.dtype]
    if value is None:
        return np.zeros(parameter.shape, dtype=expected)
    array = np.asarray(value)
    if array.shape != parameter.shape or array.dtype != expected:
        raise InputError(
            f"input '{parameter.name}' of {program}: expected shape {parameter.shape} "
            f"{_dtype_name(parameter.dtype)}, got shape {array.shape} {array.dtype}"
        )
    return np.array(array, order="C", copy=True)


def _scalar(program: str, parameter: Parameter, value: npt.ArrayLike) -> ScalarValue:
    python_type = scalar_type(parameter.dtype)
    array = np.asarray(value)
    problem = None
    if array.shape != ():
        problem = f"got shape {array.shape}"
    elif array.dtype.kind not in _SCALAR_KINDS[python_type]:
        problem = f"got {array.dtype} {array.item()!r}"
    elif python_type is int:
        limits = np.iinfo(NUMPY_DTYPES[parameter.dtype].name)
        if not limits.min <= int(array.item()) <= limits.max:
            problem = f"got {array.item()}, outside [{limits.min}, {limits.max}]"
    if problem is not None:
        raise InputError(
            f"scalar '{parameter.name}' of {program}: expected one "
            f"{_dtype_name(parameter.dtype)} value, {problem}"
        )
    converted: ScalarValue = python_type(array.item())
    return converted
