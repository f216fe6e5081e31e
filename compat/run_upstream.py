"""Load a chip tree built by pypto-build with PyPTO's own L3 loader and run it on upstream's
runtime (simpler), then compare every output with the expected arrays.

    python run_upstream.py --pypto-source PYPTO --tree TREE --platform a2a3sim \\
        --inputs inputs.npz --expected expected.npz [--ranks P] [--rtol R] [--atol A] \\
        [--out outputs.npz]

Run it with an interpreter in which simpler and torch are installed (simpler from its checkout,
as simpler's README says; for the sim platforms, simpler compiles kernels with ``g++-15``, which
must be on PATH). ``PYPTO`` is a PyPTO source checkout. When the interpreter imports PyPTO with
its compiled core (pypto built and installed, docs/runtime-compatibility.md), that PyPTO runs,
``DistributedCompiledProgram.from_dir`` included; otherwise the checkout's Python runtime is
used as is, with stand-ins only for its compiled core (``pypto_core_standins.py``). ``TREE``
is one chip's tree (``orchestration/host_orch.py``, ``next_levels/<name>/kernel_config.py``,
``distributed_meta.json``); npz names are the HOST orchestrator's parameter names.

What runs is PyPTO's code: ``distributed_runner.execute_distributed`` (the one-shot path of
``DistributedCompiledProgram.__call__``) on the program ``from_dir`` builds from the tree's
``distributed_meta.json`` (without the compiled core, on a stand-in with the attributes it
reads, from this script's reader of the file, with the same checks). ``--out`` saves every
tensor parameter as the run left it, for a comparison with another runtime's. Before that,
every stage is tried on its own with PyPTO's functions, so one run reports every stage that
refuses the tree: the metadata, ``compile_and_assemble`` of each ``next_levels/<name>``,
``_load_orch_entry`` and the keyword call ``_make_dispatch_orchestration`` makes of the entry.

The tree is copied into a scratch folder first (PyPTO writes ``cache/``, compiled sidecars and
``dfx_outputs/`` into it); ``--in-place`` runs it where it is.

Exit status: 0 every expected array matches; 1 an output differs; 2 the tree could not be
loaded or run, or the environment or the arrays are wrong (upstream's error and traceback are
printed).
"""

from __future__ import annotations

import argparse
import dataclasses
import faulthandler
import importlib
import inspect
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

EXIT_OK = 0
EXIT_MISMATCH = 1
EXIT_FAILED = 2

#: The revisions the trees target (docs/runtime-compatibility.md).
REFERENCE_REVISIONS = {"simpler": "6ebaf77", "pypto": "e2d0f78", "pto-isa": "cd4a3d3"}
PLATFORMS = ("a2a3sim", "a5sim", "a2a3", "a5")

# --- distributed_meta.json, as pypto e2d0f78 reads it -----------------------------------------
# DistributedCompiledProgram.from_dir (python/pypto/ir/distributed_compiled_program.py:279-346)
# through _load_meta and _param_info_from_dict (ir/compiled_program.py:214-424) and
# _distributed_config_from_dict (distributed_compiled_program.py:119-160).

META_FILENAME = "distributed_meta.json"
META_SCHEMA = 2
#: ``ParamDirection.__members__``.
DIRECTIONS = ("In", "Out", "InOut")
#: ``BackendType.__members__``; absent means Ascend910B.
BACKEND_TYPES = ("Ascend910B", "Ascend950")
#: ``str(DataType)`` of every named DataType (``include/pypto/core/dtype.h``, ``ToString``).
DATATYPE_STRINGS = frozenset(
    {
        "bool", "int4", "int8", "int16", "int32", "int64", "uint4", "uint8", "uint16", "uint32",
        "uint64", "fp4", "fp8e4m3fn", "fp8e5m2", "fp8e8m0", "fp16", "fp32", "bfloat16", "hf4",
        "hf8", "index", "task_id",
    }
)  # fmt: skip
#: The DataType strings a NumPy array can carry (``_DATATYPE_TO_TORCH`` for the others).
NUMPY_DTYPES: dict[str, np.dtype[Any]] = {
    name: np.dtype(numpy_name)
    for name, numpy_name in (
        ("bool", "bool"), ("int8", "int8"), ("int16", "int16"), ("int32", "int32"),
        ("int64", "int64"), ("index", "int64"), ("uint8", "uint8"), ("uint16", "uint16"),
        ("uint32", "uint32"), ("uint64", "uint64"), ("fp16", "float16"), ("fp32", "float32"),
    )
}  # fmt: skip
#: The fields of ``DistributedConfig``.
CONFIG_FIELDS = ("device_ids", "num_sub_workers", "runtime", "aicpu_thread_num")


