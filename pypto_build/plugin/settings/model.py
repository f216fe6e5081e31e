"""The ``[tool.pypto]`` settings model: one frozen dataclass whose fields carry their
documentation and constraints in ``metadata``, and the spelling of each field as a key and as
an environment variable.

A field added here gets its key, its conversion, its schema entry, its variable and its row of
the reference without further code (:mod:`.convert`, :mod:`.overrides`, :mod:`.schema`,
:mod:`.reference`).
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pypto_build.chip_build.toolchains.registry import TOOLCHAIN_NAMES, setting_doc
from pypto_build.plugin.settings.values import (
    CHIP_NAMES,
    COMMIT_PATTERN,
    DEFINE_PATTERN,
    MAX_SECONDS,
    PLATFORM_TAG_PATTERN,
    RELATIVE_PATH_PATTERN,
    URL_PATTERN,
    check_chip,
    check_command,
    check_commit,
    check_define,
    check_platform_tag,
    check_positive,
    check_relative_path,
    check_seconds,
    check_size,
    check_url,
)

TABLE = "tool.pypto"

BuildTypeSetting = Literal["release", "debug"]


def _meta(
    doc: str,
    *,
    check: Callable[[Any, str], None] | None = None,
    required: bool = False,
    unique: bool = False,
    non_empty: bool = False,
    schema: Mapping[str, Any] | None = None,
    choices: Sequence[str] = (),
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
        "choices": tuple(choices),
        "value": value,
        "default": default,
    }


_RELATIVE_PATH_SCHEMA = {"pattern": RELATIVE_PATH_PATTERN}
_COMMIT_SCHEMA = {"pattern": COMMIT_PATTERN}
_URL_SCHEMA = {"pattern": URL_PATTERN}
_DEFINES_SCHEMA = {"items": {"pattern": DEFINE_PATTERN}}


@dataclass(frozen=True)
class PyptoSettings:
    """The validated content of ``[tool.pypto]``."""

    programs: tuple[str, ...] = field(
        default=(),
        metadata=_meta(
            "Python files holding the @pl.program classes to build, relative to the project root.",
            check=check_relative_path,
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
            check=check_relative_path,
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
            check=check_chip,
            unique=True,
            non_empty=True,
            schema={"items": {"enum": list(CHIP_NAMES)}},
            value="list of " + "/".join(f"`{name}`" for name in CHIP_NAMES),
            default="every chip that all the ops of the programs support",
        ),
    )
    toolchain: str = field(
        default="auto",
        metadata=_meta(setting_doc(), choices=TOOLCHAIN_NAMES),
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
            check=check_platform_tag,
            schema={"pattern": PLATFORM_TAG_PATTERN},
        ),
    )
    compiler_launcher: str | None = field(
        default=None,
        metadata=_meta(
            "A command put in front of every compile, as CMake's <LANG>_COMPILER_LAUNCHER "
            "(e.g. 'ccache' or 'sccache').",
            check=check_command,
            value="command",
        ),
    )
    jobs: int | None = field(
        default=None,
        metadata=_meta(
            "Compiler processes run at once.",
            check=check_positive,
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
            check=check_define,
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
            check=check_command,
            value="flags",
        ),
    )
    cann_defines: tuple[str, ...] = field(
        default=(),
        metadata=_meta(
            "Preprocessor definitions (NAME or NAME=VALUE) added to every CANN compile (ccec "
            "for kernels, the aarch64 g++ for orchestrations) as -DNAME.",
            check=check_define,
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
            check=check_command,
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
            check=check_commit,
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
            check=check_commit,
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
            check=check_size,
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
            check=check_url,
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
            check=check_url,
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
            check=check_seconds,
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


FIELDS = {f.name: f for f in dataclasses.fields(PyptoSettings)}
TYPES = typing.get_type_hints(PyptoSettings)


def setting_key(name: str) -> str:
    """The ``[tool.pypto]`` key of field ``name``: kebab-case (``compiler-launcher``)."""
    return name.replace("_", "-")


def environment_variable(name: str) -> str:
    """The environment variable that overrides field ``name``: ``PYPTO_<NAME>``."""
    return f"PYPTO_{name.upper()}"


KEYS = {setting_key(name): name for name in FIELDS}
#: Keys a [tool.pypto] table must have.
REQUIRED = tuple(setting_key(n) for n, f in FIELDS.items() if f.metadata["required"])


def optional_inner(annotation: Any) -> Any:
    """``X`` for ``X | None``, else None."""
    if isinstance(annotation, types.UnionType):
        args = [arg for arg in typing.get_args(annotation) if arg is not type(None)]
        if len(args) == 1:
            return args[0]
    return None


def value_type(name: str) -> Any:
    """Field ``name``'s type without ``| None``."""
    return optional_inner(TYPES[name]) or TYPES[name]


def choices(name: str) -> tuple[str, ...]:
    """The values field ``name`` may take, when it is a choice: its ``Literal`` type's, or the
    ``choices`` of its metadata; empty for any other field."""
    annotation = value_type(name)
    if typing.get_origin(annotation) is Literal:
        return typing.get_args(annotation)
    return tuple(FIELDS[name].metadata["choices"])
