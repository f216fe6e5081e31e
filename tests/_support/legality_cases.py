"""Programs a build refuses after lowering, each with the diagnostic it gets.

Every program here lowers through every rewriting pass and is refused by CheckLegality, the
pass that closes the pipeline: a CHIP orchestration construct with no C++ form, a kernel without
a source or a builtin package for the build's chips, a HOST orchestrator construct with no run-
time form, programs that cannot share one tree. The table is the render suite's and the
codegens' rejected programs in one place, so that one test can prove ``lower --after all`` and
``render`` refuse each of them with the same message (``tests/test_legality.py``).
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Case:
    """A program file (with the kernel sources beside it), the chips built for, the message."""

    id: str
    program: str
    message: str
    #: Source files beside the program, by path relative to its folder.
    files: dict[str, str] = field(default_factory=lambda: {"k.cpp": "// the kernel\n"})
    chips: tuple[str, ...] = ("a3",)

    @property
    def text(self) -> str:
        return textwrap.dedent(self.program)


_IMPORTS = """\
import pypto.language as pl
import pypto.language.distributed as pld

"""

_CHIP = (
    _IMPORTS
    + """\
@pl.program
class P:
    @pl.function(type=pl.FunctionType.AIV, external_source="k.cpp")
    def k(self, x: pl.Tensor[[4, 4], pl.FP32], y: pl.Out[pl.Tensor[[4, 4], pl.FP32]]
          ) -> pl.Tensor[[4, 4], pl.FP32]: ...
{extra}
    @pl.function(type=pl.FunctionType.Orchestration)
    def orch(self, x: pl.Tensor[[4, 4], pl.FP32], y: pl.Out[pl.Tensor[[4, 4], pl.FP32]]{params}):
{body}"""
)


def chip(body: str, extra: str = "", params: str = "") -> str:
    """A program whose CHIP orchestration ``orch`` runs ``body`` (kernel ``k`` available)."""
    return _CHIP.format(
        body=textwrap.indent(textwrap.dedent(body), " " * 8),
        extra=textwrap.indent(textwrap.dedent(extra), " " * 4),
        params=params,
    )


_HOST = (
    _IMPORTS
    + """\
