"""A chip pipeline run on four simulated ranks without a HOST orchestrator (``pypto-build run
--program``, ``sim.run(program=)``): the simulator allocates the windows its DistributedTensor
parameters need, gives each rank its inputs, and hands back every rank's outputs and windows
under the program's names, against a NumPy golden; a run that times out still hands back what it
had, with the error; ``--json`` times every dispatch."""

from __future__ import annotations

import argparse
import gc
import json
import re
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pytest
from _support.goldens import exchange, payload, stage_step_counts
from _support.sim_programs import MAX_RECV, SIZE, BuildProgram, HostRail, Pipeline, Stuck

from pypto_build import sim
from pypto_build.chip_build.chips import get_chip
from pypto_build.chip_build.kernel_config import OrchestrationParam
from pypto_build.chip_build.sim import launch
from pypto_build.chip_build.sim.program import ChipBuild, HostOrchestrator, SubBuild
from pypto_build.errors import PyptoUsageError
from pypto_build.plugin.cli_run import register

NR = 4
TOTAL = NR * MAX_RECV
WINDOWS = ("stage", "data", "signal", "counts", "recv")


def run_command(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="pypto-build")
    register(parser.add_subparsers())
    args = parser.parse_args(["run", *argv])
    status: int = args.command(args)
    return status


@pytest.fixture
def chip_only(build_program: BuildProgram) -> Path:
    """tests/programs/chip_pipeline.py's pipeline for NR ranks, with no HOST orchestrator."""
    return build_program(Pipeline(NR, host=False))


def received(recv: npt.NDArray[np.int32]) -> npt.NDArray[np.bool_]:
    """Which rows of every rank's data window ([rank, TOTAL]) the exchange wrote."""
    rows = np.arange(MAX_RECV)
    return (rows[None, None, :] < recv[:, :, None]).reshape(NR, TOTAL)


def test_a_chip_pipeline_runs_on_every_rank_and_shows_every_window(chip_only: Path) -> None:
    program = sim.SimProgram.open(chip_only)  # the tree's only program
    assert (program.kind, program.name, program.windows) == ("chip", "chip_pipeline", WINDOWS)
    assert [p.name for p in program.parameters] == ["inp", "out", *WINDOWS]
    inputs = payload(NR, "fp32", offset=7)  # [rank, TOTAL, SIZE]: rank r's rows at [r]
    result = program.run({"inp": inputs}, ranks=NR)
    golden = exchange(inputs, stage_step_counts(NR))
    np.testing.assert_array_equal(result["out"], golden.target)
    # Every rank's windows, by the parameters' names, typed and shaped as the parameters.
    assert list(result.windows) == list(WINDOWS)
    np.testing.assert_array_equal(result.windows["stage"], inputs)
    np.testing.assert_array_equal(result.windows["counts"], stage_step_counts(NR))
    np.testing.assert_array_equal(result.windows["recv"][..., 0], golden.recv)
    np.testing.assert_array_equal(result.windows["data"], golden.target)
    assert result.windows["signal"].shape == (NR, NR, 1)
    np.testing.assert_array_equal(result["data"], result.windows["data"])
    assert [(d.rank, d.index, d.next_level, d.code, d.tasks) for d in result.dispatches] == [
        (rank, 0, "chip_pipeline", 0, 3) for rank in range(NR)
    ]
    assert all(d.seconds > 0 for d in result.dispatches)
    # Setting up the windows is timed apart from the dispatches.
    assert result.window_setup_seconds > 0


def test_the_same_pipeline_under_its_host_orchestrator_gives_the_same_tensors_and_windows(
    chip_only: Path, build_program: BuildProgram
) -> None:
    inputs = payload(NR, "fp32", offset=3)
    alone = sim.run(chip_only, ranks=NR, inputs={"inp": inputs})
    hosted = sim.run(
        build_program(Pipeline(NR)), ranks=NR, inputs={"inp": inputs.reshape(-1, SIZE)}
    )
    np.testing.assert_array_equal(hosted["out"].reshape(NR, TOTAL, SIZE), alone["out"])
    # A HOST orchestrator's windows are its buffers as declared (bytes), by their given names.
    assert list(hosted.windows) == list(WINDOWS)
    data = hosted.windows["data"]
    assert (data.shape, data.dtype) == ((NR, TOTAL * SIZE * 4), np.uint8)
    np.testing.assert_array_equal(data.view(np.float32).reshape(NR, TOTAL, SIZE), alone["data"])
    np.testing.assert_array_equal(hosted.windows["counts"].view(np.int32), alone["counts"])
    # A HOST orchestrator's domains allocate their windows as it runs: no set-up before it.
    assert hosted.window_setup_seconds == 0.0


