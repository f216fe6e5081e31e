"""What a kernel a CHIP orchestration submits must provide, so that its sub-build can be written.

pypto-build does not generate code from DSL kernel bodies: a submitted kernel is either written
in C++ (``external_source``, relative to the program file, which must exist) or rendered from a
registered builtin template package (``builtin_template_dir`` and ``builtin_template_vars``, set by
LowerL2TensorCollectives or written by the program with ``pl.func_attr``). The package must run
on the CHIP rail and on every chip of the build, and, where it also has a HOST rail, know the
kernel's payload dtype (every build renders both rails' kernels and compares them).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from pypto_build.builtins import BuiltinPackage, UnknownBuiltinError, resolve
from pypto_build.builtins.manifest import PAYLOAD_DTYPE
from pypto_build.files import file_problem
from pypto_build.lowering.builtin_ops import CHIP_RAIL, HOST_RAIL, parse_template_vars
from pypto_build.lowering.builtin_registry import package_op
from pypto_build.lowering.diagnostics import ProgramError, Span
from pypto_build.lowering.ir import DataType, Function, TensorType
from pypto_build.lowering.ir.names import FunctionAttr, external_source
from pypto_build.lowering.pass_names import CHECK_LEGALITY

PHASE = CHECK_LEGALITY


def check_kernel(kernel: Function, first_call: Span, chips: Sequence[str]) -> None:
    """Reject a kernel, submitted first at ``first_call``, that no sub-build can hold."""
    if kernel.attr(FunctionAttr.TEMPLATE_DIR) is not None:
        package = builtin_package(kernel)
        _check_builtin(kernel, package, first_call, chips)
    else:
        _check_external_source(kernel)


def builtin_package(kernel: Function) -> BuiltinPackage:
    """The registered package a builtin kernel is rendered from, its attrs checked."""
    for key in (FunctionAttr.TEMPLATE_DIR, FunctionAttr.TEMPLATE_VARS):
        if not isinstance(kernel.attr(key, ""), str):
            raise ProgramError(
                f"function '{kernel.name}': {key} must be a string", kernel.span, PHASE
            )
    handle = kernel.attr(FunctionAttr.TEMPLATE_DIR)
    assert isinstance(handle, str)
    try:
        parse_template_vars(str(kernel.attr(FunctionAttr.TEMPLATE_VARS, "")), kernel.name)
        return resolve(handle)
    except (UnknownBuiltinError, ValueError) as error:
        raise ProgramError(str(error), kernel.span, PHASE) from None


def payload_dtype(kernel: Function, package: BuiltinPackage) -> DataType:
    """The element type of a builtin kernel's variant: that of its first payload operand."""
    for operand, param in zip(package.operands, kernel.params, strict=False):
        if operand.dtype == PAYLOAD_DTYPE and isinstance(param.var.type, TensorType):
            return param.var.type.dtype
    raise ProgramError(
        f"builtin kernel '{kernel.name}' has no payload operand matching package {package.handle}",
        kernel.span,
        PHASE,
    )


def _check_builtin(
    kernel: Function, package: BuiltinPackage, first_call: Span, chips: Sequence[str]
) -> None:
    dtype = payload_dtype(kernel, package)
    if CHIP_RAIL not in package.rails:
        raise ProgramError(
            f"builtin {package.handle} has no CHIP rail (it declares rails "
            f"{', '.join(package.rails)})",
            first_call,
            PHASE,
        )
    for chip in chips:
        if chip not in package.chips:
            raise ProgramError(
                f"builtin kernel '{kernel.name}' ({package.handle}) does not support chip "
                f"{chip}; it supports {', '.join(package.chips)}",
                first_call,
                PHASE,
            )
    if HOST_RAIL in package.rails:
        try:
            package.dtype_variables(dtype.value)
        except LookupError as error:
            raise ProgramError(str(error.args[0]), kernel.span, PHASE) from None
        _check_rail_variables(kernel, package, dtype)


def _check_rail_variables(kernel: Function, package: BuiltinPackage, dtype: DataType) -> None:
    """A package with both rails renders one kernel from the manifest's variables for the
    payload dtype, and every build compares the two rails' kernels: a CHIP kernel whose
    ``builtin_template_vars`` differ (written by hand with ``pl.func_attr``) is the program's
    mistake, located at the kernel, not a render failure."""
    given = str(kernel.attr(FunctionAttr.TEMPLATE_VARS, ""))
    expected = package_op(package).template_vars(dtype)
    if parse_template_vars(given, kernel.name) != parse_template_vars(expected, kernel.name):
        raise ProgramError(
            f"builtin kernel '{kernel.name}' sets {FunctionAttr.TEMPLATE_VARS} '{given}', but "
            f"{package.handle} renders its {dtype.value} kernel with '{expected}' on the HOST "
            "rail: both rails must render the same kernel, so remove the attr (the lowering "
            "sets it) or give the manifest's variables",
            kernel.span,
            PHASE,
        )


def _check_external_source(kernel: Function) -> None:
    relative = external_source(kernel)
    if relative is None:
        raise ProgramError(
            f"kernel '{kernel.name}' has no {FunctionAttr.EXTERNAL_SOURCE}: pypto-build does "
            "not generate code from DSL kernel bodies; write the kernel in C++ and name the file "
            f'with external_source="kernels/{kernel.name}.cpp" (relative to the program file)',
            kernel.span,
            PHASE,
        )
    if "\0" in relative:
        raise ProgramError(
            f"external_source {relative!r} of kernel '{kernel.name}' holds a NUL byte, which no "
            "path can",
            kernel.span,
            PHASE,
        )
    path = Path(kernel.span.file).parent / relative
    problem = file_problem(path)
    if problem is None and not os.access(path, os.R_OK):
        problem = "permission denied"
    if problem == "no such file":
        raise ProgramError(
            f"external_source '{relative}' of kernel '{kernel.name}' does not exist "
            "(it is relative to the program file)",
            kernel.span,
            PHASE,
        )
    if problem is not None:
        raise ProgramError(
            f"external_source '{relative}' of kernel '{kernel.name}' cannot be read: {problem}",
            kernel.span,
            PHASE,
        )
