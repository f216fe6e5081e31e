"""The simulator's test programs: DSL source text generated per rank count, payload type, signal
lanes and launch width, plus the kernels they name.

Shapes are compile-time in the DSL, so every rank count is its own program. Every program takes
its data from the host per rank (``inp[r]``-style slices of one host tensor), so the goldens can
use arbitrary inputs and count matrices:

* HOST rail (:class:`HostRail`): per rank ``stage_orch`` copies the rank's rows and send counts
  into the windows, the HOST orchestrator's ``pld.tensor.all_to_all_v`` becomes one builtin
  dispatch per rank, and ``drain_orch`` copies the whole receive window and the counts out;
  ``core_num`` is a scalar parameter of the orchestrator.
* CHIP rail (:class:`ChipRail`): the same three steps as tasks of one chip orchestration, with a
  compile-time ``core_num``.

Both run :data:`ROUNDS` rounds through the same windows and one never-reset signal.
"""

from __future__ import annotations

import abc
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent / "sim"
#: The staging/draining kernel of every test program here.
COPY_PAIRS = HERE / "kernels" / "copy_pairs.cpp"
#: The hand-written kernels of tests/programs/chip_pipeline.py.
PIPELINE_KERNELS = HERE.parent / "programs" / "kernels"

MAX_RECV = 4
SIZE = 64
ROUNDS = 2

DSL_DTYPES = {"fp32": "pl.FP32", "int8": "pl.INT8"}
ELEMENT_BYTES = {"fp32": 4, "int8": 1}

_HEADER = """\
import pypto.language as pl
import pypto.language.distributed as pld

NR = {nr}
MAX_RECV = {max_recv}
SIZE = {size}
LANES = {lanes}
ROUNDS = {rounds}
TOTAL = NR * MAX_RECV
"""

#: Copies the received rows and counts out of the windows.
_DRAIN_KERNEL = """\
    @pl.function(type=pl.FunctionType.AIV, external_source="kernels/copy_pairs.cpp")
    def drain(
        self,
        data: pld.DistributedTensor[[TOTAL, SIZE], DT],
        out: pl.Out[pl.Tensor[[TOTAL, SIZE], DT]],
        recv: pld.DistributedTensor[[NR, 1], pl.INT32],
        recv_out: pl.Out[pl.Tensor[[NR, 1], pl.INT32]],
    ) -> tuple[pl.Tensor[[TOTAL, SIZE], DT], pl.Tensor[[NR, 1], pl.INT32]]:
        ...
"""

_COPY_KERNELS = f"""\
    @pl.function(type=pl.FunctionType.AIV, external_source="kernels/copy_pairs.cpp")
    def stage_copy(
        self,
        inp: pl.Tensor[[TOTAL, SIZE], DT],
        stage: pl.InOut[pld.DistributedTensor[[TOTAL, SIZE], DT]],
        counts_in: pl.Tensor[[NR], pl.INT32],
        counts: pl.InOut[pld.DistributedTensor[[NR], pl.INT32]],
    ) -> tuple[pld.DistributedTensor[[TOTAL, SIZE], DT], pld.DistributedTensor[[NR], pl.INT32]]:
        ...

{_DRAIN_KERNEL}"""

_HOST_PARAMS = """\
        inp: pl.Tensor[[ROUNDS * NR * TOTAL, SIZE], DT],
        counts_in: pl.Tensor[[ROUNDS * NR * NR], pl.INT32],
        out: pl.Out[pl.Tensor[[ROUNDS * NR * TOTAL, SIZE], DT]],
        recv_out: pl.Out[pl.Tensor[[ROUNDS * NR * NR, 1], pl.INT32]],"""

_WINDOWS = """\
        stage_buf = pld.alloc_window_buffer(TOTAL * SIZE * {elem}, name="stage")
        data_buf = pld.alloc_window_buffer(TOTAL * SIZE * {elem}, name="data")
        signal_buf = pld.alloc_window_buffer(NR * LANES * 4, name="signal")
        counts_buf = pld.alloc_window_buffer(NR * 4, name="counts")
        recv_buf = pld.alloc_window_buffer(NR * 4, name="recv")
        stage = pld.window(stage_buf, [TOTAL, SIZE], dtype=DT)
        data = pld.window(data_buf, [TOTAL, SIZE], dtype=DT)
        signal = pld.window(signal_buf, [NR, LANES], dtype=pl.INT32)
        counts = pld.window(counts_buf, [NR], dtype=pl.INT32)
        recv = pld.window(recv_buf, [NR, 1], dtype=pl.INT32)
"""

