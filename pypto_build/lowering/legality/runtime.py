"""What the runtime can represent, as the legality checks of both orchestration kinds need it.

The orchestrations a build generates hand tensors to PyPTO's runtime as descriptors and compute
their own scalars; these facts bound what a program may write there, whatever language the
orchestration is generated in.
"""

from __future__ import annotations

from pypto_build.lowering.diagnostics import ProgramError, Span
from pypto_build.lowering.ir import DataType, ScalarType, Type

#: Element types a runtime tensor can hold (a task id is not data).
RUNTIME_DTYPES = frozenset(DataType) - {DataType.TASK_ID}

#: A dimension of a runtime tensor descriptor is a ``uint32_t``.
DESCRIPTOR_DIM_MAX = 2**32 - 1

#: Most ranks one comm domain holds: a ``CommContext`` has ``windowsIn[COMM_MAX_RANK_NUM]``
#: (``kernel_abi.h``, pinned against this value by a test).
COMM_MAX_RANK_NUM = 64


def check_rank_count(nranks: int, span: Span, phase: str) -> None:
    """A collective sized for ``nranks`` ranks (its signal's NR) fits one comm domain."""
    if nranks > COMM_MAX_RANK_NUM:
        raise ProgramError(
            f"collective signal shape[0] (NR = {nranks}) exceeds the {COMM_MAX_RANK_NUM} ranks "
            f"a comm domain holds (the CommContext's windowsIn[{COMM_MAX_RANK_NUM}])",
            span,
            phase,
        )


#: The binary operators orchestration scalars compute with (Python's floor division and
#: modulo included).
BINARY_OPERATORS = frozenset(
    {"+", "-", "*", "//", "%", "<", "<=", ">", ">=", "==", "!=", "and", "or"}
)


def type_text(ty: Type) -> str:
    """A type as diagnostics name it: ``Scalar[int32]``, ``Tensor``, ``CommCtx``."""
    if isinstance(ty, ScalarType):
        return f"Scalar[{ty.dtype.value}]"
    return type(ty).__name__.removesuffix("Type")
