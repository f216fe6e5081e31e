"""Byte identity: the HOST and CHIP rails render the same kernels, and a render depends on
nothing but its inputs (not the output path, hash seed, home or time)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from _support.rendered import ALL_CHIPS, PROGRAMS_DIR, RENDERED_STEMS, Render, render_program

from pypto_build.chip_build.builtin_variants import rail_renders
from pypto_build.chip_build.chips import get_chip
from pypto_build.chip_build.determinism.diffreport import compare_trees
from pypto_build.chip_build.subbuild import RUNTIME, lower_file

#: (CHIP-rail program, its sub-build) and (HOST-rail program) per payload dtype.
RAILS = {
    "fp32": (("chip_pipeline", "chip_pipeline"), "host_rail_fp32"),
    "int8": (("chip_rail_int8", "chip_int8"), "host_rail_int8"),
}

_TIMESTAMP = re.compile(rb"(19|20)\d\d-\d\d-\d\d|\d\d:\d\d:\d\d|__DATE__|__TIME__")


@pytest.mark.parametrize("chip", ALL_CHIPS)
@pytest.mark.parametrize("dtype", sorted(RAILS))
def test_chip_and_host_rails_render_identical_kernels(
    rendered: Render, dtype: str, chip: str
) -> None:
    (chip_stem, orch), host_stem = RAILS[dtype]
    chip_kernel = (
        rendered(chip_stem)
        / chip
        / f"next_levels/{orch}/kernels/aiv/__builtin_all_to_all_v__{dtype}.cpp"
    )
    host_kernel = (
        rendered(host_stem)
        / chip
        / f"next_levels/builtin.tensor.all_to_all_v__{dtype}/kernels/aiv"
        / f"builtin_tensor_all_to_all_v__{dtype}_kernel.cpp"
    )
    assert chip_kernel.read_bytes() == host_kernel.read_bytes()
    c_type = {"fp32": "float", "int8": "int8_t"}[dtype]
    assert f"using Elem = {c_type};" in chip_kernel.read_text()


@pytest.mark.parametrize("stem", ["chip_pipeline", "host_rail_int8"])
def test_rail_renders_agree_for_every_variant(stem: str) -> None:
    (source,) = lower_file(PROGRAMS_DIR / f"{stem}.py", ALL_CHIPS)
    for chip in ALL_CHIPS:
        renders = list(rail_renders(source.program, get_chip(chip), RUNTIME))
        assert [name for name, _, _ in renders] == [
            "builtin.tensor.all_to_all_v__" + ("fp32" if stem == "chip_pipeline" else "int8")
        ]
        for _, host, chip_text in renders:
            assert host == chip_text


def test_renders_into_different_directories_are_identical(rendered: Render, tmp_path: Path) -> None:
    again = render_program("host_rail_int8", tmp_path / "a" / "much" / "longer" / "path")
    assert compare_trees(rendered("host_rail_int8"), again).identical


def test_a_render_under_another_hash_seed_and_locale_is_identical(
    rendered: Render, tmp_path: Path
) -> None:
    out = tmp_path / "subprocess-tree"
    command = [
        sys.executable,
        "-m",
        "pypto_build",
        "render",
        "host_rail_int8.py",
        "--out",
        str(out),
    ]
    env = dict(os.environ, PYTHONHASHSEED="4242", LC_ALL="C", TZ="Asia/Shanghai")
    result = subprocess.run(
        command, cwd=PROGRAMS_DIR, env=env, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    assert compare_trees(rendered("host_rail_int8"), out).identical


@pytest.mark.parametrize("stem", RENDERED_STEMS)
def test_no_absolute_path_or_timestamp_in_the_tree(rendered: Render, stem: str) -> None:
    tree = rendered(stem)
    forbidden = {str(tree).encode(), str(tree.resolve()).encode(), str(PROGRAMS_DIR).encode()}
    if len(Path.home().parts) > 1:  # a home of "/" would match every path separator
        forbidden.add(str(Path.home()).encode())
    files = [path for path in tree.rglob("*") if path.is_file()]
    assert files
    for path in files:
        data = path.read_bytes()
        for text in forbidden:
            assert text not in data, f"{path} contains {text!r}"
        assert not _TIMESTAMP.search(data), f"{path} contains a timestamp"
