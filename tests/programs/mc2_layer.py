"""The MC2 fused op in a CHIP orchestration, twice: FP16 with y_shard_type 1 and a 3-D bias, then
BF16 with y_shard_type 0, a transposed weight and no bias, both through one workspace window.

The two calls are two kernel variants (dtype and build-time tiling), each a MIX kernel listed on
the AIC and the AIV; the shared workspace orders the second after the first. Sizes are the aclnn
sample's at ep 4, tp 2 (E = 16, C = 12, H = 4, M = 12).
"""

import pypto.language as pl
import pypto.language.distributed as pld

EP = 4
TP = 2
E = 16
C = 12
H = 4
M = 12
# Workspace elements: at least either variant's user bytes (5952 and 4224) in FP16.
WS = 4096


@pl.program
class Mc2Layer:
    @pl.function(type=pl.FunctionType.Orchestration)
    def layer(
        self,
        x: pl.Tensor[[E // EP, EP * C, M // TP], pl.FP16],
        w: pl.Tensor[[E // EP, M // TP, H], pl.FP16],
        bias: pl.Tensor[[E // EP, 1, H], pl.FP16],
        out: pl.Out[pl.Tensor[[E, C // TP, H], pl.FP16]],
        xb: pl.Tensor[[E // EP, EP * C, M // TP], pl.BF16],
        wbt: pl.Tensor[[E // EP, H, M // TP], pl.BF16],
        outb: pl.Out[pl.Tensor[[E, C, H // TP], pl.BF16]],
        ws: pl.InOut[pld.DistributedTensor[[WS], pl.FP16]],
    ):
        out = pld.tensor.batch_matmul_reduce_scatter_all_to_all(
            x, w, bias, out, ws, ep_world_size=EP, tp_world_size=TP, y_shard_type=1
        )
        outb = pld.tensor.batch_matmul_reduce_scatter_all_to_all(
            xb,
            wbt,
            None,
            outb,
            ws,
            ep_world_size=EP,
            tp_world_size=TP,
            y_shard_type=0,
            transpose_weight=True,
        )
