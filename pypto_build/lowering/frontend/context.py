"""What the converters of one program file share: the file, its imports and its constants,
and, inside a function body, the program's signatures and the function being converted."""

from __future__ import annotations

import ast
from collections.abc import Mapping
from dataclasses import dataclass, field

from pypto_build.lowering.frontend.constants import ConstantTable, fold_int
from pypto_build.lowering.frontend.imports import ImportTable
from pypto_build.lowering.frontend.source import Source
from pypto_build.lowering.ir import Function, ParamDirection, Type


@dataclass(frozen=True)
class ModuleContext:
    source: Source
    imports: ImportTable
    constants: ConstantTable
    #: Each parameter annotation's type and direction by its text (:func:`param_type`): the
    #: pipelines of a file declare the same few parameters each.
    param_types: dict[str, tuple[Type, ParamDirection]] = field(
        default_factory=dict, compare=False, repr=False
    )

    def dsl_path(self, node: ast.expr) -> str | None:
        return self.imports.dsl_path(node)

    def fold(self, node: ast.expr) -> int:
        return fold_int(node, self.constants, self.source, self.imports.dsl_path)


@dataclass(frozen=True)
class FunctionContext:
    """``function`` is the signature (empty body) of the function whose body is converted;
    ``receiver`` is the name of its stripped first parameter (``self``)."""

    module: ModuleContext
    program: str
    signatures: Mapping[str, Function]
    function: Function
    receiver: str

    @property
    def source(self) -> Source:
        return self.module.source
