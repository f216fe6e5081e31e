"""What the programs of one build must agree on: they share each chip's tree.

A build renders every program of its files into one tree per chip. Sub-builds are named after
their CHIP orchestrations, so those names must be unique across the programs; and PyPTO's L3
loader runs one HOST orchestrator module per tree, so a build holds at most one HOST
orchestrator. ``lower`` checks the programs of its file, a render those of all its files.
"""

from __future__ import annotations

from collections.abc import Sequence

from pypto_build.lowering.diagnostics import ProgramError
from pypto_build.lowering.ir import Program
from pypto_build.lowering.pass_names import CHECK_LEGALITY
from pypto_build.tree_layout import HOST_MODULE, NEXT_LEVELS

PHASE = CHECK_LEGALITY


def check_programs(programs: Sequence[Program]) -> None:
    """Reject the first function that would share its output with another program's."""
    # Programs are told apart by position, not by class name: two files may define classes
    # of the same name, and the second must not silently replace the first's sub-builds.
    owners: dict[str, int] = {}
    host: tuple[str, str] | None = None
    for index, program in enumerate(programs):
        for func in program.functions:
            if func.is_chip_orchestration:
                owner = owners.setdefault(func.name, index)
                if owner != index:
                    raise ProgramError(
                        f"'{func.name}' of program '{program.name}' and a function of program "
                        f"{_describe(programs[owner], program)} both produce "
                        f"{NEXT_LEVELS}/{func.name}: sub-builds are named after their functions, "
                        "so these names must be unique across the programs of a build",
                        func.span,
                        PHASE,
                    )
        for func in program.functions:
            if not func.is_host_orchestrator:
                continue
            if host is not None:
                other_program, other = host
                raise ProgramError(
                    f"HOST orchestrator '{func.name}' of program '{program.name}' and HOST "
                    f"orchestrator '{other}' of program '{other_program}' would share one chip "
                    f"tree: PyPTO's runtime loads one {HOST_MODULE} per tree, so a build holds "
                    "at most one HOST orchestrator (build the others as separate packages)",
                    func.span,
                    PHASE,
                )
            host = (program.name, func.name)


def _describe(owner: Program, program: Program) -> str:
    """How a diagnostic names ``owner`` beside ``program``: by class name, and by its file
    and line where the two share a name."""
    if owner.name != program.name:
        return f"'{owner.name}'"
    return f"'{owner.name}' ({owner.span.file}:{owner.span.line})"
