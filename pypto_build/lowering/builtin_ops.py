"""Builtin ops: the one definition of each op a registered builtin package implements.

A managed collective (or fused operator) that runs as an AIV, AIC or MIX task is backed by a
template package, not by generated code (``docs/builtin-packages.md``). Its manifest says what
data can say: its operands in kernel-argument order with their directions, which are windows and
which a peer reaches, the payload dtypes and their template variables, the chips and rails. What
data cannot say is code the manifest names: the op's :class:`Contract` (its typing, the checks
only it knows, the kernel variant of a call) and its launch-width rule
(:mod:`pypto_build.lowering.launch_width`). A :class:`BuiltinOp` carries all three, and from them
the op definitions the op table holds (the public op and the HOST rail's internal op: operands,
effects, type deduction), the kernel variant and launch spec of a CHIP-rail call, and the
synthesized kernel declaration; so the deducer, both rails and the sub-build writer work from one
description. Every one is built in one place, :mod:`pypto_build.lowering.builtin_registry`, which
finds the contract and the rule by name among ours and the ones other distributions register.
"""

from __future__ import annotations

import functools
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass

from pypto_build.builtins.manifest import PAYLOAD_DTYPE, BuiltinPackage, Rail
from pypto_build.builtins.registry import BuiltinRegistryError
from pypto_build.lowering.diagnostics import InternalError, ProgramError, Span
from pypto_build.lowering.ir import (
    Attrs,
    Call,
    DataType,
    DistributedTensorType,
    Expr,
    Function,
    FunctionType,
    Level,
    Param,
    ParamDirection,
    ReturnStmt,
    SeqStmts,
    TensorType,
    Type,
    Var,
    get_attr,
)
from pypto_build.lowering.ir.names import FunctionAttr
from pypto_build.lowering.launch_width import LaunchWidthRule
from pypto_build.lowering.ops.signature import OpDef

#: The rails a builtin package may declare: a HOST orchestrator (one builtin dispatch per
#: device), a CHIP orchestration (a task of its pipeline), an InCore kernel body (the composite
#: form, single block).
HOST_RAIL: Rail = "host"
CHIP_RAIL: Rail = "chip"
INCORE_RAIL: Rail = "incore"

#: Operand roles the rails and the deducer single out.
RESULT = "result"
SOURCE = "source"
SIGNAL = "signal"


@dataclass(frozen=True)
class ChipVariant:
    """What one call of a builtin op needs of its CHIP-rail kernel and task."""

    #: The payload element type: it selects the manifest's dtype variables and names the kernel.
    dtype: DataType
    #: Template variables beyond the dtype's (a static configuration), in order; calls with the
    #: same dtype and configuration share one kernel.
    config: tuple[tuple[str, str], ...] = ()
    #: The task's launch attrs (``core_num``, ``sync_start``).
    launch: Attrs = ()


class Contract(ABC):
    """The op-specific code of the builtin packages that name it (``[op] contract``).

    A contract types the public op (and the HOST rail's per-device op, where the package has
    that rail), checks that the manifest makes sense for it, and decides, for one call on the
    CHIP rail, the kernel variant (payload dtype and any static configuration, which become
    template variables) and the launch spec. Everything else (rails, chips, operands and their
    directions, the synthesized kernel, the contiguity proof) is generic over packages. Ours are
    in :mod:`pypto_build.lowering.contracts`; another distribution registers its own through
    the ``pypto_build.builtins`` entry-point group (:mod:`pypto_build.lowering.builtin_registry`).
    """

    #: The name a manifest gives (``[op] contract``).
    name: str
    #: Bytes the simulation of its CHIP-rail kernels keeps at the end of the comm window of
    #: their window operand, beyond every declared buffer (0: none). pypto-build's simulator
    #: gives every window the largest contract's; the HOST side generated for a program that
    #: calls the op declares it in each comm domain, so PyPTO's simulators give it too.
    window_tail: int = 0

    @abstractmethod
    def validate(self, package: BuiltinPackage) -> None:
        """Refuse a manifest this contract cannot serve, naming the file and the key."""

    @abstractmethod
    def public_op(self, builtin: BuiltinOp) -> OpDef:
        """The op a program calls (``pld.tensor.<name>``)."""

    def internal_op(self, builtin: BuiltinOp) -> OpDef | None:
        """The HOST rail's per-device dispatch op, if the contract has that rail."""
        return None

    @abstractmethod
    def ranks(self, builtin: BuiltinOp, kernel: Function) -> int | None:
        """The rank count synthesized kernel ``kernel`` of ``builtin`` is sized for (None: it
        does not say), which a run of its orchestration must match."""

    @abstractmethod
    def chip_variant(self, builtin: BuiltinOp, call: Call, phase: str) -> ChipVariant:
        """The kernel variant and launch spec of ``call`` on the CHIP rail; a diagnostic (in
        ``phase``) for what only this rail refuses."""


