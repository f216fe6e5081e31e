"""The hatchling build hook, through hatchling's real builders: what a wheel of the sample package
ships, its tag, sdists, editable installs, and how failures reach the user."""

from __future__ import annotations

import importlib.metadata
import json
import shutil
import subprocess
import sys
import tarfile
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from _support.hatch_projects import build_sdist, build_wheel, copy_sample, edit, hook_environment
from hatchling.builders.wheel import WheelBuilder
from hatchling.plugin.manager import PluginManager
from packaging.tags import sys_tags

from pypto_build.chip_build.kernel_config_reader import read_kernel_config
from pypto_build.chip_build.toolchains import SimToolchain
from pypto_build.chip_build.toolchains.wheel_platform import host_platform_tag
from pypto_build.files import walk_files
from pypto_build.plugin.hatch import (
    PyptoBuildError,
    PyptoBuildHook,
    source_folder,
    wheel_files,
    wheel_tag,
)
from pypto_build.plugin.settings import SettingsError
from pypto_build.tree_layout import HOST_MODULE, KERNEL_CONFIG, MANIFEST, RELATIVE, TreeLayout

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not on PATH")

KERNELS = "moe_a2a/_kernels"
CHIP_PIPELINE = RELATIVE.sub_build("chip_pipeline").root.as_posix()


