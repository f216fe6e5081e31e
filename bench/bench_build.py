"""Build times and memory of the sample model package, against compiling it by hand.

Builds ``samples/moe_a2a`` with the engine function the ``pypto-build build`` command calls
(:func:`pypto_build.chip_build.build.build`), the ``sim`` toolchain and the chips of the
package's ``[tool.pypto]``, into temporary directories, in these scenarios:

* ``nocache_jobs1``: no compile cache, 1 compiler process: every source compiled, the same
  work as the by-hand script below, which it is compared with;
* ``cold_jobs1``, ``cold_jobs2``: an empty compile cache, 1 and 2 compiler processes;
* ``warm_jobs2``: the same build again, inputs unchanged (every source must be a cache hit);
* ``changed_kernel_jobs2``: one kernel source edited (only that kernel may miss the cache);
* ``lower_render``: the front end, the pass pipeline and the render, without compiling;
* ``by_hand_serial``: the rendered sources compiled by a plain shell script, one ``g++``
  command after another with the toolchain's own command lines, and no pypto-build.

Every scenario runs in a fresh worker process (this script with ``--worker``) so that its peak
RSS is its own: the worker reports ``getrusage`` of itself (the Python side) and of its children
(the largest compiler process), and the parent times the whole process as well as the worker
timing the operation itself. Cache counters are checked in every run and the script stops with
an error if they are not what the cache promises.

Writes ``bench/results/build.json``. Run: ``python bench/bench_build.py [--repeat N]``.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from by_hand import by_hand_script
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

from pypto_build.chip_build.build import build
from pypto_build.chip_build.compile import find_jobs
from pypto_build.chip_build.compile_cache.cache import CompileCache
from pypto_build.chip_build.compile_cache.keys import compile_key
from pypto_build.chip_build.subbuild import SourceProgram, lower_file, render_subbuilds
from pypto_build.chip_build.toolchains import SimToolchain, Toolchain, select_toolchain
from pypto_build.chip_build.toolchains.base import STAGE_PLACEHOLDER
from pypto_build.plugin.settings import PyptoSettings, load_settings

PROJECT = REPO_ROOT / "samples" / "moe_a2a"
#: The kernel the ``changed_kernel`` scenario edits, relative to the project.
CHANGED_KERNEL = PurePosixPath("src/moe_a2a/kernels/stage_step.cpp")
#: Jobs of the scenarios after the cold builds: one per core of the recorded machine.
JOBS = 2


# --- worker side: one scenario in its own process -----------------------------------------------


def _settings(project: Path) -> PyptoSettings:
    """The project's ``[tool.pypto]``, ignoring ``PYPTO_*`` overrides of this shell."""
    return load_settings(project, environ={})


def _usage() -> dict[str, Any]:
    """Peak RSS in KiB (Linux reports ``ru_maxrss`` in KiB) of this process and of the largest
    child it waited for."""
    return {
        "rss_self_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
        "rss_children_kib": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss,
    }


def _compile_keys(out: Path, chips: Sequence[str], toolchain: Toolchain) -> dict[str, list[str]]:
    """The cache's compile key of every source of every chip tree, by source path.

    Computed as the engine computes it, so the expectations below can say how many compiles a
    build needs: one per distinct key, since equal keys share one cache entry.
    """
    keys: dict[str, list[str]] = {}
    identity = toolchain.identity()
    for chip in chips:
        for job in find_jobs(out / chip, chip):
            key = compile_key(
                source=job.source_path.read_bytes(),
                commands=toolchain.plan(job, STAGE_PLACEHOLDER).key_argv(),
                identity=identity,
                version=toolchain.version,
            )
            keys.setdefault(job.source.as_posix(), []).append(key)
    return keys


