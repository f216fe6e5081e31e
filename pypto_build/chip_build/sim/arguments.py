"""Binding a run's inputs to a program's parameters: a HOST orchestrator's
(``distributed_meta.json``), or a chip orchestration's on every rank (``kernel_config.py``).

Everything is checked before anything runs, so a wrong input is an error that names the
parameter instead of a kernel reading past a buffer: every ``In`` and ``InOut`` parameter must be
given and nothing else may be; a tensor must have exactly the declared shape and element type
(no silent conversion: a float64 array for an FP32 tensor is an error, not a rounded copy); a
scalar must be one value its type holds. Every problem of the inputs is found before one
:class:`InputError` names them all, one per line, so one look at it fixes an ``.npz`` file.
An ``Out`` tensor that is not given starts
zero-filled; one that is given starts as given. Given arrays are copied, never modified.

A chip orchestration runs on every rank, each with its own arguments (:func:`bind_rank_
arguments`): an input with a leading axis of the rank count gives rank r its ``[r]``, one of the
parameter's own shape gives every rank the same value. Its windows are optional, as its ``Out``
tensors: a window not given starts zeroed, as a comm domain allocates it.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt

from pypto_build.chip_build.distributed_meta import Parameter
from pypto_build.chip_build.runtime_types import DataType, ScalarValue, scalar_type
from pypto_build.chip_build.sim.shared import SHARE_BYTES, Segment
from pypto_build.chip_build.sim.tensors import NUMPY_DTYPES
from pypto_build.errors import PyptoUsageError

#: NumPy kinds a scalar of each Python type accepts: bool, signed, unsigned, floating.
_SCALAR_KINDS = {bool: "b", int: "iu", float: "iuf"}


class InputError(PyptoUsageError, ValueError):
    """Inputs that do not match the program's parameters: missing, unknown, or of the wrong
    shape or element type. The message holds every problem, one per line; :attr:`problems`
    holds the lines."""

    def __init__(self, problems: str | Sequence[str]) -> None:
        self.problems = (problems,) if isinstance(problems, str) else tuple(problems)
        super().__init__("\n".join(self.problems))


class _Problems:
    """The problems found so far in one binding: each parameter is checked on its own, and
    one :class:`InputError` reports them all (:meth:`raise_any`)."""

    def __init__(self) -> None:
        self._found: list[str] = []

    @contextlib.contextmanager
    def check(self) -> Iterator[None]:
        """Note the :class:`InputError` of the block, and carry on."""
        try:
            yield
        except InputError as err:
            self._found += err.problems

    def raise_any(self) -> None:
        if self._found:
            raise InputError(self._found)


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
    (see the module); an :class:`InputError` names every problem at once."""
    problems = _Problems()
    with problems.check():
        _check_names(program, parameters, inputs, _is_out)
    tensors: dict[str, npt.NDArray[np.generic]] = {}
    scalars: dict[str, ScalarValue] = {}
    for parameter in parameters:
        with problems.check():
            if parameter.is_tensor:
                tensors[parameter.name] = _tensor(program, parameter, inputs.get(parameter.name))
            elif parameter.name in inputs:  # a missing one is named above
                scalars[parameter.name] = _scalar(program, parameter, inputs[parameter.name])
    problems.raise_any()
    return BoundArguments(tensors, scalars)


def bind_rank_arguments(
    program: str,
    parameters: Sequence[Parameter],
    inputs: Mapping[str, npt.ArrayLike],
    ranks: int,
    windows: Collection[str],
) -> tuple[BoundArguments, ...]:
    """Check ``inputs`` against ``parameters`` of chip orchestration ``program``, of which
    ``windows`` are windows, and bind each rank's (see the module): one per rank, each
    rank's tensors its own arrays; an :class:`InputError` names every problem at once."""
    problems = _Problems()
    with problems.check():
        _check_names(program, parameters, inputs, lambda p: _is_out(p) or p.name in windows)
    bound = [BoundArguments({}, {}) for _ in range(ranks)]
    for parameter in parameters:
        with problems.check():
            _bind_rank_parameter(program, parameter, inputs, windows, bound)
    problems.raise_any()
    return tuple(bound)


def _bind_rank_parameter(
    program: str,
    parameter: Parameter,
    inputs: Mapping[str, npt.ArrayLike],
    windows: Collection[str],
    bound: Sequence[BoundArguments],
) -> None:
    """Give each rank's arguments in ``bound`` its value of ``parameter``."""
    value = inputs.get(parameter.name)
    if parameter.is_tensor:
        window = parameter.name in windows
        if window and value is None:
            return
        values = _rank_tensors(program, parameter, value, len(bound), copy=not window)
        for arguments, tensor in zip(bound, values, strict=True):
            arguments.tensors[parameter.name] = tensor
    elif value is not None:  # a scalar is never optional: a missing one is already named
        scalars = _rank_scalars(program, parameter, value, len(bound))
        for arguments, scalar in zip(bound, scalars, strict=True):
            arguments.scalars[parameter.name] = scalar


