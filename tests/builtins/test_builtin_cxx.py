"""The C++ side: every render compiles against the simulation side of the headers, the ABI
layout is as pinned, and the HOST entry validates and launches as upstream's does."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from pypto_build.builtins import BuiltinPackage, all_packages, include_dir, render, resolve
from pypto_build.builtins.manifest import COLLECTIVE
from pypto_build.chip_build.toolchains.sim import SIM_API_INCLUDE_DIR
from pypto_build.lowering.builtin_registry import builtin_op
from pypto_build.lowering.runtime_facts import COMM_MAX_RANK_NUM

CompileCxx = Callable[[list[str]], None]
VariablesFor = Callable[[BuiltinPackage, str, str], dict[str, str]]

A2AV = ":pypto.runtime.builtins.collectives.all_to_all_v"
INDEXED = ":pypto.runtime.builtins.collectives.indexed_all_to_all_v"
HERE = Path(__file__).resolve().parent
HEADERS = sorted(path.name for path in (include_dir() / "pypto_build").glob("*.h"))
# Our headers, and the simulator's implementation of PyPTO's orchestration API. An entry's
# relative include of "../include/pypto_build/orchestration.h" resolves through the first.
FLAGS = [
    "-std=c++17",
    "-Wall",
    "-Wextra",
    "-Werror",
    "-I",
    str(include_dir()),
    "-I",
    str(SIM_API_INCLUDE_DIR),
]

FP32, INT8 = 0, 4  # DataType values


def build_and_run(gxx: str, compile_cxx: CompileCxx, source: str, folder: Path) -> str:
    program = folder / "program.cpp"
    program.write_text(source)
    compile_cxx([gxx, *FLAGS, str(program), "-o", str(folder / "program")])
    return subprocess.run(
        [str(folder / "program")], capture_output=True, text=True, check=True
    ).stdout


@pytest.mark.parametrize(
    "handle", [package.handle for package in all_packages() if package.contract == COLLECTIVE]
)
@pytest.mark.parametrize("dtype", ["fp32", "int8"])
@pytest.mark.parametrize("template", ["kernel.cpp.in", "entry.cpp.in"])
def test_rendered_sources_compile(
    handle: str,
    dtype: str,
    template: str,
    gxx: str,
    compile_cxx: CompileCxx,
    variables_for: VariablesFor,
    tmp_path: Path,
) -> None:
    package = resolve(handle)
    source = tmp_path / template.removesuffix(".in")
    source.write_text(render(package, template, variables_for(package, template, dtype)))
    compile_cxx([gxx, "-fsyntax-only", *FLAGS, str(source)])


@pytest.mark.parametrize("header", HEADERS)
def test_every_header_stands_alone(
    header: str, gxx: str, compile_cxx: CompileCxx, tmp_path: Path
) -> None:
    source = tmp_path / "only.cpp"
    # The orchestration helpers are written against PyPTO's orchestration API, included first.
    api = '#include "pto_orchestration_api.h"\n' if header == "orchestration.h" else ""
    source.write_text(f'{api}#include "pypto_build/{header}"\n#include "pypto_build/{header}"\n')
    compile_cxx([gxx, "-fsyntax-only", *FLAGS, str(source)])


def test_abi_layout_is_as_pinned(gxx: str, compile_cxx: CompileCxx, tmp_path: Path) -> None:
    output = build_and_run(
        gxx,
        compile_cxx,
        """
#include <cstdio>
#include "pypto_build/kernel_abi.h"
int main() {
  std::printf("%zu %zu %zu %zu %zu %zu\\n", sizeof(CommContext), sizeof(ChipTensor),
              alignof(ChipTensor), offsetof(CommContext, windowsOut), offsetof(ChipTensor, shapes),
              offsetof(ChipTensor, strides));
  std::printf("%d %d %d %d\\n", SIMPLER_ERROR_INVALID_ARGS,
              SIMPLER_ERROR_REQUIRE_SYNC_START_INVALID, SPMD_LOCAL_CONTEXT_INDEX, KERNEL_MAX_ARGS);
}
""",
        tmp_path,
    )
    assert output.split("\n")[:2] == ["1056 128 64 544 44 72", "5 7 48 50"]


def test_block_identity_comes_from_the_local_context_slot(
    gxx: str, compile_cxx: CompileCxx, tmp_path: Path
) -> None:
    output = build_and_run(
        gxx,
        compile_cxx,
        """
