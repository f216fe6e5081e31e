"""The program the host API runs: one CHIP orchestration calling the op, for one configuration.

The host API does not render or launch a kernel of its own. It writes the program a user would
write for the checked configuration -- a CHIP orchestration on chip ``a3`` whose one statement
is ``pld.tensor.batch_matmul_reduce_scatter_all_to_all`` -- and builds it with the engine every
program goes through (:mod:`pypto_build.mc2.kernels`). The op's lowering then synthesizes the
kernel variant from the builtin template package with the tiling's template variables, exactly
as for any program with the same configuration: the kernel the API runs is, byte for byte, the
one a program's build ships, because it is the same render of the same package with the same
variables, not a copy that could drift.

The text depends only on what decides the kernel and the orchestration's parameters (dtypes,
shapes, the attributes, whether there is a bias and its rank), never on the group names: a
kernel variant is shared by every call site whatever its groups, and so is a built program.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from pypto_build.lowering.aclnn.rules import Mc2Config, TensorSpec
from pypto_build.lowering.aclnn.tiling import tile
from pypto_build.lowering.ir.types import DataType

#: The chip the op runs on (the operator supports Atlas A3 only).
CHIP = "a3"
#: The program's class and its chip orchestration, the sub-build ``next_levels/<ORCHESTRATION>``.
PROGRAM_CLASS = "BatchMatmulReduceScatterAllToAll"
ORCHESTRATION = "batch_matmul_reduce_scatter_all_to_all"
#: The orchestration's parameters, in order (the op's operand names).
X, WEIGHT, BIAS, OUT, WORKSPACE = "x", "weight", "bias", "out", "workspace"
#: The workspace window's element type: it is sized in bytes.
WORKSPACE_DTYPE = DataType.UINT8

_TEMPLATE = '''\
"""batch_matmul_reduce_scatter_all_to_all on ep {ep} x tp {tp} ranks: the program
pypto_build.mc2 runs for one configuration (generated)."""

import pypto_build.lang as pl
import pypto_build.lang.distributed as pld


@pl.program
class {program_class}:
    @pl.function(type=pl.FunctionType.Orchestration)
    def {orchestration}(
        self,
{params}
    ) -> {out_type}:
        return pld.tensor.batch_matmul_reduce_scatter_all_to_all(
            x,
            weight,
            {bias_arg},
            out,
            workspace,
            ep_world_size={ep},
            tp_world_size={tp},
            y_shard_type={y_shard_type},
            transpose_weight={transpose_weight},
        )
'''


@dataclass(frozen=True)
class Mc2Program:
    """The program of one configuration: its text, and the workspace window it declares."""

    config: Mc2Config
    text: str
    #: The window the orchestration takes, in bytes: the workspace's user part, as aclnn's
    #: kernel takes it (the simulated HCCL keeps its state beyond it, at its window's end).
    workspace_bytes: int

    @property
    def digest(self) -> str:
        """The SHA-256 of the text: what a built program is cached by."""
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()


def _tensor_type(spec: TensorSpec) -> str:
    return f"pl.Tensor[{list(spec.shape)}, pl.{spec.dtype.name}]"


def mc2_program(
    config: Mc2Config, x: TensorSpec, weight: TensorSpec, bias: TensorSpec | None, out: TensorSpec
) -> Mc2Program:
    """The program of ``config`` for operands of these (checked) types; the weight as stored
    (transposed when ``config.transpose_weight``)."""
    workspace_bytes = tile(config).user_bytes
    out_type = _tensor_type(out)
    params = [
        (X, _tensor_type(x)),
        (WEIGHT, _tensor_type(weight)),
        *([] if bias is None else [(BIAS, _tensor_type(bias))]),
        (OUT, f"pl.Out[{out_type}]"),
        (WORKSPACE, f"pld.DistributedTensor[[{workspace_bytes}], pl.{WORKSPACE_DTYPE.name}]"),
    ]
    text = _TEMPLATE.format(
        ep=config.ep,
        tp=config.tp,
        program_class=PROGRAM_CLASS,
        orchestration=ORCHESTRATION,
        params="\n".join(f"        {name}: {annotation}," for name, annotation in params),
        out_type=out_type,
        bias_arg="None" if bias is None else BIAS,
        y_shard_type=config.y_shard_type,
        transpose_weight=config.transpose_weight,
    )
    return Mc2Program(config, text, workspace_bytes)
