"""The names a build writes out: every function that becomes a sub-build, a kernel or the HOST
orchestrator.

A function's name becomes a C++ identifier (the orchestration's entry, the kernel's config
entry), a file name (``kernels/aiv/<name>.cpp``, its binary, the staging file written beside
it) and a Python identifier in ``host_orch.py``. Python accepts any Unicode identifier and any
length, so ``lower`` alone would accept names no build can write; checking them here makes
``lower --after all``, ``render`` and ``build`` refuse the same names with the same message.
"""

from __future__ import annotations

import re

from pypto_build.lowering.diagnostics import ProgramError
from pypto_build.lowering.ir import Function
from pypto_build.lowering.pass_names import CHECK_LEGALITY

PHASE = CHECK_LEGALITY
#: The longest name a build writes: ``<name>.cpp`` and the temporary ``.<name>.cpp.<8>.tmp``
#: written beside it must fit the 255 bytes of a file name.
MAX_NAME_LENGTH = 200
_C_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def check_output_name(func: Function) -> None:
    """Reject a function whose name a build cannot write as a C++ identifier and file name."""
    if _C_IDENTIFIER.fullmatch(func.name) is None:
        raise ProgramError(
            f"function name '{func.name}' is not an ASCII C identifier: a build writes it into "
            "C++ sources, file names and kernel_config.py, so it may hold only the letters "
            "A-Z and a-z, digits and '_'",
            func.span,
            PHASE,
        )
    if len(func.name) > MAX_NAME_LENGTH:
        raise ProgramError(
            f"function name '{func.name[:16]}...' is {len(func.name)} characters long: a "
            f"build writes it as a file name, so at most {MAX_NAME_LENGTH} are allowed",
            func.span,
            PHASE,
        )
