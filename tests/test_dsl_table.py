"""docs/dsl.md's table of upstream's constructs says what the front end does with each.

Every row of the table ("Upstream's constructs") has a program here that uses the construct as
upstream writes it; the test lowers it for a3 and checks the row's verdict: "yes" lowers through
every pass, "parses" passes the front end and is refused by a later pass, "no" is a front-end
diagnostic. A row without a program, or a program without a row, fails too, so the table and
the front end cannot drift apart.
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

from pypto_build.chip_build.subbuild import lower_file
from pypto_build.lowering.diagnostics import ProgramError
from pypto_build.lowering.frontend import parse_file

DOC = Path(__file__).resolve().parents[1] / "docs" / "dsl.md"

_PROGRAM = """\
import pypto.language as pl
import pypto.language.distributed as pld

NR = 2
ROWS = 8
SIZE = 64


@pl.program
class P:
    @pl.function(type=pl.FunctionType.AIV, external_source="k.cpp")
    def k(
        self,
        x: pl.Tensor[[ROWS, SIZE], pl.FP32],
        w: pl.InOut[pld.DistributedTensor[[ROWS, SIZE], pl.FP32]],
    ) -> pld.DistributedTensor[[ROWS, SIZE], pl.FP32]: ...
{kernels}
    @pl.function(type=pl.FunctionType.Orchestration)
    def chip(
        self,
        x: pl.Tensor[[ROWS, SIZE], pl.FP32],
        w: pl.InOut[pld.DistributedTensor[[ROWS, SIZE], pl.FP32]],
        signal: pl.InOut[pld.DistributedTensor[[NR, 1], pl.INT32]],
    ):
{chip}

    @pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator)
    def host_orch(self, inputs: pl.Tensor[[NR, ROWS, SIZE], pl.FP32]):
        buf = pld.alloc_window_buffer(ROWS * SIZE * pl.FP32.get_byte())
        signal_buf = pld.alloc_window_buffer(NR * pl.INT32.get_byte())
{host}
"""

_DISPATCH = """\
for r in pl.range(pld.world_size()):
    w = pld.window(buf, [ROWS, SIZE], dtype=pl.FP32)
    signal = pld.window(signal_buf, [NR, 1], dtype=pl.INT32)
    self.chip(inputs[r], w, signal, device=r)
