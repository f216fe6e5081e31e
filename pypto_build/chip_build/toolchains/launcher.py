"""Compiler launchers: a program (``ccache``, ``sccache``, ``distcc``) put in front of every
compile.

This is CMake's ``<LANG>_COMPILER_LAUNCHER``: the setting is a command line, its first word
resolved on ``PATH``, and the compile command is appended to it. A launcher sees the exact
compile command, so it can cache across builds and machines (ccache's shared storage,
sccache's remote backends) or run the compile on other hosts (distcc, sccache-dist) without
knowing anything about pypto-build. Only compile steps are launched; a launcher does not cache
links.

A launcher that spreads compiles over other hosts can run more of them at once than this
machine has cores: without a ``jobs`` setting, a build through ``distcc`` runs as many jobs as
``distcc -j`` reports for its host list (:func:`launcher_jobs`).
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from pypto_build.chip_build.toolchains.base import ToolchainError

#: Launchers ``pypto-build doctor`` looks for.
KNOWN_LAUNCHERS = ("ccache", "distcc", "sccache")
#: How long ``distcc -j`` may take: it only reads ``DISTCC_HOSTS`` or the hosts file.
_PROBE_TIMEOUT = 10.0


@dataclass(frozen=True)
class Launcher:
    """A resolved launcher command line: an absolute program path and its arguments."""

    argv: tuple[str, ...]


def resolve_launcher(
    setting: str | None, environ: Mapping[str, str] | None = None
) -> Launcher | None:
    """The launcher a setting names (``"ccache"``, ``"/opt/bin/sccache"``,
    ``"ccache --some-option"``), or None for an empty or missing setting.

    An unknown program is an error: silently compiling without the launcher the user asked for
    would hide a misconfiguration behind slow builds.
    """
    if setting is None or not setting.strip():
        return None
    environ = os.environ if environ is None else environ
    words = shlex.split(setting)
    located = shutil.which(words[0], path=environ.get("PATH"))
    if located is None:
        raise ToolchainError(f"compiler launcher '{words[0]}' is not on PATH")
    return Launcher((located, *words[1:]))


def find_launchers(environ: Mapping[str, str] | None = None) -> dict[str, Path | None]:
    """Where each of :data:`KNOWN_LAUNCHERS` is on ``PATH`` (None when absent)."""
    environ = os.environ if environ is None else environ
    found: dict[str, Path | None] = {}
    for name in KNOWN_LAUNCHERS:
        located = shutil.which(name, path=environ.get("PATH"))
        found[name] = None if located is None else Path(located)
    return found


def launcher_jobs(
    launcher: Launcher | None, environ: Mapping[str, str] | None = None
) -> int | None:
    """The jobs a launcher that distributes compiles can run at once, or None for any other
    launcher (or when it cannot say): for ``distcc``, what ``distcc -j`` prints, the sum of the
    job slots of its hosts."""
    if launcher is None or Path(launcher.argv[0]).name != "distcc":
        return None
    try:
        completed = subprocess.run(
            [launcher.argv[0], "-j"],
            env=os.environ if environ is None else dict(environ),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=_PROBE_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    text = completed.stdout.strip()
    return int(text) if completed.returncode == 0 and text.isdigit() and int(text) > 0 else None
