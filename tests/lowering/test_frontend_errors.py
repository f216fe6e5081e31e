"""Malformed programs: each is exactly one ProgramError at a precise position, never a crash.

Positions are written as ``(line, column)`` with a 1-based column, i.e. as ``str(span)`` prints
them (``Span.col`` itself is 0-based like :mod:`ast`).
"""

from __future__ import annotations

import random
import re
import textwrap
import warnings
from dataclasses import dataclass
from pathlib import Path

import pytest
from _support.ir_builders import SAMPLES

from pypto_build.lowering.diagnostics import ProgramError
from pypto_build.lowering.frontend import parse_file, parse_source

HEADER = "import pypto.language as pl\nimport pypto.language.distributed as pld\n"

#: The orchestration skeleton of :func:`orch`; its body starts at line BODY, column 9.
_SKELETON = """\
N = 8

@pl.program
class P:
    @pl.function(type=pl.FunctionType.AIV, external_source="k.cpp")
    def k(
        self, a: pl.Tensor[[N], pl.FP32], b: pl.Out[pl.Tensor[[N], pl.FP32]]
    ) -> tuple[pl.Tensor[[N], pl.FP32], pl.Tensor[[N], pl.FP32]]: ...

    @pl.function(type=pl.FunctionType.Orchestration)
    def f(
        self,
        x: pl.Tensor[[N], pl.FP32],
        y: pl.Out[pl.Tensor[[N], pl.FP32]],
        n: pl.Scalar[pl.INDEX],
    ):
"""
BODY = 19


def orch(body: str) -> str:
    """A program whose orchestration ``f`` has ``body``; ``x``/``y`` are [8] FP32 tensors, ``n``
    an INDEX scalar, and kernel ``k(a, b) -> (tensor, tensor)`` is callable."""
    return HEADER + _SKELETON + textwrap.indent(textwrap.dedent(body), " " * 8)


def program(text: str) -> str:
    """``text`` (dedented) after the two DSL import lines, so its first line is line 3."""
    return HEADER + textwrap.dedent(text)


_WINDOWS = """\
NR = 2
TOTAL = 8

@pl.program
class P:
    @pl.function(type=pl.FunctionType.Orchestration)
    def f(
        self,
        stage: pld.DistributedTensor[[TOTAL, 64], pl.FP32],
        data: pl.InOut[pld.DistributedTensor[[TOTAL, 64], pl.FP32]],
        signal: pl.InOut[pld.DistributedTensor[[NR, 1], pl.INT32]],
        counts: pld.DistributedTensor[[NR], pl.INT32],
        recv: pl.InOut[pld.DistributedTensor[[NR, 2], pl.INT32]],
    ):
"""


def collective(body: str) -> str:
    """A CHIP orchestration over window parameters (``recv`` is [NR, 2], not [NR, 1]); the
    body starts at line 17, column 9."""
    return HEADER + _WINDOWS + textwrap.indent(textwrap.dedent(body), " " * 8)


@dataclass(frozen=True)
class Case:
    id: str
    source: str
    at: tuple[int, int]  # (line, column), the column 1-based as printed by str(span)
    fragment: str