"""
_TASK = "w = self.k(x, w)"


def program(chip: str = _TASK, host: str = _DISPATCH, kernels: str = "") -> str:
    return _PROGRAM.format(
        chip=textwrap.indent(textwrap.dedent(chip), " " * 8),
        host=textwrap.indent(textwrap.dedent(host), " " * 8),
        kernels=textwrap.indent(textwrap.dedent(kernels), " " * 4),
    )


def host(body: str) -> str:
    """The dispatch loop after ``body`` in the HOST orchestrator."""
    return program(host=textwrap.dedent(body) + _DISPATCH)


#: A program per row of the table, by the row's first cell.
PROGRAMS: dict[str, str] = {
    "`@pl.program`": program(),
    "`@pl.function(type=pl.FunctionType.Orchestration)`": program(),
    "`@pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator)`": program(),
    "`@pl.function(type=pl.FunctionType.AIV, external_source=...)`": program(),
    "`@pl.function(type=pl.FunctionType.InCore)` with a DSL body": program(
        kernels="""
        @pl.function(type=pl.FunctionType.InCore)
        def step(self, x: pl.Tensor[[ROWS, SIZE], pl.FP32]):
            t = pl.load(x, [0, 0], [1, SIZE])
        """
    ),
    "`pl.load`, `pl.store`, `pl.read`, tile ops": program(
        chip="t = pl.load(x, [0, 0], [1, SIZE])\n" + _TASK
    ),
    "`@pl.jit`": program().replace(
        "    @pl.function(type=pl.FunctionType.Orchestration)", "    @pl.jit", 1
    ),
    "`with pl.at(...)`": program(chip=f"with pl.at(level=pl.Level.CORE_GROUP):\n    {_TASK}"),
    "`pl.Tensor`, `pl.Out`, `pl.InOut`, `pl.Scalar`": program(),
    "`pld.DistributedTensor`": program(),
    "`pl.FP32.get_byte()`": program(),
    "`for r in pl.range(pld.world_size())`": program(),
    "`self.chip_orch(..., device=r)`": program(),
    "windows bound inside the per-device loop": program(),
    "`inputs[r]`": program(),
    "`x[i, j]` (an element read)": program(chip=f"v = x[0, 0]\n{_TASK}"),
    "`return 0` without a return annotation": program(host=_DISPATCH + "return 0\n"),
    "`pl.submit(self.kernel, ...)`": program(chip="w, task = pl.submit(self.k, x, w)"),
    "`pl.slice`, `pl.reshape`, `pl.view`, `pl.assemble`": program(
        chip="""\
        top = pl.slice(x, [ROWS // 2, SIZE], [0, 0])
        flat = pl.reshape(x, [ROWS * SIZE])
        same = pl.view(x)
        w = self.k(x, w)
        """
    ),
    "`pld.alloc_window_buffer(nbytes)`": program(),
    "`pld.alloc_window_buffer(shape, dtype=...)`": host(
        "other = pld.alloc_window_buffer([ROWS, SIZE], dtype=pl.FP32)\n"
    ),
    "`pld.alloc_window_buffer(pld.world_size() * 4)`": host(
        "other = pld.alloc_window_buffer(pld.world_size() * 4)\n"
    ),
    "`pld.window(buf, shape, dtype=...)`": program(),
    "`pld.tensor.alloc_window_buffer`, `pld.tensor.window`": program(
        host=_DISPATCH.replace("pld.window(", "pld.tensor.window(")
    ).replace("pld.alloc_window_buffer(", "pld.tensor.alloc_window_buffer("),
    "`pld.system.world_size()`": program(
        host=_DISPATCH.replace("pld.world_size()", "pld.system.world_size()")
    ),
    "`pld.tensor.all_to_all_v`": program(
        chip="w = pld.tensor.all_to_all_v(x, w, signal, counts, recv)",
        host=_DISPATCH.replace(
            "    self.chip(inputs[r], w, signal, device=r)",
            "    counts = pld.window(counts_buf, [NR], dtype=pl.INT32)\n"
            "    recv = pld.window(recv_buf, [NR, 1], dtype=pl.INT32)\n"
            "    self.chip(inputs[r], w, signal, counts, recv, device=r)",
        ).replace(
            "for r in",
            "counts_buf = pld.alloc_window_buffer(NR * 4)\n"
            "recv_buf = pld.alloc_window_buffer(NR * 4)\nfor r in",
        ),
    ).replace(
        "        signal: pl.InOut[pld.DistributedTensor[[NR, 1], pl.INT32]],\n    ):",
        "        signal: pl.InOut[pld.DistributedTensor[[NR, 1], pl.INT32]],\n"
        "        counts: pld.DistributedTensor[[NR], pl.INT32],\n"
        "        recv: pl.InOut[pld.DistributedTensor[[NR, 1], pl.INT32]],\n    ):",
    ),
    "`pld.tensor.allreduce(data, signal, op=pld.ReduceOp.Sum)`": program(
        chip="w = pld.tensor.allreduce(w, signal, op=pld.ReduceOp.Sum)"
    ),
    "`pld.tensor.allgather`, `reduce_scatter`, `broadcast`, `all_to_all`, `barrier`": program(
        chip="w = pld.tensor.broadcast(w, signal, root=0)"
    ),
    "`pld.tensor.put`, `pld.tensor.get`, `pld.tensor.remote_store`": program(
        chip=f"pld.tensor.put(w, 1, x)\n{_TASK}"
    ),
    "`pld.system.notify`, `pld.system.wait`": program(
        chip=f"pld.system.wait(signal, [0, 0], 1, cmp=pld.WaitCmp.Ge)\n{_TASK}"
    ),
    "`pld.rank`, `pld.nranks`": program(chip=f"me = pld.rank(pld.get_comm_ctx(w))\n{_TASK}"),
}


def table_rows() -> dict[str, str]:
    """The table's rows: first cell -> verdict ("yes", "parses" or "no")."""
    text = DOC.read_text(encoding="utf-8")
    section = text.split("## Upstream's constructs", 1)[1].split("\n## ", 1)[0]
    rows: dict[str, str] = {}
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[1] in ("yes", "parses", "no"):
            rows[cells[0]] = cells[1]
    return rows


def test_every_row_has_a_program_and_every_program_a_row() -> None:
    assert sorted(table_rows()) == sorted(PROGRAMS)


@pytest.mark.parametrize("construct", sorted(PROGRAMS))
def test_the_front_end_does_what_the_row_says(construct: str, tmp_path: Path) -> None:
    verdict = table_rows()[construct]
    path = tmp_path / "program.py"
    path.write_text(PROGRAMS[construct], encoding="utf-8")
    (tmp_path / "k.cpp").write_text("// the kernel\n", encoding="utf-8")
    if verdict == "no":
        with pytest.raises(ProgramError) as refused:
            parse_file(path)
        assert refused.value.phase == "frontend"
        return
    parse_file(path)
    if verdict == "yes":
        lower_file(path, ["a3"])
        return
    with pytest.raises(ProgramError) as later:
        lower_file(path, ["a3"])
    assert later.value.phase != "frontend"
    assert re.search(r"was not lowered|not supported", later.value.message)