class MetaError(ValueError):
    """``distributed_meta.json`` is missing or not what ``from_dir`` accepts."""


@dataclasses.dataclass(frozen=True)
class ParamInfo:
    """One HOST-orchestrator parameter (pypto ``_ParamInfo``; ``name`` is the ``tensors`` key)."""

    name: str
    direction: str
    shape: tuple[int, ...] | None
    dtype: str

    def describe(self) -> str:
        shape = "scalar" if self.shape is None else f"{self.dtype}{list(self.shape)}"
        return f"{self.name} {self.direction} {shape}"


@dataclasses.dataclass
class DistributedConfig:
    """Stand-in for pypto's ``DistributedConfig``: the four fields, the same value checks."""

    device_ids: list[int] = dataclasses.field(default_factory=lambda: [0])
    num_sub_workers: int = 0
    runtime: str = "tensormap_and_ringbuffer"
    aicpu_thread_num: int = 0

    def __post_init__(self) -> None:
        if not self.device_ids:
            raise ValueError("DistributedConfig.device_ids must not be empty")
        if any(d < 0 for d in self.device_ids):
            raise ValueError(
                "DistributedConfig.device_ids must be non-negative device indices, "
                f"got {self.device_ids}"
            )
        if len(set(self.device_ids)) != len(self.device_ids):
            raise ValueError(
                f"DistributedConfig.device_ids must be distinct, got {self.device_ids}"
            )
        if self.num_sub_workers < 0:
            raise ValueError(
                "DistributedConfig.num_sub_workers must be non-negative, "
                f"got {self.num_sub_workers}"
            )
        if self.aicpu_thread_num < 0 or self.aicpu_thread_num == 1:
            raise ValueError(
                "DistributedConfig.aicpu_thread_num must be 0 (architecture default) or at "
                f"least 2, got {self.aicpu_thread_num}"
            )


@dataclasses.dataclass(frozen=True)
class Meta:
    """What ``from_dir`` reads from ``distributed_meta.json``."""

    params: tuple[ParamInfo, ...]
    num_return_types: int
    platform: str | None
    backend_type: str
    config: DistributedConfig


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def read_meta(tree: Path) -> Meta:
    """Read ``tree/distributed_meta.json`` with ``from_dir``'s checks; :class:`MetaError` with
    its message otherwise."""
    path = tree.resolve() / META_FILENAME
    if not path.exists():
        raise MetaError(
            f"{path} not found — cannot reconstruct a distributed program from this directory. "
            "It predates the L3 replay feature or is not a distributed (L3+) build. Recompile "
            "via ir.compile() to refresh."
        )

    def bad(detail: str) -> MetaError:
        return MetaError(
            f"Invalid {META_FILENAME} in {path}: {detail}. The metadata was written by a "
            "different pypto version or hand-edited — recompile via ir.compile() to refresh."
        )

    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise bad(f"cannot be read ({exc})") from exc
    except ValueError as exc:
        raise bad(f"not valid JSON ({exc})") from exc
    if not isinstance(meta, dict):
        raise bad(f"expected a JSON object, got {type(meta).__name__}")
    if meta.get("schema") != META_SCHEMA:
        raise MetaError(
            f"Incompatible {META_FILENAME} schema {meta.get('schema')!r} (expected "
            f"{META_SCHEMA}) in {path}. The metadata was written by a different pypto version "
            "— recompile via ir.compile() to refresh."
        )
    raw_params = meta.get("params")
    if not isinstance(raw_params, list):
        raise bad(f"'params' must be a list, got {type(raw_params).__name__}")
    params = []
    for i, entry in enumerate(raw_params):
        if not isinstance(entry, dict):
            raise bad(f"params[{i}] must be an object, got {type(entry).__name__}")
        try:
            params.append(_param_info(entry))
        except (KeyError, ValueError) as exc:
            raise bad(f"params[{i}] is malformed ({exc})") from exc
    num_return_types = meta.get("num_return_types", 0)
    if not _is_int(num_return_types) or num_return_types < 0:
        raise bad(f"'num_return_types' must be a non-negative integer, got {num_return_types!r}")
    backend = meta.get("backend_type", "Ascend910B")
    if backend not in BACKEND_TYPES:
        raise bad(f"'backend_type' must be one of {sorted(BACKEND_TYPES)}, got {backend!r}")
    platform = meta.get("platform")
    if platform is not None and not isinstance(platform, str):
        raise bad(f"'platform' must be a string or absent, got {type(platform).__name__}")
    return Meta(tuple(params), num_return_types, platform, backend, _config(meta, bad))


