"""Programs written as upstream PyPTO's own system tests write them, built here unchanged.

The HOST program has the shape of upstream's HOST all_to_all_v system test
(hw-native-sys/pypto e2d0f78, ``tests/st/distributed/test_l3_host_tensor_all_to_all_v.py``), the
CHIP one the shape of its chip-rail counterpart: ``@pl.function(level=pl.Level.HOST,
role=pl.Role.Orchestrator)``, window buffers sized in bytes with ``pl.FP32.get_byte()``, windows
bound inside each per-device loop and again after it, each rank's host data as ``inputs[r]`` of
a ``[NR, ...]`` tensor, and ``return outputs, recv_outputs`` (HOST) or ``return 0`` at the end.
Only the kernels differ: upstream writes them as InCore DSL bodies, which pypto-build does not
compile (docs/incore.md), so here they are the simulator's C++ copy kernel (external_source).
"""

from __future__ import annotations

from dataclasses import dataclass

from _support.sim_programs import ProgramSpec

MAX_RECV = 4
SIZE = 64

_HEADER = """\
import pypto.language as pl
import pypto.language.distributed as pld

NR = {nr}
MAX_RECV = {max_recv}
SIZE = {size}
TOTAL = NR * MAX_RECV


@pl.program
class {name}:
    @pl.function(type=pl.FunctionType.AIV, external_source="kernels/copy_pairs.cpp")
    def stage_step(
        self,
        inp: pl.Tensor[[TOTAL, SIZE], pl.FP32],
        stage: pl.Out[pld.DistributedTensor[[TOTAL, SIZE], pl.FP32]],
        counts_row: pl.Tensor[[NR, 1], pl.INT32],
        counts: pl.Out[pld.DistributedTensor[[NR, 1], pl.INT32]],
    ) -> tuple[
        pld.DistributedTensor[[TOTAL, SIZE], pl.FP32], pld.DistributedTensor[[NR, 1], pl.INT32]
    ]: ...

    @pl.function(type=pl.FunctionType.AIV, external_source="kernels/copy_pairs.cpp")
    def consume_step(
        self,
        data: pld.DistributedTensor[[TOTAL, SIZE], pl.FP32],
        out: pl.Out[pl.Tensor[[TOTAL, SIZE], pl.FP32]],
        recv_counts: pld.DistributedTensor[[NR, 1], pl.INT32],
        recv_out: pl.Out[pl.Tensor[[NR, 1], pl.INT32]],
    ) -> tuple[pl.Tensor[[TOTAL, SIZE], pl.FP32], pl.Tensor[[NR, 1], pl.INT32]]: ...
"""

_HOST = """
    @pl.function(type=pl.FunctionType.Orchestration)
    def stage_orch(
        self,
        inp: pl.Tensor[[TOTAL, SIZE], pl.FP32],
        counts_row: pl.Tensor[[NR, 1], pl.INT32],
        stage: pl.Out[pld.DistributedTensor[[TOTAL, SIZE], pl.FP32]],
        counts: pl.Out[pld.DistributedTensor[[NR, 1], pl.INT32]],
    ):
        stage, counts = self.stage_step(inp, stage, counts_row, counts)

    @pl.function(type=pl.FunctionType.Orchestration)
    def consume_orch(
        self,
        data: pld.DistributedTensor[[TOTAL, SIZE], pl.FP32],
        recv_counts: pld.DistributedTensor[[NR, 1], pl.INT32],
        out: pl.Out[pl.Tensor[[TOTAL, SIZE], pl.FP32]],
        recv_out: pl.Out[pl.Tensor[[NR, 1], pl.INT32]],
    ):
        return self.consume_step(data, out, recv_counts, recv_out)

    @pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator)
    def host_orch(
        self,
        inputs: pl.Tensor[[NR, TOTAL, SIZE], pl.FP32],
        send_counts: pl.Tensor[[NR, NR, 1], pl.INT32],
        outputs: pl.Out[pl.Tensor[[NR, TOTAL, SIZE], pl.FP32]],
        recv_outputs: pl.Out[pl.Tensor[[NR, NR, 1], pl.INT32]],
    ) -> tuple[pl.Tensor[[NR, TOTAL, SIZE], pl.FP32], pl.Tensor[[NR, NR, 1], pl.INT32]]:
        input_buf = pld.alloc_window_buffer(TOTAL * SIZE * pl.FP32.get_byte())
        data_buf = pld.alloc_window_buffer(TOTAL * SIZE * pl.FP32.get_byte())
        signal_buf = pld.alloc_window_buffer(NR * pl.INT32.get_byte())
        counts_buf = pld.alloc_window_buffer(NR * pl.INT32.get_byte())
        recv_buf = pld.alloc_window_buffer(NR * pl.INT32.get_byte())

        for r in pl.range(pld.world_size()):
            stage = pld.window(input_buf, [TOTAL, SIZE], dtype=pl.FP32)
            counts = pld.window(counts_buf, [NR, 1], dtype=pl.INT32)
            self.stage_orch(inputs[r], send_counts[r], stage, counts, device=r)

        stage = pld.window(input_buf, [TOTAL, SIZE], dtype=pl.FP32)
        data = pld.window(data_buf, [TOTAL, SIZE], dtype=pl.FP32)
        signal = pld.window(signal_buf, [NR, 1], dtype=pl.INT32)
        counts = pld.window(counts_buf, [NR, 1], dtype=pl.INT32)
        recv = pld.window(recv_buf, [NR, 1], dtype=pl.INT32)
        data = pld.tensor.all_to_all_v(stage, data, signal, counts, recv)

        for r in pl.range(pld.world_size()):
            self.consume_orch(data, recv, outputs[r], recv_outputs[r], device=r)

        return outputs, recv_outputs
"""

