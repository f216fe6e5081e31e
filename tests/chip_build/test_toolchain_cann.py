"""The cann toolchain against a FAKE toolkit tree and a FAKE runtime: discovery order, versions,
the missing-toolkit and missing-runtime errors, exact command lines per chip and core type
(upstream's, pinned below), the orchestration compile and failures."""

from __future__ import annotations

import dataclasses
import itertools
import platform
from pathlib import Path, PurePosixPath

import pytest
from _support.fake_toolkit import cann_toolchain
from _support.fakes.fake_cann import FAIL_MARKER, FakeCann, make_fake_cann
from _support.fakes.fake_simpler import make_fake_runtime
from _support.trees import kernel_source, make_tree, write_subbuild

from pypto_build.chip_build.chips import CoreType, get_chip
from pypto_build.chip_build.compile import BuildFailed, compile_tree, find_jobs
from pypto_build.chip_build.compile_cache.cache import CompileCache
from pypto_build.chip_build.kernel_config import KernelEntry
from pypto_build.chip_build.kernel_config_reader import read_kernel_config
from pypto_build.chip_build.kernel_config_writer import render_kernel_config
from pypto_build.chip_build.toolchains import (
    CannToolchain,
    CompileJob,
    SimToolchain,
    TargetSettings,
    ToolchainError,
    ToolkitNotFoundError,
    UnitKind,
    Version,
    discovery,
    find_toolkit,
    select_toolchain,
)
from pypto_build.tree_layout import RELATIVE, SubBuildLayout, TreeLayout

ARCH = platform.machine()


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """An empty home directory, so the per-user default roots hold nothing."""
    path = tmp_path / "home"
    path.mkdir()
    return path


@pytest.fixture
def fake_cann(tmp_path: Path) -> FakeCann:
    return make_fake_cann(tmp_path / "toolkit")


@pytest.fixture
def runtime(tmp_path: Path) -> Path:
    """A fake simpler checkout with its managed PTO-ISA clone."""
    return make_fake_runtime(tmp_path)


@pytest.fixture
def toolchain(fake_cann: FakeCann, runtime: Path, home: Path) -> CannToolchain:
    return cann_toolchain(fake_cann, home, runtime)


# --- discovery -------------------------------------------------------------------------------


def test_each_variable_wins_over_the_later_ones(tmp_path: Path, home: Path) -> None:
    by_home = make_fake_cann(tmp_path / "a", "8.0.RC1").root
    by_alias = make_fake_cann(tmp_path / "b", "8.3.RC1").root
    by_opp = make_fake_cann(tmp_path / "c", "8.5.0.alpha001").root
    default = make_fake_cann(home, "9.0.0-beta.2").install_dir / "latest"
    environ = {
        "ASCEND_HOME_PATH": str(by_home),
        "ASCEND_TOOLKIT_HOME": str(by_alias),
        "ASCEND_OPP_PATH": str(by_opp / "opp"),
    }
    expected = [
        ("ASCEND_HOME_PATH", by_home, "8.0.RC1"),
        ("ASCEND_TOOLKIT_HOME", by_alias, "8.3.RC1"),
        ("ASCEND_OPP_PATH (its parent)", by_opp, "8.5.0.alpha001"),
        ("default", default.resolve(), "9.0.0-beta.2"),
    ]
    for variable, (origin, root, version) in zip(
        ["ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME", "ASCEND_OPP_PATH", None], expected, strict=True
    ):
        toolkit = find_toolkit(environ, home=home).require()
        assert (toolkit.origin, toolkit.root, str(toolkit.version)) == (origin, root, version)
        if variable is not None:
            del environ[variable]


def test_unusable_candidates_are_skipped_with_reasons(tmp_path: Path, home: Path) -> None:
    broken = tmp_path / "broken"
    (broken / "bin").mkdir(parents=True)
    found = make_fake_cann(tmp_path / "good")
    search = find_toolkit(
        {
            "ASCEND_HOME_PATH": str(tmp_path / "missing"),
            "ASCEND_TOOLKIT_HOME": str(broken),
            "ASCEND_OPP_PATH": str(found.root / "opp"),
        },
        home=home,
    )
    assert search.require().root == found.root
    reasons = [place.describe() for place in search.searched]
    assert reasons[0] == f"ASCEND_HOME_PATH: {tmp_path / 'missing'}: not a directory"
    assert reasons[1].startswith(f"ASCEND_TOOLKIT_HOME: {broken}: no executable ccec in bin, ")
    assert reasons[2] == f"ASCEND_OPP_PATH (its parent): {found.root}"


