"""The ``[tool.pypto]`` settings: one typed model, validated, with environment overrides, a JSON
schema and a reference page generated from it.

The model is a frozen dataclass whose fields carry their documentation and constraints in
``metadata``; validation, the schema (``settings.schema.json``, shipped for editors and
registered with validate-pyproject), the settings reference (``docs/settings.md``), the
environment variables and the error messages all derive from it, so they cannot drift apart.
A test runs one corpus of good and bad tables through both the schema and
:func:`settings_from_table` and requires them to agree.

* **Spelling.** Keys are the field names in kebab-case (``compiler-launcher`` for the field
  ``compiler_launcher``), as hatch and scikit-build-core spell theirs; a field added to the model
  gets its key, schema entry, variable and reference row without further code. Any other
  spelling is refused with a did-you-mean.
* **Errors** name the key path and what is allowed
  (``tool.pypto.chips[1]: unknown chip 'a9'; valid chips: a2, a3, a5``); every error of a table is
  reported at once, one per line.
* **Environment.** One ``PYPTO_<KEY>`` per key overrides the file (hatchling hands hooks no
  ``config_settings``): ``PYPTO_CHIPS`` with comma- or space-separated chips,
  ``PYPTO_RUNTIME_ROOT``, an empty ``PYPTO_COMPILER_LAUNCHER`` for no launcher,
  ``PYPTO_REMOTE_CACHE_READ_ONLY=1``; errors name the variable.
* **No credentials.** ``pyproject.toml`` is committed and shipped, so a key named like a
  credential is an error pointing at the environment variables and netrc the remote cache reads.

Regenerate the schema file and the reference with ``python -m pypto_build.plugin.settings
[--docs FILE]``.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shlex
import sys
import tomllib
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pypto_build.chip_build.chips import CHIPS
from pypto_build.chip_build.toolchains.revisions import is_commit
from pypto_build.errors import PyptoUsageError
from pypto_build.files import read_regular

TABLE = "tool.pypto"
SCHEMA_PATH = Path(__file__).with_name("settings.schema.json")
#: The schema's identifier. validate-pyproject keys every registered schema by its ``$id``;
#: nothing is ever fetched from it.
SCHEMA_ID = "https://pypto-build.invalid/schema/settings.schema.json"
CHIP_NAMES = tuple(chip.name for chip in CHIPS)

ToolchainSetting = Literal["auto", "cann", "sim"]
BuildTypeSetting = Literal["release", "debug"]


class SettingsError(PyptoUsageError, ValueError):
    """Settings that are missing, of the wrong type or not allowed. The message names each
    one's key path (or variable, or option), one per line; :attr:`errors` holds the lines."""

    def __init__(self, errors: str | Sequence[str]) -> None:
        self.errors = (errors,) if isinstance(errors, str) else tuple(errors)
        super().__init__("\n".join(self.errors))


# --- value checks: each has its JSON schema spelling beside it ------------------------------------

#: A relative POSIX path that stays inside the project: not absolute, no ``..`` part, no
#: backslash, not empty.
_RELATIVE_PATH_PATTERN = r"^(?!/)(?!.*\\)(?!(?:.*/)?\.\.(?:/|$)).+$"
_COMMIT_PATTERN = r"^[0-9a-f]{40}$"
#: A wheel platform tag as ``packaging`` spells them (``linux_x86_64``,
#: ``manylinux_2_28_x86_64``, ``any``), or ``auto``.
_PLATFORM_TAG_PATTERN = r"^[a-z0-9_]+$"
#: An http(s) URL with a host and no user name, password, query or fragment (the schema's
#: approximation of :func:`~pypto_build.chip_build.remote_cache.url_problem`).
_URL_PATTERN = r"^https?://[^/?#@\s]+(?:/[^?#\s]*)?$"
#: A preprocessor definition as ``-D`` takes it: ``NAME`` or ``NAME=VALUE``.
_DEFINE_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]*(?:=.*)?$"


def _relative_path(value: str, where: str) -> None:
    if "\0" in value:  # the system refuses such a path; say so before anything opens it
        raise SettingsError(f"{where}: {value!r} holds a NUL byte, which no path can")
    if re.fullmatch(_RELATIVE_PATH_PATTERN, value) is None:
        raise SettingsError(
            f"{where}: '{value}' must be a relative path inside the project (forward slashes)"
        )


def _chip(value: str, where: str) -> None:
    if value not in CHIP_NAMES:
        raise SettingsError(
            f"{where}: unknown chip '{value}'; valid chips: {', '.join(CHIP_NAMES)}"
        )


