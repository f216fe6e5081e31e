"""The commits of the runtime and of PTO-ISA that CANN binaries are built for.

PyPTO's runtime reuses the binaries beside a sub-build's sources only when the sub-build's
``cache/binary_context.json`` names the runtime and PTO-ISA revisions it runs with
(``pypto/runtime/_binary_cache.py``, ``device_runner._current_binary_context``); otherwise it
deletes and rebuilds them. PyPTO takes each revision from the clean git ``HEAD`` of the folder
(a checkout with uncommitted or untracked changes has no revision: its files are not that
commit's), and for an installed simpler wheel from its ``_task_interface.__build_commit__``.
A build takes each from its setting when given (the only way for an installed wheel: the
build never imports the runtime), else from git exactly as PyPTO does.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

_COMMIT = re.compile(r"[0-9a-f]{40}")


def is_commit(text: str) -> bool:
    """Whether ``text`` is a full git commit id (40 lowercase hex digits)."""
    return _COMMIT.fullmatch(text) is not None


@dataclass(frozen=True)
class Revision:
    """A revision, or why there is none."""

    #: The 40-hex commit; None when unknown.
    commit: str | None
    #: Where the commit came from (``tool.pypto.runtime-revision``, ``git HEAD of <root>``), or
    #: why it is unknown.
    source: str

    def describe(self) -> str:
        """``<commit> (<source>)``, or ``unknown (<why>)``."""
        return f"{self.commit or 'unknown'} ({self.source})"


class _GitFailed(Exception):
    """A git command that could not run or failed; the message says why."""


def _git(root: Path, *args: str) -> str:
    """The output of ``git <args>`` run in ``root``."""
    try:
        completed = subprocess.run(
            ["git", *args],
            cwd=root,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise _GitFailed(f"cannot run git in {root}: {exc}") from None
    if completed.returncode != 0:
        lines = completed.stderr.strip().splitlines() or [f"exit status {completed.returncode}"]
        raise _GitFailed(f"git {args[0]} failed in {root}: {lines[0]}")
    return completed.stdout.strip()


def git_revision(root: Path) -> Revision:
    """The clean ``HEAD`` of the checkout ``root`` (PyPTO's ``_clean_git_revision``)."""
    if not (root / ".git").exists():
        return Revision(None, f"{root} is not a git checkout")
    try:
        head = _git(root, "rev-parse", "HEAD")
        changes = _git(root, "status", "--porcelain=v1", "--untracked-files=normal")
    except _GitFailed as exc:
        return Revision(None, str(exc))
    if changes:
        return Revision(None, f"{root} has uncommitted changes")
    return Revision(head, f"git HEAD of {root}")


def settled_revision(setting: str | None, key: str, root: Path) -> Revision:
    """The setting ``key`` when it is set (``setting``), else :func:`git_revision` of ``root``."""
    if setting is not None:
        return Revision(setting, key)
    return git_revision(root)
