"""Compiling rendered chip trees: every kernel and orchestration, in parallel, through the cache.

The engine's entry point, which lowers and renders before calling :func:`compile_tree` for each
chip, is :func:`pypto_build.chip_build.build.build`.

:func:`compile_tree` finds the sources through the tree's ``kernel_config.py`` files (the
kernels and the orchestration each one lists), compiles each with the toolchain — through the
compile cache when one is given, with the compiler launcher in front — and places every binary
where its toolchain keeps them (beside the source for CANN, where PyPTO's runtime looks; in the
sub-build's ``sim/`` folder for the simulator). Then it records the binaries in their
``kernel_config.py``, the binary context PyPTO checks (``cache/binary_context.json``), the
platform in ``distributed_meta.json`` and the toolchain in the chip's ``manifest.json``, so the
tree describes itself.

Compiler processes run on a thread pool (the work is in the subprocesses). Results are sorted by
source, never by completion order, so the log, the configs and the manifest are the same for any
job count. The per-chip log lives outside the shipped tree, in ``<out>/.pypto-build-logs/``: the
tree must stay a pure function of the inputs, and a log is not.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shlex
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath
from typing import TextIO

from pypto_build.chip_build.chips import CoreType, get_chip
from pypto_build.chip_build.compile_cache.cache import CompileCache
from pypto_build.chip_build.compile_cache.dependencies import FileDigests
from pypto_build.chip_build.compile_cache.depfile_parser import read_depfile
from pypto_build.chip_build.compile_cache.entry_publisher import Built
from pypto_build.chip_build.compile_cache.keys import compile_key
from pypto_build.chip_build.distributed_meta import with_platform
from pypto_build.chip_build.kernel_config import KernelConfig
from pypto_build.chip_build.kernel_config_reader import read_kernel_config
from pypto_build.chip_build.kernel_config_writer import render_config
from pypto_build.chip_build.source_origins import source_origins, with_origin
from pypto_build.chip_build.toolchains.base import (
    STAGE_PLACEHOLDER,
    TREE_PLACEHOLDER,
    CompileError,
    CompileJob,
    CompilePlan,
    Toolchain,
    ToolchainError,
    UnitKind,
    run_plan,
)
from pypto_build.chip_build.toolchains.launcher import Launcher
from pypto_build.chip_build.tree_manifest import write_manifest
from pypto_build.errors import PyptoError
from pypto_build.files import atomic_write_bytes, atomic_write_text, read_regular, read_text
from pypto_build.tree_layout import (
    KERNEL_CONFIG,
    LOG_DIR,
    SIM_BINARIES,
    SUB_BUILD_CONFIGS,
    SubBuildLayout,
    TreeLayout,
)

#: Suffixes and folders of the binaries any toolchain builds; a binary of another toolchain is
#: stale once this one has built the source.
_BINARY_SUFFIXES = (".o", ".so")
_BINARY_DIRS = ("", SIM_BINARIES)


@dataclass(frozen=True)
class CompileResult:
    """One compiled source."""

    job: CompileJob
    #: The binary, relative to the tree (:meth:`CompileJob.artifact`).
    artifact: PurePosixPath
    #: Whether the binary came from the cache.
    cached: bool
    #: The plan as the cache keys it (against a placeholder staging directory); the log shows it.
    plan: CompilePlan
    #: What the compiler printed (warnings); empty for a cache hit.
    output: str
    #: Whether the cache hit came from the cache's remote tier.
    remote: bool
    #: The binary's SHA-256 and size, as placed in the tree (the manifest lists them).
    binary: tuple[str, int]
    #: The source's SHA-256 and size when it was read for the cache key (None without a
    #: cache): the manifest lists it without reading it again.
    source: tuple[str, int] | None


@dataclass(frozen=True)
class CompileReport:
    """The outcome of :func:`compile_tree`."""

    chip: str
    toolchain: str
    toolchain_version: str
    #: Sorted by source path.
    results: tuple[CompileResult, ...]
    log: Path

    @property
    def compiled(self) -> int:
        """Sources actually compiled (cache misses, or every source without a cache)."""
        return sum(not result.cached for result in self.results)

    @property
    def cache_hits(self) -> int:
        return sum(result.cached for result in self.results)

    @property
    def remote_hits(self) -> int:
        """The cache hits served by the remote tier."""
        return sum(result.remote for result in self.results)


class BuildFailed(PyptoError):
    """Some sources did not compile; the message holds every failure and the log's path."""

    def __init__(self, chip: str, failures: Sequence[str], total: int, log: Path) -> None:
        self.chip = chip
        self.failures = tuple(failures)
        self.total = total
        self.log = log
        body = "\n\n".join(self.failures)
        super().__init__(
            f"{len(self.failures)} of {total} compiles failed for chip {chip}:\n{body}\n"
            f"full log: {log}"
        )

    def moved(self, log_dir: Path) -> BuildFailed:
        """The same failure, its log now in ``log_dir``."""
        return BuildFailed(self.chip, self.failures, self.total, log_dir / self.log.name)