def _param_info(entry: Mapping[str, object]) -> ParamInfo:
    name = entry["name"]
    if not isinstance(name, str):
        raise ValueError(f"'name' must be a string, got {name!r}")
    direction = entry["direction"]
    if direction not in DIRECTIONS:
        raise ValueError(f"'direction' must be one of {sorted(DIRECTIONS)}, got {direction!r}")
    shape = entry["shape"]
    if shape is not None and not (isinstance(shape, list) and all(_is_int(d) for d in shape)):
        raise ValueError(f"'shape' must be null or a list of ints, got {shape!r}")
    dtype = entry["dtype"]
    if not isinstance(dtype, str):
        raise ValueError(f"'dtype' must be a string, got {dtype!r}")
    if dtype not in DATATYPE_STRINGS:
        raise ValueError(f"Unknown DataType string {dtype!r}; known: {sorted(DATATYPE_STRINGS)}")
    return ParamInfo(name, str(direction), None if shape is None else tuple(shape), dtype)


def _config(meta: Mapping[str, object], bad: Callable[[str], MetaError]) -> DistributedConfig:
    raw = meta.get("distributed_config", {})
    if not isinstance(raw, dict):
        raise bad(f"'distributed_config' must be an object, got {type(raw).__name__}")
    unknown = sorted(set(raw) - set(CONFIG_FIELDS))
    if unknown:
        raise bad(
            f"'distributed_config' has unknown key(s) {unknown}; known: {sorted(CONFIG_FIELDS)}"
        )
    ids = raw.get("device_ids", [0])
    if not (isinstance(ids, list) and all(_is_int(d) for d in ids)):
        raise bad(f"'distributed_config.device_ids' must be a list of ints, got {ids!r}")
    for key in ("num_sub_workers", "aicpu_thread_num"):
        if key in raw and not _is_int(raw[key]):
            raise bad(f"'distributed_config.{key}' must be an int, got {raw[key]!r}")
    if "runtime" in raw and not isinstance(raw["runtime"], str):
        raise bad(f"'distributed_config.runtime' must be a string, got {raw['runtime']!r}")
    try:
        return DistributedConfig(**raw)
    except ValueError as exc:
        raise bad(f"'distributed_config' is invalid ({exc})") from exc


class TreeProgram:
    """Stand-in for ``DistributedCompiledProgram.from_dir(tree)``: exactly the attributes
    ``execute_distributed`` and ``_assemble_chip_callables`` read (``output_dir``,
    ``platform``, ``_distributed_config``, ``_get_metadata()``)."""

    def __init__(self, tree: Path, platform: str, meta: Meta, config: DistributedConfig) -> None:
        self._output_dir = tree.resolve()
        self._platform = platform
        self._distributed_config = config
        self._params = list(meta.params)
        self._output_indices = [i for i, p in enumerate(meta.params) if p.direction == "Out"]
        self._return_types: list[Any] = [None] * meta.num_return_types

    @property
    def output_dir(self) -> Path:
        return self._output_dir

    @property
    def platform(self) -> str:
        return self._platform

    def _get_metadata(self) -> tuple[list[ParamInfo], list[int], list[Any]]:
        return self._params, self._output_indices, self._return_types


# --- inputs and outputs -----------------------------------------------------------------------


