"""HOST orchestrator codegen: a lowered HOST orchestrator -> ``orchestration/host_orch.py``.

The module is written in PyPTO's distributed entry format (pypto e2d0f78), which PyPTO's L3
loader runs as it runs its own (``distributed_runner._load_orch_entry``): it imports the
runtime's names exactly as pypto's own generated modules do (``torch``, simpler's
``task_interface``, pypto's ``make_tensor_arg`` and ``_submit_chip``), defines
``_alloc_intermediates(tensors, world_size)`` for the per-rank ordering tokens, and one entry
function ``<name>(orch, _args, config, *, tensors, callables, sub_ids, _keep, world_size)``
marked ``_pypto_distributed_entry``. The parameters are in ``tensors`` by name, the chip
callables in ``callables`` by sub-build name; ``distributed_meta.json`` (written beside it)
lists the parameters. Our simulator serves the same names, so one module runs on both. The body
is the orchestrator's, statement for statement:

* a ``CommDomainScopeStmt`` (MaterializeCommDomainScopes) becomes
  ``with orch.allocate_domain(name=..., workers=..., window_size=..., buffers=[CommBufferSpec(
  ...), ...]) as <domain>:``, one buffer per window buffer the scope allocates, each padded to
  whole cache lines (so ``pld.alloc_window_buffer`` itself emits nothing) and named as the
  program names it (``name=``, else the variable), which is how a run's windows read back;
* a window view (``pld.window`` and views of it) is a different tensor on every rank, so it is
  emitted where a dispatch uses it, for that dispatch's device:
  ``<domain>[device].buffers["<buffer>"].tensor(shapes=..., dtype=...)`` (with element
  ``strides`` and a ``byte_offset`` for a region); ``pld.get_comm_ctx(view)`` is that rank's
  ``device_ctx``;
* ``self.<chip orchestration>(..., device=d)`` submits that sub-build to worker ``d``: a
  ``TaskArgs`` with the tensors (directions from ``arg_directions``; host tensors through
  ``make_tensor_arg``), then each referenced domain's ordering token of rank ``d`` (a trailing
  tensor the orchestration does not read, which keeps one rank's dispatches on a domain in
  program order), then the scalars, in the order the chip orchestration binds them;
* a HOST-rail builtin dispatch (``builtin.tensor.all_to_all_v``, LowerHostTensorCollectives)
  submits its variant's sub-build with the windows, the ordering token and the entry's scalars
  (``nranks`` = the domain size, the ``CommContext``, ``core_num``), as the package manifest's
  entry ABI lists them;
* host tensors (parameters and regions of them) are the caller's arrays, indexed with Python
  slices;
* loops, branches and scalar arithmetic are Python's own, so their semantics carry over
  unchanged.

Which view each window name denotes is the lowering's HOST window binding
(:class:`~pypto_build.lowering.analysis.host_windows.HostWindows`), which also rejected every
construct without a form here (CheckLegality); this module only writes the binding out.
"""

from __future__ import annotations

import json
import keyword
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from math import prod
from typing import TypeGuard

from pypto_build.chip_build import runtime_types
from pypto_build.chip_build.builtin_variants import host_variant, is_builtin_dispatch, window_tail
from pypto_build.chip_build.codegen_base import RUNTIME_DTYPES, StmtCodegen, call_directions
from pypto_build.chip_build.distributed_meta import Parameter
from pypto_build.lowering.analysis.dataflow import Value
from pypto_build.lowering.analysis.host_windows import (
    HostTensor,
    HostValue,
    HostWindows,
    RuntimeOffset,
    WindowBuffer,
    WindowView,
    buffer_name,
    row_major,
)
from pypto_build.lowering.diagnostics import InternalError
from pypto_build.lowering.ir import (
    AssignStmt,
    BinaryOp,
    Call,
    CommCtxType,
    CommDomainScopeStmt,
    ConstBool,
    ConstFloat,
    ConstInt,
    DistributedTensorType,
    Expr,
    ForStmt,
    Function,
    GlobalVar,
    IfStmt,
    MakeTuple,
    ParamDirection,
    Program,
    ScalarType,
    Stmt,
    TensorType,
    UnaryOp,
    Var,
    WhileStmt,
    WindowBufferType,
)
from pypto_build.lowering.ir.names import Kwarg, Op, device, kwarg
from pypto_build.lowering.ir.walk import walk_calls, walk_stmts

