"""``pypto-build run``: parameters from an .npz, outputs to another, a summary or JSON on
stdout, and the documented exit codes."""

from __future__ import annotations

import argparse
import io
import json
import os
import py_compile
import re
import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from _support.goldens import exchange, payload, uniform_counts
from _support.sim_programs import MAX_RECV, ROUNDS, SIZE, BuildProgram, HostRail

from pypto_build import sim
from pypto_build.errors import PyptoUsageError
from pypto_build.plugin.cli_run import register
from pypto_build.sim import BuildTreeError
from pypto_build.tree_layout import HOST_MODULE, KERNEL_CONFIG, RELATIVE, SubBuildLayout, TreeLayout

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
    assert document["kind"] == "host"
    assert all(isinstance(d["seconds"], float) for d in document["dispatches"])
    # The windows, by the names the program gave them: buffers declared in bytes.
    assert document["windows"]["data"] == {"dtype": "uint8", "shape": [NR, TOTAL * SIZE * 4]}
    with np.load(tmp_path / "out.npz") as outputs:
        windows = [f"window/{name}" for name in ("counts", "data", "recv", "signal", "stage")]
        assert sorted(outputs.files) == ["counts_in", "inp", "out", "recv_out", *windows]
        golden = exchange(inputs, uniform_counts(NR))
        got = outputs["out"].reshape(ROUNDS, NR, TOTAL, SIZE)
        np.testing.assert_array_equal(got[0], golden.target)
        # Each rank's data window holds what it received in the last round.
        data = outputs["window/data"].view(np.float32).reshape(NR, TOTAL, SIZE)
        np.testing.assert_array_equal(data, golden.target)
        np.testing.assert_array_equal(outputs["window/recv"].view(np.int32), golden.recv)


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


