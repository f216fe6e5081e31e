"""Calls in a function body: program functions (``self.f``), ``pl.submit`` and ops.

A call of a program function is checked against the callee's signature here, because every
signature is known before any body is read. Keywords on such a call are not arguments but
attributes of the call site (``device=r`` dispatches to a rank). An op call is bound and typed by
the op table (:func:`pypto_build.lowering.ops.make_call`), which owns every op's signature.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from typing import TYPE_CHECKING

from pypto_build.builtins.registry import default_registry
from pypto_build.lowering.frontend.constants import element_size
from pypto_build.lowering.frontend.literals import element_size_call
from pypto_build.lowering.frontend.source import keyword_name, text
from pypto_build.lowering.frontend.typecheck import compatible
from pypto_build.lowering.ir import (
    TASK_ID,
    AttrValue,
    Call,
    ConstFloat,
    ConstInt,
    Expr,
    GlobalVar,
    ParamDirection,
    TupleType,
    Type,
)
from pypto_build.lowering.ir.names import CallAttr
from pypto_build.lowering.optable import is_unimplemented_collective, make_call, resolve_dsl_name
from pypto_build.lowering.printer import format_type

if TYPE_CHECKING:
    from pypto_build.lowering.frontend.exprs import ExprConverter

#: Keywords of a program-function call: attributes of the call site, in the IR's ``Call.attrs``.
CALL_ATTRS = (CallAttr.DEVICE, CallAttr.CORE_NUM, CallAttr.SYNC_START, CallAttr.ARG_DIRECTIONS)

#: DSL names that are valid only in one syntactic position, with where that is.
_PLACED = {
    "pl.range": "pl.range(...) is only allowed as the iterable of a for loop",
    "pl.func_attr": "pl.func_attr(...) must be the first statement of a function body",
    "pld.comm_domain": (
        "pld.comm_domain(...) is only allowed as a with statement in a HOST orchestrator: "
        "with pld.comm_domain(devices=[0, 1]):"
    ),
}


def convert_call(conv: ExprConverter, node: ast.Call) -> Expr:
    _reject_unpacking(conv, node)
    func = node.func
    if isinstance(func, ast.Attribute) and conv.is_receiver(func.value):
        return _function_call(conv, node, func, node.args, submit=False)
    path = conv.dsl_path(func)
    if path == "pl.submit":
        return _submit(conv, node)
    if path in _PLACED:
        conv.source.error(node, _PLACED[path])
    dtype = element_size_call(node, conv.dsl_path)
    if dtype is not None:
        return ConstInt(element_size(node, dtype, conv.source), span=conv.source.span(node))
    if path is not None:
        op = resolve_dsl_name(path)
        if op is None or is_unimplemented_collective(op):
            # Perhaps the op of a registered package that could not be loaded: its error.
            default_registry().require_none_broken()
        if op is None:
            conv.source.error(func, f"unknown operation '{path}'")
        args = [conv.value(arg) for arg in node.args]
        kwargs = [(keyword_name(kw), conv.value(kw.value)) for kw in node.keywords]
        return make_call(op, args, kwargs, conv.source.span(node))
    non_finite = _non_finite_float(conv, node)
    if non_finite is not None:
        return non_finite
    conv.source.error(func, f"call of '{text(func)}' is not supported in a PyPTO program")


def _reject_unpacking(conv: ExprConverter, node: ast.Call) -> None:
    for arg in node.args:
        if isinstance(arg, ast.Starred):
            conv.source.error(arg, f"unsupported argument: '{text(arg)}'")
    for keyword in node.keywords:
        if keyword.arg is None:
            conv.source.error(keyword, f"unsupported argument: '{keyword_name(keyword)}'")


def _submit(conv: ExprConverter, node: ast.Call) -> Expr:
    """``pl.submit(self.k, a, b)``: a call of ``k`` that also yields its task id."""
    callee = node.args[0] if node.args else None
    if not (isinstance(callee, ast.Attribute) and conv.is_receiver(callee.value)):
        conv.source.error(
            callee or node,
            "pl.submit expects the function to run as its first argument: "
            "pl.submit(self.kernel, ...)",
        )
    return _function_call(conv, node, callee, node.args[1:], submit=True)


def _function_call(
    conv: ExprConverter,
    node: ast.Call,
    callee: ast.Attribute,
    arg_nodes: Sequence[ast.expr],
    submit: bool,
) -> Call:
    name = callee.attr
    signature = conv.ctx.signatures.get(name)
    if signature is None:
        conv.source.error(callee, f"program '{conv.ctx.program}' has no function '{name}'")
    params = signature.params
    attrs: list[tuple[str, AttrValue]] = [(CallAttr.SUBMIT, True)] if submit else []
    for keyword in node.keywords:
        key = keyword_name(keyword)
        if key not in CALL_ATTRS:
            if any(param.var.name == key for param in params):
                detail = "arguments of a program function are passed positionally"
            else:
                detail = "call attributes are " + ", ".join(CALL_ATTRS)
            conv.source.error(keyword, f"unexpected keyword '{key}' in call of '{name}' ({detail})")
        value = conv.value(keyword.value)
        if key == CallAttr.ARG_DIRECTIONS:
            value = _arg_directions(conv, keyword, value)
        attrs.append((CallAttr(key), value))
    if len(arg_nodes) != len(params):
        plural = "" if len(params) == 1 else "s"
        conv.source.error(
            node, f"'{name}' takes {len(params)} argument{plural}, got {len(arg_nodes)}"
        )
    args: list[Expr] = []
    for position, (arg_node, param) in enumerate(zip(arg_nodes, params, strict=True), start=1):
        arg = conv.expr(arg_node)
        if not compatible(param.var.type, arg.type):
            conv.source.error(
                arg_node,
                f"argument {position} of '{name}' ('{param.var.name}'): expected "
                f"{format_type(param.var.type)}, got {format_type(arg.type)}",
            )
        args.append(arg)
    result = call_result_type(signature.return_types)
    if submit:
        result = TupleType((result, TASK_ID))
    return Call(
        GlobalVar(name), tuple(args), result, attrs=tuple(attrs), span=conv.source.span(node)
    )


def _arg_directions(conv: ExprConverter, node: ast.keyword, value: AttrValue) -> AttrValue:
    """A printed ``arg_directions`` read back: ``"In"``/``"Out"``/``"InOut"`` per tensor, None
    per scalar (DeriveCallDirections derives them again)."""
    if isinstance(value, tuple) and all(item is None or item in _DIRECTIONS for item in value):
        return tuple(None if item is None else _DIRECTIONS[str(item)] for item in value)
    conv.source.error(node, 'arg_directions must be a tuple of "In", "Out", "InOut" or None')


_DIRECTIONS = {direction.value: direction for direction in ParamDirection}


def call_result_type(return_types: tuple[Type, ...]) -> Type:
    """The type of a call: the single return type, else a tuple (empty for no returns)."""
    return return_types[0] if len(return_types) == 1 else TupleType(return_types)


def _non_finite_float(conv: ExprConverter, node: ast.Call) -> Expr | None:
    """``float("inf")`` / ``float("-inf")`` / ``float("nan")``: how the printer writes a
    non-finite float constant, which has no literal spelling in Python."""
    func = node.func
    arg = node.args[0] if len(node.args) == 1 and not node.keywords else None
    if (
        isinstance(func, ast.Name)
        and func.id == "float"
        and func.id not in conv.scope.bound
        and not conv.ctx.module.imports.is_bound(func.id)
        and isinstance(arg, ast.Constant)
        and arg.value in ("inf", "-inf", "nan")
    ):
        return ConstFloat(float(arg.value), span=conv.source.span(node))
    return None