def test_system_defaults_come_before_user_defaults(
    tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    system = make_fake_cann(tmp_path / "usr", "8.3.RC1")
    make_fake_cann(home, "8.5.0")
    monkeypatch.setattr(discovery, "_SYSTEM_ROOTS", (str(system.install_dir / "latest"),))
    assert str(find_toolkit({}, home=home).require().version) == "8.3.RC1"


def test_compilers_in_the_ccec_compiler_directory_are_found(tmp_path: Path, home: Path) -> None:
    fake = make_fake_cann(tmp_path)
    moved = fake.root / f"{ARCH}-linux" / "ccec_compiler" / "bin"
    moved.mkdir(parents=True)
    for tool in ("ccec", "ld.lld"):
        (fake.root / "bin" / tool).rename(moved / tool)
    toolkit = find_toolkit({"ASCEND_HOME_PATH": str(fake.root)}, home=home).require()
    assert (toolkit.ccec, toolkit.ld_lld) == (moved / "ccec", moved / "ld.lld")


def test_missing_toolkit_lists_every_place_searched(tmp_path: Path, home: Path) -> None:
    environ = {"ASCEND_HOME_PATH": str(tmp_path / "nowhere")}
    with pytest.raises(ToolkitNotFoundError) as caught:
        select_toolchain("cann", environ=environ, home=home)
    message = str(caught.value)
    assert message.startswith("toolchain 'cann' needs a CANN toolkit, and none was found;")
    for line in [
        f"  ASCEND_HOME_PATH: {tmp_path / 'nowhere'}: not a directory",
        "  ASCEND_TOOLKIT_HOME: not set",
        "  ASCEND_OPP_PATH (its parent): not set",
        "  default: /usr/local/Ascend/ascend-toolkit/latest: does not exist",
        "  default: /usr/local/Ascend/cann: does not exist",
        f"  default: {home / 'Ascend/ascend-toolkit/latest'}: does not exist",
        f"  default: {home / 'Ascend/cann'}: does not exist",
    ]:
        assert line in message.splitlines()
    assert "toolchain 'sim'" in message


def test_auto_picks_cann_when_found_and_sim_otherwise(
    fake_cann: FakeCann, runtime: Path, home: Path
) -> None:
    found = select_toolchain(
        "auto",
        environ={"ASCEND_HOME_PATH": str(fake_cann.root)},
        home=home,
        target=TargetSettings(runtime_root=runtime),
    )
    assert isinstance(found, CannToolchain)
    assert found.version == "8.3.RC1"
    fallback = select_toolchain("auto", environ={"PATH": "/usr/bin:/bin"}, home=home)
    assert isinstance(fallback, SimToolchain)


@pytest.mark.parametrize("name", ["cann", "auto"])
def test_cann_needs_a_runtime_root(
    name: str, fake_cann: FakeCann, runtime: Path, home: Path
) -> None:
    """Without a runtime there is nothing to build orchestrations against: an error naming the
    setting and what the runtime is for, even with a PTO-ISA root."""
    environ = {"ASCEND_HOME_PATH": str(fake_cann.root), "PTO_ISA_ROOT": str(runtime)}
    with pytest.raises(ToolchainError) as caught:
        select_toolchain(name, environ=environ, home=home)
    assert str(caught.value) == (
        f"toolchain '{name}' (the CANN toolkit at {fake_cann.root}) builds for PyPTO's runtime, "
        "and none is configured: set tool.pypto.runtime-root (or PYPTO_RUNTIME_ROOT) to a "
        "simpler checkout or an installed simpler's simpler_setup/_assets folder; "
        "orchestrations link its sources, and kernels and orchestrations include its headers "
        "for the chip's platform. Or build with toolchain 'sim'."
    )


# --- versions --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "release", "stages"),
    [
        ("8.3.RC1", (8, 3), (("rc", 1),)),
        ("8.0.RC1", (8, 0), (("rc", 1),)),
        ("8.5.0.alpha001", (8, 5, 0), (("alpha", 1),)),
        ("9.0.0-beta.1", (9, 0, 0), (("beta", 1),)),
        ("9.0.0-beta.12", (9, 0, 0), (("beta", 12),)),
        ("8.0.RC2.alpha003", (8, 0), (("rc", 2), ("alpha", 3))),
        ("8.5.0", (8, 5, 0), ()),
    ],
)
def test_version_forms_parse(text: str, release: tuple[int, ...], stages: object) -> None:
    version = Version.parse(text)
    assert (version.release, version.stages, str(version)) == (release, stages, text)


