"""Reliability figures for docs/reliability.md: concurrent builds, random kills, fuzzing.

* **Concurrent builds.** ``--concurrent N`` builds of ``samples/moe_a2a`` (sim, chips a3 and
  a5) start at once, each into its own output folder, all sharing one cold compile cache; then
  ``--same-folder M`` builds start at once into one output folder. Every tree must equal a
  serial build's byte for byte (compile logs aside), every process exit 0, none print a
  traceback, and nothing may be left beside the folders.
* **Random kills.** ``--kills K`` times, a build of the tiny program (its kernel changed each
  time) into a folder holding the previous build is SIGKILLed after a random delay drawn from
  zero to the measured length of one build; the folder must hold the old tree or the new one,
  and the next build must succeed with the new tree and leave no debris. (The kill test in
  ``tests/chip_build/test_publish.py`` stops a build at every publish step as well.)
* **Fuzzing.** ``--fuzz-seconds S`` of the program fuzzer (``tests/_support/program_fuzzer.py``)
  through the front end, the passes, the printer and the render plan; every crash is listed.

Results go to ``bench/results/reliability.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from recording import REPO_ROOT, load_average, machine, print_table, write_results

# The fuzzer and the tiny project are the tests' own (tests/_support).
sys.path.insert(0, str(REPO_ROOT / "tests"))
from _support.program_fuzzer import fuzz
from _support.tiny_project import write_project

SAMPLE = REPO_ROOT / "samples" / "moe_a2a"


def _pypto_build(argv: Sequence[str], env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "pypto_build", *argv],
        env={**os.environ, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _finish(process: subprocess.Popen[str]) -> tuple[int, str]:
    _, err = process.communicate()
    return process.returncode, err


def _tree(folder: Path) -> dict[str, bytes]:
    return {
        path.relative_to(folder).as_posix(): path.read_bytes()
        for path in sorted(folder.rglob("*"))
        if path.is_file() and ".pypto-build-logs" not in path.parts
    }


def concurrent_builds(work: Path, count: int, same_folder: int) -> dict[str, object]:
    """``count`` builds into their own folders and ``same_folder`` into one, at once."""
    project = work / "moe_a2a"
    shutil.copytree(SAMPLE, project)
    env = {"PYPTO_CACHE_DIR": str(work / "cache"), "PYPTO_TOOLCHAIN": "sim"}
    reference_env = {**env, "PYPTO_CACHE_DIR": str(work / "reference-cache")}
    code, err = _finish(
        _pypto_build(["build", str(project), "--out", str(work / "ref")], reference_env)
    )
    assert code == 0, err
    reference = _tree(work / "ref")
    started = time.monotonic()

    def one(out: Path) -> tuple[int, str]:
        return _finish(_pypto_build(["build", str(project), "--out", str(out)], env))

    outs = [work / "outs" / f"out{index}" for index in range(count)]
    shared = [work / "shared" / "out"] * same_folder
    (work / "shared").mkdir()
    with ThreadPoolExecutor(max_workers=count + same_folder) as pool:
        results = list(pool.map(one, [*outs, *shared]))
    seconds = time.monotonic() - started
    failures = [err for code, err in results if code != 0 or "Traceback" in err]
    identical = sum(_tree(out) == reference for out in outs)
    leftovers = sorted(p.name for p in (work / "shared").iterdir() if p.name != "out")
    leftovers += sorted(p.name for p in (work / "outs").iterdir() if p.name.startswith("."))
    return {
        "builds_own_folders": count,
        "builds_one_folder": same_folder,
        "failures": len(failures),
        "identical_to_serial": identical,
        "one_folder_identical": _tree(work / "shared" / "out") == reference,
        "leftovers": leftovers,
        "seconds": round(seconds, 1),
    }


def random_kills(work: Path, kills: int, seed: int) -> dict[str, object]:
    """``kills`` builds killed at random instants, each followed by a build that must work."""
    rng = random.Random(seed)
    env = {"PYPTO_CACHE_DIR": str(work / "cache")}
    project = work / "tiny"
    program = write_project(project, version=0)
    out = project / "out"
    argv = ["build", str(program), "--out", str(out), "--chip", "a3", "--toolchain", "sim"]
    started = time.monotonic()
    code, err = _finish(_pypto_build(argv, env))
    assert code == 0, err
    length = time.monotonic() - started
    survived = old_seen = new_seen = 0
    problems: list[str] = []
    for index in range(1, kills + 1):
        old = _tree(out)
        write_project(project, version=index)
        process = _pypto_build(argv, env)
        time.sleep(rng.uniform(0, length))
        process.send_signal(signal.SIGKILL)
        process.communicate()
        if not out.is_dir():
            problems.append(f"kill {index}: output folder missing")
        elif _tree(out) == old:
            old_seen += 1
        else:
            new_seen += 1
        code, err = _finish(_pypto_build(argv, env))
        debris = sorted(p.name for p in project.iterdir() if p.name.startswith("."))
        if code != 0 or debris:
            problems.append(f"kill {index}: rebuild exit {code}, debris {debris}: {err[-200:]}")
        else:
            survived += 1
    return {
        "kills": kills,
        "survived": survived,
        "left_old_tree": old_seen,
        "left_new_tree": new_seen,
        "problems": problems,
        "build_seconds": round(length, 2),
    }


def fuzzing(work: Path, seconds: float, seed: int) -> dict[str, object]:
    started = time.monotonic()
    report = fuzz(work, seed=seed, seconds=seconds)
    return {
        "seconds": round(time.monotonic() - started, 1),
        "programs": report.programs,
        "outcomes": dict(sorted(report.outcomes.items())),
        "crashes": [f"{mutations}: {error}" for mutations, error in report.crashes[:20]],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--concurrent", type=int, default=48)
    parser.add_argument("--same-folder", type=int, default=16)
    parser.add_argument("--kills", type=int, default=100)
    parser.add_argument("--fuzz-seconds", type=float, default=300)
    parser.add_argument("--seed", type=int, default=11)
    args = parser.parse_args()
    document: dict[str, object] = {"machine": machine(), "load_average": load_average()}
    with tempfile.TemporaryDirectory(prefix="pypto-reliability-") as scratch:
        work = Path(scratch)
        (work / "concurrent").mkdir()
        document["concurrent"] = concurrent_builds(
            work / "concurrent", args.concurrent, args.same_folder
        )
        (work / "kills").mkdir()
        document["kills"] = random_kills(work / "kills", args.kills, args.seed)
        (work / "fuzz").mkdir()
        document["fuzz"] = fuzzing(work / "fuzz", args.fuzz_seconds, args.seed)
    path = write_results("reliability", document)  # type: ignore[arg-type]
    concurrent, kills, fuzzed = document["concurrent"], document["kills"], document["fuzz"]
    print_table(
        ["scenario", "tried", "held"],
        [
            ["builds at once, own folders", str(args.concurrent), json.dumps(concurrent)],
            ["random kills", str(args.kills), str(kills)],  # type: ignore[index]
            ["fuzzed programs", str(fuzzed["programs"]), str(fuzzed["outcomes"])],  # type: ignore[index]
        ],
    )
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
