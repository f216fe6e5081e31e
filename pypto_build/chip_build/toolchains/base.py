"""What every toolchain provides, and running the commands it plans.

A toolchain does not run anything itself: for one :class:`CompileJob` it returns a
:class:`CompilePlan`, the exact command lines that turn the source into one artifact inside a
staging directory. Keeping planning pure is what lets the compile cache key on the command line
(planned against a placeholder staging directory and a placeholder tree, so no temporary path and
no tree location enters the key), lets a compiler launcher be prepended uniformly, and lets tests
assert argv lists without compiling.

Commands run in the source's own directory with the source named by its file name. The compiler
then records only that name in a symbol table, never the absolute path of the tree, so the same
sources give the same binaries wherever the tree lives. Debug information also records the
compiler's working directory; a toolchain that emits it maps the tree to ``.``
(``-fdebug-prefix-map``), the one place a plan names the tree.
"""

from __future__ import annotations

import enum
import posixpath
import shlex
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Protocol

from pypto_build.chip_build.chips import Chip, CoreType
from pypto_build.errors import PyptoError

#: The staging directory as it appears in a command line that only serves as a cache key.
STAGE_PLACEHOLDER = Path("@stage")
#: The tree as it appears in a command line that only serves as a cache key (absolute, so it is
#: spelled the same however a toolchain normalizes the tree's path).
TREE_PLACEHOLDER = Path("/@tree")


class UnitKind(enum.StrEnum):
    """What a compile job builds; decides the flags and the artifact's suffix."""

    KERNEL = "kernel"
    ORCHESTRATION = "orchestration"


class ToolchainError(PyptoError, RuntimeError):
    """A toolchain cannot be found or cannot run (as opposed to a compiler rejecting a source)."""


class ToolkitNotFoundError(ToolchainError):
    """No CANN toolkit was found; the message lists every place that was searched."""


@dataclass(frozen=True)
class CompileJob:
    """One source of a rendered tree to compile."""

    #: The chip directory of the rendered tree (``<out>/<chip>``).
    tree: Path
    #: The source, relative to ``tree`` (``next_levels/<name>/kernels/aiv/<kernel>.cpp``).
    source: PurePosixPath
    kind: UnitKind
    chip: Chip
    #: The core type of a kernel; None for an orchestration.
    core_type: CoreType | None = None
    #: Include directories the sub-build's ``kernel_config.py`` gives the source
    #: (``extra_include_dirs``), relative to the tree: the headers that travel with the tree.
    include_dirs: tuple[PurePosixPath, ...] = ()
    #: Whether the kernel is one side of a MIX kernel: its sub-build lists a kernel of the same
    #: name for the other core type (a cluster runs the AIC side and the AIV side together).
    mix: bool = False

    def __post_init__(self) -> None:
        if (self.kind is UnitKind.KERNEL) != (self.core_type is not None):
            raise ValueError(f"{self.source}: a kernel job needs a core type, nothing else has one")

    @property
    def source_path(self) -> Path:
        """The source on disk."""
        return self.tree / self.source

    @property
    def subbuild(self) -> PurePosixPath:
        """The sub-build the source belongs to, relative to the tree: ``next_levels/<name>``
        (kernels sit at ``kernels/<core type>/<name>.cpp``, orchestrations at
        ``orchestration/<name>.cpp`` below it)."""
        return self.source.parents[2 if self.kind is UnitKind.KERNEL else 1]

    def artifact(self, suffix: str, binary_dir: str = "") -> PurePosixPath:
        """Where the artifact goes, relative to the tree: beside the source, or under the
        sub-build's ``binary_dir`` at the source's place (``sim/kernels/aiv/<name>.so``)."""
        # Spelled out as text, one path built: a build asks for several of these per source.
        source = self.source.as_posix()
        artifact = source[: len(source) - len(self.source.suffix)] + suffix
        if binary_dir:
            parts = artifact.split("/")
            depth = 3 if self.kind is UnitKind.KERNEL else 2
            artifact = "/".join([*parts[:-depth], binary_dir, *parts[-depth:]])
        return PurePosixPath(artifact)

    def include_flags(self) -> tuple[str, ...]:
        """``-I`` flags for :attr:`include_dirs`, relative to the source's directory, where the
        compiler runs: no location of the tree enters a command line."""
        # Both anchored at "/" (paths in the tree never climb out of it): relpath then never
        # asks for the working directory.
        parent = f"/{self.source.parent.as_posix()}"
        return tuple(
            f"-I{posixpath.relpath(f'/{d.as_posix()}', parent)}" for d in self.include_dirs
        )


