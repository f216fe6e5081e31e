"""A FAKE simpler runtime tree (PyPTO's runtime, ``hw-native-sys/simpler``), for CANN builds
in tests.

:func:`make_fake_runtime` lays out the few files and folders of a simpler checkout that a CANN
build reads or names, for both platforms (``a2a3``, ``a5``): the
``tensormap_and_ringbuffer`` runtime's ``build_config.py`` (the ``BUILD_CONFIG`` literal of
simpler 6ebaf77, the reference revision), its ``runtime/``, ``common/`` and
``orchestration/`` folders with ``orchestration/common.cpp``, the shared
``src/common/...`` include folders, the onboard AICPU sources every device orchestration links
(``cache_ops.cpp``, ``device_time.cpp``) with the headers they include, the kernels' helper
folder ``simpler_setup/incore`` and the managed PTO-ISA clone ``build/pto-isa``. The sources
are placeholders: nothing compiles them.

:func:`commit_all` turns such a tree into a git checkout with one commit, as a clean simpler
checkout is, for the revision detection.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

RUNTIME = "tensormap_and_ringbuffer"
PLATFORMS = ("a2a3", "a5")

#: simpler 6ebaf77 ``src/{a2a3,a5}/runtime/tensormap_and_ringbuffer/build_config.py``.
BUILD_CONFIG = """\
BUILD_CONFIG = {
    "aicore": {
        "include_dirs": ["runtime", "common", ".."],
        "source_dirs": ["aicore", "orchestration"],
    },
    "aicpu": {
        "include_dirs": ["runtime", "common", ".."],
        "source_dirs": ["aicpu", "runtime", "orchestration"],
    },
    "host": {
        "include_dirs": ["runtime", "common", ".."],
        "source_dirs": ["host", "runtime/shared", "orchestration"],
    },
    "orchestration": {
        "include_dirs": ["runtime", "orchestration", "common", ".."],
        "source_dirs": ["orchestration"],
    },
}
"""

#: Files relative to the root, with placeholder contents (the includes are the real ones).
_FILES = {
    "src/common/platform/onboard/aicpu/cache_ops.cpp": (
        '#include <cstdint>\n#include "aicpu/cache_maintenance.h"\n'
    ),
    "src/common/platform/onboard/aicpu/device_time.cpp": '#include "aicpu/device_time.h"\n',
    "src/common/platform/include/aicpu/cache_maintenance.h": "#pragma once\n",
    "src/common/platform/include/aicpu/device_time.h": "#pragma once\n",
    "src/common/task_interface/tensor.h": "#pragma once\n",
    "simpler_setup/incore/pipe_sync.h": "#pragma once\n",
}
_PLATFORM_FILES = {
    "runtime/{runtime}/build_config.py": BUILD_CONFIG,
    "runtime/{runtime}/orchestration/common.cpp": '#include "common.h"\n#include <vector>\n',
    "runtime/{runtime}/orchestration/pto_orchestration_api.h": '#include "common.h"\n',
    "runtime/{runtime}/runtime/common.h": "#pragma once\n",
    "runtime/{runtime}/common/intrinsic.h": "#pragma once\n",
    "platform/include/common/platform_config.h": "#pragma once\n",
}


def make_fake_runtime(base: Path, *, pto_isa: bool = True) -> Path:
    """Create a FAKE simpler checkout at ``<base>/simpler`` and return its root; with
    ``pto_isa``, also its managed PTO-ISA clone ``build/pto-isa`` (just ``include/pto``)."""
    root = base / "simpler"
    files = dict(_FILES)
    for platform in PLATFORMS:
        for path, text in _PLATFORM_FILES.items():
            files[f"src/{platform}/{path.format(runtime=RUNTIME)}"] = text
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text, encoding="utf-8")
    (root / ".gitignore").write_text("build/\n", encoding="utf-8")
    if pto_isa:
        (root / "build" / "pto-isa" / "include" / "pto").mkdir(parents=True)
    return root


def _git(root: Path, *args: str) -> str:
    completed = subprocess.run(
        ["git", "-c", "user.name=test", "-c", "user.email=test@example.invalid",
         "-c", "commit.gpgsign=false", "-c", "init.defaultBranch=main", *args],
        cwd=root, capture_output=True, text=True, check=True,
    )  # fmt: skip
    return completed.stdout.strip()


def commit_all(root: Path) -> str:
    """Make ``root`` a git checkout whose one commit holds every file; its commit id."""
    _git(root, "init", "--quiet")
    _git(root, "add", "--all")
    _git(root, "commit", "--quiet", "--message", "fake tree")
    return _git(root, "rev-parse", "HEAD")
