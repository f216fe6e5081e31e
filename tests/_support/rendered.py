"""The test programs rendered by the sub-build tests, and helpers to walk their trees."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from pypto_build.chip_build.chips import CHIPS
from pypto_build.chip_build.subbuild import lower_file, render_subbuilds
from pypto_build.tree_layout import SUB_BUILD_CONFIGS

PROGRAMS_DIR = Path(__file__).resolve().parent.parent / "programs"
ALL_CHIPS = tuple(chip.name for chip in CHIPS)
#: The test programs (``tests/programs/<stem>.py``) whose whole rendered trees the tests check.
RENDERED_STEMS = (
    "chip_pipeline",
    "chip_rail_int8",
    "host_rail_fp32",
    "host_rail_int8",
    "orchestration_features",
)

#: The ``rendered`` fixture: the tree of a test program, by file stem.
Render = Callable[[str], Path]


def render_program(stem: str, out: Path) -> Path:
    """Render ``tests/programs/<stem>.py`` for every chip into ``out``; return ``out``."""
    path = PROGRAMS_DIR / f"{stem}.py"
    render_subbuilds(lower_file(path, ALL_CHIPS), ALL_CHIPS, out, source_root=PROGRAMS_DIR)
    return out


def sub_builds(tree: Path) -> list[Path]:
    """Every sub-build folder (``<chip>/next_levels/<name>``) of a rendered tree, sorted."""
    return sorted(path.parent for path in tree.glob(f"*/{SUB_BUILD_CONFIGS}"))
