"""Row 2 of ``docs/performance.md``: what the hatchling hook adds to ``pip wheel`` when there is
nothing to compile.

A model package is rebuilt far more often than its kernels change (every ``pip install .`` in a
development loop, every CI job with a restored compile cache), so the hook's cost with a warm
cache is what users feel most: lowering, rendering, the cache hits and shipping the trees.

``samples/moe_a2a`` is copied twice: as it is, and with its ``[tool.hatch.build.targets.wheel
.hooks.pypto]`` table removed (the same package without its kernels). Both are built with
``pip wheel --no-build-isolation --no-deps`` (the project's build backend runs in this
environment, so the comparison is not swamped by creating build environments), the hooked one
against a compile cache (``PYPTO_CACHE_DIR``) warmed by one build first, alternating, medians.
The hooked builds are checked to compile nothing. Target: at most 1.15x the hook-less build,
0 compiles. Writes ``bench/results/hook.json``; exits 1 when a target is missed. Run:
``python bench/bench_hook.py [--repeat N]``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
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

SAMPLE = REPO_ROOT / "samples" / "moe_a2a"
HOOK_TABLE = "[tool.hatch.build.targets.wheel.hooks.pypto]"
LIMIT = 1.15
LAST_BUILD = "v1/last-build.json"


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


def _pip_wheel(project: Path, dist: Path, environ: Mapping[str, str]) -> float:
    argv = [sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", "-q"]
    argv += ["-w", str(dist), str(project)]
    start = time.perf_counter()
    subprocess.run(argv, check=True, env=dict(environ), stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    shutil.rmtree(dist)
    return wall


def _compiled(cache: Path) -> int:
    """The compiles of the last build the cache recorded."""
    document = json.loads((cache / LAST_BUILD).read_text(encoding="utf-8"))
    return int(document["misses"])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7, help="builds of each (default: 7)")
    args = parser.parse_args(argv)
    load_before = load_average()
    with tempfile.TemporaryDirectory(prefix="pypto-bench-") as folder:
        root = Path(folder)
        hooked = _copy(root / "hooked", hook=True)
        plain = _copy(root / "plain", hook=False)
        cache = root / "cache"
        environ = _environment(cache)
        _pip_wheel(hooked, root / "dist", environ)  # warms the cache
        _pip_wheel(plain, root / "dist", environ)
        walls: dict[str, list[float]] = {"without the hook": [], "with the hook": []}
        compiles: list[int] = []
        for index in range(args.repeat):
            pair = [("without the hook", plain), ("with the hook", hooked)]
            for name, project in pair if index % 2 == 0 else pair[::-1]:
                walls[name].append(_pip_wheel(project, root / "dist", environ))
                if project is hooked:
                    compiles.append(_compiled(cache))
    plain_s, hooked_s = median(walls["without the hook"]), median(walls["with the hook"])
    print_table(
        ["pip wheel samples/moe_a2a", "median s", "min s"],
        [[name, f"{median(v):.3f}", f"{min(v):.3f}"] for name, v in walls.items()],
    )
    targets = [
        Target(
            "2",
            "no-op pip wheel --no-build-isolation, warm cache",
            hooked_s / plain_s,
            LIMIT,
            "x",
            f"the same package with the hook table removed ({plain_s:.2f} s)",
        ),
        Target("2", "compiles in the no-op builds", max(compiles), 0, "", "none"),
    ]
    document: dict[str, JsonValue] = {
        "benchmark": "hook",
        "compiles": list(compiles),
        "load_average_1min": {"after": load_average(), "before": load_before},
        "machine": machine(),
        "pip": re.sub(r" from .*", "", _pip_version()),
        "project": relative_to_repo(SAMPLE),
        "repeat": args.repeat,
        "targets": report_targets(targets),
        "wall_s": {name: summary(values) for name, values in walls.items()},
    }
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
