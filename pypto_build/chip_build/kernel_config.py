"""What a sub-build's ``kernel_config.py`` says: its orchestration, its kernels, its runtime.

The entries check what upstream's format can hold (C identifiers, directions, paths inside the
sub-build, one ``func_id`` per kernel) when they are made, so the writer
(:mod:`.kernel_config_writer`) writes only a valid file and the reader
(:mod:`.kernel_config_reader`) returns only a valid config. Our additions to upstream's format,
keys PyPTO's loader does not read: a kernel's compiled ``binary``; a builtin kernel's
``variant``, the static configuration it was rendered for beyond its dtype (the template
variables of an op whose contract configures the kernel, such as the MC2 tiling); the
orchestration's ``params`` (:class:`OrchestrationParam`), every parameter in argument order with
its shape, element type and whether it is a window, which a signature of directions cannot say
and a run of the orchestration without a HOST orchestrator needs (``pypto-build run
--program``) to allocate its windows and check its inputs; and the orchestration's ``ranks``,
the rank count its collectives' windows were sized for (their signal's rows, NR), present only
when it runs a collective, so such a run on another rank count is refused before anything runs.

Every kernel, including a hand-written external one, is listed by its path inside the sub-build
(``kernels/<core type>/<name>.cpp``, :class:`~.tree_layout.SubBuildLayout`), never by an absolute
path: external sources are copied in.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Literal

from pypto_build.chip_build.chips import CoreType
from pypto_build.chip_build.distributed_meta import Parameter, ParameterDirection, ParameterKind
from pypto_build.chip_build.runtime_types import DataType
from pypto_build.errors import PyptoUsageError
from pypto_build.lowering.ir import ParamDirection
from pypto_build.lowering.runtime_facts import COMM_MAX_RANK_NUM
from pypto_build.tree_layout import RELATIVE_SUB_BUILD, kernel_source

#: Entry point every AICPU orchestration exports (upstream's fixed name).
ORCHESTRATION_FUNCTION = "aicpu_orchestration_entry"

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class Runtime(enum.StrEnum):
    """The runtimes a sub-build can target; the value is upstream's wire name. Upstream has
    others (``host_build_graph``); the orchestrations we generate are written for this one."""

    TENSORMAP_AND_RINGBUFFER = "tensormap_and_ringbuffer"

    @classmethod
    def from_name(cls, name: str) -> Runtime:
        """The runtime whose wire name is ``name``; anything else is upstream's error."""
        for runtime in cls:
            if runtime.value == name:
                return runtime
        valid = ", ".join(runtime.value for runtime in cls)
        raise ValueError(f"Unknown runtime '{name}' (expected one of: {valid})")


class ArgDirection(enum.StrEnum):
    """Direction of one tensor argument, spelled as simpler's ``ArgDirection`` members."""

    IN = "IN"
    OUT = "OUT"
    INOUT = "INOUT"

    @classmethod
    def of(cls, direction: ParamDirection) -> ArgDirection:
        """The wire spelling of an IR parameter direction."""
        return cls[direction.name.upper()]


class KernelConfigError(PyptoUsageError, ValueError):
    """A kernel_config.py that this module did not write, or an entry it cannot represent."""


def _check_identifier(value: str, what: str) -> None:
    # Names become file names and unescaped string literals, so only C identifiers are safe.
    if not _IDENTIFIER.fullmatch(value):
        raise KernelConfigError(f"{what} '{value}' is not a C identifier")


def _check_binary(binary: str, source: str, what: str) -> None:
    """A binary sits at its source's place, beside it (``kernels/aiv/k.o``) or under one
    folder of the sub-build (``sim/kernels/aiv/k.so``), with another extension."""
    stem = source.removesuffix(".cpp") + "."
    placed = binary.split("/", 1)[1] if binary.count("/") > stem.count("/") else binary
    extension = placed.removeprefix(stem)
    if extension == placed or not extension or "/" in extension or extension == "cpp":
        raise KernelConfigError(
            f"binary '{binary}' of {what} must sit at its source's place, as '{stem}<ext>' "
            f"or '<folder>/{stem}<ext>'"
        )


def _directions(signature: Sequence[str]) -> tuple[ArgDirection, ...]:
    # Accepts the upstream spellings ("IN", "OUT", "INOUT"); a scalar has no direction to list.
    return tuple(ArgDirection(direction) for direction in signature)


