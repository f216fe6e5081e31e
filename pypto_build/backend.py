"""pypto-build's PEP 517 build backend: hatchling with the ``pypto`` build hook always on.

A model package that names ``build-backend = "pypto_build.backend"`` needs no
``[tool.hatch.build.targets.wheel.hooks.pypto]`` table: with ``hatchling.build`` a package that
leaves that table out gets a wheel without kernels, and hatchling never calls pypto-build to
say so. Everything else is hatchling's: the same configuration (``[tool.hatch.build...]``), the
same sdists and metadata, and wheels byte-identical to those of ``hatchling.build`` with the
table (docs/packaging.md). Unlike hatchling it passes the front end's ``config_settings``
(``-C``) on to the hook (:mod:`pypto_build.plugin.config_settings`).

The hook stays off when hatchling's own switch turns every hook off
(``HATCH_BUILD_NO_HOOKS``), and a ``pypto`` table of the project's own is used as written
(``enable-by-default = false`` included).
"""

from __future__ import annotations

import os
from functools import cached_property
from typing import Any

from hatchling import build as _hatchling
from hatchling.builders.wheel import WheelBuilder, WheelBuilderConfig

from pypto_build.plugin.config_settings import ConfigSettings, given
from pypto_build.plugin.hatch import PLUGIN_NAME

__all__ = [
    "build_editable",
    "build_sdist",
    "build_wheel",
    "get_requires_for_build_editable",
    "get_requires_for_build_sdist",
    "get_requires_for_build_wheel",
]

#: hatchling's switch that turns every build hook off.
_NO_HOOKS = "HATCH_BUILD_NO_HOOKS"

get_requires_for_build_sdist = _hatchling.get_requires_for_build_sdist
build_sdist = _hatchling.build_sdist
get_requires_for_build_wheel = _hatchling.get_requires_for_build_wheel
get_requires_for_build_editable = _hatchling.get_requires_for_build_editable
# hatchling offers the metadata hooks only outside pip (see hatchling.build); so does this one.
if hasattr(_hatchling, "prepare_metadata_for_build_wheel"):
    prepare_metadata_for_build_wheel = _hatchling.prepare_metadata_for_build_wheel
    prepare_metadata_for_build_editable = _hatchling.prepare_metadata_for_build_editable
    __all__ += ["prepare_metadata_for_build_editable", "prepare_metadata_for_build_wheel"]


def _hooks_off() -> bool:
    return os.environ.get(_NO_HOOKS, "").lower() in ("1", "true")


class HookedWheelConfig(WheelBuilderConfig):
    """hatchling's wheel configuration with the ``pypto`` hook added to the hooks the
    project configures, unless it configures that hook itself."""

    @cached_property
    def _configured_hooks(self) -> set[str]:
        hooks: set[str] = set()
        for table in (self.build_config, self.target_config):
            found = table.get("hooks", {})
            if isinstance(found, dict):
                hooks.update(found)
        return hooks

    @property
    def hook_config(self) -> dict[str, Any]:
        configured: dict[str, Any] = super().hook_config
        if PLUGIN_NAME in self._configured_hooks or _hooks_off():
            return configured
        return {**configured, PLUGIN_NAME: {}}


class HookedWheelBuilder(WheelBuilder):
    """hatchling's wheel builder with :class:`HookedWheelConfig`."""

    @classmethod
    def get_config_class(cls) -> type[WheelBuilderConfig]:
        return HookedWheelConfig


def _build(wheel_directory: str, version: str, config: ConfigSettings | None) -> str:
    builder = HookedWheelBuilder(os.getcwd())
    with given(config):
        built = next(builder.build(directory=wheel_directory, versions=[version]))
    return os.path.basename(built)


def build_wheel(
    wheel_directory: str,
    config_settings: dict[str, Any] | None = None,
    metadata_directory: str | None = None,
) -> str:
    """PEP 517's ``build_wheel``: hatchling's, with the kernels built in; ``config_settings``
    override ``[tool.pypto]`` (``-C chips=a3``)."""
    return _build(wheel_directory, "standard", config_settings)


def build_editable(
    wheel_directory: str,
    config_settings: dict[str, Any] | None = None,
    metadata_directory: str | None = None,
) -> str:
    """PEP 660's ``build_editable``: hatchling's, with the kernels built in place."""
    return _build(wheel_directory, "editable", config_settings)