#: Rank r's slices of round {rd}: rows, counts, output rows, received counts.
_SLICES = {
    "inp": "pl.slice(inp, [TOTAL, SIZE], [({rd} * NR + r) * TOTAL, 0])",
    "counts_in": "pl.slice(counts_in, [NR], [({rd} * NR + r) * NR])",
    "out": "pl.slice(out, [TOTAL, SIZE], [({rd} * NR + r) * TOTAL, 0])",
    "recv_out": "pl.slice(recv_out, [NR, 1], [({rd} * NR + r) * NR, 0])",
}


def _slice(name: str, rd: int) -> str:
    return _SLICES[name].format(rd=rd)


@dataclass(frozen=True)
class ProgramSpec(abc.ABC):
    """A program file and its kernels, written into a folder by :meth:`write`."""

    #: The chip the program is built for.
    chip: str = field(default="a3", kw_only=True)

    @property
    @abc.abstractmethod
    def slug(self) -> str:
        """A folder name for the build."""

    @abc.abstractmethod
    def source(self) -> str:
        """The program file's text, with the payload type written DT."""

    @property
    def payload(self) -> str:
        """The payload type: fp32 or int8."""
        return "fp32"

    def kernels(self) -> tuple[Path, ...]:
        return (COPY_PAIRS,)

    def write(self, folder: Path) -> Path:
        """Write ``program.py`` and ``kernels/`` into ``folder``; returns the program file."""
        (folder / "kernels").mkdir(parents=True, exist_ok=True)
        for kernel in self.kernels():
            shutil.copyfile(kernel, folder / "kernels" / kernel.name)
        program = folder / "program.py"
        # The payload type is spelled DT in the templates; the front end folds only integers.
        text = re.sub(r"\bDT\b", DSL_DTYPES[self.payload], self.source())
        program.write_text(text, encoding="utf-8")
        return program


@dataclass(frozen=True)
class _Rail(ProgramSpec):
    """An all_to_all_v of ``dtype`` payloads over ``nr`` ranks, :data:`ROUNDS` times."""

    nr: int
    dtype: str

    @property
    def payload(self) -> str:
        return self.dtype


@dataclass(frozen=True)
class HostRail(_Rail):
    """all_to_all_v in the HOST orchestrator; ``core_num`` is a runtime scalar."""

    lanes: int

    @property
    def slug(self) -> str:
        return f"host-{self.dtype}-p{self.nr}-s{self.lanes}"

    def source(self) -> str:
        rounds = []
        for rd in range(ROUNDS):
            stage_args = ", ".join(
                [_slice("inp", rd), _slice("counts_in", rd), "stage", "counts", "device=r"]
            )
            drain_args = ", ".join(
                ["data", "recv", _slice("out", rd), _slice("recv_out", rd), "device=r"]
            )
            rounds.append(
                f"""\
        for r in pl.range(pld.world_size()):
            self.stage_orch({stage_args})
        data = pld.tensor.all_to_all_v(stage, data, signal, counts, recv, core_num=core_num)
        for r in pl.range(pld.world_size()):
            self.drain_orch({drain_args})
"""
            )
        return (
            _header(self.nr, self.lanes)
            + f"""

@pl.program
class HostRail:
{_COPY_KERNELS}
    @pl.function(type=pl.FunctionType.Orchestration)
    def stage_orch(
        self,
        inp: pl.Tensor[[TOTAL, SIZE], DT],
        counts_in: pl.Tensor[[NR], pl.INT32],
        stage: pl.InOut[pld.DistributedTensor[[TOTAL, SIZE], DT]],
        counts: pl.InOut[pld.DistributedTensor[[NR], pl.INT32]],
    ):
        stage, counts = self.stage_copy(inp, stage, counts_in, counts)

    @pl.function(type=pl.FunctionType.Orchestration)
    def drain_orch(
        self,
        data: pld.DistributedTensor[[TOTAL, SIZE], DT],
        recv: pld.DistributedTensor[[NR, 1], pl.INT32],
        out: pl.Out[pl.Tensor[[TOTAL, SIZE], DT]],
        recv_out: pl.Out[pl.Tensor[[NR, 1], pl.INT32]],
    ):
        out, recv_out = self.drain(data, out, recv, recv_out)

    @pl.function(type=pl.FunctionType.Orchestration, level=pl.Level.HOST)
    def host_orch(
        self,
{_HOST_PARAMS}
        core_num: pl.Scalar[pl.INDEX],
    ):
{_WINDOWS.format(elem=ELEMENT_BYTES[self.dtype])}{"".join(rounds)}"""
        )