def test_versions_order_as_releases_do() -> None:
    ordered = [
        "8.0.RC1",
        "8.0.RC2.alpha003",
        "8.0.RC2",
        "8.3.RC1",
        "8.5.0.alpha001",
        "8.5.0.alpha002",
        "8.5.0",
        "9.0.0-beta.1",
        "9.0.0-beta.2",
        "9.0.0",
    ]
    versions = [Version.parse(text) for text in ordered]
    assert sorted(reversed(versions)) == versions
    assert all(a < b for a, b in itertools.pairwise(versions))
    assert Version.parse("8.3") == Version.parse("8.3.0")
    assert Version.parse("8.3.RC1") < Version.parse("8.3.0")


@pytest.mark.parametrize("text", ["", "RC1", "8.x", "8.3.RC1.4", "version 8"])
def test_malformed_versions_are_rejected(text: str) -> None:
    with pytest.raises(ValueError, match="version"):
        Version.parse(text)


@pytest.mark.parametrize("where", ["install_info", "compiler", "version_cfg"])
def test_version_is_read_from_the_toolkit_files(where: str, tmp_path: Path, home: Path) -> None:
    fake = make_fake_cann(tmp_path, "8.5.0.alpha001", version_file=where)
    toolkit = find_toolkit({"ASCEND_HOME_PATH": str(fake.root)}, home=home).require()
    assert toolkit.version == Version.parse("8.5.0.alpha001")


def test_install_info_is_trusted_before_version_info(tmp_path: Path, home: Path) -> None:
    fake = make_fake_cann(tmp_path, "8.3.RC1")
    (fake.root / "compiler").mkdir()
    (fake.root / "compiler" / "version.info").write_text("Version=7.0.0\n", encoding="utf-8")
    toolkit = find_toolkit({"ASCEND_HOME_PATH": str(fake.root)}, home=home).require()
    assert str(toolkit.version) == "8.3.RC1"
    assert toolkit.version_file == fake.root / f"{ARCH}-linux" / "ascend_toolkit_install.info"


def test_a_toolkit_without_a_version_is_passed_over(tmp_path: Path, home: Path) -> None:
    fake = make_fake_cann(tmp_path, version_file="none")
    search = find_toolkit({"ASCEND_HOME_PATH": str(fake.root)}, home=home)
    assert search.toolkit is None
    assert "no version in any of" in search.searched[0].reason


# --- command lines ---------------------------------------------------------------------------

