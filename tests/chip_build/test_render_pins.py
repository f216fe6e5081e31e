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
        "a2": "63ba64df9a182987c5740d7290befb135e23aeab89566aa76a80c77e53f9c6c3",
        "a3": "4e4daa318cbc9ae3acc8c9665b48ce91ddf5cb266973de5f25db8d23d2265ce8",
        "a5": "71f10962c59c005cf3cb815490c176ff1a0ca1fb8b0e549062a777f18a1ec154",
    },
    (
        "samples/moe_a2a_skbuild/src/moe_a2a_skbuild/dispatch.py",
        "samples/moe_a2a_skbuild",
    ): {
        "a2": "215adfe127b391bcc3cc97509c4e39cc217c9bea384ad67bbeb9ed4f5bd0426c",
        "a3": "949231bf66f511a8c634a01176f457b000756cb9bed40dde9f39c734ca372563",
        "a5": "2c7824a5e04e60b6e872664de8ca063c59654ecaebcc92cba2f72b96c837a176",
    },
    # The fused MC2 operator runs on a3 only.
    (
        "samples/moe_mc2/src/moe_mc2/pipelines.py",
        "samples/moe_mc2",
    ): {
        "a3": "0483eb542a1b23ffc5c569074fb33db74ae721f3a4fee02d2bdfa94ac8739d80",
    },
    (
        "tests/programs/chip_pipeline.py",
        "tests/programs",
    ): {
        "a2": "1d00b843ecf7639482afb187d02a7bd3129262457d57c676f09364d5b01cfe08",
        "a3": "1b856070bd30ffb3ff9f59b80db221a00f7af0f11d5274e479ff8eac67788970",
        "a5": "f1574b0f7a886481c8e70b3957665912f321128b7cd5e04f8a93e28f0521f20f",
    },
    (
        "tests/programs/chip_rail_int8.py",
        "tests/programs",
    ): {
        "a2": "c9d6fcd1cc40656f2d7cbceb4aaa20bba492ae9448981b923c6a179643f5f3cd",
        "a3": "0b0a2ffdd31da4f9231723670b827fc56315d9e5a1de9f675e6fd75ee660bb68",
        "a5": "17bda388f2835daf7f5ad8db451d1bd1385d0651d962c21d56125e889bb6e48d",
    },
    (
        "tests/programs/host_rail_fp32.py",
        "tests/programs",
    ): {
        "a2": "fca7239e088e39dc082f1dd2421ac7d9818520996097b90c2fb57558862f7488",
        "a3": "d1515a8522819849c74f30158729ea40d9d0da94603e94e96f8b7a70d87c28f9",
        "a5": "850eba0682155ed4a7e4e219e565fe9e2ba1f0050638fe0a256e2d7408351b11",
    },
    (
        "tests/programs/host_rail_int8.py",
        "tests/programs",
    ): {
        "a2": "eedc96036d549a9098e4f4e77cbc13f2929c2096543ee60221a13b6f18ce6f82",
        "a3": "1fa82bceb66805a7a8ec9131d6160716fbae70cddf82edd75684177e43512fb6",
        "a5": "f59a2360757f480428222101058ab8fb68881653efe89b0d38e2fc466871171e",
    },
    (
        "tests/programs/host_rail_ranked.py",
        "tests/programs",
    ): {
        "a2": "3500896cfb481f340c7e9498b9e95d99f1493d76228c5211751b73824890a703",
        "a3": "6c4bc825e00912adc364fc2d526971044638c4af452667a3b3c4565946c788ee",
        "a5": "7cce4bfd410d9767d30f48658e3975edee054e7b8c4fad0f714b22bf18c21c72",
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