@dataclass(frozen=True)
class ChipRail(_Rail):
    """all_to_all_v inside the chip orchestration ``chip_pipeline``, launched ``core_num``
    wide; the signal has as many lanes as the admitted block count."""

    core_num: int

    @property
    def slug(self) -> str:
        return f"chip-{self.dtype}-p{self.nr}-l{self.core_num}"

    @property
    def lanes(self) -> int:
        cores, ranks = self.core_num, self.nr
        return cores if cores < ranks else cores // ranks * ranks

    def source(self) -> str:
        dispatches = "".join(
            f"""\
        for r in pl.range(pld.world_size()):
            self.chip_pipeline(
                {_slice("inp", rd)},
                {_slice("counts_in", rd)},
                {_slice("out", rd)},
                {_slice("recv_out", rd)},
                stage, data, signal, counts, recv, device=r,
            )
"""
            for rd in range(ROUNDS)
        )
        return (
            _header(self.nr, self.lanes)
            + f"""

@pl.program
class ChipRail:
{_COPY_KERNELS}
    @pl.function(type=pl.FunctionType.Orchestration)
    def chip_pipeline(
        self,
        inp: pl.Tensor[[TOTAL, SIZE], DT],
        counts_in: pl.Tensor[[NR], pl.INT32],
        out: pl.Out[pl.Tensor[[TOTAL, SIZE], DT]],
        recv_out: pl.Out[pl.Tensor[[NR, 1], pl.INT32]],
        stage: pl.InOut[pld.DistributedTensor[[TOTAL, SIZE], DT]],
        data: pl.InOut[pld.DistributedTensor[[TOTAL, SIZE], DT]],
        signal: pl.InOut[pld.DistributedTensor[[NR, LANES], pl.INT32]],
        counts: pl.InOut[pld.DistributedTensor[[NR], pl.INT32]],
        recv: pl.InOut[pld.DistributedTensor[[NR, 1], pl.INT32]],
    ):
        stage, counts = self.stage_copy(inp, stage, counts_in, counts)
        data = pld.tensor.all_to_all_v(stage, data, signal, counts, recv, core_num={self.core_num})
        out, recv_out = self.drain(data, out, recv, recv_out)

    @pl.function(type=pl.FunctionType.Orchestration, level=pl.Level.HOST)
    def host_orch(
        self,
{_HOST_PARAMS}
    ):
{_WINDOWS.format(elem=ELEMENT_BYTES[self.dtype])}{dispatches}"""
        )