#: Upstream's command lines up to the output (``-o``), at the reference revision: simpler
#: 6ebaf77's ``KernelCompiler.compile_incore`` with pypto e2d0f78's runtime include directories
#: (``get_kernel_include_dirs("tensormap_and_ringbuffer")``) for kernels, and
#: ``compile_orchestration("tensormap_and_ringbuffer", ...)`` for orchestrations. They were
#: recorded by running upstream's compilers against this fake toolkit and this fake runtime,
#: with ``{runtime}`` the runtime root and ``{pto}`` its managed PTO-ISA clone; upstream runs in
#: its project root and spells the paths inside it relative to it, we run in the source's folder
#: and spell them absolute.
UPSTREAM_KERNEL = {
    ("a2a3", CoreType.AIV): [
        "-c", "-O3", "-g", "-x", "cce", "-Wall", "-std=c++17", "--cce-aicore-only",
        "--cce-aicore-arch=dav-c220-vec",
        "-mllvm", "-cce-aicore-stack-size=0x8000",
        "-mllvm", "-cce-aicore-function-stack-size=0x8000",
        "-mllvm", "-cce-aicore-record-overflow=false",
        "-mllvm", "-cce-aicore-addr-transform",
        "-mllvm", "-cce-aicore-dcci-insert-for-scalar=false",
        "-DMEMORY_BASE",
        "-I{pto}/include",
        "-I{pto}/include/pto",
        "-I{runtime}/simpler_setup/incore",
        "-I{runtime}/src/common/platform/include",
        "-I{runtime}/src/a2a3/runtime/tensormap_and_ringbuffer/runtime",
        "-I{runtime}/src/a2a3/runtime/tensormap_and_ringbuffer/common",
        "-I{runtime}/src/a2a3/runtime",
        "-I{runtime}/src/common",
        "-I{runtime}/src/common/task_interface",
    ],
    ("a2a3", CoreType.AIC): [
        "-c", "-O3", "-g", "-x", "cce", "-Wall", "-std=c++17", "--cce-aicore-only",
        "--cce-aicore-arch=dav-c220-cube",
        "-mllvm", "-cce-aicore-stack-size=0x8000",
        "-mllvm", "-cce-aicore-function-stack-size=0x8000",
        "-mllvm", "-cce-aicore-record-overflow=false",
        "-mllvm", "-cce-aicore-addr-transform",
        "-mllvm", "-cce-aicore-dcci-insert-for-scalar=false",
        "-DMEMORY_BASE",
        "-I{pto}/include",
        "-I{pto}/include/pto",
        "-I{runtime}/simpler_setup/incore",
        "-I{runtime}/src/common/platform/include",
        "-I{runtime}/src/a2a3/runtime/tensormap_and_ringbuffer/runtime",
        "-I{runtime}/src/a2a3/runtime/tensormap_and_ringbuffer/common",
        "-I{runtime}/src/a2a3/runtime",
        "-I{runtime}/src/common",
        "-I{runtime}/src/common/task_interface",
    ],
    ("a5", CoreType.AIV): [
        "-c", "-O3", "-g", "-x", "cce", "-Wall", "-std=c++17", "--cce-aicore-only",
        "--cce-aicore-arch=dav-c310-vec",
        "-mllvm", "-cce-aicore-stack-size=0x8000",
        "-mllvm", "-cce-aicore-function-stack-size=0x8000",
        "-mllvm", "-cce-aicore-record-overflow=false",
        "-mllvm", "-cce-aicore-addr-transform",
        "-mllvm", "-cce-aicore-dcci-insert-for-scalar=false",
        "-DMEMORY_BASE",
        "-mllvm", "-cce-vf-aa-between-iters=true",
        "-I{pto}/include",
        "-I{pto}/include/pto",
        "-I{runtime}/simpler_setup/incore",
        "-I{runtime}/src/common/platform/include",
        "-I{runtime}/src/a5/runtime/tensormap_and_ringbuffer/runtime",
        "-I{runtime}/src/a5/runtime/tensormap_and_ringbuffer/common",
        "-I{runtime}/src/a5/runtime",
        "-I{runtime}/src/common",
        "-I{runtime}/src/common/task_interface",
    ],
    ("a5", CoreType.AIC): [
        "-c", "-O3", "-g", "-x", "cce", "-Wall", "-std=c++17", "--cce-aicore-only",
        "--cce-aicore-arch=dav-c310-cube",
        "-mllvm", "-cce-aicore-stack-size=0x8000",
        "-mllvm", "-cce-aicore-function-stack-size=0x8000",
        "-mllvm", "-cce-aicore-record-overflow=false",
        "-mllvm", "-cce-aicore-addr-transform",
        "-mllvm", "-cce-aicore-dcci-insert-for-scalar=false",
        "-DMEMORY_BASE",
        "-mllvm", "-cce-vf-aa-between-iters=true",
        "-I{pto}/include",
        "-I{pto}/include/pto",
        "-I{runtime}/simpler_setup/incore",
        "-I{runtime}/src/common/platform/include",
        "-I{runtime}/src/a5/runtime/tensormap_and_ringbuffer/runtime",
        "-I{runtime}/src/a5/runtime/tensormap_and_ringbuffer/common",
        "-I{runtime}/src/a5/runtime",
        "-I{runtime}/src/common",
        "-I{runtime}/src/common/task_interface",
    ],
}  # fmt: skip
UPSTREAM_ORCHESTRATION = {
    "a2a3": [
        "-shared", "-fPIC", "-O3", "-g", "-std=c++17", "-fno-gnu-unique",
        "-Wl,--build-id=sha1",
        "{runtime}/src/a2a3/runtime/tensormap_and_ringbuffer/orchestration/common.cpp",
        "{runtime}/src/common/platform/onboard/aicpu/cache_ops.cpp",
        "{runtime}/src/common/platform/onboard/aicpu/device_time.cpp",
        "-I{runtime}/src/a2a3/runtime/tensormap_and_ringbuffer/runtime",
        "-I{runtime}/src/a2a3/runtime/tensormap_and_ringbuffer/common",
        "-I{runtime}/src/common/task_interface",
        "-I{runtime}/src/common",
        "-I{runtime}/src/a2a3/platform/include",
        "-I{runtime}/src/common/platform/include",
        "-I{runtime}/src/a2a3/runtime/tensormap_and_ringbuffer/runtime",
        "-I{runtime}/src/a2a3/runtime/tensormap_and_ringbuffer/orchestration",
        "-I{runtime}/src/a2a3/runtime/tensormap_and_ringbuffer/common",
        "-I{runtime}/src/a2a3/runtime",
    ],
    "a5": [
        "-shared", "-fPIC", "-O3", "-g", "-std=c++17", "-fno-gnu-unique",
        "-Wl,--build-id=sha1",
        "{runtime}/src/a5/runtime/tensormap_and_ringbuffer/orchestration/common.cpp",
        "{runtime}/src/common/platform/onboard/aicpu/cache_ops.cpp",
        "{runtime}/src/common/platform/onboard/aicpu/device_time.cpp",
        "-I{runtime}/src/a5/runtime/tensormap_and_ringbuffer/runtime",
        "-I{runtime}/src/a5/runtime/tensormap_and_ringbuffer/common",
        "-I{runtime}/src/common/task_interface",
        "-I{runtime}/src/common",
        "-I{runtime}/src/a5/platform/include",
        "-I{runtime}/src/common/platform/include",
        "-I{runtime}/src/a5/runtime/tensormap_and_ringbuffer/runtime",
        "-I{runtime}/src/a5/runtime/tensormap_and_ringbuffer/orchestration",
        "-I{runtime}/src/a5/runtime/tensormap_and_ringbuffer/common",
        "-I{runtime}/src/a5/runtime",
    ],
}  # fmt: skip
#: upstream's link step (``KernelCompiler._link_incore``), before its output and input.
UPSTREAM_LINK = ["-e", "kernel_entry"]