class ArrayError(ValueError):
    """The npz arrays do not fit the program's parameters."""


def load_npz(path: Path) -> dict[str, npt.NDArray[Any]]:
    with np.load(path, allow_pickle=False) as archive:
        return {name: archive[name] for name in archive.files}


def check_arrays(
    params: Sequence[ParamInfo],
    inputs: Mapping[str, npt.NDArray[Any]],
    expected: Mapping[str, npt.NDArray[Any]],
) -> None:
    """Every ``In``/``InOut`` parameter given, every array named after a tensor parameter with
    its exact shape and dtype; :class:`ArrayError` naming the first that is not."""
    by_name = {p.name: p for p in params}
    for what, arrays in (("input", inputs), ("expected array", expected)):
        for name, array in arrays.items():
            param = by_name.get(name)
            if param is None:
                raise ArrayError(
                    f"{what} '{name}' is not a parameter of the program (parameters: "
                    f"{', '.join(by_name)})"
                )
            _check_array(what, param, array)
    for param in params:
        if param.shape is None:
            raise ArrayError(
                f"parameter '{param.name}' is a scalar: PyPTO's one-shot execute_distributed "
                "takes host torch.Tensor arguments only"
            )
        if param.direction != "Out" and param.name not in inputs:
            raise ArrayError(f"no input for {param.direction} parameter '{param.name}'")


def _check_array(what: str, param: ParamInfo, array: npt.NDArray[Any]) -> None:
    want = NUMPY_DTYPES.get(param.dtype)
    if want is None:
        raise ArrayError(f"parameter '{param.name}' is {param.dtype}, which NumPy cannot hold")
    if param.shape is not None and (array.dtype != want or array.shape != param.shape):
        raise ArrayError(
            f"{what} '{param.name}' is {array.dtype}{list(array.shape)}; "
            f"{META_FILENAME} says {param.dtype}{list(param.shape)} ({want})"
        )


@dataclasses.dataclass(frozen=True)
class Comparison:
    name: str
    matches: bool
    detail: str


def compare(
    name: str, got: npt.NDArray[Any], want: npt.NDArray[Any], *, rtol: float, atol: float
) -> Comparison:
    """``got`` against ``want``: exact for integers and with zero tolerances, else
    ``|got - want| <= atol + rtol * |want|`` elementwise (NaN never matches)."""
    label = f"{want.dtype}{list(want.shape)}"
    if got.shape != want.shape or got.dtype != want.dtype:
        return Comparison(name, False, f"is {got.dtype}{list(got.shape)}, expected {label}")
    if want.dtype.kind in "fc" and (rtol or atol):
        close = np.isclose(got, want, rtol=rtol, atol=atol, equal_nan=False)
    else:
        close = got == want
    wrong = np.argwhere(~close)
    if not wrong.size:
        how = "equal" if not (rtol or atol) else f"within rtol={rtol} atol={atol}"
        return Comparison(name, True, f"{label}, {how}")
    first = tuple(int(i) for i in wrong[0])
    detail = (
        f"{label}: {len(wrong)} of {want.size} elements differ; first at {list(first)}: "
        f"{got[first]!r}, expected {want[first]!r}"
    )
    if want.dtype.kind in "fiu":
        delta = np.abs(got.astype(np.float64) - want.astype(np.float64))
        detail += f"; max |difference| {float(np.nanmax(delta)):g}"
    return Comparison(name, False, detail)


# --- reporting --------------------------------------------------------------------------------


class Report:
    """The stage lines on stdout, in order: ``[ ok ]``, ``[FAIL]`` (with the error and its
    traceback, indented), ``[note]``."""

    def __init__(self) -> None:
        self.failures: list[str] = []
        self.stage = "start"

    def line(self, tag: str, stage: str, text: str) -> None:
        print(f"[{tag}] {stage}: {text}", flush=True)

    def ok(self, stage: str, text: str) -> None:
        self.line(" ok ", stage, text)

    def note(self, stage: str, text: str) -> None:
        self.line("note", stage, text)

    def fail(self, stage: str, error: BaseException | str) -> None:
        self.failures.append(stage)
        if isinstance(error, BaseException):
            self.line("FAIL", stage, f"{type(error).__name__}: {error}")
            text = "".join(traceback.format_exception(error))
            print(_indent(text), flush=True)
        else:
            self.line("FAIL", stage, error)

    @contextmanager
    def running(self, stage: str) -> Iterator[None]:
        """Name the stage the watchdog reports if it fires."""
        previous, self.stage = self.stage, stage
        try:
            yield
        finally:
            self.stage = previous


