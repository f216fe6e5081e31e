"""A ``@pl.function`` method's signature: decorator options, parameters, return types and the
``pl.func_attr({...})`` prelude of its body.

Signatures are read for every function of a program before any body, so a body may call a
function defined further down and every call is checked against its callee's parameters.
"""

from __future__ import annotations

import ast
import ntpath
import posixpath
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TypeVar

from pypto_build.lowering.frontend.annotations import param_type, return_types
from pypto_build.lowering.frontend.context import ModuleContext
from pypto_build.lowering.frontend.literals import (
    FUNCTION_TYPES,
    LEVELS,
    ROLES,
    literal_of,
)
from pypto_build.lowering.frontend.source import keyword_name, text
from pypto_build.lowering.frontend.stmts import is_no_op
from pypto_build.lowering.ir import (
    AttrValue,
    Function,
    FunctionType,
    Level,
    Param,
    Role,
    SeqStmts,
    Var,
)
from pypto_build.lowering.ir.names import FunctionAttr
from pypto_build.lowering.optable import resolve_dsl_name

_OPTIONS = ("type", "level", "role", FunctionAttr.EXTERNAL_SOURCE)
#: DSL names a body may call that are not ops.
_BODY_NAMES = frozenset({"pl.range", "pl.submit"})
_E = TypeVar("_E")


@dataclass(frozen=True)
class ParsedFunction:
    """A function whose signature is read and whose body statements are still to convert.
    ``receiver`` is the name of the stripped first parameter (``self``)."""

    signature: Function
    body: list[ast.stmt]
    receiver: str


@dataclass(frozen=True)
class _Options:
    func_type: FunctionType
    level: Level
    external_source: str | None


def is_function_decorator(node: ast.expr, ctx: ModuleContext) -> bool:
    return ctx.dsl_path(node.func if isinstance(node, ast.Call) else node) == "pl.function"


def parse_function(node: ast.FunctionDef, ctx: ModuleContext) -> ParsedFunction:
    options = _options(node, ctx)
    receiver, params = _params(node, ctx)
    body = list(node.body)
    if body and _is_docstring(body[0]):
        body = body[1:]
    attrs: list[tuple[str, AttrValue]] = []
    if options.external_source is not None:
        attrs.append((FunctionAttr.EXTERNAL_SOURCE, options.external_source))
    func_attr = _func_attr_call(body[0], ctx) if body else None
    if func_attr is not None:
        attrs.extend(_func_attrs(func_attr, ctx))
        body = body[1:]
    if options.external_source is None and options.func_type.is_kernel:
        _refuse_dsl_body(node, options.func_type, body, ctx)
    if options.external_source is not None:
        for stmt in body:
            if not is_no_op(stmt):
                ctx.source.error(
                    stmt,
                    f"'{node.name}' has external_source=\"{options.external_source}\", so its "
                    "body must be '...': the kernel is the C++ file",
                )
    signature = Function(
        node.name,
        params,
        return_types(node.returns, ctx),
        SeqStmts(()),
        options.func_type,
        options.level,
        tuple(attrs),
        ctx.source.span(node),
    )
    return ParsedFunction(signature, body, receiver)


def _refuse_dsl_body(
    node: ast.FunctionDef, func_type: FunctionType, body: list[ast.stmt], ctx: ModuleContext
) -> None:
    """A kernel written in the DSL (``pl.load``, ``pl.store``, tile ops): one diagnostic at the
    function, rather than one about the first op of its body that has no meaning here. A body
    of program-model ops only (a managed collective, the InCore composite rail) is left to the
    body converter and the passes."""
    paths = (
        ctx.dsl_path(call.func)
        for stmt in body
        for call in ast.walk(stmt)
        if isinstance(call, ast.Call)
    )
    if all(path is None or path in _BODY_NAMES or resolve_dsl_name(path) for path in paths):
        return
    ctx.source.error(
        node,
        f"kernel '{node.name}' ({func_type.value}) has a DSL body, which pypto-build does not "
        "compile: upstream generates such kernels with its PTO backend and ptoas, which a build "
        "here does not run (docs/incore.md). Write the kernel in C++ against the kernel ABI "
        f'(docs/dsl.md) and name it with external_source="kernels/{node.name}.cpp", with '
        "'...' as its body",
    )


