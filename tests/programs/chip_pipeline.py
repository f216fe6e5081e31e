"""CHIP-rail all_to_all_v pipeline: one chip orchestration per rank runs
stage -> collective -> consume as three AIV tasks of its own pipeline.

The HOST orchestrator only allocates the windows, views them and dispatches ``chip_pipeline``
once per rank. Kernels are hand-written C++ files next to this program (``external_source``).
"""

import pypto.language as pl
import pypto.language.distributed as pld

NR = 2  # ranks in the communication domain
MAX_RECV = 4  # rows each rank may send to each peer
SIZE = 64  # row width in elements
TOTAL = NR * MAX_RECV  # rows of every payload window
ROW_BYTES = SIZE * 4  # one FP32 row


@pl.program
class ChipPipeline:
    @pl.function(type=pl.FunctionType.AIV, external_source="kernels/stage_step.cpp")
    def stage_step(
        self,
        inp: pl.Tensor[[TOTAL, SIZE], pl.FP32],
        stage: pl.InOut[pld.DistributedTensor[[TOTAL, SIZE], pl.FP32]],
        counts: pl.InOut[pld.DistributedTensor[[NR], pl.INT32]],
    ) -> tuple[
        pld.DistributedTensor[[TOTAL, SIZE], pl.FP32],
        pld.DistributedTensor[[NR], pl.INT32],
    ]:
        """Copy this rank's rows into the stage window and write the per-peer send counts."""
        ...

    @pl.function(type=pl.FunctionType.AIV, external_source="kernels/consume_step.cpp")
    def consume_step(
        self,
        data: pld.DistributedTensor[[TOTAL, SIZE], pl.FP32],
        recv: pld.DistributedTensor[[NR, 1], pl.INT32],
        out: pl.Out[pl.Tensor[[TOTAL, SIZE], pl.FP32]],
    ) -> pl.Tensor[[TOTAL, SIZE], pl.FP32]:
        """Copy the received rows (recv[r] rows from each peer r) into the output."""
        ...

    @pl.function(type=pl.FunctionType.Orchestration)
    def chip_pipeline(
        self,
        inp: pl.Tensor[[TOTAL, SIZE], pl.FP32],
        out: pl.Out[pl.Tensor[[TOTAL, SIZE], pl.FP32]],
        stage: pl.InOut[pld.DistributedTensor[[TOTAL, SIZE], pl.FP32]],
        data: pl.InOut[pld.DistributedTensor[[TOTAL, SIZE], pl.FP32]],
        signal: pl.InOut[pld.DistributedTensor[[NR, 1], pl.INT32]],
        counts: pl.InOut[pld.DistributedTensor[[NR], pl.INT32]],
        recv: pl.InOut[pld.DistributedTensor[[NR, 1], pl.INT32]],
    ) -> pl.Tensor[[TOTAL, SIZE], pl.FP32]:
        stage, counts = self.stage_step(inp, stage, counts)
        data = pld.tensor.all_to_all_v(stage, data, signal, counts, recv, core_num=1)
        return self.consume_step(data, recv, out)

    @pl.function(type=pl.FunctionType.Orchestration, level=pl.Level.HOST)
    def host_orch(
        self,
        inp: pl.Tensor[[TOTAL, SIZE], pl.FP32],
        out: pl.Out[pl.Tensor[[TOTAL, SIZE], pl.FP32]],
    ):
        stage_buf = pld.alloc_window_buffer(TOTAL * ROW_BYTES, name="stage")
        data_buf = pld.alloc_window_buffer(TOTAL * ROW_BYTES, name="data")
        signal_buf = pld.alloc_window_buffer(NR * 4, name="signal")
        counts_buf = pld.alloc_window_buffer(NR * 4, name="counts")
        recv_buf = pld.alloc_window_buffer(NR * 4, name="recv")
        stage = pld.window(stage_buf, [TOTAL, SIZE], dtype=pl.FP32)
        data = pld.window(data_buf, [TOTAL, SIZE], dtype=pl.FP32)
        signal = pld.window(signal_buf, [NR, 1], dtype=pl.INT32)
        counts = pld.window(counts_buf, [NR], dtype=pl.INT32)
        recv = pld.window(recv_buf, [NR, 1], dtype=pl.INT32)
        for r in pl.range(pld.world_size()):
            self.chip_pipeline(inp, out, stage, data, signal, counts, recv, device=r)
