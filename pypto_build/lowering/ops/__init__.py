"""The op table of the program model: DSL names, operand binding and type deduction.

Adding an op means adding an :class:`OpDef` (operands plus a deducer) to one of the tables in
``tensor_ops``, ``distributed_ops`` or ``collectives``; the front end, printer and verifier
find it through the functions re-exported here.
"""

from pypto_build.lowering.ops.binding import deduce_type, make_call, spelled_operands
from pypto_build.lowering.ops.registry import (
    dsl_spelling,
    is_managed_collective,
    is_unimplemented_collective,
    resolve_dsl_name,
)

__all__ = [
    "deduce_type",
    "dsl_spelling",
    "is_managed_collective",
    "is_unimplemented_collective",
    "make_call",
    "resolve_dsl_name",
    "spelled_operands",
]