PHASE = "host orchestration codegen"

#: The attribute that marks the entry function for PyPTO's loader.
ENTRY_MARKER = "_pypto_distributed_entry"
#: The function that allocates the run's intermediates (the ordering tokens) before it starts.
ALLOC_INTERMEDIATES = "_alloc_intermediates"

#: What the module imports, as pypto's generated modules import it.
IMPORTS = (
    "import torch",
    "from simpler.task_interface import CallConfig, CommBufferSpec, DataType, TaskArgs, "
    "TensorArgType",
    "",
    "from pypto.runtime.distributed_runner import _submit_chip",
    "from pypto.runtime.tensor_arg import make_tensor_arg",
)

#: Every window buffer starts on a cache line (signals are atomics; payloads move in lines):
#: a buffer's size is padded to whole lines, and the runtime carves them in order.
WINDOW_ALIGNMENT = 64

#: What each scalar a builtin entry declares (``[abi.entry] scalars``) is, on a domain handle.
_ENTRY_SCALARS = {"nranks": "domain_size", "comm_context": "device_ctx"}

#: Names the module binds itself (and Python builtins it calls): IR names among them, or ending
#: in "_" (the suffix of generated names), are emitted with a trailing "_", one-to-one.
_PY_RESERVED = frozenset(
    {"orch", "_args", "config", "tensors", "callables", "sub_ids", "_keep", "world_size"}
    | {"torch", "CallConfig", "CommBufferSpec", "DataType", "TaskArgs", "TensorArgType"}
    | {"make_tensor_arg", "_submit_chip", ALLOC_INTERMEDIATES}
    | {"range", "int", "float", "bool", "max"}
)


def py_name(name: str) -> str:
    """The Python identifier of IR name ``name``."""
    if name.endswith("_") or name in _PY_RESERVED or keyword.iskeyword(name):
        return name + "_"
    return name


@dataclass(frozen=True)
class HostOrchestrator:
    """A HOST orchestrator's generated module and what ``distributed_meta.json`` says of it."""

    source: str
    parameters: tuple[Parameter, ...]
    returns: int
    #: The fewest devices the program runs on: one past the highest device it names (in an
    #: explicit comm domain or as a constant ``device=``).
    devices: int = 1


def generate_host_orchestrator(
    program: Program, func: Function, next_levels: Collection[str]
) -> HostOrchestrator:
    """The ``orchestration/host_orch.py`` module of HOST orchestrator ``func`` of ``program``;
    ``next_levels`` are the sub-build names of the build (its chip orchestrations)."""
    if not func.is_host_orchestrator:
        raise InternalError(f"{PHASE}: '{func.name}' is not a HOST orchestrator")
    codegen = _HostCodegen(program, func, frozenset(next_levels))
    source = codegen.source()
    return HostOrchestrator(
        source, tuple(codegen.parameters), len(func.return_types), codegen.devices
    )


def _tuple_text(items: Iterable[str]) -> str:
    parts = list(items)
    return f"({parts[0]},)" if len(parts) == 1 else f"({', '.join(parts)})"


def _str(text: str) -> str:
    """A Python string literal (double-quoted; the names quoted here are plain ASCII)."""
    return json.dumps(text)


def _domain(scope: str) -> str:
    """The Python local of comm domain scope ``scope``."""
    return py_name(scope) + "_"


