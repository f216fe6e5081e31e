"""``with pld.comm_domain(devices=[...]):`` -> an explicit communication domain.

A HOST orchestrator may group statements into a communication domain over a fixed list of
devices; ``pld.comm_domain()`` without devices spans every rank of the world. The front end only
records the scope: MaterializeCommDomainScopes names it and collects the window buffers
allocated in it. The device list must be compile-time, because the HOST rail fans each
collective of the domain out into one dispatch per listed device.
"""

from __future__ import annotations

import ast

from pypto_build.lowering.frontend.context import ModuleContext
from pypto_build.lowering.frontend.source import keyword_name, text

COMM_DOMAIN = "pld.comm_domain"

_FORM = "with pld.comm_domain(devices=[0, 1]):"


def comm_domain_call(stmt: ast.With, ctx: ModuleContext) -> ast.Call | None:
    """The ``pld.comm_domain(...)`` call ``stmt`` opens, or None if it opens something else.

    Only the plain form is a domain: one context manager and no ``as`` target (the domain is
    not a value the body could use).
    """
    calls = [
        item
        for item in stmt.items
        if isinstance(item.context_expr, ast.Call)
        and ctx.dsl_path(item.context_expr.func) == COMM_DOMAIN
    ]
    if not calls:
        return None
    item = calls[0]
    assert isinstance(item.context_expr, ast.Call)
    if len(stmt.items) != 1:
        ctx.source.error(stmt, f"{COMM_DOMAIN}(...) must be the only context manager: {_FORM}")
    if item.optional_vars is not None:
        ctx.source.error(item.optional_vars, f"{COMM_DOMAIN}(...) takes no 'as' target: {_FORM}")
    return item.context_expr


def comm_domain_devices(call: ast.Call, ctx: ModuleContext) -> tuple[int, ...] | None:
    """The compile-time device list of ``call``; None (every rank) when it gives none."""
    if call.args:
        ctx.source.error(call.args[0], f"{COMM_DOMAIN}(...) takes only devices=[...]: {_FORM}")
    devices: ast.expr | None = None
    for keyword in call.keywords:
        if keyword.arg != "devices":
            ctx.source.error(
                keyword,
                f"unexpected keyword '{keyword_name(keyword)}' in {COMM_DOMAIN}(...); "
                f"it takes only devices=[...]",
            )
        devices = keyword.value
    if devices is None:
        return None
    if not isinstance(devices, ast.List | ast.Tuple):
        ctx.source.error(
            devices,
            f"devices= must be a list of compile-time device ids, e.g. devices=[0, 1], "
            f"not '{text(devices)}'",
        )
    if not devices.elts:
        ctx.source.error(devices, "devices= must not be empty; omit it for a domain of every rank")
    ids: list[int] = []
    for node in devices.elts:
        device = ctx.fold(node)
        if device < 0:
            ctx.source.error(node, f"device id must be non-negative, got {device}")
        if device in ids:
            ctx.source.error(node, f"device {device} is listed twice in devices=")
        ids.append(device)
    return tuple(ids)
