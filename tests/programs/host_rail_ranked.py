"""HOST-rail all_to_all_v with a golden: ``host_rail_fp32.py`` with the host tensors sliced per
rank, so every output row has exactly one writer.

In ``host_rail_fp32.py`` every rank's ``consume_fp32`` writes the whole ``out``, so what it holds
after a run depends on which rank wrote last (an ``OUTPUT_EXISTING`` overwrite takes no
dependency, upstream or here). Here rank ``r`` stages rows ``[r*TOTAL, (r+1)*TOTAL)`` of ``inp``
and writes the same rows of ``out``. ``stage_step`` computes the send counts from the ranks, so
``out`` is a function of ``inp`` alone: ``pipeline_golden`` of ``tests/_support/goldens.py``
gives it.
The upstream compatibility check (``compat/``) runs this program on PyPTO's runtime; its HOST
orchestrator is deliberately not named ``host_orch``.
"""

import pypto.language as pl
import pypto.language.distributed as pld

NR = 4
MAX_RECV = 4
SIZE = 64
TOTAL = NR * MAX_RECV
ROW_BYTES = SIZE * 4


@pl.program
class HostRailRanked:
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
    def host_ranked(
        self,
        inp: pl.Tensor[[NR * TOTAL, SIZE], pl.FP32],
        out: pl.Out[pl.Tensor[[NR * TOTAL, SIZE], pl.FP32]],
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
            self.stage_fp32(pl.slice(inp, [TOTAL, SIZE], [r * TOTAL, 0]), stage, counts, device=r)
        data = pld.tensor.all_to_all_v(stage, data, signal, counts, recv)
        for r in pl.range(pld.world_size()):
            self.consume_fp32(data, recv, pl.slice(out, [TOTAL, SIZE], [r * TOTAL, 0]), device=r)
