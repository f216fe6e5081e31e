"""HOST-rail all_to_all_v on an INT8 payload, in the upstream spelling of a host orchestrator
(``level=pl.Level.HOST, role=pl.Role.Orchestrator``).

The collective sits in the host orchestrator between two per-rank dispatches; LowerHostTensor-
Collectives fans it out into one builtin chip dispatch per rank. ``core_num=CORES`` asks for a
multi-block launch, so the signal window has CORES lanes per peer.
"""

import pypto_build.lang as pl
from pypto_build.lang import distributed as pld

NR = 2
MAX_RECV = 4
SIZE = 64
CORES = 2
TOTAL = NR * MAX_RECV


@pl.program
class HostRailInt8:
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
    def stage_orch(
        self,
        inp: pl.Tensor[[TOTAL, SIZE], pl.INT8],
        stage: pl.InOut[pld.DistributedTensor[[TOTAL, SIZE], pl.INT8]],
        counts: pl.InOut[pld.DistributedTensor[[NR], pl.INT32]],
    ):
        stage, counts = self.stage_step(inp, stage, counts)

    @pl.function(type=pl.FunctionType.Orchestration)
    def consume_orch(
        self,
        data: pld.DistributedTensor[[TOTAL, SIZE], pl.INT8],
        recv: pld.DistributedTensor[[NR, 1], pl.INT32],
        out: pl.Out[pl.Tensor[[TOTAL, SIZE], pl.INT8]],
    ) -> pl.Tensor[[TOTAL, SIZE], pl.INT8]:
        return self.consume_step(data, recv, out)

    @pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator)
    def host_orch(
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
            self.stage_orch(inp, stage, counts, device=r)
        data = pld.tensor.all_to_all_v(stage, data, signal, counts, recv, core_num=CORES)
        for r in pl.range(pld.world_size()):
            self.consume_orch(data, recv, out, device=r)