@pl.program
class H:
    @pl.function(type=pl.FunctionType.AIV, external_source="k.cpp")
    def k(self, x: pl.Tensor[[4, 64], pl.FP32], w: pl.InOut[pl.Tensor[[4, 64], pl.FP32]]
          ) -> pl.Tensor[[4, 64], pl.FP32]: ...

    @pl.function(type=pl.FunctionType.Orchestration)
    def fill(self, x: pl.Tensor[[4, 64], pl.FP32], w: pl.InOut[pl.Tensor[[4, 64], pl.FP32]]
             ) -> pl.Tensor[[4, 64], pl.FP32]:
        w = self.k(x, w)
        return w

    @pl.function(type=pl.FunctionType.Orchestration, level=pl.Level.HOST)
    def host(self, x: pl.Tensor[[8, {columns}], pl.FP32], n: pl.Scalar[pl.INT64]):
        with pld.comm_domain(devices=[0, 1]):
            stage_buf = pld.alloc_window_buffer(2048, name="stage")
            stage = pld.window(stage_buf, [8, 64], dtype=pl.FP32)
            rows = pl.slice(x, [4, 64], [0, 0])
            top = pl.slice(stage, [4, 64], [0, 0])
{body}"""
)


def host(body: str, columns: int = 64) -> str:
    """A program whose HOST orchestrator ``host`` runs ``body`` inside its comm domain (host
    tensor ``x`` of ``[8, columns]`` and its region ``rows``, window ``stage`` and its region
    ``top``, CHIP orchestration ``fill``)."""
    return _HOST.format(body=textwrap.indent(textwrap.dedent(body), " " * 12), columns=columns)


CASES: tuple[Case, ...] = (
    # --- CHIP orchestrations --------------------------------------------------------------------
    Case(
        "chip-transpose",
        chip("self.k(x, y)\nt = pl.transpose(x, 0, 1)\n"),
        "'tensor.transpose' is not supported in a CHIP orchestration",
    ),
    Case(
        "chip-world-size",
        chip("n = pld.world_size()\nself.k(x, y)\n"),
        "'pld.world_size' is not supported in a CHIP orchestration",
    ),
    Case(
        "chip-calls-an-orchestration",
        chip(
            "self.inner(x, y)\n",
            extra="""
            @pl.function(type=pl.FunctionType.Orchestration)
            def inner(self, x: pl.Tensor[[4, 4], pl.FP32], y: pl.Out[pl.Tensor[[4, 4], pl.FP32]]):
                self.k(x, y)
            """,
        ),
        "calling 'inner' (Orchestration function) is not supported in a CHIP orchestration: it "
        "can only submit kernels (InCore, AIV or AIC functions)",
    ),
    Case(
        "chip-device-dispatch",
        chip("self.k(x, y, device=0)\n"),
        "a device= dispatch (only HOST orchestrators dispatch to devices) is not supported in a "
        "CHIP orchestration",
    ),
    Case(
        "chip-half-precision-scalar",
        chip("self.k(x, y)\n", params=", s: pl.Scalar[pl.FP16]"),
        "'s' has type Scalar[fp16], which is not supported in a CHIP orchestration (tensors, "
        "integer, float and bool scalars are)",
    ),
    Case(
        "chip-name-changes-kind",
        chip("a = x\nself.k(a, y)\na = 1\n"),
        "'a' is bound to a Scalar[index] here and to a tensor elsewhere: a name of a CHIP "
        "orchestration must keep one kind of value",
    ),
    Case(
        "chip-descriptor-dimension",
        chip("t = pl.create_tensor([4294967296, 1], dtype=pl.FP32)\nself.k(x, y)\n"),
        "dimension 4294967296 does not fit the runtime descriptor (0 .. 4294967295)",
    ),
    Case(
        "chip-unknown-kernel-result",
        chip(
            "r = self.two(x, y, y)\n",
            extra="""
            @pl.function(type=pl.FunctionType.AIV, external_source="k.cpp")
            def two(self, x: pl.Tensor[[4, 4], pl.FP32], y: pl.Out[pl.Tensor[[4, 4], pl.FP32]],
                    z: pl.Out[pl.Tensor[[4, 4], pl.FP32]]) -> pl.Tensor[[4, 4], pl.FP32]: ...
            """,
        ),
        "cannot tell which argument kernel 'two' returns as result 0: a kernel result is one of "
        "its Out/InOut arguments",
    ),
    # --- kernels ----------------------------------------------------------------------------------
    Case(
        "kernel-source-missing",
        chip("self.k(x, y)\n"),
        "external_source 'k.cpp' of kernel 'k' does not exist (it is relative to the program file)",
        files={},
    ),
    Case(
        "kernel-without-source",
        chip("self.k(x, y)\n").replace(', external_source="k.cpp"', "", 1),
        "kernel 'k' has no external_source: pypto-build does not generate code from DSL kernel "
        "bodies",
    ),
    Case(
        "kernel-unknown-builtin-package",
        chip(
            "self.b(x, y)\n",
            extra="""
            @pl.function(type=pl.FunctionType.AIV)
            def b(self, x: pl.Tensor[[4, 4], pl.FP32], y: pl.Out[pl.Tensor[[4, 4], pl.FP32]]
                  ) -> pl.Tensor[[4, 4], pl.FP32]:
                pl.func_attr({"builtin_template_dir": ":acme.kernels.nowhere"})
            """,
        ),
        "unknown builtin template_dir ':acme.kernels.nowhere'",
    ),
    Case(
        "kernel-source-not-a-file",
        chip("self.k(x, y)\n").replace('external_source="k.cpp"', 'external_source="."', 1),
        "external_source '.' of kernel 'k' cannot be read: not a regular file",
        files={},
    ),
    Case(
        "builtin-vars-differ-between-rails",
        chip(
            "self.b(x, y)\n",
            extra="""
            @pl.function(type=pl.FunctionType.AIV)
            def b(self, x: pl.Tensor[[4, 4], pl.FP32], y: pl.Out[pl.Tensor[[4, 4], pl.FP32]]
                  ) -> pl.Tensor[[4, 4], pl.FP32]:
                pl.func_attr({
                    "builtin_template_dir": ":pypto.runtime.builtins.collectives.all_to_all_v",
                    "builtin_template_vars": "dtype_cpp=double",
                })
            """,
        ),
        "builtin kernel 'b' sets builtin_template_vars 'dtype_cpp=double', but "
        ":pypto.runtime.builtins.collectives.all_to_all_v renders its fp32 kernel with",
    ),
    Case(
        "function-name-not-ascii",
        chip("self.k(x, y)\n").replace("def orch(", "def orch\u00e9(", 1),
        "function name 'orch\u00e9' is not an ASCII C identifier",
    ),
    Case(
        "function-name-too-long",
        chip("self.k_" + "x" * 240 + "(x, y)\n").replace("def k(", "def k_" + "x" * 240 + "(", 1),
        "characters long: a build writes it as a file name, so at most 200 are allowed",
    ),
    # --- HOST orchestrators -------------------------------------------------------------------
    Case(
        "host-dispatch-without-device",
        host("self.fill(rows, top)\n"),
        "a HOST orchestrator runs 'fill' on one device at a time: pass device=<rank>",
    ),
    Case(
        "host-strided-region",
        host("self.fill(rows, top, device=0)\n", columns=128),
        "'rows' is a strided region of a host tensor: PyPTO's runtime passes only contiguous "
        "host tensors to a chip",
    ),
    Case(
        "host-reshaped-strided-region",
        host(
            "half = pl.slice(x, [8, 32], [0, 0])\n"
            "self.fill(pl.reshape(half, [4, 64]), top, device=0)\n",
            columns=128,
        ),
        "reshaping a strided region of a host tensor is not supported in a HOST orchestrator",
    ),
    Case(
        "host-transpose",
        host("t = pl.transpose(x, 0, 1)\n"),
        "'tensor.transpose' is not supported in a HOST orchestrator",
    ),
    Case(
        "host-dispatch-result-used",
        host("r = self.fill(rows, top, device=0)\n"),
        "using the result of dispatching 'fill' (a chip orchestration returns its results "
        "through its Out/InOut arguments) is not supported in a HOST orchestrator",
    ),
    Case(
        "host-calls-a-kernel",
        host("self.k(rows, top, device=0)\n"),
        "calling 'k' (a AIV function; only CHIP orchestrations are dispatched) is not supported "
        "in a HOST orchestrator",
    ),
    Case(
        "host-window-rebound-in-a-loop",
        host(
            "w = top\n"
            "for i in pl.range(n):\n"
            "    self.fill(rows, w, device=0)\n"
            "    w = pl.slice(stage, [4, 64], [4, 0])\n"
        ),
        "window 'w' denotes a different view in a later iteration of the loop at line 24 than "
        "in the first (a [4, 64] FP32 view of buffer 'stage_buf', then a [4, 64] FP32 view of "
        "buffer 'stage_buf' at element offset 256: they differ in offset)",
    ),
    Case(
        "host-window-differs-by-path",
        host(
            "if n > 1:\n"
            "    w = top\n"
            "else:\n"
            "    w = pl.slice(stage, [4, 64], [4, 0])\n"
            "self.fill(rows, w, device=0)\n"
        ),
        "'w', bound to different windows on different paths (a [4, 64] FP32 view of buffer "
        "'stage_buf', then a [4, 64] FP32 view of buffer 'stage_buf' at element offset 256: "
        "they differ in offset), is not supported in a HOST orchestrator",
    ),
    # --- programs sharing a tree ----------------------------------------------------------------
    Case(
        "two-host-orchestrators",
        host("self.fill(rows, top, device=0)\n")
        + textwrap.dedent(
            """

            @pl.program
            class Second:
                @pl.function(type=pl.FunctionType.Orchestration, level=pl.Level.HOST)
                def host(self, x: pl.Tensor[[8, 64], pl.FP32]):
                    return
            """
        ),
        "HOST orchestrator 'host' of program 'Second' and HOST orchestrator 'host' of program "
        "'H' would share one chip tree",
    ),
    Case(
        "sub-build-names-collide",
        chip("self.k(x, y)\n")
        + textwrap.dedent(
            """

            @pl.program
            class Q:
                @pl.function(type=pl.FunctionType.AIV, external_source="k.cpp")
                def k(self, x: pl.Tensor[[4, 4], pl.FP32], y: pl.Out[pl.Tensor[[4, 4], pl.FP32]]
                      ) -> pl.Tensor[[4, 4], pl.FP32]: ...

                @pl.function(type=pl.FunctionType.Orchestration)
                def orch(self, x: pl.Tensor[[4, 4], pl.FP32],
                         y: pl.Out[pl.Tensor[[4, 4], pl.FP32]]):
                    self.k(x, y)
            """
        ),
        "'orch' of program 'Q' and a function of program 'P' both produce next_levels/orch",
    ),
)
