"""Rows 1 and 1b of ``docs/performance.md``: the front end, the pass pipeline and the render of
large programs, against Python's own parser.

Every build, ``lower`` and ``render`` parses the package's program files and runs the whole
pass pipeline, and the render writes one sub-build per CHIP pipeline and chip. This benchmark
generates programs of 500, 5,000 and 50,000 collective call sites (``bench/programs.py``: the
sample's stage -> all_to_all_v -> consume group, ``--per-pipeline`` of them in each of many CHIP
pipelines) and times the engine's render step (:func:`pypto_build.chip_build.build.render`:
parse, the default pipeline for the sample's chips, the checks and every chip tree written to
disk) against :func:`ast.parse` of the same text, the cost of merely reading the file as Python.

The project and the rendered trees live in a RAM-backed folder (``--work-dir``, by default
``/dev/shm`` where there is one): the anchor does no I/O, and on the recorded machine's virtual
disk creating one file of a tree in a fresh folder costs about half a millisecond, so a disk
would measure the disk (a render of 5,000 call sites writes 9,000 files into 3,000 folders).

Each size runs in fresh worker processes (this script with ``--worker``). Every worker warms
up on a small program (one-time costs such as compiling the builtin templates are not what this
measures). The timing worker then alternates parser and engine runs, each after a
``gc.collect()``; the ratio is of the medians. A last, untimed run splits the engine's time by
phase and pass. Memory workers measure the peak resident set of one parse and of one render
(the rise of ``VmHWM`` over the resident set just before), and, up to ``--traced-max`` call
sites, the Python heap with :mod:`tracemalloc`: its peak, and what is still allocated once the
render's result is dropped — a build must leave nothing behind in a process that goes on (the
hatchling hook runs in pip's build backend, a language server would run ``lower`` again and
again).

Sizes of ``--large`` call sites and more (50,000 by default: a parse takes seconds and a render
a minute) have no timing worker: their times are the memory workers' runs, one parse and one
render each in its own fresh process, and their phases are not split. That keeps the script,
and ``bench/run_all``, to a few minutes.

Row 1c is what a user waits for: the whole ``pypto-build render PROGRAM --out DIR`` process
(no ``--chip``: every chip the program supports), interpreter start-up and imports included,
against a whole process that only reads the file and ``ast.parse``s it, alternating, on a
program of another shape (``--process-sites`` call sites, ``--process-per-pipeline`` in each
CHIP pipeline: 2,000 and 4 by default, so that per-pipeline costs weigh more than in row 1).
Both run with bytecode caching allowed (``PYTHONDONTWRITEBYTECODE`` removed), after one untimed
render that writes it, as an installed pypto-build runs.

Targets: the render at most 5x the parser at every size, the ratio at 50,000 no worse than at
5,000 (the cost per statement must not grow with the program), the peak resident set at most
1.2x the parser's, nothing retained, and the whole render process at most 5x the parsing one.
Writes ``bench/results/frontend.json``; exits 1 when a target is missed. Run: ``python
bench/bench_frontend.py [--sizes 500 5000 50000]``.
"""

from __future__ import annotations

import argparse
import ast
import gc
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from programs import write_pipelines
from recording import (
    JsonValue,
    Target,
    load_average,
    machine,
    median,
    peak_rss_kib,
    print_table,
    relative_to_repo,
    report_targets,
    reset_peak_rss,
    rss_kib,
    run_worker,
    summary,
    targets_exit_status,
    write_results,
)

from pypto_build.chip_build.build import render
from pypto_build.chip_build.subbuild import SourceProgram, plan_trees, write_trees
from pypto_build.lowering.frontend import parse_file
from pypto_build.lowering.legality.shared_trees import check_programs
from pypto_build.lowering.passes import Pass, default_pipeline

#: The chips of the sample package, which the render targets.
CHIPS = ("a3", "a5")
SIZES = (500, 5000, 50000)
PER_PIPELINE = 10
#: The render may take at most this many times the parser's time, at every size.
RATIO_LIMIT = 5.0
#: The render's peak resident set may be at most this many times the parser's.
PEAK_LIMIT = 1.2
#: What may stay allocated after a render whose result is dropped, in KiB: nothing that grows
#: with the program (a few KiB of interpreter bookkeeping is not a build's).
RETAINED_LIMIT_KIB = 64
WARM_UP_SITES = 20


# --- worker side ---------------------------------------------------------------------------


