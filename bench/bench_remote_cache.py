"""What the remote compile cache saves: the sample built cold, served by the remote tier, and
from the local cache.

Builds ``samples/moe_a2a`` with the engine function ``pypto-build build`` calls
(:func:`pypto_build.chip_build.compile.build`), the ``sim`` toolchain, the package's chips and
2 jobs, against a real nginx WebDAV server on loopback (the one the tests start,
``tests/_support/loopback.py``). Each round runs, in this order, on a fresh copy of the project:

* ``cold``: an empty local cache, no remote: every distinct compile runs;
* ``cold_uploading``: the same with the remote tier on, against an empty cache instance: every
  compile runs and is uploaded (the upload overhead, uploads waited for);
* ``remote_served``: an empty local cache on "another machine" (another folder), the instance
  ``cold_uploading`` filled: every compile is a remote hit, downloaded, verified and stored;
* ``local_hit``: the same local cache again, into another folder: every compile a local hit.

Rounds interleave the scenarios, so a change in the machine's load touches all of them alike;
the summary takes medians. Cache counters are checked in every run (the script stops if they
are not what the cache promises). The remote is on loopback: the figures are the tool's own
costs, with no network latency; on a real network each remote hit adds a round trip for the
``ac`` document and one for the blob.

Writes ``bench/results/remote_cache.json``. Run: ``python bench/bench_remote_cache.py
[--repeat N]`` (nginx on ``PATH``).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from recording import (
    REPO_ROOT,
    BenchmarkFailure,
    JsonValue,
    load_average,
    machine,
    print_table,
    relative_to_repo,
    summary,
    write_results,
)

from pypto_build.chip_build.build import BuildResult, build
from pypto_build.chip_build.compile_cache.cache import CompileCache
from pypto_build.chip_build.compile_cache.remote import RemoteSpec, RemoteTier
from pypto_build.chip_build.toolchains import Toolchain, select_toolchain
from pypto_build.plugin.settings import load_settings

sys.path.insert(0, str(REPO_ROOT / "tests"))
# The nginx the tests run, imported as the tests import it (tests/ goes on the path).
from _support.loopback import Nginx, nginx

PROJECT = REPO_ROOT / "samples" / "moe_a2a"
JOBS = 2
SCENARIOS = ("cold", "cold_uploading", "remote_served", "local_hit")


@dataclass(frozen=True)
class Run:
    """One timed build."""

    wall_s: float
    compiled: int
    hits: int
    remote_hits: int
    uploaded: int
    warnings: tuple[str, ...]


def _build(
    root: Path, cache_dir: Path, toolchain: Toolchain, remote: RemoteSpec | None, out: str
) -> Run:
    """Build a fresh copy of the sample under ``root`` with the local cache ``cache_dir`` and
    the remote, timing the engine call (uploads included: the engine waits for them)."""
    project = root / f"project-{out}"
    shutil.copytree(PROJECT, project, ignore=shutil.ignore_patterns("build", "__pycache__"))
    settings = load_settings(project, environ={})
    warnings: list[str] = []
    tier = None if remote is None else RemoteTier([remote], warn=warnings.append, environ={})
    start = time.perf_counter()
    result: BuildResult = build(
        [project / program for program in settings.programs],
        chips=settings.chips,
        out_dir=root / out,
        source_root=project,
        toolchain=toolchain,
        jobs=JOBS,
        cache=CompileCache(cache_dir, remote=tier),
        progress=None,
    )
    wall = time.perf_counter() - start
    uploaded = 0 if tier is None else sum(s.uploaded for s in tier.summaries())
    counts = (result.compiled, result.cache_hits, result.remote_hits, uploaded)
    return Run(wall, *counts, tuple(warnings))


def _round(root: Path, server: Nginx, toolchain: Toolchain) -> dict[str, Run]:
    remote = RemoteSpec(server.url(server.webdav, root.name), timeout=10.0)
    runs = {
        "cold": _build(root, root / "cache-cold", toolchain, None, "cold"),
        "cold_uploading": _build(root, root / "cache-one", toolchain, remote, "uploading"),
        "remote_served": _build(root, root / "cache-two", toolchain, remote, "served"),
        "local_hit": _build(root, root / "cache-two", toolchain, remote, "local"),
    }
    _check(runs)
    shutil.rmtree(root)
    return runs


def _check(runs: Mapping[str, Run]) -> None:
    cold = runs["cold"]
    total = cold.compiled + cold.hits
    expected = {
        "cold": (cold.compiled, total - cold.compiled, 0, 0),
        "cold_uploading": (cold.compiled, total - cold.compiled, 0, cold.compiled),
        "remote_served": (0, total, cold.compiled, 0),
        "local_hit": (0, total, 0, 0),
    }
    for name, (compiled, hits, remote_hits, uploaded) in expected.items():
        run = runs[name]
        if run.warnings:
            raise BenchmarkFailure(f"{name}: the remote cache warned: {run.warnings[0]}")
        if (run.compiled, run.hits, run.remote_hits, run.uploaded) != (
            compiled,
            hits,
            remote_hits,
            uploaded,
        ):
            raise BenchmarkFailure(
                f"{name}: compiled {run.compiled}, hits {run.hits} (remote {run.remote_hits}), "
                f"uploaded {run.uploaded}; expected {compiled}, {hits} ({remote_hits}), "
                f"{uploaded}"
            )


def _median(runs: Sequence[Run], value: Callable[[Run], float]) -> float:
    return statistics.median(value(run) for run in runs)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Cold, remote-served and local-hit builds.")
    parser.add_argument("--repeat", type=int, default=5, help="rounds (default: 5)")
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error("--repeat: at least 1")
    load_before = load_average()
    toolchain = select_toolchain("sim")
    runs: dict[str, list[Run]] = {name: [] for name in SCENARIOS}
    with (
        tempfile.TemporaryDirectory(prefix="pypto-bench-remote-") as scratch,
        nginx(Path(scratch) / "nginx") as server,
    ):
        for index in range(args.repeat):
            for name, run in _round(Path(scratch) / f"round{index}", server, toolchain).items():
                runs[name].append(run)
    medians = {name: _median(runs[name], lambda run: run.wall_s) for name in SCENARIOS}
    ratios = {
        "cold_over_remote_served": round(medians["cold"] / medians["remote_served"], 2),
        "cold_over_local_hit": round(medians["cold"] / medians["local_hit"], 2),
        "remote_served_over_local_hit": round(medians["remote_served"] / medians["local_hit"], 2),
        "cold_uploading_over_cold": round(medians["cold_uploading"] / medians["cold"], 2),
    }
    document: dict[str, JsonValue] = {
        "benchmark": "remote_cache",
        "chips": list(load_settings(PROJECT, environ={}).chips),
        "jobs": JOBS,
        "load_average_1min": {"after": load_average(), "before": load_before},
        "machine": machine(),
        "project": relative_to_repo(PROJECT),
        "ratios_of_medians": ratios,
        "remote": "nginx WebDAV on loopback",
        "repeat": args.repeat,
        "scenarios": {
            name: {
                "cache_hits": runs[name][0].hits,
                "compiled": runs[name][0].compiled,
                "remote_hits": runs[name][0].remote_hits,
                "uploaded": runs[name][0].uploaded,
                "wall_s": summary([run.wall_s for run in runs[name]]),
            }
            for name in SCENARIOS
        },
        "toolchain": f"sim ({toolchain.version})",
    }
    path = write_results("remote_cache", document)
    rows = [
        [
            name,
            f"{runs[name][0].compiled}/{runs[name][0].hits}/{runs[name][0].remote_hits}",
            f"{min(run.wall_s for run in runs[name]):.3f}",
            f"{medians[name]:.3f}",
        ]
        for name in SCENARIOS
    ]
    print_table(["scenario", "compiled/hits/remote", "min s", "median s"], rows)
    print("\n" + ", ".join(f"{name} x{value}" for name, value in ratios.items()))
    print(f"\nwrote {relative_to_repo(path)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