def _commit(value: str, where: str) -> None:
    if not is_commit(value):
        raise SettingsError(
            f"{where}: '{value}' is not a commit id; 40 lowercase hex digits are needed (what "
            "git rev-parse HEAD prints)"
        )


def _platform_tag(value: str, where: str) -> None:
    if re.fullmatch(_PLATFORM_TAG_PATTERN, value) is None:
        raise SettingsError(
            f"{where}: '{value}' is not a platform tag; give 'auto', 'any' or the platform part "
            "of a wheel tag, such as 'manylinux_2_28_x86_64' (lowercase, underscores)"
        )


def _positive(value: int, where: str) -> None:
    if value < 1:
        raise SettingsError(f"{where}: {value} is not allowed; at least 1 is needed")


#: The longest wait a setting may ask for: longer ones are mistakes (``inf``, ``1e300``), and
#: the socket layer refuses timeouts it cannot represent.
MAX_SECONDS = 86400.0


def _seconds(value: float, where: str) -> None:
    if not 0 < value <= MAX_SECONDS:
        raise SettingsError(
            f"{where}: {value} is not allowed; a time above 0 and at most {MAX_SECONDS:g} "
            "seconds (one day) is needed"
        )


def _command(value: str, where: str) -> None:
    try:
        shlex.split(value)
    except ValueError as exc:
        raise SettingsError(
            f"{where}: {value!r} is not a command line ({exc}); quote as a shell does"
        ) from None


def _define(value: str, where: str) -> None:
    if re.fullmatch(_DEFINE_PATTERN, value) is None:
        raise SettingsError(
            f"{where}: '{value}' is not a definition; give NAME or NAME=VALUE (without -D), "
            "NAME an identifier"
        )


def _size(value: str, where: str) -> None:
    from pypto_build.chip_build.cache import parse_size

    try:
        parse_size(value)
    except ValueError as exc:
        raise SettingsError(f"{where}: {exc}") from None


def _url(value: str, where: str) -> None:
    # The remote tier is loaded only for a project that names a remote cache.
    from pypto_build.chip_build.remote_cache import url_problem

    problem = url_problem(value)
    if problem is not None:
        raise SettingsError(f"{where}: {problem}")


#: Words that mark a key as a credential, which no settings key may carry.
_CREDENTIAL_WORDS = frozenset(
    {"auth", "credential", "credentials", "login", "netrc", "password", "secret", "token"}
    | {"user", "username"}
)


def _credential_problem(key: str, where: str) -> str | None:
    """The error for an unknown key that names a credential, or None."""
    if not _CREDENTIAL_WORDS & set(re.split(r"[_-]", key.lower())):
        return None
    from pypto_build.chip_build.remote_cache import (
        PASSWORD_VARIABLE,
        TOKEN_VARIABLE,
        USERNAME_VARIABLE,
    )

    return (
        f"{where}.{key}: credentials are never read from pyproject.toml; set "
        f"{USERNAME_VARIABLE} and {PASSWORD_VARIABLE}, or {TOKEN_VARIABLE}, in the environment, "
        "or put the remote cache's host in ~/.netrc"
    )


def _meta(
    doc: str,
    *,
    check: Callable[[Any, str], None] | None = None,
    required: bool = False,
    unique: bool = False,
    non_empty: bool = False,
    schema: Mapping[str, Any] | None = None,
    value: str | None = None,
    default: str | None = None,
) -> dict[str, Any]:
    """A model field's metadata.

    ``doc`` feeds the schema's description and the reference; ``check`` validates one value
    (each item, for a list) and ``schema`` is its JSON schema spelling; ``required`` keys must be
    in every table (the dataclass default then only serves settings made without a table, such
    as a build of program files); ``unique``/``non_empty`` constrain a list. ``value`` and
    ``default`` describe the value and the default in the reference when the type and the
    dataclass default do not say it (a default computed at build time)."""
    return {
        "doc": doc,
        "check": check,
        "required": required,
        "unique": unique,
        "non_empty": non_empty,
        "schema": dict(schema or {}),
        "value": value,
        "default": default,
    }


_RELATIVE_PATH_SCHEMA = {"pattern": _RELATIVE_PATH_PATTERN}
_COMMIT_SCHEMA = {"pattern": _COMMIT_PATTERN}
_URL_SCHEMA = {"pattern": _URL_PATTERN}
_DEFINES_SCHEMA = {"items": {"pattern": _DEFINE_PATTERN}}


