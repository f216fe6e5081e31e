"""Where the store lives (the compile cache and, beside it, the build records): a leaf, so that
``pypto-build cache --help`` can name the folder without loading the cache."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path


def default_cache_dir(environ: Mapping[str, str] | None = None) -> Path:
    """``$PYPTO_CACHE_DIR``, else ``${XDG_CACHE_HOME:-~/.cache}/pypto-build``, made absolute
    against the working folder now: compilers run in folders of their own and are given paths
    inside the cache (their dependency files), which a relative folder would misplace."""
    environ = os.environ if environ is None else environ
    if environ.get("PYPTO_CACHE_DIR"):
        return Path(environ["PYPTO_CACHE_DIR"]).absolute()
    base = environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return (Path(base) / "pypto-build").absolute()
