"""MoE dispatch on the HOST rail: the exchange is a collective of the HOST orchestrator.

Rank r holds ``tokens[d*MAX_RECV : d*MAX_RECV + counts[d]]`` for every destination rank d. The
HOST orchestrator dispatches ``stage_chip`` to every rank (stage the routed rows in the
communication window, publish the counts), exchanges the windows with
``pld.tensor.all_to_all_v`` at host level (one builtin dispatch per rank of the domain), then
dispatches ``consume_chip`` to every rank: slot s of ``out`` holds the rows rank s sent here,
``recv_out[s]`` how many there are. ``samples/moe_a2a`` runs the same exchange on the CHIP rail,
inside one chip orchestration.
"""

import pypto_build.lang as pl
import pypto_build.lang.distributed as pld

NR = 4  # ranks in the communication domain
MAX_RECV = 4  # capacity, in rows, of one rank's slot in a peer's window
HIDDEN = 64  # elements per token row
ROWS = NR * MAX_RECV


@pl.program
class MoeDispatchHost:
    @pl.function(type=pl.FunctionType.AIV, external_source="kernels/stage_step.cpp")
    def stage_step(
        self,
        tokens: pl.Tensor[[ROWS, HIDDEN], pl.FP32],
        counts: pl.Tensor[[NR], pl.INT32],
        stage: pl.InOut[pld.DistributedTensor[[ROWS, HIDDEN], pl.FP32]],
        send_counts: pl.InOut[pld.DistributedTensor[[NR], pl.INT32]],
    ) -> tuple[
        pld.DistributedTensor[[ROWS, HIDDEN], pl.FP32],
        pld.DistributedTensor[[NR], pl.INT32],
    ]: ...

    @pl.function(type=pl.FunctionType.AIV, external_source="kernels/consume_step.cpp")
    def consume_step(
        self,
        data: pld.DistributedTensor[[ROWS, HIDDEN], pl.FP32],
        recv_counts: pld.DistributedTensor[[NR, 1], pl.INT32],
        out: pl.Out[pl.Tensor[[ROWS, HIDDEN], pl.FP32]],
        recv_out: pl.Out[pl.Tensor[[NR, 1], pl.INT32]],
    ) -> tuple[pl.Tensor[[ROWS, HIDDEN], pl.FP32], pl.Tensor[[NR, 1], pl.INT32]]: ...

    @pl.function(type=pl.FunctionType.Orchestration)
    def stage_chip(
        self,
        tokens: pl.Tensor[[ROWS, HIDDEN], pl.FP32],
        counts: pl.Tensor[[NR], pl.INT32],
        stage: pl.InOut[pld.DistributedTensor[[ROWS, HIDDEN], pl.FP32]],
        send_counts: pl.InOut[pld.DistributedTensor[[NR], pl.INT32]],
    ):
        stage, send_counts = self.stage_step(tokens, counts, stage, send_counts)

    @pl.function(type=pl.FunctionType.Orchestration)
    def consume_chip(
        self,
        data: pld.DistributedTensor[[ROWS, HIDDEN], pl.FP32],
        recv_counts: pld.DistributedTensor[[NR, 1], pl.INT32],
        out: pl.Out[pl.Tensor[[ROWS, HIDDEN], pl.FP32]],
        recv_out: pl.Out[pl.Tensor[[NR, 1], pl.INT32]],
    ) -> tuple[pl.Tensor[[ROWS, HIDDEN], pl.FP32], pl.Tensor[[NR, 1], pl.INT32]]:
        return self.consume_step(data, recv_counts, out, recv_out)

    @pl.function(type=pl.FunctionType.Orchestration, level=pl.Level.HOST)
    def host_orch(
        self,
        tokens: pl.Tensor[[NR * ROWS, HIDDEN], pl.FP32],
        counts: pl.Tensor[[NR * NR], pl.INT32],
        out: pl.Out[pl.Tensor[[NR * ROWS, HIDDEN], pl.FP32]],
        recv_out: pl.Out[pl.Tensor[[NR * NR, 1], pl.INT32]],
    ) -> None:
        stage_buf = pld.alloc_window_buffer([ROWS, HIDDEN], dtype=pl.FP32, name="stage")
        data_buf = pld.alloc_window_buffer([ROWS, HIDDEN], dtype=pl.FP32, name="data")
        signal_buf = pld.alloc_window_buffer([NR, 1], dtype=pl.INT32, name="signal")
        send_buf = pld.alloc_window_buffer([NR], dtype=pl.INT32, name="send_counts")
        recv_buf = pld.alloc_window_buffer([NR, 1], dtype=pl.INT32, name="recv_counts")
        stage = pld.window(stage_buf, [ROWS, HIDDEN], dtype=pl.FP32)
        data = pld.window(data_buf, [ROWS, HIDDEN], dtype=pl.FP32)
        signal = pld.window(signal_buf, [NR, 1], dtype=pl.INT32)
        send_counts = pld.window(send_buf, [NR], dtype=pl.INT32)
        recv_counts = pld.window(recv_buf, [NR, 1], dtype=pl.INT32)
        for r in pl.range(pld.world_size()):
            self.stage_chip(
                pl.slice(tokens, [ROWS, HIDDEN], [r * ROWS, 0]),
                pl.slice(counts, [NR], [r * NR]),
                stage,
                send_counts,
                device=r,
            )
        data = pld.tensor.all_to_all_v(stage, data, signal, send_counts, recv_counts)
        for r in pl.range(pld.world_size()):
            self.consume_chip(
                data,
                recv_counts,
                pl.slice(out, [ROWS, HIDDEN], [r * ROWS, 0]),
                pl.slice(recv_out, [NR, 1], [r * NR, 0]),
                device=r,
            )
