"""``pypto-build run``: parameters from an .npz, outputs to another, a summary or JSON on
stdout, and the documented exit codes."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import numpy as np
import pytest

from pypto_build.plugin.cli import UsageError
from pypto_build.plugin.cli_run import register
from sim.goldens import exchange, payload, uniform_counts
from sim.programs import MAX_RECV, ROUNDS, SIZE, BuildProgram, HostRail

NR = 2
TOTAL = NR * MAX_RECV


def run_command(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="pypto-build")
    register(parser.add_subparsers())
    args = parser.parse_args(["run", *argv])
    status: int = args.command(args)
    return status


@pytest.fixture
def build(build_program: BuildProgram) -> Path:
    return build_program(HostRail(NR, "fp32", 1))


def write_inputs(path: Path, core_num: int) -> np.ndarray:
    inputs = payload(NR, "fp32")
    np.savez(
        path,
        inp=np.concatenate([inputs] * ROUNDS).reshape(-1, SIZE),
        counts_in=np.concatenate([uniform_counts(NR)] * ROUNDS).reshape(-1),
        core_num=np.int64(core_num),
    )
    return inputs


def test_run_writes_every_tensor_parameter_and_a_json_summary(
    build: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    inputs = write_inputs(tmp_path / "in.npz", core_num=1)
    status = run_command(
        str(build),
        "--ranks",
        "2",
        "--inputs",
        str(tmp_path / "in.npz"),
        "--out",
        str(tmp_path / "out.npz"),
        "--json",
    )
    assert status == 0
    document = json.loads(capsys.readouterr().out)
    assert (document["status"], document["chip"], document["program"]) == ("ok", "a3", "host_orch")
    assert document["outputs"]["out"] == {"dtype": "float32", "shape": [ROUNDS * NR * TOTAL, SIZE]}
    assert [(d["rank"], d["next_level"]) for d in document["dispatches"][:3]] == [
        (0, "stage_orch"),
        (0, "builtin.tensor.all_to_all_v__fp32"),
        (0, "drain_orch"),
    ]
    with np.load(tmp_path / "out.npz") as outputs:
        assert sorted(outputs.files) == ["counts_in", "inp", "out", "recv_out"]
        golden = exchange(inputs, uniform_counts(NR))
        got = outputs["out"].reshape(ROUNDS, NR, TOTAL, SIZE)
        np.testing.assert_array_equal(got[0], golden.target)


def test_a_failed_run_exits_1_naming_each_rank(
    build: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_inputs(tmp_path / "in.npz", core_num=2)
    status = run_command(str(build), "--ranks", "2", "--inputs", str(tmp_path / "in.npz"))
    assert status == 1
    err = capsys.readouterr().err
    assert "the simulated run failed on 2 rank(s)" in err
    assert (
        "rank 1: SIMPLER_ERROR_INVALID_ARGS (5) in builtin.tensor.all_to_all_v__fp32: "
        "all_to_all_v: signal stride (1) is smaller than the admitted block count (2) for "
        "core_num=2, nranks=2"
    ) in err


def test_inputs_must_match_the_parameters(build: Path, tmp_path: Path) -> None:
    np.savez(tmp_path / "in.npz", inp=np.zeros(3))
    with pytest.raises(UsageError, match=r"missing counts_in, core_num \(parameters: inp,"):
        run_command(str(build), "--ranks", "2", "--inputs", str(tmp_path / "in.npz"))


def test_a_folder_that_is_not_a_build_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="is not a build directory"):
        run_command(str(tmp_path), "--ranks", "2")


def test_inputs_of_the_wrong_shape_are_a_usage_error(build: Path, tmp_path: Path) -> None:
    rows = ROUNDS * NR * TOTAL
    np.savez(
        tmp_path / "in.npz",
        inp=np.zeros((rows // 2, SIZE), dtype=np.float32),
        counts_in=np.zeros(ROUNDS * NR * NR, dtype=np.int32),
        core_num=np.int64(1),
    )
    message = (
        f"input 'inp' of host_orch: expected shape ({rows}, {SIZE}) float32, "
        f"got shape ({rows // 2}, {SIZE}) float32"
    )
    with pytest.raises(UsageError, match=re.escape(message)):
        run_command(str(build), "--ranks", "2", "--inputs", str(tmp_path / "in.npz"))
