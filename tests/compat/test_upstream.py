"""The upstream compatibility check (``compat/``, docs/runtime-compatibility.md).

``test_tree_runs_on_upstream`` runs the whole check, PyPTO's loader on upstream's runtime, when
``PYPTO_UPSTREAM_PYTHON`` and ``PYPTO_UPSTREAM_PYPTO`` name an interpreter with simpler and torch
and a PyPTO checkout; it is skipped otherwise (CI has neither). The other tests need no upstream:
they run the trees and arrays the check hands upstream on pypto-build's own simulator, and test
the runner's metadata reader and comparison under this interpreter.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from pypto_build.tree_layout import TreeLayout

COMPAT = Path(__file__).resolve().parents[2] / "compat"


def _load(name: str) -> ModuleType:
    """A script of ``compat/``, imported under a name of its own."""
    module_name = f"pypto_compat_{name}"
    if module_name in sys.modules:
        return sys.modules[module_name]
    spec = importlib.util.spec_from_file_location(module_name, COMPAT / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return module


driver = _load("check_upstream")
runner = _load("run_upstream")


def _npz(path: Path) -> dict[str, Any]:
    with np.load(path) as archive:
        return {name: archive[name] for name in archive.files}


@pytest.mark.slow
@pytest.mark.parametrize("program", sorted(driver.PROGRAMS))
def test_tree_runs_on_upstream(program: str, tmp_path: Path) -> None:
    missing = [name for name in driver.REQUIRED_ENV if not os.environ.get(name)]
    if missing:
        pytest.skip(
            f"{' and '.join(missing)} not set: the upstream compatibility check needs an "
            "interpreter with simpler and torch and a PyPTO checkout "
            "(docs/runtime-compatibility.md)"
        )
    done = subprocess.run(
        [
            sys.executable,
            str(COMPAT / "check_upstream.py"),
            *("--program", program, "--work-dir", str(tmp_path)),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        verdicts = [line for line in done.stdout.splitlines() if line.startswith("[FAIL]")]
        pytest.fail(
            f"check_upstream.py --program {program} exited {done.returncode}:\n"
            + "\n".join(verdicts)
            + f"\n\nits output:\n{done.stdout}",
            pytrace=False,
        )


@pytest.mark.slow
@pytest.mark.parametrize("program", sorted(driver.PROGRAMS))
def test_prepared_program_passes_on_our_simulator(
    program: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the check hands upstream (the tree, the inputs, the golden) agrees on pypto-build's
    simulator: a case runs and equals its golden, an error case fails. So an upstream failure is
    about upstream compatibility, not the check."""
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "cache"))
    prepared = driver.PROGRAMS[program](tmp_path / program, "a2a3sim")
    assert prepared.tree.name == "a3" and TreeLayout(prepared.tree).next_levels.is_dir()
    assert TreeLayout(prepared.tree).host_module.is_file()
    ours = driver.run_ours(prepared, 20.0)
    expected = _npz(prepared.expected)
    if prepared.fails:
        assert ours.arrays is None, f"{program}: an error case ran"
        return
    assert ours.arrays is not None, f"{program}: {ours.failure}"
    assert ours.against(expected) == "golden"
    # The differential's own verdict, with upstream's outputs standing in as ours.
    passed, text = driver.differential(prepared, ours, ours)
    assert passed, text


