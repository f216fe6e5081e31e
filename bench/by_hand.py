"""The by-hand build the engine is compared with: a shell script running the toolchain's own
compile and link commands one after another, with no pypto-build and no cache.

Both sides then do the same work (the same compiler invocations on the same sources), so the
difference between them is what the tool adds.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from pathlib import Path

from pypto_build.chip_build.compile import find_jobs
from pypto_build.chip_build.toolchains import Toolchain


def by_hand_script(
    tree: Path, chips: Sequence[str], scratch: Path, toolchain: Toolchain
) -> tuple[str, int]:
    """A shell script compiling every source of the rendered ``tree`` serially, as a person
    would without pypto-build, and how many sources it compiles. It runs the toolchain's own
    command lines (so both sides compile exactly the same) and writes under ``scratch``."""
    lines = ["set -e"]
    units = 0
    for chip in chips:
        for index, job in enumerate(find_jobs(tree / chip, chip)):
            stage = scratch / chip / str(index)
            stage.mkdir(parents=True)
            lines.append(f"cd {shlex.quote(str(job.source_path.parent))}")
            lines += [shlex.join(step.argv) for step in toolchain.plan(job, stage).steps]
            units += 1
    return "\n".join(lines) + "\n", units
