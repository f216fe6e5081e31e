"""``batch_matmul_reduce_scatter_all_to_all`` from the host, in aclnn's two stages, on simulated
ranks.

The fused MC2 operator (BatchMatMul -> ReduceScatter over TP -> bias -> AllToAll over EP) is
called from a program as ``pld.tensor.batch_matmul_reduce_scatter_all_to_all`` (docs/dsl.md),
and from host code as CANN's aclnn calls it: a first stage that checks everything and sizes the
workspace, a second that runs on a stream. Each rank calls both with its own tensors, as in
aclnn's sample (one thread per rank, or one thread for all; see :mod:`.second_stage`)::

    import numpy as np
    from pypto_build import mc2

    world = mc2.SimWorld(4, 2)         # ep 4 x tp 2 = 8 ranks: rank = ep_index*2 + tp_index
    for rank in range(world.size):
        stream = world.stream(rank)
        size, executor = mc2.get_workspace_size(
            x[rank], weight[rank], bias[rank], stream.group_ep, stream.group_tp,
            4, 2, 1, out[rank])                 # x[rank]: (E/ep, ep*C, M/tp) float16, ...
        mc2.run(np.empty(size, np.uint8), size, executor, stream)
    world.synchronize()                         # out[rank] now holds rank's (E, C/tp, H)

* :func:`get_workspace_size` raises :class:`Mc2Error` (its ``status``: 161001
  ``ACLNN_ERR_PARAM_NULLPTR`` or 161002 ``ACLNN_ERR_PARAM_INVALID``) for exactly what the DSL op
  refuses, with the same message; it returns the workspace size aclnn returns (the tiling's user
  part plus 16 MiB) and an :class:`Executor`, single-use unless
  :meth:`Executor.set_repeatable`.
* A tensor is a NumPy array (one rank's: ``x[rank]`` of an array with a leading rank axis is
  one), ``float16`` or BF16 (an ``ml_dtypes.bfloat16`` array, or :func:`bf16` of its
  ``uint16`` bit patterns); a bias is optional (None). A weight that is a transposed view
  (``w.transpose(0, 2, 1)`` of a contiguous ``(E/ep, H, M/tp)`` array) runs with
  ``transpose_weight``, as aclnn decides it from the strides.
* :func:`run` checks the workspace, the stream and the executor (:class:`RunError`), queues the
  launch and returns; the world runs the kernel once every rank has launched it.
* A group name or an attribute of the wrong type (``ep_world_size=2.0``, ``y_shard_type=True``,
  ``group_ep=b"ep"``) is refused by the rule that checks it, as in a program; an argument of a
  type no C caller could pass (a list for a tensor, a str for ``workspace_size``) is an
  :class:`ArgumentError` (a ``TypeError``) naming it. No bad input ends in another exception.

The kernel is the one a program's build ships for the same configuration, byte for byte: the
API builds the equivalent program (:mod:`.program`) through the engine (:mod:`.kernels`) and runs
it with the simulator's chip-orchestration runner. It needs the ``sim`` extra (NumPy) and a host
C++ compiler; compiles go through the user's compile cache (``$PYPTO_CACHE_DIR``).
"""

from __future__ import annotations

from pypto_build.lowering.aclnn.rules import AclnnStatus, Mc2Error, Rule
from pypto_build.lowering.aclnn.tiling import SYSTEM_BYTES
from pypto_build.mc2.arguments import ArgumentError
from pypto_build.mc2.executor import Executor, get_workspace_size
from pypto_build.mc2.operands import Tensor, bf16, is_transposed_view
from pypto_build.mc2.run_error import NoSuchRank, RunError
from pypto_build.mc2.second_stage import SimStream, SimWorld, run

__all__ = [
    "SYSTEM_BYTES",
    "AclnnStatus",
    "ArgumentError",
    "Executor",
    "Mc2Error",
    "NoSuchRank",
    "Rule",
    "RunError",
    "SimStream",
    "SimWorld",
    "Tensor",
    "bf16",
    "get_workspace_size",
    "is_transposed_view",
    "run",
]