def _work_build(spec: Mapping[str, Any]) -> dict[str, Any]:
    project, out = Path(spec["project"]), Path(spec["out"])
    settings = _settings(project)
    toolchain = select_toolchain("sim")
    start = time.perf_counter()
    result = build(
        [project / program for program in settings.programs],
        chips=settings.chips,
        out_dir=out,
        source_root=project,
        toolchain=toolchain,
        jobs=int(spec["jobs"]),
        cache=None if spec["cache"] is None else CompileCache(Path(spec["cache"])),
        progress=None,
    )
    wall = time.perf_counter() - start
    chips = {
        report.chip: {
            "compiled": sorted(r.job.source.as_posix() for r in report.results if not r.cached),
            "hits": sorted(r.job.source.as_posix() for r in report.results if r.cached),
        }
        for report in result.reports
    }
    keys = _compile_keys(out, settings.chips, toolchain)
    return {"wall_s": wall, "chips": chips, "keys": keys, "toolchain": toolchain.version}


def _work_lower_render(spec: Mapping[str, Any]) -> dict[str, Any]:
    project, out = Path(spec["project"]), Path(spec["out"])
    settings = _settings(project)
    start = time.perf_counter()
    programs: list[SourceProgram] = []
    for program in settings.programs:
        programs += lower_file(project / program, settings.chips)
    lowered = time.perf_counter()
    render_subbuilds(programs, settings.chips, out, source_root=project)
    done = time.perf_counter()
    return {
        "wall_s": done - start,
        "phases": {"lower_s": lowered - start, "render_s": done - lowered},
    }


def _work_by_hand(spec: Mapping[str, Any]) -> dict[str, Any]:
    tree, scratch = Path(spec["tree"]), Path(spec["scratch"])
    chips = _settings(Path(spec["project"])).chips
    script, units = by_hand_script(tree, chips, scratch, SimToolchain.discover())
    path = scratch / "build.sh"
    path.write_text(script, encoding="utf-8")
    start = time.perf_counter()
    subprocess.run(["bash", str(path)], check=True)
    wall = time.perf_counter() - start
    # The Python worker only wrote the script; the by-hand build is bash and its compilers.
    return {"wall_s": wall, "units": units, "python_side": False}


_WORKERS: dict[str, Callable[[Mapping[str, Any]], dict[str, Any]]] = {
    "build": _work_build,
    "by_hand": _work_by_hand,
    "lower_render": _work_lower_render,
}


def _worker(spec_text: str) -> int:
    spec = json.loads(spec_text)
    result = _WORKERS[spec["kind"]](spec)
    print(json.dumps({**result, **_usage()}))
    return 0


# --- parent side: scenarios, expectations, results ----------------------------------------------


@dataclass(frozen=True)
class Sample:
    """One run of one scenario."""

    #: The operation as the worker timed it (imports and toolchain probing excluded).
    wall_s: float
    #: The whole worker process as the parent timed it (interpreter start and imports included).
    process_wall_s: float
    #: Peak RSS of the Python side; None when the scenario runs no Python (by hand).
    rss_self_kib: int | None
    #: Peak RSS of the largest child process (a compiler).
    rss_children_kib: int
    details: Mapping[str, Any]

    def counters(self) -> dict[str, dict[str, int]]:
        """Compiles and cache hits per chip."""
        chips: Mapping[str, Mapping[str, list[str]]] = self.details["chips"]
        return {
            chip: {"cache_hits": len(state["hits"]), "compiled": len(state["compiled"])}
            for chip, state in chips.items()
        }

    def compiled(self) -> list[tuple[str, str]]:
        """Every (chip, source) compiled rather than taken from the cache."""
        chips: Mapping[str, Mapping[str, list[str]]] = self.details["chips"]
        return [(chip, source) for chip, state in chips.items() for source in state["compiled"]]

    def distinct_keys(self, source: str | None = None) -> int:
        """Distinct compile keys over every chip, of one source or of all of them."""
        keys: Mapping[str, list[str]] = self.details["keys"]
        chosen = keys.values() if source is None else [keys[source]]
        return len({key for source_keys in chosen for key in source_keys})


