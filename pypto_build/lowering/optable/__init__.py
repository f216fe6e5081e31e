"""The op table of the program model: every op by IR name and DSL spelling, and binding a call
against it.

The table gathers the static ops (:mod:`pypto_build.lowering.ops`) and each registered builtin
package's ops (:mod:`pypto_build.lowering.builtin_registry`); the front end, printer, verifier,
analyses and passes find ops through the functions re-exported here.
"""

from pypto_build.lowering.optable.binding import deduce_type, make_call, spelled_operands
from pypto_build.lowering.optable.table import (
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
