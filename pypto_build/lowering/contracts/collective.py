"""The ``collective`` contract: a collective exchanging rows between ranks, typed from its
manifest's operand table.

Each tensor operand's kind (a window, or any tensor), its dtype (a fixed one such as INT32, or
the payload dtype of the result) and its accepted shapes as symbolic patterns come from the
manifest. Symbols are bound by the first operand that mentions them, so operands are checked in
an order where the result (which binds the payload dtype and the geometry) and the signal (which
binds the rank count) come first. A product symbol (``NR*MAX_RECV``) must be a multiple of each
factor bound elsewhere, and equal to the product of its factors once all are bound (``NR*M``
beside an input ``[M, W]``).

The contract also rejects what the operand types alone prove unsupported by the kernels: non-ND
layout, a non-packed stride vector, a valid_shape narrower than shape, and the source being the
same expression as the result. ``core_num`` only has to be an integer here (constant or scalar
variable); its range and the launch width are the CHIP rail's (:meth:`chip_variant`, with the
package's launch-width rule) and the HOST entry's. The result is the result operand's type: the
window is the result (``data = ...(stage, data, ...)`` rebinds the target's name).

A package's internal op (``builtin.tensor.all_to_all_v``) is created only by the HOST rail (one
call per participating device); no DSL spelling resolves to it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from pypto_build.builtins.manifest import ANY_DTYPE, PAYLOAD_DTYPE, BuiltinPackage, Dim
from pypto_build.builtins.manifest import Operand as ManifestOperand
from pypto_build.lowering.builtin_ops import (
    HOST_RAIL,
    RESULT,
    SIGNAL,
    SOURCE,
    BuiltinOp,
    ChipVariant,
    Contract,
    manifest_error,
)
from pypto_build.lowering.diagnostics import InternalError, ProgramError
from pypto_build.lowering.ir import (
    Attrs,
    Call,
    ConstBool,
    ConstInt,
    DataType,
    DistributedTensorType,
    Expr,
    Function,
    ParamDirection,
    Shape,
    TensorType,
    Type,
    Var,
)
from pypto_build.lowering.ir.names import CallAttr, Kwarg, kwarg
from pypto_build.lowering.ops.signature import (
    Deducer,
    Effects,
    Kind,
    OpDef,
    Operand,
    Operands,
    optional,
    span_of,
)
from pypto_build.lowering.ops.validation import (
    check_rank_count,
    dims_text,
    expr_text,
    is_integer_scalar,
    require_distributed,
    require_dtype,
    require_full_valid_shape,
    require_layout_compact,
    require_positive_dims,
    require_tensor,
)
from pypto_build.lowering.runtime_facts import INT32_MAX


class CollectiveContract(Contract):
    name: str = "collective"

    def validate(self, package: BuiltinPackage) -> None:
        """The operands the rails single out by role: exactly one result, a window of the
        payload dtype (the op writes and returns it, and its dtype selects the variant); a
        signal, if any, a window of shape ``[NR]`` or ``[NR, S]`` (peers add their credits to
        it; it gives the rank count and the lanes)."""
        results = [position for position, op in enumerate(package.operands) if op.role == RESULT]
        if len(results) != 1:
            raise manifest_error(
                package,
                "operands",
                f"must have exactly one operand of role '{RESULT}' (the window the op writes "
                f"and returns), got {len(results)}",
            )
        result = package.operands[results[0]]
        if not result.window or result.dtype != PAYLOAD_DTYPE:
            raise manifest_error(
                package,
                f"operands[{results[0]}]",
                f"the '{RESULT}' operand must be a window of the payload dtype "
                f'(window = true, dtype = "{PAYLOAD_DTYPE}")',
            )
        for position, operand in enumerate(package.operands):
            if operand.role == SIGNAL and (
                not operand.window or any(len(shape) not in (1, 2) for shape in operand.shapes)
            ):
                raise manifest_error(
                    package,
                    f"operands[{position}]",
                    f"a '{SIGNAL}' operand must be a window (window = true) of shape [NR] or "
                    "[NR, S]",
                )
            if operand.optional:
                raise manifest_error(
                    package,
                    f"operands[{position}].optional",
                    "a collective's operands are all required",
                )
            if not operand.shapes:
                raise manifest_error(
                    package,
                    f"operands[{position}].shapes",
                    "is required: a collective is typed from its operands' shapes",
                )
            if operand.dtype == ANY_DTYPE:
                raise manifest_error(
                    package,
                    f"operands[{position}].dtype",
                    f"must be '{PAYLOAD_DTYPE}' or a dtype name: a collective is typed from "
                    "its operands' dtypes",
                )

    def public_op(self, builtin: BuiltinOp) -> OpDef:
        return _public_op(builtin)

    def internal_op(self, builtin: BuiltinOp) -> OpDef | None:
        return _internal_op(builtin)

    def ranks(self, builtin: BuiltinOp, kernel: Function) -> int | None:
        """The leading dimension (NR) of the kernel's signal parameter, if it has one."""
        signal = builtin.role_index(SIGNAL)
        if signal is None:
            return None
        names = [param.var.name for param in kernel.params]
        name = builtin.names[signal]
        ty = kernel.params[names.index(name)].var.type if name in names else None
        return ty.shape[0] if isinstance(ty, TensorType) and ty.shape else None

    def chip_variant(self, builtin: BuiltinOp, call: Call, phase: str) -> ChipVariant:
        """The payload dtype names the variant; the launch width follows from a compile-time
        ``core_num`` by the package's rule, and the signal must have a lane per admitted block;
        an operand a peer reaches must be a window."""
        if len(call.args) != len(builtin.names):
            raise InternalError(
                f"{phase}: {call.op} must have {len(builtin.names)} tensor args, "
                f"got {len(call.args)}"
            )
        core_num_expr, core_num = _core_num(call, builtin, phase)
        result = call.args[builtin.result_index].type
        if not isinstance(result, DistributedTensorType):
            raise InternalError(f"{phase}: {call.op} result must be DistributedTensorType")
        blocks = core_num
        signal = builtin.role_index(SIGNAL)
        if signal is not None:
            nranks, stride = _signal_shape(call, signal, phase)
            check_rank_count(nranks, span_of(call.args[signal], call.span), phase)
            blocks = builtin.launch_width.blocks(nranks, core_num)
            if stride < blocks:
                raise ProgramError(
                    f"CHIP {call.op}: signal stride ({stride}) is smaller than the admitted "
                    f"block count ({blocks}) for core_num={core_num}, nranks={nranks}",
                    span_of(call.args[signal], call.span),
                    phase=phase,
                )
        _require_remote_windows(call, builtin, phase)
        builtin.require_supported_dtype(result.dtype, call.span, phase)
        launch: Attrs = ()
        if blocks > 1:
            launch = (
                (CallAttr.CORE_NUM, ConstInt(blocks, core_num_expr.type, core_num_expr.span)),
                (CallAttr.SYNC_START, ConstBool(True, span=core_num_expr.span)),
            )
        return ChipVariant(result.dtype, launch=launch)