def _run_worker(spec: Mapping[str, Any]) -> Sample:
    argv = [sys.executable, str(Path(__file__).resolve()), "--worker", json.dumps(spec)]
    start = time.perf_counter()
    completed = subprocess.run(argv, capture_output=True, text=True, check=False)
    process_wall = time.perf_counter() - start
    if completed.returncode != 0:
        raise BenchmarkFailure(
            f"{spec['kind']} worker exited {completed.returncode}:\n{completed.stderr}"
        )
    details = json.loads(completed.stdout)
    wall, rss_self = details.pop("wall_s"), details.pop("rss_self_kib")
    return Sample(
        wall_s=wall,
        process_wall_s=process_wall,
        rss_self_kib=rss_self if details.pop("python_side", True) else None,
        rss_children_kib=details.pop("rss_children_kib"),
        details=details,
    )


def _check_cold(sample: Sample) -> None:
    compiled, keys = len(sample.compiled()), sample.distinct_keys()
    if compiled != keys:
        raise BenchmarkFailure(
            f"cold build compiled {compiled} sources, expected one per distinct compile key "
            f"({keys}); counters {sample.counters()}"
        )


def _check_uncached(sample: Sample) -> None:
    compiled, sources = len(sample.compiled()), sum(map(len, sample.details["keys"].values()))
    if compiled != sources:
        raise BenchmarkFailure(
            f"build without the cache compiled {compiled} sources, expected all {sources}; "
            f"counters {sample.counters()}"
        )


def _check_warm(sample: Sample) -> None:
    if sample.compiled():
        raise BenchmarkFailure(
            f"warm rebuild with unchanged inputs compiled {sample.compiled()}; expected every "
            f"source from the cache; counters {sample.counters()}"
        )


def _check_changed(sample: Sample) -> None:
    compiled = sample.compiled()
    others = [source for _, source in compiled if PurePosixPath(source).name != CHANGED_KERNEL.name]
    if others or not compiled:
        raise BenchmarkFailure(
            f"after editing {CHANGED_KERNEL} the build compiled {compiled}; expected that kernel "
            f"only; counters {sample.counters()}"
        )
    keys = sample.distinct_keys(compiled[0][1])
    if len(compiled) != keys:
        raise BenchmarkFailure(
            f"after editing {CHANGED_KERNEL} the build compiled it {len(compiled)} times, "
            f"expected once per distinct compile key ({keys}); counters {sample.counters()}"
        )


@dataclass(frozen=True)
class Scenario:
    name: str
    description: str
    #: Compiler processes; None where nothing is compiled.
    jobs: int | None
    #: What the cache counters must show, and the check run on every sample (builds only).
    expectation: str | None = None
    check: Callable[[Sample], None] | None = None


SCENARIOS = (
    Scenario(
        "lower_render",
        "front end + pass pipeline + render of every chip tree, no compiling",
        jobs=None,
    ),
    Scenario(
        "by_hand_serial",
        "bash script: the rendered sources of every chip compiled and linked one g++ command "
        "after another, same command lines, no pypto-build, no cache",
        jobs=1,
    ),
    Scenario(
        "nocache_jobs1",
        "full build without the compile cache, 1 compiler process: every source compiled, the "
        "by-hand script's work",
        jobs=1,
        expectation="compiled == every source of every chip tree",
        check=_check_uncached,
    ),
    Scenario(
        "cold_jobs1",
        "full build, empty compile cache, 1 compiler process",
        jobs=1,
        expectation="compiled == distinct compile keys; sources whose command line does not "
        "depend on the chip are compiled for the first chip and hit the cache for the others",
        check=_check_cold,
    ),
    Scenario(
        "cold_jobs2",
        "full build, empty compile cache, 2 compiler processes",
        jobs=JOBS,
        expectation="as cold_jobs1",
        check=_check_cold,
    ),
    Scenario(
        "warm_jobs2",
        "the cold_jobs2 build again into the same folder, inputs unchanged",
        jobs=JOBS,
        expectation="0 compiled, every source a cache hit",
        check=_check_warm,
    ),
    Scenario(
        "changed_kernel_jobs2",
        f"rebuild after appending a comment line to {CHANGED_KERNEL}",
        jobs=JOBS,
        expectation="only the edited kernel misses, once per distinct compile key of it over "
        "the chips (the sim command line of a kernel is the same for every chip, so: once, and "
        "the other chips hit the entry the first one published)",
        check=_check_changed,
    ),
)