@dataclass(frozen=True)
class NonContiguous(ProgramSpec):
    """A chip orchestration whose collective input is its parameter ``inp``, which only the run
    time shows to be dense: its HOST orchestrator passes whole rows (all that PyPTO's runtime
    passes to a chip), and :func:`dispatch_exchange` dispatches ``chip_exchange`` directly with
    any view, strided ones included, to exercise the orchestration's ``is_contiguous`` check."""

    nr: int

    @property
    def slug(self) -> str:
        return f"noncontiguous-p{self.nr}"

    def kernels(self) -> tuple[Path, ...]:
        return ()

    def source(self) -> str:
        return (
            _header(self.nr, 1)
            + f"""

@pl.program
class NonContiguous:
    @pl.function(type=pl.FunctionType.Orchestration)
    def chip_exchange(
        self,
        inp: pl.Tensor[[TOTAL, SIZE], DT],
        data: pl.InOut[pld.DistributedTensor[[TOTAL, SIZE], DT]],
        signal: pl.InOut[pld.DistributedTensor[[NR, 1], pl.INT32]],
        counts: pld.DistributedTensor[[NR], pl.INT32],
        recv: pl.InOut[pld.DistributedTensor[[NR, 1], pl.INT32]],
    ) -> pld.DistributedTensor[[TOTAL, SIZE], DT]:
        return pld.tensor.all_to_all_v(inp, data, signal, counts, recv)

    @pl.function(type=pl.FunctionType.Orchestration, level=pl.Level.HOST)
    def host_orch(self, tall: pl.Tensor[[NR * TOTAL, SIZE], DT]):
{_WINDOWS.format(elem=4)}\
        for r in pl.range(pld.world_size()):
            rows = pl.slice(tall, [TOTAL, SIZE], [r * TOTAL, 0])
            self.chip_exchange(rows, data, signal, counts, recv, device=r)
"""
        )


@dataclass(frozen=True)
class Indexed(ProgramSpec):
    """indexed_all_to_all_v on a5: rank r's row k for destination d is
    ``rows[index[d * MAX_RECV + k]]`` of its own ``rows`` (``N`` rows, a host slice); the
    index is staged into a window with the counts."""

    nr: int
    core_num: int
    rows: int

    @property
    def slug(self) -> str:
        return f"indexed-p{self.nr}-l{self.core_num}"

    def source(self) -> str:
        return (
            _header(self.nr, self.core_num)
            + f"""N = {self.rows}


@pl.program
class Indexed:
    @pl.function(type=pl.FunctionType.AIV, external_source="kernels/copy_pairs.cpp")
    def stage_copy(
        self,
        counts_in: pl.Tensor[[NR], pl.INT32],
        counts: pl.InOut[pld.DistributedTensor[[NR], pl.INT32]],
        index_in: pl.Tensor[[TOTAL], pl.INT32],
        index: pl.InOut[pld.DistributedTensor[[TOTAL], pl.INT32]],
    ) -> tuple[pld.DistributedTensor[[NR], pl.INT32], pld.DistributedTensor[[TOTAL], pl.INT32]]:
        ...

{_DRAIN_KERNEL}
    @pl.function(type=pl.FunctionType.Orchestration)
    def chip_gather(
        self,
        rows: pl.Tensor[[N, SIZE], DT],
        counts_in: pl.Tensor[[NR], pl.INT32],
        index_in: pl.Tensor[[TOTAL], pl.INT32],
        out: pl.Out[pl.Tensor[[TOTAL, SIZE], DT]],
        recv_out: pl.Out[pl.Tensor[[NR, 1], pl.INT32]],
        data: pl.InOut[pld.DistributedTensor[[TOTAL, SIZE], DT]],
        signal: pl.InOut[pld.DistributedTensor[[NR, LANES], pl.INT32]],
        counts: pl.InOut[pld.DistributedTensor[[NR], pl.INT32]],
        recv: pl.InOut[pld.DistributedTensor[[NR, 1], pl.INT32]],
        index: pl.InOut[pld.DistributedTensor[[TOTAL], pl.INT32]],
    ):
        counts, index = self.stage_copy(counts_in, counts, index_in, index)
        data = pld.tensor.indexed_all_to_all_v(
            rows, data, signal, counts, recv, index, core_num={self.core_num}
        )
        out, recv_out = self.drain(data, out, recv, recv_out)

    @pl.function(type=pl.FunctionType.Orchestration, level=pl.Level.HOST)
    def host_orch(
        self,
        rows: pl.Tensor[[NR * N, SIZE], DT],
        counts_in: pl.Tensor[[NR * NR], pl.INT32],
        index_in: pl.Tensor[[NR * TOTAL], pl.INT32],
        out: pl.Out[pl.Tensor[[NR * TOTAL, SIZE], DT]],
        recv_out: pl.Out[pl.Tensor[[NR * NR, 1], pl.INT32]],
    ):
        data_buf = pld.alloc_window_buffer(TOTAL * SIZE * 4, name="data")
        signal_buf = pld.alloc_window_buffer(NR * LANES * 4, name="signal")
        counts_buf = pld.alloc_window_buffer(NR * 4, name="counts")
        recv_buf = pld.alloc_window_buffer(NR * 4, name="recv")
        index_buf = pld.alloc_window_buffer(TOTAL * 4, name="index")
        data = pld.window(data_buf, [TOTAL, SIZE], dtype=DT)
        signal = pld.window(signal_buf, [NR, LANES], dtype=pl.INT32)
        counts = pld.window(counts_buf, [NR], dtype=pl.INT32)
        recv = pld.window(recv_buf, [NR, 1], dtype=pl.INT32)
        index = pld.window(index_buf, [TOTAL], dtype=pl.INT32)
        for r in pl.range(pld.world_size()):
            self.chip_gather(
                pl.slice(rows, [N, SIZE], [r * N, 0]),
                pl.slice(counts_in, [NR], [r * NR]),
                pl.slice(index_in, [TOTAL], [r * TOTAL]),
                pl.slice(out, [TOTAL, SIZE], [r * TOTAL, 0]),
                pl.slice(recv_out, [NR, 1], [r * NR, 0]),
                data, signal, counts, recv, index, device=r,
            )
"""
        )