#include <cstdio>
#include "pypto_build/kernel_abi.h"
int main() {
  LocalContext block{3, 8};
  int64_t args[KERNEL_MAX_ARGS] = {};
  args[SPMD_LOCAL_CONTEXT_INDEX] = reinterpret_cast<int64_t>(&block);
  std::printf("%d %d\\n", get_block_idx(args), get_block_num(args));
}
""",
        tmp_path,
    )
    assert output == "3 8\n"


# (P, L) -> B, the worked examples of hw-native-sys/pypto issue #2521.
ADMISSION = {
    **{(8, width): b for width, b in [(1, 1), (2, 2), (4, 4), (7, 7), (8, 8), (10, 8), (15, 8)]},
    (8, 16): 16,
    **{(16, width): width for width in (1, 4, 8, 15, 16)},
    (4, 16): 16,
    (2, 5): 4,
    (2, 6): 6,
    (4, 10): 8,
    (2, 51): 50,
}


def test_the_entry_admission_formula_matches_the_rfc_table(
    gxx: str, compile_cxx: CompileCxx, tmp_path: Path
) -> None:
    template = resolve(A2AV).template("entry.cpp.in").decode()
    function = re.search(r"^int32_t CalAllToAllVBlocks\(.*\}$", template, re.MULTILINE)
    assert function is not None
    calls = "".join(
        f'  std::printf("%d\\n", CalAllToAllVBlocks({p}, {width}));\n' for p, width in ADMISSION
    )
    output = build_and_run(
        gxx,
        compile_cxx,
        f"#include <cstdint>\n#include <cstdio>\n{function.group(0)}\nint main() {{\n{calls}}}\n",
        tmp_path,
    )
    assert [int(line) for line in output.split()] == list(ADMISSION.values())


def test_the_entry_admission_formula_is_the_packages_launch_width_rule(
    gxx: str, compile_cxx: CompileCxx, tmp_path: Path
) -> None:
    """The HOST rail folds ``core_num`` in C++ (``entry.cpp.in``), the CHIP rail by the rule of
    the op's one definition: equal over every rank count a comm domain holds and every width up
    to four times that, so the two rails launch the same blocks."""
    builtin = builtin_op("pld.tensor.all_to_all_v")
    assert builtin is not None
    template = builtin.package.template("entry.cpp.in").decode()
    function = re.search(r"^int32_t CalAllToAllVBlocks\(.*\}$", template, re.MULTILINE)
    assert function is not None
    sweep = [(p, width) for p in range(1, COMM_MAX_RANK_NUM + 1) for width in range(1, 4 * p + 1)]
    main = (
        "int main() {\n"
        f"  for (int32_t p = 1; p <= {COMM_MAX_RANK_NUM}; ++p)\n"
        '    for (int32_t l = 1; l <= 4 * p; ++l) std::printf("%d\\n", CalAllToAllVBlocks(p, l));\n'
        "}\n"
    )
    output = build_and_run(
        gxx,
        compile_cxx,
        f"#include <cstdint>\n#include <cstdio>\n{function.group(0)}\n{main}",
        tmp_path,
    )
    expected = [builtin.launch_width.blocks(p, width) for p, width in sweep]
    assert [int(line) for line in output.split()] == expected


def test_the_orchestration_api_refuses_temporaries(gxx: str, tmp_path: Path) -> None:
    source = tmp_path / "temporary.cpp"
    source.write_text(
        '#include "pto_orchestration_api.h"\n'
        "void f() { CoreTaskArgs args; args.add_input(ChipTensor{}); }\n"
    )
    result = subprocess.run(
        [gxx, "-fsyntax-only", *FLAGS, str(source)], capture_output=True, text=True, check=False
    )
    assert result.returncode != 0
    assert "cannot bind non-const lvalue reference" in result.stderr


@pytest.fixture(scope="module")
def entry_driver(
    tmp_path_factory: pytest.TempPathFactory,
    gxx: str,
    compile_cxx: CompileCxx,
    variables_for: VariablesFor,
) -> Callable[[str], Callable[..., list[str]]]:
    """Build the driver around each package's fp32 entry; return a runner per handle."""
    built: dict[str, Path] = {}

    def runner(handle: str) -> Callable[..., list[str]]:
        if handle not in built:
            package = resolve(handle)
            folder = tmp_path_factory.mktemp("entry")
            variables = {
                **variables_for(package, "entry.cpp.in", "fp32"),
                "launch_core_count_method": "set_core_num",
            }
            entry = variables["entry"]
            (folder / "entry.cpp").write_text(render(package, "entry.cpp.in", variables))
            compile_cxx(
                [
                    gxx,
                    *FLAGS,
                    f"-DOPERAND_COUNT={package.abi.tensor_count}",
                    f"-DENTRY_ALIAS={entry}",
                    str(HERE / "entry_driver.cpp"),
                    str(folder / "entry.cpp"),
                    "-o",
                    str(folder / "driver"),
                ]
            )
            built[handle] = folder / "driver"

        def run(nranks: int, core_num: int | str, lanes: int, payload: int = FP32) -> list[str]:
            command = [str(built[handle]), str(nranks), str(core_num), str(lanes), str(payload)]
            result = subprocess.run(command, capture_output=True, text=True, check=True)
            return result.stdout.splitlines()

        return run

    return runner