def _indent(text: str) -> str:
    return "\n".join(f"       | {line}" for line in text.rstrip("\n").splitlines())


def _start_watchdog(report: Report, seconds: float) -> None:
    """After ``seconds``, print the stage and every thread's stack, then exit 2."""

    def expire() -> None:
        print(f"[FAIL] {report.stage}: timed out after {seconds:g} s", flush=True)
        faulthandler.dump_traceback(file=sys.stdout, all_threads=True)
        sys.stdout.flush()
        os._exit(EXIT_FAILED)

    timer = threading.Timer(seconds, expire)
    timer.daemon = True
    timer.start()


# --- the run ----------------------------------------------------------------------------------


@dataclasses.dataclass
class Upstream:
    """The upstream modules the run uses."""

    torch: Any
    device_runner: Any
    distributed_runner: Any
    #: PyPTO's ``DistributedCompiledProgram`` and ``DistributedConfig`` when its compiled core
    #: imports; None on the stand-ins.
    compiled_program: Any = None
    distributed_config: Any = None


def _git_revision(folder: Path) -> str:
    def git(*args: str) -> str:
        result = subprocess.run(
            ["git", "-C", str(folder), *args], capture_output=True, text=True, check=False
        )
        return result.stdout.strip() if result.returncode == 0 else ""

    head = git("rev-parse", "HEAD")
    if not head:
        return "(not a git checkout)"
    return head + (" (dirty)" if git("status", "--porcelain=v1") else "")


def _reference_note(name: str, revision: str) -> str:
    reference = REFERENCE_REVISIONS[name]
    if revision.startswith(reference):
        return f"{revision} (the reference revision)"
    return f"{revision} (NOT the reference revision {reference})"


def load_upstream(report: Report, pypto_source: Path, platform: str) -> Upstream | None:
    """Import torch, simpler and PyPTO's runtime (with the core stand-ins); print what was
    found. None, after a ``[FAIL]`` line, when something is missing."""
    stage = "environment"
    modules: dict[str, Any] = {}
    for name in ("torch", "simpler.task_interface", "simpler.worker", "simpler_setup"):
        try:
            modules[name] = importlib.import_module(name)
        except Exception as exc:  # an ImportError, or whatever a broken install raises
            report.fail(
                stage,
                f"{sys.executable} cannot import {name} ({type(exc).__name__}: {exc}); run this "
                "script with the interpreter in which simpler (from its checkout, as its README "
                "says) and torch are installed",
            )
            return None
    if platform.endswith("sim") and shutil.which("g++-15") is None:
        report.fail(
            stage,
            "g++-15 is not on PATH: simpler compiles sim kernels with the command g++-15 (a "
            "shim of that name that runs the host g++ will do; put its folder first on PATH)",
        )
        return None
    compiled = _real_pypto()
    if compiled is None:
        standins = Path(__file__).resolve().parent / "pypto_core_standins.py"
        try:
            sys.path.insert(0, str(standins.parent))
            core = importlib.import_module("pypto_core_standins")
            core.install(pypto_source / "python")
        except Exception as exc:
            report.fail("import PyPTO's runtime", exc)
            return None
        finally:
            sys.path.remove(str(standins.parent))
        how = f"stand-ins for {', '.join(core.STANDIN_MODULES)} ({standins.name})"
    else:
        how = f"its compiled core, from {Path(compiled.__file__).parent.parent}"
    try:
        device_runner = importlib.import_module("pypto.runtime.device_runner")
        distributed_runner = importlib.import_module("pypto.runtime.distributed_runner")
    except Exception as exc:
        report.fail("import PyPTO's runtime", exc)
        return None
    torch = modules["torch"]
    report.ok(
        stage, f"{sys.executable} (Python {sys.version.split()[0]}, torch {torch.__version__})"
    )
    report.ok(
        "pypto", f"{pypto_source} at {_reference_note('pypto', _git_revision(pypto_source))}; {how}"
    )
    try:
        pto_isa_root = Path(device_runner.ensure_pto_isa_root())
        compiler = device_runner.KernelCompiler(platform=platform)
        project_root = Path(compiler.project_root)
        context = device_runner._current_binary_context(
            compiler,
            platform=platform,
            runtime_name="tensormap_and_ringbuffer",
            pto_isa_root=str(pto_isa_root),
        )
    except Exception as exc:
        report.fail("simpler", exc)
        return None
    report.ok(
        "simpler", f"{project_root} at {_reference_note('simpler', _git_revision(project_root))}"
    )
    report.ok(
        "pto-isa", f"{pto_isa_root} at {_reference_note('pto-isa', _git_revision(pto_isa_root))}"
    )
    if context is None:
        report.note(
            "binary_context.json",
            "a revision is unknown (a dirty checkout?): PyPTO rebuilds every binary and "
            "records no stamp",
        )
    else:
        stamp = json.dumps(dataclasses.asdict(context), sort_keys=True)
        report.note(
            "binary_context.json",
            f"binaries shipped in next_levels/<name>/ are reused here only under the stamp {stamp}",
        )
    if compiled is None:
        return Upstream(modules["torch"], device_runner, distributed_runner)
    return Upstream(
        torch,
        device_runner,
        distributed_runner,
        compiled.DistributedCompiledProgram,
        compiled.DistributedConfig,
    )


