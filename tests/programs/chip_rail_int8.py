"""CHIP-rail all_to_all_v on an INT8 payload with a two-block launch: the CHIP twin of
``host_rail_int8.py``.

``core_num=CORES`` with NR = CORES ranks admits B = 2 blocks, so the collective's call carries
``core_num=2, sync_start=True`` and the orchestration sets the chip's launch spec. The HOST
orchestrator only dispatches the pipeline per rank, so the build has no HOST-rail variant.
"""

import pypto.language as pl
import pypto.language.distributed as pld

NR = 2
MAX_RECV = 4
SIZE = 64
CORES = 2
TOTAL = NR * MAX_RECV


@pl.program
class ChipRailInt8:
    @pl.function(type=pl.FunctionType.AIV, external_source="kernels/stage_step_int8.cpp")
    def stage_step(
        self,
        inp: pl.Tensor[[TOTAL, SIZE], pl.INT8],
        stage: pl.InOut[pld.DistributedTensor[[TOTAL, SIZE], pl.INT8]],
        counts: pl.InOut[pld.DistributedTensor[[NR], pl.INT32]],
    ) -> tuple[
        pld.DistributedTensor[[TOTAL, SIZE], pl.INT8],
        pld.DistributedTensor[[NR], pl.INT32],
    ]: ...

    @pl.function(type=pl.FunctionType.AIV, external_source="kernels/consume_step_int8.cpp")
    def consume_step(
        self,
        data: pld.DistributedTensor[[TOTAL, SIZE], pl.INT8],
        recv: pld.DistributedTensor[[NR, 1], pl.INT32],
        out: pl.Out[pl.Tensor[[TOTAL, SIZE], pl.INT8]],
    ) -> pl.Tensor[[TOTAL, SIZE], pl.INT8]: ...

    @pl.function(type=pl.FunctionType.Orchestration)
    def chip_int8(
        self,
        inp: pl.Tensor[[TOTAL, SIZE], pl.INT8],
        out: pl.Out[pl.Tensor[[TOTAL, SIZE], pl.INT8]],
        stage: pl.InOut[pld.DistributedTensor[[TOTAL, SIZE], pl.INT8]],
        data: pl.InOut[pld.DistributedTensor[[TOTAL, SIZE], pl.INT8]],
        signal: pl.InOut[pld.DistributedTensor[[NR, CORES], pl.INT32]],
        counts: pl.InOut[pld.DistributedTensor[[NR], pl.INT32]],
        recv: pl.InOut[pld.DistributedTensor[[NR, 1], pl.INT32]],
    ) -> pl.Tensor[[TOTAL, SIZE], pl.INT8]:
        stage, counts = self.stage_step(inp, stage, counts)
        data = pld.tensor.all_to_all_v(stage, data, signal, counts, recv, core_num=CORES)
        return self.consume_step(data, recv, out)

    @pl.function(type=pl.FunctionType.Orchestration, level=pl.Level.HOST)
    def host_int8(
        self,
        inp: pl.Tensor[[TOTAL, SIZE], pl.INT8],
        out: pl.Out[pl.Tensor[[TOTAL, SIZE], pl.INT8]],
    ):
        stage_buf = pld.alloc_window_buffer(TOTAL * SIZE, name="stage")
        data_buf = pld.alloc_window_buffer(TOTAL * SIZE, name="data")
        signal_buf = pld.alloc_window_buffer(NR * CORES * 4, name="signal")
        counts_buf = pld.alloc_window_buffer(NR * 4, name="counts")
        recv_buf = pld.alloc_window_buffer(NR * 4, name="recv")
        stage = pld.window(stage_buf, [TOTAL, SIZE], dtype=pl.INT8)
        data = pld.window(data_buf, [TOTAL, SIZE], dtype=pl.INT8)
        signal = pld.window(signal_buf, [NR, CORES], dtype=pl.INT32)
        counts = pld.window(counts_buf, [NR], dtype=pl.INT32)
        recv = pld.window(recv_buf, [NR, 1], dtype=pl.INT32)
        for r in pl.range(pld.world_size()):
            self.chip_int8(inp, out, stage, data, signal, counts, recv, device=r)