def default_log_path(tree: Path, chip: str) -> Path:
    """``<out>/.pypto-build-logs/<chip>.log`` for the chip tree ``<out>/<chip>``."""
    return tree.parent / LOG_DIR / f"{chip}.log"


def _read_configs(tree: Path) -> dict[PurePosixPath, KernelConfig]:
    """Every ``kernel_config.py`` under ``tree`` by its sub-build folder (relative to the
    tree), sorted by path. Read once per build: the file of a sub-build of a hundred kernels
    takes milliseconds to parse."""
    paths = sorted(tree.rglob(KERNEL_CONFIG), key=lambda path: path.as_posix())
    return {
        PurePosixPath(path.parent.relative_to(tree).as_posix()): read_kernel_config(path)
        for path in paths
    }


def find_jobs(tree: Path, chip: str) -> list[CompileJob]:
    """Every source the ``kernel_config.py`` files under ``tree`` list, sorted by path."""
    return _jobs_of(tree, chip, _read_configs(tree))


def _jobs_of(
    tree: Path, chip: str, configs: Mapping[PurePosixPath, KernelConfig]
) -> list[CompileJob]:
    catalog_chip = get_chip(chip)
    jobs: list[CompileJob] = []
    for root, config in configs.items():
        if config.orchestration is not None:
            source = root / config.orchestration.source
            jobs.append(CompileJob(tree, source, UnitKind.ORCHESTRATION, catalog_chip))
        core_types: dict[str, set[CoreType]] = {}
        for kernel in config.kernels:
            core_types.setdefault(kernel.name, set()).add(kernel.core_type)
        jobs += [
            CompileJob(
                tree,
                root / kernel.source,
                UnitKind.KERNEL,
                catalog_chip,
                kernel.core_type,
                tuple(root / directory for directory in kernel.include_dirs),
                mix=len(core_types[kernel.name]) > 1,
            )
            for kernel in config.kernels
        ]
    return sorted(jobs, key=lambda job: job.source.as_posix())


class _Progress:
    """One self-overwriting status line on a terminal (nothing when not on one), and, when
    ``verbose`` is given, each compile's command lines and wall time there, printed above the
    status line."""

    def __init__(self, total: int, stream: TextIO | None, verbose: TextIO | None) -> None:
        self._total = total
        self._stream = stream if stream is not None and stream.isatty() else None
        self._verbose = verbose
        self._started = 0
        self._line = ""
        self._lock = threading.Lock()

    def start(self, job: CompileJob) -> None:
        if self._stream is None:
            return
        with self._lock:
            self._started += 1
            self._line = f"[{self._started}/{self._total}] compiling {job.source.as_posix()}"
            self._stream.write(f"\r{self._line}\x1b[K")
            self._stream.flush()

    def done(self, text: str) -> None:
        """Print ``text`` (lines) for the verbose reader, keeping the status line below it."""
        if self._verbose is None:
            return
        with self._lock:
            if self._stream is not None and self._line:
                self._stream.write("\r\x1b[K")
                self._stream.flush()
            self._verbose.write(text)
            self._verbose.flush()
            if self._stream is not None and self._line:
                self._stream.write(self._line)
                self._stream.flush()

    def close(self) -> None:
        if self._stream is not None and self._started:
            self._stream.write("\r\x1b[K")
            self._stream.flush()