def test_all_to_all_v_entry_launches_the_admitted_blocks(
    entry_driver: Callable[[str], Callable[..., list[str]]],
) -> None:
    run = entry_driver(A2AV)
    assert run(4, 10, 8) == [
        "config 8",
        "log all_to_all_v: requested_core_num=10 launched_core_num=8 active_lanes=8 nranks=4 "
        "lanes_per_peer=2",
        f"submit 0 IUUIU {0xC0FFEE} 8 1 0",
    ]
    # One block is still a sync-start launch; a rank-1 signal has one lane.
    assert run(2, 1, 0)[2] == f"submit 0 IUUIU {0xC0FFEE} 1 1 0"
    assert run(8, 7, 7)[1].endswith("launched_core_num=7 active_lanes=7 nranks=8 lanes_per_peer=0")


def test_all_to_all_v_entry_serves_pypto_s_own_host_dispatch(
    entry_driver: Callable[[str], Callable[..., list[str]]],
) -> None:
    """PyPTO's HOST orchestrators (pypto e2d0f78) dispatch a builtin with nranks and the
    CommContext only: the entry then launches one block, as upstream's entry does."""
    assert entry_driver(A2AV)(4, "-", 1) == [
        "config 8",
        "log all_to_all_v: requested_core_num=1 launched_core_num=1 active_lanes=1 nranks=4 "
        "lanes_per_peer=0",
        f"submit 0 IUUIU {0xC0FFEE} 1 1 0",
    ]


@pytest.mark.parametrize(
    ("nranks", "core_num", "lanes", "payload", "fatal"),
    [
        (2**32 + 2, 2, 2, FP32, "all_to_all_v: nranks must be in [1, 2147483647], got 4294967298"),
        (0, 2, 2, FP32, "all_to_all_v: nranks must be in [1, 2147483647], got 0"),
        (
            2,
            2**32 + 2,
            2,
            FP32,
            "all_to_all_v: core_num must be in [1, 2147483647], got 4294967298",
        ),
        (2, -1, 2, FP32, "all_to_all_v: core_num must be in [1, 2147483647], got -1"),
        (
            4,
            10,
            4,
            FP32,
            "all_to_all_v: signal stride (4) is smaller than the admitted block count (8) for "
            "core_num=10, nranks=4",
        ),
        (
            2,
            5,
            2,
            FP32,
            "all_to_all_v: signal stride (2) is smaller than the admitted block count (4) for "
            "core_num=5, nranks=2",
        ),
        (
            2,
            1,
            1,
            INT8,
            "all_to_all_v: input and target must hold DataType 0 elements for this variant, "
            "got 4 and 4",
        ),
    ],
)
def test_all_to_all_v_entry_rejects_without_submitting(
    entry_driver: Callable[[str], Callable[..., list[str]]],
    nranks: int,
    core_num: int,
    lanes: int,
    payload: int,
    fatal: str,
) -> None:
    assert entry_driver(A2AV)(nranks, core_num, lanes, payload) == ["config 8", f"fatal 5 {fatal}"]


def test_indexed_entry_launches_exactly_core_num_blocks(
    entry_driver: Callable[[str], Callable[..., list[str]]],
) -> None:
    run = entry_driver(INDEXED)
    assert run(2, 3, 3) == [
        "config 10",
        "log indexed_all_to_all_v: launched_core_num=3 nranks=2 remote_writers=2",
        f"submit 0 IUUIUI {0xC0FFEE} 3 1 0",
    ]
    assert run(4, 5, 4) == [
        "config 10",
        "fatal 5 indexed_all_to_all_v: signal stride (4) is smaller than core_num (5), nranks=4",
    ]
