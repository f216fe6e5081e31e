"""Turning a ``[tool.pypto]`` table, or one value of it, into validated settings: every error
names its key path and what is allowed, and every error of a table is reported at once."""

from __future__ import annotations

import dataclasses
import re
import typing
from collections.abc import Callable, Mapping
from typing import Any

from pypto_build.plugin.settings.model import (
    FIELDS,
    KEYS,
    REQUIRED,
    TABLE,
    TYPES,
    PyptoSettings,
    choices,
    optional_inner,
    value_type,
)
from pypto_build.plugin.settings.values import SettingsError

#: Words that mark a key as a credential, which no settings key may carry.
_CREDENTIAL_WORDS = frozenset(
    {"auth", "credential", "credentials", "login", "netrc", "password", "secret", "token"}
    | {"user", "username"}
)


def _credential_problem(key: str, where: str) -> str | None:
    """The error for an unknown key that names a credential, or None."""
    if not _CREDENTIAL_WORDS & set(re.split(r"[_-]", key.lower())):
        return None
    from pypto_build.store.http_credentials import (
        PASSWORD_VARIABLE,
        TOKEN_VARIABLE,
        USERNAME_VARIABLE,
    )

    return (
        f"{where}.{key}: credentials are never read from pyproject.toml; set "
        f"{USERNAME_VARIABLE} and {PASSWORD_VARIABLE}, or {TOKEN_VARIABLE}, in the environment, "
        "or put the remote cache's host in ~/.netrc"
    )


def _type_name(annotation: Any) -> str:
    if typing.get_origin(annotation) is tuple:
        return "a list of strings"
    return {str: "a string", int: "an integer", bool: "true or false", float: "a number"}[
        annotation
    ]


def convert(name: str, value: object, where: str) -> Any:
    """``value`` as field ``name``'s type, checked; ``where`` is its key path for errors."""
    spec = FIELDS[name]
    annotation = value_type(name)
    check: Callable[[Any, str], None] | None = spec.metadata["check"]
    if typing.get_origin(annotation) is tuple:
        if not isinstance(value, list):
            raise SettingsError(f"{where}: expected {_type_name(annotation)}, got {value!r}")
        if spec.metadata["non_empty"] and not value:
            raise SettingsError(f"{where}: at least one entry is needed")
        items: list[str] = []
        for index, item in enumerate(value):
            item_where = f"{where}[{index}]"
            if not isinstance(item, str):
                raise SettingsError(f"{item_where}: expected a string, got {item!r}")
            if check is not None:
                check(item, item_where)
            if spec.metadata["unique"] and item in items:
                raise SettingsError(f"{item_where}: '{item}' is listed twice")
            items.append(item)
        return tuple(items)
    allowed = choices(name)
    if allowed:
        if value not in allowed:
            expected = ", ".join(repr(choice) for choice in allowed)
            raise SettingsError(f"{where}: expected one of {expected}, got {value!r}")
        return value
    if annotation is int or annotation is bool:
        if type(value) is not annotation:
            raise SettingsError(f"{where}: expected {_type_name(annotation)}, got {value!r}")
    elif annotation is float:
        if not isinstance(value, int | float) or isinstance(value, bool):
            raise SettingsError(f"{where}: expected a number, got {value!r}")
        value = float(value)
    elif not isinstance(value, annotation):
        raise SettingsError(f"{where}: expected {_type_name(annotation)}, got {value!r}")
    if check is not None:
        check(value, where)
    return value


def did_you_mean(key: str) -> str:
    """The hint for an unknown key: the key it is most likely a misspelling of."""
    spelled = key.strip().lower().replace("_", "-")
    if spelled in KEYS:
        return f"; did you mean '{spelled}'? (keys are spelled in kebab-case)"
    import difflib  # for a misspelt key only

    close = difflib.get_close_matches(spelled, list(KEYS), n=1, cutoff=0.6)
    if close:
        return f"; did you mean '{close[0]}'?"
    return f"; valid keys: {', '.join(KEYS)}"


def settings_from_table(table: Mapping[str, object], *, where: str = TABLE) -> PyptoSettings:
    """Validate a ``[tool.pypto]`` table (as ``tomllib`` returns it); every error of the table
    is reported in one :class:`SettingsError`."""
    errors: list[str] = []
    values: dict[str, Any] = {}
    for key, value in table.items():
        name = KEYS.get(key)
        if name is None:
            credential = _credential_problem(key, where)
            errors.append(credential or f"{where}: unknown key '{key}'{did_you_mean(key)}")
            continue
        try:
            values[name] = convert(name, value, f"{where}.{key}")
        except SettingsError as err:
            errors += err.errors
    errors += [f"{where}: missing required key '{key}'" for key in REQUIRED if key not in table]
    if errors:
        raise SettingsError(errors)
    return PyptoSettings(**values)


def override(settings: PyptoSettings, option: str, name: str, value: object) -> PyptoSettings:
    """``settings`` with field ``name`` set from a command-line ``option`` (validated, errors
    naming the option); None turns an optional setting off (``--compiler-launcher ''``)."""
    turned_off = value is None and optional_inner(TYPES[name]) is not None
    converted: Any = None if turned_off else convert(name, value, option)
    return dataclasses.replace(settings, **{name: converted})
