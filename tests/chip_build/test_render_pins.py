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
        "a2": "3897c7a4b2dd1ea646e1b22d7d1f460d02fd095dfb2129402994ecd6eac20351",
        "a3": "99acc1d4f4c2702874059c18d68603d5fa63d3b8668c36e859f7b25bf51d4555",
        "a5": "0a5f5fb37be2d128ad26b7dbeabbec0b2e38591941b85b494db16ea10dd52b05",
    },
    (
        "samples/moe_a2a_skbuild/src/moe_a2a_skbuild/dispatch.py",
        "samples/moe_a2a_skbuild",
    ): {
        "a2": "29973442c99a9e5ec426d41c9358329fa1da39953a1c8ec40cd16786cb6cd62c",
        "a3": "4ad388fae4d42b7af3029e77eecc05313dd532a1d71179ecc0c5bbf49340c73a",
        "a5": "ccc922f7e4ec19cd0b90177f2206a0b93dcb99f65024a6ee169a461f37b352e8",
    },
    # The fused MC2 operator runs on a3 only.
    (
        "samples/moe_mc2/src/moe_mc2/pipelines.py",
        "samples/moe_mc2",
    ): {
        "a3": "ca4609f0ccb12413a9d069b84c9ffd27f5b0a61d4ac484c14b8738abeefdc66f",
    },
    (
        "tests/programs/chip_pipeline.py",
        "tests/programs",
    ): {
        "a2": "50445eced6dd6604591066343a2f4e9ad816bd2a48d514774a2283e4cbc375b4",
        "a3": "871a5e36b9d47c2d42b270e3d84636dc5851d8bbbb45914504a8d0f33b2f971c",
        "a5": "16606e2b6776de0553beab2cc4ce6d19a75479410e159c2d67bb477ee58ece5a",
    },
    (
        "tests/programs/chip_rail_int8.py",
        "tests/programs",
    ): {
        "a2": "a1e5ca7cec7fe95fba5b0470d3ecdf0c9496a7b1a5419c71d0ff48bee97e3269",
        "a3": "082fb9a5d92d17ce75c8d06c1bf6e7bf20005798f1179baca5650a10cc0b7c3f",
        "a5": "f6f66f1cfeb97e320c58acdb259fccbaedd2d76e1940232c57703dc1c46bf89b",
    },
    (
        "tests/programs/host_rail_fp32.py",
        "tests/programs",
    ): {
        "a2": "275583dd92085f73efd9f26b66f56398b1f0970644a8c1ad75d3ac94a227fb8d",
        "a3": "39030a27634f7838eaf5609b545cf4f6758d3bbf8e58843dd27190b547963766",
        "a5": "edfe109be05da3eb5001258244429ab6fffefbc9e341692fd18a6a1b79024550",
    },
    (
        "tests/programs/host_rail_int8.py",
        "tests/programs",
    ): {
        "a2": "e4ba1ca68a6a22c23741bef588ecce08db591ed989325e4a1deb227feff0baf1",
        "a3": "5933523adf7cfe282b1852a46145a5cc437afb3576fbbac4aea2abeda84fccd9",
        "a5": "29c30b8d598e4413ba610bd92517ef6c1d41ae2a2bed3ada9e68cf42b1178743",
    },
    (
        "tests/programs/host_rail_ranked.py",
        "tests/programs",
    ): {
        "a2": "92e394bb72e2a570d7207277fc2ef8d162014d9ffc99e85368367deff0010309",
        "a3": "b4583504835a1944be741dfe23c726df370c7b69484e32b800914a4999ca60a5",
        "a5": "2da2cacbbbb129c8341c4199eabf07910701cb083c9627ee0e925a8c12a4613c",
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
        chip: hashlib.sha256((out / chip / "manifest.json").read_bytes()).hexdigest()
        for chip in chips
    }


@pytest.mark.parametrize(("program", "source_root"), sorted(PINS))
def test_rendered_trees_are_pinned(program: str, source_root: str, tmp_path: Path) -> None:
    pins = PINS[program, source_root]
    digests = _render_digests(ROOT / program, ROOT / source_root, tmp_path / "out", tuple(pins))
    assert digests == pins
