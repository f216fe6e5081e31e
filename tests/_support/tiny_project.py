"""A one-kernel program that builds in a moment, and running ``pypto-build`` on it in a child
process: what the reliability tests (kills, concurrent builds, hostile inputs) need."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

PROGRAM = textwrap.dedent(
    """\
    import pypto.language as pl


    @pl.program
    class Tiny:
        @pl.function(type=pl.FunctionType.AIV, external_source="k.cpp")
        def k(
            self, x: pl.Tensor[[4, 4], pl.FP32], y: pl.Out[pl.Tensor[[4, 4], pl.FP32]]
        ) -> pl.Tensor[[4, 4], pl.FP32]: ...

        @pl.function(type=pl.FunctionType.Orchestration)
        def orch(
            self, x: pl.Tensor[[4, 4], pl.FP32], y: pl.Out[pl.Tensor[[4, 4], pl.FP32]]
        ) -> pl.Tensor[[4, 4], pl.FP32]:
            return self.k(x, y)
    """
)


def kernel(version: int) -> str:
    """A kernel that compiles with the sim toolchain; each version has other bytes."""
    return (
        f"// version {version}\n"
        "#include <cstdint>\n"
        'extern "C" void kernel_entry(int64_t* args) { (void)args; }\n'
    )


def write_project(folder: Path, version: int = 1) -> Path:
    """The program file (and its kernel at ``version``) in ``folder``; the program's path."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "k.cpp").write_text(kernel(version), encoding="utf-8")
    program = folder / "tiny.py"
    program.write_text(PROGRAM, encoding="utf-8")
    return program


def pypto_build(
    *argv: str, env: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """``python -m pypto_build <argv>`` in a child process, its output captured."""
    return subprocess.run(
        [sys.executable, "-m", "pypto_build", *argv],
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def build_argv(program: Path, out: Path) -> list[str]:
    """``build`` of ``program`` into ``out`` for chip a3 with the sim toolchain."""
    return ["build", str(program), "--out", str(out), "--chip", "a3", "--toolchain", "sim"]


def render_argv(program: Path, out: Path) -> list[str]:
    return ["render", str(program), "--out", str(out), "--chip", "a3"]
