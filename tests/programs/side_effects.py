"""A program file whose module-level code has side effects.

Importing this file would write a marker file (at ``$PYPTO_SIDE_EFFECT_MARKER``) and then raise.
Parsing it must do neither: the build reads programs with ``ast`` and never runs them.
"""

import os
import pathlib

import pypto_build.lang as pl

WIDTH = 16

pathlib.Path(os.environ.get("PYPTO_SIDE_EFFECT_MARKER", "side_effect_marker.txt")).write_text(
    "module code ran\n", encoding="utf-8"
)


@pl.program
class SideEffects:
    @pl.function(type=pl.FunctionType.AIV, external_source="kernels/scale.cpp")
    def scale(
        self, x: pl.Tensor[[WIDTH], pl.FP32], y: pl.Out[pl.Tensor[[WIDTH], pl.FP32]]
    ) -> pl.Tensor[[WIDTH], pl.FP32]: ...

    @pl.function(type=pl.FunctionType.Orchestration)
    def orch(
        self, x: pl.Tensor[[WIDTH], pl.FP32], y: pl.Out[pl.Tensor[[WIDTH], pl.FP32]]
    ) -> pl.Tensor[[WIDTH], pl.FP32]:
        return self.scale(x, y)


raise RuntimeError("this program file must never be executed by the build")