def _require_remote_windows(call: Call, builtin: BuiltinOp, phase: str) -> None:
    """A peer reaches a remote operand through CommRemotePtr, so on this rail it must be a
    DistributedTensor even where the op accepts a local tensor (for the InCore composite path,
    which reads it locally)."""
    for position, operand in enumerate(builtin.package.operands):
        arg = call.args[position]
        if operand.remote and not isinstance(arg.type, DistributedTensorType):
            raise ProgramError(
                f"CHIP {call.op} {operand.name} must be a DistributedTensor: peers read this "
                f"rank's {operand.name} through CommRemotePtr, so a plain Tensor (accepted only "
                "on the InCore composite path) is not supported on this rail",
                span_of(arg, call.span),
                phase,
            )


def _core_num(call: Call, builtin: BuiltinOp, phase: str) -> tuple[ConstInt, int]:
    """The compile-time ``core_num`` (L) of ``call``, range-checked before any narrowing."""
    value = kwarg(call, Kwarg.CORE_NUM)
    if value is None:
        return ConstInt(1, span=call.span), 1
    if not isinstance(value, ConstInt):
        if builtin.supports(HOST_RAIL):
            reason = "is not supported on this rail yet; pass a compile-time core_num (the HOST "
            reason += "rail accepts a runtime value)"
        else:
            reason = (
                f"is not supported; pass a compile-time core_num ({builtin.launch_width.meaning})"
            )
        raise ProgramError(
            f"CHIP {call.op}: a runtime core_num {reason}", span_of(value, call.span), phase=phase
        )
    if not 1 <= value.value <= INT32_MAX:
        raise ProgramError(
            f"CHIP {call.op}: core_num must be in [1, {INT32_MAX}], got {value.value}",
            span_of(value, call.span),
            phase=phase,
        )
    return value, value.value