def _real_pypto() -> Any:
    """PyPTO's ``pypto.ir.distributed_compiled_program`` when PyPTO imports with its compiled
    core (installed in this interpreter), else None."""
    try:
        importlib.import_module("pypto.pypto_core")
        return importlib.import_module("pypto.ir.distributed_compiled_program")
    except Exception:  # not installed, or a checkout without its core: the stand-ins serve
        for name in [n for n in sys.modules if n == "pypto" or n.startswith("pypto.")]:
            del sys.modules[name]
        return None


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {
        path.relative_to(folder).as_posix(): path.read_bytes()
        for path in sorted(folder.rglob("*"))
        if path.is_file() and "__pycache__" not in path.parts
    }


def _changes(before: Mapping[str, bytes], after: Mapping[str, bytes]) -> str:
    added = sorted(set(after) - set(before))
    removed = sorted(set(before) - set(after))
    changed = sorted(k for k in set(before) & set(after) if before[k] != after[k])
    parts = [
        f"{label} {', '.join(names)}"
        for label, names in (("wrote", added), ("rewrote", changed), ("deleted", removed))
        if names
    ]
    return "; ".join(parts) if parts else "left the sub-build unchanged"


def chip_dirs(tree: Path) -> list[Path]:
    """The ``next_levels/<name>`` folders ``_assemble_chip_callables`` takes, in its order."""
    folder = tree / "next_levels"
    if not folder.is_dir():
        return []
    return [d for d in sorted(folder.iterdir()) if (d / "kernel_config.py").exists()]