# --- decorator -------------------------------------------------------------------------------


def _options(node: ast.FunctionDef, ctx: ModuleContext) -> _Options:
    decorators = [d for d in node.decorator_list if is_function_decorator(d, ctx)]
    for decorator in node.decorator_list:
        if decorator not in decorators:
            ctx.source.error(
                decorator, f"unsupported decorator '@{text(decorator)}' on a program function"
            )
    if not decorators:
        ctx.source.error(
            node, f"method '{node.name}' of a @pl.program class needs @pl.function(...)"
        )
    decorator = decorators[0]
    if len(decorators) > 1:
        ctx.source.error(decorators[1], "@pl.function is given twice")
    keywords = decorator.keywords if isinstance(decorator, ast.Call) else []
    if isinstance(decorator, ast.Call) and decorator.args:
        ctx.source.error(decorator.args[0], "@pl.function(...) takes keyword arguments only")
    given: dict[str, ast.keyword] = {}
    for keyword in keywords:
        if keyword_name(keyword) not in _OPTIONS:
            ctx.source.error(
                keyword,
                f"unknown @pl.function argument '{keyword_name(keyword)}' "
                f"(expected {', '.join(_OPTIONS)})",
            )
        given[keyword_name(keyword)] = keyword
    return _resolve_options(given, ctx)


def _resolve_options(given: Mapping[str, ast.keyword], ctx: ModuleContext) -> _Options:
    """Apply upstream's defaults and consistency rules: kernels and orchestrations are CHIP
    functions unless a level is given; ``role=pl.Role.Orchestrator`` alone means an
    orchestration; a role or level contradicting the type is an error."""
    func_type = _enum(given.get("type"), FUNCTION_TYPES, "function type", ctx)
    level = _enum(given.get("level"), LEVELS, "level", ctx)
    role = _enum(given.get("role"), ROLES, "role", ctx)
    if func_type is None:
        func_type = FunctionType.Orchestration if role is Role.Orchestrator else FunctionType.Opaque
    if role is not None and (role is Role.Orchestrator) != func_type.is_orchestration_like:
        ctx.source.error(
            given["role"].value,
            f"role=pl.Role.{role.value} does not fit a {func_type.value} function",
        )
    if level is Level.HOST and func_type.is_kernel:
        ctx.source.error(
            given["level"].value,
            f"a {func_type.value} kernel runs on the chip; level=pl.Level.HOST is not allowed",
        )
    external_source = _external_source(given.get(FunctionAttr.EXTERNAL_SOURCE), func_type, ctx)
    return _Options(func_type, level or Level.CHIP, external_source)


def _enum(
    keyword: ast.keyword | None, table: Mapping[str, _E], what: str, ctx: ModuleContext
) -> _E | None:
    if keyword is None:
        return None
    value = table.get(ctx.dsl_path(keyword.value) or "")
    if value is None:
        ctx.source.error(keyword.value, f"unknown {what} '{text(keyword.value)}'")
    return value


def _external_source(
    keyword: ast.keyword | None, func_type: FunctionType, ctx: ModuleContext
) -> str | None:
    """A kernel file given relative to the program file: it is copied into the sub-build, so
    an absolute path would make the build depend on the machine it ran on."""
    if keyword is None:
        return None
    node = keyword.value
    if not (isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value):
        ctx.source.error(node, "external_source must be a non-empty string literal")
    if posixpath.isabs(node.value) or ntpath.isabs(node.value):
        ctx.source.error(node, "external_source must be relative to the program file")
    if not func_type.is_kernel:
        ctx.source.error(
            keyword,
            f"external_source applies to AIV, AIC and InCore kernels, not {func_type.value}",
        )
    return node.value


