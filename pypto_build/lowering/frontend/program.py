"""A parsed module -> its ``@pl.program`` classes as IR programs.

Module-level code other than imports, integer constants and program classes is ignored: it is
never run, and a build must not depend on it. A stray ``@pl.function`` outside a program class is
reported, since it would otherwise be silently dropped from the build.
"""

from __future__ import annotations

import ast
import dataclasses

from pypto_build.lowering.frontend.constants import collect_constants
from pypto_build.lowering.frontend.context import FunctionContext, ModuleContext
from pypto_build.lowering.frontend.functions import (
    ParsedFunction,
    is_function_decorator,
    parse_function,
)
from pypto_build.lowering.frontend.imports import ImportTable
from pypto_build.lowering.frontend.scope import Scope
from pypto_build.lowering.frontend.source import Source, text
from pypto_build.lowering.frontend.stmts import BodyConverter, is_no_op
from pypto_build.lowering.ir import Program


def parse_module(module: ast.Module, source: Source) -> tuple[Program, ...]:
    imports = ImportTable.from_module(module)
    ctx = ModuleContext(source, imports, collect_constants(module, source, imports.dsl_path))
    programs: list[Program] = []
    for stmt in module.body:
        if isinstance(stmt, ast.ClassDef) and _is_program(stmt, ctx):
            if any(program.name == stmt.name for program in programs):
                source.error(stmt, f"program '{stmt.name}' is defined twice")
            programs.append(_program(stmt, ctx))
        elif isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
            for decorator in stmt.decorator_list:
                if is_function_decorator(decorator, ctx):
                    source.error(
                        decorator, "@pl.function must decorate a method of a @pl.program class"
                    )
    return tuple(programs)


def _is_program(cls: ast.ClassDef, ctx: ModuleContext) -> bool:
    """Whether ``cls`` is decorated ``@pl.program`` (or ``@pl.program()``); any other DSL
    decorator on a class, and any decorator next to ``@pl.program``, is an error."""
    found = False
    for decorator in cls.decorator_list:
        callee = decorator.func if isinstance(decorator, ast.Call) else decorator
        path = ctx.dsl_path(callee)
        if path is None:
            continue
        if path != "pl.program":
            ctx.source.error(decorator, f"unknown class decorator '@{path}' (expected @pl.program)")
        if isinstance(decorator, ast.Call) and (decorator.args or decorator.keywords):
            ctx.source.error(decorator, "@pl.program takes no arguments")
        found = True
    if found:
        for decorator in cls.decorator_list:
            if (
                ctx.dsl_path(decorator.func if isinstance(decorator, ast.Call) else decorator)
                is None
            ):
                ctx.source.error(
                    decorator, f"unsupported decorator '@{text(decorator)}' on a @pl.program class"
                )
    return found


def _program(cls: ast.ClassDef, ctx: ModuleContext) -> Program:
    if cls.bases or cls.keywords:
        ctx.source.error(cls, f"@pl.program class '{cls.name}' cannot have base classes")
    parsed: list[ParsedFunction] = []
    for stmt in cls.body:
        if is_no_op(stmt):
            continue
        if not isinstance(stmt, ast.FunctionDef):
            ctx.source.error(
                stmt, f"@pl.program class '{cls.name}' may only contain @pl.function methods"
            )
        if any(done.signature.name == stmt.name for done in parsed):
            ctx.source.error(
                stmt, f"function '{stmt.name}' is defined twice in program '{cls.name}'"
            )
        parsed.append(parse_function(stmt, ctx))
    signatures = {done.signature.name: done.signature for done in parsed}
    functions = []
    for done in parsed:
        fctx = FunctionContext(ctx, cls.name, signatures, done.signature, done.receiver)
        scope = Scope({param.var.name: param.var for param in done.signature.params})
        body = BodyConverter(fctx).block(done.body, scope)
        functions.append(dataclasses.replace(done.signature, body=body))
    return Program(cls.name, tuple(functions), ctx.source.span(cls))
