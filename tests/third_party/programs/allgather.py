"""pld.tensor.allgather of the third-party package acme-collectives, on both rails.

The op is not pypto-build's: without acme-collectives installed, whose builtin package
implements it, pypto-build only parses it and the lowering refuses it. ``host_orch`` runs two
gathers through one signal window:

* CHIP rail: ``chip_gather`` gathers each rank's host rows ``chip_in`` (a local tensor) into
  the ``chip_data`` window, launched ``CHIP_CORES`` blocks wide, then, in the same pipeline,
  drains ``chip_data`` to ``chip_out`` and stages ``host_in`` into the ``host_stage`` window;
* HOST rail: the orchestrator's own ``pld.tensor.allgather`` of ``host_stage`` into
  ``host_data`` becomes one builtin dispatch per rank, ``core_num`` blocks wide (a runtime
  scalar); ``drain_orch`` then copies ``host_data`` and the signal lanes out.

After both, every rank's ``chip_out`` holds every rank's ``chip_in`` in rank order, its
``host_out`` every rank's ``host_in``, and its signal lanes are back at 0. The payload is FP32;
the INT8 program is this text with ``pl.FP32`` and ``ELEM_BYTES`` changed.
"""

import pypto.language as pl
import pypto.language.distributed as pld

NR = 4
M = 2
SIZE = 16
TOTAL = NR * M
LANES = 8
CHIP_CORES = 8
ELEM_BYTES = 4
ROW_BYTES = SIZE * ELEM_BYTES


@pl.program
class AllGather:
    @pl.function(type=pl.FunctionType.AIV, external_source="kernels/copy_pairs.cpp")
    def stage_and_drain(
        self,
        host_in: pl.Tensor[[M, SIZE], pl.FP32],
        host_stage: pl.InOut[pld.DistributedTensor[[M, SIZE], pl.FP32]],
        chip_data: pld.DistributedTensor[[TOTAL, SIZE], pl.FP32],
        chip_out: pl.Out[pl.Tensor[[TOTAL, SIZE], pl.FP32]],
    ) -> tuple[
        pld.DistributedTensor[[M, SIZE], pl.FP32],
        pl.Tensor[[TOTAL, SIZE], pl.FP32],
    ]: ...

    @pl.function(type=pl.FunctionType.AIV, external_source="kernels/copy_pairs.cpp")
    def drain(
        self,
        host_data: pld.DistributedTensor[[TOTAL, SIZE], pl.FP32],
        host_out: pl.Out[pl.Tensor[[TOTAL, SIZE], pl.FP32]],
        signal: pld.DistributedTensor[[NR, LANES], pl.INT32],
        signal_out: pl.Out[pl.Tensor[[NR, LANES], pl.INT32]],
    ) -> tuple[pl.Tensor[[TOTAL, SIZE], pl.FP32], pl.Tensor[[NR, LANES], pl.INT32]]: ...

    @pl.function(type=pl.FunctionType.Orchestration)
    def chip_gather(
        self,
        chip_in: pl.Tensor[[M, SIZE], pl.FP32],
        host_in: pl.Tensor[[M, SIZE], pl.FP32],
        chip_out: pl.Out[pl.Tensor[[TOTAL, SIZE], pl.FP32]],
        host_stage: pl.InOut[pld.DistributedTensor[[M, SIZE], pl.FP32]],
        chip_data: pl.InOut[pld.DistributedTensor[[TOTAL, SIZE], pl.FP32]],
        signal: pl.InOut[pld.DistributedTensor[[NR, LANES], pl.INT32]],
    ):
        chip_data = pld.tensor.allgather(chip_in, chip_data, signal, core_num=CHIP_CORES)
        host_stage, chip_out = self.stage_and_drain(host_in, host_stage, chip_data, chip_out)

    @pl.function(type=pl.FunctionType.Orchestration)
    def drain_orch(
        self,
        host_data: pld.DistributedTensor[[TOTAL, SIZE], pl.FP32],
        signal: pld.DistributedTensor[[NR, LANES], pl.INT32],
        host_out: pl.Out[pl.Tensor[[TOTAL, SIZE], pl.FP32]],
        signal_out: pl.Out[pl.Tensor[[NR, LANES], pl.INT32]],
    ):
        host_out, signal_out = self.drain(host_data, host_out, signal, signal_out)

    @pl.function(type=pl.FunctionType.Orchestration, level=pl.Level.HOST)
    def host_orch(
        self,
        chip_in: pl.Tensor[[NR * M, SIZE], pl.FP32],
        host_in: pl.Tensor[[NR * M, SIZE], pl.FP32],
        chip_out: pl.Out[pl.Tensor[[NR * TOTAL, SIZE], pl.FP32]],
        host_out: pl.Out[pl.Tensor[[NR * TOTAL, SIZE], pl.FP32]],
        signal_out: pl.Out[pl.Tensor[[NR * NR, LANES], pl.INT32]],
        core_num: pl.Scalar[pl.INDEX],
    ):
        host_stage_buf = pld.alloc_window_buffer(M * ROW_BYTES, name="host_stage")
        chip_data_buf = pld.alloc_window_buffer(TOTAL * ROW_BYTES, name="chip_data")
        host_data_buf = pld.alloc_window_buffer(TOTAL * ROW_BYTES, name="host_data")
        signal_buf = pld.alloc_window_buffer(NR * LANES * 4, name="signal")
        host_stage = pld.window(host_stage_buf, [M, SIZE], dtype=pl.FP32)
        chip_data = pld.window(chip_data_buf, [TOTAL, SIZE], dtype=pl.FP32)
        host_data = pld.window(host_data_buf, [TOTAL, SIZE], dtype=pl.FP32)
        signal = pld.window(signal_buf, [NR, LANES], dtype=pl.INT32)
        for r in pl.range(pld.world_size()):
            self.chip_gather(
                pl.slice(chip_in, [M, SIZE], [r * M, 0]),
                pl.slice(host_in, [M, SIZE], [r * M, 0]),
                pl.slice(chip_out, [TOTAL, SIZE], [r * TOTAL, 0]),
                host_stage,
                chip_data,
                signal,
                device=r,
            )
        host_data = pld.tensor.allgather(host_stage, host_data, signal, core_num=core_num)
        for r in pl.range(pld.world_size()):
            self.drain_orch(
                host_data,
                signal,
                pl.slice(host_out, [TOTAL, SIZE], [r * TOTAL, 0]),
                pl.slice(signal_out, [NR, LANES], [r * NR, 0]),
                device=r,
            )
