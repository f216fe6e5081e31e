"""What both benchmarks share: a description of the machine, summaries of repeated
measurements and the results file format.

Numbers from a benchmark only mean something next to the machine that produced them, so every
results file carries the CPU, core count, memory and tool versions read at run time. Results
hold no timestamps, absolute paths or host names: two runs on one machine differ only in the
measurements, which keeps the committed files reviewable as diffs.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pypto_build.chip_build.jobs import meminfo_bytes, usable_cpus
from pypto_build.chip_build.toolchains import ToolchainError
from pypto_build.chip_build.toolchains.base import first_output_line

#: The repository root (this file lives in ``<root>/bench``).
REPO_ROOT = Path(__file__).resolve().parent.parent
RESULTS_DIR = REPO_ROOT / "bench" / "results"

JsonValue = None | bool | int | float | str | Sequence["JsonValue"] | Mapping[str, "JsonValue"]


def _cpu_model(cpuinfo: Path = Path("/proc/cpuinfo")) -> str:
    try:
        text = cpuinfo.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return platform.processor() or "unknown"
    for line in text.splitlines():
        name, _, value = line.partition(":")
        if name.strip() == "model name":
            return value.strip()
    return platform.processor() or "unknown"


def _memory_gib() -> float | None:
    total = meminfo_bytes("MemTotal")
    return None if total is None else round(total / (1 << 30), 1)


def _first_line(argv: Sequence[str]) -> str | None:
    try:
        return first_output_line(argv)
    except ToolchainError:
        return None


def machine() -> dict[str, JsonValue]:
    """The machine the measurements come from: what ``nproc``, ``/proc/cpuinfo``,
    ``/proc/meminfo``, ``python -V`` and ``g++ --version`` say right now."""
    return {
        "cpu_model": _cpu_model(),
        "cpus": usable_cpus(),
        "gxx": _first_line([os.environ.get("CXX") or "g++", "--version"]),
        "memory_gib": _memory_gib(),
        "os": f"{platform.system()} {platform.release()}",
        "python": f"{platform.python_implementation()} {platform.python_version()}",
    }


def load_average() -> float | None:
    """The 1-minute load average: other work on the machine while a benchmark ran (the
    recorded machine has 2 cores, so a load near 2 before a run means noisy numbers)."""
    if not hasattr(os, "getloadavg"):
        return None
    return round(os.getloadavg()[0], 2)


def summary(values: Sequence[float], digits: int = 4) -> dict[str, JsonValue]:
    """Min, median and max of repeated measurements, and every run in order."""
    if not values:
        raise ValueError("no measurements to summarise")
    return {
        "max": round(max(values), digits),
        "median": round(statistics.median(values), digits),
        "min": round(min(values), digits),
        "runs": [round(value, digits) for value in values],
    }


def write_results(name: str, document: Mapping[str, JsonValue]) -> Path:
    """Write ``bench/results/<name>.json`` (sorted keys, indent 2) and return its path."""
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    path = RESULTS_DIR / f"{name}.json"
    text = json.dumps(document, indent=2, sort_keys=True) + "\n"
    temporary = path.with_suffix(".json.tmp")
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, path)
    return path


def relative_to_repo(path: Path) -> str:
    """``path`` relative to the repository root, as results record paths."""
    return path.resolve().relative_to(REPO_ROOT).as_posix()


def print_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    """Print a plain fixed-width table: first column left-aligned, the rest right-aligned."""
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]

    def line(cells: Sequence[str]) -> str:
        first = cells[0].ljust(widths[0])
        rest = [cell.rjust(width) for cell, width in zip(cells[1:], widths[1:], strict=True)]
        return "  ".join([first, *rest])

    print(line(header))
    print("  ".join("-" * width for width in widths))
    for row in rows:
        print(line(row))


class BenchmarkFailure(SystemExit):
    """A measured run did not behave as the code promises: its numbers would be meaningless,
    so the script stops, naming itself and what went wrong."""

    def __init__(self, message: str) -> None:
        super().__init__(f"{Path(sys.argv[0]).stem}: FAILED: {message}")


# --- targets ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Target:
    """One row of ``docs/performance.md``: a figure measured against an anchor of the same run,
    and the limit it must stay within.

    Machines are noisy and differ, so a target is a ratio to an anchor measured alongside (or,
    where the issue states it so, an absolute figure next to its anchor); ``at_most`` says
    which side of ``limit`` the value must be on.
    """

    row: str
    what: str
    value: float
    limit: float
    unit: str
    anchor: str
    at_most: bool = True

    @property
    def met(self) -> bool:
        return self.value <= self.limit if self.at_most else self.value >= self.limit

    def as_json(self) -> dict[str, JsonValue]:
        return {
            "anchor": self.anchor,
            "limit": self.limit,
            "met": self.met,
            "relation": "at most" if self.at_most else "at least",
            "row": self.row,
            "unit": self.unit,
            "value": round(self.value, 4),
            "what": self.what,
        }

    def line(self) -> str:
        relation = "<=" if self.at_most else ">="
        verdict = "met" if self.met else "MISSED"
        return (
            f"row {self.row}: {self.what}: {self.value:.3g}{self.unit} "
            f"(target {relation} {self.limit:g}{self.unit}; anchor: {self.anchor}) {verdict}"
        )


def report_targets(targets: Sequence[Target]) -> list[JsonValue]:
    """Print each target's line and return them for the results file."""
    print()
    for target in targets:
        print(target.line())
    return [target.as_json() for target in targets]


def targets_exit_status(targets: Sequence[Target]) -> int:
    """A benchmark's exit status: 1 when a target is missed (``bench/run_all`` adds them up)."""
    return 0 if all(target.met for target in targets) else 1


# --- worker processes ------------------------------------------------------------------------


def run_worker(
    script: Path, spec: Mapping[str, JsonValue], env: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """Run ``script --worker <spec as JSON>`` in a fresh interpreter and return the JSON
    object it prints last: each measurement in its own process, so that one measurement's
    heap, caches and peak memory do not leak into the next."""
    argv = [sys.executable, str(script), "--worker", json.dumps(spec)]
    done = subprocess.run(argv, capture_output=True, text=True, check=False, env=env)
    if done.returncode != 0:
        raise BenchmarkFailure(f"worker {spec} exited {done.returncode}:\n{done.stderr}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def median(values: Sequence[float]) -> float:
    return statistics.median(values)


def rss_kib() -> int:
    """This process's resident set now (``VmRSS``), in KiB."""
    return _status_kib("VmRSS")


def peak_rss_kib() -> int:
    """The largest resident set since the last :func:`reset_peak_rss` (``VmHWM``), in KiB."""
    return _status_kib("VmHWM")


def reset_peak_rss() -> None:
    """Start a new peak: Linux resets ``VmHWM`` to the current RSS on writing 5 to
    ``/proc/self/clear_refs``, so a measurement's peak excludes what came before it."""
    Path("/proc/self/clear_refs").write_text("5", encoding="ascii")


def _status_kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text(encoding="ascii").splitlines():
        name, _, value = line.partition(":")
        if name == field:
            return int(value.split()[0])
    raise RuntimeError(f"/proc/self/status has no {field}")