STAGE = Path("/stage")
KERNELS = {CoreType.AIV: "alpha", CoreType.AIC: "gamma"}


def _upstream(argv: list[str], runtime: Path) -> list[str]:
    return [arg.format(runtime=runtime, pto=runtime / "build" / "pto-isa") for arg in argv]


def _kernel_job(tree: Path, chip: str, core_type: CoreType, *includes: str) -> CompileJob:
    source = RELATIVE.sub_build("pipe").kernel(core_type, KERNELS[core_type])
    dirs = tuple(PurePosixPath(directory) for directory in includes)
    return CompileJob(tree, source, UnitKind.KERNEL, get_chip(chip), core_type, dirs)


@pytest.mark.parametrize("chip", ["a2", "a3", "a5"])
@pytest.mark.parametrize("core_type", [CoreType.AIV, CoreType.AIC])
def test_kernel_command_lines_are_upstreams(
    chip: str, core_type: CoreType, toolchain: CannToolchain, runtime: Path, tmp_path: Path
) -> None:
    """The expected lists are upstream's at simpler 6ebaf77 (:data:`UPSTREAM_KERNEL`,
    :data:`UPSTREAM_LINK`) for the chip's platform and the core type, followed by the tree's own
    include directories (relative to the source's folder, last as upstream passes a kernel's
    ``extra_include_dirs``), then our debug map and dependency file."""
    tree = tmp_path / "out" / chip
    job = _kernel_job(tree, chip, core_type, RELATIVE.sub_build("pipe").include.as_posix())
    name = KERNELS[core_type]
    chip_platform = get_chip(chip).platform
    plan = toolchain.plan(job, STAGE)
    assert plan.key_argv() == (
        (
            str(toolchain.toolkit.ccec),
            *_upstream(UPSTREAM_KERNEL[chip_platform, core_type], runtime),
            "-I../../include",
            f"-fdebug-prefix-map={tree}=.",
            "-MD", "-MF", f"/stage/{name}.d", "-MT", f"{name}.o",
            "-o", f"/stage/{name}.unlinked.o", f"{name}.cpp",
        ),
        (
            str(toolchain.toolkit.ld_lld),
            *UPSTREAM_LINK, "-o", f"/stage/{name}.o", f"/stage/{name}.unlinked.o",
        ),
    )  # fmt: skip
    assert (plan.output, plan.depfile, plan.inputs) == (
        STAGE / f"{name}.o",
        STAGE / f"{name}.d",
        (),
    )


#: The defines of a MIX kernel's sides (CANN's AscendC op compiler: ``-D__MIX_CORE_MACRO__=1``
#: on both compiles of a ``KERNEL_TYPE_MIX_AIC_1_2`` kernel; the cube side's matmul pure-cube,
#: ``ASCENDC_CUBE_ONLY``), right after the chip's own flags, before the include directories.
MIX_DEFINES = {
    CoreType.AIC: ["-D__MIX_CORE_MACRO__=1", "-DASCENDC_CUBE_ONLY"],
    CoreType.AIV: ["-D__MIX_CORE_MACRO__=1"],
}