class _Folders:
    """The folders of one build's binaries, each made and listed once: the binaries of a
    sub-build's kernels share a few folders, and asking the file system again for each binary
    costs more than the link that puts a cached binary there."""

    def __init__(self) -> None:
        self._made: set[str] = set()
        self._listed: dict[str, frozenset[str]] = {}

    def make(self, folder: Path) -> None:
        name = str(folder)
        if name not in self._made:
            folder.mkdir(parents=True, exist_ok=True)
            self._made.add(name)

    def names(self, folder: str) -> frozenset[str]:
        """The names in ``folder`` when this build first asked (none when it is missing);
        what the build itself adds later is not listed."""
        listed = self._listed.get(folder)
        if listed is None:
            try:
                listed = frozenset(os.listdir(folder))
            except OSError:
                listed = frozenset()
            self._listed[folder] = listed
        return listed


@dataclass(frozen=True)
class _Compiler:
    """Compiles one job: the toolchain, cache and launcher of one :func:`compile_tree` call."""

    toolchain: Toolchain
    identity: str
    cache: CompileCache | None
    launcher: Launcher | None
    #: What this build found the files the cache checks to be: each header once per build.
    files: FileDigests
    folders: _Folders

    def __call__(self, job: CompileJob) -> CompileResult:
        suffix = self.toolchain.artifact_suffix(job.kind)
        artifact = job.artifact(suffix, self.toolchain.binary_dir)
        output = job.tree / artifact
        # A tree that a plan names is mapped out of the binary (debug prefix map): the same
        # sources hit the cache wherever their tree lives.
        key_plan = self.toolchain.plan(replace(job, tree=TREE_PLACEHOLDER), STAGE_PLACEHOLDER)
        outputs: list[str] = []

        def build(stage: Path) -> Built:
            plan = self.toolchain.plan(job, stage)
            launcher = () if self.launcher is None else self.launcher.argv
            outputs.append(run_plan(plan, job, launcher))
            if self.cache is None:  # the headers only matter to a cache entry
                return Built(plan.output, ())
            # A plan that compiles several sources in one command (a CANN orchestration with the
            # runtime's sources) names them, and what they include, itself: the depfile lists
            # the headers of the last source only.
            headers = read_depfile(plan.depfile, job.source_path.parent)
            return Built(plan.output, (*headers, *plan.inputs))

        if self.cache is None:
            with tempfile.TemporaryDirectory(prefix="pypto-build-") as stage:
                data = read_regular(build(Path(stage)).artifact)
            cached = remote = placed = False
            source = digest = None
        else:
            code = self.files.read(job.source_path)
            source = (hashlib.sha256(code).hexdigest(), len(code))
            key = compile_key(
                source=code,
                commands=key_plan.key_argv(),
                identity=self.identity,
                version=self.toolchain.version,
            )
            self.folders.make(output.parent)
            fetched = self.cache.fetch_or_build(key, job.tree, build, self.files, output)
            data, cached, remote, placed = fetched.data, fetched.hit, fetched.remote, fetched.placed
            digest = fetched.sha256  # a hit's hash, verified: not computed twice
        _remove_binaries(job, keep=artifact, folders=self.folders)
        if not placed:
            atomic_write_bytes(output, data)
        binary = (digest or hashlib.sha256(data).hexdigest(), len(data))
        output_text = "".join(outputs)
        return CompileResult(job, artifact, cached, key_plan, output_text, remote, binary, source)


def _run_all(
    run: Callable[[CompileJob], CompileResult | str], jobs: Sequence[CompileJob], workers: int
) -> list[CompileResult | str]:
    """``run`` of every job, in the order of ``jobs``, ``workers`` at a time, started in
    :func:`start_order`. One worker runs them in this thread: a pool would only hand each job
    over and back."""
    if workers <= 1:
        return [run(job) for job in jobs]
    with ThreadPoolExecutor(max_workers=workers) as pool:
        started = {id(job): pool.submit(run, job) for job in start_order(jobs)}
        return [started[id(job)].result() for job in jobs]


def start_order(jobs: Sequence[CompileJob]) -> list[CompileJob]:
    """``jobs`` in the order parallel compiles start them: the longest expected first, so that
    no long compile starts last and runs alone while the other workers idle. Orchestrations
    (the largest sources, with the most headers) come first, then larger sources (one that
    cannot be read is expected to fail quickly); the sort is stable."""

    def expected_length(job: CompileJob) -> tuple[bool, int]:
        try:
            size = job.source_path.stat().st_size
        except OSError:
            size = 0
        return (job.kind is not UnitKind.ORCHESTRATION, -size)

    return sorted(jobs, key=expected_length)