_CHIP = """
    @pl.function(type=pl.FunctionType.Orchestration)
    def chip_pipeline(
        self,
        inp: pl.Tensor[[TOTAL, SIZE], pl.FP32],
        counts_row: pl.Tensor[[NR, 1], pl.INT32],
        stage: pl.InOut[pld.DistributedTensor[[TOTAL, SIZE], pl.FP32]],
        data: pl.InOut[pld.DistributedTensor[[TOTAL, SIZE], pl.FP32]],
        signal: pl.InOut[pld.DistributedTensor[[NR, 1], pl.INT32]],
        counts: pl.InOut[pld.DistributedTensor[[NR, 1], pl.INT32]],
        recv: pl.InOut[pld.DistributedTensor[[NR, 1], pl.INT32]],
        out: pl.Out[pl.Tensor[[TOTAL, SIZE], pl.FP32]],
        recv_out: pl.Out[pl.Tensor[[NR, 1], pl.INT32]],
    ):
        stage, counts = self.stage_step(inp, stage, counts_row, counts)
        data = pld.tensor.all_to_all_v(stage, data, signal, counts, recv, core_num=1)
        out, recv_out = self.consume_step(data, out, recv, recv_out)
        return data

    @pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator)
    def host_orch(
        self,
        inputs: pl.Tensor[[NR, TOTAL, SIZE], pl.FP32],
        send_counts: pl.Tensor[[NR, NR, 1], pl.INT32],
        outputs: pl.Out[pl.Tensor[[NR, TOTAL, SIZE], pl.FP32]],
        recv_outputs: pl.Out[pl.Tensor[[NR, NR, 1], pl.INT32]],
    ):
        stage_buf = pld.alloc_window_buffer(TOTAL * SIZE * pl.FP32.get_byte())
        data_buf = pld.alloc_window_buffer([TOTAL, SIZE], dtype=pl.FP32)
        signal_buf = pld.alloc_window_buffer(NR * pl.INT32.get_byte())
        counts_buf = pld.alloc_window_buffer(NR * pl.INT32.get_byte())
        recv_buf = pld.alloc_window_buffer(NR * pl.INT32.get_byte())
        for r in pl.range(pld.world_size()):
            stage = pld.window(stage_buf, [TOTAL, SIZE], dtype=pl.FP32)
            data = pld.window(data_buf, [TOTAL, SIZE], dtype=pl.FP32)
            sig = pld.window(signal_buf, [NR, 1], dtype=pl.INT32)
            counts = pld.window(counts_buf, [NR, 1], dtype=pl.INT32)
            recv = pld.window(recv_buf, [NR, 1], dtype=pl.INT32)
            self.chip_pipeline(
                inputs[r], send_counts[r], stage, data, sig, counts, recv,
                outputs[r], recv_outputs[r], device=r,
            )
        return 0
"""


@dataclass(frozen=True)
class UpstreamStyle(ProgramSpec):
    """An all_to_all_v program over ``nr`` ranks on ``rail`` ("host" or "chip"), written as
    upstream writes its system tests."""

    rail: str
    nr: int

    @property
    def slug(self) -> str:
        return f"upstream-{self.rail}-p{self.nr}"

    def source(self) -> str:
        name = "HostTensorAllToAllV" if self.rail == "host" else "ChipAllToAllV"
        header = _HEADER.format(nr=self.nr, max_recv=MAX_RECV, size=SIZE, name=name)
        return header + (_HOST if self.rail == "host" else _CHIP)