CASES = [
    # --- Python syntax and source text ---------------------------------------------------
    Case(
        "syntax-error",
        program("@pl.program\nclass P:\n    def f(self) -> :\n"),
        (5, 17),
        "expected ':'",
    ),
    Case(
        "unclosed-paren",
        program("@pl.program\nclass P:\n    def f(self:\n"),
        (5, 10),
        "never closed",
    ),
    Case("null-byte", "x = 1\0\n", (1, 1), "null bytes"),
    # --- program classes and decorators --------------------------------------------------
    Case(
        "class-decorator-typo",
        program("@pl.programm\nclass P:\n    pass\n"),
        (3, 2),
        "unknown class decorator '@pl.programm'",
    ),
    Case(
        "program-arguments",
        program('@pl.program(name="Q")\nclass P:\n    pass\n'),
        (3, 2),
        "@pl.program takes no arguments",
    ),
    Case(
        "program-base-class",
        program("@pl.program\nclass P(object):\n    pass\n"),
        (4, 1),
        "cannot have base classes",
    ),
    Case(
        "class-body-statement",
        program("@pl.program\nclass P:\n    X = 1\n"),
        (5, 5),
        "may only contain @pl.function methods",
    ),
    Case(
        "missing-function-decorator",
        program("@pl.program\nclass P:\n    def f(self):\n        pass\n"),
        (5, 5),
        "method 'f' of a @pl.program class needs @pl.function(...)",
    ),
    Case(
        "extra-decorator",
        program("""\
        @pl.program
        class P:
            @staticmethod
            @pl.function
            def f(self):
                pass
        """),
        (5, 6),
        "unsupported decorator '@staticmethod'",
    ),
    Case(
        "function-outside-program",
        program("@pl.function\ndef f():\n    pass\n"),
        (3, 2),
        "@pl.function must decorate a method of a @pl.program class",
    ),
    Case(
        "duplicate-function",
        program("""\
        @pl.program
        class P:
            @pl.function
            def f(self):
                pass

            @pl.function
            def f(self):
                pass
        """),
        (10, 5),
        "function 'f' is defined twice in program 'P'",
    ),
    Case(
        "unknown-function-option",
        program("""\
        @pl.program
        class P:
            @pl.function(typ=pl.FunctionType.AIV)
            def f(self):
                pass
        """),
        (5, 18),
        "unknown @pl.function argument 'typ'",
    ),
    Case(
        "unknown-function-type",
        program("""\
        @pl.program
        class P:
            @pl.function(type=pl.FunctionType.Vector)
            def f(self):
                pass
        """),
        (5, 23),
        "unknown function type 'pl.FunctionType.Vector'",
    ),
    Case(
        "kernel-at-host-level",
        program("""\
        @pl.program
        class P:
            @pl.function(type=pl.FunctionType.AIV, level=pl.Level.HOST)
            def f(self):
                pass
        """),
        (5, 50),
        "AIV kernel runs on the chip; level=pl.Level.HOST is not allowed",
    ),
    Case(
        "role-contradicts-type",
        program("""\
        @pl.program
        class P:
            @pl.function(type=pl.FunctionType.AIV, role=pl.Role.Orchestrator)
            def f(self):
                pass
        """),
        (5, 49),
        "role=pl.Role.Orchestrator does not fit a AIV function",
    ),
    Case(
        "external-source-absolute",
        program("""\
        @pl.program
        class P:
            @pl.function(type=pl.FunctionType.AIV, external_source="/k.cpp")
            def f(self):
                pass
        """),
        (5, 60),
        "external_source must be relative to the program file",
    ),
    Case(
        "external-source-on-orchestration",
        program("""\
        @pl.program
        class P:
            @pl.function(type=pl.FunctionType.Orchestration, external_source="k.cpp")
            def f(self):
                pass
        """),
        (5, 54),
        "external_source applies to AIV, AIC and InCore kernels",
    ),
    Case(
        "external-source-with-body",
        program("""\
        @pl.program
        class P:
            @pl.function(type=pl.FunctionType.AIV, external_source="k.cpp")
            def k(self, a: pl.Tensor[[4], pl.FP32]):
                b = a
        """),
        (7, 9),
        "its body must be '...'",
    ),
    # --- signatures and annotations ------------------------------------------------------
    Case(
        "missing-self",
        program("@pl.program\nclass P:\n    @pl.function\n    def f():\n        pass\n"),
        (6, 5),
        "must take 'self' as its first parameter",
    ),
    Case(
        "missing-annotation",
        program("@pl.program\nclass P:\n    @pl.function\n    def f(self, x):\n        pass\n"),
        (6, 17),
        "parameter 'x' of 'f' needs a type annotation",
    ),
    Case(
        "parameter-default",
        program("""\
        @pl.program
        class P:
            @pl.function
            def f(self, n: pl.Scalar[pl.INDEX] = 1):
                pass
        """),
        (6, 42),
        "parameter defaults are not supported",
    ),
    Case(
        "annotation-not-a-dsl-type",
        program("""\
        @pl.program
        class P:
            @pl.function
            def f(self, x: int):
                pass
        """),
        (6, 20),
        "unsupported type annotation 'int'",
    ),
    Case(
        "unknown-dtype",
        program("""\
        @pl.program
        class P:
            @pl.function
            def f(self, x: pl.Tensor[[4], pl.FP64]):
                pass
        """),
        (6, 35),
        "unknown data type 'pl.FP64'",
    ),
    Case(
        "tensor-without-dtype",
        program("""\
        @pl.program
        class P:
            @pl.function
            def f(self, x: pl.Tensor[[4]]):
                pass
        """),
        (6, 30),
        "takes a shape and a dtype",
    ),
    Case(
        "non-constant-shape",
        program("""\
        @pl.program
        class P:
            @pl.function
            def f(self, x: pl.Tensor[[M, 4], pl.FP32]):
                pass
        """),
        (6, 31),
        "'M' is not a compile-time integer constant",
    ),
    Case(
        "unfoldable-module-constant",
        program("""\
        M = len("four")

        @pl.program
        class P:
            @pl.function
            def f(self, x: pl.Tensor[[M, 4], pl.FP32]):
                pass
        """),
        (8, 31),
        "module constant 'M' is not a compile-time integer",
    ),
    Case(
        "zero-dimension",
        program("""\
        @pl.program
        class P:
            @pl.function
            def f(self, x: pl.Tensor[[0], pl.FP32]):
                pass
        """),
        (6, 31),
        "tensor shape dimension must be positive, got 0",
    ),
    Case(
        "out-of-scalar",
        program("""\
        @pl.program
        class P:
            @pl.function
            def f(self, x: pl.Out[pl.Scalar[pl.INDEX]]):
                pass
        """),
        (6, 27),
        "pl.Out[...] must wrap a tensor type",
    ),
    # --- calls ---------------------------------------------------------------------------
    Case("unknown-op", orch("z = pl.foo(x)"), (BODY, 13), "unknown operation 'pl.foo'"),
    Case(
        "unknown-pld-op",
        orch("z = pld.tensor.all_to_al_v(x)"),
        (BODY, 13),
        "unknown operation 'pld.tensor.all_to_al_v'",
    ),
    Case(
        "print-call",
        orch("print(x)"),
        (BODY, 9),
        "call of 'print' is not supported in a PyPTO program",
    ),
    Case(
        "os-system-call",
        program("""\
        import os

        @pl.program
        class P:
            @pl.function
            def f(self):
                os.system("true")
        """),
        (9, 9),
        "call of 'os.system' is not supported in a PyPTO program",
    ),
    Case("unknown-method", orch("self.nope(x)"), (BODY, 9), "program 'P' has no function 'nope'"),
    Case("self-call-arity", orch("self.k(x)"), (BODY, 9), "'k' takes 2 arguments, got 1"),
    Case(
        "self-call-scalar-for-tensor",
        orch("self.k(x, n)"),
        (BODY, 19),
        "argument 2 of 'k' ('b'): expected pl.Tensor[[8], pl.FP32], got pl.Scalar[pl.INDEX]",
    ),
    Case(
        "self-call-shape-mismatch",
        orch("z = pl.create_tensor([4], dtype=pl.FP32)\nself.k(z, y)"),
        (BODY + 1, 16),
        "argument 1 of 'k' ('a'): expected pl.Tensor[[8], pl.FP32], got pl.Tensor[[4], pl.FP32]",
    ),
    Case(
        "self-call-unknown-keyword",
        orch("self.k(x, y, foo=1)"),
        (BODY, 22),
        "unexpected keyword 'foo' in call of 'k'",
    ),
    Case(
        "self-call-argument-by-keyword",
        orch("self.k(x, b=y)"),
        (BODY, 19),
        "arguments of a program function are passed positionally",
    ),
    Case("starred-argument", orch("self.k(*x)"), (BODY, 16), "unsupported argument: '*x'"),
    Case(
        "submit-without-self",
        orch("r, t = pl.submit(x, y)"),
        (BODY, 26),
        "pl.submit expects the function to run as its first argument",
    ),
    Case(
        "func-attr-not-first",
        orch('z = n\npl.func_attr({"a": 1})'),
        (BODY + 1, 9),
        "pl.func_attr(...) must be the first statement of a function body",
    ),
    Case(
        "func-attr-reserved-key",
        orch('pl.func_attr({"external_source": "k.cpp"})'),
        (BODY, 23),
        "set 'external_source' in @pl.function(...), not in pl.func_attr",
    ),
    Case(
        "range-outside-for",
        orch("z = pl.range(4)"),
        (BODY, 13),
        "pl.range(...) is only allowed as the iterable of a for loop",
    ),
    # --- statements ----------------------------------------------------------------------
    Case("with", orch('with open("f"):\n    pass'), (BODY, 9), "unsupported statement: 'with'"),
    Case(
        "augmented-assignment",
        orch("n += 1"),
        (BODY, 9),
        "unsupported statement: 'augmented assignment'",
    ),
    Case(
        "break",
        orch("for i in pl.range(4):\n    break"),
        (BODY + 1, 13),
        "unsupported statement: 'break'",
    ),
    Case(
        "nested-def", orch("def g():\n    pass"), (BODY, 9), "unsupported statement: 'nested def'"
    ),
    Case("global", orch("global N"), (BODY, 9), "unsupported statement: 'global'"),
    Case(
        "subscript-assignment",
        orch("x[0] = n"),
        (BODY, 9),
        "unsupported statement: 'subscript assignment'",
    ),
    Case(
        "for-over-builtin-range",
        orch("for i in range(4):\n    pass"),
        (BODY, 18),
        "for loops must iterate over pl.range(...), not 'range(4)'",
    ),
    Case(
        "range-step-zero",
        orch("for i in pl.range(0, 4, 0):\n    pass"),
        (BODY, 33),
        "pl.range step must not be zero",
    ),
    Case(
        "tuple-assign-arity",
        orch("a, b, c = self.k(x, y)"),
        (BODY, 19),
        "cannot unpack tuple[pl.Tensor[[8], pl.FP32], pl.Tensor[[8], pl.FP32]] into 3 names",
    ),
    Case(
        "declaration-without-value",
        orch("z: pl.Tensor[[N], pl.FP32]"),
        (BODY, 9),
        "a declaration without a value is not supported",
    ),
    Case(
        "declared-type-mismatch",
        orch("z: pl.Tensor[[4], pl.FP32] = x"),
        (BODY, 38),
        "'z' is declared pl.Tensor[[4], pl.FP32] but the value is pl.Tensor[[8], pl.FP32]",
    ),
    Case(
        "rebind-changes-type-in-if",
        orch("if n > 0:\n    x = n"),
        (BODY + 1, 13),
        "'x' is rebound here as pl.Scalar[pl.INDEX] but was pl.Tensor[[8], pl.FP32] before",
    ),
    Case(
        "maybe-undefined-after-if",
        orch("if n > 0:\n    z = n\nw = z"),
        (BODY + 2, 13),
        f"name 'z' may be undefined here: it is assigned only inside the if at line {BODY}",
    ),
    # --- expressions ---------------------------------------------------------------------
    Case("undefined-name", orch("z = w"), (BODY, 13), "name 'w' is not defined"),
    Case("lambda", orch("g = lambda: 1"), (BODY, 13), "unsupported expression: 'lambda'"),
    Case(
        "list-comprehension",
        orch("z = [i for i in x]"),
        (BODY, 13),
        "unsupported expression: 'list comprehension'",
    ),
    Case(
        "true-division",
        orch("z = n / 2"),
        (BODY, 13),
        "operator '/' is not supported; use '//' for integer division",
    ),
    Case(
        "chained-comparison",
        orch("if 0 < n < 4:\n    pass"),
        (BODY, 12),
        "chained comparisons are not supported",
    ),
    Case(
        "tensor-arithmetic",
        orch("z = x + 1"),
        (BODY, 13),
        "operator '+' needs scalar operands, got pl.Tensor[[8], pl.FP32]",
    ),
    Case(
        "attribute-of-value",
        orch("z = x.shape"),
        (BODY, 13),
        "attribute access on a value is not supported: 'x.shape'",
    ),
    Case(
        "incore-dsl-body",
        program("""\
        @pl.program
        class P:
            @pl.function(type=pl.FunctionType.InCore)
            def step(self, x: pl.Tensor[[8, 64], pl.FP32], y: pl.Out[pl.Tensor[[8, 64], pl.FP32]]):
                tile = pl.load(x, [0, 0], [8, 64])
                y = pl.store(tile, [0, 0], y)
        """),
        (6, 5),
        "kernel 'step' (InCore) has a DSL body, which pypto-build does not compile: upstream "
        "generates such kernels with its PTO backend and ptoas, which a build here does not run "
        "(docs/incore.md). Write the kernel in C++ against the kernel ABI (docs/dsl.md) and name "
        "it with external_source=\"kernels/step.cpp\", with '...' as its body",
    ),
    Case(
        "aiv-dsl-body",
        program("""\
        @pl.program
        class P:
            @pl.function(type=pl.FunctionType.AIV)
            def step(self, x: pl.Tensor[[8], pl.FP32]):
                v = pl.read(x, [0])
        """),
        (6, 5),
        "kernel 'step' (AIV) has a DSL body",
    ),
    Case(
        "tensor-subscript-reads-an-element",
        orch("z = x[0]"),
        (BODY, 13),
        "'x[0]' reads one element (upstream's tensor.read), which an orchestration here cannot "
        "do: read it in a kernel, or take a region with a slice (x[i:i + 1, j])",
    ),
    Case(
        "tensor-subscript-too-many-indices",
        orch("z = x[0:4, 0]"),
        (BODY, 13),
        "the subscript has 2 indices but the tensor has 1 dimensions",
    ),
    Case(
        "tensor-subscript-step",
        orch("z = x[0:8:2]"),
        (BODY, 19),
        "a tensor subscript takes no step (write start:stop)",
    ),
    Case(
        "tensor-subscript-runtime-extent",
        orch("z = x[n:8]"),
        (BODY, 15),
        "the extent of 'n:8' must be a compile-time integer: write start:stop with constants, "
        "or i:i + SIZE",
    ),
    Case(
        "tensor-subscript-outside-the-tensor",
        orch("z = x[4:12]"),
        (BODY, 15),
        "tensor.slice offset dim 0: [4, 12) exceeds the extent 8",
    ),
    Case("dtype-as-value", orch("z = pl.FP32"), (BODY, 13), "'pl.FP32' is not a value here"),
    # --- collectives (typed by the op table) ---------------------------------------------
    Case(
        "collective-missing-operand",
        collective("data = pld.tensor.all_to_all_v(stage, data, signal)"),
        (17, 16),
        "missing required argument 'send_counts'",
    ),
    Case(
        "collective-shape-mismatch",
        collective("data = pld.tensor.all_to_all_v(stage, data, signal, counts, recv)"),
        (17, 69),
        "recv_counts must have shape [NR, 1], got [2, 2]",
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_malformed_program_is_one_located_program_error(case: Case) -> None:
    with pytest.raises(ProgramError) as caught:
        parse_source(case.source, "prog.py")
    error = caught.value
    assert error.phase == "frontend"
    assert error.span.file == "prog.py"
    line, col = case.at
    assert (error.span.line, error.span.col + 1) == (line, col), error.render()
    assert str(error.span) == f"prog.py:{line}:{col}"
    assert case.fragment in error.message


def test_there_are_at_least_thirty_cases() -> None:
    assert len(CASES) >= 30
    assert len({case.id for case in CASES}) == len(CASES)


@pytest.mark.parametrize("terms", [1000, 20000])
def test_deeply_nested_expression_is_a_program_error(terms: int) -> None:
    # 1000 terms parse as Python but exceed the converters' depth; 20000 exceed Python's parser.
    source = orch("z = " + " + ".join(["n"] * terms))
    with pytest.raises(ProgramError) as caught:
        parse_source(source, "prog.py")
    assert "nested too deeply" in caught.value.message


def test_unreadable_file_is_a_program_error(tmp_path: Path) -> None:
    missing = tmp_path / "missing.py"
    with pytest.raises(ProgramError) as caught:
        parse_file(missing)
    assert "cannot read program file" in caught.value.message
    assert caught.value.span.file == str(missing)


def _mutations(count: int, seed: int) -> list[str]:
    """Sample programs with a few tokens deleted, duplicated or replaced (seeded)."""
    samples = [path.read_text(encoding="utf-8") for path in SAMPLES]
    rng = random.Random(seed)
    mutated = []
    for _ in range(count):
        tokens = re.findall(r"\w+|[^\w\s]|\s+", rng.choice(samples))
        for _ in range(rng.randint(1, 3)):
            index = rng.randrange(len(tokens))
            roll = rng.random()
            if roll < 0.4:
                del tokens[index]
            elif roll < 0.7:
                tokens.insert(index, rng.choice(tokens))
            else:
                tokens[index] = rng.choice(tokens)
        mutated.append("".join(tokens))
    return mutated


def test_mutated_programs_parse_or_fail_with_a_program_error() -> None:
    outcomes = {"parsed": 0, "error": 0}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SyntaxWarning)  # e.g. "1if" after a deleted space
        for source in _mutations(400, seed=2521):
            try:
                parse_source(source, "fuzz.py")
            except ProgramError as error:
                assert error.span.file == "fuzz.py"
                outcomes["error"] += 1
            else:
                outcomes["parsed"] += 1
    assert outcomes["error"] > 100 and outcomes["parsed"] > 0


def test_columns_count_characters_not_utf8_bytes(tmp_path: Path) -> None:
    # "é" is two UTF-8 bytes, as ast counts columns: the caret must still stand under "zzz".
    path = tmp_path / "p.py"
    path.write_text(orch("\u00e9\u00e9\u00e9 = zzz\n"), encoding="utf-8")
    with pytest.raises(ProgramError) as info:
        parse_file(path)
    assert str(info.value.span) == f"{path}:{BODY}:{9 + len('ééé = ')}"
    line, caret = info.value.render().splitlines()[1:3]
    assert line[caret.index("^") :].startswith("zzz")


def test_tensors_whose_byte_count_overflows_64_bits_are_refused() -> None:
    source = orch("t = pl.create_tensor([4294967296, 4294967296], dtype=pl.FP32)\n")
    with pytest.raises(ProgramError) as info:
        parse_source(source, "p.py")
    assert info.value.message == (
        "tensor.create shape [4294967296, 4294967296] of fp32 holds 73786976294838206464 "
        "bytes, more than a 64-bit byte offset reaches (9223372036854775807)"
    )