@dataclass(frozen=True)
class PyptoSettings:
    """The validated content of ``[tool.pypto]``."""

    programs: tuple[str, ...] = field(
        default=(),
        metadata=_meta(
            "Python files holding the @pl.program classes to build, relative to the project root.",
            check=_relative_path,
            required=True,
            unique=True,
            non_empty=True,
            schema={"items": _RELATIVE_PATH_SCHEMA},
            value="list of paths",
        ),
    )
    package: str | None = field(
        default=None,
        metadata=_meta(
            "Where the chip trees land inside the wheel, as <package>/<chip>/ (a package path "
            "such as 'moe/_kernels'); an editable install builds them into its source folder. "
            "Only a wheel reads it.",
            check=_relative_path,
            schema=_RELATIVE_PATH_SCHEMA,
            value="package path",
            default="`<import package>/_kernels`, the import package being the one hatchling "
            'puts in the wheel (`my_model/_kernels` for `packages = ["src/my_model"]`)',
        ),
    )
    chips: tuple[str, ...] | None = field(
        default=None,
        metadata=_meta(
            "Chips to build a sub-build for; each gets <package>/<chip>/ in the wheel. A chip "
            "that an op of the programs does not support is an error naming the op.",
            check=_chip,
            unique=True,
            non_empty=True,
            schema={"items": {"enum": list(CHIP_NAMES)}},
            value="list of " + "/".join(f"`{name}`" for name in CHIP_NAMES),
            default="every chip that all the ops of the programs support",
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
    platform_tag: str = field(
        default="auto",
        metadata=_meta(
            "The platform part of the wheel's tag (py3-none-<platform>). 'auto': this host's "
            "platform for sim kernels, which are host shared objects (linux_x86_64, which "
            "auditwheel repair turns into a manylinux tag), and 'any' for cann kernels, which "
            "run on the NPU whatever the host. Set a manylinux tag only for kernels that "
            "auditwheel show accepts for it; a sim build refuses 'any' and platforms this host "
            "cannot install.",
            check=_platform_tag,
            schema={"pattern": _PLATFORM_TAG_PATTERN},
        ),
    )
    compiler_launcher: str | None = field(
        default=None,
        metadata=_meta(
            "A command put in front of every compile, as CMake's <LANG>_COMPILER_LAUNCHER "
            "(e.g. 'ccache' or 'sccache').",
            check=_command,
            value="command",
        ),
    )
    jobs: int | None = field(
        default=None,
        metadata=_meta(
            "Compiler processes run at once.",
            check=_positive,
            schema={"minimum": 1},
            default="the CPU count, at most one per GiB of available memory",
        ),
    )
    build_type: BuildTypeSetting = field(
        default="release",
        metadata=_meta(
            "How the sim toolchain optimizes: 'release' compiles with -O2 -DNDEBUG, 'debug' "
            "with -O0 -g (asserts kept, the tree recorded as '.' in the debug information) "
            "for a debugger. CANN builds keep upstream's flags; use cann-cxxflags there.",
        ),
    )
    sim_defines: tuple[str, ...] = field(
        default=(),
        metadata=_meta(
            "Preprocessor definitions (NAME or NAME=VALUE) added to every sim compile as -DNAME.",
            check=_define,
            schema=_DEFINES_SCHEMA,
            value="list of `NAME[=VALUE]`",
            default="none",
        ),
    )
    sim_cxxflags: str | None = field(
        default=None,
        metadata=_meta(
            "Flags added to every sim compile and link after pypto-build's own, split as a "
            "shell does (e.g. '-fsanitize=address -fno-omit-frame-pointer'); $CXXFLAGS comes "
            "before them.",
            check=_command,
            value="flags",
        ),
    )
    cann_defines: tuple[str, ...] = field(
        default=(),
        metadata=_meta(
            "Preprocessor definitions (NAME or NAME=VALUE) added to every CANN compile (ccec "
            "for kernels, the aarch64 g++ for orchestrations) as -DNAME.",
            check=_define,
            schema=_DEFINES_SCHEMA,
            value="list of `NAME[=VALUE]`",
            default="none",
        ),
    )
    cann_cxxflags: str | None = field(
        default=None,
        metadata=_meta(
            "Flags added to every CANN compile (ccec and the aarch64 g++) after upstream's, "
            "split as a shell does; $CXXFLAGS is not read, being the host compiler's.",
            check=_command,
            value="flags",
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
            value="path",
        ),
    )
    runtime_revision: str | None = field(
        default=None,
        metadata=_meta(
            "The runtime's commit (40 hex digits) recorded in each sub-build's "
            "cache/binary_context.json, which PyPTO's runtime checks before reusing the "
            "binaries (set it for an installed simpler: its _task_interface.__build_commit__).",
            check=_commit,
            schema=_COMMIT_SCHEMA,
            value="40-hex commit",
            default="the clean git `HEAD` of `runtime-root`",
        ),
    )
    pto_isa_root: str | None = field(
        default=None,
        metadata=_meta(
            "PTO-ISA checkout whose headers CANN kernel compiles include. Relative to the "
            "project root unless absolute.",
            value="path",
            default="`$PTO_ISA_ROOT`, else the runtime's managed clone "
            "`<runtime-root>/build/pto-isa`",
        ),
    )
    pto_isa_revision: str | None = field(
        default=None,
        metadata=_meta(
            "PTO-ISA's commit (40 hex digits) recorded in cache/binary_context.json.",
            check=_commit,
            schema=_COMMIT_SCHEMA,
            value="40-hex commit",
            default="the clean git `HEAD` of the PTO-ISA root",
        ),
    )
    cache_max_size: str = field(
        default="5G",
        metadata=_meta(
            "The most the compile cache's folder may hold, its build records included: every "
            "build brings it within this after it publishes, the least recently used entries "
            "first (as ccache does).",
            check=_size,
            value="size: 4096, 500M, 2G, 1.5GiB",
            default="`5G`",
        ),
    )
    remote_cache_url: str | None = field(
        default=None,
        metadata=_meta(
            "Base URL of a remote compile cache speaking the HTTP remote-cache protocol "
            "(bazel-remote, nginx WebDAV, Bazel's --remote_cache; entries at <url>/ac/<key> and "
            "<url>/cas/<sha256>), asked after a local miss and uploaded to. Credentials come "
            "from the environment or ~/.netrc, never from this file; see docs/scaling.md.",
            check=_url,
            schema=_URL_SCHEMA,
            value="URL",
        ),
    )
    remote_cache_read_only: bool = field(
        default=False,
        metadata=_meta("Only read from remote-cache-url, never upload to it.", default="`false`"),
    )
    remote_cache_signed: bool = field(
        default=False,
        metadata=_meta(
            "Take only remote entries signed with the secret in "
            "PYPTO_REMOTE_CACHE_SIGNING_KEY (an HMAC-SHA256 over the compile key, the "
            "artifact's SHA-256 and the files it was compiled from), from both remote caches; "
            "whoever can write a remote without the secret cannot make a build ship their "
            "binary. Uploads are signed whenever the secret is set; see docs/scaling.md.",
            default="`false`",
        ),
    )
    remote_cache_fallback_url: str | None = field(
        default=None,
        metadata=_meta(
            "A second remote cache, read only, asked after remote-cache-url misses (e.g. the "
            "main branch's cache for a build of another branch).",
            check=_url,
            schema=_URL_SCHEMA,
            value="URL",
        ),
    )
    remote_cache_timeout: float = field(
        default=10.0,
        metadata=_meta(
            "Seconds one exchange with a remote cache may take; a remote that exceeds it, is "
            "unreachable or answers errors is dropped for the rest of the build with one "
            "warning.",
            check=_seconds,
            schema={"exclusiveMinimum": 0, "maximum": MAX_SECONDS},
            value="seconds > 0, at most a day",
            default="`10`",
        ),
    )
    verbose: bool = field(
        default=False,
        metadata=_meta(
            "Print each compile's command line and wall time (and each step's time) on "
            "stderr, as -v does; under pip, pip -v shows it.",
            default="`false`",
        ),
    )
    strict: bool = field(
        default=False,
        metadata=_meta(
            "Refuse unknown PYPTO_* environment variables and -C keys (a misspelt override) "
            "instead of warning about them and building without them.",
            default="`false`",
        ),
    )


_FIELDS = {f.name: f for f in dataclasses.fields(PyptoSettings)}
_TYPES = typing.get_type_hints(PyptoSettings)


def setting_key(name: str) -> str:
    """The ``[tool.pypto]`` key of field ``name``: kebab-case (``compiler-launcher``)."""
    return name.replace("_", "-")


def environment_variable(name: str) -> str:
    """The environment variable that overrides field ``name``: ``PYPTO_<NAME>``."""
    return f"PYPTO_{name.upper()}"


_KEYS = {setting_key(name): name for name in _FIELDS}
#: Keys a [tool.pypto] table must have.
REQUIRED = tuple(setting_key(n) for n, f in _FIELDS.items() if f.metadata["required"])


def _optional_inner(annotation: Any) -> Any:
    """``X`` for ``X | None``, else None."""
    if isinstance(annotation, types.UnionType):
        args = [arg for arg in typing.get_args(annotation) if arg is not type(None)]
        if len(args) == 1:
            return args[0]
    return None


def _value_type(name: str) -> Any:
    """Field ``name``'s type without ``| None``."""
    return _optional_inner(_TYPES[name]) or _TYPES[name]


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
    annotation = _value_type(name)
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


def _did_you_mean(key: str) -> str:
    """The hint for an unknown key: the key it is most likely a misspelling of."""
    spelled = key.strip().lower().replace("_", "-")
    if spelled in _KEYS:
        return f"; did you mean '{spelled}'? (keys are spelled in kebab-case)"
    import difflib  # for a misspelt key only

    close = difflib.get_close_matches(spelled, list(_KEYS), n=1, cutoff=0.6)
    if close:
        return f"; did you mean '{close[0]}'?"
    return f"; valid keys: {', '.join(_KEYS)}"


def settings_from_table(table: Mapping[str, object], *, where: str = TABLE) -> PyptoSettings:
    """Validate a ``[tool.pypto]`` table (as ``tomllib`` returns it); every error of the table
    is reported in one :class:`SettingsError`."""
    errors: list[str] = []
    values: dict[str, Any] = {}
    for key, value in table.items():
        name = _KEYS.get(key)
        if name is None:
            credential = _credential_problem(key, where)
            errors.append(credential or f"{where}: unknown key '{key}'{_did_you_mean(key)}")
            continue
        try:
            values[name] = _convert(name, value, f"{where}.{key}")
        except SettingsError as err:
            errors += err.errors
    errors += [f"{where}: missing required key '{key}'" for key in REQUIRED if key not in table]
    if errors:
        raise SettingsError(errors)
    return PyptoSettings(**values)


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
    known = [environment_variable(name) for name in _FIELDS] + list(OTHER_VARIABLES)
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
    for name in _FIELDS:
        variable = environment_variable(name)
        if variable not in environ:
            continue
        text = environ[variable].strip()
        try:
            if text:
                changes[name] = _convert(name, _from_text(name, text, variable), variable)
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
        name = _KEYS.get(key)
        where = f"-C {key}"
        if name is None:
            unknown.append(f"{where}: unknown key{_did_you_mean(key)}")
            continue
        text = " ".join(value) if isinstance(value, list) else str(value)
        try:
            changes[name] = _convert(name, _from_text(name, text.strip(), where), where)
        except SettingsError as err:
            errors += err.errors
    _unknown(unknown, changes.get("strict", settings.strict), errors, warn)
    if errors:
        raise SettingsError(errors)
    return dataclasses.replace(settings, **changes)


def _can_turn_off(name: str) -> bool:
    """Whether an empty variable turns field ``name`` off: an optional setting whose None
    means none (no launcher), not a list, whose None means the computed default."""
    inner = _optional_inner(_TYPES[name])
    return inner is not None and typing.get_origin(inner) is not tuple


def _from_text(name: str, text: str, variable: str) -> object:
    """An environment variable's text as the value a TOML table would hold for ``name``."""
    annotation = _value_type(name)
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


def override(settings: PyptoSettings, option: str, name: str, value: object) -> PyptoSettings:
    """``settings`` with field ``name`` set from a command-line ``option`` (validated, errors
    naming the option)."""
    return dataclasses.replace(settings, **{name: _convert(name, value, option)})


# --- JSON schema -------------------------------------------------------------------------------


def _schema_of(name: str) -> dict[str, Any]:
    spec = _FIELDS[name]
    annotation = _value_type(name)
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
        schema["type"] = "integer"
    elif annotation is bool:
        schema["type"] = "boolean"
    elif annotation is float:
        schema["type"] = "number"
    else:
        schema["type"] = "string"
    for key, value in spec.metadata["schema"].items():
        schema[key] = {**schema[key], **value} if isinstance(value, dict) else value
    if spec.default is not None and not spec.metadata["required"]:
        default = spec.default
        schema["default"] = list(default) if isinstance(default, tuple) else default
    return schema


def settings_schema() -> dict[str, Any]:
    """The JSON schema of a ``[tool.pypto]`` table, generated from :class:`PyptoSettings`."""
    return {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "$id": SCHEMA_ID,
        "title": f"[{TABLE}]",
        "description": "Settings of pypto-build, the PyPTO kernel build plugin.",
        "type": "object",
        "additionalProperties": False,
        "required": list(REQUIRED),
        "properties": {setting_key(name): _schema_of(name) for name in _FIELDS},
    }


def tool_schema(tool_name: str = "pypto") -> dict[str, Any]:
    """The schema of ``[tool.<tool_name>]``, for validate-pyproject (its
    ``validate_pyproject.tool_schema`` entry point ``pypto`` names this function)."""
    return settings_schema()


def schema_text() -> str:
    """The schema file's exact content."""
    return json.dumps(settings_schema(), indent=2) + "\n"


# --- the settings reference --------------------------------------------------------------------

#: The markers around the generated part of ``docs/settings.md``.
DOCS_BEGIN = "<!-- settings-reference: generated by python -m pypto_build.plugin.settings -->"
DOCS_END = "<!-- end of settings-reference -->"


def _value_doc(name: str) -> str:
    spec = _FIELDS[name]
    if spec.metadata["value"] is not None:
        return str(spec.metadata["value"])
    annotation = _value_type(name)
    if typing.get_origin(annotation) is Literal:
        return "/".join(f"`{choice}`" for choice in typing.get_args(annotation))
    return {str: "string", int: "integer ≥ 1", bool: "boolean"}[annotation]


def _default_doc(name: str) -> str:
    spec = _FIELDS[name]
    if spec.metadata["required"]:
        return "**required**"
    if spec.metadata["default"] is not None:
        return str(spec.metadata["default"])
    if spec.default is None:
        return "none"
    if isinstance(spec.default, tuple):
        return ", ".join(f"`{item}`" for item in spec.default)
    return f"`{spec.default}`"


_QUOTED = re.compile(r"(?<!\w)'([^']+)'(?!\w)")
_PLACEHOLDER_WORD = re.compile(r"[\w./$-]*<[\w-]+>[\w./<>-]*")


def _markdown(doc: str) -> str:
    """A field's doc as reference text: quoted values and ``<placeholder>`` paths as code (a
    bare ``<package>`` would read as an HTML tag), ``|`` escaped for the table."""
    doc = _PLACEHOLDER_WORD.sub(lambda match: f"`{match.group(0)}`", _QUOTED.sub(r"`\1`", doc))
    return doc.replace("|", "\\|")


def reference_table() -> str:
    """The settings reference: one row per key, in the model's order."""
    rows = [
        "| key | value | default | environment | meaning |",
        "| --- | --- | --- | --- | --- |",
    ]
    for name, spec in _FIELDS.items():
        cells = (
            f"`{setting_key(name)}`",
            _value_doc(name),
            _default_doc(name),
            f"`{environment_variable(name)}`",
            _markdown(str(spec.metadata["doc"])),
        )
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows) + "\n"


def with_reference(document: str) -> str:
    """``document`` (the text of ``docs/settings.md``) with its generated part replaced by
    :func:`reference_table`."""
    begin = document.index(DOCS_BEGIN) + len(DOCS_BEGIN)
    end = document.index(DOCS_END)
    return f"{document[:begin]}\n{reference_table()}{document[end:]}"


def main(argv: Sequence[str] | None = None) -> int:
    """Write the schema file; ``--docs FILE`` also rewrites the reference in ``FILE``
    (``docs/settings.md``); ``--check`` only reports whether they are current (exit 1 if not)."""
    args = list(sys.argv[1:] if argv is None else argv)
    check = "--check" in args
    args = [arg for arg in args if arg != "--check"]
    targets: list[tuple[Path, str]] = [(SCHEMA_PATH, schema_text())]
    if args[:1] == ["--docs"] and len(args) == 2:
        docs = Path(args[1])
        targets.append((docs, with_reference(docs.read_text(encoding="utf-8"))))
    elif args:
        print("usage: python -m pypto_build.plugin.settings [--check] [--docs FILE]")
        return 2
    stale = [path for path, text in targets if _read(path) != text]
    if check:
        for path in stale:
            print(f"{path} is out of date", file=sys.stderr)
        return 1 if stale else 0
    for path, text in targets:
        if path in stale:
            path.write_text(text, encoding="utf-8")
    return 0


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8") if path.exists() else ""


if __name__ == "__main__":
    raise SystemExit(main())
