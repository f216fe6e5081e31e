"""HOST-rail all_to_all_v on an FP32 payload: the HOST twin of ``chip_pipeline.py``.

The collective sits in the host orchestrator between the per-rank stage and consume dispatches;
LowerHostTensorCollectives fans it out into one ``builtin.tensor.all_to_all_v`` dispatch per rank,
whose chip callable is the ``builtin.tensor.all_to_all_v__fp32`` variant sub-build.
"""

import pypto.language as pl
import pypto.language.distributed as pld

NR = 2
MAX_RECV = 4
SIZE = 64
TOTAL = NR * MAX_RECV
ROW_BYTES = SIZE * 4


@pl.program
class HostRailFp32:
    @pl.function(type=pl.FunctionType.AIV, external_source="kernels/stage_step.cpp")
    def stage_step(
        self,
        inp: pl.Tensor[[TOTAL, SIZE], pl.FP32],
        stage: pl.InOut[pld.DistributedTensor[[TOTAL, SIZE], pl.FP32]],
        counts: pl.InOut[pld.DistributedTensor[[NR], pl.INT32]],
    ) -> tuple[
        pld.DistributedTensor[[TOTAL, SIZE], pl.FP32],
        pld.DistributedTensor[[NR], pl.INT32],
    ]: ...

    @pl.function(type=pl.FunctionType.AIV, external_source="kernels/consume_step.cpp")
    def consume_step(
        self,
        data: pld.DistributedTensor[[TOTAL, SIZE], pl.FP32],
        recv: pld.DistributedTensor[[NR, 1], pl.INT32],
        out: pl.Out[pl.Tensor[[TOTAL, SIZE], pl.FP32]],
    ) -> pl.Tensor[[TOTAL, SIZE], pl.FP32]: ...

    @pl.function(type=pl.FunctionType.Orchestration)
    def stage_fp32(
        self,
        inp: pl.Tensor[[TOTAL, SIZE], pl.FP32],
        stage: pl.InOut[pld.DistributedTensor[[TOTAL, SIZE], pl.FP32]],
        counts: pl.InOut[pld.DistributedTensor[[NR], pl.INT32]],
    ):
        stage, counts = self.stage_step(inp, stage, counts)

    @pl.function(type=pl.FunctionType.Orchestration)
    def consume_fp32(
        self,
        data: pld.DistributedTensor[[TOTAL, SIZE], pl.FP32],
        recv: pld.DistributedTensor[[NR, 1], pl.INT32],
        out: pl.Out[pl.Tensor[[TOTAL, SIZE], pl.FP32]],
    ) -> pl.Tensor[[TOTAL, SIZE], pl.FP32]:
        return self.consume_step(data, recv, out)

    @pl.function(type=pl.FunctionType.Orchestration, level=pl.Level.HOST)
    def host_fp32(
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
            self.stage_fp32(inp, stage, counts, device=r)
        data = pld.tensor.all_to_all_v(stage, data, signal, counts, recv)
        for r in pl.range(pld.world_size()):
            self.consume_fp32(data, recv, out, device=r)
