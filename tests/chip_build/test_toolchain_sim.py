"""The sim toolchain with the real host g++: command lines, identity, and real compiles (of
hand-made trees and of a rendered sample) whose shared objects load and run."""

from __future__ import annotations

import ctypes
import json
import subprocess
import sys
from pathlib import Path, PurePosixPath

import pytest
from _support.trees import kernel_source, make_tree, write_subbuild

from pypto_build.builtins import include_dir
from pypto_build.chip_build.build import build
from pypto_build.chip_build.chips import CoreType, get_chip
from pypto_build.chip_build.compile import BuildFailed, compile_tree
from pypto_build.chip_build.kernel_config_reader import read_kernel_config
from pypto_build.chip_build.toolchains import (
    CompileJob,
    SimToolchain,
    ToolchainError,
    UnitKind,
    find_host_compiler,
    select_toolchain,
)
from pypto_build.chip_build.toolchains.extra_flags import ExtraFlags, sim_flags
from pypto_build.chip_build.toolchains.sim import KERNEL_ENTRY_FLAG, SIM_API_INCLUDE_DIR
from pypto_build.chip_build.tree_manifest import verify_manifest
from pypto_build.files import walk_files
from pypto_build.tree_layout import SubBuildLayout, TreeLayout


def _job(tree: Path, source: str, core_type: CoreType | None) -> CompileJob:
    kind = UnitKind.ORCHESTRATION if core_type is None else UnitKind.KERNEL
    include_dirs = () if core_type is None else (PurePosixPath("sub/include"),)
    return CompileJob(tree, PurePosixPath(source), kind, get_chip("a5"), core_type, include_dirs)


def _is_shared_object(path: Path) -> bool:
    header = path.read_bytes()[:18]
    return header[:4] == b"\x7fELF" and int.from_bytes(header[16:18], "little") == 3  # ET_DYN


def test_kernel_and_orchestration_command_lines(tmp_path: Path) -> None:
    sim = SimToolchain(Path("/opt/bin/g++"), version_line="g++ (GCC) 12.2.0")
    stage = tmp_path / "stage"
    flags = ["/opt/bin/g++", "-c", "-fPIC", "-O2", "-std=c++17"]
    for core_type, define in [(CoreType.AIV, "-D__DAV_VEC__"), (CoreType.AIC, "-D__DAV_CUBE__")]:
        plan = sim.plan(_job(tmp_path, f"sub/kernels/{core_type}/k.cpp", core_type), stage)
        # A kernel sees its tree's headers only, named relative to its folder.
        assert plan.key_argv() == (
            (
                *flags, "-D__CPU_SIM", define, "-DNDEBUG", "-I../../include",
                "-MD", "-MF", f"{stage}/k.d", "-MT", "k.so", "-o", f"{stage}/k.o", "k.cpp",
            ),
            ("/opt/bin/g++", "-shared", KERNEL_ENTRY_FLAG, "-o", f"{stage}/k.so", f"{stage}/k.o"),
        )  # fmt: skip
        assert [step.compiles for step in plan.steps] == [True, False]
        assert (plan.output, plan.depfile) == (stage / "k.so", stage / "k.d")
    plan = sim.plan(_job(tmp_path, "sub/orchestration/orch.cpp", None), stage)
    # An orchestration compiles against the simulator's implementation of PyPTO's API.
    assert plan.key_argv() == (
        (
            *flags, f"-I{SIM_API_INCLUDE_DIR}", f"-I{include_dir()}",
            "-MD", "-MF", f"{stage}/orch.d", "-MT", "orch.so", "-o", f"{stage}/orch.o", "orch.cpp",
        ),
        ("/opt/bin/g++", "-shared", "-o", f"{stage}/orch.so", f"{stage}/orch.o"),
    )  # fmt: skip


def test_identity_and_version() -> None:
    sim = SimToolchain(Path("/usr/bin/g++"), version_line="g++ (Debian 12.2.0-14+deb12u1) 12.2.0")
    assert sim.name == "sim"
    assert sim.version == "g++ 12.2.0"
    assert sim.identity() == "g++: g++ (Debian 12.2.0-14+deb12u1) 12.2.0"
    assert SimToolchain(Path("/x/cc"), version_line="odd compiler").version == "odd compiler"


def test_discovery_honours_cxx(sim: SimToolchain, tmp_path: Path) -> None:
    link = tmp_path / "my-c++"
    link.symlink_to(sim.compiler)
    environ = {"CXX": "my-c++", "PATH": f"{tmp_path}:/usr/bin:/bin"}
    assert find_host_compiler(environ) == link
    chosen = select_toolchain("sim", environ=environ)
    assert isinstance(chosen, SimToolchain)
    assert chosen.identity().startswith("my-c++: ")
    with pytest.raises(ToolchainError, match="CXX=nope is not on PATH"):
        find_host_compiler({"CXX": "nope", "PATH": str(tmp_path)})


