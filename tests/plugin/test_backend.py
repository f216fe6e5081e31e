"""What a model package gets when it leaves things out: the hook table (``pypto_build.backend``
turns the hook on), ``package`` (the wheel's import package + ``/_kernels``) and ``chips``
(every chip the programs' ops support)."""

from __future__ import annotations

import shutil
import zipfile
from pathlib import Path

import pytest
from _support.hatch_projects import (
    SAMPLES,
    build_wheel,
    copy_sample,
    edit,
    hook_environment,
    use_backend,
)
from hatchling.builders.wheel import WheelBuilder

from pypto_build.backend import HookedWheelBuilder
from pypto_build.chip_build.sim.program import BuildTreeError, open_chip_build
from pypto_build.chip_build.subbuild import lower_for_programs_default_chips
from pypto_build.lowering.diagnostics import ProgramError
from pypto_build.lowering.lower import lower_path
from pypto_build.plugin.config_settings import given
from pypto_build.plugin.hatch import PyptoBuildError, default_package
from pypto_build.plugin.settings import SettingsError

MC2_PROGRAM = SAMPLES / "moe_mc2" / "src" / "moe_mc2" / "pipelines.py"


def _hooks(project: Path) -> dict[str, object]:
    return dict(HookedWheelBuilder(str(project)).config.hook_config)


def test_the_backend_turns_the_hook_on_without_its_table(tmp_path: Path) -> None:
    project = copy_sample(tmp_path / "moe_a2a")
    use_backend(project)
    assert _hooks(project) == {"pypto": {}}
    # hatchling's own backend, given the same project, runs no hook at all.
    assert dict(WheelBuilder(str(project)).config.hook_config) == {}


def test_the_backend_keeps_a_hook_table_the_project_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = copy_sample(tmp_path / "moe_a2a")
    assert _hooks(project) == {"pypto": {}}  # the sample's empty table: one hook, not two
    edit(
        project / "pyproject.toml",
        "[tool.hatch.build.targets.wheel.hooks.pypto]\n",
        "[tool.hatch.build.targets.wheel.hooks.pypto]\nenable-by-default = false\n",
    )
    assert _hooks(project) == {}
    monkeypatch.setenv("HATCH_BUILD_NO_HOOKS", "true")
    use_backend(copy_sample(tmp_path / "other"))
    assert _hooks(tmp_path / "other") == {}


@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not on PATH")
def test_a_package_naming_only_its_programs_builds_like_one_naming_everything(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No hook table (the backend), no ``package``, no ``chips``: the same wheel, byte for
    byte, as hatchling's backend with the table, ``package = "moe_a2a/_kernels"`` and every
    chip the sample's ops support."""
    hook_environment(monkeypatch, tmp_path / "cache", tmp_path / "tmp")
    explicit = copy_sample(tmp_path / "explicit" / "moe_a2a", chips=("a2", "a3", "a5"))
    bare = copy_sample(tmp_path / "bare" / "moe_a2a")
    use_backend(bare)
    edit(bare / "pyproject.toml", 'chips = ["a3", "a5"]\n', "")
    edit(bare / "pyproject.toml", 'package = "moe_a2a/_kernels"\n', "")
    expected = build_wheel(explicit, tmp_path / "dist-explicit")
    built = build_wheel(bare, tmp_path / "dist-bare", builder=HookedWheelBuilder)
    with zipfile.ZipFile(built) as wheel:
        chips = {n.split("/")[2] for n in wheel.namelist() if n.startswith("moe_a2a/_kernels/")}
    assert chips == {"a2", "a3", "a5"}
    assert built.read_bytes() == expected.read_bytes()


def test_a_wheel_built_without_the_hook_says_how_to_build_its_kernels(tmp_path: Path) -> None:
    with pytest.raises(BuildTreeError, match=r'set build-backend = "pypto_build.backend"'):
        open_chip_build(tmp_path / "site" / "moe_a2a" / "_kernels", "a3")


def _project(root: Path, packages: list[str], name: str = "my-model") -> Path:
    for package in packages:
        (root / package).mkdir(parents=True)
        (root / package / "__init__.py").write_text("")
    listed = ", ".join(f'"{p}"' for p in packages)
    wheel = f"[tool.hatch.build.targets.wheel]\npackages = [{listed}]\n" if packages else ""
    (root / "pyproject.toml").write_text(
        f'[project]\nname = "{name}"\nversion = "0.1.0"\n{wheel}[tool.pypto]\nprograms = ["p.py"]\n'
    )
    return root


@pytest.mark.parametrize(
    ("packages", "expected"),
    [
        (["src/my_model"], "my_model/_kernels"),
        (["my_model"], "my_model/_kernels"),
        (["src/helpers", "src/my_model"], "my_model/_kernels"),
        ([], "my_model/_kernels"),  # hatchling's default selection finds src/my_model
    ],
    ids=["src-layout", "flat-layout", "named-like-the-project", "default-selection"],
)
def test_package_defaults_to_the_wheels_import_package(
    tmp_path: Path, packages: list[str], expected: str
) -> None:
    project = _project(tmp_path, packages)
    if not packages:
        (project / "src" / "my_model").mkdir(parents=True)
        (project / "src" / "my_model" / "__init__.py").write_text("")
    builder = WheelBuilder(str(project))
    assert default_package(builder.config, builder.metadata.core.name) == expected


def test_package_is_asked_for_when_the_import_package_cannot_be_told(tmp_path: Path) -> None:
    project = _project(tmp_path, ["src/one", "src/two"])
    builder = WheelBuilder(str(project))
    with pytest.raises(SettingsError) as caught:
        default_package(builder.config, builder.metadata.core.name)
    assert str(caught.value) == (
        "tool.pypto: missing key 'package'; the wheel's import package cannot be told "
        '(packages: one, two), so say where the kernels go, such as package = "my_model/_kernels"'
    )


def test_chips_default_to_those_every_op_supports() -> None:
    def chips(*paths: Path) -> tuple[str, ...]:
        return lower_for_programs_default_chips(paths)[0]

    assert chips(MC2_PROGRAM) == ("a3",)
    a2a = SAMPLES / "moe_a2a" / "src" / "moe_a2a" / "pipelines.py"
    assert chips(a2a) == ("a2", "a3", "a5")
    assert chips(a2a, MC2_PROGRAM) == ("a3",)


def test_an_explicit_chip_an_op_cannot_serve_is_an_error_naming_the_op() -> None:
    with pytest.raises(ProgramError) as caught:
        lower_path(MC2_PROGRAM, ("a2",))
    message = str(caught.value.render())
    assert "pld.tensor.batch_matmul_reduce_scatter_all_to_all requires chip a3" in message
    assert "the build targets a2" in message


def test_a_user_error_is_a_system_exit_carrying_the_message_alone() -> None:
    """What lets every front end's backend process print the message without a traceback."""
    error = PyptoBuildError("tool.pypto.chips[0]: unknown chip 'a9'")
    assert isinstance(error, SystemExit)
    assert error.code == str(error) == "tool.pypto.chips[0]: unknown chip 'a9'"


def test_config_settings_reach_the_hook_through_the_backend(tmp_path: Path) -> None:
    """``pip wheel -C chips=a9``: the backend hands the hook what hatchling would drop."""
    project = copy_sample(tmp_path / "moe_a2a")
    use_backend(project)
    with given({"chips": "a9"}), pytest.raises(PyptoBuildError) as caught:
        build_wheel(project, tmp_path / "dist", builder=HookedWheelBuilder)
    assert str(caught.value) == "-C chips[0]: unknown chip 'a9'; valid chips: a2, a3, a5"
