"""A stand-in compiler and a source tree for the compile cache's tests (its behaviour on its
own, and what it does with damaged or hostile entries)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from pypto_build.chip_build.compile_cache.cache import CompileCache
from pypto_build.chip_build.compile_cache.entry_publisher import Built
from pypto_build.chip_build.compile_cache.keys import compile_key
from pypto_build.chip_build.compile_cache.layout import LAYOUT

KEY = compile_key(source=b"int x;", commands=[["g++", "-c"]], identity="g++ 12", version="12")


class Builder:
    """A stand-in compiler: writes ``payload`` and reports ``dependencies`` as read."""

    def __init__(self, payload: bytes, dependencies: list[Path], delay: float = 0.0) -> None:
        self.payload = payload
        self.dependencies = dependencies
        self.delay = delay
        self.calls = 0
        self._lock = threading.Lock()

    def __call__(self, stage: Path) -> Built:
        with self._lock:
            self.calls += 1
        time.sleep(self.delay)
        artifact = stage / "out.so"
        artifact.write_bytes(self.payload)
        return Built(artifact, tuple(self.dependencies))


def make_tree(root: Path) -> Path:
    """A tree with one source and one header the stand-in compiler reports as read."""
    (root / "kernels").mkdir(parents=True)
    (root / "kernels" / "k.cpp").write_text("int x;\n", encoding="utf-8")
    (root / "kernels" / "k.h").write_text("// v1\n", encoding="utf-8")
    return root


def deps(tree: Path) -> list[Path]:
    return [tree / "kernels" / "k.cpp", tree / "kernels" / "k.h"]


def entries(cache: CompileCache) -> list[Path]:
    return sorted((cache.root / LAYOUT / "entries").glob("*/*/*"))