def test_a_failed_run_still_writes_its_tensors_windows_and_error(
    build: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_inputs(tmp_path / "in.npz", core_num=2)
    out = tmp_path / "out.npz"
    argv = ["--ranks", "2", "--inputs", str(tmp_path / "in.npz"), "--out", str(out), "--json"]
    assert run_command(str(build), *argv) == 1
    document = json.loads(capsys.readouterr().out)
    assert document["status"] == "failed"
    assert [(e["rank"], e["code"]) for e in document["errors"]] == [(0, 5), (1, 5)]
    # The stage dispatches ran; everything after the failed collective was skipped.
    assert [(d["next_level"], d["skipped"]) for d in document["dispatches"] if d["rank"] == 0] == [
        ("stage_orch", False),
        ("builtin.tensor.all_to_all_v__fp32", False),
        ("drain_orch", True),
        ("stage_orch", True),
        ("builtin.tensor.all_to_all_v__fp32", True),
        ("drain_orch", True),
    ]
    assert "stage" in document["windows"] and "out" in document["outputs"]
    with np.load(out) as outputs:
        assert "window/stage" in outputs.files and "out" in outputs.files
        # What the stage dispatches staged is in the windows.
        staged = outputs["window/stage"].view(np.float32).reshape(NR, TOTAL, SIZE)
        np.testing.assert_array_equal(staged, payload(NR, "fp32"))
        errors = outputs["run/error"].tolist()
        assert [error.split(":")[0] for error in errors] == ["rank 0", "rank 1"]
        assert "SIMPLER_ERROR_INVALID_ARGS (5)" in errors[0]


def test_inputs_must_match_the_parameters(build: Path, tmp_path: Path) -> None:
    np.savez(tmp_path / "in.npz", inp=np.zeros(3))
    with pytest.raises(PyptoUsageError, match=r"missing counts_in, core_num \(parameters: inp,"):
        run_command(str(build), "--ranks", "2", "--inputs", str(tmp_path / "in.npz"))


def test_a_folder_that_is_not_a_build_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(PyptoUsageError, match="is not a build directory"):
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
    with pytest.raises(PyptoUsageError, match=re.escape(message)):
        run_command(str(build), "--ranks", "2", "--inputs", str(tmp_path / "in.npz"))


#: Why every refused tree is refused.
CHANGED = "(the tree was modified after it was built; rebuild it)"
STAGE = RELATIVE.sub_build("stage_orch").root.as_posix()


def _change_a_config(tree: Path) -> str:
    config = SubBuildLayout(tree / STAGE).kernel_config
    text = config.read_text()
    config.write_text(text.replace('"aicpu_thread_num": 0', '"aicpu_thread_num": 1'))
    return f"{config}: sha256 differs from manifest.json {CHANGED}"


def _extend_the_host_orchestrator(tree: Path) -> str:
    """Code that would leave a file behind if the simulator executed the module."""
    host = TreeLayout(tree).host_module
    size = host.stat().st_size
    ran = tree.parent.parent / "host-orchestrator-ran"
    host.write_text(host.read_text() + f"open({str(ran)!r}, 'w').close()\n")
    return f"{host}: size {host.stat().st_size} differs from manifest.json's {size} {CHANGED}"


def _remove_a_kernel_source(tree: Path) -> str:
    source = TreeLayout(tree).sub_build("stage_orch").kernel("aiv", "stage_copy")
    source.unlink()
    return f"{source}: missing (manifest.json lists it) {CHANGED}"


def _add_a_file(tree: Path) -> str:
    extra = TreeLayout(tree).sub_build("stage_orch").kernel("aiv", "extra")
    extra.write_text("// not built\n")
    return f"{extra}: not in manifest.json {CHANGED}"


@pytest.mark.parametrize(
    "change",
    [_change_a_config, _extend_the_host_orchestrator, _remove_a_kernel_source, _add_a_file],
)
def test_a_tree_that_differs_from_its_manifest_runs_nothing(
    build: Path, tmp_path: Path, change: Callable[[Path], str]
) -> None:
    copy = tmp_path / "copy" / "out"
    shutil.copytree(build, copy)
    message = change(copy / "a3")
    write_inputs(tmp_path / "in.npz", core_num=1)
    out = tmp_path / "out.npz"
    argv = [str(copy), "--ranks", "2", "--inputs", str(tmp_path / "in.npz"), "--out", str(out)]
    with pytest.raises(PyptoUsageError) as refused:
        run_command(*argv)
    assert str(refused.value) == message
    assert not out.exists()
    assert not (tmp_path / "copy" / "host-orchestrator-ran").exists()


def test_every_difference_is_named_and_the_api_refuses_the_tree_too(
    build: Path, tmp_path: Path
) -> None:
    copy = tmp_path / "out"
    shutil.copytree(build, copy)
    tree = copy / "a3"
    # Sorted by path, as manifest.json lists files.
    problems = [change(tree) for change in (_change_a_config, _add_a_file)]
    with pytest.raises(BuildTreeError) as refused:
        sim.SimProgram.open(copy)
    lines = str(refused.value).splitlines()
    assert lines[0] == f"{tree} differs from its manifest.json {CHANGED}:"
    assert lines[1:] == [f"  {problem.removesuffix(f' {CHANGED}')}" for problem in problems]


def test_a_copied_tree_runs_with_the_bytecode_an_installer_adds(
    build: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    copy = tmp_path / "installed" / "a3"
    shutil.copytree(build / "a3", copy)
    for module in (HOST_MODULE, f"{STAGE}/{KERNEL_CONFIG}"):
        py_compile.compile(str(copy / module), doraise=True)
    assert len(list(copy.rglob("*.pyc"))) == 2
    write_inputs(tmp_path / "in.npz", core_num=1)
    assert run_command(str(copy), "--ranks", "2", "--inputs", str(tmp_path / "in.npz")) == 0
    assert "host_orch (a3) ran on 2 simulated ranks" in capsys.readouterr().out


def test_a_run_prints_a_table_per_rank_and_of_the_outputs_and_compares_them(
    build: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    inputs = write_inputs(tmp_path / "in.npz", core_num=1)
    out = tmp_path / "out.npz"
    argv = ["--ranks", "2", "--inputs", str(tmp_path / "in.npz"), "--out", str(out), "-v"]
    assert run_command(str(build), *argv) == 0
    captured = capsys.readouterr()
    lines = captured.out.splitlines()
    assert lines[0] == "host_orch (a3) ran on 2 simulated ranks: 12 dispatches, 12 kernel tasks"
    assert lines[1].split() == ["rank", "dispatches", "tasks", "time", "failed"]
    for rank, line in zip((0, 1), lines[2:4], strict=True):
        assert re.fullmatch(rf"  +{rank}  +6  +6  +\d+\.\d\d ms  +-", line), line
    assert lines[4].split() == ["output", "shape", "dtype"]
    assert lines[5].split() == ["counts_in", f"[{ROUNDS * NR * NR}]", "int32"]
    assert f"out [{ROUNDS * NR * TOTAL}, {SIZE}] float32".split() in [
        line.split() for line in lines
    ]
    # -v: each dispatch, and the time of opening and of the run.
    assert re.search(
        r"pypto-build: rank 0 dispatch 0 stage_orch: \d+ tasks, code 0 \(", captured.err
    )
    assert "pypto-build: ran host_orch on 2 simulated ranks (" in captured.err
    # The outputs as written, expected: every one equal.
    assert run_command(str(build), *argv[:4], "--expected", str(out)) == 0
    shown = capsys.readouterr().out
    assert re.search(r"  out  +\[\d+, \d+\]  +float32  +equal", shown)
    # One value changed: a mismatch, exit 1, naming the output and the difference.
    with np.load(out) as arrays:
        expected = {name: arrays[name] for name in arrays.files}
    expected["out"] = expected["out"].copy()
    expected["out"][0, 0] += 0.5
    expected["recv_out"] = expected["recv_out"].astype(np.int64)
    np.savez(tmp_path / "expected.npz", **expected)
    status = run_command(str(build), *argv[:4], "--expected", str(tmp_path / "expected.npz"))
    assert status == 1
    captured = capsys.readouterr()
    assert "differs: max abs diff 0.5" in captured.out
    assert "expected shape [" in captured.out and "int64, got shape [" in captured.out
    assert captured.err == (
        f"pypto-build: error: outputs differ from {tmp_path / 'expected.npz'}: out, recv_out\n"
    )
    np.savez(tmp_path / "json.npz", out=expected["out"])
    assert (
        run_command(str(build), *argv[:4], "--expected", str(tmp_path / "json.npz"), "--json") == 1
    )
    document = json.loads(capsys.readouterr().out)
    assert document["status"] == "mismatch"
    assert document["expected"] == {"out": {"equal": False, "max_abs_diff": 0.5, "problem": None}}
    del inputs


def test_an_expected_name_that_is_no_output_is_a_usage_error(build: Path, tmp_path: Path) -> None:
    write_inputs(tmp_path / "in.npz", core_num=1)
    np.savez(tmp_path / "expected.npz", result=np.zeros(2))
    with pytest.raises(PyptoUsageError, match=r"expected.npz: result: not an output of the run \("):
        run_command(
            str(build),
            "--ranks",
            "2",
            "--inputs",
            str(tmp_path / "in.npz"),
            "--expected",
            str(tmp_path / "expected.npz"),
        )


def test_every_input_problem_is_reported_at_once(build: Path, tmp_path: Path) -> None:
    np.savez(tmp_path / "in.npz", inp=np.zeros(3), core_num=np.float64(1.5), extra=np.zeros(1))
    with pytest.raises(PyptoUsageError) as caught:
        run_command(str(build), "--ranks", "2", "--inputs", str(tmp_path / "in.npz"))
    problems = str(caught.value).splitlines()
    assert [problem.split(":")[0] for problem in problems] == [
        "inputs of host_orch",
        "input 'inp' of host_orch",
        "scalar 'core_num' of host_orch",
    ]
    assert "missing counts_in; unknown extra" in problems[0]


@pytest.mark.parametrize(
    ("damage", "reason"),
    [
        (lambda data: b"PK\x03\x04 not a zip archive at all", "File is not a zip file"),
        (lambda data: data[: len(data) // 2], "File is not a zip file"),
        (lambda data: _npy(), "not an .npz archive of named arrays"),
    ],
    ids=["zip-signature-no-zip", "truncated", "an-npy-file"],
)
def test_inputs_that_are_no_npz_archive_are_a_usage_error(
    build: Path, tmp_path: Path, damage: Callable[[bytes], bytes], reason: str
) -> None:
    inputs = tmp_path / "in.npz"
    write_inputs(inputs, core_num=1)
    inputs.write_bytes(damage(inputs.read_bytes()))
    with pytest.raises(PyptoUsageError, match=f"^{inputs}: cannot read the inputs: .*{reason}"):
        run_command(str(build), "--ranks", "2", "--inputs", str(inputs))


def _npy() -> bytes:
    stream = io.BytesIO()
    np.save(stream, np.zeros(3))
    return stream.getvalue()


def test_inputs_that_are_a_fifo_are_refused_not_waited_for(build: Path, tmp_path: Path) -> None:
    fifo = tmp_path / "in.npz"
    os.mkfifo(fifo)
    with pytest.raises(PyptoUsageError, match=r"cannot read the inputs: .*not a regular file"):
        run_command(str(build), "--ranks", "2", "--inputs", str(fifo))