@dataclass(frozen=True)
class Step:
    """One command of a plan."""

    argv: tuple[str, ...]
    #: Whether this is a compiler invocation; only those get the compiler launcher (a launcher
    #: such as ccache does not cache links).
    compiles: bool


@dataclass(frozen=True)
class CompilePlan:
    """The commands that build one job's artifact inside a staging directory."""

    steps: tuple[Step, ...]
    #: The artifact the last step writes, inside the staging directory.
    output: Path
    #: The make-style dependency file the compile step writes (``-MD -MF``), inside staging.
    depfile: Path
    #: Files the steps read that the dependency file does not list, which the cache must
    #: check as it checks the headers there: sources a multi-source compile builds besides
    #: the job's own (GCC writes one dependency file per source, each over the last) and the
    #: headers they include. Absolute, outside the tree.
    inputs: tuple[Path, ...] = ()

    def key_argv(self) -> tuple[tuple[str, ...], ...]:
        """Every step's command line; the form the cache hashes (planned against
        :data:`STAGE_PLACEHOLDER`)."""
        return tuple(step.argv for step in self.steps)


class Toolchain(Protocol):
    """A way to turn kernel and orchestration sources into binaries (``cann`` or ``sim``)."""

    @property
    def name(self) -> str:
        """The toolchain's settings name: ``cann`` or ``sim``."""
        ...

    @property
    def version(self) -> str:
        """The version recorded in the manifest (CANN toolkit version, host compiler version)."""
        ...

    def identity(self) -> str:
        """Everything about the compilers that can change an output, for the cache key."""
        ...

    def artifact_suffix(self, kind: UnitKind) -> str:
        """The suffix of the artifact built for a job of ``kind`` (``.o``, ``.so``)."""
        ...

    @property
    def binary_dir(self) -> str:
        """Where this toolchain's binaries go inside a sub-build: ``""`` for beside their
        sources, where PyPTO's runtime looks for binaries of its own platform (``cann``), or a
        folder of their own (``sim``: binaries for our simulator, which PyPTO's runtime must
        neither load nor delete)."""
        ...

    def platform(self, chip: Chip) -> str:
        """The PyPTO platform a tree built by this toolchain for ``chip`` runs on (``a2a3``,
        ``a5``, or their host simulations ``a2a3sim``, ``a5sim``)."""
        ...

    def binary_context(self, chip: Chip) -> Mapping[str, object] | None:
        """The ``cache/binary_context.json`` PyPTO's runtime checks before it reuses the binaries
        beside a sub-build's sources (the platform, runtime and PTO-ISA revisions they were built
        for), or None when this toolchain builds no binaries for PyPTO's runtime."""
        ...

    def layout(self, chip: Chip) -> Mapping[str, object]:
        """What besides the compilers and the files a compile reads decides the commands of
        ``chip``'s jobs (the folders and source lists a CANN runtime's ``build_config.py``
        gives), as JSON values: a build that would change nothing compares it with the last
        build's, since no compile runs to notice a change."""
        ...

    def plan(self, job: CompileJob, stage: Path) -> CompilePlan:
        """The commands that build ``job``'s artifact inside ``stage``; run in the source's
        directory (:func:`run_plan`)."""
        ...

    def warnings(self) -> tuple[str, ...]:
        """What a build with this toolchain warns of before it starts (a CANN build whose
        runtime or PTO-ISA revision is unknown: PyPTO's runtime will not reuse its binaries)."""
        ...

    def wheel_platform(self) -> str:
        """The platform part of the tag of a wheel shipping this toolchain's binaries when the
        ``platform-tag`` setting is ``auto`` (this host's for host shared objects, ``any`` for
        device binaries; :mod:`.wheel_platform`)."""
        ...

    def wheel_platform_problem(self, platform: str) -> str | None:
        """Why a wheel of this toolchain's binaries cannot be tagged with the explicit
        ``platform`` the ``platform-tag`` setting names, or None when it can."""
        ...


