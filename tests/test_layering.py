"""The package's layering, as its imports show it.

Dependencies point one way: ``plugin -> chip_build -> lowering -> builtins`` (``plugin`` may
use ``lowering`` for the ``lower`` command, ``chip_build`` the templates of ``builtins``); the
host API ``mc2`` sits beside ``plugin``, over the engine. The build records sit between
``plugin`` and the engine, and the store under every part that keeps values: it imports none.
Backends lower through ``lowering.lower`` and never reach into the passes, and every program
diagnostic is the lowering's: ``chip_build`` raises none.

Inside ``lowering`` the parts form layers too (:data:`LOWERING_LAYERS`), and no module of the
package takes part in an import cycle.
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
    "chip_build": (
        "pypto_build.plugin",
        "pypto_build.build_records",
        "pypto_build.lowering.passes",
    ),
    # The records of the hook's last builds: over the engine, under the front ends.
    "build_records": ("pypto_build.plugin", "pypto_build.mc2", "pypto_build.lowering.passes"),
    # The store serves every part and knows none of them (pypto_build.files aside).
    "store": (
        "pypto_build.builtins",
        "pypto_build.lowering",
        "pypto_build.chip_build",
        "pypto_build.build_records",
        "pypto_build.plugin",
        "pypto_build.mc2",
        "pypto_build.sim",
        "pypto_build.lang",
    ),
    # The host API builds its program through the engine, as every front end does.
    "mc2": ("pypto_build.plugin", "pypto_build.lowering.passes"),
}


#: The parts of ``lowering`` (subpackages and top-level modules), lowest first: a part imports
#: only parts of lower layers. The runtime's facts depend on the IR alone, so the op definitions,
#: the contracts, the analyses and the legality checks all read them without a cycle; the op
#: table sits above the contracts, because a builtin op's definition comes from its contract.
LOWERING_LAYERS: tuple[frozenset[str], ...] = tuple(
    frozenset(layer.split())
    for layer in (
        "fast_init",
        "diagnostics",
        "ir",
        "runtime_facts limits launch_width pass_names aclnn",
        "ops",
        "builtin_ops",
        "contracts",
        "builtin_registry",
        "optable",
        "printer analysis",
        "frontend legality",
        "verifier passes",
        "lower",
    )
)


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


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


#: Every module of the package, by dotted name.
MODULES = {_module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _runtime_imports(name: str, tree: ast.Module) -> set[str]:
    """The modules of the package that importing ``name`` runs: every import it executes, at
    module level or inside a function, with the packages each imported module sits in (their
    ``__init__`` runs first), except its own. ``if TYPE_CHECKING:`` imports never run."""
    found: set[str] = set()

    def visit(nodes: list[ast.stmt]) -> None:
        for node in nodes:
            if isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module:
                found.add(node.module)
                found.update(f"{node.module}.{alias.name}" for alias in node.names)
            elif isinstance(node, ast.If) and _is_type_checking(node.test):
                visit(node.orelse)
            else:
                for child in ast.iter_child_nodes(node):
                    if isinstance(child, ast.stmt):
                        visit([child])
                    elif isinstance(child, ast.excepthandler):
                        visit(child.body)

    visit(tree.body)
    own = {".".join(name.split(".")[:count]) for count in range(1, name.count(".") + 2)}
    imported = set()
    for dotted in found:
        parts = dotted.split(".")
        imported.update(
            prefix
            for count in range(1, len(parts) + 1)
            if (prefix := ".".join(parts[:count])) in MODULES and prefix not in own
        )
    return imported


def _import_graph() -> dict[str, set[str]]:
    return {
        name: _runtime_imports(name, ast.parse(path.read_text())) for name, path in MODULES.items()
    }


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of ``graph`` with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def connect(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                connect(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            connect(node)
    return found


def test_no_module_takes_part_in_an_import_cycle() -> None:
    """Every import a module runs counts, the ones inside functions included (a function-local
    import that only breaks a cycle hides it). ``if TYPE_CHECKING:`` imports do not: they never
    run, so they order nothing at import time, and they are how two modules that call each other
    (an expression converter and the call converter it delegates to) name each other's types;
    the layers above still hold them, since those count every import."""
    assert _cycles(_import_graph()) == []


def _lowering_part(module: str) -> str | None:
    prefix = "pypto_build.lowering."
    return module[len(prefix) :].split(".")[0] if module.startswith(prefix) else None


def test_the_lowering_layers_name_every_part() -> None:
    parts = {part for name in MODULES if (part := _lowering_part(name)) is not None}
    assert parts == set().union(*LOWERING_LAYERS)


def test_lowering_imports_only_lower_layers() -> None:
    """Every import counts here, ``if TYPE_CHECKING:`` ones included."""
    layer_of = {part: level for level, layer in enumerate(LOWERING_LAYERS) for part in layer}
    found = []
    for module, tree in _modules("lowering"):
        part = module.split("/")[1].removesuffix(".py")
        for name in _imports(tree):
            target = _lowering_part(name)
            if target is not None and target != part and layer_of[target] >= layer_of[part]:
                found.append(f"{module} ({part}) imports {name} ({target})")
    assert found == []


def test_the_tree_layout_below_every_part_imports_none_of_them() -> None:
    """``pypto_build/tree_layout.py`` names a chip tree's paths for every part, the lowering's
    diagnostics and the ``builtins`` leaf included."""
    tree = ast.parse((PACKAGE / "tree_layout.py").read_text())
    assert [name for name in _imports(tree) if name.startswith("pypto_build")] == []
