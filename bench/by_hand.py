"""The by-hand build the engine is compared with: a shell script running the toolchain's own
compile and link commands one after another, with no pypto-build and no cache.

Both sides then do the same work (the same compiler invocations on the same sources), so the
difference between them is what the tool adds.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from pathlib import Path

from pypto_build.chip_build.compile import find_jobs, start_order
from pypto_build.chip_build.toolchains import Toolchain


def by_hand_units(
    tree: Path, chips: Sequence[str], scratch: Path, toolchain: Toolchain
) -> list[str]:
    """One shell snippet per source of the rendered ``tree`` (change to its folder, compile,
    link), with the toolchain's own command lines, writing under ``scratch``; in the order the
    engine starts parallel compiles (:func:`~pypto_build.chip_build.compile.start_order`)."""
    units: list[str] = []
    for chip in chips:
        for index, job in enumerate(start_order(find_jobs(tree / chip, chip))):
            stage = scratch / chip / str(index)
            stage.mkdir(parents=True)
            lines = [f"cd {shlex.quote(str(job.source_path.parent))}"]
            lines += [shlex.join(step.argv) for step in toolchain.plan(job, stage).steps]
            units.append("\n".join(lines) + "\n")
    return units


def by_hand_script(
    tree: Path, chips: Sequence[str], scratch: Path, toolchain: Toolchain
) -> tuple[str, int]:
    """A shell script compiling every source of the rendered ``tree`` serially, as a person
    would without pypto-build, and how many sources it compiles (:func:`by_hand_units`)."""
    units = by_hand_units(tree, chips, scratch, toolchain)
    return "set -e\n" + "".join(units), len(units)