@pytest.mark.parametrize("streamed", [False, True], ids=["stores", "streaming-stores"])
def test_one_value_for_every_rank_and_windows_that_start_as_given(
    chip_only: Path, monkeypatch: pytest.MonkeyPatch, streamed: bool
) -> None:
    # Windows of many MiB are written with streaming stores; these small ones too, when asked.
    if streamed:
        monkeypatch.setattr(launch, "_STREAMED_BYTES", 0)
    rows = payload(1, "fp32")[0]
    rows = np.tile(rows, (NR, 1))[:TOTAL]  # one [TOTAL, SIZE] array: every rank's rows
    start = np.full((TOTAL, SIZE), -5.0, dtype=np.float32)
    result = sim.run(chip_only, ranks=NR, inputs={"inp": rows, "data": start})
    golden = exchange(np.stack([rows] * NR), stage_step_counts(NR))
    # Rows the exchange did not write keep the window's initial contents.
    expected = np.where(received(golden.recv)[..., None], golden.target, -5.0)
    np.testing.assert_array_equal(result.windows["data"], expected)
    np.testing.assert_array_equal(result["out"], golden.target)
    # The next run takes this run's memory once nothing views it: a window it is not given
    # starts zeroed all the same.
    del result
    gc.collect()
    again = sim.run(chip_only, ranks=NR, inputs={"inp": rows})
    zeros = np.where(received(golden.recv)[..., None], golden.target, 0.0)
    np.testing.assert_array_equal(again.windows["data"], zeros)