def test_real_compile_of_a_tree_loads_and_runs(sim: SimToolchain, tmp_path: Path) -> None:
    tree = make_tree(tmp_path / "out")
    report = compile_tree(tree, "a3", sim, jobs=2, progress=None)
    assert (report.compiled, report.cache_hits) == (4, 0)
    assert (report.toolchain, report.toolchain_version) == ("sim", sim.version)
    root = TreeLayout(tree).sub_build("pipe").root
    for name, core_type in (("alpha", "aiv"), ("beta", "aiv"), ("gamma", "aic")):
        assert _is_shared_object(root / f"sim/kernels/{core_type}/{name}.so")
    orchestration = SubBuildLayout(root).sim_binaries() / "orchestration" / "pipe.so"
    assert _is_shared_object(orchestration)
    # Runtime symbols stay undefined in the orchestration; the runtime supplies them.
    assert b"pypto_sim_rt_submit" in orchestration.read_bytes()
    # The kernel ABI: kernel_entry(int64_t* args), args[0] points at the output.
    library = ctypes.CDLL(str(root / "sim/kernels/aic/gamma.so"))
    result = ctypes.c_int64(0)
    args = (ctypes.c_int64 * 1)(ctypes.addressof(result))
    library.kernel_entry(args)
    assert result.value == 3


def test_builds_are_identical_at_different_paths(sim: SimToolchain, tmp_path: Path) -> None:
    trees = [make_tree(tmp_path / name) for name in ("first", "second/deeper")]
    for tree, jobs in zip(trees, (1, 2), strict=True):
        compile_tree(tree, "a3", sim, jobs=jobs, progress=None)
    files = [walk_files(tree) for tree in trees]
    assert files[0] == files[1]
    for path in files[0]:
        assert (trees[0] / path).read_bytes() == (trees[1] / path).read_bytes(), path


def test_real_compiler_error_is_reported(sim: SimToolchain, tmp_path: Path) -> None:
    tree = make_tree(tmp_path / "out")
    write_subbuild(
        tree,
        "broken",
        {"bad": (CoreType.AIV, kernel_source(1) + "int broken(\n")},
        orchestration=None,
    )
    with pytest.raises(BuildFailed) as caught:
        compile_tree(tree, "a3", sim, progress=None)
    message = str(caught.value)
    assert (
        "error: compiling next_levels/broken/kernels/aiv/bad.cpp failed (exit status 1)" in message
    )
    assert f"command: {sim.compiler} -c -fPIC -O2 -std=c++17 -D__CPU_SIM -D__DAV_VEC__" in message
    assert "bad.cpp:6:" in message  # g++'s own diagnostic, with the line
    assert not (tree / "next_levels/broken/sim/kernels/aiv/bad.so").exists()


def test_real_compile_of_a_rendered_sample(
    sim: SimToolchain, tmp_path: Path, repo_root: Path
) -> None:
    project = repo_root / "samples" / "moe_a2a"
    result = build(
        [project / "src" / "moe_a2a" / "pipelines.py"],
        chips=["a3"],
        out_dir=tmp_path / "out",
        source_root=project,
        toolchain=sim,
        jobs=2,
        progress=None,
    )
    [report] = result.reports
    tree = tmp_path / "out" / "a3"
    sub_build = TreeLayout(tree).sub_build("chip_pipeline").root
    config = read_kernel_config(SubBuildLayout(sub_build).kernel_config)
    binaries = sorted(kernel.binary or "" for kernel in config.kernels)
    assert binaries == [
        "sim/kernels/aiv/__builtin_all_to_all_v__fp32.so",
        "sim/kernels/aiv/consume_step.so",
        "sim/kernels/aiv/stage_step.so",
    ]
    assert report.compiled == len(binaries) + 1  # and the orchestration
    for binary in [*binaries, "sim/orchestration/chip_pipeline.so"]:
        assert _is_shared_object(sub_build / binary)
    assert verify_manifest(tree) == []
    manifest = json.loads(TreeLayout(tree).manifest.read_text(encoding="utf-8"))
    assert manifest["toolchain"] == {"name": "sim", "version": sim.version}
    assert "src/moe_a2a/pipelines.py" in manifest["inputs"]
    # A sim build names its platform for PyPTO and writes no binary context: its binaries are
    # the simulator's, and PyPTO compiles the sources itself.
    assert json.loads(TreeLayout(tree).distributed_meta.read_text())["platform"] == "a2a3sim"
    assert "binary_context" not in manifest
    assert not (sub_build / "cache").exists()
    # The kernels load where pypto-build's simulator is not (as in PyPTO's own runtime, which
    # dlopens them RTLD_NOW): the simulator hooks they use are weak references.
    load = (
        "import ctypes, os, sys\n"
        "for path in sys.argv[1:]:\n"
        "    ctypes.CDLL(path, mode=os.RTLD_NOW | os.RTLD_LOCAL).kernel_entry\n"
    )
    kernels = [str(sub_build / binary) for binary in binaries]
    subprocess.run([sys.executable, "-c", load, *kernels], check=True)