def _signal_shape(call: Call, position: int, phase: str) -> tuple[int, int]:
    """The signal's static ``[NR, S]``; a rank-1 ``[NR]`` signal has one lane (S = 1), as the
    kernels read it (``signal_lanes``). The package's manifest admits one of the two forms and
    the deducer the manifest's shapes, so anything else is a bug."""
    signal = call.args[position].type
    if not isinstance(signal, DistributedTensorType) or len(signal.shape) not in (1, 2):
        raise InternalError(f"{phase}: {call.op} signal must be a 1D or 2D DistributedTensor")
    nranks, stride = (*signal.shape, 1)[:2]
    if nranks < 1 or stride < 1:
        raise InternalError(
            f"{phase}: {call.op} signal [NR, S] must be positive, got [{nranks}, {stride}]"
        )
    return nranks, stride


#: A symbolic shape: integers are fixed extents, strings name extents shared between operands.
Pattern = tuple[Dim, ...]


@dataclass(frozen=True)
class _Binding:
    value: int
    role: str
    dim: int


def _pattern_text(pattern: Pattern) -> str:
    return "[" + ", ".join(str(dim) for dim in pattern) + "]"


def _match(pattern: Pattern, shape: Shape, symbols: dict[str, _Binding]) -> bool:
    if len(pattern) != len(shape):
        return False
    seen: dict[str, int] = {}
    for want, got in zip(pattern, shape, strict=True):
        if isinstance(want, int):
            if want != got:
                return False
            continue
        bound = symbols[want].value if want in symbols else seen.get(want)
        if bound is not None and bound != got:
            return False
        seen[want] = got
    return True


def _check_shape(
    ops: Operands, operand: ManifestOperand, shape: Shape, symbols: dict[str, _Binding]
) -> None:
    """Match ``shape`` against the operand's patterns and bind the symbols it introduces."""
    pattern = next((p for p in operand.shapes if _match(p, shape, symbols)), None)
    if pattern is None:
        named = {dim for p in operand.shapes for dim in p if isinstance(dim, str)}
        known = [
            f"{symbol} = {symbols[symbol].value} from {symbols[symbol].role} dim "
            f"{symbols[symbol].dim}"
            for symbol in sorted(named & symbols.keys())
        ]
        alternatives = " or ".join(_pattern_text(p) for p in operand.shapes)
        context = f" ({', '.join(known)})" if known else ""
        ops.error(operand.name, f"must have shape {alternatives}, got {dims_text(shape)}{context}")
    for dim, (want, got) in enumerate(zip(pattern, shape, strict=True)):
        if isinstance(want, str) and want not in symbols:
            symbols[want] = _Binding(got, operand.name, dim)