@dataclass(frozen=True)
class Pipeline(ProgramSpec):
    """tests/programs/chip_pipeline.py's pipeline (its kernels: stage_step computes the send
    counts from the ranks, consume_step keeps only received rows) on ``nr`` ranks, each with
    its own rows; without ``host``, the chip orchestration alone (no HOST orchestrator), as a
    user who runs a chip pipeline by itself writes it."""

    nr: int
    host: bool = True

    @property
    def slug(self) -> str:
        return f"pipeline-p{self.nr}" if self.host else f"pipeline-chip-p{self.nr}"

    def kernels(self) -> tuple[Path, ...]:
        return (PIPELINE_KERNELS / "stage_step.cpp", PIPELINE_KERNELS / "consume_step.cpp")

    def source(self) -> str:
        return (
            _header(self.nr, 1)
            + """

@pl.program
class Pipeline:
    @pl.function(type=pl.FunctionType.AIV, external_source="kernels/stage_step.cpp")
    def stage_step(
        self,
        inp: pl.Tensor[[TOTAL, SIZE], DT],
        stage: pl.InOut[pld.DistributedTensor[[TOTAL, SIZE], DT]],
        counts: pl.InOut[pld.DistributedTensor[[NR], pl.INT32]],
    ) -> tuple[pld.DistributedTensor[[TOTAL, SIZE], DT], pld.DistributedTensor[[NR], pl.INT32]]:
        ...

    @pl.function(type=pl.FunctionType.AIV, external_source="kernels/consume_step.cpp")
    def consume_step(
        self,
        data: pld.DistributedTensor[[TOTAL, SIZE], DT],
        recv: pld.DistributedTensor[[NR, 1], pl.INT32],
        out: pl.Out[pl.Tensor[[TOTAL, SIZE], DT]],
    ) -> pl.Tensor[[TOTAL, SIZE], DT]:
        ...

    @pl.function(type=pl.FunctionType.Orchestration)
    def chip_pipeline(
        self,
        inp: pl.Tensor[[TOTAL, SIZE], DT],
        out: pl.Out[pl.Tensor[[TOTAL, SIZE], DT]],
        stage: pl.InOut[pld.DistributedTensor[[TOTAL, SIZE], DT]],
        data: pl.InOut[pld.DistributedTensor[[TOTAL, SIZE], DT]],
        signal: pl.InOut[pld.DistributedTensor[[NR, 1], pl.INT32]],
        counts: pl.InOut[pld.DistributedTensor[[NR], pl.INT32]],
        recv: pl.InOut[pld.DistributedTensor[[NR, 1], pl.INT32]],
    ) -> pl.Tensor[[TOTAL, SIZE], DT]:
        stage, counts = self.stage_step(inp, stage, counts)
        data = pld.tensor.all_to_all_v(stage, data, signal, counts, recv, core_num=1)
        return self.consume_step(data, recv, out)
"""
            + (_PIPELINE_HOST if self.host else "")
        )


