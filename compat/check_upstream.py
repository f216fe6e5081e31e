"""The upstream compatibility check: build trees with pypto-build, then load and run them on
upstream's runtime with PyPTO's own loader (``run_upstream.py``) against NumPy goldens.

    python compat/check_upstream.py [--program moe_a2a|host_rail]... [--work-dir DIR]

Run it with pypto-build's interpreter (the project's venv). The programs:

* ``moe_a2a``: the sample package's wheel (``pip wheel --no-deps --no-build-isolation
  samples/moe_a2a``), installed into a scratch ``--target`` folder; its chip tree
  ``moe_a2a/_kernels/<chip>`` as installed, on the sample's NR ranks, with the inputs of
  ``samples/moe_a2a/make_inputs.py`` and the golden of ``moe_a2a/golden.py``.
* ``host_rail``: ``tests/programs/host_rail_ranked.py`` (HOST-rail all_to_all_v) built with
  ``pypto-build build --toolchain sim``, with the golden of ``tests/_support/goldens.py``.

Configuration, from the environment (or the option of the same meaning):

    PYPTO_UPSTREAM_PYTHON    --upstream-python  interpreter with simpler and torch installed
    PYPTO_UPSTREAM_PYPTO     --pypto-source     a PyPTO source checkout
    PYPTO_UPSTREAM_PATH      --path-prepend     folders put first on PATH for the upstream run
                                                (os.pathsep-separated; e.g. a g++-15 shim's)
    PYPTO_UPSTREAM_PLATFORM  --platform         a2a3sim (default), a5sim, a2a3 or a5

Exit status: 0 every program passes; 1 an output differs from its golden; 2 a tree is refused
or cannot run, a build fails, or the configuration is missing. The scratch folder is removed
after a pass and kept (its path printed) otherwise.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import importlib.util
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import traceback
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import numpy.typing as npt

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
RUNNER = HERE / "run_upstream.py"
SAMPLE = REPO / "samples" / "moe_a2a"
HOST_RAIL_PROGRAM = REPO / "tests" / "programs" / "host_rail_ranked.py"
TESTS = REPO / "tests"

EXIT_OK = 0
EXIT_MISMATCH = 1
EXIT_FAILED = 2

#: The variables that configure the check (docs/runtime-compatibility.md).
ENV_PYTHON = "PYPTO_UPSTREAM_PYTHON"
ENV_PYPTO = "PYPTO_UPSTREAM_PYPTO"
ENV_PATH = "PYPTO_UPSTREAM_PATH"
ENV_PLATFORM = "PYPTO_UPSTREAM_PLATFORM"
REQUIRED_ENV = (ENV_PYTHON, ENV_PYPTO)

#: The chip tree each platform runs.
PLATFORM_CHIPS = {"a2a3sim": "a3", "a2a3": "a3", "a5sim": "a5", "a5": "a5"}


class CheckError(RuntimeError):
    """A step before the upstream run failed (configuration, build, install)."""


@dataclasses.dataclass(frozen=True)
class Prepared:
    """A program ready for ``run_upstream.py``: its chip tree and the arrays by parameter name."""

    name: str
    tree: Path
    inputs: Path
    expected: Path
    ranks: int
    #: The HOST orchestrator both runtimes run (None: the tree's own).
    program: str | None = None
    #: An error case: the run must fail on both runtimes (and the expected arrays are empty).
    fails: bool = False


def _save(path: Path, arrays: Mapping[str, npt.NDArray[Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    # Any: savez's stub types its keywords like its own allow_pickle flag.
    named: dict[str, Any] = dict(arrays)
    with path.open("wb") as stream:
        np.savez(stream, **named)
    return path


def _run(command: Sequence[str | Path], *, env: Mapping[str, str] | None = None) -> None:
    """Run a build step quietly; :class:`CheckError` with its output if it fails."""
    words = [str(word) for word in command]
    print(f"+ {' '.join(words)}", flush=True)
    done = subprocess.run(
        words,
        env=None if env is None else dict(env),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise CheckError(f"{words[0]} exited with {done.returncode}:\n{done.stdout}")


def _load_module(name: str, path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise CheckError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _module_constant(path: Path, name: str) -> int:
    """An integer constant of a program file, read without running the file."""
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if (
            isinstance(node, ast.Assign)
            and [getattr(t, "id", None) for t in node.targets] == [name]
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, int)
        ):
            return node.value.value
    raise CheckError(f"{path}: no integer constant {name}")


def _build_env(platform: str) -> dict[str, str]:
    env = dict(os.environ)
    if platform.endswith("sim"):
        # The sim platforms compile the tree's sources with upstream's sim toolchain; the tree
        # is built with ours, whatever a CANN toolkit on this machine would make `auto` pick.
        env["PYPTO_TOOLCHAIN"] = "sim"
    return env


def prepare_moe_a2a(work: Path, platform: str) -> Prepared:
    """The sample wheel's chip tree as installed, the sample's inputs and golden."""
    dist, site = work / "dist", work / "site"
    env = _build_env(platform)
    pip = [sys.executable, "-m", "pip"]
    _run([*pip, "wheel", "--no-deps", "--no-build-isolation", SAMPLE, "-w", dist], env=env)
    wheels = sorted(dist.glob("moe_a2a-*.whl"))
    if len(wheels) != 1:
        raise CheckError(f"{dist}: expected one moe_a2a wheel, found {[w.name for w in wheels]}")
    _run([*pip, "install", "--no-deps", "--no-index", "--target", site, wheels[0]], env=env)
    tree = site / "moe_a2a" / "_kernels" / PLATFORM_CHIPS[platform]
    if not tree.is_dir():
        raise CheckError(f"{tree}: the installed wheel has no tree for this chip")
    # The sample's own script writes the inputs; it puts samples/moe_a2a/src on the path and
    # imports moe_a2a.golden, whose golden() is what a correct run leaves in the outputs.
    make_inputs = _load_module("moe_a2a_make_inputs", SAMPLE / "make_inputs.py")
    inputs = work / "inputs.npz"
    if make_inputs.main([str(inputs)]) != 0:
        raise CheckError(f"{SAMPLE / 'make_inputs.py'} failed")
    golden = make_inputs.golden
    expected = _save(work / "expected.npz", golden.golden())
    return Prepared("moe_a2a", tree, inputs, expected, int(golden.NR))


def _test_support(name: str) -> ModuleType:
    """``tests/_support/<name>.py`` (the simulator tests' goldens and sizes), imported as the
    tests import it."""
    if str(TESTS) not in sys.path:
        sys.path.insert(0, str(TESTS))
    return importlib.import_module(f"_support.{name}")


def prepare_host_rail(work: Path, platform: str) -> Prepared:
    """``tests/programs/host_rail_ranked.py`` built with the sim toolchain; its golden is the
    stage -> all_to_all_v -> consume pipeline's (``_support.goldens.pipeline_golden``)."""
    chip = PLATFORM_CHIPS[platform]
    out = work / "build"
    toolchain = "sim" if platform.endswith("sim") else "auto"
    command: list[str | Path] = [sys.executable, "-m", "pypto_build", "build", HOST_RAIL_PROGRAM]
    _run([*command, "--toolchain", toolchain, "--chip", chip, "--out", out])
    goldens = _test_support("goldens")
    sizes = _test_support("sim_programs")
    for name in ("MAX_RECV", "SIZE"):
        if _module_constant(HOST_RAIL_PROGRAM, name) != getattr(sizes, name):
            raise CheckError(
                f"{HOST_RAIL_PROGRAM}: {name} differs from tests/_support/sim_programs.py"
            )
    nr = _module_constant(HOST_RAIL_PROGRAM, "NR")
    sent = goldens.payload(nr, "fp32", offset=7)  # [nr, nr*MAX_RECV, SIZE]
    rows = sent.shape[0] * sent.shape[1]
    inputs = _save(work / "inputs.npz", {"inp": sent.reshape(rows, -1)})
    want = goldens.pipeline_golden(sent).reshape(rows, -1)
    expected = _save(work / "expected.npz", {"out": want})
    return Prepared("host_rail", out / chip, inputs, expected, nr)


# -- the corpus: the programs the suite simulates, as cases both runtimes run --------------------


def _build_tree(program: Path, work: Path, platform: str) -> Path:
    """``program`` built with ``pypto-build build`` (the sim toolchain on a sim platform) into
    ``work/build``; its chip tree."""
    chip = PLATFORM_CHIPS[platform]
    out = work / "build"
    toolchain = "sim" if platform.endswith("sim") else "auto"
    command: list[str | Path] = [sys.executable, "-m", "pypto_build", "build", program]
    _run([*command, "--toolchain", toolchain, "--chip", chip, "--out", out])
    return out / chip


def _copy_program(name: str, work: Path) -> Path:
    """``tests/programs/<name>`` and the kernels it names, copied into ``work``."""
    shutil.copytree(TESTS / "programs" / "kernels", work / "kernels", dirs_exist_ok=True)
    return Path(shutil.copy(TESTS / "programs" / name, work / name))


def prepare_two_rounds(work: Path, platform: str) -> Prepared:
    """``tests/programs/chip_two_rounds.py``: two exchanges through the same windows in one chip
    pipeline, ordered by explicit task dependencies; each round's output is its own golden."""
    tree = _build_tree(_copy_program("chip_two_rounds.py", work), work, platform)
    goldens = _test_support("goldens")
    nr, total, size = 4, 16, 64
    rows = nr * total
    first = goldens.payload(nr, "fp32", offset=3)
    second = goldens.payload(nr, "fp32", offset=2000)
    inputs = {"first": first.reshape(rows, size), "second": second.reshape(rows, size)}
    expected = {
        "out_first": goldens.pipeline_golden(first).reshape(rows, size),
        "out_second": goldens.pipeline_golden(second).reshape(rows, size),
    }
    return Prepared(
        "two_rounds",
        tree,
        _save(work / "inputs.npz", inputs),
        _save(work / "expected.npz", expected),
        nr,
    )


def prepare_subset(work: Path, platform: str) -> Prepared:
    """``tests/programs/host_subset.py``: a HOST-rail exchange in ``pld.comm_domain(devices=[0,
    2])`` of a 3-device program; device 1 takes no part."""
    tree = _build_tree(_copy_program("host_subset.py", work), work, platform)
    goldens = _test_support("goldens")
    sent = goldens.payload(3, "fp32", offset=11)[:, :8]  # [device, TOTAL, SIZE]
    out = np.zeros_like(sent)
    out[[0, 2]] = goldens.pipeline_golden(sent[[0, 2]])
    inputs = {"inp": sent.reshape(24, -1)}
    expected = {"out": out.reshape(24, -1)}
    return Prepared(
        "subset",
        tree,
        _save(work / "inputs.npz", inputs),
        _save(work / "expected.npz", expected),
        3,
    )


def _rail_case(
    name: str, nr: int, dtype: str, core_num: int, case: str
) -> Callable[[Path, str], Prepared]:
    """A CHIP-rail all_to_all_v of ``tests/_support/sim_programs.py`` (``ROUNDS`` rounds
    through one never-reset signal), with the counts and payload of golden case ``case``."""

    def prepare(work: Path, platform: str) -> Prepared:
        programs = _test_support("sim_programs")
        goldens = _test_support("goldens")
        spec = programs.ChipRail(nr, dtype, core_num, chip=PLATFORM_CHIPS[platform])
        tree = _build_tree(spec.write(work), work, platform)
        if case == "uniform":
            counts, offset = goldens.uniform_counts(nr), 0
        else:
            counts, offset = goldens.skew_counts(case, nr), goldens.salt(case, nr)
        # The same counts in both rounds: the drain copies the whole receive window, so rows
        # past a count keep what an earlier round left there.
        rounds = [counts, counts]
        sent = [goldens.payload(nr, dtype, offset + 10000 * i) for i in range(programs.ROUNDS)]
        received = [goldens.exchange(s, c) for s, c in zip(sent, rounds, strict=True)]
        inputs = {
            "inp": np.concatenate(sent).reshape(-1, programs.SIZE),
            "counts_in": np.concatenate(rounds).reshape(-1).astype(np.int32),
        }
        expected = {
            "out": np.concatenate([r.target for r in received]).reshape(-1, programs.SIZE),
            "recv_out": np.concatenate([r.recv for r in received]).reshape(-1, 1),
        }
        return Prepared(
            name,
            tree,
            _save(work / "inputs.npz", inputs),
            _save(work / "expected.npz", expected),
            nr,
        )

    return prepare


def _sample(work: Path, sample: str, program: str, platform: str) -> tuple[Path, Path, str]:
    """``samples/<sample>/src`` copied into ``work`` and ``src/<sample>/<program>`` built; the
    tree, the copy's ``src`` folder and the import name of its package."""
    project = work / sample
    shutil.copytree(REPO / "samples" / sample / "src", project / "src")
    return _build_tree(project / "src" / sample / program, work, platform), project / "src", sample


def _sample_golden(src: Path, package: str) -> ModuleType:
    """The sample's own ``golden`` module, imported from the copy of its sources."""
    sys.path.insert(0, str(src))
    try:
        return importlib.import_module(f"{package}.golden")
    finally:
        sys.path.remove(str(src))


def prepare_mc2(work: Path, platform: str) -> Prepared:
    """``samples/moe_mc2``: the fused MC2 operator in a chip orchestration without a HOST
    orchestrator, run through the HOST side its tree carries for PyPTO's loader (every rank's
    tensors stacked), against the sample's golden."""
    tree, src, package = _sample(work, "moe_mc2", "pipelines.py", platform)
    golden = _sample_golden(src, package)
    inputs = _save(work / "inputs.npz", golden.inputs())
    expected = _save(work / "expected.npz", {"out": golden.expected()})
    return Prepared("mc2", tree, inputs, expected, int(golden.RANKS), program="host_orch")


def prepare_host_sample(work: Path, platform: str) -> Prepared:
    """``samples/moe_a2a_host``: the HOST-rail sample, against its golden."""
    tree, src, package = _sample(work, "moe_a2a_host", "pipelines.py", platform)
    golden = _sample_golden(src, package)
    inputs = _save(work / "inputs.npz", golden.inputs())
    expected = _save(work / "expected.npz", golden.expected())
    return Prepared("moe_a2a_host", tree, inputs, expected, int(golden.NR))


def prepare_skbuild_sample(work: Path, platform: str) -> Prepared:
    """``samples/moe_a2a_skbuild``'s program (INT8, two AIV cores): its outputs stay in its
    windows, which PyPTO's one-shot run does not hand back, so both runtimes must only run it."""
    tree, src, package = _sample(work, "moe_a2a_skbuild", "dispatch.py", platform)
    program = src / package / "dispatch.py"
    nr = _module_constant(program, "NR")
    rows, hidden = nr * _module_constant(program, "MAX_RECV"), _module_constant(program, "HIDDEN")
    tokens = (np.arange(nr * rows * hidden) % 100).astype(np.int8).reshape(nr * rows, hidden)
    counts = (np.arange(nr * nr) % (rows // nr + 1)).astype(np.int32)
    inputs = _save(work / "inputs.npz", {"tokens": tokens, "counts": counts})
    return Prepared("moe_a2a_skbuild", tree, inputs, _save(work / "expected.npz", {}), nr)


def _upstream_style(name: str, rail: str, nr: int) -> Callable[[Path, str], Prepared]:
    """A program in upstream PyPTO's own spelling (``tests/_support/upstream_programs.py``: the
    shape of its HOST and chip-rail all_to_all_v system tests), with their golden: rank r sends
    ``NR - d`` rows to rank d, row k valued ``r*1000 + d*100 + k*10 + j % 10``."""

    def prepare(work: Path, platform: str) -> Prepared:
        programs = _test_support("upstream_programs")
        spec = programs.UpstreamStyle(rail=rail, nr=nr, chip=PLATFORM_CHIPS[platform])
        tree = _build_tree(spec.write(work), work, platform)
        m, size = programs.MAX_RECV, programs.SIZE
        sent = np.zeros((nr, nr * m, size), np.float32)
        counts = np.zeros((nr, nr, 1), np.int32)
        outputs = np.zeros_like(sent)
        recv = np.zeros((nr, nr, 1), np.int32)
        for r in range(nr):
            for d in range(nr):
                counts[r, d, 0] = recv[d, r, 0] = nr - d
                for k in range(nr - d):
                    row = r * 1000 + d * 100 + k * 10 + np.arange(size) % 10
                    sent[r, d * m + k] = outputs[d, r * m + k] = row
        inputs = {"inputs": sent, "send_counts": counts}
        expected = {"outputs": outputs, "recv_outputs": recv}
        return Prepared(
            name,
            tree,
            _save(work / "inputs.npz", inputs),
            _save(work / "expected.npz", expected),
            nr,
        )

    return prepare


def prepare_wide_launch(work: Path, platform: str) -> Prepared:
    """An error case: a chip-rail exchange launched 18 blocks wide with sync_start, within the
    a3 device's 48 AIV but beyond the 16 a host-simulation platform runs: both runtimes refuse
    the task (SIMPLER_ERROR_REQUIRE_SYNC_START_INVALID, 7)."""
    programs = _test_support("sim_programs")
    spec = programs.ChipRail(2, "fp32", 18, chip=PLATFORM_CHIPS[platform])
    tree = _build_tree(spec.write(work), work, platform)
    goldens = _test_support("goldens")
    sent = [goldens.payload(2, "fp32", 0) for _ in range(programs.ROUNDS)]
    inputs = {
        "inp": np.concatenate(sent).reshape(-1, programs.SIZE),
        "counts_in": np.ones(programs.ROUNDS * 4, np.int32),
    }
    return Prepared(
        "wide_launch",
        tree,
        _save(work / "inputs.npz", inputs),
        _save(work / "expected.npz", {}),
        2,
        fails=True,
    )


def prepare_missing_peer(work: Path, platform: str) -> Prepared:
    """An error case: ``tests/programs/chip_pipeline.py`` with its HOST orchestrator
    dispatching the pipeline to device 0 alone, so the exchange's wait for its peer's credits
    expires: the kernel fails the run on both runtimes (here with its hooks, there without)."""
    program = _copy_program("chip_pipeline.py", work)
    text = program.read_text(encoding="utf-8")
    loop = "        for r in pl.range(pld.world_size()):\n            self.chip_pipeline("
    assert loop in text
    program.write_text(
        text.replace(loop, "        for r in pl.range(1):\n            self.chip_pipeline(")
    )
    tree = _build_tree(program, work, platform)
    total = 2 * 4
    inputs = {"inp": np.ones((total, 64), np.float32)}
    return Prepared(
        "missing_peer",
        tree,
        _save(work / "inputs.npz", inputs),
        _save(work / "expected.npz", {}),
        2,
        fails=True,
    )


PROGRAMS: dict[str, Callable[[Path, str], Prepared]] = {
    "moe_a2a": prepare_moe_a2a,
    "moe_a2a_host": prepare_host_sample,
    "moe_a2a_skbuild": prepare_skbuild_sample,
    "mc2": prepare_mc2,
    "host_rail": prepare_host_rail,
    "two_rounds": prepare_two_rounds,
    "subset": prepare_subset,
    "chip_int8_p3": _rail_case("chip_int8_p3", 3, "int8", 1, "negative"),
    "chip_fp32_p5_l2": _rail_case("chip_fp32_p5_l2", 5, "fp32", 2, "uniform"),
    "chip_fp32_p2_l4": _rail_case("chip_fp32_p2_l4", 2, "fp32", 4, "uniform"),
    "upstream_host_p4": _upstream_style("upstream_host_p4", "host", 4),
    "upstream_chip_p2": _upstream_style("upstream_chip_p2", "chip", 2),
    "wide_launch": prepare_wide_launch,
    "missing_peer": prepare_missing_peer,
}


@dataclasses.dataclass(frozen=True)
class Config:
    python: Path
    pypto: Path
    path_prepend: tuple[str, ...]
    platform: str
    timeout: float


def _config(args: argparse.Namespace) -> Config:
    missing = [
        f"{variable} (or {option})"
        for variable, option, value in (
            (ENV_PYTHON, "--upstream-python", args.upstream_python),
            (ENV_PYPTO, "--pypto-source", args.pypto_source),
        )
        if not value
    ]
    if missing:
        raise CheckError(
            f"not configured: set {' and '.join(missing)}; docs/runtime-compatibility.md says how"
        )
    python, pypto = Path(args.upstream_python), Path(args.pypto_source)
    if not os.access(python, os.X_OK):
        raise CheckError(f"{ENV_PYTHON}={python}: not an executable")
    if not (pypto / "python" / "pypto" / "runtime" / "distributed_runner.py").is_file():
        raise CheckError(f"{ENV_PYPTO}={pypto}: not a PyPTO checkout")
    if args.platform not in PLATFORM_CHIPS:
        raise CheckError(f"platform {args.platform!r}: one of {', '.join(PLATFORM_CHIPS)}")
    prepend = tuple(p for p in (args.path_prepend or "").split(os.pathsep) if p)
    return Config(python, pypto, prepend, args.platform, args.timeout)


def runner_env(config: Config) -> dict[str, str]:
    """The upstream run's environment: this one without this interpreter's Python settings,
    the configured folders first on PATH."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env.pop("VIRTUAL_ENV", None)
    env["PATH"] = os.pathsep.join([*config.path_prepend, env.get("PATH", os.defpath)])
    return env


def run_upstream(config: Config, prepared: Prepared, work: Path, out: Path) -> int:
    """``run_upstream.py`` on the prepared program under the upstream interpreter, its output
    passed through and every tensor it left saved in ``out``; its exit status (2 after a
    timeout, which kills its process group)."""
    command = [
        str(config.python),
        str(RUNNER),
        "--pypto-source",
        str(config.pypto),
        "--tree",
        str(prepared.tree),
        "--platform",
        config.platform,
        "--inputs",
        str(prepared.inputs),
        "--expected",
        str(prepared.expected),
        "--ranks",
        str(prepared.ranks),
        "--work-dir",
        str(work),
        "--timeout",
        str(config.timeout),
        "--out",
        str(out),
    ]
    print(f"+ {' '.join(command)}", flush=True)
    work.mkdir(parents=True, exist_ok=True)
    process = subprocess.Popen(command, env=runner_env(config), cwd=work, start_new_session=True)
    try:
        # The runner's own watchdog fires first; this one catches a hang it cannot see.
        return process.wait(timeout=config.timeout + 60)
    except subprocess.TimeoutExpired:
        print(f"{prepared.name}: the upstream run did not finish; killing it", flush=True)
        return EXIT_FAILED
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def load_npz(path: Path) -> dict[str, npt.NDArray[Any]]:
    with np.load(path, allow_pickle=False) as archive:
        return {name: archive[name] for name in archive.files}


@dataclasses.dataclass(frozen=True)
class Outcome:
    """One runtime's run of a prepared program: its tensors, or why it failed."""

    arrays: Mapping[str, npt.NDArray[Any]] | None
    failure: str = ""

    def against(self, expected: Mapping[str, npt.NDArray[Any]]) -> str:
        """``golden`` when every expected array is equal, else what differs."""
        if self.arrays is None:
            return f"failed ({self.failure})"
        wrong = [n for n, want in expected.items() if not np.array_equal(self.arrays[n], want)]
        return "golden" if not wrong else f"differs in {', '.join(wrong)}"


def run_ours(prepared: Prepared, timeout: float) -> Outcome:
    """The prepared program on pypto-build's simulator, in this interpreter."""
    from pypto_build import sim

    try:
        result = sim.run(
            prepared.tree,
            ranks=prepared.ranks,
            inputs=load_npz(prepared.inputs),
            program=prepared.program,
            timeout=min(timeout, 20.0),
        )
    except sim.SimulationError as exc:
        codes = sorted({sim.error_name(failure.code) for failure in exc.ranks})
        return Outcome(None, ", ".join(codes))
    program = sim.SimProgram.open(prepared.tree, program=prepared.program)
    return Outcome({p.name: result[p.name] for p in program.parameters if p.is_tensor})


def differential(prepared: Prepared, ours: Outcome, upstream: Outcome) -> tuple[bool, str]:
    """Whether the two runs agree with each other and with the golden (or, for an error case,
    both fail), and the table row's text."""
    expected = load_npz(prepared.expected)
    if prepared.fails:
        agree = ours.arrays is None and upstream.arrays is None
        return agree, f"ours {ours.against({})}; upstream {upstream.against({})}"
    same = (
        ours.arrays is not None
        and upstream.arrays is not None
        and all(np.array_equal(ours.arrays[name], upstream.arrays[name]) for name in expected)
    )
    verdicts = (ours.against(expected), upstream.against(expected))
    passed = verdicts == ("golden", "golden") and same
    both = "equal" if same else "differ"
    return passed, f"ours {verdicts[0]}; upstream {verdicts[1]}; the two {both}"


def check(config: Config, names: Sequence[str], work: Path) -> int:
    """Prepare every program, run it on both runtimes; print one table row each; the worst
    exit status."""
    rows: list[tuple[str, bool, str]] = []
    worst = EXIT_OK
    for name in names:
        folder = work / name
        folder.mkdir(parents=True, exist_ok=True)
        print(f"== {name}: building with pypto-build ({sys.executable})", flush=True)
        try:
            prepared = PROGRAMS[name](folder, config.platform)
        except CheckError as exc:
            print(f"{name}: {exc}", flush=True)
            rows.append((name, False, "could not be built"))
            worst = EXIT_FAILED
            continue
        ours = run_ours(prepared, config.timeout)
        print(f"== {name}: {prepared.tree} on upstream {config.platform}", flush=True)
        out = folder / "upstream-outputs.npz"
        out.unlink(missing_ok=True)
        code = run_upstream(config, prepared, folder / "upstream", out)
        upstream = (
            Outcome(load_npz(out))
            if out.is_file()
            else Outcome(None, "refused or failed on upstream")
        )
        passed, text = differential(prepared, ours, upstream)
        text += f"; run_upstream.py exit {code}"
        rows.append((name, passed, text))
        if not passed:
            worst = max(worst, EXIT_MISMATCH if upstream.arrays is not None else EXIT_FAILED)
    print("== verdict", flush=True)
    for name, passed, text in rows:
        print(f"{name}: {'PASS' if passed else 'FAIL'} ({text})")
    return worst


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="check_upstream.py",
        description=(__doc__ or "").split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--program",
        action="append",
        choices=sorted(PROGRAMS),
        help="a program to check; repeatable (default: all)",
    )
    parser.add_argument("--upstream-python", default=os.environ.get(ENV_PYTHON))
    parser.add_argument("--pypto-source", default=os.environ.get(ENV_PYPTO))
    parser.add_argument("--path-prepend", default=os.environ.get(ENV_PATH))
    parser.add_argument("--platform", default=os.environ.get(ENV_PLATFORM) or "a2a3sim")
    parser.add_argument(
        "--work-dir", type=Path, help="scratch folder, kept (default: a temporary one)"
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=900.0,
        help="seconds one upstream run may take (default 900)",
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        config = _config(args)
    except CheckError as exc:
        print(f"check_upstream.py: {exc}", file=sys.stderr)
        return EXIT_FAILED
    work = args.work_dir or Path(tempfile.mkdtemp(prefix="pypto-upstream-check-"))
    work = work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    try:
        code = check(config, args.program or sorted(PROGRAMS), work)
    except Exception:  # a bug here must not exit 1, which means "outputs differ"
        traceback.print_exc()
        code = EXIT_FAILED
    if args.work_dir is None and code == EXIT_OK:
        shutil.rmtree(work, ignore_errors=True)
    else:
        print(f"scratch folder: {work}")
    return code


if __name__ == "__main__":
    sys.exit(main())