@pytest.mark.parametrize("core_type", [CoreType.AIV, CoreType.AIC])
def test_a_mix_kernels_sides_compile_for_their_core_type(
    core_type: CoreType, toolchain: CannToolchain, runtime: Path, tmp_path: Path
) -> None:
    """a3's MIX kernel (the MC2 op's): the AIC side with the cube arch, the MIX define and the
    pure-cube matmul define; the AIV side with the vector arch and the MIX define alone."""
    tree = tmp_path / "out" / "a3"
    job = dataclasses.replace(_kernel_job(tree, "a3", core_type), mix=True)
    compile_argv = toolchain.plan(job, STAGE).key_argv()[0]
    upstream = _upstream(UPSTREAM_KERNEL["a2a3", core_type], runtime)
    first_include = upstream.index(f"-I{runtime}/build/pto-isa/include")
    arch = "dav-c220-cube" if core_type is CoreType.AIC else "dav-c220-vec"
    assert f"--cce-aicore-arch={arch}" in upstream
    assert list(compile_argv[1 : 1 + first_include + len(MIX_DEFINES[core_type])]) == [
        *upstream[:first_include],
        *MIX_DEFINES[core_type],
    ]
    plain = toolchain.plan(_kernel_job(tree, "a3", core_type), STAGE).key_argv()[0]
    assert [arg for arg in compile_argv if arg not in plain] == MIX_DEFINES[core_type]


def test_a_kernel_is_a_mix_side_when_its_sub_build_has_both_core_types(tmp_path: Path) -> None:
    """find_jobs: the MC2 sub-build lists one kernel name for the AIC and the AIV, so both of its
    jobs are MIX sides; an AIV-only kernel is not."""
    tree = tmp_path / "a3"
    root = tree / "next_levels" / "mc2"
    kernels = [("fused", CoreType.AIC), ("fused", CoreType.AIV), ("copy", CoreType.AIV)]
    entries = [KernelEntry(func_id, *kernel) for func_id, kernel in enumerate(kernels)]
    for entry in entries:
        (root / entry.source).parent.mkdir(parents=True, exist_ok=True)
        (root / entry.source).write_text(kernel_source(entry.func_id), encoding="utf-8")
    (root / "kernel_config.py").write_text(render_kernel_config(None, entries), encoding="utf-8")
    jobs = {(job.source.stem, job.core_type): job.mix for job in find_jobs(tree, "a3")}
    assert jobs == {
        ("fused", CoreType.AIC): True,
        ("fused", CoreType.AIV): True,
        ("copy", CoreType.AIV): False,
    }


@pytest.mark.parametrize("chip", ["a2", "a3", "a5"])
def test_orchestration_command_line_is_upstreams(
    chip: str, toolchain: CannToolchain, runtime: Path, tmp_path: Path
) -> None:
    """The expected list is upstream's at simpler 6ebaf77 (:data:`UPSTREAM_ORCHESTRATION`) for
    the chip's platform: its flags, the runtime's sources and include directories, no folder
    of the tree; then our debug map and dependency file."""
    tree = tmp_path / "out" / chip
    source = RELATIVE.sub_build("pipe").orchestration("pipe")
    job = CompileJob(tree, source, UnitKind.ORCHESTRATION, get_chip(chip))
    plan = toolchain.plan(job, STAGE)
    assert plan.key_argv() == (
        (
            str(toolchain.toolkit.host_cxx),
            *_upstream(UPSTREAM_ORCHESTRATION[get_chip(chip).platform], runtime),
            f"-fdebug-prefix-map={tree}=.",
            "-MD", "-MF", "/stage/pipe.d", "-MT", "pipe.so",
            "-o", "/stage/pipe.so", "pipe.cpp",
        ),
    )  # fmt: skip


def test_a_clang_host_compiler_gets_no_gnu_unique_flag(
    tmp_path: Path, home: Path, runtime: Path
) -> None:
    fake = make_fake_cann(tmp_path / "toolkit", host_compiler="clang")
    chosen = cann_toolchain(fake, home, runtime)
    job = CompileJob(
        tmp_path / "a3", PurePosixPath("o/pipe.cpp"), UnitKind.ORCHESTRATION, get_chip("a3")
    )
    [step] = chosen.plan(job, STAGE).steps
    assert step.argv[1:7] == ("-shared", "-fPIC", "-O3", "-g", "-std=c++17", "-Wl,--build-id=sha1")


