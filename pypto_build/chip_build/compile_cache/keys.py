"""The compile cache's keys: what a compile is known to be before the compiler runs.

The *compile key* hashes the source bytes, every command line of the plan (planned against a
placeholder staging directory, so no temporary path enters it), and the toolchain's identity
and version. Keys depend on content, never on where the tree or pypto-build is installed: an
isolated build (pip, build, uv) installs pypto-build into a new temporary environment each time,
and must still hit, so in command lines the package's folder is named by
:data:`PACKAGE_PLACEHOLDER`, as a plan names the tree by a placeholder.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

#: The format of compile keys and of the self-contained manifests the remote tier stores.
FORMAT = "v1"
#: How cache keys and entries name pypto-build's package folder.
PACKAGE_PLACEHOLDER = "/@pypto_build"


@dataclass(frozen=True)
class PackageFolder:
    """pypto-build's package folder as installed here, and its placeholder spelling."""

    root: Path

    def portable(self, text: str) -> str:
        """``text`` (a path, or an argument holding one) with the folder as the placeholder."""
        if str(self.root) not in text:  # most arguments: no regular expression
            return text
        return re.sub(re.escape(str(self.root)) + r"(?=/|$)", PACKAGE_PLACEHOLDER, text)

    def local(self, text: str) -> str:
        """The inverse of :meth:`portable`, for this installation."""
        if PACKAGE_PLACEHOLDER not in text:  # most recorded files: no regular expression
            return text
        return re.sub(re.escape(PACKAGE_PLACEHOLDER) + r"(?=/|$)", str(self.root), text)


#: This installation: the parent of ``chip_build``.
PACKAGE = PackageFolder(Path(__file__).resolve().parents[2])


def compile_key(
    *, source: bytes, commands: Sequence[Sequence[str]], identity: str, version: str
) -> str:
    """The first-phase key of a compile: everything known before running the compiler, with
    pypto-build's folder in the command lines named by :data:`PACKAGE_PLACEHOLDER`."""
    document = {
        "commands": [[PACKAGE.portable(arg) for arg in argv] for argv in commands],
        "format": FORMAT,
        "identity": identity,
        "source_sha256": hashlib.sha256(source).hexdigest(),
        "version": version,
    }
    return digest_json(document)


def digest_json(document: object) -> str:
    """The SHA-256 of ``document`` as canonical JSON (sorted keys, no spaces, ASCII)."""
    canonical = json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()
