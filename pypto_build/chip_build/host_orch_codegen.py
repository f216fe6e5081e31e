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
  whole cache lines (so ``pld.alloc_window_buffer`` itself emits nothing);
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
  slices; PyPTO's runtime takes only contiguous ones, so a strided region reaching a dispatch is
  a diagnostic here;
* loops, branches and scalar arithmetic are Python's own, so their semantics carry over
  unchanged.
"""

from __future__ import annotations

import dataclasses
import json
import keyword
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

from pypto_build.chip_build import runtime_types
from pypto_build.chip_build.builtin_variants import host_variant, is_builtin_dispatch
from pypto_build.chip_build.codegen_base import RUNTIME_DTYPES, StmtCodegen, arg_directions
from pypto_build.chip_build.distributed_meta import Parameter
from pypto_build.lowering.diagnostics import InternalError, ProgramError, Span
from pypto_build.lowering.ir import (
    AssignStmt,
    BinaryOp,
    Call,
    CommDomainScopeStmt,
    ConstBool,
    ConstFloat,
    ConstInt,
    DataType,
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
    SeqStmts,
    TensorType,
    UnaryOp,
    Var,
    WhileStmt,
    WindowBufferType,
    get_attr,
)
from pypto_build.lowering.ops.signature import expr_span
from pypto_build.lowering.passes.derive_call_directions import ARG_DIRECTIONS, SCALAR
from pypto_build.lowering.passes.rewrite import defined_names, walk_stmts

PHASE = "host orchestration codegen"

#: The module's file name inside ``orchestration/``: PyPTO's L3 loader loads exactly this one.
MODULE_NAME = "host_orch.py"
#: The attribute that marks the entry function for PyPTO's loader.
ENTRY_MARKER = "_pypto_distributed_entry"
#: The function that allocates the run's intermediates (the ordering tokens) before it starts.
ALLOC_INTERMEDIATES = "_alloc_intermediates"

ALLOC_WINDOW_BUFFER = "pld.alloc_window_buffer"
WINDOW = "pld.window"
WORLD_SIZE = "pld.world_size"
GET_COMM_CTX = "pld.get_comm_ctx"

#: What the module imports, as pypto's generated modules import it.
IMPORTS = (
    "import torch",
    "from simpler.task_interface import CallConfig, CommBufferSpec, DataType, TaskArgs, "
    "TensorArgType",
    "",
    "from pypto.runtime.distributed_runner import _submit_chip",
    "from pypto.runtime.tensor_arg import make_tensor_arg",
)

_ARG_TYPE = {
    "In": runtime_types.TensorArgType.INPUT,
    "Out": runtime_types.TensorArgType.OUTPUT_EXISTING,
    "InOut": runtime_types.TensorArgType.INOUT,
}

_BINARY = {"+", "-", "*", "//", "%", "<", "<=", ">", ">=", "==", "!=", "and", "or"}

#: Every window buffer starts on a cache line (signals are atomics; payloads move in lines):
#: a buffer's size is padded to whole lines, and the runtime carves them in order.
WINDOW_ALIGNMENT = 64

#: What each scalar a builtin entry declares (``[abi.entry] scalars``) is, on a domain handle.
_ENTRY_SCALARS = {"nranks": "domain_size", "comm_context": "device_ctx"}
_CORE_NUM = "core_num"

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


def generate_host_orchestrator(
    program: Program, func: Function, next_levels: Collection[str]
) -> HostOrchestrator:
    """The ``orchestration/host_orch.py`` module of HOST orchestrator ``func`` of ``program``;
    ``next_levels`` are the sub-build names of the build (its chip orchestrations)."""
    if not func.is_host_orchestrator:
        raise InternalError(f"{PHASE}: '{func.name}' is not a HOST orchestrator")
    codegen = _HostCodegen(program, func, frozenset(next_levels))
    source = codegen.source()
    return HostOrchestrator(source, tuple(codegen.parameters), len(func.return_types))


# --- values --------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Local:
    """A value held in a Python local: a host tensor (with its shape, and whether its elements
    are packed row-major) or a scalar."""

    text: str
    tensor: bool
    shape: tuple[int, ...] = ()
    contiguous: bool = True


@dataclass(frozen=True)
class _Buffer:
    """A window buffer variable: allocated by its scope's ``allocate_domain``."""

    name: str