def _project(spec: Mapping[str, Any], root: Path) -> tuple[Path, str]:
    """The generated project of ``spec`` under ``root`` (after a warm-up render of a small
    one), and its program text."""
    warm = write_pipelines(root / "warm", WARM_UP_SITES, PER_PIPELINE)
    _render(warm.program, warm.root, root / "warm-out")
    project = write_pipelines(root / "project", int(spec["size"]), int(spec["per_pipeline"]))
    return project.program, project.program.read_text(encoding="utf-8")


def _render(program: Path, source_root: Path, out: Path) -> None:
    render([program], chips=CHIPS, out_dir=out, source_root=source_root)


def _timed(action: Callable[[], object]) -> float:
    gc.collect()
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def _work_time(spec: Mapping[str, Any]) -> dict[str, Any]:
    """Parser and render runs, alternating which goes first; then the phases of one more."""
    with tempfile.TemporaryDirectory(prefix="pypto-bench-", dir=spec["work_dir"]) as folder:
        root = Path(folder)
        program, text = _project(spec, root)
        parser: list[float] = []
        engine: list[float] = []
        for index in range(int(spec["repeat"])):
            out = root / f"out{index}"

            def parse() -> None:
                parser.append(_timed(lambda: ast.parse(text)))

            def build(out: Path = out) -> None:
                engine.append(_timed(lambda: _render(program, program.parent, out)))

            for step in (parse, build) if index % 2 == 0 else (build, parse):
                step()
            shutil.rmtree(out)
        phases = _phases(program, root / "phases")
    return {"parser_s": parser, "engine_s": engine, "phases_s": phases}


def _phases(program: Path, out: Path) -> dict[str, float]:
    """One render split into its steps: the front end, each pass, the cross-program checks,
    planning the trees in memory and writing them (the same work :func:`render` does)."""
    gc.collect()
    seconds: dict[str, float] = {}
    start = time.perf_counter()
    parsed = parse_file(program)
    mark = time.perf_counter()
    seconds["front end"] = mark - start

    def instrument(finished: Pass, _: object) -> None:
        nonlocal mark
        now = time.perf_counter()
        seconds[f"pass {finished.name}"] = now - mark
        mark = now

    pipeline = default_pipeline(CHIPS)
    mark = time.perf_counter()
    lowered = tuple(pipeline.run(each, (instrument,)) for each in parsed)
    del parsed
    start = time.perf_counter()
    check_programs(lowered)
    seconds["check programs"] = time.perf_counter() - start
    sources = [SourceProgram(program, each) for each in lowered]
    start = time.perf_counter()
    trees = plan_trees(sources, CHIPS, program.parent)
    seconds["plan trees"] = time.perf_counter() - start
    out.mkdir()
    start = time.perf_counter()
    write_trees(trees, out)
    seconds["write trees"] = time.perf_counter() - start
    return seconds


def _work_memory(spec: Mapping[str, Any]) -> dict[str, Any]:
    """The peak resident set and the time of one parse or one render, and optionally its
    traced heap."""
    with tempfile.TemporaryDirectory(prefix="pypto-bench-", dir=spec["work_dir"]) as folder:
        root = Path(folder)
        program, text = _project(spec, root)
        if spec["kind"] == "parser":

            def action(_: int) -> None:
                ast.parse(text)

        else:

            def action(index: int) -> None:
                _render(program, program.parent, root / f"out{index}")

        gc.collect()
        before = rss_kib()
        reset_peak_rss()
        start = time.perf_counter()
        action(0)
        seconds = time.perf_counter() - start
        result: dict[str, Any] = {"peak_rss_kib": peak_rss_kib() - before, "seconds": seconds}
        if spec["traced"]:
            gc.collect()
            tracemalloc.start()
            try:
                base = tracemalloc.get_traced_memory()[0]
                action(1)
                gc.collect()
                current, peak = tracemalloc.get_traced_memory()
            finally:
                tracemalloc.stop()
            result["traced_peak_kib"] = (peak - base) // 1024
            result["retained_kib"] = (current - base) // 1024
    return result


_WORKERS: dict[str, Callable[[Mapping[str, Any]], dict[str, Any]]] = {
    "time": _work_time,
    "memory": _work_memory,
}


# --- parent side ---------------------------------------------------------------------------

#: The anchor process of row 1c: read a file and parse it, nothing else.
_PARSE_ONLY = "import ast, sys; ast.parse(open(sys.argv[1], encoding='utf-8').read())"


