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
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

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