def _run_once(root: Path, index: int) -> dict[str, Sample]:
    """Every scenario once, in a fresh copy of the project with fresh caches."""
    base = root / f"run{index}"
    project = base / "project"
    shutil.copytree(PROJECT, project, ignore=shutil.ignore_patterns("build", "__pycache__"))
    common = {"project": str(project)}

    def build_spec(out: str, cache: str | None, jobs: int) -> dict[str, Any]:
        return {
            "kind": "build",
            **common,
            "out": str(base / out),
            "cache": None if cache is None else str(base / cache),
            "jobs": jobs,
        }

    samples = {
        "lower_render": _run_worker({"kind": "lower_render", **common, "out": str(base / "r")}),
        "by_hand_serial": _run_worker(
            {"kind": "by_hand", **common, "tree": str(base / "r"), "scratch": str(base / "h")}
        ),
        "nocache_jobs1": _run_worker(build_spec("nocache1", None, 1)),
        "cold_jobs1": _run_worker(build_spec("cold1", "cache1", 1)),
        "cold_jobs2": _run_worker(build_spec("out", "cache2", JOBS)),
        "warm_jobs2": _run_worker(build_spec("out", "cache2", JOBS)),
    }
    kernel = project / CHANGED_KERNEL
    kernel.write_text(
        kernel.read_text(encoding="utf-8") + "// edited by bench_build.py\n", encoding="utf-8"
    )
    samples["changed_kernel_jobs2"] = _run_worker(build_spec("out", "cache2", JOBS))
    for scenario in SCENARIOS:
        if scenario.check is not None:
            scenario.check(samples[scenario.name])
    shutil.rmtree(base)
    return samples


def _scenario_result(scenario: Scenario, runs: Sequence[Sample]) -> dict[str, JsonValue]:
    result: dict[str, JsonValue] = {
        "description": scenario.description,
        "jobs": scenario.jobs,
        "peak_rss_children_kib": summary([run.rss_children_kib for run in runs], digits=0),
        "process_wall_s": summary([run.process_wall_s for run in runs]),
        "wall_s": summary([run.wall_s for run in runs]),
    }
    rss_self = [run.rss_self_kib for run in runs if run.rss_self_kib is not None]
    result["peak_rss_self_kib"] = summary(rss_self, digits=0) if rss_self else None
    if scenario.expectation is not None:
        counters = [run.counters() for run in runs]
        if any(other != counters[0] for other in counters):
            raise BenchmarkFailure(f"{scenario.name}: counters differ between runs: {counters}")
        result["counters"] = {chip: dict(state) for chip, state in counters[0].items()}
        result["expectation"] = scenario.expectation
    if "phases" in runs[0].details:
        phases = sorted(runs[0].details["phases"])
        result["phases_s"] = {
            phase: summary([run.details["phases"][phase] for run in runs]) for phase in phases
        }
    if "units" in runs[0].details:
        result["compile_units"] = runs[0].details["units"]
    return result


def _median(samples: Sequence[Sample], value: Callable[[Sample], float]) -> float:
    return statistics.median(value(sample) for sample in samples)


def _comparison(runs: Mapping[str, Sequence[Sample]]) -> dict[str, JsonValue]:
    """The serial build without the cache beside the by-hand serial compile (medians, seconds):
    the same compiler commands on both sides, so the difference is the tool's own cost. The
    cold build with a cache compiles fewer sources (equal compile keys share one entry); it is
    set beside the same build without the cache, which is what the cache saves."""
    by_hand = _median(runs["by_hand_serial"], lambda sample: sample.wall_s)
    engine = _median(runs["nocache_jobs1"], lambda sample: sample.wall_s)
    process = _median(runs["nocache_jobs1"], lambda sample: sample.process_wall_s)
    cold = _median(runs["cold_jobs1"], lambda sample: sample.wall_s)
    units: int = runs["by_hand_serial"][0].details["units"]
    compiles = len(runs["nocache_jobs1"][0].compiled())
    if compiles != units:
        raise BenchmarkFailure(
            f"the by-hand script compiles {units} sources, the build without cache {compiles}"
        )
    return {
        "by_hand_serial_s": round(by_hand, 4),
        "compile_units": units,
        "cold_jobs1_compile_units": len(runs["cold_jobs1"][0].compiled()),
        "cold_jobs1_engine_s": round(cold, 4),
        "nocache_jobs1_engine_s": round(engine, 4),
        "nocache_jobs1_process_s": round(process, 4),
        "engine_minus_by_hand_s": round(engine - by_hand, 4),
        "engine_over_by_hand_ratio": round(engine / by_hand, 3),
        "process_over_by_hand_ratio": round(process / by_hand, 3),
        "cache_saving_s": round(engine - cold, 4),
    }


