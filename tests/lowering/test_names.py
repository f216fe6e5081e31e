"""The IR's op names and attr keys are spelled in one module only.

``pypto_build/lowering/ir/names.py`` declares them (``Op``, ``CallAttr``, ``FunctionAttr``) and a
builtin package's manifest names its own ops; every other module refers to those. A string
literal equal to one of them anywhere else is a second spelling of the contract that could
drift, so this scan refuses it. A few modules use the same word for something else (a JSON key of
a file format, a DSL stand-in's own name); they are listed with the reason.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pypto_build
from pypto_build import tree_layout
from pypto_build.lowering.builtin_registry import builtin_ops
from pypto_build.lowering.ir.names import CallAttr, FunctionAttr, Op

PACKAGE = Path(pypto_build.__file__).resolve().parent

#: The owning module.
OWNER = "lowering/ir/names.py"

#: Modules that spell one of the words for another purpose, by word.
OTHER_MEANINGS: dict[str, dict[str, str]] = {
    "dtype": {
        "builtins/manifest.py": "the manifest's operand key",
        "chip_build/distributed_meta.py": "a key of distributed_meta.json",
        "chip_build/kernel_config_writer.py": "a key of an orchestration's params it writes",
        "chip_build/kernel_config_reader.py": "a key of an orchestration's params it reads",
        "plugin/cli_run.py": "a key of run's --json document",
        "lowering/ops/tensor_ops.py": "an operand of the ops it defines",
        "lowering/ops/distributed_ops.py": "an operand of the ops it defines",
    },
    "task_id": {"lowering/ir/types.py": "the element type of a task id"},
}

#: The DSL's typed stand-ins name the DSL spellings users write (which equal some IR names).
DSL_STAND_INS = "lang/"


def _contract() -> set[str]:
    words = {member.value for enum in (Op, CallAttr, FunctionAttr) for member in enum}
    for builtin in builtin_ops():
        words |= {builtin.op, builtin.builtin_op}
    return words


def _docstrings(tree: ast.AST) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        first = body[0] if isinstance(body, list) and body else None
        if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
            found.add(id(first.value))
    return found


def test_op_names_and_attr_keys_are_spelled_only_by_their_owner() -> None:
    words = _contract()
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = path.relative_to(PACKAGE).as_posix()
        if module == OWNER or module.startswith(DSL_STAND_INS):
            continue
        tree = ast.parse(path.read_text())
        docstrings = _docstrings(tree)
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and node.value in words
                and id(node) not in docstrings
                and module not in OTHER_MEANINGS.get(node.value, {})
            ):
                found.append(f"{module}:{node.lineno}: {node.value!r}")
    assert found == []


def test_the_exceptions_are_still_needed() -> None:
    """An exception that no longer matches anything is removed, so the list stays honest."""
    for word, modules in OTHER_MEANINGS.items():
        for module in modules:
            source = (PACKAGE / module).read_text()
            assert f'"{word}"' in source, f"{module} no longer spells {word!r}"


# --- the chip tree's layout ----------------------------------------------------------------------

#: The layout's owning module.
LAYOUT_OWNER = "tree_layout.py"

#: The layout's file and folder names that say nothing else: spelled in any path-like string.
LAYOUT_FILES = (
    tree_layout.NEXT_LEVELS,
    tree_layout.KERNEL_CONFIG,
    tree_layout.HOST_MODULE_NAME,
    tree_layout.DISTRIBUTED_META,
    tree_layout.MANIFEST,
    tree_layout.BINARY_CONTEXT,
    tree_layout.LOG_DIR,
)
#: Folder names that are also plain words (an upstream key, a core folder of another tree):
#: refused as a component of a path string (one holding a ``/``).
LAYOUT_FOLDERS = (
    tree_layout.ORCHESTRATION,
    tree_layout.KERNELS,
    tree_layout.INCLUDE,
    tree_layout.SIM_BINARIES,
)

#: Modules that spell a layout name for something else, by name.
LAYOUT_OTHER_MEANINGS: dict[str, dict[str, str]] = {
    tree_layout.MANIFEST: {
        "chip_build/compile_cache/layout.py": "a compile-cache entry's own manifest",
    },
}


def _layout_spellings(value: str) -> list[str]:
    """The layout names ``value`` spells as a path (prose, holding a blank, says none)."""
    if any(blank in value for blank in " \t\n"):
        return []
    padded = f"/{value}/"
    found = [name for name in LAYOUT_FILES if f"/{name}/" in padded]
    if "/" in value:
        found += [name for name in LAYOUT_FOLDERS if f"/{name}/" in padded]
    return found


def test_the_tree_layout_is_spelled_only_by_its_owner() -> None:
    """Every path of a chip tree comes from ``pypto_build/tree_layout.py``: the writer, the
    simulator, the compile engine and the host API cannot drift apart on one."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = path.relative_to(PACKAGE).as_posix()
        if module == LAYOUT_OWNER:
            continue
        tree = ast.parse(path.read_text())
        docstrings = _docstrings(tree)
        for node in ast.walk(tree):
            if not isinstance(node, ast.Constant) or not isinstance(node.value, str):
                continue
            if id(node) in docstrings:
                continue
            for name in _layout_spellings(node.value):
                if module not in LAYOUT_OTHER_MEANINGS.get(name, {}):
                    found.append(f"{module}:{node.lineno}: {node.value!r}")
    assert found == []


def test_the_layout_exceptions_are_still_needed() -> None:
    for word, modules in LAYOUT_OTHER_MEANINGS.items():
        for module in modules:
            assert f'"{word}"' in (PACKAGE / module).read_text(), f"{module}: {word!r}"