# --- parameters ------------------------------------------------------------------------------


def _params(node: ast.FunctionDef, ctx: ModuleContext) -> tuple[str, tuple[Param, ...]]:
    arguments = node.args
    for special, prefix in ((arguments.vararg, "*"), (arguments.kwarg, "**")):
        if special is not None:
            ctx.source.error(special, f"unsupported parameter '{prefix}{special.arg}'")
    if arguments.kwonlyargs:
        ctx.source.error(arguments.kwonlyargs[0], "keyword-only parameters are not supported")
    if arguments.defaults:
        ctx.source.error(arguments.defaults[0], "parameter defaults are not supported")
    positional = [*arguments.posonlyargs, *arguments.args]
    if not positional:
        ctx.source.error(node, f"method '{node.name}' must take 'self' as its first parameter")
    params: list[Param] = []
    seen = {positional[0].arg}
    for arg in positional[1:]:
        if arg.arg in seen:  # ast.parse takes it; compiling or rendering the function would not
            ctx.source.error(arg, f"duplicate parameter '{arg.arg}' of '{node.name}'")
        seen.add(arg.arg)
        if arg.annotation is None:
            ctx.source.error(
                arg,
                f"parameter '{arg.arg}' of '{node.name}' needs a type annotation, "
                "e.g. pl.Tensor[[M, N], pl.FP32]",
            )
        ty, direction = param_type(arg.annotation, ctx)
        params.append(Param(Var(arg.arg, ty, ctx.source.span(arg)), direction))
    return positional[0].arg, tuple(params)


# --- pl.func_attr ----------------------------------------------------------------------------


def _is_docstring(stmt: ast.stmt) -> bool:
    return (
        isinstance(stmt, ast.Expr)
        and isinstance(stmt.value, ast.Constant)
        and isinstance(stmt.value.value, str)
    )


def _func_attr_call(stmt: ast.stmt, ctx: ModuleContext) -> ast.Call | None:
    """The ``pl.func_attr(...)`` call if ``stmt`` is one."""
    if (
        isinstance(stmt, ast.Expr)
        and isinstance(stmt.value, ast.Call)
        and ctx.dsl_path(stmt.value.func) == "pl.func_attr"
    ):
        return stmt.value
    return None


def _func_attrs(call: ast.Call, ctx: ModuleContext) -> list[tuple[str, AttrValue]]:
    if len(call.args) != 1 or call.keywords or not isinstance(call.args[0], ast.Dict):
        ctx.source.error(call, 'pl.func_attr takes one dict literal: pl.func_attr({"key": value})')
    table = call.args[0]
    attrs: dict[str, AttrValue] = {}
    for key, value in zip(table.keys, table.values, strict=True):
        if key is None:
            ctx.source.error(value, "pl.func_attr does not accept '**' entries")
        if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
            ctx.source.error(key, "function attribute names must be string literals")
        if key.value in _OPTIONS:
            ctx.source.error(key, f"set '{key.value}' in @pl.function(...), not in pl.func_attr")
        if key.value in attrs:
            ctx.source.error(key, f"duplicate function attribute '{key.value}'")
        attrs[key.value] = _attr_literal(value, ctx)
    return list(attrs.items())


def _attr_literal(node: ast.expr, ctx: ModuleContext) -> AttrValue:
    """A function attribute value: a str/bool/float/None literal, an integer constant
    expression, a data type or layout, or a tuple of those."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str | bool | float | None):
        return node.value
    if isinstance(node, ast.Tuple):
        return tuple(_attr_literal(item, ctx) for item in node.elts)
    literal = literal_of(ctx.dsl_path(node) or "")
    if literal is not None:
        return literal
    if isinstance(node, ast.Constant | ast.Name | ast.BinOp | ast.UnaryOp):
        return ctx.fold(node)
    ctx.source.error(
        node, f"function attribute values must be literals (str, int, bool), got '{text(node)}'"
    )
