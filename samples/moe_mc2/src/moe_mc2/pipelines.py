"""MoE expert combine: the down-projection of the experts under expert and tensor parallelism.

EP * TP ranks (rank = ep_index * TP + tp_index). Each rank holds, for its E / EP local experts,
the activations of the tokens every EP rank routed to them (EP * C rows, C per EP rank) over
its M / TP slice of the FFN's inner size, and its slice of the down-projection weights. One
fused operator, ``pld.tensor.batch_matmul_reduce_scatter_all_to_all``, multiplies them (the
AIC cores), sums the partial products over the TP group while splitting each EP rank's C token
rows over it (ReduceScatter; ``y_shard_type=1``), adds the bias and sends every EP rank the
rows of its own tokens (AllToAll): ``out[i * E / EP + e]`` holds expert ``e`` of EP rank ``i``
for this rank's C / TP tokens. The whole op is one MIX task of one chip dispatch per rank.
"""

import pypto_build.lang as pl
import pypto_build.lang.distributed as pld

EP = 4  # expert-parallel ranks
TP = 2  # tensor-parallel ranks in each expert group
RANKS = EP * TP
E = 8  # experts, E / EP on each rank
C = 8  # token rows per expert and EP rank, C / TP of them on each rank of its TP group
H = 16  # hidden size
M = 16  # the experts' FFN inner size, M / TP on each rank
E_LOCAL = E // EP
C_LOCAL = C // TP
M_LOCAL = M // TP
#: The window the ranks exchange partial products through: the user part of the workspace the
#: operator's tiling computes for this configuration (pypto-build lower --after all shows it),
#: 2*E*C/TP*H + E*C*H elements plus Lite mode's gather buffers (C / TP <= 640), 2 bytes each.
WORKSPACE_BYTES = 6400


@pl.program
class MoeCombine:
    @pl.function(type=pl.FunctionType.Orchestration)
    def expert_combine(
        self,
        x: pl.Tensor[[E_LOCAL, EP * C, M_LOCAL], pl.FP16],
        weight: pl.Tensor[[E_LOCAL, M_LOCAL, H], pl.FP16],
        bias: pl.Tensor[[E_LOCAL, H], pl.FP16],
        out: pl.Out[pl.Tensor[[E, C_LOCAL, H], pl.FP16]],
        workspace: pld.DistributedTensor[[WORKSPACE_BYTES], pl.UINT8],
    ) -> pl.Tensor[[E, C_LOCAL, H], pl.FP16]:
        return pld.tensor.batch_matmul_reduce_scatter_all_to_all(
            x, weight, bias, out, workspace, ep_world_size=EP, tp_world_size=TP, y_shard_type=1
        )
