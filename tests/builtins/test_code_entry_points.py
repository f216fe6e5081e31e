"""An op with its own typing from another distribution: its contract and launch-width rule are
code registered through the ``pypto_build.builtins`` entry-point group, beside its package.

acme-collectives' ``ring_shift`` (``tests/third_party/acme-collectives``) is installed here as a
distribution the real ``importlib.metadata`` finds, with the entry points of its
``pyproject.toml``; pypto-build then lowers and renders a program calling it in a subprocess,
with nothing of ``pypto_build/`` edited. (``tests/third_party`` installs the same distribution
with pip.)
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest
from _support.builtin_distributions import InstallDistribution, installer

from pypto_build.builtins import BuiltinRegistry, BuiltinRegistryError
from pypto_build.lowering.builtin_registry import package_op

THIRD_PARTY = Path(__file__).resolve().parents[1] / "third_party"
DISTRIBUTION = THIRD_PARTY / "acme-collectives"
PROGRAM = THIRD_PARTY / "programs" / "ring_shift.py"
ENTRY_POINTS: dict[str, str] = tomllib.loads(
    (DISTRIBUTION / "pyproject.toml").read_text(encoding="utf-8")
)["project"]["entry-points"]["pypto_build.builtins"]


@pytest.fixture
def install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[InstallDistribution]:
    steps = installer(tmp_path / "site", monkeypatch)
    yield next(steps)
    next(steps, None)


@pytest.fixture
def acme(install: InstallDistribution) -> Path:
    """acme-collectives, installed with its entry points; its site folder."""
    site = install(ENTRY_POINTS, "acme-collectives")
    shutil.copytree(DISTRIBUTION / "acme_collectives", site / "acme_collectives")
    return site


def pypto_build(site: Path, *argv: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    path = os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")]))
    return subprocess.run(
        [sys.executable, "-m", "pypto_build", *map(str, argv)],
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": path},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_contract_types_the_op_and_the_rule_sets_its_launch_width(
    acme: Path, tmp_path: Path
) -> None:
    result = pypto_build(acme, "lower", PROGRAM, "--after", "all", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    # core_num=8 on 4 ranks: acme_one_per_peer launches 4 blocks; shift=1 launches one.
    assert (
        "data = self.__builtin_ring_shift__fp32(rows, data, signal, data__ctx, signal__ctx, "
        "core_num=4, sync_start=True, " in result.stdout
    )
    assert (
        "again = self.__builtin_ring_shift__fp32__2(data, again, signal, again__ctx, "
        'signal__ctx, arg_directions=("In", "InOut", "InOut", None, None), ' in result.stdout
    )
    # The contract's configuration is a template variable: one kernel per shift.
    for shift in (2, 1):
        assert f'"builtin_template_vars": "dtype_cpp=float,shift={shift}"' in result.stdout


def test_the_kernel_is_rendered_for_the_contracts_variant(acme: Path, tmp_path: Path) -> None:
    result = pypto_build(acme, "render", PROGRAM, "--out", "out", "--chip", "a3", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    kernels = tmp_path / "out" / "a3" / "next_levels" / "chip_ring" / "kernels" / "aiv"
    for name, shift in (("__builtin_ring_shift__fp32", 2), ("__builtin_ring_shift__fp32__2", 1)):
        text = (kernels / f"{name}.cpp").read_text(encoding="utf-8")
        assert text.startswith("// Generated from acme.collectives.ring_shift.\n")
        assert f"constexpr int64_t kShift = {shift};\n" in text


def test_the_contracts_own_diagnostics(acme: Path, tmp_path: Path) -> None:
    program = tmp_path / PROGRAM.name
    program.write_text(PROGRAM.read_text().replace("shift=1)", "shift=4)"), encoding="utf-8")
    result = pypto_build(acme, "lower", program.name, cwd=tmp_path)
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr.startswith(
        f"{program.name}:28:66: error: pld.tensor.ring_shift shift must be a compile-time "
        "integer in [1, 4) (NR, from the signal) [frontend]\n"
    )


def test_ours_never_load_another_distributions_code(install: InstallDistribution) -> None:
    """Only a manifest naming a contract or rule that is not ours loads the code entry points."""
    install({"broken": "acme_absent.module:CONTRACT"})
    registry = BuiltinRegistry.discover()
    assert [entry_point.name for entry_point in registry.code] == ["broken"]
    assert registry.broken == ()
    for package in registry.packages():
        package_op(package, registry)


@pytest.mark.parametrize(
    ("entry_points", "message"),
    [
        pytest.param(
            {"acme_ring_shift": "acme_collectives.absent:CONTRACT"},
            "entry point acme_ring_shift = 'acme_collectives.absent:CONTRACT' of distribution "
            "acme-collectives (pypto_build.builtins): cannot load it: "
            "ModuleNotFoundError(\"No module named 'acme_collectives.absent'\")",
            id="cannot-load",
        ),
        pytest.param(
            {"acme_ring_shift": "acme_collectives.ring_code:SHIFT"},
            "entry point acme_ring_shift = 'acme_collectives.ring_code:SHIFT' of distribution "
            "acme-collectives (pypto_build.builtins): must name an op contract "
            "(pypto_build.lowering.builtin_ops.Contract) or a launch-width rule "
            "(pypto_build.lowering.launch_width.LaunchWidthRule), got str",
            id="not-code",
        ),
        pytest.param(
            {"ring": "acme_collectives.ring_code:CONTRACT"},
            "entry point ring = 'acme_collectives.ring_code:CONTRACT' of distribution "
            "acme-collectives (pypto_build.builtins): names the op contract 'acme_ring_shift'; "
            "the entry point must be named after it",
            id="misnamed",
        ),
        pytest.param(
            {"exact": "acme_collectives.ring_code:EXACT_AGAIN"},
            "entry point exact = 'acme_collectives.ring_code:EXACT_AGAIN' of distribution "
            "acme-collectives (pypto_build.builtins): the launch-width rule 'exact' is "
            "registered twice",
            id="ours-again",
        ),
    ],
)
def test_broken_code_is_refused_naming_its_entry_point(
    install: InstallDistribution, entry_points: dict[str, str], message: str
) -> None:
    site = install(
        {"ring_shift": "acme_collectives.ring_shift", **entry_points}, "acme-collectives"
    )
    shutil.copytree(DISTRIBUTION / "acme_collectives", site / "acme_collectives")
    (site / "acme_collectives" / "ring_code.py").write_text(
        (DISTRIBUTION / "acme_collectives" / "ring_code.py").read_text()
        + "\nfrom pypto_build.lowering.launch_width import EXACT as EXACT_AGAIN  # noqa: E402\n",
        encoding="utf-8",
    )
    registry = BuiltinRegistry.discover()
    [package] = [p for p in registry.packages() if p.public_op == "pld.tensor.ring_shift"]
    with pytest.raises(BuiltinRegistryError) as error:
        package_op(package, registry)
    assert str(error.value) == message
