"""The IR's contract by name: the ops that passes and backends single out, and the attribute
keys of calls and functions, each declared once and read through a typed getter.

Passes communicate through attributes: DeriveCallDirections records how each argument is passed,
AutoDeriveTaskDependencies numbers the tasks, LowerL2TensorCollectives marks a synthesized kernel
with its template package and its launch width. A key spelled twice is a contract that can drift,
so every module refers to these enums, and reads a value through the getter that checks its type
(a malformed value is a bug, never a user error: the getters return None and the caller reports it
in its own terms). A test keeps the spellings out of every other module.
"""

from __future__ import annotations

import enum
from typing import cast

from pypto_build.lowering.ir.exprs import AttrValue, Call, Expr, get_attr, set_attr
from pypto_build.lowering.ir.function import Function
from pypto_build.lowering.ir.rebuild import replaced
from pypto_build.lowering.ir.types import ParamDirection


class Op(enum.StrEnum):
    """The ops of the program model by IR name (a builtin package's ops come from its
    manifest, not from here)."""

    TENSOR_CREATE = "tensor.create"
    TENSOR_SLICE = "tensor.slice"
    TENSOR_RESHAPE = "tensor.reshape"
    TENSOR_VIEW = "tensor.view"
    TENSOR_SET_VALIDSHAPE = "tensor.set_validshape"
    TENSOR_ASSEMBLE = "tensor.assemble"
    TENSOR_WRITE = "tensor.write"
    TENSOR_TRANSPOSE = "tensor.transpose"
    ALLOC_WINDOW_BUFFER = "pld.alloc_window_buffer"
    WINDOW = "pld.window"
    WORLD_SIZE = "pld.world_size"
    GET_COMM_CTX = "pld.get_comm_ctx"
    #: Collectives without a builtin package: they parse, and the passes reject them.
    ALLREDUCE = "pld.tensor.allreduce"
    ALLGATHER = "pld.tensor.allgather"
    REDUCE_SCATTER = "pld.tensor.reduce_scatter"
    BROADCAST = "pld.tensor.broadcast"
    ALL_TO_ALL = "pld.tensor.all_to_all"
    BARRIER = "pld.tensor.barrier"


class CallAttr(enum.StrEnum):
    """Attributes of a call (``Call.attrs``)."""

    #: How each argument is passed: a :class:`ParamDirection` per tensor, None per scalar.
    ARG_DIRECTIONS = "arg_directions"
    #: The task number of a kernel call in its orchestration, and the tasks it waits for.
    TASK_ID = "task_id"
    DEPS = "deps"
    #: The tasks among those (its own previous instance in a loop included) that the runtime's
    #: TensorMap does not order it after, so the orchestration names them explicitly.
    EXPLICIT_DEPS = "explicit_deps"
    #: ``pl.submit(...)``: the call also returns its task id.
    SUBMIT = "submit"
    #: The device a HOST orchestrator dispatches the call to.
    DEVICE = "device"
    #: The payload element type of a HOST-rail builtin dispatch (it selects the variant).
    DTYPE = "dtype"
    #: The launch width of a kernel task, and whether its blocks must start together.
    CORE_NUM = "core_num"
    SYNC_START = "sync_start"


class FunctionAttr(enum.StrEnum):
    """Attributes of a function (``Function.attrs``)."""

    #: A kernel's hand-written C++ source, relative to its program file.
    EXTERNAL_SOURCE = "external_source"
    #: A synthesized builtin kernel: its template package handle and variant variables.
    TEMPLATE_DIR = "builtin_template_dir"
    TEMPLATE_VARS = "builtin_template_vars"
    #: The kernel moves its operands as dense blocks; the orchestration checks them at run time.
    REQUIRE_CONTIGUOUS = "require_contiguous_operands"


class Kwarg(enum.StrEnum):
    """Keyword operands of ops that passes and backends read (``Call.kwargs``)."""

    CORE_NUM = "core_num"
    DTYPE = "dtype"
    SHAPE = "shape"
    NAME = "name"


#: What ``arg_directions`` holds for one argument.
ArgDirection = ParamDirection | None


def arg_directions(call: Call) -> tuple[ArgDirection, ...] | None:
    """The ``arg_directions`` of ``call``: one entry per argument; None when missing or
    malformed."""
    directions = get_attr(call.attrs, CallAttr.ARG_DIRECTIONS)
    if not (
        isinstance(directions, tuple)
        and len(directions) == len(call.args)
        # Each entry a ParamDirection or None, tested without a Python call per entry: read for
        # every argument of every call by the passes after DeriveCallDirections and the backends.
        and all(map(_DIRECTION_TYPES.__contains__, map(type, directions)))
    ):
        return None
    return cast(tuple[ArgDirection, ...], directions)


#: The exact types of an entry of ``arg_directions``.
_DIRECTION_TYPES = frozenset({ParamDirection, type(None)})


def with_arg_directions(call: Call, directions: tuple[ArgDirection, ...]) -> Call:
    """``call`` with its ``arg_directions`` set."""
    return replaced(call, attrs=set_attr(call.attrs, CallAttr.ARG_DIRECTIONS, directions))


def device(call: Call) -> Expr | None:
    """The device a HOST orchestrator dispatches ``call`` to (``device=``), if any."""
    value = get_attr(call.attrs, CallAttr.DEVICE)
    return value if isinstance(value, Expr) else None


def task_id(call: Call) -> int | None:
    value = get_attr(call.attrs, CallAttr.TASK_ID)
    return value if type(value) is int else None


def task_deps(call: Call, attr: CallAttr = CallAttr.DEPS) -> tuple[int, ...]:
    """The task numbers ``attr`` (``deps`` or ``explicit_deps``) of ``call`` holds."""
    return task_numbers(get_attr(call.attrs, attr))


def task_numbers(value: AttrValue) -> tuple[int, ...]:
    """The task numbers a ``deps`` or ``explicit_deps`` attr value holds."""
    if isinstance(value, tuple):
        return tuple(d for d in value if type(d) is int)
    return ()


def call_attrs(call: Call) -> dict[str, AttrValue]:
    """The attrs of ``call`` by name, the first of a repeated name as :func:`get_attr` finds
    it: one copy for a reader of several of them (a backend reads most of a call's attrs),
    rather than a scan of the attrs for each."""
    return dict(reversed(call.attrs))


def is_submit(call: Call) -> bool:
    """Whether ``call`` is a ``pl.submit(...)``, which also returns its task id."""
    return get_attr(call.attrs, CallAttr.SUBMIT) is True


def kwarg(call: Call, key: Kwarg) -> AttrValue:
    """Keyword operand ``key`` of ``call`` (None when not given)."""
    return get_attr(call.kwargs, key)


def external_source(func: Function) -> str | None:
    """The hand-written source of kernel ``func``, relative to its program file."""
    value = func.attr(FunctionAttr.EXTERNAL_SOURCE)
    return value if isinstance(value, str) else None


def template_dir(func: Function) -> str | None:
    """The template package handle of a synthesized builtin kernel; None for any other."""
    value = func.attr(FunctionAttr.TEMPLATE_DIR)
    return value if isinstance(value, str) else None


def template_vars(func: Function) -> str:
    """The ``k=v,...`` variables of a synthesized builtin kernel's variant."""
    value = func.attr(FunctionAttr.TEMPLATE_VARS, "")
    return value if isinstance(value, str) else ""


def requires_contiguous(func: Function) -> bool:
    return func.attr(FunctionAttr.REQUIRE_CONTIGUOUS) is True