@dataclass(frozen=True)
class SampleWheel:
    """The sample package's wheel, built once for the module."""

    path: Path
    project: Path
    #: Every file of the project before the build.
    project_files: tuple[Path, ...]
    #: The temporary directory the build ran with.
    temp: Path
    #: Folders no shipped file may name.
    build_paths: tuple[Path, ...]

    def members(self) -> list[str]:
        with zipfile.ZipFile(self.path) as wheel:
            return wheel.namelist()

    def read(self, member: str) -> bytes:
        with zipfile.ZipFile(self.path) as wheel:
            return wheel.read(member)


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One compile cache for the module: later builds of the sample hit it."""
    return tmp_path_factory.mktemp("cache")


@pytest.fixture(scope="module")
def sample_wheel(tmp_path_factory: pytest.TempPathFactory, cache: Path) -> Iterator[SampleWheel]:
    root = tmp_path_factory.mktemp("sample")
    project = copy_sample(root / "moe_a2a")
    before = tuple(walk_files(project))
    temp = root / "tmp"
    with pytest.MonkeyPatch.context() as patch:
        hook_environment(patch, cache, temp)
        wheel = build_wheel(project, root / "dist")
    yield SampleWheel(wheel, project, before, temp, (root, cache, Path.home()))


@pytest.fixture(autouse=True)
def environment(monkeypatch: pytest.MonkeyPatch, cache: Path, tmp_path: Path) -> None:
    hook_environment(monkeypatch, cache, tmp_path / "tmp")


def test_hatchling_finds_the_hook_through_its_entry_point() -> None:
    (entry,) = importlib.metadata.entry_points(group="hatch", name="pypto")
    assert entry.value == "pypto_build.plugin.hooks"
    assert PluginManager().build_hook.get("pypto") is PyptoBuildHook


def test_the_wheel_ships_every_chip_tree_with_its_manifest(sample_wheel: SampleWheel) -> None:
    members = sample_wheel.members()
    assert {"moe_a2a/__init__.py", "moe_a2a/pipelines.py", "moe_a2a/demo.py"} <= set(members)
    kernels = [member for member in members if member.startswith(f"{KERNELS}/")]
    for chip in ("a3", "a5"):
        prefix = f"{KERNELS}/{chip}/"
        manifest = json.loads(sample_wheel.read(f"{prefix}{MANIFEST}"))
        assert manifest["toolchain"]["name"] == "sim"
        listed = {prefix + entry["path"] for entry in manifest["files"]}
        # The manifest lists every other file of the chip tree; the wheel holds exactly those.
        assert {m for m in kernels if m.startswith(prefix)} == listed | {f"{prefix}{MANIFEST}"}
        config = f"{prefix}{CHIP_PIPELINE}/{KERNEL_CONFIG}"
        assert config in listed
        assert f"{prefix}{HOST_MODULE}" in listed
        assert f"{prefix}{CHIP_PIPELINE}/sim/orchestration/chip_pipeline.so" in listed
        kernels_listed = read_kernel_config(sample_wheel.read(config).decode()).kernels
        assert {kernel.name for kernel in kernels_listed} == {
            "stage_step",
            "consume_step",
            "__builtin_all_to_all_v__fp32",
        }
        for kernel in kernels_listed:
            assert kernel.binary == f"sim/kernels/aiv/{kernel.name}.so"
            assert f"{prefix}{CHIP_PIPELINE}/{kernel.binary}" in listed
    assert not [member for member in members if ".pypto-build-logs" in member]


def test_the_wheel_is_tagged_for_the_host_platform(sample_wheel: SampleWheel) -> None:
    tag = f"py3-none-{host_platform_tag()}"
    assert sample_wheel.path.name == f"moe_a2a-0.1.0-{tag}.whl"
    wheel_info = sample_wheel.read("moe_a2a-0.1.0.dist-info/WHEEL").decode().splitlines()
    assert "Root-Is-Purelib: false" in wheel_info
    assert f"Tag: {tag}" in wheel_info
    assert host_platform_tag() in {t.platform for t in sys_tags()}


def test_sim_kernels_are_tied_to_the_host() -> None:
    # Device kernels are tied to no platform: tests/chip_build/test_toolchain_cann.py.
    sim = SimToolchain.discover()
    assert wheel_tag(sim) == f"py3-none-{host_platform_tag()}"
    # platform-tag: any platform this host installs for sim kernels.
    manylinux = next(t.platform for t in sys_tags() if t.platform.startswith("manylinux_"))
    assert wheel_tag(sim, manylinux) == f"py3-none-{manylinux}"
    for foreign in ("any", "win_amd64"):
        with pytest.raises(SettingsError, match=rf"^tool\.pypto\.platform-tag: '{foreign}' is"):
            wheel_tag(sim, foreign)


def test_no_shipped_file_names_a_build_path(sample_wheel: SampleWheel) -> None:
    needles = [str(path).encode() for path in sample_wheel.build_paths]
    needles.append(b"pypto-build-wheel-")
    leaks = [
        (member, needle)
        for member in sample_wheel.members()
        for needle in needles
        if needle in sample_wheel.read(member)
    ]
    assert leaks == []


def test_the_build_leaves_no_trace_in_the_project_or_the_temporary_directory(
    sample_wheel: SampleWheel,
) -> None:
    assert tuple(walk_files(sample_wheel.project)) == sample_wheel.project_files
    assert [p.name for p in sample_wheel.temp.iterdir() if p.name.startswith("pypto-")] == []


def test_forced_files_are_listed_in_wheel_order(tmp_path: Path) -> None:
    for path in ("a5/z.so", "a5/a/b.cpp", "a3/manifest.json", "a3/next/k.py", ".logs/a3.log"):
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(path, encoding="utf-8")
    shipped = wheel_files(tmp_path, ["a5", "a3"], "pkg/_kernels")
    assert list(shipped.values()) == [
        "pkg/_kernels/a3/manifest.json",
        "pkg/_kernels/a3/next/k.py",
        "pkg/_kernels/a5/a/b.cpp",
        "pkg/_kernels/a5/z.so",
    ]
    assert all(
        shipped[source].endswith(Path(source).relative_to(tmp_path).as_posix())
        for source in shipped
    )


def test_an_sdist_ships_sources_only_even_with_the_hook_on_for_every_target(
    tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = copy_sample(tmp_path / "moe_a2a", chips=("a3",))
    edit(
        project / "pyproject.toml",
        "[tool.hatch.build.targets.wheel.hooks.pypto]",
        "[tool.hatch.build.hooks.pypto]",
    )
    unused_cache = tmp_path / "unused-cache"
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(unused_cache))
    sdist = build_sdist(project, tmp_path / "dist")
    assert not unused_cache.exists()  # nothing was compiled
    with tarfile.open(sdist) as archive:
        names = archive.getnames()
    assert "moe_a2a-0.1.0/src/moe_a2a/pipelines.py" in names
    assert "moe_a2a-0.1.0/src/moe_a2a/kernels/stage_step.cpp" in names
    assert not [name for name in names if "_kernels" in name or name.endswith(".so")]
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(cache))
    with zipfile.ZipFile(build_wheel(project, tmp_path / "wheel")) as wheel:
        assert f"{KERNELS}/a3/{MANIFEST}" in wheel.namelist()


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        (
            'chips = ["a3", "a5"]',
            'chips = ["a3", "a9"]',
            "tool.pypto.chips[1]: unknown chip 'a9'; valid chips: a2, a3, a5",
        ),
        (
            'programs = ["src/moe_a2a/pipelines.py"]',
            'programs = ["src/moe_a2a/pipeline.py"]',
            "tool.pypto.programs[0]: src/moe_a2a/pipeline.py: no such file",
        ),
        (
            "[tool.hatch.build.targets.wheel.hooks.pypto]\n",
            '[tool.hatch.build.targets.wheel.hooks.pypto]\nchips = ["a3"]\n',
            "tool.hatch.build.targets.wheel.hooks.pypto: unknown key 'chips'; this table only "
            "turns the hook on, pypto-build reads its settings from [tool.pypto]",
        ),
    ],
    ids=["unknown-chip", "missing-program", "key-in-hook-table"],
)
def test_a_settings_error_names_the_key_path(
    tmp_path: Path, old: str, new: str, message: str
) -> None:
    project = copy_sample(tmp_path / "moe_a2a")
    edit(project / "pyproject.toml", old, new)
    with pytest.raises(PyptoBuildError) as caught:
        build_wheel(project, tmp_path / "dist")
    assert str(caught.value).startswith(message)


def test_an_environment_override_error_names_the_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYPTO_CHIPS", "a3,x1")
    with pytest.raises(PyptoBuildError, match=r"^PYPTO_CHIPS\[1\]: unknown chip 'x1'"):
        build_wheel(copy_sample(tmp_path / "moe_a2a"), tmp_path / "dist")


def test_the_environment_overrides_the_chips(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYPTO_CHIPS", "a5")
    with zipfile.ZipFile(build_wheel(copy_sample(tmp_path / "moe_a2a"), tmp_path / "dist")) as w:
        chips = {name.split("/")[2] for name in w.namelist() if name.startswith(f"{KERNELS}/")}
    assert chips == {"a5"}


def test_source_date_epoch_dates_every_member(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")  # 2023-11-14 22:13:20 UTC
    project = copy_sample(tmp_path / "moe_a2a", chips=("a3",))
    with zipfile.ZipFile(build_wheel(project, tmp_path / "dist")) as wheel:
        stamps = {info.date_time for info in wheel.infolist()}
    assert stamps == {(2023, 11, 14, 22, 13, 20)}


def test_pip_shows_a_program_error_as_a_compiler_diagnostic(tmp_path: Path) -> None:
    project = copy_sample(tmp_path / "moe_a2a", chips=("a3",))
    program = project / "src" / "moe_a2a" / "pipelines.py"
    edit(program, "self.stage_step(tokens", "self.stage_stpe(tokens")
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    result = subprocess.run(
        [
            *pip,
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(tmp_path / "dist"),
            str(project),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode != 0
    line = next(i for i, text in enumerate(program.read_text().splitlines(), 1) if "stpe" in text)
    diagnostic = (
        f"{program}:{line}:30: error: program 'MoeDispatch' has no function 'stage_stpe' [frontend]"
    )
    output = result.stdout + result.stderr
    assert diagnostic in output
    # The message alone: no traceback, no exception class above it.
    assert "Traceback" not in output
    assert "PyptoBuildError" not in output
    assert "        stage, send_counts = self.stage_stpe(" in output
    assert not (tmp_path / "dist").exists() or not list((tmp_path / "dist").iterdir())


def test_a_failed_compile_keeps_the_log_the_error_names(tmp_path: Path) -> None:
    project = copy_sample(tmp_path / "moe_a2a", chips=("a3",))
    with (project / "src" / "moe_a2a" / "kernels" / "stage_step.cpp").open("a") as source:
        source.write("\nthis is not C++;\n")
    with pytest.raises(PyptoBuildError) as caught:
        build_wheel(project, tmp_path / "dist")
    message = str(caught.value)
    assert message.startswith("1 of 4 compiles failed for chip a3:")
    # The compiler's error names the user's kernel file and line, not the copy in the tree.
    kernel = project / "src" / "moe_a2a" / "kernels" / "stage_step.cpp"
    line = len(kernel.read_text(encoding="utf-8").splitlines())
    assert f"{kernel}:{line}:1: error: " in message
    assert f"compiling {kernel} (built as {CHIP_PIPELINE}/kernels/aiv/stage_step.cpp)" in message
    log = Path(message.rsplit("full log: ", 1)[1].strip())
    assert log.name == "a3.log"
    assert log.is_relative_to(tmp_path / "tmp")
    assert "== next_levels/chip_pipeline/kernels/aiv/stage_step.cpp: FAILED" in log.read_text()


def test_an_editable_install_builds_the_kernels_in_place(tmp_path: Path) -> None:
    project = copy_sample(tmp_path / "moe_a2a", chips=("a3",))
    editable = build_wheel(project, tmp_path / "editable", "editable")
    in_place = project / "src" / "moe_a2a" / "_kernels"
    assert TreeLayout(in_place / "a3").manifest.is_file()
    assert (in_place / "a3" / CHIP_PIPELINE / "sim" / "kernels" / "aiv" / "stage_step.so").is_file()
    with zipfile.ZipFile(editable) as wheel:
        members = wheel.namelist()
    assert "_moe_a2a.pth" in members
    assert [member for member in members if "_kernels" in member] == []

    # What a killed editable build leaves beside the folder (its staging folder, its lock) ...
    debris = project / "src" / "moe_a2a" / "._kernels.k1ll3d.new"
    (debris / "a3").mkdir(parents=True)
    TreeLayout(debris / "a3").manifest.write_text("{}", encoding="utf-8")
    (project / "src" / "moe_a2a" / "._kernels.lock").write_text("", encoding="utf-8")
    # ... and the in-place kernels stay out of a regular wheel (the sample's .gitignore).
    with zipfile.ZipFile(build_wheel(project, tmp_path / "dist")) as wheel:
        members = wheel.namelist()
        shipped = [name for name in members if name.startswith(f"{KERNELS}/")]
    assert shipped and not [name for name in shipped if ".pypto-build-logs" in name]
    assert [name for name in members if "._kernels" in name] == []
    assert not debris.exists()
    # ... and without it the hook refuses to ship them alongside its own build.
    (project / ".gitignore").unlink()
    with pytest.raises(PyptoBuildError, match=r"^src/moe_a2a/_kernels/ holds kernels an editable"):
        build_wheel(project, tmp_path / "dist")


def test_an_editable_install_lists_its_kernels_in_gitignore_and_hatch_clean_removes_them(
    tmp_path: Path,
) -> None:
    project = copy_sample(tmp_path / "moe_a2a", chips=("a3",))
    (project / ".gitignore").unlink()
    build_wheel(project, tmp_path / "editable", "editable")
    in_place = project / "src" / "moe_a2a" / "_kernels"
    assert TreeLayout(in_place / "a3").manifest.is_file()
    assert "\n/src/moe_a2a/_kernels/\n" in (project / ".gitignore").read_text(encoding="utf-8")
    # A standard wheel then ships its own build only.
    with zipfile.ZipFile(build_wheel(project, tmp_path / "dist")) as wheel:
        assert f"{KERNELS}/a3/{MANIFEST}" in wheel.namelist()
    # hatch clean (hatchling's clean-only build) removes the in-place kernels.
    assert (
        list(WheelBuilder(str(project)).build(directory=str(tmp_path / "d"), clean_only=True)) == []
    )
    assert not in_place.exists()


def test_an_editable_install_without_dev_mode_dirs_or_editables_says_what_to_add(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = copy_sample(tmp_path / "moe_a2a", chips=("a3",))
    edit(project / "pyproject.toml", 'dev-mode-dirs = ["src"]\n', "")
    monkeypatch.setitem(sys.modules, "editables", None)  # not installed
    with pytest.raises(PyptoBuildError) as caught:
        build_wheel(project, tmp_path / "editable", "editable")
    assert str(caught.value).startswith(
        "tool.hatch.build.targets.wheel: an editable install needs dev-mode-dirs (or the "
        'editables package, which this build environment lacks); add dev-mode-dirs = ["src"]'
    )
    assert not (project / "src" / "moe_a2a" / "_kernels").exists()  # nothing was built


def test_the_source_folder_of_a_package_path_undoes_the_sources_rewrite(tmp_path: Path) -> None:
    (tmp_path / "src" / "moe").mkdir(parents=True)
    (tmp_path / "flat").mkdir()
    assert source_folder(tmp_path, {"src/": ""}, "moe/_kernels") == tmp_path / "src/moe/_kernels"
    assert source_folder(tmp_path, {}, "flat/_kernels") == tmp_path / "flat/_kernels"
    assert source_folder(tmp_path, {"src/": "lib/"}, "lib/moe/k") == tmp_path / "src/moe/k"
    assert source_folder(tmp_path, {"src/": ""}, "other/_kernels") is None
    assert source_folder(tmp_path, {"src/": "lib/"}, "moe/_kernels") is None