#: The HOST orchestrator of :class:`Pipeline`: windows, and one dispatch per rank of its rows.
_PIPELINE_HOST = f"""
    @pl.function(type=pl.FunctionType.Orchestration, level=pl.Level.HOST)
    def host_orch(
        self,
        inp: pl.Tensor[[NR * TOTAL, SIZE], DT],
        out: pl.Out[pl.Tensor[[NR * TOTAL, SIZE], DT]],
    ):
{_WINDOWS.format(elem=4)}\
        for r in pl.range(pld.world_size()):
            mine = pl.slice(inp, [TOTAL, SIZE], [r * TOTAL, 0])
            result = pl.slice(out, [TOTAL, SIZE], [r * TOTAL, 0])
            self.chip_pipeline(mine, result, stage, data, signal, counts, recv, device=r)
"""


@dataclass(frozen=True)
class Stuck(ProgramSpec):
    """A chip orchestration alone (no HOST orchestrator) whose kernel marks its rank in a window
    and an output, then waits for a credit nobody gives: a run of it times out, with the marks
    written."""

    nr: int

    @property
    def slug(self) -> str:
        return f"stuck-p{self.nr}"

    def kernels(self) -> tuple[Path, ...]:
        return (HERE / "kernels" / "mark_then_wait.cpp",)

    def source(self) -> str:
        return (
            _header(self.nr, 1)
            + """

@pl.program
class Stuck:
    @pl.function(type=pl.FunctionType.AIV, external_source="kernels/mark_then_wait.cpp")
    def mark_then_wait(
        self,
        mark: pl.InOut[pld.DistributedTensor[[NR], pl.INT32]],
        flag: pld.DistributedTensor[[NR], pl.INT32],
        out: pl.Out[pl.Tensor[[NR], pl.INT32]],
    ) -> tuple[pld.DistributedTensor[[NR], pl.INT32], pl.Tensor[[NR], pl.INT32]]:
        ...

    @pl.function(type=pl.FunctionType.Orchestration)
    def chip_stuck(
        self,
        mark: pl.InOut[pld.DistributedTensor[[NR], pl.INT32]],
        flag: pld.DistributedTensor[[NR], pl.INT32],
        out: pl.Out[pl.Tensor[[NR], pl.INT32]],
    ):
        mark, out = self.mark_then_wait(mark, flag, out)
"""
        )


@dataclass(frozen=True)
class Misbehave(ProgramSpec):
    """A chip orchestration alone (no windows, no HOST orchestrator) whose one kernel does, on
    each rank, what that rank's ``mode`` says (kernels/misbehave.cpp): behave, segfault, abort,
    throw, call exit, spin forever or overflow its stack."""

    nr: int

    @property
    def slug(self) -> str:
        return f"misbehave-p{self.nr}"

    def kernels(self) -> tuple[Path, ...]:
        return (HERE / "kernels" / "misbehave.cpp",)

    def source(self) -> str:
        return """\
import pypto.language as pl


@pl.program
class Misbehave:
    @pl.function(type=pl.FunctionType.AIV, external_source="kernels/misbehave.cpp")
    def misbehave(
        self, mode: pl.Tensor[[1], pl.INT32], out: pl.Out[pl.Tensor[[1], pl.INT32]]
    ) -> pl.Tensor[[1], pl.INT32]:
        ...

    @pl.function(type=pl.FunctionType.Orchestration)
    def chip_misbehave(
        self, mode: pl.Tensor[[1], pl.INT32], out: pl.Out[pl.Tensor[[1], pl.INT32]]
    ):
        out = self.misbehave(mode, out)
"""


def _header(nr: int, lanes: int) -> str:
    return _HEADER.format(nr=nr, max_recv=MAX_RECV, size=SIZE, lanes=lanes, rounds=ROUNDS)


#: The ``build_program`` fixture: builds a program once per session, returns its ``<out>``.
BuildProgram = Callable[[ProgramSpec], Path]