def debug_prefix_map(tree: Path) -> str:
    """The flag that records ``tree`` as ``.`` in debug information. A compiler run in a folder
    of the tree records that folder as the kernel reports it (symbolic links resolved), so the
    tree is mapped in the same spelling."""
    return f"-fdebug-prefix-map={tree.resolve()}=."


def dependency_flags(depfile: Path, target: str) -> tuple[str, ...]:
    """Flags that make a GCC-compatible compiler (g++, ccec) list every file it read.

    The target is fixed to the artifact's file name (``-MT``) so the dependency file never
    names a staging path, and a compiler launcher can cache it unchanged.
    """
    return ("-MD", "-MF", str(depfile), "-MT", target)


class CompileError(PyptoError):
    """A compiler (or linker) rejected a source; carries everything needed to act on it."""

    def __init__(self, source: str, argv: Sequence[str], returncode: int, output: str) -> None:
        self.source = source
        self.argv = tuple(argv)
        self.returncode = returncode
        self.output = output
        super().__init__(self.render())

    def render(self) -> str:
        """The message: which source failed, the exact command, and what the compiler said."""
        output = self.output.rstrip("\n")
        text = (
            f"error: compiling {self.source} failed (exit status {self.returncode})\n"
            f"command: {shlex.join(self.argv)}"
        )
        return f"{text}\n{output}" if output else text


@dataclass(frozen=True)
class ToolRun:
    """What a finished tool command left: its exit status and its output (stdout and stderr
    interleaved, as a terminal would show them)."""

    returncode: int
    output: str


def run_tool(argv: Sequence[str], cwd: Path | None = None) -> ToolRun:
    """Run a compiler or other tool to completion, without input, capturing its output.

    A command that cannot be started (missing, not executable) raises :class:`ToolchainError`;
    the exit status is the caller's to judge.
    """
    try:
        completed = subprocess.run(
            argv,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            check=False,
        )
    except OSError as exc:
        raise ToolchainError(f"cannot run {shlex.join(argv)}: {exc}") from exc
    return ToolRun(completed.returncode, completed.stdout.decode("utf-8", errors="replace"))


def run_plan(plan: CompilePlan, job: CompileJob, launcher: Sequence[str] = ()) -> str:
    """Run ``plan`` for ``job`` and return the commands' combined output (warnings).

    Every compile step is prefixed with ``launcher`` (``ccache``, ``sccache``). A failing step
    raises :class:`CompileError`; a command that cannot be started raises
    :class:`ToolchainError`. Steps run in the source's directory.
    """
    outputs: list[str] = []
    for step in plan.steps:
        argv = (*launcher, *step.argv) if step.compiles else step.argv
        run = run_tool(argv, cwd=job.source_path.parent)
        if run.returncode != 0:
            raise CompileError(job.source.as_posix(), argv, run.returncode, run.output)
        outputs.append(run.output)
    return "".join(outputs)


def first_output_line(argv: Sequence[str]) -> str:
    """The first line a tool prints for ``argv`` (a ``--version`` probe).

    Raises :class:`ToolchainError` when it cannot run or fails, since a compiler whose version
    cannot be read cannot be identified for the cache either.
    """
    run = run_tool(argv)
    text = run.output.strip()
    if run.returncode != 0 or not text:
        raise ToolchainError(
            f"{shlex.join(argv)} failed (exit status {run.returncode}): {text or 'no output'}"
        )
    return text.splitlines()[0].strip()
