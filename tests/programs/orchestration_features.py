"""Every construct the CHIP orchestration codegen supports, in one CHIP orchestration:
runtime allocation, slices at runtime offsets in a loop, a kernel whose results swap two names,
an AIC kernel, ``pl.submit``, ``while`` with Python's floor division and modulo, a counting-down
loop with a runtime start, reshapes in both branches of an ``if``, a valid-shape view, and views
written inline as kernel arguments.
"""

import pypto.language as pl

ROWS = 8
COLS = 16
HALF = ROWS // 2


@pl.program
class OrchestrationFeatures:
    @pl.function(type=pl.FunctionType.AIV, external_source="kernels/tile_scale.cpp")
    def tile_scale(
        self,
        x: pl.Tensor[[HALF, COLS], pl.FP32],
        y: pl.Out[pl.Tensor[[HALF, COLS], pl.FP32]],
        factor: pl.Scalar[pl.FP32],
    ) -> pl.Tensor[[HALF, COLS], pl.FP32]: ...

    @pl.function(type=pl.FunctionType.AIC, external_source="kernels/tile_mix.cpp")
    def tile_mix(
        self,
        a: pl.InOut[pl.Tensor[[HALF, COLS], pl.FP32]],
        b: pl.InOut[pl.Tensor[[HALF, COLS], pl.FP32]],
    ) -> tuple[pl.Tensor[[HALF, COLS], pl.FP32], pl.Tensor[[HALF, COLS], pl.FP32]]: ...

    @pl.function(type=pl.FunctionType.Orchestration)
    def features(
        self,
        x: pl.Tensor[[ROWS, COLS], pl.FP32],
        y: pl.Out[pl.Tensor[[ROWS, COLS], pl.FP32]],
        steps: pl.Scalar[pl.INT64],
        factor: pl.Scalar[pl.FP32],
    ) -> pl.Tensor[[ROWS, COLS], pl.FP32]:
        scratch = pl.create_tensor([HALF, COLS], dtype=pl.FP32)
        other = pl.create_tensor([HALF, COLS], dtype=pl.FP32)
        for i in pl.range(2):
            rows = pl.slice(x, [HALF, COLS], [i * HALF, 0])
            scratch = self.tile_scale(rows, scratch, factor)
            scratch, other = self.tile_mix(other, scratch)
        k = steps
        while k > 0:
            k = k // 2 - k % 3
        done = scratch
        for j in pl.range(steps, 0, -1):
            out_rows = pl.slice(y, [HALF, COLS], [(j % 2) * HALF, 0])
            done, _task = pl.submit(self.tile_scale, scratch, out_rows, factor * 2.0)
        if steps > 3:
            flat = pl.reshape(x, [ROWS * COLS])
            k = k + 1
        else:
            flat = pl.view(y, [ROWS * COLS])
        narrow = pl.set_validshape(pl.reshape(flat, [ROWS, COLS]), HALF, COLS)
        other = self.tile_scale(pl.slice(narrow, [HALF, COLS], [HALF, 0]), done, factor)
        return y