@dataclass(frozen=True)
class _Window:
    """A view of a window buffer: one tensor per rank of the buffer's domain, described by its
    shape, element strides and element offset in the buffer (an expression)."""

    domain: str
    buffer: str
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    dtype: DataType
    offset: str = "0"

    def handle(self, device: str) -> str:
        return f"{self.domain}[{device}]"

    def on(self, device: str) -> str:
        shape = _tuple_text(str(d) for d in self.shape)
        dtype = RUNTIME_DTYPES[self.dtype].name
        arguments = f"shapes={shape}, dtype=DataType.{dtype}"
        if self.strides != _row_major(self.shape) or self.offset != "0":
            strides = _tuple_text(str(d) for d in self.strides)
            byte_offset = f"({self.offset}) * {self.dtype.byte_size}"
            arguments += f", strides={strides}, byte_offset={byte_offset}"
        return f"{self.handle(device)}.buffers[{_str(self.buffer)}].tensor({arguments})"


@dataclass(frozen=True)
class _Conflict:
    """A window name bound to different views on different paths: an error once used."""

    error: ProgramError


_Value = _Local | _Buffer | _Window | _Conflict


def _tuple_text(items: Iterable[str]) -> str:
    parts = list(items)
    return f"({parts[0]},)" if len(parts) == 1 else f"({', '.join(parts)})"


def _str(text: str) -> str:
    """A Python string literal (double-quoted; the names quoted here are plain ASCII)."""
    return json.dumps(text)


def _row_major(shape: Sequence[int]) -> tuple[int, ...]:
    """The element strides of a packed row-major tensor of ``shape``."""
    strides = []
    step = 1
    for extent in reversed(shape):
        strides.append(step)
        step *= extent
    return tuple(reversed(strides))


def _region_is_contiguous(shape: Sequence[int], region: Sequence[int]) -> bool:
    """Whether the ``region`` extents of a packed ``shape`` are packed too: after the first
    dimension the region spans more than one of, every dimension must be whole."""
    spanning = [dim for dim, extent in enumerate(region) if extent != 1]
    if not spanning:
        return True
    return all(region[dim] == shape[dim] for dim in range(spanning[0] + 1, len(shape)))