def _remove_binaries(
    job: CompileJob, keep: PurePosixPath | None, folders: _Folders | None = None
) -> None:
    """Delete every binary any toolchain would build for ``job`` except ``keep``: those
    ``folders`` listed, when given (a binary of another toolchain is in the tree before the
    build starts), else whatever is there."""
    kept = None if keep is None else keep.as_posix()
    for binary_dir in _BINARY_DIRS:
        stem = job.artifact("", binary_dir).as_posix()
        folder, _, name = f"{job.tree}/{stem}".rpartition("/")
        present = None if folders is None else folders.names(folder)
        for suffix in _BINARY_SUFFIXES:
            if (present is None or name + suffix in present) and stem + suffix != kept:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(f"{folder}/{name}{suffix}")


def compile_tree(
    tree: Path,
    chip: str,
    toolchain: Toolchain,
    *,
    jobs: int = 1,
    cache: CompileCache | None = None,
    launcher: Launcher | None = None,
    log: Path | None = None,
    progress: TextIO | None = sys.stderr,
    source_root: Path | None = None,
    verbose: TextIO | None = None,
) -> CompileReport:
    """Compile every source of the chip tree ``tree`` (``<out>/<chip>``) with ``toolchain``.

    ``jobs`` compiler processes run at once. On success the binaries sit where the toolchain
    keeps them, the ``kernel_config.py`` entries name them, each sub-build has the toolchain's
    binary context (or none), ``distributed_meta.json`` names the platform, and
    ``manifest.json`` is rewritten with the toolchain's name and version (keeping its recorded
    inputs). If any source fails, every
    failure is collected, no binary of a failed source is left in the tree, the configs and the
    manifest are untouched, and :class:`BuildFailed` is raised. Either way the log
    (default :func:`default_log_path`) records every command and the compilers' output. A
    failure in a copied external kernel names the user's file (under ``source_root``, the
    project) rather than the tree's copy (:mod:`.source_origins`). ``progress`` gets a status
    line when it is a terminal; ``verbose``, when given, each compile's command lines (as the
    log has them) and wall time as it finishes.
    """
    log = default_log_path(tree, chip) if log is None else log
    catalog_chip = get_chip(chip)
    configs = _read_configs(tree)
    all_jobs = _jobs_of(tree, chip, configs)
    identity = toolchain.identity()
    compiler = _Compiler(toolchain, identity, cache, launcher, FileDigests(), _Folders())
    status = _Progress(len(all_jobs), progress, verbose)
    origins = source_origins(tree, source_root)

    def run(job: CompileJob) -> CompileResult | str:
        status.start(job)
        started = time.perf_counter()
        outcome = compile_one(job)
        if verbose is not None:
            seconds = time.perf_counter() - started
            head, *rest = _job_lines(job, outcome, launcher)
            title = f"pypto-build: {chip}: {head.removeprefix('== ')} ({seconds:.2f} s)"
            status.done("".join(f"{line}\n" for line in (title, *rest)))
        return outcome

    def compile_one(job: CompileJob) -> CompileResult | str:
        try:
            return compiler(job)
        except CompileError as exc:
            return with_origin(exc.render(), job.source, origins.get(job.source))
        except (ToolchainError, OSError) as exc:
            return f"error: compiling {job.source.as_posix()}: {exc}"

    try:
        outcomes = _run_all(run, all_jobs, jobs)
    finally:
        status.close()
    results = tuple(outcome for outcome in outcomes if isinstance(outcome, CompileResult))
    failures = [
        (job, outcome)
        for job, outcome in zip(all_jobs, outcomes, strict=True)
        if isinstance(outcome, str)
    ]
    header = f"chip {chip}, toolchain {toolchain.name} {toolchain.version} ({identity})"
    _write_log(log, header, all_jobs, outcomes, launcher)
    if failures:
        for job, _ in failures:
            _remove_binaries(job, keep=None)
        raise BuildFailed(chip, [message for _, message in failures], len(all_jobs), log)
    _record_binaries(tree, configs, results)
    context = toolchain.binary_context(catalog_chip)
    _write_binary_contexts(tree, context)
    meta = TreeLayout(tree).distributed_meta
    if meta.is_file():
        with_platform(meta, toolchain.platform(catalog_chip))
    write_manifest(
        tree,
        chip=chip,
        toolchain=toolchain.name,
        toolchain_version=toolchain.version,
        inputs=_recorded_inputs(tree),
        binary_context=context,
        written=_known_files(results),
    )
    return CompileReport(chip, toolchain.name, toolchain.version, results, log)