def test_the_cli_reads_per_rank_inputs_and_writes_every_rank_s_tensors_and_windows(
    chip_only: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    inputs = payload(NR, "fp32", offset=11)
    np.savez(tmp_path / "in.npz", inp=inputs)
    argv = ["--ranks", str(NR), "--program", "chip_pipeline", "--inputs", str(tmp_path / "in.npz")]
    status = run_command(str(chip_only), *argv, "--out", str(tmp_path / "out.npz"), "--json")
    assert status == 0
    document = json.loads(capsys.readouterr().out)
    assert (document["status"], document["kind"], document["program"]) == (
        "ok",
        "chip",
        "chip_pipeline",
    )
    assert document["windows"]["data"] == {"dtype": "float32", "shape": [NR, TOTAL, SIZE]}
    assert document["outputs"]["out"] == {"dtype": "float32", "shape": [NR, TOTAL, SIZE]}
    dispatches = document["dispatches"]
    assert [(d["rank"], d["index"], d["next_level"]) for d in dispatches] == [
        (rank, 0, "chip_pipeline") for rank in range(NR)
    ]
    assert all(isinstance(d["seconds"], float) and d["seconds"] > 0 for d in dispatches)
    golden = exchange(inputs, stage_step_counts(NR))
    with np.load(tmp_path / "out.npz") as outputs:
        assert sorted(outputs.files) == sorted(["inp", "out", *WINDOWS])
        np.testing.assert_array_equal(outputs["out"], golden.target)
        np.testing.assert_array_equal(outputs["recv"][..., 0], golden.recv)
        np.testing.assert_array_equal(outputs["stage"], inputs)


STUCK_TIMEOUT = "0.2"


@pytest.mark.slow
def test_a_run_that_times_out_writes_what_it_had_with_the_error(
    build_program: BuildProgram, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    build = build_program(Stuck(NR))
    out = tmp_path / "out.npz"
    argv = ["--ranks", str(NR), "--timeout", STUCK_TIMEOUT, "--out", str(out), "--json"]
    assert run_command(str(build), *argv) == 1
    captured = capsys.readouterr()
    document = json.loads(captured.out)
    assert document["status"] == "failed"
    assert [(e["rank"], e["name"]) for e in document["errors"]] == [
        (rank, "SIMPLER_ERROR_SCHEDULER_TIMEOUT") for rank in range(NR)
    ]
    assert document["windows"]["mark"] == {"dtype": "int32", "shape": [NR, NR]}
    # Each dispatch waited out the timeout before it failed.
    assert all(d["seconds"] >= float(STUCK_TIMEOUT) for d in document["dispatches"])
    assert f"wrote what the run left, with the error, to {out}" in captured.err
    with np.load(out) as outputs:
        assert sorted(outputs.files) == ["flag", "mark", "out", "run/error"]
        # What every rank wrote before it waited is there.
        assert outputs["mark"][:, 0].tolist() == outputs["out"][:, 0].tolist() == [1, 2, 3, 4]
        errors = outputs["run/error"].tolist()
        assert [line.split(":")[0] for line in errors] == [f"rank {r}" for r in range(NR)]
        assert all("SIMPLER_ERROR_SCHEDULER_TIMEOUT (100) in chip_stuck" in e for e in errors)


@pytest.mark.slow
def test_the_api_hands_back_the_failed_run_s_windows(build_program: BuildProgram) -> None:
    with pytest.raises(sim.SimulationError) as failed:
        sim.run(build_program(Stuck(NR)), ranks=NR, inputs={}, timeout=float(STUCK_TIMEOUT))
    result = failed.value.result
    assert result is not None
    assert result.windows["mark"][:, 0].tolist() == [1, 2, 3, 4]
    assert result.windows["flag"].tolist() == [[0] * NR] * NR
    assert [d.code for d in result.dispatches] == [sim.SIMPLER_ERROR_SCHEDULER_TIMEOUT] * NR


def test_a_host_rail_tree_runs_one_of_its_chip_orchestrations_by_name(
    build_program: BuildProgram,
) -> None:
    build = build_program(HostRail(2, "fp32", 1))
    rows = payload(2, "fp32")
    counts = np.array([[1, 2], [3, 4]], dtype=np.int32)
    result = sim.run(
        build, ranks=2, program="stage_orch", inputs={"inp": rows, "counts_in": counts}
    )
    np.testing.assert_array_equal(result.windows["stage"], rows)
    np.testing.assert_array_equal(result.windows["counts"], counts)


@pytest.mark.parametrize(
    ("program", "message"),
    [
        (
            "nope",
            "has no program 'nope' (HOST orchestrators: host_orch; chip orchestrations: "
            "drain_orch, stage_orch)",
        ),
        (
            "builtin.tensor.all_to_all_v__fp32",
            "does not list its parameters in kernel_config.py (a HOST-rail collective",
        ),
    ],
)
def test_a_program_that_cannot_run_is_a_usage_error(
    build_program: BuildProgram, program: str, message: str
) -> None:
    build = build_program(HostRail(2, "fp32", 1))
    with pytest.raises(PyptoUsageError, match=re.escape(message)):
        run_command(str(build), "--ranks", "2", "--program", program)


def _tree(*names: str, host: bool = False, variant: bool = False) -> ChipBuild:
    """A chip tree (never opened) with chip orchestrations ``names``, and a HOST orchestrator
    and a HOST-rail variant if asked for."""
    described = (OrchestrationParam("x", "tensor", "In", (1,), sim.DataType.INT32),)
    subs = [SubBuild(name, Path(f"{name}.so"), "entry", (), described) for name in names]
    if variant:
        subs.append(SubBuild("builtin.tensor.all_to_all_v__fp32", Path("v.so"), "entry", ()))
    hosts = {"host_orch": HostOrchestrator("host_orch", Path("host_orch.py"), (), 1)}
    return ChipBuild(
        Path("tree"), get_chip("a3"), {sub.name: sub for sub in subs}, hosts if host else {}
    )


def test_without_a_name_the_host_orchestrator_runs_else_the_only_chip_orchestration() -> None:
    assert _tree("a", host=True).program(None).name == "host_orch"
    assert _tree("a", variant=True).program(None).name == "a"
    assert _tree("a", "b").program("b").name == "b"
    with pytest.raises(sim.BuildTreeError, match="no HOST orchestrator; name the chip"):
        _tree("a", "b").program(None)
    with pytest.raises(sim.BuildTreeError, match=r"chip orchestrations: none\)"):
        _tree(variant=True).program(None)
