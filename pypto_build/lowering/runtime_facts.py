"""What PyPTO's runtime can represent: the facts the op contracts, the analyses, the legality
checks and the backends bound a program by.

The orchestrations a build generates hand tensors to PyPTO's runtime as descriptors and compute
their own scalars, and its kernels receive their launch width and rank count as ``int32_t``;
these facts bound what a program may write, whatever language the orchestration is generated
in. The module depends on the IR's element types alone, so every layer of the lowering (and
the backends) may read it without reaching into the layers that check programs.
"""

from __future__ import annotations

from pypto_build.lowering.ir.types import DataType

#: Element types a runtime tensor can hold (a task id is not data).
RUNTIME_DTYPES = frozenset(DataType) - {DataType.TASK_ID}

#: A dimension of a runtime tensor descriptor is a ``uint32_t``.
DESCRIPTOR_DIM_MAX = 2**32 - 1

#: Most ranks one comm domain holds: a ``CommContext`` has ``windowsIn[COMM_MAX_RANK_NUM]``
#: (``kernel_abi.h``, pinned against this value by a test).
COMM_MAX_RANK_NUM = 64

#: Upper bound of ``core_num`` and of the rank count: the runtime narrows both to ``int32_t``.
INT32_MAX = 2**31 - 1

#: The binary operators orchestration scalars compute with (Python's floor division and
#: modulo included).
BINARY_OPERATORS = frozenset(
    {"+", "-", "*", "//", "%", "<", "<=", ">", ">=", "==", "!=", "and", "or"}
)
