"""Typed stand-ins for the PyPTO DSL, so editors and type checkers understand program files.

Write a program file with ``import pypto_build.lang as pl`` and
``import pypto_build.lang.distributed as pld`` (or upstream's ``pypto.language``; the front end
accepts both). pypto-build never imports a program: its front end parses the file. These names
exist for the humans and tools reading it. Decorators return what they decorate; every op raises
a ``RuntimeError`` when called; dtypes, layouts, function types, levels and roles are the IR's
own enums; annotations such as ``pl.Tensor[[8, 64], pl.FP32]`` evaluate to IR types.

Type checkers see the annotation names (``Tensor``, ``Out``, ``InOut``, ``Scalar``,
``pld.DistributedTensor``) as ``Any``; see ``_annotations`` for why. Kernel declarations have
``...`` bodies, so mypy's ``empty-body`` check must be off for program modules.
"""

from __future__ import annotations

from pypto_build.lang import tensor
from pypto_build.lang._annotations import InOut, Out, Scalar, Tensor
from pypto_build.lang._declarations import function, program
from pypto_build.lang._statements import func_attr, range, submit
from pypto_build.lowering.ir import DataType, FunctionType, Layout, Level, Role

FP32 = DataType.FP32
FP16 = DataType.FP16
BF16 = DataType.BF16
INT8 = DataType.INT8
UINT8 = DataType.UINT8
INT16 = DataType.INT16
INT32 = DataType.INT32
INT64 = DataType.INT64
INDEX = DataType.INDEX
BOOL = DataType.BOOL

TensorLayout = Layout
ND = Layout.ND
DN = Layout.DN
NZ = Layout.NZ

create_tensor = tensor.create
slice = tensor.slice
reshape = tensor.reshape
view = tensor.view
assemble = tensor.assemble
transpose = tensor.transpose
set_validshape = tensor.set_validshape
write = tensor.write

__all__ = [
    "BF16",
    "BOOL",
    "DN",
    "FP16",
    "FP32",
    "INDEX",
    "INT8",
    "INT16",
    "INT32",
    "INT64",
    "ND",
    "NZ",
    "UINT8",
    "DataType",
    "FunctionType",
    "InOut",
    "Level",
    "Out",
    "Role",
    "Scalar",
    "Tensor",
    "TensorLayout",
    "assemble",
    "create_tensor",
    "func_attr",
    "function",
    "program",
    "range",
    "reshape",
    "set_validshape",
    "slice",
    "submit",
    "tensor",
    "transpose",
    "view",
    "write",
]