@dataclass(frozen=True)
class BuiltinOp:
    """A registered builtin package as an op of the program model: the manifest, and the
    launch-width rule and contract it names."""

    package: BuiltinPackage
    launch_width: LaunchWidthRule
    contract: Contract

    @functools.cached_property
    def public_def(self) -> OpDef:
        """The op a program calls, as the op table holds it (made once: a contract's deducer
        may remember the operand types it accepted)."""
        return self.contract.public_op(self)

    @functools.cached_property
    def internal_def(self) -> OpDef | None:
        """The HOST rail's per-device dispatch op, if the contract has that rail."""
        return self.contract.internal_op(self)

    def chip_variant(self, call: Call, phase: str) -> ChipVariant:
        """The kernel variant and launch spec of ``call`` on the CHIP rail (the contract's)."""
        return self.contract.chip_variant(self, call, phase)

    def ranks(self, kernel: Function) -> int | None:
        """The rank count synthesized kernel ``kernel`` is sized for (the contract's word)."""
        return self.contract.ranks(self, kernel)

    @property
    def op(self) -> str:
        """The public DSL op (``pld.tensor.all_to_all_v``)."""
        return self.package.public_op

    @property
    def builtin_op(self) -> str:
        """The HOST rail's internal per-device dispatch op (``builtin.tensor.all_to_all_v``)."""
        return self.package.builtin_op

    @property
    def stem(self) -> str:
        """What names the synthesized kernels (``all_to_all_v``, or the manifest's
        ``[op] kernel``)."""
        return self.package.kernel_stem

    @functools.cached_property
    def names(self) -> tuple[str, ...]:
        """The operand names, in kernel-argument order (asked for at every call of the op;
        kept beside the fields, which equality compares)."""
        return tuple(operand.name for operand in self.package.operands)

    def index(self, name: str) -> int:
        """The position of operand ``name``."""
        return self.names.index(name)

    def role_index(self, role: str) -> int | None:
        """The position of the (first) operand with ``role``, if any."""
        for position, operand in enumerate(self.package.operands):
            if operand.role == role:
                return position
        return None

    @property
    def result_index(self) -> int:
        """The operand the op returns (window-as-result), which the kernel body returns too."""
        position = self.role_index(RESULT)
        if position is None:
            raise InternalError(f"builtin {self.package.handle} declares no '{RESULT}' operand")
        return position

    def direction(self, position: int) -> ParamDirection:
        return ParamDirection(self.package.operands[position].direction.value)

    @property
    def dtypes(self) -> tuple[DataType, ...]:
        """The payload element types with a kernel variant, in manifest order."""
        return tuple(DataType(variant.name) for variant in self.package.dtypes)

    def supports(self, rail: Rail) -> bool:
        return rail in self.package.rails

    def kernel_name(self, dtype: DataType) -> str:
        """Name of the synthesized CHIP-rail kernel of the ``dtype`` variant."""
        return f"__builtin_{self.stem}__{dtype.value}"

    def template_vars(self, dtype: DataType, config: Sequence[tuple[str, str]] = ()) -> str:
        """The variant's ``builtin_template_vars``: its manifest variables, then its static
        configuration's (``config``), ``k=v`` joined by ``,`` (both rails render the kernel from
        these, which is why their renders are identical)."""
        variables = [*self.package.dtype_variables(dtype.value).items(), *config]
        return ",".join(f"{key}={value}" for key, value in variables)

    def call_operands(self, call: Call) -> tuple[tuple[int, Expr], ...]:
        """The tensor operands ``call`` passes, as (manifest position, expression), in kernel
        argument order: required operands are the call's arguments, a given optional one is
        a keyword operand, and an optional one not given is left out."""
        args = iter(call.args)
        present: list[tuple[int, Expr]] = []
        for position, operand in enumerate(self.package.operands):
            if not operand.optional:
                present.append((position, next(args)))
                continue
            value = get_attr(call.kwargs, operand.name)
            if isinstance(value, Expr):
                present.append((position, value))
        if next(args, None) is not None:
            raise InternalError(f"{self.op} call has more tensor arguments than operands")
        return tuple(present)

    def require_supported_dtype(self, dtype: DataType, span: Span, phase: str) -> None:
        """Reject a payload ``dtype`` with no kernel variant; both rails render the same
        templates, so they admit the same dtypes."""
        if dtype not in self.dtypes:
            names = " or ".join(supported.name for supported in self.dtypes)
            raise ProgramError(
                f"managed {self.op} currently supports only dtype={names}, got {dtype.value}",
                span,
                phase,
            )

    def require_chips(self, chips: Sequence[str], span: Span, phase: str) -> None:
        """Reject a build for a chip the package does not support."""
        for chip in chips:
            if chip not in self.package.chips:
                supported = " or ".join(self.package.chips)
                note = f" ({self.package.chip_note})" if self.package.chip_note else ""
                raise ProgramError(
                    f"{self.op} requires chip {supported}{note}; the build targets {chip}",
                    span,
                    phase,
                )

    def canonical_type(self, position: int, arg_type: Type) -> TensorType:
        """The declared type of parameter ``position`` for an argument of type ``arg_type``:
        a DistributedTensor where the op takes a window, else a plain tensor."""
        operand = self.package.operands[position]
        if operand.window:
            if not isinstance(arg_type, DistributedTensorType):
                raise InternalError(
                    f"{self.op} {operand.name} must be a DistributedTensorType, got {arg_type}"
                )
            return arg_type.unbound()
        if not isinstance(arg_type, TensorType):
            raise InternalError(f"{self.op} {operand.name} must be a tensor, got {arg_type}")
        return arg_type.plain()

    def synthesize_kernel(
        self, name: str, template_vars: str, operands: Sequence[tuple[int, Type]]
    ) -> Function:
        """The kernel declaration ``name`` (of the function type the manifest's core type
        gives) rendered with ``template_vars``, typed after one call site's ``operands``
        (manifest position and type of each tensor it passes).

        The body is a single ``return <result>``: it is never compiled, but it keeps returns
        explicit and lets MaterializeDistTensorCtx map the returned DistributedTensor back to
        the parameter it writes. Baking the first call site's shapes into a variant shared by
        every call is safe: the kernel reads extents from the runtime descriptors, and the
        variables pin the dtype and any static configuration.
        """
        params = tuple(
            Param(
                Var(self.package.operands[i].name, self.canonical_type(i, arg_type)),
                self.direction(i),
            )
            for i, arg_type in operands
        )
        result = next(
            param.var
            for (i, _), param in zip(operands, params, strict=True)
            if i == self.result_index
        )
        return Function(
            name=name,
            params=params,
            return_types=(result.type,),
            body=SeqStmts((ReturnStmt((result,)),)),
            func_type=_FUNCTION_TYPES[self.package.core_type],
            level=Level.CHIP,
            attrs=(
                (FunctionAttr.TEMPLATE_DIR, self.package.handle),
                (FunctionAttr.TEMPLATE_VARS, template_vars),
                (FunctionAttr.REQUIRE_CONTIGUOUS, True),
            ),
        )

    def payload_position(self) -> int:
        """The first payload-typed operand (its dtype selects the variant)."""
        for position, operand in enumerate(self.package.operands):
            if operand.dtype == PAYLOAD_DTYPE:
                return position
        raise InternalError(f"builtin {self.package.handle} has no payload operand")


#: The kernel function a package's ``core_type`` synthesizes: a MIX kernel (AIC and AIV
#: together) is an InCore function, as upstream's mixed kernels are before they are split.
_FUNCTION_TYPES: dict[str, FunctionType] = {
    "aiv": FunctionType.AIV,
    "aic": FunctionType.AIC,
    "mix": FunctionType.InCore,
}


def manifest_error(package: BuiltinPackage, key: str, message: str) -> BuiltinRegistryError:
    """A manifest that does not fit the program model, naming the file and the key."""
    return BuiltinRegistryError(f"{package.manifest_path}: {key}: {message}")


def parse_template_vars(text: str, function: str) -> dict[str, str]:
    """A ``builtin_template_vars`` value (``k=v`` pairs joined by ``,``) as a dict.

    Parts are stripped and empty parts dropped; a part without ``=`` is upstream's error.
    """
    variables: dict[str, str] = {}
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        key, equals, value = item.partition("=")
        if not equals:
            raise ValueError(
                f"Invalid builtin_template_vars entry '{item}' on function '{function}': "
                "expected 'key=value'"
            )
        variables[key.strip()] = value.strip()
    return variables
