"""The repository stands alone: no file cites a document that is not in it.

A comment, docstring, doc page, test or benchmark states the rule it relies on, points at a page
of ``docs/``, or cites an upstream project's file by repository and revision. Citations of
design notes kept elsewhere (their section numbers, seed documents, reference notes, design
requests) name texts a reader of this repository cannot open, so this test finds them in every
file of the repository and fails on any not listed in :data:`PENDING`.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: This file, which quotes the pending citations and so is not scanned.
HERE = Path(__file__).resolve().relative_to(ROOT).as_posix()

#: Spellings of citations of documents outside the repository. Built from pieces so that this
#: file does not match itself.
_SECTION = "\u00a7"
FORBIDDEN = re.compile(
    "|".join(
        (
            r"\b" + "DES" + r"IGN\b",
            r"\b[Ss]eeds?[ /][0-9]{3}(?![0-9])",
            r"\b[Ss]eed doc" + "ument",
            r"\b[Tt]he " + r"seed(?:'s)?(?![a-z])",
            r"\b" + "refer" + r"ence/[A-Za-z0-9_.-]+\.md\b",
            r"\b" + "R" + r"FC\b",
            r"\b[Rr]efer" + r"ence (?:" + _SECTION + r"|[AB]\.[0-9])",
            _SECTION + r"\s*[A-Z]?\.?[0-9]",
            r"\b[Tt]he refer" + r"ence's\b",
            r"\bas the refer" + r"ence\b",
        )
    )
)

#: (path, text of the line) -> why the citation is still there. An entry whose line no longer
#: cites anything fails the test too, so the list only shrinks.
PENDING: dict[tuple[str, str], str] = {}


def _files() -> list[str]:
    """Every file of the repository, as git tracks it (a checkout without git: every file)."""
    try:
        listed = subprocess.run(
            ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        skipped = {".git", "__pycache__", ".venv", "build", "dist", ".mypy_cache", ".ruff_cache"}
        return sorted(
            str(path.relative_to(ROOT))
            for path in ROOT.rglob("*")
            if path.is_file() and not skipped & set(path.relative_to(ROOT).parts)
        )
    return sorted(name for name in listed.decode().split("\0") if name)


def _citations() -> dict[tuple[str, str], int]:
    found: dict[tuple[str, str], int] = {}
    for name in _files():
        path = ROOT / name
        if name == HERE or not path.is_file():
            continue
        text = path.read_bytes().decode("utf-8", errors="replace")
        for number, line in enumerate(text.splitlines(), 1):
            if FORBIDDEN.search(line):
                found[(name, line.strip())] = number
    return found


def test_no_file_cites_a_document_outside_the_repository() -> None:
    found = _citations()
    new = [
        f"{name}:{number}: {line}"
        for (name, line), number in found.items()
        if (name, line) not in PENDING
    ]
    assert not new, "cite docs/ or an upstream file and revision instead:\n" + "\n".join(new)


def test_every_pending_citation_is_still_there() -> None:
    found = _citations()
    stale = [f"{name}: {line}" for name, line in PENDING if (name, line) not in found]
    assert not stale, "remove from PENDING, the citation is gone:\n" + "\n".join(stale)


def test_the_patterns_catch_each_spelling() -> None:
    spellings = (
        "DES" + "IGN " + _SECTION + "8.2",
        "see " + "seed 000",
        "seeds/" + "003_x.txt",
        "the " + "seed's pass order",
        "refer" + "ence/upstream-simpler-runtime.md",
        "R" + "FC #2521",
        "refer" + "ence A.3.2",
        "(" + _SECTION + "A.5.3)",
        "the refer" + "ence's sample shapes",
    )
    assert all(FORBIDDEN.search(text) for text in spellings)
    assert not FORBIDDEN.search("the seeds of the fuzzer, at the reference revision")
