"""The checks of one setting's value, each with its JSON schema spelling beside it, and the
error every settings check raises."""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence

from pypto_build.chip_build.chips import CHIPS
from pypto_build.chip_build.toolchains.revisions import is_commit
from pypto_build.errors import PyptoUsageError

CHIP_NAMES = tuple(chip.name for chip in CHIPS)


class SettingsError(PyptoUsageError, ValueError):
    """Settings that are missing, of the wrong type or not allowed. The message names each
    one's key path (or variable, or option), one per line; :attr:`errors` holds the lines."""

    def __init__(self, errors: str | Sequence[str]) -> None:
        self.errors = (errors,) if isinstance(errors, str) else tuple(errors)
        super().__init__("\n".join(self.errors))


#: A relative POSIX path that stays inside the project: not absolute, no ``..`` part, no
#: backslash, not empty.
RELATIVE_PATH_PATTERN = r"^(?!/)(?!.*\\)(?!(?:.*/)?\.\.(?:/|$)).+$"
COMMIT_PATTERN = r"^[0-9a-f]{40}$"
#: A wheel platform tag as ``packaging`` spells them (``linux_x86_64``,
#: ``manylinux_2_28_x86_64``, ``any``), or ``auto``.
PLATFORM_TAG_PATTERN = r"^[a-z0-9_]+$"
#: An http(s) URL with a host and no user name, password, query or fragment (the schema's
#: approximation of :func:`~pypto_build.store.http_credentials.url_problem`).
URL_PATTERN = r"^https?://[^/?#@\s]+(?:/[^?#\s]*)?$"
#: A preprocessor definition as ``-D`` takes it: ``NAME`` or ``NAME=VALUE``.
DEFINE_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]*(?:=.*)?$"


def check_relative_path(value: str, where: str) -> None:
    if "\0" in value:  # the system refuses such a path; say so before anything opens it
        raise SettingsError(f"{where}: {value!r} holds a NUL byte, which no path can")
    if re.fullmatch(RELATIVE_PATH_PATTERN, value) is None:
        raise SettingsError(
            f"{where}: '{value}' must be a relative path inside the project (forward slashes)"
        )


def check_chip(value: str, where: str) -> None:
    if value not in CHIP_NAMES:
        raise SettingsError(
            f"{where}: unknown chip '{value}'; valid chips: {', '.join(CHIP_NAMES)}"
        )


def check_commit(value: str, where: str) -> None:
    if not is_commit(value):
        raise SettingsError(
            f"{where}: '{value}' is not a commit id; 40 lowercase hex digits are needed (what "
            "git rev-parse HEAD prints)"
        )


def check_platform_tag(value: str, where: str) -> None:
    if re.fullmatch(PLATFORM_TAG_PATTERN, value) is None:
        raise SettingsError(
            f"{where}: '{value}' is not a platform tag; give 'auto', 'any' or the platform part "
            "of a wheel tag, such as 'manylinux_2_28_x86_64' (lowercase, underscores)"
        )


def check_positive(value: int, where: str) -> None:
    if value < 1:
        raise SettingsError(f"{where}: {value} is not allowed; at least 1 is needed")


#: The longest wait a setting may ask for: longer ones are mistakes (``inf``, ``1e300``), and
#: the socket layer refuses timeouts it cannot represent.
MAX_SECONDS = 86400.0


def check_seconds(value: float, where: str) -> None:
    if not 0 < value <= MAX_SECONDS:
        raise SettingsError(
            f"{where}: {value} is not allowed; a time above 0 and at most {MAX_SECONDS:g} "
            "seconds (one day) is needed"
        )


def check_command(value: str, where: str) -> None:
    try:
        shlex.split(value)
    except ValueError as exc:
        raise SettingsError(
            f"{where}: {value!r} is not a command line ({exc}); quote as a shell does"
        ) from None


def check_define(value: str, where: str) -> None:
    if re.fullmatch(DEFINE_PATTERN, value) is None:
        raise SettingsError(
            f"{where}: '{value}' is not a definition; give NAME or NAME=VALUE (without -D), "
            "NAME an identifier"
        )


def check_size(value: str, where: str) -> None:
    from pypto_build.store.size_limit import parse_size

    try:
        parse_size(value)
    except ValueError as exc:
        raise SettingsError(f"{where}: {exc}") from None


def check_url(value: str, where: str) -> None:
    # The remote tier is loaded only for a project that names a remote cache.
    from pypto_build.store.http_credentials import url_problem

    problem = url_problem(value)
    if problem is not None:
        raise SettingsError(f"{where}: {problem}")