def _measure_process(args: argparse.Namespace) -> dict[str, JsonValue]:
    """Row 1c: whole ``pypto-build render`` processes against whole parsing processes."""
    console = Path(sys.executable).parent / "pypto-build"
    environ = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    with tempfile.TemporaryDirectory(prefix="pypto-bench-", dir=args.work_dir) as folder:
        root = Path(folder)
        project = write_pipelines(root / "project", args.process_sites, args.process_per_pipeline)
        out = root / "out"
        commands = {
            "render": [str(console), "render", str(project.program), "--out", str(out)],
            "parser": [sys.executable, "-c", _PARSE_ONLY, str(project.program)],
        }

        def wall(name: str) -> float:
            start = time.perf_counter()
            subprocess.run(commands[name], check=True, stdout=subprocess.DEVNULL, env=environ)
            return time.perf_counter() - start

        wall("render")  # untimed: writes the bytecode an installed pypto-build would have
        walls: dict[str, list[float]] = {name: [] for name in commands}
        for index in range(args.process_repeat):
            for name in commands if index % 2 == 0 else reversed(commands):
                walls[name].append(wall(name))
    return {
        "call_sites": args.process_sites,
        "per_pipeline": args.process_per_pipeline,
        "pipelines": -(-args.process_sites // args.process_per_pipeline),
        "command": "pypto-build render PROGRAM --out DIR",
        "wall_s": {name: summary(values) for name, values in walls.items()},
        "ratio_of_medians": round(median(walls["render"]) / median(walls["parser"]), 3),
    }


def _measure(size: int, args: argparse.Namespace) -> dict[str, JsonValue]:
    script = Path(__file__).resolve()
    common: dict[str, JsonValue] = {
        "size": size,
        "per_pipeline": args.per_pipeline,
        "work_dir": args.work_dir,
    }
    traced = size <= args.traced_max
    memory = {
        kind: run_worker(script, {**common, "worker": "memory", "kind": kind, "traced": traced})
        for kind in ("parser", "engine")
    }
    result: dict[str, JsonValue] = {
        "call_sites": size,
        "pipelines": -(-size // args.per_pipeline),
    }
    if size < args.large:
        timing = run_worker(script, {**common, "worker": "time", "repeat": args.repeat})
        parser, engine = timing["parser_s"], timing["engine_s"]
        phases = {name: round(value, 4) for name, value in timing["phases_s"].items()}
        result["engine_phases_s"] = phases
    else:
        parser, engine = [memory["parser"]["seconds"]], [memory["engine"]["seconds"]]
    result |= {
        "timed_by": "timing worker" if size < args.large else "memory workers, one run each",
        "parser_s": summary(parser),
        "engine_s": summary(engine),
        "ratio_of_medians": round(median(engine) / median(parser), 3),
        "peak_rss_kib": {kind: memory[kind]["peak_rss_kib"] for kind in memory},
        "peak_rss_ratio": round(
            memory["engine"]["peak_rss_kib"] / max(1, memory["parser"]["peak_rss_kib"]), 3
        ),
    }
    if traced:
        result["traced_peak_kib"] = {kind: memory[kind]["traced_peak_kib"] for kind in memory}
        result["retained_kib"] = memory["engine"]["retained_kib"]
    return result


def _targets(
    runs: Sequence[Mapping[str, Any]], process: Mapping[str, Any] | None = None
) -> list[Target]:
    targets: list[Target] = []
    for run in runs:
        sites = f"{run['call_sites']:,} call sites"
        targets.append(
            Target(
                "1",
                f"parse + pipeline + render, {sites}",
                run["ratio_of_medians"],
                RATIO_LIMIT,
                "x",
                "ast.parse of the same text",
            )
        )
    ratios = {run["call_sites"]: run["ratio_of_medians"] for run in runs}
    if 5000 in ratios and 50000 in ratios:
        targets.append(
            Target(
                "1",
                "ratio at 50,000 call sites over the ratio at 5,000",
                ratios[50000] / ratios[5000],
                1.0,
                "x",
                "the same ratio at 5,000 call sites",
            )
        )
    for run in runs:
        sites = f"{run['call_sites']:,} call sites"
        targets.append(
            Target(
                "1b",
                f"peak resident set, {sites}",
                run["peak_rss_ratio"],
                PEAK_LIMIT,
                "x",
                "ast.parse's own peak",
            )
        )
        if "retained_kib" in run:
            targets.append(
                Target(
                    "1b",
                    f"heap retained after the render, {sites}",
                    run["retained_kib"],
                    RETAINED_LIMIT_KIB,
                    " KiB",
                    "nothing (tracemalloc, result dropped)",
                )
            )
    if process is not None:
        targets.append(
            Target(
                "1c",
                f"whole render process, {process['call_sites']:,} call sites, "
                f"{process['per_pipeline']} per CHIP pipeline",
                process["ratio_of_medians"],
                RATIO_LIMIT,
                "x",
                f"a process that only parses the file "
                f"({process['wall_s']['parser']['median']:.2f} s)",
            )
        )
    return targets


def _default_work_dir() -> str:
    """``/dev/shm`` when it is a writable folder (a RAM-backed file system), else the
    system's temporary folder."""
    shm = Path("/dev/shm")
    return str(shm) if shm.is_dir() and os.access(shm, os.W_OK) else tempfile.gettempdir()


def _print(runs: Sequence[Mapping[str, Any]]) -> None:
    print("parse + pipeline + render (engine) against ast.parse (parser), medians")
    rows = []
    for run in runs:
        rss = run["peak_rss_kib"]
        rows.append(
            [
                f"{run['call_sites']:,}",
                str(run["pipelines"]),
                f"{run['parser_s']['median']:.3f}",
                f"{run['engine_s']['median']:.3f}",
                f"{run['ratio_of_medians']:.2f}",
                f"{rss['parser'] // 1024} / {rss['engine'] // 1024}",
                f"{run['peak_rss_ratio']:.2f}",
                str(run.get("retained_kib", "-")),
            ]
        )
    header = ["call sites", "pipelines", "parser s", "engine s", "ratio"]
    print_table([*header, "peak MiB p/e", "peak ratio", "retained KiB"], rows)
    split = [run for run in runs if "engine_phases_s" in run]
    if not split:
        return
    last = split[-1]
    print(f"\nengine phases at {last['call_sites']:,} call sites (s, one run)")
    print_table(
        ["phase", "s"], [[name, f"{value:.3f}"] for name, value in last["engine_phases_s"].items()]
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--sizes",
        type=int,
        nargs="+",
        default=list(SIZES),
        help="call sites (default: %(default)s)",
    )
    parser.add_argument(
        "--per-pipeline",
        type=int,
        default=PER_PIPELINE,
        help="call sites per CHIP pipeline (default: %(default)s)",
    )
    parser.add_argument(
        "--repeat", type=int, default=3, help="timed runs of each, per size (default: 3)"
    )
    parser.add_argument(
        "--large",
        type=int,
        default=50000,
        help="sizes from which the memory workers' single runs are the times (default: "
        "%(default)s)",
    )
    parser.add_argument(
        "--traced-max",
        type=int,
        default=5000,
        help="largest size whose heap is also traced (default: %(default)s)",
    )
    parser.add_argument(
        "--work-dir",
        default=_default_work_dir(),
        help="where projects and trees are written (default: %(default)s)",
    )
    parser.add_argument(
        "--process-sites",
        type=int,
        default=2000,
        help="call sites of the whole-process row, 0 for none (default: %(default)s)",
    )
    parser.add_argument(
        "--process-per-pipeline",
        type=int,
        default=4,
        help="call sites per CHIP pipeline of the whole-process row (default: %(default)s)",
    )
    parser.add_argument(
        "--process-repeat",
        type=int,
        default=5,
        help="timed runs of each process (default: %(default)s)",
    )
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker is not None:
        spec = json.loads(args.worker)
        print(json.dumps(_WORKERS[spec["worker"]](spec)))
        return 0
    load_before = load_average()
    runs = [_measure(size, args) for size in sorted(set(args.sizes))]
    process = _measure_process(args) if args.process_sites > 0 else None
    _print(runs)
    if process is not None:
        walls = process["wall_s"]
        print(
            f"\nwhole processes, {process['call_sites']:,} call sites in "
            f"{process['pipelines']} pipelines: render {walls['render']['median']:.2f} s, "
            f"parse {walls['parser']['median']:.2f} s, ratio {process['ratio_of_medians']:.2f}"
        )
    targets = _targets(runs, process)
    document: dict[str, JsonValue] = {
        "benchmark": "frontend",
        "chips": list(CHIPS),
        "load_average_1min": {"after": load_average(), "before": load_before},
        "machine": machine(),
        "per_pipeline": args.per_pipeline,
        "repeat": args.repeat,
        "large": args.large,
        "work_dir": args.work_dir,
        "runs": list(runs),
        "process": process,
        "targets": report_targets(targets),
    }
    path = write_results("frontend", document)
    print(f"\nwrote {relative_to_repo(path)}")
    return targets_exit_status(targets)


if __name__ == "__main__":
    raise SystemExit(main())
