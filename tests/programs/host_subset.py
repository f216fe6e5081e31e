"""A HOST-rail all_to_all_v over a subset of the world: ``host_rail_ranked.py`` in
``pld.comm_domain(devices=[0, 2])`` of a program whose host tensors hold rows for 3 devices.

The domain's two ranks are devices 0 and 2 (domain ranks 0 and 1, its NR = 2), so device ``d``
stages rows ``[d*TOTAL, (d+1)*TOTAL)`` of ``inp`` and gets the same rows of ``out``; device 1
takes no part. The tree's ``distributed_meta.json`` names the world the program addresses,
devices 0 to 2, which is what PyPTO's runtime runs it on.
"""

import pypto.language as pl
import pypto.language.distributed as pld

NR = 2  # ranks of the comm domain
WORLD = 3  # devices the program addresses
MAX_RECV = 4
SIZE = 64
TOTAL = NR * MAX_RECV
ROW_BYTES = SIZE * 4


@pl.program
class HostSubset:
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
    def host_orch(
        self,
        inp: pl.Tensor[[WORLD * TOTAL, SIZE], pl.FP32],
        out: pl.Out[pl.Tensor[[WORLD * TOTAL, SIZE], pl.FP32]],
    ):
        with pld.comm_domain(devices=[0, 2]):
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
            self.stage_fp32(pl.slice(inp, [TOTAL, SIZE], [0, 0]), stage, counts, device=0)
            self.stage_fp32(pl.slice(inp, [TOTAL, SIZE], [2 * TOTAL, 0]), stage, counts, device=2)
            data = pld.tensor.all_to_all_v(stage, data, signal, counts, recv)
            self.consume_fp32(data, recv, pl.slice(out, [TOTAL, SIZE], [0, 0]), device=0)
            self.consume_fp32(data, recv, pl.slice(out, [TOTAL, SIZE], [2 * TOTAL, 0]), device=2)