def _unsupported(what: str, span: Span) -> ProgramError:
    return ProgramError(f"{what} is not supported in a HOST orchestrator", span, PHASE)


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
        self.env: dict[str, _Value] = {}
        #: The Python local of the domain that allocates each window buffer.
        self.buffer_domains: dict[str, str] = {}
        #: The ``tensors`` key of each domain's ordering tokens, by the domain's local.
        self.tokens: dict[str, str] = {}
        #: Devices an explicit domain names (tokens must exist for each).
        self.devices = 1
        self.tasks = 0
        self.offsets = 0
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

    def _unsupported(self, what: str, span: Span) -> ProgramError:
        return _unsupported(what, span)

    def _bind_params(self) -> None:
        for param in self.func.params:
            var = param.var
            name = py_name(var.name)
            span = expr_span(var, self.func.span)
            if isinstance(var.type, TensorType) and not isinstance(var.type, DistributedTensorType):
                dtype = _runtime_dtype(var.type.dtype, f"tensor parameter '{var.name}'", span)
                self._parameter(var.name, "tensor", var.type.shape, dtype, param.direction.value)
                self.env[var.name] = _Local(name, tensor=True, shape=var.type.shape)
            elif isinstance(var.type, ScalarType):
                if param.direction is not ParamDirection.In:
                    raise _unsupported(f"{param.direction.value} scalar '{var.name}'", span)
                dtype = _runtime_dtype(var.type.dtype, f"scalar parameter '{var.name}'", span)
                self._parameter(var.name, "scalar", (), dtype, "In")
                self.env[var.name] = _Local(name, tensor=False)
            else:
                what = f"parameter '{var.name}' of type {type(var.type).__name__}"
                raise _unsupported(what, span)
            self.emit(f"{name} = tensors[{_str(var.name)}]")

    def _parameter(
        self,
        name: str,
        kind: str,
        shape: tuple[int, ...],
        dtype: runtime_types.DataType,
        direction: str,
    ) -> None:
        self.parameters.append(Parameter(name, kind, shape, dtype, direction))  # type: ignore[arg-type]

    # -- statements -------------------------------------------------------------------------

    def _for(self, stmt: ForStmt) -> None:
        start, stop, step = (
            self._scalar(bound, stmt.span) for bound in (stmt.start, stmt.stop, stmt.step)
        )
        var = py_name(stmt.var.name)
        self.emit(f"for {var} in range({start}, {stop}, {step}):")
        self.env[stmt.var.name] = _Local(var, tensor=False)
        self._loop(stmt, stmt.body)

    def _while(self, stmt: WhileStmt) -> None:
        self.emit(f"while {self._scalar(stmt.cond, stmt.span)}:")
        self._loop(stmt, stmt.body)

    def _if(self, stmt: IfStmt) -> None:
        self.emit(f"if {self._scalar(stmt.cond, stmt.span)}:")
        entry = dict(self.env)
        self._nested(stmt.then_body)
        after_then, self.env = self.env, dict(entry)
        if stmt.else_body is not None and stmt.else_body.stmts:
            self.emit("else:")
            self._nested(stmt.else_body)
        self.env = _join(after_then, self.env, stmt.span)

    def _loop(self, stmt: ForStmt | WhileStmt, body: SeqStmts) -> None:
        """A window name must denote the same view in every iteration: it is emitted per use,
        not held in a variable that a later iteration could see reassigned."""
        entry = dict(self.env)
        self._nested(body)
        for name in sorted(defined_names(body)):
            before, after = entry.get(name), self.env.get(name)
            symbolic = (_Window, _Buffer)
            if before != after and (isinstance(before, symbolic) or isinstance(after, symbolic)):
                raise _unsupported(
                    f"rebinding window '{name}' inside a loop", expr_span(stmt, self.func.span)
                )
        self.env = _join(entry, self.env, stmt.span)

    def _scope(self, stmt: CommDomainScopeStmt) -> None:
        domain = py_name(stmt.name) + "_"
        sizes = _buffer_sizes(stmt)
        specs = []
        window_size = 0
        for buffer in stmt.buffers:
            if buffer not in sizes:
                raise InternalError(f"{PHASE}: scope {stmt.name} does not allocate '{buffer}'")
            padded = -(-sizes[buffer] // WINDOW_ALIGNMENT) * WINDOW_ALIGNMENT
            window_size += padded
            specs.append(
                f"CommBufferSpec(name={_str(buffer)}, dtype={_str('opaque')}, "
                f"count={sizes[buffer]}, nbytes={padded})"
            )
            self.env[buffer] = _Buffer(buffer)
            self.buffer_domains[buffer] = domain
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
        if len(stmt.targets) != 1:
            raise _unsupported("a tuple assignment", stmt.span)
        target = stmt.targets[0]
        if isinstance(stmt.value, Call) and stmt.value.op == ALLOC_WINDOW_BUFFER:
            # Allocated by the enclosing scope's allocate_domain.
            if target.name not in self.buffer_domains:
                raise InternalError(f"{PHASE}: window buffer '{target.name}' has no scope")
            return
        value = self._value(stmt.value, stmt.span)
        if isinstance(value, _Local):
            name = py_name(target.name)
            if value.text != name:
                self.emit(f"{name} = {value.text}")
            self.env[target.name] = dataclasses.replace(value, text=name)
        else:
            self.env[target.name] = value

    def _effect(self, expr: Expr, at: Span) -> None:
        """Evaluate ``expr`` for its effect: a dispatch, or nothing for a pure value."""
        span = expr_span(expr, at)
        if isinstance(expr, Call) and isinstance(expr.op, GlobalVar):
            self._dispatch(expr, span)
        elif isinstance(expr, Call) and is_builtin_dispatch(expr):
            self._builtin_dispatch(expr, span)
        elif not isinstance(expr, Var):
            self._value(expr, at)

    # -- values -----------------------------------------------------------------------------

    def _value(self, expr: Expr, at: Span) -> _Value:
        span = expr_span(expr, at)
        if isinstance(expr, Var):
            value = self.env.get(expr.name)
            if value is None:
                raise InternalError(f"{PHASE}: unbound name '{expr.name}'")
            if isinstance(value, _Conflict):
                raise value.error
            return value
        if isinstance(expr, Call) and isinstance(expr.op, GlobalVar):
            raise _unsupported(
                f"using the result of dispatching '{expr.op.name}' (a chip orchestration "
                "returns its results through its Out/InOut arguments)",
                span,
            )
        if isinstance(expr, Call) and expr.op == ALLOC_WINDOW_BUFFER:
            raise _unsupported(f"{ALLOC_WINDOW_BUFFER} inside an expression", span)
        if isinstance(expr, Call) and expr.op == WINDOW:
            return self._window(expr, span)
        if isinstance(expr, Call) and isinstance(expr.op, str) and expr.op.startswith("tensor."):
            return self._tensor_view(expr, span)
        return _Local(self._scalar(expr, span), tensor=False)

    def _window(self, call: Call, span: Span) -> _Window:
        buffer = call.args[0]
        ty = call.type
        if not isinstance(buffer, Var) or not isinstance(ty, TensorType):
            raise InternalError(f"{PHASE}: malformed {WINDOW}")
        domain = self.buffer_domains.get(buffer.name)
        if domain is None:
            raise InternalError(f"{PHASE}: window of buffer '{buffer.name}' outside its scope")
        dtype = _window_dtype(ty.dtype, span)
        return _Window(domain, buffer.name, ty.shape, _row_major(ty.shape), dtype)

    def _tensor_view(self, call: Call, span: Span) -> _Value:
        op = call.callee_name
        if op not in ("tensor.slice", "tensor.reshape", "tensor.view", "tensor.set_validshape"):
            raise _unsupported(f"'{op}'", span)
        source = self._value(call.args[0], span)
        ty = call.type
        if not isinstance(ty, TensorType) or isinstance(source, _Buffer | _Conflict):
            raise InternalError(f"{PHASE}: {op} of a non-tensor")
        if isinstance(source, _Local) and not source.tensor:
            raise InternalError(f"{PHASE}: {op} of a scalar")
        if op == "tensor.slice":
            offsets = call.args[2]
            if not isinstance(offsets, MakeTuple):
                raise _unsupported("tensor.slice offsets that are not a list", span)
            starts = [self._scalar(item, span) for item in offsets.items]
            if isinstance(source, _Window):
                return self._window_slice(source, offsets, starts, ty.shape, span)
            assert isinstance(source, _Local)
            return _host_slice(source, starts, ty.shape)
        if op == "tensor.reshape" or get_attr(call.kwargs, "shape") is not None:
            return self._reshape(source, ty.shape, span)
        # The valid region and layout are metadata of the program, not of host tensors.
        return source

    def _window_slice(
        self,
        source: _Window,
        offsets: MakeTuple,
        starts: Sequence[str],
        shape: tuple[int, ...],
        span: Span,
    ) -> _Window:
        """A region of a window view. The view is emitted later, at each dispatch, so runtime
        offsets are first stored in a local: a later rebinding must not change the view."""
        if all(isinstance(item, ConstInt) for item in offsets.items):
            constant = sum(
                int(start) * stride for start, stride in zip(starts, source.strides, strict=True)
            )
            offset = _offset_sum(source.offset, str(constant))
        else:
            local = f"offset{self.offsets}_"
            self.offsets += 1
            terms = " + ".join(
                f"({start}) * {stride}"
                for start, stride in zip(starts, source.strides, strict=True)
            )
            self.emit(f"{local} = {terms}")
            offset = _offset_sum(source.offset, local)
        return dataclasses.replace(source, shape=shape, offset=offset)

    def _reshape(self, source: _Value, shape: tuple[int, ...], span: Span) -> _Value:
        if isinstance(source, _Window):
            if source.strides != _row_major(source.shape):
                raise _unsupported("reshaping a strided region of a window", span)
            return dataclasses.replace(source, shape=shape, strides=_row_major(shape))
        assert isinstance(source, _Local)
        if not source.contiguous:
            raise _unsupported("reshaping a strided region of a host tensor", span)
        return _Local(f"{source.text}.reshape({_tuple_text(str(d) for d in shape)})", True, shape)

    def _scalar(self, expr: Expr, at: Span) -> str:
        span = expr_span(expr, at)
        if isinstance(expr, ConstBool | ConstInt):
            return repr(expr.value)
        if isinstance(expr, ConstFloat):
            return repr(float(expr.value))
        if isinstance(expr, Var):
            value = self._value(expr, span)
            if not isinstance(value, _Local) or value.tensor:
                raise InternalError(f"{PHASE}: '{expr.name}' is not a scalar")
            return value.text
        if isinstance(expr, BinaryOp) and expr.op in _BINARY:
            return f"({self._scalar(expr.lhs, span)} {expr.op} {self._scalar(expr.rhs, span)})"
        if isinstance(expr, UnaryOp) and expr.op in ("-", "not"):
            operand = self._scalar(expr.operand, span)
            return f"(-{operand})" if expr.op == "-" else f"(not {operand})"
        if isinstance(expr, Call) and expr.op == WORLD_SIZE:
            return "world_size"
        if isinstance(expr, Call):
            raise _unsupported(f"'{expr.callee_name}'", span)
        raise _unsupported(f"a {type(expr).__name__}", span)

    # -- dispatches ---------------------------------------------------------------------------

    def _device(self, call: Call, span: Span) -> str:
        device = get_attr(call.attrs, "device")
        if not isinstance(device, Expr):
            raise ProgramError(
                f"a HOST orchestrator runs '{call.callee_name}' on one device at a time: "
                "pass device=<rank>",
                span,
                PHASE,
            )
        return self._scalar(device, span)

    def _dispatch(self, call: Call, span: Span) -> None:
        name = call.callee_name
        callee = self.program.function(name)
        if callee is None or not callee.is_chip_orchestration or name not in self.next_levels:
            kind = "an unknown function" if callee is None else f"a {callee.func_type.value}"
            raise _unsupported(
                f"calling '{name}' ({kind} function; only CHIP orchestrations are dispatched)",
                span,
            )
        device = self._device(call, span)
        directions = _directions(call)
        tensors: list[tuple[str, str]] = []
        scalars: list[str] = []
        domains: list[str] = []
        for arg, direction in zip(call.args, directions, strict=True):
            if direction == SCALAR:
                scalars.append(self._scalar_arg(arg, device, span))
                continue
            value = self._value(arg, span)
            if isinstance(value, _Window):
                tensors.append((value.on(device), direction))
                if value.domain not in domains:
                    domains.append(value.domain)
            else:
                tensors.append((self._host_tensor(arg, value, span), direction))
        tensors += [(self._token(domain, device), "InOut") for domain in domains]
        self._submit(name, device, tensors, scalars)

    def _builtin_dispatch(self, call: Call, span: Span) -> None:
        variant = host_variant(call)
        device = self._device(call, span)
        directions = _directions(call)
        windows = [self._value(arg, span) for arg in call.args]
        if not all(isinstance(w, _Window) for w in windows) or len(windows) != len(directions):
            raise InternalError(f"{PHASE}: {call.op} operands must be window views")
        first = windows[0]
        assert isinstance(first, _Window)
        tensors = [
            (window.on(device), direction)
            for window, direction in zip(windows, directions, strict=True)
            if isinstance(window, _Window)
        ]
        entry = variant.package.abi.entry
        if entry.ordering_token:
            tensors.append((self._token(first.domain, device), "InOut"))
        handle = first.handle(device)
        scalars = [self._entry_scalar(call, name, handle, span) for name in entry.scalars]
        self._submit(variant.name, device, tensors, scalars)

    def _token(self, domain: str, device: str) -> str:
        return f"make_tensor_arg(orch._worker, tensors[{_str(self.tokens[domain])}][{device}])"

    def _host_tensor(self, arg: Expr, value: _Value, span: Span) -> str:
        if not isinstance(value, _Local) or not value.tensor:
            raise InternalError(f"{PHASE}: tensor argument of a dispatch is not a tensor")
        if not value.contiguous:
            what = f"'{arg.name}'" if isinstance(arg, Var) else "this region"
            raise ProgramError(
                f"{what} is a strided region of a host tensor: PyPTO's runtime passes only "
                "contiguous host tensors to a chip (slice whole rows, or pass the whole tensor "
                "and slice it in the CHIP orchestration)",
                span,
                PHASE,
            )
        return f"make_tensor_arg(orch._worker, {value.text})"

    def _entry_scalar(self, call: Call, name: str, handle: str, span: Span) -> str:
        if name in _ENTRY_SCALARS:
            return f"{handle}.{_ENTRY_SCALARS[name]}"
        if name == _CORE_NUM:
            core_num = get_attr(call.kwargs, _CORE_NUM)
            return "1" if core_num is None else self._scalar(_expr(core_num), span)
        raise ProgramError(
            f"the entry of {call.op} expects scalar '{name}', which a HOST orchestrator cannot "
            f"supply (known: {', '.join(sorted({*_ENTRY_SCALARS, _CORE_NUM}))})",
            span,
            PHASE,
        )

    def _scalar_arg(self, arg: Expr, device: str, span: Span) -> str:
        if isinstance(arg, Call) and arg.op == GET_COMM_CTX:
            window = self._value(arg.args[0], span)
            if not isinstance(window, _Window):
                raise InternalError(f"{PHASE}: {GET_COMM_CTX} of a non-window")
            return f"{window.handle(device)}.device_ctx"
        return self._scalar(arg, span)

    def _submit(
        self, name: str, device: str, tensors: Sequence[tuple[str, str]], scalars: Sequence[str]
    ) -> None:
        task = f"task{self.tasks}_"
        self.tasks += 1
        self.emit(f"{task} = TaskArgs()")
        for text, direction in tensors:
            self.emit(f"{task}.add_tensor({text}, TensorArgType.{_ARG_TYPE[direction].name})")
        for text in scalars:
            self.emit(f"{task}.add_scalar({text})")
        self.emit(f"_keep.append({task})")
        self.emit(f"_submit_chip(orch, callables[{_str(name)}], {task}, config, {device})")


def _host_slice(source: _Local, starts: Sequence[str], shape: tuple[int, ...]) -> _Local:
    """``source[a:a + n, ...]``: a region of a host tensor, a view of the same memory."""
    index = ", ".join(
        _index(start, extent, size)
        for start, extent, size in zip(starts, shape, source.shape, strict=True)
    )
    contiguous = source.contiguous and _region_is_contiguous(source.shape, shape)
    return _Local(f"{source.text}[{index}]", True, shape, contiguous)


def _index(start: str, extent: int, size: int) -> str:
    """The Python slice of ``extent`` elements from ``start`` of a dimension of ``size``."""
    if start == "0":
        return ":" if extent == size else f":{extent}"
    return f"{start}:{start} + {extent}"


def _offset_sum(base: str, term: str) -> str:
    if base == "0":
        return term
    if term == "0":
        return base
    return f"{base} + {term}"


def _directions(call: Call) -> tuple[str, ...]:
    directions = arg_directions(call)
    if directions is None:
        raise InternalError(f"{PHASE}: dispatch of '{call.callee_name}' lacks {ARG_DIRECTIONS}")
    return directions


def _expr(value: object) -> Expr:
    if not isinstance(value, Expr):
        raise InternalError(f"{PHASE}: expected an expression, got {value!r}")
    return value


def _window_dtype(dtype: DataType, span: Span) -> DataType:
    _runtime_dtype(dtype, "a window", span)
    return dtype


def _runtime_dtype(dtype: DataType, what: str, span: Span) -> runtime_types.DataType:
    """The runtime element type of ``dtype``; a diagnostic for one a host tensor cannot hold."""
    if dtype not in RUNTIME_DTYPES:
        raise _unsupported(f"{what} of {dtype.value}", span)
    return RUNTIME_DTYPES[dtype]


def _buffer_sizes(scope: CommDomainScopeStmt) -> dict[str, int]:
    """Bytes of each window buffer allocated under ``scope``."""
    sizes: dict[str, int] = {}
    for stmt in walk_stmts(scope.body):
        if (
            isinstance(stmt, AssignStmt)
            and isinstance(stmt.value, Call)
            and stmt.value.op == ALLOC_WINDOW_BUFFER
            and isinstance(stmt.value.type, WindowBufferType)
        ):
            sizes[stmt.targets[0].name] = stmt.value.type.nbytes
    return sizes


def _join(a: Mapping[str, _Value], b: Mapping[str, _Value], span: Span) -> dict[str, _Value]:
    """The bindings after two paths meet: equal ones stay; a name bound to different window
    views is an error if it is used afterwards."""
    joined: dict[str, _Value] = {}
    for name in (*a, *(n for n in b if n not in a)):
        left, right = a.get(name), b.get(name)
        if left is None or right is None or left == right:
            value = left if right is None else right
            assert value is not None
            joined[name] = value
        else:
            joined[name] = _Conflict(
                _unsupported(f"'{name}', bound to different windows on different paths,", span)
            )
    return joined
