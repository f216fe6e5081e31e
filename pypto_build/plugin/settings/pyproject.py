"""Reading a project's ``pyproject.toml`` and its ``[tool.pypto]`` table into settings."""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pypto_build.files import read_regular
from pypto_build.plugin.settings.convert import settings_from_table
from pypto_build.plugin.settings.model import TABLE, PyptoSettings
from pypto_build.plugin.settings.overrides import apply_environment
from pypto_build.plugin.settings.values import SettingsError


def load_settings(project: Path, environ: Mapping[str, str] | None = None) -> PyptoSettings:
    """The settings of the project whose ``pyproject.toml`` is in ``project``, with the
    environment overrides applied."""
    pyproject = project / "pyproject.toml"
    table = pypto_table(read_pyproject(pyproject), pyproject)
    if table is None:
        raise SettingsError(f"{pyproject}: no [{TABLE}] table")
    return apply_environment(settings_from_table(table), environ)


def read_pyproject(path: Path) -> dict[str, Any]:
    """The TOML document at ``path``; a file that cannot be read, is not UTF-8 or not TOML is
    a :class:`SettingsError` naming it and the reason."""
    try:
        data = read_regular(path)
    except OSError as exc:
        raise SettingsError(f"{path}: cannot read it: {exc.strerror or exc}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SettingsError(
            f"{path}: not UTF-8 text (byte {exc.start}); TOML files are UTF-8"
        ) from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SettingsError(f"{path}: {exc}") from None


def pypto_table(document: Mapping[str, Any], where: Path | str) -> dict[str, Any] | None:
    """The ``[tool.pypto]`` table of a pyproject document, None when there is none; a ``tool``
    or ``tool.pypto`` that is not a table is a :class:`SettingsError` naming the key."""
    tool = document.get("tool", {})
    if not isinstance(tool, dict):
        raise SettingsError(f"{where}: tool: expected a table, got {tool!r}")
    table = tool.get("pypto")
    if table is not None and not isinstance(table, dict):
        raise SettingsError(f"{where}: {TABLE}: expected a table, got {table!r}")
    return table
