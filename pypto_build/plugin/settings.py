"""The ``[tool.pypto]`` settings: one typed model, validated, with environment overrides and a
JSON schema generated from it.

The model is a frozen dataclass whose fields carry their documentation and constraints in
``metadata``; validation, the schema (``settings.schema.json``, shipped for editors and
checked against the model by a test) and error messages all derive from it, so they cannot
drift apart. Every error names the key path and what is allowed
(``tool.pypto.chips[1]: unknown chip 'a9'; valid chips: a2, a3, a5``).

Environment variables override the file (hatchling hands hooks no ``config_settings``), one
``PYPTO_<KEY>`` per key, derived from the model as the schema is (``PYPTO_CHIPS`` with comma-
or space-separated chips, ``PYPTO_RUNTIME_ROOT``, an empty ``PYPTO_COMPILER_LAUNCHER`` for no
launcher, ``PYPTO_REMOTE_CACHE_READ_ONLY=1``), with errors naming the variable.

No key carries a credential: ``pyproject.toml`` is committed and shipped, so a key named like
one is an error pointing at the environment variables and netrc the remote cache reads.

Regenerate the schema file with ``python -m pypto_build.plugin.settings``.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import sys
import tomllib
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from pypto_build.chip_build.chips import CHIPS
from pypto_build.chip_build.remote_cache import (
    PASSWORD_VARIABLE,
    TOKEN_VARIABLE,
    USERNAME_VARIABLE,
    url_problem,
)
from pypto_build.chip_build.toolchains.revisions import is_commit

TABLE = "tool.pypto"
SCHEMA_PATH = Path(__file__).with_name("settings.schema.json")
_CHIP_NAMES = tuple(chip.name for chip in CHIPS)

ToolchainSetting = Literal["auto", "cann", "sim"]


class SettingsError(ValueError):
    """A setting that is missing, of the wrong type or not allowed; names its key path."""


def _relative_path(value: str, where: str) -> None:
    path = PurePosixPath(value)
    if not value or path.is_absolute() or ".." in path.parts or "\\" in value:
        raise SettingsError(
            f"{where}: '{value}' must be a relative path inside the project (forward slashes)"
        )


def _chip(value: str, where: str) -> None:
    if value not in _CHIP_NAMES:
        raise SettingsError(
            f"{where}: unknown chip '{value}'; valid chips: {', '.join(_CHIP_NAMES)}"
        )


def _commit(value: str, where: str) -> None:
    if not is_commit(value):
        raise SettingsError(
            f"{where}: '{value}' is not a commit id; 40 lowercase hex digits are needed (what "
            "git rev-parse HEAD prints)"
        )


#: The JSON schema's spelling of :func:`_commit`.
_COMMIT_SCHEMA = {"pattern": "^[0-9a-f]{40}$"}


def _positive(value: int, where: str) -> None:
    if value < 1:
        raise SettingsError(f"{where}: {value} is not allowed; at least 1 is needed")


def _seconds(value: float, where: str) -> None:
    if not value > 0:
        raise SettingsError(f"{where}: {value} is not allowed; a time above 0 seconds is needed")


def _url(value: str, where: str) -> None:
    problem = url_problem(value)
    if problem is not None:
        raise SettingsError(f"{where}: {problem}")


#: Words that mark a key as a credential, which no settings key may carry.
_CREDENTIAL_WORDS = frozenset(
    [
        "auth",
        "credential",
        "credentials",
        "login",
        "netrc",
        "password",
        "secret",
        "token",
        "user",
        "username",
    ]
)


def _meta(
    doc: str,
    *,
    check: Callable[[Any, str], None] | None = None,
    unique: bool = False,
    non_empty: bool = False,
    schema: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A model field's metadata: ``doc`` feeds the schema's description, ``check`` validates
    one value (each item, for a list), ``unique``/``non_empty`` constrain a list, ``schema``
    adds JSON schema keywords the type alone does not express."""
    return {
        "doc": doc,
        "check": check,
        "unique": unique,
        "non_empty": non_empty,
        "schema": dict(schema or {}),
    }


