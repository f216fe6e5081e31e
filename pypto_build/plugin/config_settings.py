"""The ``config_settings`` of the build running in this process (``pip wheel -C chips=a3``).

PEP 517 hands them to the backend's ``build_wheel``; hatchling drops them before its build
hooks run. :mod:`pypto_build.backend` keeps them here for the length of its build, and the hook
applies them over ``[tool.pypto]`` and the environment
(:func:`~pypto_build.plugin.settings.apply_config_settings`). Under ``hatchling.build`` there are
none to see.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager

ConfigSettings = Mapping[str, "str | list[str]"]

_current: list[ConfigSettings] = []


@contextmanager
def given(config: ConfigSettings | None) -> Iterator[None]:
    """Make ``config`` the current build's config settings while the block runs."""
    _current.append(dict(config or {}))
    try:
        yield
    finally:
        _current.pop()


def current() -> ConfigSettings:
    """The current build's config settings; empty outside :func:`given`."""
    return _current[-1] if _current else {}
