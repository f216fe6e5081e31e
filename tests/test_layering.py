"""The package's layering, as its imports show it.

Dependencies point one way: ``plugin -> chip_build -> lowering -> builtins`` (``plugin`` may
use ``lowering`` for the ``lower`` command, ``chip_build`` the templates of ``builtins``); the
host API ``mc2`` sits beside ``plugin``, over the engine.
Backends lower through ``lowering.lower`` and never reach into the passes, and every program
diagnostic is the lowering's: ``chip_build`` raises none.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

import pypto_build

PACKAGE = Path(pypto_build.__file__).resolve().parent

#: The subpackages each part must not import (upward, or around a seam).
FORBIDDEN: dict[str, tuple[str, ...]] = {
    "builtins": ("pypto_build.lowering", "pypto_build.chip_build", "pypto_build.plugin"),
    "lowering": ("pypto_build.chip_build", "pypto_build.plugin"),
    "chip_build": ("pypto_build.plugin", "pypto_build.lowering.passes"),
    # The host API builds its program through the engine, as every front end does.
    "mc2": ("pypto_build.plugin", "pypto_build.lowering.passes"),
}


def _modules(part: str) -> Iterator[tuple[str, ast.Module]]:
    for path in sorted((PACKAGE / part).rglob("*.py")):
        yield path.relative_to(PACKAGE).as_posix(), ast.parse(path.read_text())


def _imports(tree: ast.Module) -> Iterator[str]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            yield node.module


@pytest.mark.parametrize("part", sorted(FORBIDDEN))
def test_imports_never_point_upward(part: str) -> None:
    found = [
        f"{module} imports {name}"
        for module, tree in _modules(part)
        for name in _imports(tree)
        if name.startswith(FORBIDDEN[part])
    ]
    assert found == []


def test_the_file_reader_below_every_part_imports_none_of_them() -> None:
    """``pypto_build/files.py`` serves every part, the ``builtins`` leaf included; it raises
    from the error root, which imports nothing of the package either."""
    tree = ast.parse((PACKAGE / "files.py").read_text())
    imported = [name for name in _imports(tree) if name.startswith("pypto_build")]
    assert imported == ["pypto_build.errors"]


def test_chip_build_raises_no_program_diagnostic() -> None:
    found = [
        f"{module}:{node.lineno}"
        for module, tree in _modules("chip_build")
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "ProgramError"
    ]
    assert found == []