@dataclass(frozen=True)
class PyptoSettings:
    """The validated content of ``[tool.pypto]``."""

    programs: tuple[str, ...] = field(
        default=(),
        metadata=_meta(
            "Python files holding the @pl.program classes to build, relative to the project root.",
            check=_relative_path,
            unique=True,
        ),
    )
    chips: tuple[str, ...] = field(
        default=_CHIP_NAMES,
        metadata=_meta(
            "Chips to build a sub-build for; each gets <package>/<chip>/ in the wheel.",
            check=_chip,
            unique=True,
            non_empty=True,
            schema={"items": {"enum": list(_CHIP_NAMES)}},
        ),
    )
    toolchain: ToolchainSetting = field(
        default="auto",
        metadata=_meta(
            "How kernels are compiled: 'cann' (the CANN device compiler; an error without a "
            "toolkit), 'sim' (the host compiler, for the simulation runtime) or 'auto' (cann "
            "when a toolkit is found, else sim).",
        ),
    )
    package: str | None = field(
        default=None,
        metadata=_meta(
            "Where the sub-builds land inside the wheel (a package path such as 'moe/_kernels').",
            check=_relative_path,
        ),
    )
    compiler_launcher: str | None = field(
        default=None,
        metadata=_meta(
            "A command put in front of every compile, as CMake's <LANG>_COMPILER_LAUNCHER "
            "(e.g. 'ccache' or 'sccache').",
        ),
    )
    jobs: int | None = field(
        default=None,
        metadata=_meta(
            "Compiler processes run at once; default: the CPU count, capped at one per GiB of "
            "available memory.",
            check=_positive,
        ),
    )
    runtime_root: str | None = field(
        default=None,
        metadata=_meta(
            "PyPTO's runtime that CANN binaries are built for: a simpler checkout, or an "
            "installed simpler's simpler_setup/_assets folder. Per chip platform (a2a3, a5), "
            "orchestrations link its sources and include its headers, and kernels include its "
            "headers, as its own compile path does; required by toolchain 'cann'. Relative to "
            "the project root unless absolute.",
        ),
    )
    runtime_revision: str | None = field(
        default=None,
        metadata=_meta(
            "The runtime's commit (40 hex digits) recorded in each sub-build's "
            "cache/binary_context.json, which PyPTO's runtime checks before reusing the "
            "binaries; default: the clean git HEAD of runtime_root (set it for an installed "
            "simpler: its _task_interface.__build_commit__).",
            check=_commit,
            schema=_COMMIT_SCHEMA,
        ),
    )
    pto_isa_root: str | None = field(
        default=None,
        metadata=_meta(
            "PTO-ISA checkout whose headers CANN kernel compiles include; default: $PTO_ISA_ROOT, "
            "else the runtime's managed clone <runtime_root>/build/pto-isa. Relative to the "
            "project root unless absolute.",
        ),
    )
    pto_isa_revision: str | None = field(
        default=None,
        metadata=_meta(
            "PTO-ISA's commit (40 hex digits) recorded in cache/binary_context.json; default: "
            "the clean git HEAD of the PTO-ISA root.",
            check=_commit,
            schema=_COMMIT_SCHEMA,
        ),
    )
    remote_cache_url: str | None = field(
        default=None,
        metadata=_meta(
            "Base URL of a remote compile cache speaking the HTTP remote-cache protocol "
            "(bazel-remote, nginx WebDAV, Bazel's --remote_cache): <url>/ac/<key> and "
            "<url>/cas/<sha256>. Asked after a local miss; compiles are uploaded to it. "
            "Credentials come from the environment or ~/.netrc, never from this file.",
            check=_url,
        ),
    )
    remote_cache_read_only: bool = field(
        default=False,
        metadata=_meta("Only read from remote_cache_url, never upload to it."),
    )
    remote_cache_fallback_url: str | None = field(
        default=None,
        metadata=_meta(
            "A second remote cache, read only, asked after remote_cache_url misses (e.g. the "
            "main branch's cache for a build of another branch).",
            check=_url,
        ),
    )
    remote_cache_timeout: float = field(
        default=10.0,
        metadata=_meta(
            "Seconds one exchange with a remote cache may take; a remote that exceeds it, is "
            "unreachable or answers errors is dropped for the rest of the build with one "
            "warning.",
            check=_seconds,
        ),
    )


#: Keys a [tool.pypto] table must have.
REQUIRED = ("programs",)
_FIELDS = {f.name: f for f in dataclasses.fields(PyptoSettings)}
_TYPES = typing.get_type_hints(PyptoSettings)


def _optional_inner(annotation: Any) -> Any:
    """``X`` for ``X | None``, else None."""
    if isinstance(annotation, types.UnionType):
        args = [arg for arg in typing.get_args(annotation) if arg is not type(None)]
        if len(args) == 1:
            return args[0]
    return None


def _type_name(annotation: Any) -> str:
    if typing.get_origin(annotation) is Literal:
        return "one of " + ", ".join(repr(choice) for choice in typing.get_args(annotation))
    if typing.get_origin(annotation) is tuple:
        return "a list of strings"
    return {str: "a string", int: "an integer", bool: "true or false", float: "a number"}[
        annotation
    ]


def _convert(name: str, value: object, where: str) -> Any:
    """``value`` as field ``name``'s type, checked; ``where`` is its key path for errors."""
    spec = _FIELDS[name]
    annotation = _TYPES[name]
    annotation = _optional_inner(annotation) or annotation
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
    if typing.get_origin(annotation) is Literal:
        choices = typing.get_args(annotation)
        if value not in choices:
            raise SettingsError(f"{where}: expected {_type_name(annotation)}, got {value!r}")
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