def test_debug_build_defines_and_flags_join_the_command_lines(tmp_path: Path) -> None:
    extra = ExtraFlags(("TRACE", "LEVEL=2"), ("-fsanitize=address",), "debug")
    sim = SimToolchain(Path("/opt/bin/g++"), version_line="g++ (GCC) 12.2.0", extra=extra)
    stage = tmp_path / "stage"
    plan = sim.plan(_job(tmp_path, "sub/kernels/aiv/k.cpp", CoreType.AIV), stage)
    # -O0 -g instead of -O2, asserts kept, the tree mapped to "." in the debug information,
    # the user's additions after pypto-build's flags and in the link too (sanitizers need it).
    assert plan.key_argv() == (
        (
            "/opt/bin/g++", "-c", "-fPIC", "-O0", "-g", "-std=c++17", "-D__CPU_SIM",
            "-D__DAV_VEC__", "-I../../include", f"-fdebug-prefix-map={tmp_path.resolve()}=.",
            "-DTRACE", "-DLEVEL=2", "-fsanitize=address",
            "-MD", "-MF", f"{stage}/k.d", "-MT", "k.so", "-o", f"{stage}/k.o", "k.cpp",
        ),
        (
            "/opt/bin/g++", "-shared", KERNEL_ENTRY_FLAG, "-fsanitize=address",
            "-o", f"{stage}/k.so", f"{stage}/k.o",
        ),
    )  # fmt: skip
    # The build record sees what was added; a plain toolchain records nothing.
    assert sim.layout(get_chip("a3")) == {
        "build_type": "debug",
        "defines": ["TRACE", "LEVEL=2"],
        "flags": ["-fsanitize=address"],
    }
    plain = SimToolchain(Path("/opt/bin/g++"), version_line="g++ (GCC) 12.2.0")
    assert plain.layout(get_chip("a3")) == {}


def test_cxxflags_come_before_the_setting_and_bad_quoting_is_named() -> None:
    extra = sim_flags(("A",), "-O3 '-DNAME=a b'", "release", {"CXXFLAGS": "-Wall -g"})
    assert extra.flags == ("-Wall", "-g", "-O3", "-DNAME=a b")
    assert sim_flags((), None, "release", {}) == ExtraFlags()
    with pytest.raises(ToolchainError, match=r"CXXFLAGS='-DX=\"' is not a list of flags"):
        sim_flags((), None, "release", {"CXXFLAGS": '-DX="'})


def test_a_debug_build_carries_debug_information_and_no_tree_path(
    sim: SimToolchain, tmp_path: Path
) -> None:
    debug = SimToolchain(sim.compiler, extra=ExtraFlags(build_type="debug"))
    tree = make_tree(tmp_path / "out")
    report = compile_tree(tree, "a3", debug, progress=None)
    binary = (tree / report.results[0].artifact).read_bytes()
    assert b".debug_info" in binary
    assert str(tmp_path).encode() not in binary
    release = make_tree(tmp_path / "release")
    plain = compile_tree(release, "a3", sim, progress=None)
    assert b".debug_info" not in (release / plain.results[0].artifact).read_bytes()


def test_added_flags_are_part_of_the_cache_key(sim: SimToolchain, tmp_path: Path) -> None:
    from pypto_build.chip_build.compile_cache.cache import CompileCache

    cache = CompileCache(tmp_path / "cache")
    tree = make_tree(tmp_path / "out")
    assert compile_tree(tree, "a3", sim, cache=cache, progress=None).cache_hits == 0
    assert compile_tree(tree, "a3", sim, cache=cache, progress=None).compiled == 0
    traced = SimToolchain(sim.compiler, extra=ExtraFlags(defines=("TRACE",)))
    assert compile_tree(tree, "a3", traced, cache=cache, progress=None).cache_hits == 0
    assert compile_tree(tree, "a3", traced, cache=cache, progress=None).compiled == 0
