"""The interface every op contract implements (see the package's docstring)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

from pypto_build.builtins.manifest import BuiltinPackage
from pypto_build.lowering.builtin_ops import BuiltinOp
from pypto_build.lowering.ir import Attrs, Call, DataType, Function
from pypto_build.lowering.ops.signature import OpDef


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
    """The op-specific code of the builtin packages that name it."""

    #: The name a manifest gives (``[op] contract``).
    name: str

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
