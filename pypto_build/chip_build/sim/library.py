"""Building the simulation runtime's shared library from the C++ sources shipped in this package.

``pypto-build`` is a pure-Python wheel: the runtime's sources travel as package data
(``runtime/*.cpp``, ``runtime/*.h``) and are compiled with the host compiler on first use. The
result goes through the content-addressed compile cache, keyed by the sources, the command line
and the compiler's identity, with every header it includes recorded as a dependency; so a new
compiler, a changed source or a changed ABI header builds a new library, and anything else reuses
the cached one. The cache entry is the library's only lasting copy, so ``pypto-build cache stats``
counts it and ``cache prune`` evicts it like any compiled kernel; the dynamic loader, which needs
a file, gets a private copy that lives only until the library is loaded.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from pypto_build.builtins import include_dir
from pypto_build.chip_build.compile_cache.cache import CompileCache
from pypto_build.chip_build.compile_cache.entry_publisher import Built
from pypto_build.chip_build.compile_cache.keys import compile_key
from pypto_build.chip_build.toolchains import SimToolchain
from pypto_build.chip_build.toolchains.base import STAGE_PLACEHOLDER, run_tool
from pypto_build.chip_build.toolchains.sim import SIM_API_INCLUDE_DIR
from pypto_build.errors import PyptoError

#: The runtime's C++ sources and private headers.
RUNTIME_DIR = Path(__file__).resolve().parent / "runtime"
LIBRARY_NAME = "libpypto_sim_runtime.so"

_FLAGS = ("-shared", "-fPIC", "-O2", "-std=c++17", "-pthread", "-Wall", "-Wextra")


class RuntimeBuildError(PyptoError, RuntimeError):
    """The host compiler rejected the runtime's sources (an unsupported compiler)."""


def runtime_sources() -> tuple[Path, ...]:
    """The runtime's translation units, sorted."""
    return tuple(sorted(RUNTIME_DIR.glob("*.cpp")))


def runtime_inputs() -> tuple[Path, ...]:
    """Every file the library is built from: its sources, its headers, the ABI headers and the
    orchestration API it implements."""
    own = sorted(path for path in RUNTIME_DIR.iterdir() if path.suffix in (".cpp", ".h"))
    abi = sorted((include_dir() / "pypto_build").glob("*.h"))
    api = sorted(SIM_API_INCLUDE_DIR.glob("*.h"))
    return (*own, *abi, *api)


def _command(toolchain: SimToolchain, output: Path) -> tuple[str, ...]:
    """The compile-and-link command, run in :data:`RUNTIME_DIR` (sources by file name)."""
    return (
        str(toolchain.compiler),
        *_FLAGS,
        f"-I{include_dir()}",
        f"-I{SIM_API_INCLUDE_DIR}",
        f"-I{RUNTIME_DIR}",
        "-o",
        str(output),
        *(source.name for source in runtime_sources()),
        "-ldl",
    )


def _compile(toolchain: SimToolchain, stage: Path) -> Built:
    output = stage / LIBRARY_NAME
    run = run_tool(_command(toolchain, output), cwd=RUNTIME_DIR)
    if run.returncode != 0:
        raise RuntimeBuildError(
            f"building the simulation runtime with {toolchain.identity()} failed "
            f"(exit status {run.returncode}):\n{run.output}"
        )
    return Built(output, runtime_inputs())


@contextlib.contextmanager
def runtime_library(cache: CompileCache, toolchain: SimToolchain) -> Iterator[Path]:
    """The runtime library for ``toolchain``'s compiler, from ``cache`` or built into it, as a
    file that exists while the context lasts: load it inside (a loaded library needs no file)."""
    source = b"".join(
        path.name.encode() + b"\0" + path.read_bytes() + b"\0" for path in runtime_sources()
    )
    key = compile_key(
        source=source,
        commands=[_command(toolchain, STAGE_PLACEHOLDER / LIBRARY_NAME)],
        identity=toolchain.identity(),
        version=toolchain.version,
    )
    with cache.fetch_or_build_file(
        key, RUNTIME_DIR, lambda stage: _compile(toolchain, stage), LIBRARY_NAME
    ) as library:
        yield library
