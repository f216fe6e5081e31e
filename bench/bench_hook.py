"""Row 2 of ``docs/performance.md``: what the hatchling hook adds to ``pip wheel`` when there is
nothing to compile.

A model package is rebuilt far more often than its kernels change (every ``pip install .`` in a
development loop, every CI job with a restored compile cache), so the hook's cost with a warm
cache is what users feel most: lowering, rendering, the cache hits and shipping the trees.

``samples/moe_a2a`` is copied twice: as it is, and with its ``[tool.hatch.build.targets.wheel
.hooks.pypto]`` table removed (the same package without its kernels). Both are built with
``pip wheel --no-build-isolation --no-deps`` (the build backend runs in an existing
environment, so the comparison is not swamped by creating build environments), the hooked one
against a compile cache (``PYPTO_CACHE_DIR``) warmed by one build first, in turns, medians.
The hooked builds are checked to compile nothing.

Each pair is built in two environments:

* the **build environment**: a virtual environment holding what the sample's
  ``build-system.requires`` installs (hatchling, pypto-build from a wheel of this checkout, and
  their dependencies) and nothing else, as an isolated build's environment does. The target
  is measured here: at most 1.15x the hook-less build, 0 compiles.
* the **development environment** (the interpreter running this script), for comparison.
  Whatever else is installed there is loaded too: a build that uses any third-party hatch hook
  makes hatchling import every plugin of its ``hatch`` entry-point group, here
  scikit-build-core's, which costs the hooked build alone (``hatch_plugins_ms`` records it).

Writes ``bench/results/hook.json``; exits 1 when a target is missed. Run:
``python bench/bench_hook.py [--repeat N]`` (about 90 s with the default 11 rounds, 15 s of which
set up the build environment from the package index pip is configured with).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path

from recording import (
    REPO_ROOT,
    BenchmarkFailure,
    JsonValue,
    Target,
    load_average,
    machine,
    median,
    print_table,
    relative_to_repo,
    report_targets,
    summary,
    targets_exit_status,
    write_results,
)

from pypto_build.chip_build.compile_cache.cache import CompileCache

SAMPLE = REPO_ROOT / "samples" / "moe_a2a"
HOOK_TABLE = "[tool.hatch.build.targets.wheel.hooks.pypto]"
LIMIT = 1.15
BUILD_ENV, DEV_ENV = "build environment", "development environment"
WITHOUT, WITH = "without the hook", "with the hook"


def _copy(destination: Path, *, hook: bool) -> Path:
    shutil.copytree(SAMPLE, destination, ignore=shutil.ignore_patterns("build", "__pycache__"))
    if not hook:
        pyproject = destination / "pyproject.toml"
        text = pyproject.read_text(encoding="utf-8")
        if HOOK_TABLE not in text:
            raise BenchmarkFailure(f"{SAMPLE}/pyproject.toml has no {HOOK_TABLE}")
        pyproject.write_text(text.replace(HOOK_TABLE, ""), encoding="utf-8")
    return destination


def _environment(cache: Path) -> dict[str, str]:
    environ = {name: value for name, value in os.environ.items() if not name.startswith("PYPTO_")}
    environ.pop("PYTHONDONTWRITEBYTECODE", None)
    environ["PYPTO_CACHE_DIR"] = str(cache)
    environ["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return environ


def _pip_wheel(python: Path, project: Path, dist: Path, environ: Mapping[str, str]) -> float:
    argv = [str(python), "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", "-q"]
    argv += ["-w", str(dist), str(project)]
    start = time.perf_counter()
    subprocess.run(argv, check=True, env=dict(environ), stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    shutil.rmtree(dist)
    return wall


def _compiled(cache: Path) -> int:
    """The compiles of the last build the cache recorded."""
    counts = CompileCache(cache).stats().last_build
    if counts is None:
        raise BenchmarkFailure(f"the compile cache {cache} recorded no build")
    return counts.misses


def _build_environment(root: Path, environ: Mapping[str, str]) -> Path:
    """A virtual environment holding the sample's build requirements only (pypto-build from a
    wheel of this checkout); its interpreter."""
    wheels, venv = root / "wheels", root / "build-env"
    _setup([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
            "-w", str(wheels), str(REPO_ROOT)], environ)  # fmt: skip
    _setup([sys.executable, "-m", "venv", str(venv)], environ)
    python = venv / "bin" / "python"
    pyproject = tomllib.loads((SAMPLE / "pyproject.toml").read_text(encoding="utf-8"))
    requires = pyproject["build-system"]["requires"]
    _setup([str(python), "-m", "pip", "install", "--find-links", str(wheels), *requires], environ)
    return python


def _setup(argv: Sequence[str], environ: Mapping[str, str]) -> None:
    done = subprocess.run(argv, env=dict(environ), capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise BenchmarkFailure(f"{' '.join(argv)} failed:\n{done.stdout}{done.stderr}")


def _hatch_plugins(python: Path) -> list[str]:
    """The modules of the ``hatch`` entry-point group ``python`` sees."""
    code = (
        "from importlib.metadata import entry_points;"
        "print(*sorted(e.value for e in entry_points(group='hatch')))"
    )
    done = subprocess.run([str(python), "-c", code], capture_output=True, text=True, check=True)
    return done.stdout.split()


def _import_ms(python: Path, modules: Sequence[str], environ: Mapping[str, str]) -> float:
    """How long ``python`` takes to import ``modules`` after hatchling's wheel builder (the
    median of 5 fresh interpreters), in ms."""
    code = (
        "import time, importlib, hatchling.builders.wheel;"
        "t = time.perf_counter();"
        f"[importlib.import_module(m) for m in {list(modules)!r}];"
        "print(time.perf_counter() - t)"
    )
    runs = [
        float(
            subprocess.run(
                [str(python), "-c", code], capture_output=True, text=True, check=True,
                env=dict(environ),
            ).stdout
        )
        for _ in range(5)
    ]  # fmt: skip
    return 1000 * median(runs)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=11, help="builds of each (default: 11)")
    args = parser.parse_args(argv)
    load_before = load_average()
    with tempfile.TemporaryDirectory(prefix="pypto-bench-") as folder:
        root = Path(folder)
        hooked = _copy(root / "hooked", hook=True)
        plain = _copy(root / "plain", hook=False)
        cache = root / "cache"
        environ = _environment(cache)
        pythons = {BUILD_ENV: _build_environment(root, environ), DEV_ENV: Path(sys.executable)}
        pair = [(WITHOUT, plain), (WITH, hooked)]
        builds = [(env, name, project) for env in pythons for name, project in pair]
        for env, _, project in builds:  # warms the cache and each environment's record
            _pip_wheel(pythons[env], project, root / "dist", environ)
        walls: dict[tuple[str, str], list[float]] = {(env, name): [] for env, name, _ in builds}
        compiles: list[int] = []
        for index in range(args.repeat):
            turn = builds[index % len(builds) :] + builds[: index % len(builds)]
            for env, name, project in turn:
                walls[env, name].append(_pip_wheel(pythons[env], project, root / "dist", environ))
                if project is hooked:
                    compiles.append(_compiled(cache))
        others = {env: [m for m in _hatch_plugins(py) if not m.startswith("pypto_build")]
                  for env, py in pythons.items()}  # fmt: skip
        plugins_ms = {env: _import_ms(pythons[env], others[env], environ) for env in pythons}
    medians = {key: median(values) for key, values in walls.items()}
    ratios = {env: medians[env, WITH] / medians[env, WITHOUT] for env in pythons}
    print_table(
        ["pip wheel samples/moe_a2a", "median s", "min s"],
        [
            [f"{name} ({env})", f"{median(values):.3f}", f"{min(values):.3f}"]
            for (env, name), values in walls.items()
        ],
    )
    targets = [
        Target(
            "2",
            "no-op pip wheel --no-build-isolation, warm cache, in the build environment",
            ratios[BUILD_ENV],
            LIMIT,
            "x",
            f"the same package with the hook table removed ({medians[BUILD_ENV, WITHOUT]:.2f} s)",
        ),
        Target("2", "compiles in the no-op builds", max(compiles), 0, "", "none"),
    ]
    document: dict[str, JsonValue] = {
        "benchmark": "hook",
        "compiles": list(compiles),
        "environments": {
            env: {
                "other_hatch_plugins": list(others[env]),
                "hatch_plugins_ms": round(plugins_ms[env], 1),
                "hook_cost_ms": round(1000 * (medians[env, WITH] - medians[env, WITHOUT]), 1),
                "ratio": round(ratios[env], 4),
                "wall_s": {name: summary(walls[env, name]) for name in (WITHOUT, WITH)},
            }
            for env in pythons
        },
        "load_average_1min": {"after": load_average(), "before": load_before},
        "machine": machine(),
        "pip": re.sub(r" from .*", "", _pip_version()),
        "project": relative_to_repo(SAMPLE),
        "repeat": args.repeat,
        "targets": report_targets(targets),
    }
    print(
        f"development environment: {ratios[DEV_ENV]:.2f}x, of which hatchling's import of "
        f"{', '.join(others[DEV_ENV]) or 'no other plugin'}: {plugins_ms[DEV_ENV]:.0f} ms"
    )
    path = write_results("hook", document)
    print(f"\nwrote {relative_to_repo(path)}")
    return targets_exit_status(targets)


def _pip_version() -> str:
    done = subprocess.run(
        [sys.executable, "-m", "pip", "--version"], capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


if __name__ == "__main__":
    raise SystemExit(main())
