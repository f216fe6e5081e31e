"""Quantized MoE dispatch: each rank sends its INT8 token rows to their expert ranks, on chip.

Rank r holds ``tokens[d*MAX_RECV : d*MAX_RECV + counts[d]]`` for every destination rank d, as
INT8 (the quantized activations an expert kernel consumes). The CHIP orchestration packs those
rows into the communication window (``pack_rows``, a hand-written AIV kernel) and exchanges them
with ``pld.tensor.all_to_all_v`` on two AIV cores; slot s of the ``data`` window then holds the
rows rank s sent here and ``recv_counts[s]`` how many, for the expert kernels that follow. The
HOST orchestrator allocates the windows and dispatches the exchange to every rank.
"""

import pypto_build.lang as pl
import pypto_build.lang.distributed as pld

NR = 2  # ranks in the communication domain
MAX_RECV = 8  # capacity, in rows, of one rank's slot in a peer's window
HIDDEN = 32  # INT8 elements per token row
ROWS = NR * MAX_RECV
CORES = 2  # AIV cores the exchange runs on


@pl.program
class QuantDispatch:
    @pl.function(type=pl.FunctionType.AIV, external_source="kernels/pack_rows.cpp")
    def pack_rows(
        self,
        tokens: pl.Tensor[[ROWS, HIDDEN], pl.INT8],
        counts: pl.Tensor[[NR], pl.INT32],
        stage: pl.InOut[pld.DistributedTensor[[ROWS, HIDDEN], pl.INT8]],
        send_counts: pl.InOut[pld.DistributedTensor[[NR], pl.INT32]],
    ) -> tuple[
        pld.DistributedTensor[[ROWS, HIDDEN], pl.INT8],
        pld.DistributedTensor[[NR], pl.INT32],
    ]: ...

    @pl.function(type=pl.FunctionType.Orchestration)
    def quant_exchange(
        self,
        tokens: pl.Tensor[[ROWS, HIDDEN], pl.INT8],
        counts: pl.Tensor[[NR], pl.INT32],
        stage: pld.DistributedTensor[[ROWS, HIDDEN], pl.INT8],
        data: pld.DistributedTensor[[ROWS, HIDDEN], pl.INT8],
        signal: pld.DistributedTensor[[NR, CORES], pl.INT32],
        send_counts: pld.DistributedTensor[[NR], pl.INT32],
        recv_counts: pld.DistributedTensor[[NR, 1], pl.INT32],
    ) -> pld.DistributedTensor[[ROWS, HIDDEN], pl.INT8]:
        stage, send_counts = self.pack_rows(tokens, counts, stage, send_counts)
        return pld.tensor.all_to_all_v(
            stage, data, signal, send_counts, recv_counts, core_num=CORES
        )

    @pl.function(type=pl.FunctionType.Orchestration, level=pl.Level.HOST)
    def host_dispatch(
        self,
        tokens: pl.Tensor[[NR * ROWS, HIDDEN], pl.INT8],
        counts: pl.Tensor[[NR * NR], pl.INT32],
    ) -> None:
        stage_buf = pld.alloc_window_buffer([ROWS, HIDDEN], dtype=pl.INT8, name="stage")
        data_buf = pld.alloc_window_buffer([ROWS, HIDDEN], dtype=pl.INT8, name="data")
        signal_buf = pld.alloc_window_buffer([NR, CORES], dtype=pl.INT32, name="signal")
        send_buf = pld.alloc_window_buffer([NR], dtype=pl.INT32, name="send_counts")
        recv_buf = pld.alloc_window_buffer([NR, 1], dtype=pl.INT32, name="recv_counts")
        stage = pld.window(stage_buf, [ROWS, HIDDEN], dtype=pl.INT8)
        data = pld.window(data_buf, [ROWS, HIDDEN], dtype=pl.INT8)
        signal = pld.window(signal_buf, [NR, CORES], dtype=pl.INT32)
        send_counts = pld.window(send_buf, [NR], dtype=pl.INT32)
        recv_counts = pld.window(recv_buf, [NR, 1], dtype=pl.INT32)
        for r in pl.range(pld.world_size()):
            self.quant_exchange(
                pl.slice(tokens, [ROWS, HIDDEN], [r * ROWS, 0]),
                pl.slice(counts, [NR], [r * NR]),
                stage,
                data,
                signal,
                send_counts,
                recv_counts,
                device=r,
            )