def test_orchestration_plan_names_the_runtime_sources_and_their_headers(
    toolchain: CannToolchain, runtime: Path, tmp_path: Path
) -> None:
    """The dependency file lists what the orchestration's own source read; the runtime's
    sources compiled beside it, and the headers they include, are further inputs."""
    job = CompileJob(
        tmp_path / "a5", PurePosixPath("o/pipe.cpp"), UnitKind.ORCHESTRATION, get_chip("a5")
    )
    rt = runtime / "src" / "a5" / "runtime" / "tensormap_and_ringbuffer"
    aicpu = runtime / "src" / "common" / "platform"
    assert toolchain.plan(job, STAGE).inputs == (
        rt / "orchestration" / "common.cpp",
        aicpu / "onboard" / "aicpu" / "cache_ops.cpp",
        aicpu / "onboard" / "aicpu" / "device_time.cpp",
        rt / "runtime" / "common.h",
        aicpu / "include" / "aicpu" / "cache_maintenance.h",
        aicpu / "include" / "aicpu" / "device_time.h",
    )


@pytest.mark.parametrize("chip", ["a3", "a5"])
def test_compiles_run_what_was_planned_in_the_source_folder(
    chip: str, toolchain: CannToolchain, fake_cann: FakeCann, runtime: Path, tmp_path: Path
) -> None:
    tree = make_tree(tmp_path / "out", chip)
    report = compile_tree(tree, chip, toolchain, jobs=2, progress=None)
    assert report.compiled == 4
    chip_platform = get_chip(chip).platform
    ccec = {entry["argv"][-1]: entry for entry in fake_cann.entries("ccec")}
    for core_type, name in [
        (CoreType.AIV, "alpha"),
        (CoreType.AIV, "beta"),
        (CoreType.AIC, "gamma"),
    ]:
        argv = ccec[f"{name}.cpp"]["argv"]
        stage = Path(argv[argv.index("-o") + 1]).parent
        # Upstream's, then the sub-build's own headers (extra_include_dirs), as upstream adds
        # a kernel's extra include directories last.
        assert argv == [
            *_upstream(UPSTREAM_KERNEL[chip_platform, core_type], runtime),
            "-I../../include",
            f"-fdebug-prefix-map={tree}=.",
            "-MD", "-MF", f"{stage}/{name}.d", "-MT", f"{name}.o",
            "-o", f"{stage}/{name}.unlinked.o", f"{name}.cpp",
        ]  # fmt: skip
        assert ccec[f"{name}.cpp"]["cwd"] == str(
            TreeLayout(tree).sub_build("pipe").kernels(core_type)
        )
    assert len(fake_cann.calls("ld.lld")) == 3
    [orchestration] = fake_cann.entries("aarch64-target-linux-gnu-g++")
    assert orchestration["cwd"] == str(TreeLayout(tree).sub_build("pipe").orchestration_dir)
    upstream = _upstream(UPSTREAM_ORCHESTRATION[chip_platform], runtime)
    assert orchestration["argv"][: len(upstream)] == upstream
    # Binaries beside their sources, recorded in kernel_config.py; the manifest names CANN.
    root = TreeLayout(tree).sub_build("pipe").root
    assert (root / "kernels/aiv/alpha.o").read_bytes().startswith(b"FAKE-LINKED FAKE-ccec ")
    assert (root / "orchestration/pipe.so").read_bytes().startswith(b"FAKE-aarch64")
    binaries = [
        kernel.binary for kernel in read_kernel_config(SubBuildLayout(root).kernel_config).kernels
    ]
    assert binaries == ["kernels/aiv/alpha.o", "kernels/aiv/beta.o", "kernels/aic/gamma.o"]
    assert '"toolchain": {\n    "name": "cann",\n    "version": "8.3.RC1"\n  }' in (
        TreeLayout(tree).manifest
    ).read_text(encoding="utf-8")