def test_unconfigured_driver_names_the_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in driver.REQUIRED_ENV:
        monkeypatch.delenv(name, raising=False)
    done = subprocess.run(
        [sys.executable, str(COMPAT / "check_upstream.py")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == driver.EXIT_FAILED
    assert "PYPTO_UPSTREAM_PYTHON" in done.stderr and "PYPTO_UPSTREAM_PYPTO" in done.stderr


def _meta(**changes: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "schema": 2,
        "params": [
            {"name": "x", "direction": "In", "shape": [4, 2], "dtype": "fp32"},
            {"name": "y", "direction": "Out", "shape": [4], "dtype": "int32"},
        ],
        "num_return_types": 0,
        "platform": "a2a3sim",
        "backend_type": "Ascend910B",
        "distributed_config": {"device_ids": [0, 1], "num_sub_workers": 0},
    }
    meta.update(changes)
    return meta


def _write_meta(tree: Path, meta: dict[str, Any]) -> Path:
    tree.mkdir(parents=True, exist_ok=True)
    TreeLayout(tree).distributed_meta.write_text(json.dumps(meta), encoding="utf-8")
    return tree


def test_runner_reads_distributed_meta(tmp_path: Path) -> None:
    meta = runner.read_meta(_write_meta(tmp_path, _meta()))
    assert [p.describe() for p in meta.params] == ["x In fp32[4, 2]", "y Out int32[4]"]
    assert meta.config.device_ids == [0, 1] and meta.config.runtime == "tensormap_and_ringbuffer"
    program = runner.TreeProgram(tmp_path, "a2a3sim", meta, meta.config)
    params, outputs, returns = program._get_metadata()
    assert [p.name for p in params] == ["x", "y"] and outputs == [1] and returns == []
    assert program.output_dir == tmp_path.resolve() and program.platform == "a2a3sim"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"schema": 1}, "Incompatible distributed_meta.json schema 1 (expected 2)"),
        (
            {"params": [{"name": "x", "direction": "In", "shape": [4], "dtype": "FLOAT32"}]},
            "params[0] is malformed (Unknown DataType string 'FLOAT32'",
        ),
        (
            {"params": [{"name": "x", "direction": "in", "shape": [4], "dtype": "fp32"}]},
            "'direction' must be one of ['In', 'InOut', 'Out'], got 'in'",
        ),
        (
            {"params": [{"name": "x", "direction": "In", "dtype": "fp32"}]},
            "params[0] is malformed ('shape')",
        ),
        ({"backend_type": "a3"}, "'backend_type' must be one of"),
        ({"distributed_config": {"world_size": 4}}, "unknown key(s) ['world_size']"),
        ({"distributed_config": {"device_ids": [0, 0]}}, "must be distinct"),
    ],
)
def test_runner_refuses_metadata_as_pypto_does(
    tmp_path: Path, change: dict[str, Any], message: str
) -> None:
    with pytest.raises(runner.MetaError) as caught:
        runner.read_meta(_write_meta(tmp_path, _meta(**change)))
    assert message in str(caught.value)


def test_runner_names_a_missing_metadata_file(tmp_path: Path) -> None:
    with pytest.raises(runner.MetaError, match=r"distributed_meta\.json not found"):
        runner.read_meta(tmp_path)


def test_runner_checks_arrays_against_the_parameters(tmp_path: Path) -> None:
    params = runner.read_meta(_write_meta(tmp_path, _meta())).params
    x = np.zeros((4, 2), np.float32)
    runner.check_arrays(params, {"x": x}, {"y": np.zeros(4, np.int32)})
    for inputs, expected, message in [
        ({}, {}, "no input for In parameter 'x'"),
        ({"x": x.astype(np.float64)}, {}, "input 'x' is float64[4, 2]"),
        ({"x": x}, {"z": x}, "expected array 'z' is not a parameter"),
    ]:
        with pytest.raises(runner.ArrayError, match=message.replace("[", r"\[")):
            runner.check_arrays(params, inputs, expected)


def test_runner_comparison_reports_the_first_difference() -> None:
    want = np.arange(6, dtype=np.int32).reshape(2, 3)
    assert runner.compare("y", want.copy(), want, rtol=0.0, atol=0.0).matches
    got = want.copy()
    got[1, 2] = 9
    result = runner.compare("y", got, want, rtol=0.0, atol=0.0)
    assert not result.matches
    assert result.detail == (
        "int32[2, 3]: 1 of 6 elements differ; first at [1, 2]: np.int32(9), expected "
        "np.int32(5); max |difference| 4"
    )
    floats = np.ones(3, np.float32)
    near = floats + np.float32(1e-6)
    assert not runner.compare("f", near, floats, rtol=0.0, atol=0.0).matches
    assert runner.compare("f", near, floats, rtol=0.0, atol=1e-5).matches
    wrong_shape = runner.compare("f", floats[:2], floats, rtol=0.0, atol=0.0)
    assert wrong_shape.detail == "is float32[2], expected float32[3]"