def _check_operand(
    ops: Operands, operand: ManifestOperand, payload: DataType | None, result: str
) -> TensorType:
    name = operand.name
    ty = require_distributed(ops, name) if operand.window else require_tensor(ops, name)
    if operand.dtype != PAYLOAD_DTYPE:
        require_dtype(ops, name, ty, DataType(operand.dtype))
    elif payload is not None and ty.dtype is not payload:
        ops.error(name, f"dtype {ty.dtype.value} does not match {result} dtype {payload.value}")
    require_layout_compact(ops, name, ty)
    require_full_valid_shape(ops, name, ty)
    require_positive_dims(ops, name, ty)
    return ty


def _check_core_num(ops: Operands) -> None:
    core_num = ops.optional_expr(Kwarg.CORE_NUM)
    if core_num is None or isinstance(core_num, ConstInt):
        return
    if not (isinstance(core_num, Var) and is_integer_scalar(core_num)):
        ops.error(
            Kwarg.CORE_NUM,
            "must be a compile-time integer or an integer scalar variable, "
            f"got {expr_text(core_num)}",
        )


def _check_products(
    ops: Operands, symbols: dict[str, _Binding], checked: set[tuple[str, str]]
) -> None:
    """A bound product symbol (``NR*MAX_RECV``) must be a multiple of each factor bound by
    another operand and, once every factor is bound, exactly their product; each check runs
    once, as soon as its symbols are bound.

    Only a factor no operand binds on its own (``MAX_RECV``) leaves the product free to be any
    multiple: where an operand binds it (an input ``[M, SIZE]`` beside a target
    ``[NR*M, SIZE]``), a multiple of each factor is not enough (12 rows pass for NR = 4 and
    M = 2), and the kernel would find a slot size, rows / NR, that is not the input's.
    """
    for symbol, product in list(symbols.items()):
        if "*" not in symbol:
            continue
        factors = symbol.split("*")
        if all(factor in symbols for factor in factors):
            # (symbol, symbol) marks the whole-product check; (symbol, factor) one factor's.
            if (symbol, symbol) not in checked:
                checked.add((symbol, symbol))
                _check_exact_product(ops, symbol, product, [symbols[f] for f in factors])
            continue
        for factor in factors:
            bound = symbols.get(factor)
            if bound is None or (symbol, factor) in checked:
                continue
            checked.add((symbol, factor))
            if product.value % bound.value != 0:
                ops.error(
                    product.role,
                    f"dim {product.dim} ({product.value}) must be divisible by {factor} "
                    f"({bound.value}, {bound.role} dim {bound.dim}): round the window's row "
                    f"count up to a multiple of {factor}",
                )


def _check_exact_product(
    ops: Operands, symbol: str, product: _Binding, factors: list[_Binding]
) -> None:
    expected = math.prod(factor.value for factor in factors)
    if product.value != expected:
        sources = ", ".join(
            f"{name} = {factor.value} from {factor.role} dim {factor.dim}"
            for name, factor in zip(symbol.split("*"), factors, strict=True)
        )
        ops.error(
            product.role,
            f"dim {product.dim} ({product.value}) must be {symbol} = {expected} ({sources})",
        )


def _checking_order(builtin: BuiltinOp) -> list[ManifestOperand]:
    """The result first (it binds the payload dtype and the geometry), then the signal (the
    rank count), then the others in argument order."""
    operands = list(builtin.package.operands)
    first = [op for role in (RESULT, SIGNAL) for op in operands if op.role == role]
    return [*first, *(op for op in operands if op not in first)]


#: How many distinct operand-type combinations each collective remembers as accepted: a program
#: calls a collective on a handful of window geometries, and the memo must stay bounded in a
#: process that lowers program after program.
ACCEPTED_TYPES_LIMIT = 64


def _operand_types(ops: Operands, order: list[ManifestOperand]) -> tuple[Type, ...] | None:
    """The types of the tensor operands in checking order, or None when one is not an
    expression (the checks then run, and report it)."""
    types: list[Type] = []
    for operand in order:
        value = ops.values.get(operand.name)
        if not isinstance(value, Expr):
            return None
        types.append(value.type)
    return tuple(types)


