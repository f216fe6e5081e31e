"""The first stage: ``get_workspace_size``, the op's checks, and the executor it returns.

aclnn's first stage checks every parameter, sizes the workspace and returns an executor holding
the tensors and the computation; it reads no tensor data, so a caller may fill the inputs
between the two stages. :func:`get_workspace_size` does the same for one rank: the checks are
the op's own (:func:`pypto_build.lowering.aclnn.rules.check`, the function the DSL op's type
deduction calls, with the group names required as aclnn requires them), so a call and a program
are refused by the same rule with the same status and message, and the size is the build-time
tiling's total (:mod:`pypto_build.lowering.aclnn.tiling`): the kernel's user part plus the 16 MiB
system part, as aclnn returns it.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import numpy.typing as npt

from pypto_build.lowering.aclnn.rules import (
    Mc2Config,
    Mc2Error,
    Mc2Request,
    Rule,
    check,
)
from pypto_build.lowering.aclnn.tiling import Mc2Tiling, tile
from pypto_build.mc2.kernels import BuiltProgram, built_program
from pypto_build.mc2.operands import (
    UNNAMED,
    Tensor,
    TensorLike,
    dtype_name,
    is_transposed_view,
    spec,
    storage,
    typed,
)
from pypto_build.mc2.program import Mc2Program, mc2_program
from pypto_build.mc2.run_error import RunError


@dataclass(frozen=True)
class RankOperands:
    """One rank's tensors as the executor holds them: references, read when the kernel runs."""

    x: Tensor
    weight: Tensor
    bias: Tensor | None
    out: Tensor

    def inputs(self, transposed: bool) -> dict[str, npt.NDArray[np.generic]]:
        """The arrays the kernel reads, C-contiguous (the weight as stored)."""
        arrays = {"x": storage(self.x), "weight": storage(self.weight, transposed=transposed)}
        if self.bias is not None:
            arrays["bias"] = storage(self.bias)
        return arrays


class Executor:
    """What :func:`get_workspace_size` returns for one rank: the checked configuration, its
    tiling and program, the rank's tensors and its groups. Like aclnn's ``aclOpExecutor`` it
    runs once, unless :meth:`set_repeatable` was called."""

    def __init__(
        self,
        operands: RankOperands,
        config: Mc2Config,
        program: Mc2Program,
        group_ep: str,
        group_tp: str,
    ) -> None:
        self.operands = operands
        self.config = config
        self.program = program
        self.group_ep = group_ep
        self.group_tp = group_tp
        self._repeatable = False
        self._runs = 0
        self._lock = threading.Lock()

    @cached_property
    def tiling(self) -> Mc2Tiling:
        return tile(self.config)

    @property
    def workspace_size(self) -> int:
        """The bytes :func:`get_workspace_size` returned: the tiling's user and system parts."""
        return self.tiling.total_bytes

    @property
    def ranks(self) -> int:
        """The ranks the op runs on: ep * tp."""
        return self.config.ep * self.config.tp

    def set_repeatable(self) -> None:
        """Let :func:`~pypto_build.mc2.run` use this executor more than once, as
        ``aclSetAclOpExecutorRepeatable`` does; call it before the first run."""
        with self._lock:
            if self._runs:
                raise RunError(
                    "set_repeatable() after the executor ran: aclSetAclOpExecutorRepeatable "
                    "must follow the first stage, before the first run"
                )
            self._repeatable = True

    def claim(self) -> None:
        """Count one run; a second run of an executor that is not repeatable is refused."""
        with self._lock:
            if self._runs and not self._repeatable:
                raise RunError(
                    "this executor already ran: an aclnn executor runs once unless it was made "
                    "repeatable (executor.set_repeatable(), as aclSetAclOpExecutorRepeatable); "
                    "call get_workspace_size again for another run"
                )
            self._runs += 1

    def built(self) -> BuiltProgram:
        """The configuration's program built through the engine: the tree whose kernel the
        run executes (built on first use, once per process)."""
        return built_program(self.program)


def get_workspace_size(
    x: TensorLike | None,
    weight: TensorLike | None,
    bias: TensorLike | None,
    group_ep: str | None,
    group_tp: str | None,
    ep_world_size: int,
    tp_world_size: int,
    y_shard_type: int,
    out: TensorLike | None,
) -> tuple[int, Executor]:
    """``aclnnBatchMatMulReduceScatterAlltoAllGetWorkspaceSize`` for one rank: the workspace
    size in bytes and the executor to run; :class:`~pypto_build.lowering.aclnn.rules.Mc2Error`
    (its ``status`` 161001 or 161002) when a check fails, a group name or an attribute of the
    wrong type included. A tensor that is no array is an
    :class:`~pypto_build.mc2.arguments.ArgumentError`, a read-only ``out`` a :class:`RunError`.
    A weight that is a transposed view runs with ``transpose_weight``
    (:mod:`pypto_build.mc2.operands`)."""
    tensors = {
        name: None if value is None else typed(name, value)
        for name, value in (("x", x), ("weight", weight), ("bias", bias), ("out", out))
    }
    weight_tensor = tensors["weight"]
    transposed = weight_tensor is not None and is_transposed_view(weight_tensor.data)
    specs = {
        name: spec(t, transposed=name == "weight" and transposed) for name, t in tensors.items()
    }
    request = Mc2Request(
        x=specs["x"],
        weight=specs["weight"],
        bias=specs["bias"],
        out=specs["out"],
        group_ep=group_ep,
        group_tp=group_tp,
        ep_world_size=ep_world_size,
        tp_world_size=tp_world_size,
        y_shard_type=y_shard_type,
        transpose_weight=transposed,
        require_group_names=True,
    )
    try:
        config = check(request)
    except Mc2Error as error:
        raise _named_dtype(error, tensors) from None
    x_t, w_t, out_t = tensors["x"], weight_tensor, tensors["out"]
    assert x_t is not None and w_t is not None and out_t is not None
    assert isinstance(group_ep, str) and isinstance(group_tp, str)  # checked names
    assert request.x and request.weight and request.out  # checked non-null
    if not out_t.data.flags.writeable:
        raise RunError("out is read-only: the op writes its result into it")
    program = mc2_program(config, request.x, request.weight, request.bias, request.out)
    operands = RankOperands(x_t, w_t, tensors["bias"], out_t)
    executor = Executor(operands, config, program, group_ep, group_tp)
    return executor.workspace_size, executor


def _named_dtype(error: Mc2Error, tensors: dict[str, Tensor | None]) -> Mc2Error:
    """``error`` with an operand of a dtype the program model cannot name (checked as
    :data:`~pypto_build.mc2.operands.UNNAMED`) named by its NumPy dtype."""
    tensor = tensors.get(error.operand)
    if error.rule is not Rule.CHECK_DTYPE_VALID or tensor is None or tensor.dtype is not UNNAMED:
        return error
    message = error.message.replace(f"got {UNNAMED.name}", f"got {dtype_name(tensor)}")
    return Mc2Error(error.status, error.rule, error.operand, message)
