"""The lowering's entry for builds: parse a program file and lower its programs for some chips.

Backends lower through here rather than through the pass manager, so that they depend on what
lowering produces, not on how its passes are arranged: every program runs the default pipeline
(which ends in CheckLegality), and the programs of one file are checked together, as one build
holds them (:func:`pypto_build.lowering.legality.shared_trees.check_programs`).
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from pypto_build.lowering.frontend import parse_file
from pypto_build.lowering.ir import Program
from pypto_build.lowering.legality.shared_trees import check_programs
from pypto_build.lowering.passes import default_pipeline


def lower_programs(programs: Sequence[Program], chips: Sequence[str]) -> tuple[Program, ...]:
    """``programs`` through the default pipeline for a build targeting ``chips``, checked
    together."""
    pipeline = default_pipeline(tuple(chips))
    lowered = tuple(pipeline.run(program) for program in programs)
    check_programs(lowered)
    return lowered


def lower_path(path: str | os.PathLike[str], chips: Sequence[str]) -> tuple[Program, ...]:
    """Every program of the file at ``path``, lowered for ``chips``."""
    return lower_programs(parse_file(path), chips)
