"""Resolve the program file's import aliases to canonical DSL paths.

A program may spell the DSL through any alias (``import pypto.language as pl``, ``from
pypto_build import lang as L``, ``import pypto.language`` then ``pypto.language.FP32``); the rest
of the front end only ever sees canonical paths that start with ``pl.`` (``pypto.language`` /
``pypto_build.lang``) or ``pld.`` (their ``distributed`` submodule), so one table of DSL names
serves every spelling.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping

#: Module prefixes of the DSL, most specific first, and the canonical root each maps to.
_DSL_ROOTS = (
    ("pypto.language.distributed", "pld"),
    ("pypto_build.lang.distributed", "pld"),
    ("pypto.language", "pl"),
    ("pypto_build.lang", "pl"),
)


def canonical_dsl_path(qualified: str) -> str | None:
    """``pypto.language.distributed.window`` -> ``pld.window``; None outside the DSL packages."""
    for prefix, root in _DSL_ROOTS:
        if qualified == prefix or qualified.startswith(prefix + "."):
            return root + qualified[len(prefix) :]
    return None


def dotted_parts(node: ast.expr) -> list[str] | None:
    """``a.b.c`` -> ``["a", "b", "c"]``; None when the chain does not start at a plain name."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return parts[::-1]


class ImportTable:
    """Module-level import bindings: local name -> fully qualified module or member path."""

    def __init__(self, bindings: Mapping[str, str]) -> None:
        self._bindings = dict(bindings)
        #: The canonical DSL path of each dotted chain asked of (:meth:`dsl_path_of`): a file
        #: spells the same few DSL names at every call and annotation.
        self._dsl_paths: dict[tuple[str, ...], str | None] = {}

    @classmethod
    def from_module(cls, module: ast.Module) -> ImportTable:
        bindings: dict[str, str] = {}
        for stmt in module.body:
            if isinstance(stmt, ast.Import):
                for alias in stmt.names:
                    if alias.asname is not None:
                        bindings[alias.asname] = alias.name
                    else:
                        # ``import a.b`` binds ``a``; ``a.b.x`` then resolves through it.
                        root = alias.name.split(".")[0]
                        bindings[root] = root
            elif isinstance(stmt, ast.ImportFrom) and stmt.level == 0 and stmt.module:
                for alias in stmt.names:
                    if alias.name != "*":
                        bindings[alias.asname or alias.name] = f"{stmt.module}.{alias.name}"
        return cls(bindings)

    def is_bound(self, name: str) -> bool:
        return name in self._bindings

    def qualified(self, node: ast.expr) -> str | None:
        """The fully qualified path of a dotted chain rooted at an imported name, else None."""
        parts = dotted_parts(node)
        if parts is None or parts[0] not in self._bindings:
            return None
        return ".".join([self._bindings[parts[0]], *parts[1:]])

    def dsl_path(self, node: ast.expr) -> str | None:
        """The canonical ``pl.``/``pld.`` path of ``node``, or None if it is not a DSL name."""
        parts = dotted_parts(node)
        return None if parts is None else self.dsl_path_of(parts)

    def dsl_path_of(self, parts: list[str]) -> str | None:
        """:meth:`dsl_path` of the chain :func:`dotted_parts` split into ``parts``."""
        key = tuple(parts)
        if key in self._dsl_paths:
            return self._dsl_paths[key]
        root = self._bindings.get(parts[0])
        found = None if root is None else canonical_dsl_path(".".join([root, *parts[1:]]))
        self._dsl_paths[key] = found
        return found
