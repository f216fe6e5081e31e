"""An all_to_all_v written inside an InCore kernel body: the composite rail.

The front end represents it like any other collective; LowerCompositeOps owns it (and rejects
``core_num != 1`` there), and LowerL2TensorCollectives leaves InCore bodies untouched.
"""

import pypto.language as pl
import pypto.language.distributed as pld

NR = 2
MAX_RECV = 4
SIZE = 64
TOTAL = NR * MAX_RECV


@pl.program
class InCoreCollective:
    @pl.function(type=pl.FunctionType.InCore)
    def exchange(
        self,
        stage: pld.DistributedTensor[[TOTAL, SIZE], pl.FP32],
        data: pl.InOut[pld.DistributedTensor[[TOTAL, SIZE], pl.FP32]],
        signal: pl.InOut[pld.DistributedTensor[[NR, 1], pl.INT32]],
        counts: pld.DistributedTensor[[NR], pl.INT32],
        recv: pl.InOut[pld.DistributedTensor[[NR, 1], pl.INT32]],
    ) -> pld.DistributedTensor[[TOTAL, SIZE], pl.FP32]:
        data = pld.tensor.all_to_all_v(stage, data, signal, counts, recv)
        return data

    @pl.function(type=pl.FunctionType.Orchestration)
    def chip_orch(
        self,
        stage: pld.DistributedTensor[[TOTAL, SIZE], pl.FP32],
        data: pl.InOut[pld.DistributedTensor[[TOTAL, SIZE], pl.FP32]],
        signal: pl.InOut[pld.DistributedTensor[[NR, 1], pl.INT32]],
        counts: pld.DistributedTensor[[NR], pl.INT32],
        recv: pl.InOut[pld.DistributedTensor[[NR, 1], pl.INT32]],
    ) -> pld.DistributedTensor[[TOTAL, SIZE], pl.FP32]:
        return self.exchange(stage, data, signal, counts, recv)