def preflight(
    report: Report, upstream: Upstream, tree: Path, platform: str
) -> tuple[Meta | None, bool]:
    """Each stage of the load on its own, with PyPTO's functions: every refusal is reported,
    not only the first. Returns the metadata (None if refused) and whether all stages passed."""
    passed = True
    with report.running(META_FILENAME):
        try:
            meta: Meta | None = read_meta(tree)
        except MetaError as exc:
            report.fail(META_FILENAME, str(exc))
            meta, passed = None, False
    if meta is not None:
        params = ", ".join(p.describe() for p in meta.params)
        report.ok(
            META_FILENAME,
            f"{params}; device_ids {meta.config.device_ids}, platform {meta.platform}, "
            f"backend {meta.backend_type}",
        )
        if meta.platform is not None and meta.platform != platform:
            report.note(META_FILENAME, f"records platform {meta.platform}; running {platform}")

    dirs = chip_dirs(tree)
    if not dirs:
        report.fail(
            "next_levels",
            f"no next_levels/<name>/kernel_config.py under {tree}: _assemble_chip_callables "
            "finds no chip-level task",
        )
        passed = False
    runtimes: dict[str, str] = {}
    for chip_dir in dirs:
        stage = f"compile_and_assemble(next_levels/{chip_dir.name})"
        stamp = chip_dir / "cache" / "binary_context.json"
        shipped = "ships cache/binary_context.json" if stamp.exists() else "ships no stamp"
        before = _snapshot(chip_dir)
        with report.running(stage):
            try:
                _, runtime, _ = upstream.device_runner.compile_and_assemble(chip_dir, platform)
            except Exception as exc:
                report.fail(stage, exc)
                passed = False
                continue
        runtimes[chip_dir.name] = runtime
        report.ok(
            stage, f"runtime {runtime}; {shipped}; PyPTO {_changes(before, _snapshot(chip_dir))}"
        )
    if len(set(runtimes.values())) > 1:
        report.fail("next_levels", f"the sub-builds name different runtimes: {runtimes}")
        passed = False

    stage = "_load_orch_entry(orchestration/host_orch.py)"
    with report.running(stage):
        try:
            entry, alloc = upstream.distributed_runner._load_orch_entry(tree)
        except Exception as exc:
            report.fail(stage, exc)
            return meta, False
    try:
        signature = inspect.signature(entry)
        # The call _make_dispatch_orchestration makes (distributed_runner.py:1183-1192).
        signature.bind(
            None, None, None, tensors={}, callables={}, sub_ids={}, _keep=[], world_size=1
        )
    except TypeError as exc:
        report.fail(
            stage,
            f"entry {entry.__name__}{signature} cannot take PyPTO's call entry_fn(orch, _args, "
            f"config, *, tensors, callables, sub_ids, _keep, world_size): {exc}",
        )
        return meta, False
    alloc_text = "_alloc_intermediates" if alloc is not None else "no _alloc_intermediates"
    report.ok(stage, f"entry {entry.__name__}{signature}; {alloc_text}")
    source = (tree / "orchestration" / "host_orch.py").read_text(encoding="utf-8")
    named = sorted(set(re.findall(r"""callables\[\s*["']([^"']+)["']\s*\]""", source)))
    missing = [name for name in named if name not in {d.name for d in dirs}]
    if missing:
        report.note(stage, f"callables it names without a next_levels/<name>/ sub-build: {missing}")
    return meta, passed


def run(args: argparse.Namespace, report: Report) -> int:
    upstream = load_upstream(report, args.pypto_source.resolve(), args.platform)
    if upstream is None:
        return EXIT_FAILED
    try:
        inputs = load_npz(args.inputs)
        expected = load_npz(args.expected)
    except (OSError, ValueError) as exc:
        report.fail("arrays", exc)
        return EXIT_FAILED
    with tempfile.TemporaryDirectory(prefix="pypto-compat-") as scratch:
        tree = args.tree.resolve()
        if not args.in_place:
            copy = (args.work_dir.resolve() if args.work_dir else Path(scratch)) / "tree"
            if copy.exists():
                shutil.rmtree(copy)
            shutil.copytree(tree, copy, symlinks=True, ignore=shutil.ignore_patterns("__pycache__"))
            report.note("tree", f"{tree} copied to {copy} (PyPTO writes into the tree it loads)")
            tree = copy
        meta, passed = preflight(report, upstream, tree, args.platform)
        if meta is None or not passed:
            report.line("FAIL", "result", f"the tree is refused ({', '.join(report.failures)})")
            return EXIT_FAILED
        return _execute(args, report, upstream, tree, meta, inputs, expected)


