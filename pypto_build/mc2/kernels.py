"""Building the host API's program through the engine, once per process and configuration.

:func:`built_program` writes a :class:`~pypto_build.mc2.program.Mc2Program` into a folder of
this process, builds it with :func:`pypto_build.chip_build.build.build` -- the entry the hatch
hook, ``pypto-build build`` and the CMake package use -- with the ``sim`` toolchain through the
user's compile cache, and opens the tree for the simulator. A configuration is built once per
process; later launches reuse the opened tree.

What persists between processes is the compile cache, not the tree: a new process renders the
program again (a pure function of the program and pypto-build's templates) and compiles
nothing. A persistent tree folder would be served stale by any change to pypto-build's
templates or lowering that its key did not capture, and would need a lock against one process
replacing it while another runs its shared objects; the compile cache already keys on content
and publishes atomically.
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

from pypto_build.chip_build.build import build
from pypto_build.chip_build.compile_cache.cache import CompileCache
from pypto_build.chip_build.jobs import default_jobs
from pypto_build.chip_build.kernel_config_reader import read_kernel_config
from pypto_build.chip_build.toolchains import SimToolchain
from pypto_build.files import read_regular
from pypto_build.mc2.program import CHIP, ORCHESTRATION, Mc2Program
from pypto_build.sim import SimProgram
from pypto_build.store.location import default_cache_dir
from pypto_build.tree_layout import SubBuildLayout, TreeLayout

#: The file the program is written to, inside its folder.
PROGRAM_FILE = "mc2_program.py"
#: The prefix the synthesized builtin kernels' names share (``__builtin_<stem>__<dtype>``).
BUILTIN_PREFIX = "__builtin_"


@dataclass(frozen=True)
class BuiltProgram:
    """A configuration's program, built: the output folder (``<out>/<chip>`` is the tree), the
    program file it was built from, and the chip orchestration ready to run."""

    out_dir: Path
    program_file: Path
    program: SimProgram

    @property
    def tree(self) -> Path:
        """The chip tree (``<out>/a3``)."""
        return self.out_dir / CHIP

    @property
    def sub_build(self) -> Path:
        """The chip orchestration's sub-build (``next_levels/<orchestration>``)."""
        return TreeLayout(self.tree).sub_build(ORCHESTRATION).root

    def kernel_sources(self) -> dict[str, bytes]:
        """The rendered builtin kernel sources the program runs, by path relative to the
        sub-build (``kernels/aic/__builtin_bmm_rs_a2a__fp16.cpp``, and its AIV twin)."""
        config = read_kernel_config(SubBuildLayout(self.sub_build).kernel_config)
        return {
            kernel.source: read_regular(self.sub_build / kernel.source)
            for kernel in config.kernels
            if kernel.name.startswith(BUILTIN_PREFIX)
        }


_LOCK = threading.Lock()
_BUILT: dict[str, BuiltProgram] = {}
_FOLDER: list[Path] = []


def _process_folder() -> Path:
    """This process's folder for built programs, removed when the process exits."""
    if not _FOLDER:
        folder = Path(tempfile.mkdtemp(prefix="pypto-build-mc2-"))
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
        _FOLDER.append(folder)
    return _FOLDER[0]


def built_program(program: Mc2Program) -> BuiltProgram:
    """``program`` built with the ``sim`` toolchain (once per process; see the module).

    Raises what the engine raises: ``ToolchainError`` without a host C++ compiler,
    ``BuildFailed`` when a compile fails (its log is in the tree).
    """
    with _LOCK:
        found = _BUILT.get(program.digest)
        if found is not None:
            return found
        folder = _process_folder() / program.digest[:16]
        source_root = folder / "src"
        source_root.mkdir(parents=True, exist_ok=True)
        program_file = source_root / PROGRAM_FILE
        program_file.write_text(program.text, encoding="utf-8")
        out_dir = folder / "out"
        build(
            [program_file],
            chips=[CHIP],
            out_dir=out_dir,
            source_root=source_root,
            toolchain=SimToolchain.discover(),
            jobs=default_jobs(),
            cache=CompileCache(default_cache_dir()),
            progress=None,
        )
        built = BuiltProgram(
            out_dir, program_file, SimProgram.open(out_dir, chip=CHIP, program=ORCHESTRATION)
        )
        _BUILT[program.digest] = built
        return built
