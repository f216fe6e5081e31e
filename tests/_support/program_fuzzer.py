"""A mutation fuzzer for program files: the front end, the passes, the printer and the render
plan must answer any text with a program diagnostic or a result, never a crash.

Mutants are derived from the repository's own program files (so most of each mutant is a valid
program and the mutation reaches deep into the pipeline): literals replaced by boundary values,
lines deleted, duplicated or swapped, names exchanged, dtypes changed, stray characters and
non-ASCII text inserted, the text truncated. Each mutant is parsed, lowered for the chips,
printed back and planned as the render would plan it, all in memory. Shared by the fast seeded
test (``tests/test_fuzz.py``) and the timed run of ``bench/bench_reliability.py``.
"""

from __future__ import annotations

import random
import re
import shutil
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from pypto_build.builtins import BuiltinRegistryError, ManifestError
from pypto_build.chip_build.render_errors import RenderError
from pypto_build.chip_build.subbuild import lower_file, plan_trees
from pypto_build.lowering.diagnostics import ProgramError
from pypto_build.lowering.printer import print_programs

REPO = Path(__file__).resolve().parents[2]
#: Program files mutants start from, with the folders holding their external kernels.
SEEDS = (
    REPO / "tests" / "programs" / "chip_pipeline.py",
    REPO / "tests" / "programs" / "chip_rail_int8.py",
    REPO / "tests" / "programs" / "host_rail_fp32.py",
    REPO / "tests" / "programs" / "host_rail_int8.py",
    REPO / "tests" / "programs" / "host_rail_ranked.py",
    REPO / "tests" / "programs" / "orchestration_features.py",
    REPO / "samples" / "moe_a2a" / "src" / "moe_a2a" / "pipelines.py",
)
_BOUNDARY = ("0", "-1", "1", "2", "3", "2**31", "2**63", "4294967295", "10**30", "65", "36", "48")
_DTYPES = ("pl.FP32", "pl.INT8", "pl.INT32", "pl.FP16", "pl.BOOL", "pl.INT64", "pl.NOPE")
_STRAY = ("(", ")", "[", "]", ":", ",", "=", '"', "'", "\\", "#", "\t", "\u00e9", "\u4e2d", "\x00")
_INTEGER = re.compile(r"(?<![\w.])\d+(?![\w.])")
_NAME = re.compile(r"\b[A-Za-z_]\w*\b")
_DTYPE = re.compile(r"pl\.(?:FP32|INT8|INT32|FP16|BF16|INT64|UINT8|INT16|BOOL)")
#: What a hostile program may raise: a diagnostic, or the render's refusal of its inputs.
EXPECTED = (ProgramError, RenderError, ManifestError, BuiltinRegistryError)


def _literal(rng: random.Random, text: str) -> str:
    found = list(_INTEGER.finditer(text))
    if not found:
        return text
    match = rng.choice(found)
    return text[: match.start()] + rng.choice(_BOUNDARY) + text[match.end() :]


def _lines(rng: random.Random, text: str, action: str) -> str:
    lines = text.split("\n")
    if len(lines) < 2:
        return text
    i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
    if action == "delete":
        del lines[i]
    elif action == "duplicate":
        lines.insert(i, lines[j])
    else:
        lines[i], lines[j] = lines[j], lines[i]
    return "\n".join(lines)


def _name(rng: random.Random, text: str) -> str:
    found = list(_NAME.finditer(text))
    if len(found) < 2:
        return text
    match, other = rng.choice(found), rng.choice(found)
    return text[: match.start()] + other.group() + text[match.end() :]


def _dtype(rng: random.Random, text: str) -> str:
    found = list(_DTYPE.finditer(text))
    if not found:
        return text
    match = rng.choice(found)
    return text[: match.start()] + rng.choice(_DTYPES) + text[match.end() :]


def _stray(rng: random.Random, text: str) -> str:
    at = rng.randrange(len(text) + 1)
    return text[:at] + rng.choice(_STRAY) + text[at:]


def _truncate(rng: random.Random, text: str) -> str:
    return text[: rng.randrange(len(text) + 1)]


MUTATIONS: dict[str, Callable[[random.Random, str], str]] = {
    "literal": _literal,
    "delete-line": lambda rng, text: _lines(rng, text, "delete"),
    "duplicate-line": lambda rng, text: _lines(rng, text, "duplicate"),
    "swap-lines": lambda rng, text: _lines(rng, text, "swap"),
    "name": _name,
    "dtype": _dtype,
    "stray-character": _stray,
    "truncate": _truncate,
}


@dataclass
class FuzzReport:
    """What a run tried and what came out: ``crashes`` holds each unexpected exception."""

    programs: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)
    crashes: list[tuple[str, str]] = field(default_factory=list)


def mutate(rng: random.Random, text: str) -> tuple[str, str]:
    """One to three random mutations of ``text``; their names and the result."""
    names = [rng.choice(sorted(MUTATIONS)) for _ in range(rng.randint(1, 3))]
    for name in names:
        text = MUTATIONS[name](rng, text)
    return "+".join(names), text


def prepare(workspace: Path) -> list[Path]:
    """Copies of the seeds (with the kernels beside them) under ``workspace``; the mutants
    are written beside each copy, so their external sources resolve."""
    copies = []
    for index, seed in enumerate(SEEDS):
        folder = workspace / f"seed{index}"
        shutil.copytree(seed.parent, folder, ignore=shutil.ignore_patterns("__pycache__"))
        copies.append(folder / seed.name)
    return copies


def try_one(path: Path, chips: tuple[str, ...]) -> str:
    """Run ``path`` through the pipeline for ``chips``; the outcome's name, or raise."""
    try:
        programs = lower_file(path, chips)
        if programs:
            print_programs([source.program for source in programs])
            plan_trees(programs, chips, path.parent)
    except EXPECTED as error:
        return type(error).__name__
    return "accepted"


def fuzz(
    workspace: Path, *, seed: int, count: int | None = None, seconds: float | None = None
) -> FuzzReport:
    """Mutate and try programs until ``count`` were tried or ``seconds`` have passed."""
    import time

    rng = random.Random(seed)
    copies = prepare(workspace)
    report = FuzzReport()
    deadline = None if seconds is None else time.monotonic() + seconds
    while (count is None or report.programs < count) and (
        deadline is None or time.monotonic() < deadline
    ):
        source = rng.choice(copies)
        mutations, text = mutate(rng, source.read_text(encoding="utf-8"))
        mutant = source.with_name("mutant.py")
        mutant.write_text(text, encoding="utf-8", errors="surrogatepass")
        chips = rng.choice((("a3",), ("a5",), ("a2", "a3", "a5")))
        report.programs += 1
        try:
            report.outcomes[try_one(mutant, chips)] += 1
        except Exception as error:  # a crash: what the fuzzer is for
            report.outcomes["crash"] += 1
            report.crashes.append((mutations, f"{type(error).__name__}: {error}"))
    return report