def _is_out(parameter: Parameter) -> bool:
    return parameter.direction == "Out"


def _check_names(
    program: str,
    parameters: Sequence[Parameter],
    inputs: Mapping[str, npt.ArrayLike],
    optional: Callable[[Parameter], bool],
) -> None:
    """Every parameter but the ``optional`` ones given, and nothing else."""
    names = [parameter.name for parameter in parameters]
    unknown = sorted(set(inputs) - set(names))
    missing = [p.name for p in parameters if p.name not in inputs and not optional(p)]
    if unknown or missing:
        problems = []
        if missing:
            problems.append(f"missing {', '.join(missing)}")
        if unknown:
            problems.append(f"unknown {', '.join(unknown)}")
        signature = ", ".join(
            p.name if not optional(p) else f"{p.name} ({_optional_kind(p)}, optional)"
            for p in parameters
        )
        raise InputError(
            f"inputs of {program}: {'; '.join(problems)} (parameters: {signature or 'none'})"
        )


def _optional_kind(parameter: Parameter) -> str:
    return "Out" if _is_out(parameter) else "window"


def _rank_tensors(
    program: str, parameter: Parameter, value: npt.ArrayLike | None, ranks: int, *, copy: bool
) -> list[npt.NDArray[np.generic]]:
    """Each rank's tensor ``parameter``: ``value[r]``, or ``value`` for all (zeros when not
    given); each a copy of its own, as each chip has its own memory, unless not ``copy``. The
    copies are the rows of one block (:func:`_rank_block`)."""
    ranked = replace(parameter, shape=(ranks, *parameter.shape))
    array = None
    if value is not None:
        given = np.asarray(value)
        if given.shape not in (ranked.shape, parameter.shape):
            raise InputError(
                f"input '{parameter.name}' of {program}: expected shape {ranked.shape} (one per "
                f"rank) or {parameter.shape} (every rank's) {_dtype_name(parameter.dtype)}, got "
                f"shape {given.shape} {given.dtype}"
            )
        per_rank = given.shape == ranked.shape
        array = _checked(program, ranked if per_rank else parameter, given)
        if not copy:
            return list(array) if per_rank else [array] * ranks
    block = _rank_block(ranked, zeroed=array is None)
    if array is not None:
        block[...] = array  # every rank's row, or the one value in each
    return list(block)


def _rank_block(ranked: Parameter, *, zeroed: bool) -> npt.NDArray[np.generic]:
    """An array of ``ranked``'s shape (a leading rank axis) and element type, zeros if
    ``zeroed``: shared memory when large (:mod:`.shared`), so that a run in a worker process
    reads its ranks' tensors where the caller wrote them, and the result stacks them by rank
    without a copy (:func:`~.shared.stack`); both cross the process boundary by reference."""
    dtype = NUMPY_DTYPES[ranked.dtype]
    nbytes = math.prod(ranked.shape) * dtype.itemsize
    if nbytes < SHARE_BYTES:
        return np.zeros(ranked.shape, dtype) if zeroed else np.empty(ranked.shape, dtype)
    return Segment.allocate(nbytes, zeroed=zeroed).array(ranked.shape, dtype)


def _rank_scalars(
    program: str, parameter: Parameter, value: npt.ArrayLike, ranks: int
) -> list[ScalarValue]:
    """Each rank's value of scalar ``parameter``: ``value[r]`` of shape ``(ranks,)``, or one
    value for all."""
    array = np.asarray(value)
    if array.shape == (ranks,):
        return [_scalar(program, parameter, item) for item in array]
    if array.shape == ():
        return [_scalar(program, parameter, array)] * ranks
    raise InputError(
        f"scalar '{parameter.name}' of {program}: expected one {_dtype_name(parameter.dtype)} "
        f"value, or one per rank (shape {(ranks,)}), got shape {array.shape}"
    )


def _dtype_name(dtype: DataType) -> str:
    """The element type as a NumPy user spells it; BFLOAT16 is held as its uint16 bits."""
    if dtype is DataType.BFLOAT16:
        return "bfloat16 (as uint16 bit patterns)"
    return str(NUMPY_DTYPES[dtype])


def _tensor(
    program: str, parameter: Parameter, value: npt.ArrayLike | None
) -> npt.NDArray[np.generic]:
    if value is None:
        return np.zeros(parameter.shape, dtype=NUMPY_DTYPES[parameter.dtype])
    return np.array(_checked(program, parameter, np.asarray(value)), order="C", copy=True)


def _checked(
    program: str, parameter: Parameter, array: npt.NDArray[np.generic]
) -> npt.NDArray[np.generic]:
    """``array``, if it has exactly the parameter's shape and element type."""
    if array.shape != parameter.shape or array.dtype != NUMPY_DTYPES[parameter.dtype]:
        raise InputError(
            f"input '{parameter.name}' of {program}: expected shape {parameter.shape} "
            f"{_dtype_name(parameter.dtype)}, got shape {array.shape} {array.dtype}"
        )
    return array


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
