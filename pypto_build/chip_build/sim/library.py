"""Building the simulation runtime's shared library from the C++ sources shipped in this package.

``pypto-build`` is a pure-Python wheel (DESIGN §8): the runtime's sources travel as package data
(``runtime/*.cpp``, ``runtime/*.h``) and are compiled with the host compiler on first use. The
result goes through the content-addressed compile cache, keyed by the sources, the command line
and the compiler's identity, with every header it includes recorded as a dependency; so a new
compiler, a changed source or a changed ABI header builds a new library, and anything else reuses
the cached one. The cache hands back bytes; the library is then published under
``<cache>/sim-runtime/`` by its own SHA-256 (atomically, so concurrent processes agree) because
the dynamic loader needs a file.
"""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

from pypto_build.builtins import include_dir
from pypto_build.chip_build.cache import Built, CompileCache, compile_key
from pypto_build.chip_build.fs import atomic_write_bytes, sha256_file
from pypto_build.chip_build.toolchains import SimToolchain, ToolchainError
from pypto_build.chip_build.toolchains.base import STAGE_PLACEHOLDER

#: The runtime's C++ sources and private headers.
RUNTIME_DIR = Path(__file__).resolve().parent / "runtime"
LIBRARY_NAME = "libpypto_sim_runtime.so"
#: Where built libraries are published, under the cache root.
PUBLISH_DIR = "sim-runtime"

_FLAGS = ("-shared", "-fPIC", "-O2", "-std=c++17", "-pthread", "-Wall", "-Wextra")


class RuntimeBuildError(RuntimeError):
    """The host compiler rejected the runtime's sources (an unsupported compiler)."""


def runtime_sources() -> tuple[Path, ...]:
    """The runtime's translation units, sorted."""
    return tuple(sorted(RUNTIME_DIR.glob("*.cpp")))


def runtime_inputs() -> tuple[Path, ...]:
    """Every file the library is built from: its sources, its headers and the ABI headers."""
    own = sorted(path for path in RUNTIME_DIR.iterdir() if path.suffix in (".cpp", ".h"))
    abi = sorted((include_dir() / "pypto_build").glob("*.h"))
    return (*own, *abi)


def _command(toolchain: SimToolchain, output: Path) -> tuple[str, ...]:
    """The compile-and-link command, run in :data:`RUNTIME_DIR` (sources by file name)."""
    return (
        str(toolchain.compiler),
        *_FLAGS,
        f"-I{include_dir()}",
        f"-I{RUNTIME_DIR}",
        "-o",
        str(output),
        *(source.name for source in runtime_sources()),
        "-ldl",
    )


def _compile(toolchain: SimToolchain, stage: Path) -> Built:
    output = stage / LIBRARY_NAME
    argv = _command(toolchain, output)
    try:
        completed = subprocess.run(
            argv,
            cwd=RUNTIME_DIR,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            check=False,
        )
    except OSError as exc:
        raise ToolchainError(f"cannot run {argv[0]}: {exc}") from exc
    if completed.returncode != 0:
        output_text = completed.stdout.decode("utf-8", errors="replace")
        raise RuntimeBuildError(
            f"building the simulation runtime with {toolchain.identity()} failed "
            f"(exit status {completed.returncode}):\n{output_text}"
        )
    return Built(output, runtime_inputs())


def build_runtime_library(cache: CompileCache, toolchain: SimToolchain) -> Path:
    """The runtime library for ``toolchain``'s compiler: from ``cache``, or built into it."""
    source = b"".join(
        path.name.encode() + b"\0" + path.read_bytes() + b"\0" for path in runtime_sources()
    )
    key = compile_key(
        source=source,
        commands=[_command(toolchain, STAGE_PLACEHOLDER / LIBRARY_NAME)],
        identity=toolchain.identity(),
        version=toolchain.version,
    )
    data = cache.fetch_or_build(key, RUNTIME_DIR, lambda stage: _compile(toolchain, stage)).data
    digest = hashlib.sha256(data).hexdigest()
    library = cache.root / PUBLISH_DIR / digest[:2] / f"{digest}.so"
    if not (library.is_file() and sha256_file(library) == digest):
        atomic_write_bytes(library, data)
    return library
