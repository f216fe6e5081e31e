"""Row 7 of ``docs/performance.md``: what starting pypto-build costs before it does anything.

Two start-ups are paid far more often than any build: ``pypto-build --version`` (and ``--help``),
which editors, CI scripts and ``doctor``-style checks run, and the import of the hatchling hook
module, which hatchling performs for every wheel it builds on a machine where pypto-build is
installed (it loads every plugin of its ``hatch`` entry-point group), whether or not the package
uses the hook.

* ``--version``: the wall time of the ``pypto-build`` console script against ``python -c pass``
  with the same interpreter, alternating, medians.
* the hook: a fresh interpreter imports what hatchling itself imports to build a wheel (its
  build backend, the wheel builder, the plugin manager and the hook interface), then imports
  ``pypto_build.plugin.hooks``; the time of that second import is pypto-build's share.

Bytecode is allowed (``PYTHONDONTWRITEBYTECODE`` is removed from the environment, and each
command runs once first to write it), as on a user's machine. Targets: ``--version`` at most 3x
``python -c pass``; the hook at most 30 ms over hatchling's own imports. Writes
``bench/results/startup.json``; exits 1 when a target is missed. Run:
``python bench/bench_startup.py [--repeat N]``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from recording import (
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

VERSION_LIMIT = 3.0
HOOK_LIMIT_MS = 30.0
#: What hatchling imports to build a wheel before it loads its plugins.
HATCHLING_MODULES = (
    "hatchling.build",
    "hatchling.builders.wheel",
    "hatchling.plugin.manager",
    "hatchling.builders.hooks.plugin.interface",
)
HOOK_MODULE = "pypto_build.plugin.hooks"

_IMPORT_PROBE = """\
import sys, time
start = time.perf_counter()
for name in {hatchling!r}:
    __import__(name)
middle = time.perf_counter()
__import__({hook!r})
end = time.perf_counter()
print(middle - start, end - middle)
"""


def _environment() -> dict[str, str]:
    environ = dict(os.environ)
    environ.pop("PYTHONDONTWRITEBYTECODE", None)
    return environ


def _console_script() -> Path:
    """The ``pypto-build`` script installed beside this interpreter."""
    script = Path(sys.executable).parent / "pypto-build"
    if not script.is_file():
        raise BenchmarkFailure(f"no console script at {script}; install pypto-build")
    return script


def _wall(argv: Sequence[str], environ: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, env=environ)
    return time.perf_counter() - start


def _import_times(environ: dict[str, str]) -> tuple[float, float]:
    code = _IMPORT_PROBE.format(hatchling=HATCHLING_MODULES, hook=HOOK_MODULE)
    done = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True, env=environ
    )
    hatchling, hook = done.stdout.split()
    return float(hatchling), float(hook)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=20, help="runs of each (default: 20)")
    args = parser.parse_args(argv)
    environ = _environment()
    load_before = load_average()
    bare = [sys.executable, "-c", "pass"]
    version = [sys.executable, str(_console_script()), "--version"]
    for warm in (bare, version):  # writes the bytecode a user's install has
        _wall(warm, environ)
    _import_times(environ)
    walls: dict[str, list[float]] = {"python -c pass": [], "pypto-build --version": []}
    imports: dict[str, list[float]] = {"hatchling": [], "hook": []}
    for index in range(args.repeat):
        pair = [("python -c pass", bare), ("pypto-build --version", version)]
        for name, command in pair if index % 2 == 0 else pair[::-1]:
            walls[name].append(_wall(command, environ))
        hatchling, hook = _import_times(environ)
        imports["hatchling"].append(hatchling)
        imports["hook"].append(hook)
    ratio = median(walls["pypto-build --version"]) / median(walls["python -c pass"])
    hook_ms = median(imports["hook"]) * 1000
    print_table(
        ["what", "median ms", "min ms"],
        [
            [name, f"{median(values) * 1000:.1f}", f"{min(values) * 1000:.1f}"]
            for name, values in [*walls.items(), *imports.items()]
        ],
    )
    targets = [
        Target("7", "pypto-build --version", ratio, VERSION_LIMIT, "x", "python -c pass"),
        Target(
            "7",
            f"import {HOOK_MODULE} after hatchling's own imports",
            hook_ms,
            HOOK_LIMIT_MS,
            " ms",
            f"hatchling's own imports ({median(imports['hatchling']) * 1000:.0f} ms)",
        ),
    ]
    document: dict[str, JsonValue] = {
        "benchmark": "startup",
        "hatchling_modules": list(HATCHLING_MODULES),
        "import_s": {name: summary(values) for name, values in imports.items()},
        "load_average_1min": {"after": load_average(), "before": load_before},
        "machine": machine(),
        "repeat": args.repeat,
        "targets": report_targets(targets),
        "wall_s": {name: summary(values) for name, values in walls.items()},
    }
    path = write_results("startup", document)
    print(f"\nwrote {relative_to_repo(path)}")
    return targets_exit_status(targets)


if __name__ == "__main__":
    raise SystemExit(main())
