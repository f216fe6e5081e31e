"""pld.tensor.ring_shift of the third-party package acme-collectives, on the CHIP rail.

The op, its typing and its launch width are acme's: its manifest names a contract and a
launch-width rule that acme-collectives registers as code. ``chip_ring`` shifts each rank's
rows two ranks along the ring, then one; the two calls get two kernels, one per shift.
"""

import pypto.language as pl
import pypto.language.distributed as pld

NR = 4
M = 2
SIZE = 16
LANES = 8


@pl.program
class RingShift:
    @pl.function(type=pl.FunctionType.Orchestration)
    def chip_ring(
        self,
        rows: pl.Tensor[[M, SIZE], pl.FP32],
        data: pl.InOut[pld.DistributedTensor[[M, SIZE], pl.FP32]],
        again: pl.InOut[pld.DistributedTensor[[M, SIZE], pl.FP32]],
        signal: pl.InOut[pld.DistributedTensor[[NR, LANES], pl.INT32]],
    ):
        data = pld.tensor.ring_shift(rows, data, signal, shift=2, core_num=8)
        again = pld.tensor.ring_shift(data, again, signal, shift=1)
