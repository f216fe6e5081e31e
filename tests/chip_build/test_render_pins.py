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

ROOT = Path(__file__).resolve().parents[2]

#: (program file, source root) -> {chip: SHA-256 of the chip tree's manifest.json}
PINS: dict[tuple[str, str], dict[str, str]] = {
    (
        "samples/moe_a2a/src/moe_a2a/pipelines.py",
        "samples/moe_a2a",
    ): {
        "a2": "a6bb16c5eb8ec37d01802def9f8576cbbc900ca275ca392dbfe143c8a284f84a",
        "a3": "d9acefbb00cba41a527c4a114c61841e4767de525809f07bc234cbcd27d95548",
        "a5": "d34628f31ae693942442600169a4a865481e025b5414f56516b9cb541acda243",
    },
    (
        "samples/moe_a2a_skbuild/src/moe_a2a_skbuild/dispatch.py",
        "samples/moe_a2a_skbuild",
    ): {
        "a2": "fc528ad7882c651f6dd5c198975c0d32dbf8febc54fa68821422ae639263630d",
        "a3": "4d797d4e7c20193e9a741533396987d3850af081c4c646287347433e84487930",
        "a5": "0321c24f3f593615f4fce6738f8a39ae35a569f94367da5ac2e1b3a0b68c8979",
    },
    # The fused MC2 operator runs on a3 only.
    (
        "samples/moe_mc2/src/moe_mc2/pipelines.py",
        "samples/moe_mc2",
    ): {
        "a3": "26894325fe617a4ae0e649b1e120c4dc4b7b35bb7782225f06668d51af8c4bc3",
    },
    (
        "tests/programs/chip_pipeline.py",
        "tests/programs",
    ): {
        "a2": "e324dfa143df9e6cf92ad34845cf16b57a8f70b81593ac1376c8edb1a91491e8",
        "a3": "15ec4eb1153528cd16cca90a43ca5c9636a7d2040502706f63f062b6694f3151",
        "a5": "cfb22a4800cef3b0724cd2c86ae6ca7bf46a41be8bf31a369752b3e18d6ed267",
    },
    (
        "tests/programs/chip_rail_int8.py",
        "tests/programs",
    ): {
        "a2": "208bfc9dbb1068b3c7e6a756aa7753222d55bc5375e11aa44163a4aea986aa95",
        "a3": "f548e7e8b1ff00530356a955e4680fdbd737c03da857bf9900a88568ec22ba27",
        "a5": "42654993a3fed23d50329c96add444d2088f96604ee87e514aa07f09cd0abf96",
    },
    (
        "tests/programs/host_rail_fp32.py",
        "tests/programs",
    ): {
        "a2": "28fa7a27fb9170f8422b5377512b2877a4e404c1ca397182a91e4aaac972241c",
        "a3": "eb30d810c26c4bb3b984e82e5ebba49caec0341773638f9da771d386cc1667a6",
        "a5": "7ff6f2907bc7f99d266b23447938379498c87010b7c996192a27dce3e5477d61",
    },
    (
        "tests/programs/host_rail_int8.py",
        "tests/programs",
    ): {
        "a2": "6b6a4c6c27e5b34f9b361e0727595bab62877e702150b0f4e75c99737ace1271",
        "a3": "e2b79b39616ac88249891f23304f6e9cb48cefffa9bcfbe07897a27eda930bff",
        "a5": "be2b0dcc9c08ef4c2d9620928a24a26ac372254e085a6a3474796d8011ebe133",
    },
    (
        "tests/programs/host_rail_ranked.py",
        "tests/programs",
    ): {
        "a2": "cbb68a5e49e1dc86cd032c2e42f613215547af4ec5259241956086e8b31a8b48",
        "a3": "c14ae8f651b6a08c26e8b73be941ee7cc90b641aa85321400487bc3154923c6a",
        "a5": "0af5a48c1305ceff2a1e2bf0624e4f374dbeb7f3bb4df97241f4ef2534e82eda",
    },
    (
        "tests/programs/orchestration_features.py",
        "tests/programs",
    ): {
        "a2": "36f9b1d92bab6ad8fb15589ce29b8ee67e6cd0f74f04a5917b6cb382d37a0140",
        "a3": "c80927ff85161a659428bd74ec1a8b3f847a6c2a786b4f9f79d423bbd95da986",
        "a5": "c42a3fee547589df1d86cc0675e58f547ccc963b677fe8716cc2a225216ea921",
    },
}


def _render_digests(
    program: Path, source_root: Path, out: Path, chips: tuple[str, ...]
) -> dict[str, str]:
    render_subbuilds(lower_file(program, chips), chips, out, source_root=source_root)
    return {
        chip: hashlib.sha256((out / chip / "manifest.json").read_bytes()).hexdigest()
        for chip in chips
    }


@pytest.mark.parametrize(("program", "source_root"), sorted(PINS))
def test_rendered_trees_are_pinned(program: str, source_root: str, tmp_path: Path) -> None:
    pins = PINS[program, source_root]
    digests = _render_digests(ROOT / program, ROOT / source_root, tmp_path / "out", tuple(pins))
    assert digests == pins