def _execute(
    args: argparse.Namespace,
    report: Report,
    upstream: Upstream,
    tree: Path,
    meta: Meta,
    inputs: Mapping[str, npt.NDArray[Any]],
    expected: Mapping[str, npt.NDArray[Any]],
) -> int:
    try:
        check_arrays(meta.params, inputs, expected)
    except ArrayError as exc:
        report.fail("arrays", str(exc))
        return EXIT_FAILED
    config = meta.config
    if args.ranks is not None:
        config = dataclasses.replace(config, device_ids=list(range(args.ranks)))
    program: Any
    if upstream.compiled_program is None:
        program = TreeProgram(tree, args.platform, meta, config)
    else:
        stage = "DistributedCompiledProgram.from_dir"
        try:
            program = upstream.compiled_program.from_dir(
                tree,
                platform=args.platform,
                distributed_config=upstream.distributed_config(**dataclasses.asdict(config)),
            )
        except Exception as exc:
            report.fail(stage, exc)
            return EXIT_FAILED
        report.ok(stage, f"{program!r} on devices {config.device_ids}")
    torch = upstream.torch
    tensors = []
    for param in meta.params:
        assert param.shape is not None  # check_arrays refused scalars
        given = inputs.get(param.name)
        if given is None:
            array = np.zeros(param.shape, dtype=NUMPY_DTYPES[param.dtype])
        else:
            array = np.array(given, copy=True, order="C")
        tensors.append(torch.from_numpy(array))
    ranks = len(config.device_ids)
    stage = f"execute_distributed on {ranks} ranks"
    with report.running(stage):
        try:
            upstream.distributed_runner.execute_distributed(program, tensors, None)
        except Exception as exc:
            report.fail(stage, exc)
            report.line("FAIL", "result", f"the run failed ({stage})")
            return EXIT_FAILED
    report.ok(stage, f"PyPTO's one-shot run returned on {args.platform}")
    names = [p.name for p in meta.params]
    if args.out is not None:
        arrays: dict[str, Any] = {name: t.numpy() for name, t in zip(names, tensors, strict=True)}
        with args.out.open("wb") as stream:
            np.savez(stream, **arrays)
        report.note("outputs", f"every tensor parameter saved in {args.out}")
    mismatches = 0
    for name, want in expected.items():
        got = tensors[names.index(name)].numpy()
        result = compare(name, got, want, rtol=args.rtol, atol=args.atol)
        mismatches += not result.matches
        report.line(" ok " if result.matches else "DIFF", f"output {name}", result.detail)
    if mismatches:
        report.line("FAIL", "result", f"{mismatches} of {len(expected)} outputs differ")
        return EXIT_MISMATCH
    report.line("PASS", "result", f"{len(expected)} outputs equal the expected arrays")
    return EXIT_OK


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="run_upstream.py",
        description=(__doc__ or "").split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--pypto-source", type=Path, required=True, help="a PyPTO checkout")
    parser.add_argument("--tree", type=Path, required=True, help="one chip's tree")
    parser.add_argument("--platform", required=True, choices=PLATFORMS)
    parser.add_argument("--inputs", type=Path, required=True, help="npz: In/InOut tensors")
    parser.add_argument("--expected", type=Path, required=True, help="npz: expected outputs")
    parser.add_argument(
        "--ranks",
        type=int,
        help="run on ranks 0..P-1 (default: distributed_meta.json's device_ids)",
    )
    parser.add_argument("--out", type=Path, help="npz: save every tensor parameter after the run")
    parser.add_argument("--rtol", type=float, default=0.0, help="relative tolerance (default 0)")
    parser.add_argument("--atol", type=float, default=0.0, help="absolute tolerance (default 0)")
    parser.add_argument(
        "--work-dir", type=Path, help="copy the tree into DIR/tree and keep it (default: a temp)"
    )
    parser.add_argument(
        "--in-place", action="store_true", help="load the tree where it is (PyPTO writes in it)"
    )
    parser.add_argument(
        "--timeout", type=float, default=900.0, help="give up after SECONDS (default 900)"
    )
    args = parser.parse_args(argv)
    if args.ranks is not None and args.ranks < 1:
        parser.error("--ranks must be at least 1")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    # Leave the upstream checkouts as they are: no __pycache__ folders in PyPTO's python/.
    sys.dont_write_bytecode = True
    report = Report()
    print(
        f"upstream check of {args.tree} on {args.platform} "
        f"(inputs {args.inputs.name}, expected {args.expected.name})",
        flush=True,
    )
    _start_watchdog(report, args.timeout)
    try:
        return run(args, report)
    except Exception as exc:  # a bug here must not exit 1, which means "outputs differ"
        report.fail(f"internal error in {Path(__file__).name} ({report.stage})", exc)
        return EXIT_FAILED


if __name__ == "__main__":
    sys.exit(main())