#: What an orchestration parameter is: a tensor in device memory, a tensor in a comm domain's
#: window (a ``DistributedTensor``), a scalar, or the ``CommContext`` of a window parameter's
#: domain (MaterializeDistTensorCtx appends one per window parameter).
ParamKind = Literal["tensor", "window", "scalar", "comm_context"]
_PARAM_KINDS: tuple[ParamKind, ...] = ("tensor", "window", "scalar", "comm_context")


@dataclass(frozen=True)
class OrchestrationParam:
    """One parameter of a chip orchestration, in argument order: tensors (and windows) are its
    ``orch_args.tensor(i)`` in turn, scalars and contexts its ``orch_args.scalar(j)``.

    Shapes and element types are the program's, spelled as ``distributed_meta.json`` spells a
    HOST orchestrator's; a scalar has shape ``()`` and direction In, a context only the window
    parameter whose domain it belongs to.
    """

    name: str
    kind: ParamKind
    direction: ParameterDirection = "In"
    shape: tuple[int, ...] = ()
    dtype: DataType | None = None
    #: A ``comm_context``'s window parameter.
    window: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "shape", tuple(self.shape))
        _check_identifier(self.name, "parameter name")
        if self.kind not in _PARAM_KINDS:
            raise KernelConfigError(f"parameter {self.name}: unknown kind {self.kind!r}")
        if self.direction not in ("In", "Out", "InOut"):
            raise KernelConfigError(f"parameter {self.name}: unknown direction {self.direction!r}")
        tensor = self.kind in ("tensor", "window")
        if (self.dtype is None) != (self.kind == "comm_context"):
            raise KernelConfigError(f"parameter {self.name}: a {self.kind} has an element type")
        if (self.window is None) != (self.kind != "comm_context"):
            raise KernelConfigError(f"parameter {self.name}: only a context names a window")
        if not tensor and (self.shape or self.direction != "In"):
            raise KernelConfigError(f"parameter {self.name}: a {self.kind} has shape () and is In")

    @property
    def is_tensor(self) -> bool:
        """A tensor argument (a window included)."""
        return self.kind in ("tensor", "window")

    def parameter(self) -> Parameter:
        """This tensor or scalar as a run binds its input (a window as a tensor)."""
        if self.dtype is None:
            raise KernelConfigError(f"parameter {self.name}: a context takes no input")
        kind: ParameterKind = "tensor" if self.is_tensor else "scalar"
        return Parameter(self.name, kind, self.shape, self.dtype, self.direction)


@dataclass(frozen=True)
class OrchestrationEntry:
    """The AICPU orchestration of a sub-build, compiled from ``orchestration/<name>.cpp``."""

    name: str
    #: Directions of the orchestration's tensor arguments, in ``orch_args.tensor(i)`` order.
    signature: tuple[ArgDirection, ...] = ()
    function_name: str = ORCHESTRATION_FUNCTION
    #: The compiled orchestration relative to the sub-build root; None until built.
    binary: str | None = None
    #: Every parameter, in argument order; empty for an orchestration that does not describe
    #: them (a HOST-rail variant's, rendered from its package's template).
    params: tuple[OrchestrationParam, ...] = ()
    #: The rank count its collectives' windows were sized for (NR); None when it runs none.
    ranks: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "signature", _directions(self.signature))
        object.__setattr__(self, "params", tuple(self.params))
        _check_identifier(self.name, "orchestration name")
        _check_identifier(self.function_name, "orchestration function name")
        _check_params(self.params, self.signature)
        if self.binary is not None:
            _check_binary(self.binary, self.source, f"orchestration '{self.name}'")
        if self.ranks is not None and not 1 <= self.ranks <= COMM_MAX_RANK_NUM:
            raise KernelConfigError(
                f"ranks {self.ranks} is not a rank count (1 to {COMM_MAX_RANK_NUM})"
            )

    @property
    def source(self) -> str:
        """The source path relative to the sub-build root."""
        return RELATIVE_SUB_BUILD.orchestration(self.name).as_posix()


def _check_params(params: Sequence[OrchestrationParam], signature: Sequence[ArgDirection]) -> None:
    """Parameters agree with the signature (one tensor per entry, same directions), and every
    context names a window parameter."""
    if not params:
        return
    names = [param.name for param in params]
    if len(set(names)) != len(names):
        raise KernelConfigError("an orchestration parameter is named twice")
    tensors = [param for param in params if param.is_tensor]
    directions = [ArgDirection(param.direction.upper()) for param in tensors]
    if directions != list(signature):
        raise KernelConfigError(
            f"the tensor parameters ({', '.join(d.value for d in directions)}) do not match "
            f"the signature ({', '.join(d.value for d in signature)})"
        )
    windows = {param.name for param in params if param.kind == "window"}
    for param in params:
        if param.window is not None and param.window not in windows:
            raise KernelConfigError(
                f"context {param.name} names '{param.window}', which is no window parameter"
            )