def test_debug_paths_are_mapped_out_yet_the_cache_hits_at_another_path(
    toolchain: CannToolchain, fake_cann: FakeCann, tmp_path: Path
) -> None:
    cache = CompileCache(tmp_path / "cache")
    first = make_tree(tmp_path / "first")
    assert compile_tree(first, "a3", toolchain, cache=cache, progress=None).compiled == 4
    # The prefix is the tree as the compiler sees its working directory: symlinks resolved.
    (tmp_path / "link").symlink_to(tmp_path / "second", target_is_directory=True)
    (tmp_path / "second").mkdir()
    second = make_tree(tmp_path / "link")
    report = compile_tree(second, "a3", toolchain, cache=cache, progress=None)
    assert report.cache_hits == 4
    [compile_argv] = [argv for argv in fake_cann.calls("ccec") if argv[-1] == "alpha.cpp"]
    assert f"-fdebug-prefix-map={first}=." in compile_argv
    # The log shows the plan as the cache keys it: no tree path in it.
    log = report.log.read_text(encoding="utf-8")
    assert "-fdebug-prefix-map=/@tree=. -MD" in log
    assert str(tmp_path / "second") not in log
    assert (second / "next_levels/pipe/kernels/aiv/alpha.o").read_bytes() == (
        first / "next_levels/pipe/kernels/aiv/alpha.o"
    ).read_bytes()
    # A compile outside the cache maps the resolved path of the linked tree.
    compile_tree(second, "a3", toolchain, progress=None)
    [*_, relinked] = [argv for argv in fake_cann.calls("ccec") if argv[-1] == "alpha.cpp"]
    assert f"-fdebug-prefix-map={tmp_path / 'second' / 'a3'}=." in relinked


def test_identity_names_the_toolkit_version_and_its_compilers(toolchain: CannToolchain) -> None:
    assert toolchain.identity() == (
        "cann 8.3.RC1; ccec: fake ccec 0.0 (pypto-build test double); "
        "aarch64-target-linux-gnu-g++: aarch64-target-linux-gnu-g++ fake gcc (GCC) 7.3.0 "
        "(pypto-build test double)"
    )


def test_device_kernels_are_tied_to_no_platform_unless_one_is_named(
    toolchain: CannToolchain,
) -> None:
    # The wheel hook asks the toolchain (pypto_build.plugin.hatch.wheel_tag).
    assert toolchain.wheel_platform() == "any"
    assert toolchain.wheel_platform_problem("manylinux_2_28_aarch64") is None


# --- failures --------------------------------------------------------------------------------


def test_compiler_failure_shows_command_kernel_and_output(
    toolchain: CannToolchain, fake_cann: FakeCann, tmp_path: Path
) -> None:
    tree = make_tree(tmp_path / "out")
    root = write_subbuild(
        tree, "broken", {"bad": (CoreType.AIV, f"// {FAIL_MARKER}\n" + kernel_source(9))}
    )
    stale = root / "kernels/aiv/bad.o"
    stale.write_bytes(b"binary of an older build")
    config_before = SubBuildLayout(root).kernel_config.read_bytes()
    manifest_before = TreeLayout(tree).manifest.read_bytes()
    with pytest.raises(BuildFailed) as caught:
        compile_tree(tree, "a3", toolchain, jobs=2, progress=None)
    message = str(caught.value)
    assert message.startswith("1 of 6 compiles failed for chip a3:\n")
    assert (
        "error: compiling next_levels/broken/kernels/aiv/bad.cpp failed (exit status 1)" in message
    )
    ccec_call = next(argv for argv in fake_cann.calls("ccec") if argv[-1] == "bad.cpp")
    assert f"command: {toolchain.toolkit.ccec} {' '.join(ccec_call)}" in message
    assert "bad.cpp:1:1: error: fake failure requested" in message
    log = tmp_path / "out" / ".pypto-build-logs" / "a3.log"
    assert message.endswith(f"full log: {log}")
    assert "== next_levels/broken/kernels/aiv/bad.cpp: FAILED" in log.read_text(encoding="utf-8")
    # No artifact of the failed kernel (not even an older one), nothing linked for it, and the
    # tree's description is untouched.
    assert not stale.exists()
    assert not any(argv[-1].endswith("bad.unlinked.o") for argv in fake_cann.calls("ld.lld"))
    assert SubBuildLayout(root).kernel_config.read_bytes() == config_before
    assert TreeLayout(tree).manifest.read_bytes() == manifest_before
    # The log lives outside the chip tree.
    assert not list(tree.rglob("*.log"))


def test_missing_host_compiler_fails_only_the_orchestration(
    tmp_path: Path, home: Path, runtime: Path
) -> None:
    fake = make_fake_cann(tmp_path / "toolkit", host_compiler=None)
    chosen = cann_toolchain(fake, home, runtime)
    tree = make_tree(tmp_path / "out")
    with pytest.raises(BuildFailed) as caught:
        compile_tree(tree, "a3", chosen, progress=None)
    assert str(caught.value).startswith("1 of 4 compiles failed for chip a3:\n")
    assert "tools/hcc/bin/aarch64-target-linux-gnu-g++, the aarch64 host compiler" in str(
        caught.value
    )
