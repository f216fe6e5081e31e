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


PROGRAMS: dict[str, Callable[[Path, str], Prepared]] = {
    "moe_a2a": prepare_moe_a2a,
    "host_rail": prepare_host_rail,
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


def run_upstream(config: Config, prepared: Prepared, work: Path) -> int:
    """``run_upstream.py`` on the prepared program under the upstream interpreter, its output
    passed through; its exit status (2 after a timeout, which kills its process group)."""
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


def check(config: Config, names: Sequence[str], work: Path) -> int:
    """Prepare and run every program; print one verdict line each; the worst exit status."""
    verdicts: list[tuple[str, int, str]] = []
    for name in names:
        folder = work / name
        folder.mkdir(parents=True, exist_ok=True)
        print(f"== {name}: building with pypto-build ({sys.executable})", flush=True)
        try:
            prepared = PROGRAMS[name](folder, config.platform)
        except CheckError as exc:
            print(f"{name}: {exc}", flush=True)
            verdicts.append((name, EXIT_FAILED, "could not be built"))
            continue
        print(f"== {name}: {prepared.tree} on upstream {config.platform}", flush=True)
        code = run_upstream(config, prepared, folder / "upstream")
        text = {EXIT_OK: "passes", EXIT_MISMATCH: "outputs differ from the golden"}.get(
            code, "refused or failed on upstream"
        )
        verdicts.append((name, code, text))
    print("== verdict", flush=True)
    for name, code, text in verdicts:
        print(f"{name}: {'PASS' if code == EXIT_OK else 'FAIL'} (exit {code}: {text})")
    return max(code if code in (EXIT_OK, EXIT_MISMATCH) else EXIT_FAILED for _, code, _ in verdicts)


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