class _HostCodegen(StmtCodegen):
    INDENT = "    "
    # The orchestrator's outputs are its Out/InOut arguments: a return only ends it early.
    RETURN = "return"
    EMPTY_BLOCK = "pass"

    def __init__(self, program: Program, func: Function, next_levels: frozenset[str]) -> None:
        # The body sits inside the entry function.
        super().__init__(func, depth=1)
        self.program = program
        self.next_levels = next_levels
        self.windows = HostWindows(program, func)
        #: What every comm domain's window holds beyond its buffers.
        self.window_tail = window_tail(program)
        #: The name each window buffer is created under, by its variable.
        self.buffer_names = {
            stmt.targets[0].name: buffer_name(stmt)
            for stmt in walk_stmts(func.body)
            if _allocates(stmt)
        }
        #: The statement being generated (the binding is looked up per statement).
        self.current: Stmt | None = None
        #: The ``tensors`` key of each domain's ordering tokens, by the domain's local.
        self.tokens: dict[str, str] = {}
        #: Devices an explicit domain names (tokens must exist for each).
        self.devices = 1
        self.tasks = 0
        #: The local holding each runtime offset, by the slice that computes it.
        self.offsets: dict[int, str] = {}
        self.parameters: list[Parameter] = []

    # -- output -----------------------------------------------------------------------------

    def source(self) -> str:
        self._bind_params()
        self._block(self.func.body, final=True)
        if not self.lines:
            self.emit("pass")
        body = self.lines
        name = py_name(self.func.name)
        out = [
            f'"""HOST orchestrator {self.func.name} of program {self.program.name}.',
            "",
            "Generated by pypto-build in PyPTO's distributed entry format: PyPTO's L3 loader",
            f"calls {name}, marked {ENTRY_MARKER}, with the run's tensors and chip callables",
            "by name; distributed_meta.json lists the parameters.",
            '"""',
            "",
            *IMPORTS,
            "",
            "",
            f"def {ALLOC_INTERMEDIATES}(tensors, world_size=1):",
            '    """The per-rank ordering token of each comm domain."""',
            *self._token_lines(),
            "",
            "",
            f"def {name}(orch, _args, config, *, tensors, callables, sub_ids, _keep, world_size):",
            *body,
            "",
            "",
            f"{name}.{ENTRY_MARKER} = True",
        ]
        return "\n".join(out) + "\n"

    def _token_lines(self) -> list[str]:
        if not self.tokens:
            return ["    pass"]
        count = f"max(world_size, {self.devices})"
        token = "torch.zeros((1,), dtype=torch.int32).share_memory_()"
        return [
            f"    tensors[{_str(key)}] = [{token} for _ in range({count})]"
            for key in self.tokens.values()
        ]

    def _bind_params(self) -> None:
        for param in self.func.params:
            var = param.var
            name = py_name(var.name)
            if isinstance(var.type, TensorType) and not isinstance(var.type, DistributedTensorType):
                dtype = RUNTIME_DTYPES[var.type.dtype]
                kind, shape, direction = "tensor", var.type.shape, param.direction.value
            elif isinstance(var.type, ScalarType):
                dtype, kind, shape, direction = RUNTIME_DTYPES[var.type.dtype], "scalar", (), "In"
            else:
                raise InternalError(f"{PHASE}: parameter '{var.name}' of type {var.type}")
            self.parameters.append(Parameter(var.name, kind, shape, dtype, direction))  # type: ignore[arg-type]
            self.emit(f"{name} = tensors[{_str(var.name)}]")

    # -- statements -------------------------------------------------------------------------

    def _stmt(self, stmt: Stmt, *, final: bool) -> None:
        self.current = stmt
        super()._stmt(stmt, final=final)

    def _for(self, stmt: ForStmt) -> None:
        start, stop, step = (self._scalar(bound) for bound in (stmt.start, stmt.stop, stmt.step))
        self.emit(f"for {py_name(stmt.var.name)} in range({start}, {stop}, {step}):")
        self._nested(stmt.body)

    def _while(self, stmt: WhileStmt) -> None:
        self.emit(f"while {self._scalar(stmt.cond)}:")
        self._nested(stmt.body)

    def _if(self, stmt: IfStmt) -> None:
        self.emit(f"if {self._scalar(stmt.cond)}:")
        self._nested(stmt.then_body)
        if stmt.else_body is not None and stmt.else_body.stmts:
            self.emit("else:")
            self._nested(stmt.else_body)

    def _scope(self, stmt: CommDomainScopeStmt) -> None:
        domain = _domain(stmt.name)
        sizes = _buffer_sizes(stmt)
        specs = []
        window_size = self.window_tail
        for buffer in stmt.buffers:
            if buffer not in sizes:
                raise InternalError(f"{PHASE}: scope {stmt.name} does not allocate '{buffer}'")
            padded = -(-sizes[buffer] // WINDOW_ALIGNMENT) * WINDOW_ALIGNMENT
            window_size += padded
            specs.append(
                f"CommBufferSpec(name={_str(self.buffer_names[buffer])}, dtype={_str('opaque')}, "
                f"count={sizes[buffer]}, nbytes={padded})"
            )
        self.tokens[domain] = f"__{stmt.name}_ord"
        if stmt.devices is None:
            workers = "[*range(world_size)]"
        else:
            workers = "[" + ", ".join(str(d) for d in stmt.devices) + "]"
            self.devices = max(self.devices, *(d + 1 for d in stmt.devices))
        self.emit("with orch.allocate_domain(")
        self.emit(f"    name={_str(stmt.name)},")
        self.emit(f"    workers={workers},")
        self.emit(f"    window_size={window_size},")
        self.emit("    buffers=[")
        for spec in specs:
            self.emit(f"        {spec},")
        self.emit("    ],")
        self.emit(f") as {domain}:")
        self._nested(stmt.body)

    def _assign(self, stmt: AssignStmt) -> None:
        (target,) = stmt.targets
        if isinstance(stmt.value, Call) and stmt.value.op == Op.ALLOC_WINDOW_BUFFER:
            return  # allocated by the enclosing scope's allocate_domain
        self._runtime_offsets(stmt.value)
        if isinstance(self._value(stmt.value), WindowView | WindowBuffer):
            return  # a window is emitted where a dispatch uses it
        name = py_name(target.name)
        text = self._text(stmt.value)
        if text != name:
            self.emit(f"{name} = {text}")

    def _effect(self, expr: Expr, at: object) -> None:
        """Evaluate ``expr`` for its effect: a dispatch, or nothing for a pure value."""
        self._runtime_offsets(expr)
        if isinstance(expr, Call) and isinstance(expr.op, GlobalVar):
            self._dispatch(expr)
        elif isinstance(expr, Call) and is_builtin_dispatch(expr):
            self._builtin_dispatch(expr)

    # -- values -----------------------------------------------------------------------------

    def _value(self, expr: Expr) -> Value[HostValue]:
        if self.current is None:
            raise InternalError(f"{PHASE}: a value outside a statement")
        return self.windows.value(self.current, expr)

    def _runtime_offsets(self, expr: Expr) -> None:
        """Compute, where each slice of a window at a runtime position is, its element offset
        into a local (the view is rebuilt at each dispatch: a later rebinding of the position
        must not move it)."""
        for call in walk_calls(expr):
            if call.op != Op.TENSOR_SLICE:
                continue
            view = self._value(call)
            offset = view.offset[-1] if isinstance(view, WindowView) and view.offset else None
            if isinstance(offset, RuntimeOffset) and offset.site == id(call):
                local = f"offset{len(self.offsets)}_"
                self.offsets[offset.site] = local
                terms = " + ".join(
                    f"({self._scalar(start)}) * {stride}"
                    for start, stride in zip(offset.starts, offset.strides, strict=True)
                )
                self.emit(f"{local} = {terms}")

    def _text(self, expr: Expr) -> str:
        """A host tensor or scalar expression as Python."""
        if isinstance(expr, Call) and expr.op in (
            Op.TENSOR_SLICE,
            Op.TENSOR_RESHAPE,
            Op.TENSOR_VIEW,
            Op.TENSOR_SET_VALIDSHAPE,
        ):
            return self._host_view(expr)
        return self._scalar(expr)

    def _host_view(self, call: Call) -> str:
        source = self._text(call.args[0])
        ty = call.type
        if not isinstance(ty, TensorType):
            raise InternalError(f"{PHASE}: {call.op} of a non-tensor")
        if call.op == Op.TENSOR_SLICE:
            parent = self._value(call.args[0])
            offsets = call.args[2]
            if not isinstance(parent, HostTensor) or not isinstance(offsets, MakeTuple):
                raise InternalError(f"{PHASE}: {call.op} of a non-host tensor")
            index = ", ".join(
                _index(self._scalar(start), extent, size)
                for start, extent, size in zip(offsets.items, ty.shape, parent.shape, strict=True)
            )
            return f"{source}[{index}]"
        if call.op == Op.TENSOR_RESHAPE or kwarg(call, Kwarg.SHAPE) is not None:
            return f"{source}.reshape({_tuple_text(str(d) for d in ty.shape)})"
        # The valid region and layout are metadata of the program, not of host tensors.
        return source

    def _scalar(self, expr: Expr) -> str:
        if isinstance(expr, ConstBool | ConstInt):
            return repr(expr.value)
        if isinstance(expr, ConstFloat):
            return repr(float(expr.value))
        if isinstance(expr, Var):
            return py_name(expr.name)
        if isinstance(expr, BinaryOp):
            return f"({self._scalar(expr.lhs)} {expr.op} {self._scalar(expr.rhs)})"
        if isinstance(expr, UnaryOp):
            operand = self._scalar(expr.operand)
            return f"(-{operand})" if expr.op == "-" else f"(not {operand})"
        if isinstance(expr, Call) and expr.op == Op.WORLD_SIZE:
            return "world_size"
        raise InternalError(f"{PHASE}: {type(expr).__name__} is not a host scalar")

    def _window(self, view: WindowView, device: str) -> str:
        """``view`` on rank ``device``."""
        shape = _tuple_text(str(d) for d in view.shape)
        arguments = f"shapes={shape}, dtype=DataType.{RUNTIME_DTYPES[view.dtype].name}"
        offset = " + ".join(
            self.offsets[term.site] if isinstance(term, RuntimeOffset) else str(term)
            for term in view.offset
        )
        if view.strides != row_major(view.shape) or offset:
            strides = _tuple_text(str(d) for d in view.strides)
            byte_offset = f"({offset or '0'}) * {view.dtype.byte_size}"
            arguments += f", strides={strides}, byte_offset={byte_offset}"
        handle = f"{_domain(view.scope)}[{device}]"
        return f"{handle}.buffers[{_str(self.buffer_names[view.buffer])}].tensor({arguments})"

    # -- dispatches ---------------------------------------------------------------------------

    def _device(self, call: Call) -> str:
        target = device(call)
        if target is None:
            raise InternalError(f"{PHASE}: '{call.callee_name}' has no device=")
        if isinstance(target, ConstInt):
            self.devices = max(self.devices, target.value + 1)
        return self._scalar(target)

    def _dispatch(self, call: Call) -> None:
        name = call.callee_name
        if name not in self.next_levels:
            raise InternalError(f"{PHASE}: '{name}' is not a sub-build of this build")
        device = self._device(call)
        tensors: list[tuple[str, ParamDirection]] = []
        scalars: list[str] = []
        domains: list[str] = []
        for arg, direction in zip(call.args, call_directions(call, PHASE), strict=True):
            if direction is None:
                scalars.append(self._scalar_arg(arg, device))
                continue
            value = self._value(arg)
            if isinstance(value, WindowView):
                tensors.append((self._window(value, device), direction))
                if value.scope not in domains:
                    domains.append(value.scope)
            else:
                text = f"make_tensor_arg(orch._worker, {self._text(arg)})"
                tensors.append((text, direction))
        tensors += [(self._token(scope, device), ParamDirection.InOut) for scope in domains]
        self._submit(name, device, tensors, scalars)

    def _builtin_dispatch(self, call: Call) -> None:
        variant = host_variant(call)
        device = self._device(call)
        directions = call_directions(call, PHASE)
        windows = [self._value(arg) for arg in call.args]
        views = [view for view in windows if isinstance(view, WindowView)]
        if len(views) != len(windows) or len(views) != len(directions):
            raise InternalError(f"{PHASE}: {call.op} operands must be window views")
        tensors = [
            (self._window(view, device), direction)
            for view, direction in zip(views, directions, strict=True)
            if direction is not None
        ]
        entry = variant.package.abi.entry
        if entry.ordering_token:
            tensors.append((self._token(views[0].scope, device), ParamDirection.InOut))
        handle = f"{_domain(views[0].scope)}[{device}]"
        scalars = [self._entry_scalar(call, name, handle) for name in entry.scalars]
        self._submit(variant.name, device, tensors, scalars)

    def _token(self, scope: str, device: str) -> str:
        key = self.tokens[_domain(scope)]
        return f"make_tensor_arg(orch._worker, tensors[{_str(key)}][{device}])"

    def _entry_scalar(self, call: Call, name: str, handle: str) -> str:
        if name in _ENTRY_SCALARS:
            return f"{handle}.{_ENTRY_SCALARS[name]}"
        if name == Kwarg.CORE_NUM:
            core_num = kwarg(call, Kwarg.CORE_NUM)
            return "1" if core_num is None else self._scalar(_expr(core_num))
        raise InternalError(f"{PHASE}: the entry of {call.op} expects scalar '{name}'")

    def _scalar_arg(self, arg: Expr, device: str) -> str:
        if isinstance(arg, Call) and arg.op == Op.GET_COMM_CTX:
            view = self._value(arg.args[0])
            if not isinstance(view, WindowView):
                raise InternalError(f"{PHASE}: {Op.GET_COMM_CTX} of a non-window")
            return f"{_domain(view.scope)}[{device}].device_ctx"
        return self._scalar(arg)

    def _submit(
        self,
        name: str,
        device: str,
        tensors: Sequence[tuple[str, ParamDirection]],
        scalars: Sequence[str],
    ) -> None:
        task = f"task{self.tasks}_"
        self.tasks += 1
        self.emit(f"{task} = TaskArgs()")
        for text, direction in tensors:
            tag = runtime_types.TensorArgType.of(direction).name
            self.emit(f"{task}.add_tensor({text}, TensorArgType.{tag})")
        for text in scalars:
            self.emit(f"{task}.add_scalar({text})")
        self.emit(f"_keep.append({task})")
        self.emit(f"_submit_chip(orch, callables[{_str(name)}], {task}, config, {device})")


def _index(start: str, extent: int, size: int) -> str:
    """The Python slice of ``extent`` elements from ``start`` of a dimension of ``size``."""
    if start == "0":
        return ":" if extent == size else f":{extent}"
    return f"{start}:{start} + {extent}"


def _expr(value: object) -> Expr:
    if not isinstance(value, Expr):
        raise InternalError(f"{PHASE}: expected an expression, got {value!r}")
    return value


def _allocates(stmt: Stmt) -> TypeGuard[AssignStmt]:
    """``stmt`` is ``buf = pld.alloc_window_buffer(...)``."""
    return (
        isinstance(stmt, AssignStmt)
        and isinstance(stmt.value, Call)
        and stmt.value.op == Op.ALLOC_WINDOW_BUFFER
        and isinstance(stmt.value.type, WindowBufferType)
    )


def _buffer_sizes(scope: CommDomainScopeStmt) -> dict[str, int]:
    """Bytes of each window buffer allocated under ``scope``."""
    return {
        stmt.targets[0].name: stmt.value.type.nbytes
        for stmt in walk_stmts(scope.body)
        if _allocates(stmt) and isinstance(stmt.value.type, WindowBufferType)
    }


#: The attribute that marks a rank adapter's entry with the chip orchestration it runs.
RUNS_MARKER = "_pypto_build_runs_on_every_rank"


def generate_rank_adapter(orch: Function, ranks: int, tail: int) -> HostOrchestrator | None:
    """A HOST side for chip orchestration ``orch`` of a program that has none: what PyPTO's L3
    loader needs to run a chip pipeline whose windows need a comm domain (the fused MC2
    operator's workspace, a chip-rail collective's windows) on the ``ranks`` ranks they are
    sized for. Its entry allocates one world domain with a buffer per window parameter (zeroed,
    named after the parameter) and ``tail`` bytes after them (the program's
    :func:`~pypto_build.chip_build.builtin_variants.window_tail`), and dispatches ``orch`` once
    per rank, with rank ``r``'s part ``[r]`` of every other tensor: each of those parameters is
    the chip parameter with a leading axis of ``ranks``, as pypto-build's simulator takes a chip
    pipeline's inputs. None when ``orch`` takes a scalar (PyPTO's one-shot L3 path passes
    tensors only) or has no window."""
    windows: list[tuple[str, DistributedTensorType]] = []
    parameters: list[Parameter] = []
    for param in orch.params:
        ty = param.var.type
        if isinstance(ty, DistributedTensorType):
            windows.append((param.var.name, ty))
        elif isinstance(ty, TensorType):
            dtype = RUNTIME_DTYPES[ty.dtype]
            shape = (ranks, *ty.shape)
            direction = param.direction.value
            parameters.append(Parameter(param.var.name, "tensor", shape, dtype, direction))  # type: ignore[arg-type]
        elif not isinstance(ty, CommCtxType):
            return None
    if not windows:
        return None
    sizes = [prod(ty.shape) * ty.dtype.byte_size for _, ty in windows]
    padded = [-(-size // WINDOW_ALIGNMENT) * WINDOW_ALIGNMENT for size in sizes]
    entry = "host_orch"
    lines = [
        f'"""HOST side of chip orchestration {orch.name}, run on every rank.',
        "",
        "Generated by pypto-build in PyPTO's distributed entry format for a program without a",
        "HOST orchestrator: one comm domain over the world holds the windows, and rank r runs",
        f"{orch.name} on part [r] of every other tensor; distributed_meta.json lists them.",
        '"""',
        "",
        *IMPORTS,
        "",
        "",
        f"def {ALLOC_INTERMEDIATES}(tensors, world_size=1):",
        '    """Nothing to allocate: one dispatch per rank needs no ordering token."""',
        "",
        "",
        f"def {entry}(orch, _args, config, *, tensors, callables, sub_ids, _keep, world_size):",
        "    with orch.allocate_domain(",
        '        name="d0",',
        "        workers=[*range(world_size)],",
        f"        window_size={sum(padded) + tail},",
        "        buffers=[",
        *(
            f"            CommBufferSpec(name={_str(name)}, dtype={_str('opaque')}, "
            f"count={size}, nbytes={nbytes}),"
            for (name, _), size, nbytes in zip(windows, sizes, padded, strict=True)
        ),
        "        ],",
        "    ) as d0_:",
        "        for rank in range(world_size):",
        "            task_ = TaskArgs()",
    ]
    for param in orch.params:
        name, ty = param.var.name, param.var.type
        tag = runtime_types.TensorArgType.of(param.direction).name
        if isinstance(ty, DistributedTensorType):
            dtype_name = RUNTIME_DTYPES[ty.dtype].name
            shapes = _tuple_text(str(d) for d in ty.shape)
            text = (
                f"d0_[rank].buffers[{_str(name)}].tensor(shapes={shapes}, "
                f"dtype=DataType.{dtype_name})"
            )
        elif isinstance(ty, TensorType):
            text = f"make_tensor_arg(orch._worker, tensors[{_str(name)}][rank])"
        else:
            continue
        lines.append(f"            task_.add_tensor({text}, TensorArgType.{tag})")
    for param in orch.params:
        if isinstance(param.var.type, CommCtxType):
            lines.append("            task_.add_scalar(d0_[rank].device_ctx)")
    lines += [
        "            _keep.append(task_)",
        f"            _submit_chip(orch, callables[{_str(orch.name)}], task_, config, rank)",
        "",
        "",
        f"{entry}.{ENTRY_MARKER} = True",
        f"{entry}.{RUNS_MARKER} = {_str(orch.name)}",
    ]
    return HostOrchestrator("\n".join(lines) + "\n", tuple(parameters), 0, ranks)
