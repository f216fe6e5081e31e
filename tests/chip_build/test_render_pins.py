"""The rendered trees of the samples and the shared test programs, pinned byte for byte.

A render's ``manifest.json`` lists every file of a chip tree with its SHA-256, so the digest of
the manifest pins the whole tree. A change of these digests is a change of what ships to PyPTO's
runtime: make it on purpose, and update the pins in the same commit that explains it.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from pypto_build.chip_build.subbuild import lower_file, render_subbuilds
from pypto_build.tree_layout import TreeLayout

ROOT = Path(__file__).resolve().parents[2]

#: (program file, source root) -> {chip: SHA-256 of the chip tree's manifest.json}
PINS: dict[tuple[str, str], dict[str, str]] = {
    (
        "samples/moe_a2a/src/moe_a2a/pipelines.py",
        "samples/moe_a2a",
    ): {
        "a2": "f334030f83d7f0d01cb99aaa54a37d38e5b7c505d256ca12530aa764b7fc7519",
        "a3": "702d6f1b95208d4e8a6b717a682aa4a5b8c8e3553f47f13d38cc3ec3a6f7df45",
        "a5": "f3dccdd696a183f652a106efedc708280bf6f0db694622a6a83b1e2303e73ac3",
    },
    (
        "samples/moe_a2a_skbuild/src/moe_a2a_skbuild/dispatch.py",
        "samples/moe_a2a_skbuild",
    ): {
        "a2": "83be68bf590f722c968858af31e0a6fc7d6d60303e3cdab457c06284705b2004",
        "a3": "82d60561ca9a2f3b34d17d5a4308e966f551e6fd144ec8f1937aeadaec1a226d",
        "a5": "00298bc73e45328b166e3b3db2ac6c2656e8522a02e136cad34f6a12ea31303d",
    },
    # The fused MC2 operator runs on a3 only.
    (
        "samples/moe_mc2/src/moe_mc2/pipelines.py",
        "samples/moe_mc2",
    ): {
        "a3": "b9ff394304697779c90bf5df08c961da24035886d02907d86ea9132fdbc4426e",
    },
    (
        "tests/programs/chip_pipeline.py",
        "tests/programs",
    ): {
        "a2": "6ef5d0c978be0637a98087c62c2551c046ed4c0a111569b29b0dc4b69aef7c43",
        "a3": "c4351832328a3b59fb49bdcaac8da97b46b6bfe71883a479c04b2fd9853e9c4c",
        "a5": "1205edbf38184f173054bfe06110d3810a0617cd1d781db4c221064cff59872b",
    },
    (
        "tests/programs/chip_rail_int8.py",
        "tests/programs",
    ): {
        "a2": "cfe9a332ce9c639751356009aee00e27a7949c72cfa642e5127e6fd7b34dd8a7",
        "a3": "3352a36d497c3d22270564946831bc532254a1fad63ca36cc79d4677a5e76e3a",
        "a5": "fd47002edaf28598ea586d5650d5d0a98e1136435762654d999a9242e3cd2310",
    },
    (
        "tests/programs/host_rail_fp32.py",
        "tests/programs",
    ): {
        "a2": "53f81795985bb66162ca67ac6460a67ec4be10775414ed4ac5b82d388e511974",
        "a3": "372a8a25bfdd290668a12bf80fcb3d19479c864377d05ec85d56a9e660291a6b",
        "a5": "6a709d66843dd44307ef0d74e579a5e1e46bd035e04d9d11db3a2760d25df11e",
    },
    (
        "tests/programs/host_rail_int8.py",
        "tests/programs",
    ): {
        "a2": "934f792575b745c4740030738c3f051e7057fb9a758f655c2855d0c9bd7c6bf1",
        "a3": "4022c45528839d06507f87cf712185545309f48b0347ca6aa3b23f533504d0eb",
        "a5": "783c9e32218f7ca618eb295889c246beb51af8094bbbeb0b1c6ffa1f2e2fbf96",
    },
    (
        "tests/programs/host_rail_ranked.py",
        "tests/programs",
    ): {
        "a2": "ce77fedba016d3f33f9ea707e823ee1e95fe5eb226580e45fa9c4dcde47ba479",
        "a3": "a81a663f3e62a88cc3e0402047cc189e0e6d8e8657acc64d3fa0f01ed8a19e4d",
        "a5": "c737986d2ccd044263eeeb77d400d6dd0b6bf79e63c348c27614005c3e747fb8",
    },
    (
        "tests/programs/orchestration_features.py",
        "tests/programs",
    ): {
        "a2": "5899ff235e654e865e29b17901781b963f9f25fabf3f48ca149158b379525ce9",
        "a3": "ee6a502913bae54b66effeb8a96c568269e315d59fc80adec5a14c81b5d83924",
        "a5": "7f96bf29b28bdd2f6b3ef4990dac1f30daee5fa157fcb7dbf8dd0286736d8040",
    },
}


def _render_digests(
    program: Path, source_root: Path, out: Path, chips: tuple[str, ...]
) -> dict[str, str]:
    render_subbuilds(lower_file(program, chips), chips, out, source_root=source_root)
    return {
        chip: hashlib.sha256(TreeLayout(out / chip).manifest.read_bytes()).hexdigest()
        for chip in chips
    }


@pytest.mark.parametrize(("program", "source_root"), sorted(PINS))
def test_rendered_trees_are_pinned(program: str, source_root: str, tmp_path: Path) -> None:
    pins = PINS[program, source_root]
    digests = _render_digests(ROOT / program, ROOT / source_root, tmp_path / "out", tuple(pins))
    assert digests == pins