def _check_types(ops: Operands, order: list[ManifestOperand], result: str) -> None:
    """The checks that read the operand types alone: kinds, dtypes, layouts, shapes."""
    symbols: dict[str, _Binding] = {}
    checked: set[tuple[str, str]] = set()
    payload: DataType | None = None
    for operand in order:
        ty = _check_operand(ops, operand, payload, result)
        if operand.name == result:
            payload = ty.dtype
        _check_shape(ops, operand, ty.shape, symbols)
        _check_products(ops, symbols, checked)


def _deducer(builtin: BuiltinOp) -> Deducer:
    result = builtin.package.operands[builtin.result_index].name
    order = _checking_order(builtin)
    source = builtin.role_index(SOURCE)
    # Operand types the type checks accepted: they read nothing else, so a program making
    # thousands of calls on the same windows checks their types once. A rejection is not
    # remembered (each call reports it at its own operand).
    accepted: set[tuple[Type, ...]] = set()

    def deduce(ops: Operands) -> Type:
        types = _operand_types(ops, order)
        if types is None or types not in accepted:
            _check_types(ops, order, result)
            if types is not None and len(accepted) < ACCEPTED_TYPES_LIMIT:
                accepted.add(types)
        if source is not None:
            source_name = builtin.names[source]
            if ops.expr(source_name) == ops.expr(result):
                ops.error(
                    source_name,
                    f"must not be the same expression as {result}: peers write {result} while "
                    f"this rank still reads {source_name}",
                )
        _check_core_num(ops)
        return ops.expr(result).type

    return deduce


def _effects(builtin: BuiltinOp) -> Effects:
    """The window is the result, written in place with every other written operand; each
    operand moves as one dense block, so the result is as dense as the window it returns."""
    written = tuple(
        position
        for position in range(len(builtin.names))
        if builtin.direction(position) is not ParamDirection.In
    )
    return Effects(view_of=builtin.result_index, writes=written, keeps_density=True)


def _public_op(builtin: BuiltinOp) -> OpDef:
    """The public op of ``builtin`` (``pld.tensor.all_to_all_v``)."""
    operands = tuple(Operand(name) for name in builtin.names)
    return OpDef(
        builtin.op,
        (*operands, optional(Kwarg.CORE_NUM, none_omits=False)),
        _deducer(builtin),
        _effects(builtin),
    )


def _internal_op(builtin: BuiltinOp) -> OpDef:
    """The HOST rail's per-device dispatch op of ``builtin`` (``builtin.tensor.all_to_all_v``):
    the public contract, plus what a per-device dispatch relies on. It hands the chip the
    windows by their comm-domain handle, so every operand must be a view of an allocated
    window, and the ``dtype`` selecting the kernel variant must be the payload's."""
    public = _deducer(builtin)
    result = builtin.names[builtin.result_index]

    def deduce(ops: Operands) -> Type:
        deduced = public(ops)
        for name in builtin.names:
            ty = ops.expr(name).type
            if not (isinstance(ty, DistributedTensorType) and ty.window is not None):
                ops.error(
                    name,
                    "must be a window-bound DistributedTensor (a view of an "
                    f"alloc_window_buffer), got {expr_text(ops.expr(name))}",
                )
        dtype = ops.dtype(Kwarg.DTYPE)
        assert dtype is not None, "a required operand"
        payload = require_tensor(ops, result).dtype
        if dtype is not payload:
            ops.error(Kwarg.DTYPE, f"{dtype.value} does not match {result} dtype {payload.value}")
        return deduced

    return OpDef(
        builtin.builtin_op,
        (
            *(Operand(name) for name in builtin.names),
            Operand(Kwarg.DTYPE, Kind.DTYPE),
            optional(Kwarg.CORE_NUM, none_omits=False),
        ),
        deduce,
        _effects(builtin),
    )
