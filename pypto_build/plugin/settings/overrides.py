"""What overrides the file: one ``PYPTO_<KEY>`` environment variable per key (hatchling hands
hooks no ``config_settings``), and a front end's ``-C key=value`` config settings."""

from __future__ import annotations

import dataclasses
import os
import sys
import typing
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pypto_build.plugin.settings.convert import convert, did_you_mean
from pypto_build.plugin.settings.model import (
    FIELDS,
    KEYS,
    TYPES,
    PyptoSettings,
    environment_variable,
    optional_inner,
    value_type,
)
from pypto_build.plugin.settings.values import SettingsError

#: The ``PYPTO_*`` variables pypto-build reads besides one per setting (a test keeps them equal
#: to the constants of the modules that read them).
OTHER_VARIABLES = (
    "PYPTO_CACHE_DIR",
    "PYPTO_SIM_TIMEOUT_S",
    "PYPTO_REMOTE_CACHE_USERNAME",
    "PYPTO_REMOTE_CACHE_PASSWORD",
    "PYPTO_REMOTE_CACHE_TOKEN",
)
#: The prefix of the variables pypto-build's own tests set to inject faults.
_TEST_VARIABLE_PREFIX = "PYPTO_BUILD_TEST_"


def _warn_to_stderr(message: str) -> None:
    print(f"pypto-build: warning: {message}", file=sys.stderr, flush=True)


def unknown_variables(environ: Mapping[str, str]) -> list[str]:
    """One line per ``PYPTO_*`` variable of ``environ`` that pypto-build does not read, with
    the variable it most likely misspells."""
    known = [environment_variable(name) for name in FIELDS] + list(OTHER_VARIABLES)
    lines = []
    for variable in sorted(environ):
        if (
            not variable.startswith("PYPTO_")
            or variable in known
            or variable.startswith(_TEST_VARIABLE_PREFIX)
        ):
            continue
        import difflib  # for a misspelt variable only

        close = difflib.get_close_matches(variable, known, n=1, cutoff=0.6)
        hint = f"; did you mean {close[0]}?" if close else ""
        lines.append(f"{variable}: unknown variable{hint} (docs/settings.md lists them)")
    return lines


def _unknown(
    lines: Sequence[str], strict: bool, errors: list[str], warn: Callable[[str], None] | None
) -> None:
    """Unknown overrides: errors under ``strict``, else one warning each."""
    if strict:
        errors += [f"{line} [strict]" for line in lines]
        return
    for line in lines:
        (warn or _warn_to_stderr)(f"{line}; ignored")


def apply_environment(
    settings: PyptoSettings,
    environ: Mapping[str, str] | None = None,
    *,
    warn: Callable[[str], None] | None = None,
) -> PyptoSettings:
    """``settings`` with the ``PYPTO_<KEY>`` variables of ``environ`` applied, one per key of
    the model. A list takes comma- or space-separated entries. A variable set empty turns an
    optional setting off (``PYPTO_COMPILER_LAUNCHER=`` builds without a launcher) and leaves
    any other unchanged. Every bad variable is reported in one :class:`SettingsError`; an
    unknown ``PYPTO_*`` variable is a warning through ``warn`` (stderr by default), an error
    under ``strict``."""
    environ = os.environ if environ is None else environ
    changes: dict[str, Any] = {}
    errors: list[str] = []
    for name in FIELDS:
        variable = environment_variable(name)
        if variable not in environ:
            continue
        text = environ[variable].strip()
        try:
            if text:
                changes[name] = convert(name, _from_text(name, text, variable), variable)
            elif _can_turn_off(name):
                changes[name] = None
        except SettingsError as err:
            errors += err.errors
    _unknown(unknown_variables(environ), changes.get("strict", settings.strict), errors, warn)
    if errors:
        raise SettingsError(errors)
    return dataclasses.replace(settings, **changes)


def apply_config_settings(
    settings: PyptoSettings,
    config: Mapping[str, str | list[str]],
    *,
    warn: Callable[[str], None] | None = None,
) -> PyptoSettings:
    """``settings`` with a front end's ``config_settings`` applied (``pip wheel -C chips=a3``,
    ``python -m build -C``, ``uv build -C``): one key per setting, spelt as in
    ``[tool.pypto]``, its value as the environment variable takes it; a key given twice is a
    list. Errors name the option (``-C chips[0]``); an unknown key is a warning with the key it
    most likely misspells (an error under ``strict``)."""
    changes: dict[str, Any] = {}
    errors: list[str] = []
    unknown: list[str] = []
    for key, value in config.items():
        name = KEYS.get(key)
        where = f"-C {key}"
        if name is None:
            unknown.append(f"{where}: unknown key{did_you_mean(key)}")
            continue
        text = " ".join(value) if isinstance(value, list) else str(value)
        try:
            changes[name] = convert(name, _from_text(name, text.strip(), where), where)
        except SettingsError as err:
            errors += err.errors
    _unknown(unknown, changes.get("strict", settings.strict), errors, warn)
    if errors:
        raise SettingsError(errors)
    return dataclasses.replace(settings, **changes)


def _can_turn_off(name: str) -> bool:
    """Whether an empty variable turns field ``name`` off: an optional setting whose None
    means none (no launcher), not a list, whose None means the computed default."""
    inner = optional_inner(TYPES[name])
    return inner is not None and typing.get_origin(inner) is not tuple


def _from_text(name: str, text: str, variable: str) -> object:
    """An environment variable's text as the value a TOML table would hold for ``name``."""
    annotation = value_type(name)
    if typing.get_origin(annotation) is tuple:
        return text.replace(",", " ").split()
    if annotation is int:
        try:
            return int(text)
        except ValueError:
            raise SettingsError(f"{variable}: '{text}' is not a whole number") from None
    if annotation is float:
        try:
            return float(text)
        except ValueError:
            raise SettingsError(f"{variable}: '{text}' is not a number") from None
    if annotation is bool:
        return _boolean(text, variable)
    return text


def _boolean(text: str, variable: str) -> bool:
    """``1``/``true``/``yes``/``on`` or ``0``/``false``/``no``/``off``, any case."""
    lowered = text.lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise SettingsError(f"{variable}: '{text}' is not a boolean; use 1 or 0 (true, false)")