def _mib(kib: int | None) -> str:
    return "-" if kib is None else f"{kib / 1024:.0f}"


def _print(runs: Mapping[str, Sequence[Sample]], comparison: Mapping[str, JsonValue]) -> None:
    header = [
        "scenario",
        "jobs",
        "compiled/hits",
        "min s",
        "median s",
        "process s",
        "py MiB",
        "cc MiB",
    ]
    rows = []
    for scenario in SCENARIOS:
        samples = runs[scenario.name]
        counts = "-"
        if scenario.expectation is not None:
            counters = samples[0].counters().values()
            compiled = sum(state["compiled"] for state in counters)
            counts = f"{compiled}/{sum(state['cache_hits'] for state in counters)}"
        walls = [sample.wall_s for sample in samples]
        rss_self = [s.rss_self_kib for s in samples if s.rss_self_kib is not None]
        rows.append(
            [
                scenario.name,
                "-" if scenario.jobs is None else str(scenario.jobs),
                counts,
                f"{min(walls):.3f}",
                f"{_median(samples, lambda sample: sample.wall_s):.3f}",
                f"{_median(samples, lambda sample: sample.process_wall_s):.3f}",
                _mib(max(rss_self) if rss_self else None),
                _mib(max(sample.rss_children_kib for sample in samples)),
            ]
        )
    print_table(header, rows)
    print(
        f"\nby hand (serial g++, {comparison['compile_units']} sources): "
        f"{comparison['by_hand_serial_s']} s; pypto-build without the cache, --jobs 1 (the "
        f"same {comparison['compile_units']} compiles): {comparison['nocache_jobs1_engine_s']} s "
        f"in the engine (x{comparison['engine_over_by_hand_ratio']}), "
        f"{comparison['nocache_jobs1_process_s']} s for the whole process "
        f"(x{comparison['process_over_by_hand_ratio']}); with an empty cache "
        f"({comparison['cold_jobs1_compile_units']} compiles) {comparison['cold_jobs1_engine_s']} s"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Build times of the sample model package.")
    parser.add_argument("--repeat", type=int, default=3, help="runs per scenario (default: 3)")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker is not None:
        return _worker(args.worker)
    if args.repeat < 1:
        parser.error("--repeat: at least 1")
    load_before = load_average()
    settings = _settings(PROJECT)
    runs: dict[str, list[Sample]] = {scenario.name: [] for scenario in SCENARIOS}
    with tempfile.TemporaryDirectory(prefix="pypto-bench-") as root:
        for index in range(args.repeat):
            for name, sample in _run_once(Path(root), index).items():
                runs[name].append(sample)
    comparison = _comparison(runs)
    document: dict[str, JsonValue] = {
        "benchmark": "build",
        "chips": list(settings.chips),
        "changed_kernel": CHANGED_KERNEL.as_posix(),
        "comparison": comparison,
        "load_average_1min": {"after": load_average(), "before": load_before},
        "machine": machine(),
        "project": relative_to_repo(PROJECT),
        "repeat": args.repeat,
        "scenarios": {
            scenario.name: _scenario_result(scenario, runs[scenario.name]) for scenario in SCENARIOS
        },
        "toolchain": f"sim ({runs['cold_jobs1'][0].details['toolchain']})",
    }
    path = write_results("build", document)
    _print(runs, comparison)
    print(f"\nwrote {relative_to_repo(path)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