@dataclass(frozen=True)
class KernelEntry:
    """One kernel of a sub-build, compiled from ``kernels/<core_type>/<name>.cpp``."""

    func_id: int
    name: str
    core_type: CoreType
    #: Directions of the kernel's tensor arguments, tensors first, in parameter order.
    signature: tuple[ArgDirection, ...] = ()
    #: The compiled kernel relative to the sub-build root, at its source's place beside it or
    #: in a toolchain's binary folder (``sim/kernels/<core_type>/<name>.so``); None until built.
    binary: str | None = None
    #: Include directories relative to the sub-build root (``extra_include_dirs``, which
    #: PyPTO's runtime passes to the kernel's compile): the headers that travel with the tree.
    include_dirs: tuple[str, ...] = ()
    #: A builtin kernel's configuration beyond its dtype, ``(variable, value)`` in template
    #: order: what its variant was rendered for (the mc2 contract's tiling). Empty for every
    #: other kernel, which then has no ``variant`` key.
    variant: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "core_type", CoreType(self.core_type))
        object.__setattr__(self, "signature", _directions(self.signature))
        object.__setattr__(self, "include_dirs", tuple(self.include_dirs))
        object.__setattr__(self, "variant", tuple((k, v) for k, v in self.variant))
        names = [name for name, _ in self.variant]
        for name, value in self.variant:
            _check_identifier(name, f"variant variable of kernel '{self.name}'")
            if not isinstance(value, str):
                raise KernelConfigError(
                    f"kernel '{self.name}': variant variable {name} must be a string"
                )
        if len(set(names)) != len(names):
            raise KernelConfigError(f"kernel '{self.name}': a variant variable is named twice")
        if self.func_id < 0:
            raise KernelConfigError(f"kernel '{self.name}' has negative func_id {self.func_id}")
        _check_identifier(self.name, "kernel name")
        if self.binary is not None:
            _check_binary(self.binary, self.source, f"kernel '{self.name}'")

    @property
    def source(self) -> str:
        """The source path relative to the sub-build root."""
        return kernel_source(self.core_type.value, self.name)


@dataclass(frozen=True)
class KernelConfig:
    """The content of one ``kernel_config.py``; kernels are kept sorted by ``func_id``."""

    orchestration: OrchestrationEntry | None
    kernels: tuple[KernelEntry, ...] = ()
    runtime: Runtime = Runtime.TENSORMAP_AND_RINGBUFFER
    enable_sdma: bool = False

    def __post_init__(self) -> None:
        by_id: dict[int, KernelEntry] = {}
        sources: set[str] = set()
        for kernel in self.kernels:
            if kernel.func_id in by_id:
                raise KernelConfigError(
                    f"kernels '{by_id[kernel.func_id].name}' and '{kernel.name}' share "
                    f"func_id {kernel.func_id}"
                )
            # A MIX kernel is listed once per core type, from one source in each core's folder.
            if kernel.source in sources:
                raise KernelConfigError(f"kernel {kernel.source} is listed twice")
            by_id[kernel.func_id] = kernel
            sources.add(kernel.source)
        object.__setattr__(self, "kernels", tuple(by_id[i] for i in sorted(by_id)))
        object.__setattr__(self, "runtime", Runtime.from_name(self.runtime))

    def with_binaries(
        self, binaries: Mapping[str, str], orchestration: str | None = None
    ) -> KernelConfig:
        """This config with ``binaries[source]`` recorded as the binary of the kernel compiled
        from ``source`` (relative to the sub-build root), and ``orchestration`` (if given) as
        the orchestration's."""
        unknown = sorted(set(binaries) - {kernel.source for kernel in self.kernels})
        if unknown:
            raise KernelConfigError(f"binaries given for unknown kernels: {', '.join(unknown)}")
        kernels = tuple(
            replace(kernel, binary=binaries.get(kernel.source, kernel.binary))
            for kernel in self.kernels
        )
        entry = self.orchestration
        if orchestration is not None:
            if entry is None:
                raise KernelConfigError("an orchestration binary given for a config without one")
            entry = replace(entry, binary=orchestration)
        return replace(self, kernels=kernels, orchestration=entry)
