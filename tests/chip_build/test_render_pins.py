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
        "a2": "ce016c971a8ff74c92bafb40daa9e4b4e26663e97551f777aea1619808a15a7f",
        "a3": "69ad40da377b6c753a8ad26dd07803ee89f5d394eaadb593e3a9df1bd806f10d",
        "a5": "468e2edfe6fd32812fc89e63b48a9e3a57b7c372f9e3112b46aedcf4be454e89",
    },
    (
        "samples/moe_a2a_skbuild/src/moe_a2a_skbuild/dispatch.py",
        "samples/moe_a2a_skbuild",
    ): {
        "a2": "249afa9e6662aec196c188f554978b5cb2a162999507558e9257bb560fd99ffd",
        "a3": "a6d2942df38bce732ce0fecafb67ed58c19a99110b01ee69de101412209970b2",
        "a5": "e42402b11a0320ca991afea9b9030bd4f36bdbb6ea74523fde900e30d5c43158",
    },
    # The fused MC2 operator runs on a3 only.
    (
        "samples/moe_mc2/src/moe_mc2/pipelines.py",
        "samples/moe_mc2",
    ): {
        "a3": "152f9aeb09b63055fe2018954abf488274c25d2847c0ea541fc633c892961a53",
    },
    (
        "tests/programs/chip_pipeline.py",
        "tests/programs",
    ): {
        "a2": "120bd64c9b959ba8d984d7ebeba4c011a4687fbf52823c162d9722891785af32",
        "a3": "0e97cf4f305fbcb578aff4ee7fc5e0c60234de4e4ef5b1c80e841e2d7b5a23d5",
        "a5": "bbc0ba8cb73ce65c1f595d36af27f67b317851766d5798ae4502491a99de714c",
    },
    (
        "tests/programs/chip_rail_int8.py",
        "tests/programs",
    ): {
        "a2": "77da890365ea04f434055b33f3722286ae77c326d98b22a5d4019ce160ce1a8b",
        "a3": "9146990a6dbbb7529f23e5b06ec3a4f326d37fd743376ebb3593e82f8161fc64",
        "a5": "1ca939fe1161087ccc4d5e8e0e5bcac90c25edde99afdf5c402ad44518600f12",
    },
    (
        "tests/programs/host_rail_fp32.py",
        "tests/programs",
    ): {
        "a2": "33b8f9f2e34163c62e572089539d5884892ee0252f91d522460b7e17ee68f741",
        "a3": "91bea8f0dbca6ef479b6457d526491715fe75eaadad8f566580da292ce366f3b",
        "a5": "770b30fcdfc87d7c4a9da0167f8cc05b108b1fcb46d1481d38b7c2dc726deb2e",
    },
    (
        "tests/programs/host_rail_int8.py",
        "tests/programs",
    ): {
        "a2": "56ca2237b2ac67bee0f1bb1c74500c4a16e694f3001d2e7e668f30afbd58f182",
        "a3": "6efa82c46efc95c075b1a06deecfc87a715f5a1b21ef5b56fa9494a0588e095b",
        "a5": "3eede7a8f61c0b505b8b6937fc8e6160ed9f8ad30eda996e303c7d920622a75f",
    },
    (
        "tests/programs/host_rail_ranked.py",
        "tests/programs",
    ): {
        "a2": "f756d529523362928ef0ca34e467383304271421c4a0580c638a3504efc8f16c",
        "a3": "c3ca97df7dc55362e8084aa7afa6c9030669da4a79af99df736f1354fb3a04ee",
        "a5": "5c3a4f54a14e37995bef0d3d22b62537e97101b247eeaf9ae56bf6e6955eec6f",
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