def _record_binaries(
    tree: Path, configs: Mapping[PurePosixPath, KernelConfig], results: Sequence[CompileResult]
) -> None:
    """Write each kernel's and orchestration's binary into the ``kernel_config.py`` that lists
    it (``configs``: those files as read before compiling)."""
    kernels: dict[PurePosixPath, dict[str, str]] = {}
    orchestrations: dict[PurePosixPath, str] = {}
    for result in results:
        root = result.job.subbuild
        binary = result.artifact.relative_to(root).as_posix()
        if result.job.kind is UnitKind.KERNEL:
            source = result.job.source.relative_to(root).as_posix()
            kernels.setdefault(root, {})[source] = binary
        else:
            orchestrations[root] = binary
    for root in sorted(kernels.keys() | orchestrations.keys()):
        path = tree / root / KERNEL_CONFIG
        text = render_config(
            configs[root].with_binaries(kernels.get(root, {}), orchestrations.get(root))
        )
        if read_text(path) != text:
            atomic_write_text(path, text)


def _write_binary_contexts(tree: Path, context: Mapping[str, object] | None) -> None:
    """Give every sub-build of ``tree`` the ``cache/binary_context.json`` of ``context``
    (PyPTO's format: sorted keys, two-space indent), or remove a stale one when the toolchain
    built nothing for PyPTO's runtime."""
    text = None if context is None else json.dumps(context, indent=2, sort_keys=True) + "\n"
    for config in sorted(tree.glob(SUB_BUILD_CONFIGS)):
        path = SubBuildLayout(config.parent).binary_context
        if text is None:
            path.unlink(missing_ok=True)
            if path.parent.is_dir() and not any(path.parent.iterdir()):
                path.parent.rmdir()
        elif not path.is_file() or read_text(path) != text:
            atomic_write_text(path, text)


def _known_files(results: Sequence[CompileResult]) -> dict[str, tuple[str, int]]:
    """The SHA-256 and size of the files of the tree this build placed or read: every binary,
    and the sources read for their cache keys."""
    known = {result.artifact.as_posix(): result.binary for result in results}
    for result in results:
        if result.source is not None:
            known[result.job.source.as_posix()] = result.source
    return known


def _recorded_inputs(tree: Path) -> dict[str, str]:
    """The inputs the renderer recorded in the tree's manifest (none without a manifest)."""
    try:
        document = json.loads(read_text(TreeLayout(tree).manifest))
    except (OSError, ValueError):
        return {}
    inputs = document.get("inputs") if isinstance(document, dict) else None
    if not isinstance(inputs, dict):
        return {}
    return {str(name): str(digest) for name, digest in sorted(inputs.items())}


def _write_log(
    log: Path,
    header: str,
    jobs: Sequence[CompileJob],
    outcomes: Sequence[CompileResult | str],
    launcher: Launcher | None,
) -> None:
    lines = [f"pypto-build compile log: {header}"]
    for job, outcome in zip(jobs, outcomes, strict=True):
        lines += _job_lines(job, outcome, launcher)
    atomic_write_text(log, "\n".join(lines) + "\n")


def _job_lines(
    job: CompileJob, outcome: CompileResult | str, launcher: Launcher | None
) -> list[str]:
    """The log's lines for one compile: ``== <source>: <what happened>``, each command line
    run in the source's folder, and what the compiler printed."""
    source = job.source.as_posix()
    if isinstance(outcome, str):
        return [f"== {source}: FAILED", outcome.rstrip("\n")]
    state = "compiled"
    if outcome.cached:
        state = "cache hit (remote)" if outcome.remote else "cache hit"
    lines = [f"== {source}: {state} -> {outcome.artifact.as_posix()}"]
    prefix = () if launcher is None else launcher.argv
    directory = job.source.parent.as_posix()
    for step in outcome.plan.steps:
        argv = (*prefix, *step.argv) if step.compiles else step.argv
        lines.append(f"$ (cd {directory} && {shlex.join(argv)})")
    if outcome.output:
        lines.append(outcome.output.rstrip("\n"))
    return lines
