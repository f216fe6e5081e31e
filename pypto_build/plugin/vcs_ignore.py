"""Keeping build output that pypto-build writes into a project out of git and out of sdists.

Two builds write into a project: an editable install builds the kernels in place (into the
source folder of ``package``), and ``pypto-build build`` of a project defaults to
``<project>/build/pypto``. Neither may reach an sdist, yet an sdist backend decides what to leave
out by the project's ignore file: hatchling reads the one nearest ``.gitignore`` (in the project
folder or a parent, up to the repository root), not files inside the folders it walks, so a
``.gitignore`` inside the output folder (as venv writes) would keep it out of git but not out of
a hatchling sdist. So the folder is listed in that nearest ``.gitignore`` (created in the project
folder when there is none), once, with a comment saying who added it and why.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath

from pypto_build.files import atomic_write_text, read_text

GITIGNORE = ".gitignore"
_COMMENT = "# Build output of pypto-build: kept out of git and out of sdists."


def nearest_gitignore(project: Path) -> Path:
    """The ``.gitignore`` hatchling reads for ``project``: the nearest one in ``project`` or a
    parent folder, not beyond the folder holding ``.git``; ``project/.gitignore`` (perhaps
    not yet existing) when there is none."""
    folder = project.resolve()
    while True:
        if (folder / GITIGNORE).is_file():
            return folder / GITIGNORE
        if (folder / ".git").exists() or folder.parent == folder:
            return project.resolve() / GITIGNORE
        folder = folder.parent


def _covers(line: str, relative: PurePosixPath) -> bool:
    """Whether the ignore-file ``line`` plainly names ``relative`` or a folder holding it (a
    pattern with wildcards is not interpreted: at worst the folder is listed once more)."""
    pattern = line.strip()
    if not pattern or pattern.startswith(("#", "!")):
        return False
    if pattern in ("*", "/*", "**", "/**"):
        return True
    named = PurePosixPath(pattern.strip("/"))
    if pattern.startswith("/") or "/" in pattern.rstrip("/"):
        return relative == named or named in relative.parents
    # A pattern without a slash names a file or folder at any depth.
    return pattern.rstrip("/") in relative.parts


def ensure_ignored(project: Path, folder: Path) -> Path | None:
    """List ``folder`` (inside ``project``) in the project's nearest ``.gitignore`` unless a
    line there already names it or a folder holding it; the ignore file written, or None."""
    gitignore = nearest_gitignore(project)
    relative = PurePosixPath(folder.resolve().relative_to(gitignore.parent).as_posix())
    text = read_text(gitignore) if gitignore.is_file() else ""
    if any(_covers(line, relative) for line in text.splitlines()):
        return None
    if text and not text.endswith("\n"):
        text += "\n"
    separator = "\n" if text else ""
    # What a killed build leaves beside the folder (its staging folder, its lock) is named
    # .<folder>.*; listed with the folder, so no sdist or wheel ever ships it.
    debris = relative.parent / f".{relative.name}.*"
    lines = f"{_COMMENT}\n/{relative}/\n/{debris}\n"
    atomic_write_text(gitignore, f"{text}{separator}{lines}")
    return gitignore