def settings_from_table(table: Mapping[str, object], *, where: str = TABLE) -> PyptoSettings:
    """Validate a ``[tool.pypto]`` table (as ``tomllib`` returns it)."""
    unknown = sorted(set(table) - set(_FIELDS))
    credentials = [key for key in unknown if _CREDENTIAL_WORDS & set(re.split(r"[_-]", key))]
    if credentials:
        raise SettingsError(
            f"{where}.{credentials[0]}: credentials are never read from pyproject.toml; set "
            f"{USERNAME_VARIABLE} and {PASSWORD_VARIABLE}, or {TOKEN_VARIABLE}, in the "
            "environment, or put the remote cache's host in ~/.netrc"
        )
    if unknown:
        valid = ", ".join(_FIELDS)
        raise SettingsError(f"{where}: unknown key '{unknown[0]}'; valid keys: {valid}")
    missing = [key for key in REQUIRED if key not in table]
    if missing:
        raise SettingsError(f"{where}: missing required key '{missing[0]}'")
    values = {name: _convert(name, value, f"{where}.{name}") for name, value in table.items()}
    return PyptoSettings(**values)


def environment_variable(name: str) -> str:
    """The environment variable that overrides setting ``name``: ``PYPTO_<NAME>``."""
    return f"PYPTO_{name.upper()}"


def apply_environment(
    settings: PyptoSettings, environ: Mapping[str, str] | None = None
) -> PyptoSettings:
    """``settings`` with the ``PYPTO_<KEY>`` variables of ``environ`` applied, one per key of
    the model. A list takes comma- or space-separated entries. A variable set empty turns an
    optional setting off (``PYPTO_COMPILER_LAUNCHER=`` builds without a launcher) and leaves
    any other unchanged."""
    environ = os.environ if environ is None else environ
    changes: dict[str, Any] = {}
    for name in _FIELDS:
        variable = environment_variable(name)
        if variable not in environ:
            continue
        text = environ[variable].strip()
        if text:
            changes[name] = _convert(name, _from_text(name, text, variable), variable)
        elif _optional_inner(_TYPES[name]) is not None:
            changes[name] = None
    return dataclasses.replace(settings, **changes)


def _from_text(name: str, text: str, variable: str) -> object:
    """An environment variable's text as the value a TOML table would hold for ``name``."""
    annotation = _optional_inner(_TYPES[name]) or _TYPES[name]
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


def load_settings(project: Path, environ: Mapping[str, str] | None = None) -> PyptoSettings:
    """The settings of the project whose ``pyproject.toml`` is in ``project``, with the
    environment overrides applied."""
    pyproject = project / "pyproject.toml"
    try:
        with pyproject.open("rb") as stream:
            document = tomllib.load(stream)
    except tomllib.TOMLDecodeError as exc:
        raise SettingsError(f"{pyproject}: {exc}") from None
    table = document.get("tool", {}).get("pypto")
    if not isinstance(table, dict):
        raise SettingsError(f"{pyproject}: no [{TABLE}] table")
    return apply_environment(settings_from_table(table), environ)


def override(settings: PyptoSettings, option: str, name: str, value: object) -> PyptoSettings:
    """``settings`` with field ``name`` set from a command-line ``option`` (validated, errors
    naming the option)."""
    return dataclasses.replace(settings, **{name: _convert(name, value, option)})


# --- JSON schema -------------------------------------------------------------------------------


def _schema_of(name: str) -> dict[str, Any]:
    spec = _FIELDS[name]
    annotation = _optional_inner(_TYPES[name]) or _TYPES[name]
    schema: dict[str, Any] = {"description": spec.metadata["doc"]}
    if typing.get_origin(annotation) is tuple:
        schema.update(type="array", items={"type": "string"})
        if spec.metadata["unique"]:
            schema["uniqueItems"] = True
        if spec.metadata["non_empty"]:
            schema["minItems"] = 1
    elif typing.get_origin(annotation) is Literal:
        schema.update(type="string", enum=list(typing.get_args(annotation)))
    elif annotation is int:
        schema.update(type="integer", minimum=1)
    elif annotation is bool:
        schema["type"] = "boolean"
    elif annotation is float:
        schema.update(type="number", exclusiveMinimum=0)
    else:
        schema["type"] = "string"
    for key, value in spec.metadata["schema"].items():
        schema[key] = {**schema[key], **value} if isinstance(value, dict) else value
    if spec.default is not None:
        default = spec.default
        schema["default"] = list(default) if isinstance(default, tuple) else default
    return schema


def settings_schema() -> dict[str, Any]:
    """The JSON schema of a ``[tool.pypto]`` table, generated from :class:`PyptoSettings`."""
    return {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "title": f"[{TABLE}]",
        "description": "Settings of pypto-build, the PyPTO kernel build plugin.",
        "type": "object",
        "additionalProperties": False,
        "required": list(REQUIRED),
        "properties": {name: _schema_of(name) for name in _FIELDS},
    }


def schema_text() -> str:
    """The schema file's exact content."""
    return json.dumps(settings_schema(), indent=2) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    """Write the schema file (``--check``: only report whether it is current)."""
    args = sys.argv[1:] if argv is None else list(argv)
    current = SCHEMA_PATH.read_text(encoding="utf-8") if SCHEMA_PATH.exists() else ""
    if args == ["--check"]:
        return 0 if current == schema_text() else 1
    SCHEMA_PATH.write_text(schema_text(), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
