"""A program file too large to build is refused before the costly work, with a message that
says by how much and how to split it (``pypto_build.lowering.limits``)."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import pytest
from _support.tiny_project import PROGRAM

from pypto_build.lowering import limits
from pypto_build.lowering.diagnostics import ProgramError
from pypto_build.lowering.frontend import parse_file, parse_source

#: An orchestration whose body is ``{body}`` (indented as a method body).
_ORCHESTRATION = """\
import pypto.language as pl


@pl.program
class Big:
    @pl.function(type=pl.FunctionType.Orchestration)
    def orch(self, x: pl.Tensor[[4, 4], pl.FP32]) -> pl.Tensor[[4, 4], pl.FP32]:
{body}        return x
"""


def _assignments(count: int) -> str:
    return _ORCHESTRATION.format(body="        y = x\n" * count)


def test_a_file_of_four_million_assignments_is_refused_unread(tmp_path: Path) -> None:
    program = tmp_path / "big.py"
    program.write_text(_assignments(4_000_000), encoding="utf-8")
    size = program.stat().st_size
    tracemalloc.start()
    try:
        with pytest.raises(ProgramError) as raised:
            parse_file(program)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1024 * 1024  # not a byte of the 64 MB file was read
    message = str(raised.value)
    assert message.startswith(f"{program}: error: program file is {size:,} bytes")
    assert "above the limit of 33,554,432 bytes (32 MiB)" in message
    assert "split its @pl.program classes over several program files" in message
    assert raised.value.render().count("\n") == 0  # no source line read for the caret


def test_a_file_at_the_limit_is_read(tmp_path: Path) -> None:
    program = tmp_path / "padded.py"
    data = PROGRAM.encode()
    program.write_bytes(data + b"#" * (limits.MAX_PROGRAM_BYTES - len(data)))
    assert [each.name for each in parse_file(program)] == ["Tiny"]


def test_dense_text_is_refused_before_it_is_parsed(monkeypatch: pytest.MonkeyPatch) -> None:
    # A few bytes, many statements: the byte limit alone would let them through.
    dense = _ORCHESTRATION.format(body="        " + "y = x; " * 60 + "\n")
    assert len(dense.encode()) < limits.MAX_PROGRAM_BYTES
    monkeypatch.setattr(limits, "MAX_PROGRAM_SEPARATORS", 50)

    def parse(*_: object, **__: object) -> None:
        raise AssertionError("parsed")

    monkeypatch.setattr("pypto_build.lowering.frontend._parse_python", parse)
    with pytest.raises(ProgramError) as raised:
        parse_source(dense, "dense.py")
    separators = dense.count("\n") + dense.count(";") + dense.count(",")
    assert str(raised.value).startswith(
        f"dense.py: error: program file holds {separators} statements and items (newlines, ';' "
        "and ','), above the limit of 50 that a build parses"
    )


def test_separators_are_newlines_semicolons_and_commas(monkeypatch: pytest.MonkeyPatch) -> None:
    source = _ORCHESTRATION.format(body="        y, z = x, x; y = x\n")
    separators = source.count("\n") + source.count(";") + source.count(",")
    monkeypatch.setattr(limits, "MAX_PROGRAM_SEPARATORS", separators - 1)
    with pytest.raises(ProgramError, match=f"holds {separators} statements and items"):
        parse_source(source, "p.py")
    monkeypatch.setattr(limits, "MAX_PROGRAM_SEPARATORS", separators)
    assert [each.name for each in parse_source(source, "p.py")] == ["Big"]


def test_the_largest_benchmark_program_is_within_both_limits(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[2] / "bench"))
    from programs import pipelines_source  # the benchmarks' generator (not a package)

    text = pipelines_source(50_000, 10)
    assert len(text.encode()) * 1.5 < limits.MAX_PROGRAM_BYTES
    separators = text.count("\n") + text.count(";") + text.count(",")
    assert separators * 1.5 < limits.MAX_PROGRAM_SEPARATORS
