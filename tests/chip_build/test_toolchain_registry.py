"""The toolchain registry is the one list of toolchains: the setting's choices, schema and
documentation, ``--toolchain``'s choices and ``doctor`` derive from it, and no front end names a
toolchain by its class or compares with its name."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

import pypto_build
from pypto_build.chip_build.toolchains.registry import (
    AUTO,
    TOOLCHAIN_NAMES,
    TOOLCHAINS,
    names_text,
    toolchain_kind,
)
from pypto_build.plugin.cli_build import SETTING_OPTIONS
from pypto_build.plugin.settings.model import FIELDS, choices
from pypto_build.plugin.settings.schema import settings_schema

PLUGIN = Path(pypto_build.__file__).resolve().parent / "plugin"


def test_the_setting_and_the_option_offer_the_registered_toolchains() -> None:
    assert (AUTO, *(entry.name for entry in TOOLCHAINS)) == TOOLCHAIN_NAMES
    assert choices("toolchain") == TOOLCHAIN_NAMES
    assert settings_schema()["properties"]["toolchain"]["enum"] == list(TOOLCHAIN_NAMES)
    doc = FIELDS["toolchain"].metadata["doc"]
    assert all(f"'{name}' (" in doc for name in TOOLCHAIN_NAMES)
    [option] = [option for option in SETTING_OPTIONS if option.name == "toolchain"]
    assert tuple(option.choices or ()) == TOOLCHAIN_NAMES
    assert option.help == names_text() == "auto, cann or sim"


@pytest.mark.parametrize("entry", TOOLCHAINS, ids=lambda entry: entry.name)
def test_each_entry_names_a_module_with_its_kind(entry: object) -> None:
    name = entry.name
    kind = toolchain_kind(name)
    assert kind is importlib.import_module(entry.module).KIND
    assert callable(kind.select) and callable(kind.doctor)


def _front_end_mentions(tree: ast.Module) -> list[str]:
    """Toolchain classes and toolchain-name comparisons in a front-end module."""
    classes = {"CannToolchain", "SimToolchain"}
    names = {entry.name for entry in TOOLCHAINS}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Name | ast.alias):
            spelled = node.id if isinstance(node, ast.Name) else node.name
            if spelled in classes:
                found.append(f"{node.lineno if isinstance(node, ast.Name) else ''}: {spelled}")
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            if any(isinstance(o, ast.Constant) and o.value in names for o in operands):
                found.append(f"{node.lineno}: compares with a toolchain name")
    return found


def test_no_front_end_names_a_toolchain() -> None:
    found = {
        path.name: mentions
        for path in sorted(PLUGIN.rglob("*.py"))
        if (mentions := _front_end_mentions(ast.parse(path.read_text(encoding="utf-8"))))
    }
    assert found == {}
