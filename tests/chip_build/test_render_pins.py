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
        "a2": "1a236dd494a01d05ee7a58b62b7a0838273b7b29b79b7861eb317ec6d0e26f9e",
        "a3": "c0f4984351c1b3d1d3f2e7018321e0e472e14d0e0cf87f706696d240c1a14875",
        "a5": "6ef5b5c4cfb94e333e818631c4e413909f005a487abce0dbdee6e5096d1a42f0",
    },
    (
        "samples/moe_a2a_skbuild/src/moe_a2a_skbuild/dispatch.py",
        "samples/moe_a2a_skbuild",
    ): {
        "a2": "9523b1b1aa0d0d301f5207db9890919506176e308b076fce5515481d5e6f185b",
        "a3": "8f893cc4158b56b616eb4259070fc852a98e1a7b8cc55298a9700840c90b6db4",
        "a5": "d947df033d96cbd833ada023f553182a3b79e3f7ef46cb14a02e8f78b8dfab36",
    },
    # The fused MC2 operator runs on a3 only.
    (
        "samples/moe_mc2/src/moe_mc2/pipelines.py",
        "samples/moe_mc2",
    ): {
        "a3": "9e63305bf71f3b10d6d114f154deaaf1ede2945891f76a0ee3499cfaf6218d05",
    },
    (
        "tests/programs/chip_pipeline.py",
        "tests/programs",
    ): {
        "a2": "8e410d240a5f4127907434dfc9d4cd62f7b9caf350ff0df5369d0b3a1305815a",
        "a3": "1997150bba243c37048720c909914d366e9c85ca18f282ac0905338b0e2f38a5",
        "a5": "bdde9be446ef758818c4a310ac16dbf5edb4eb49b0d6aa0cda6a2b75aa02ad4b",
    },
    (
        "tests/programs/chip_rail_int8.py",
        "tests/programs",
    ): {
        "a2": "a51cfec6da94b6bb9d1b11f0fc84b7b559136067de22e718bb9caad8778faf74",
        "a3": "64b9b68d95fbf0ed08e064a6139ed6bfa73b69144130c85e176947a41cc1636e",
        "a5": "fe5f0b75d7660717f20886574ec25d6148a7fb9ebce7864f339529de3e61ca9d",
    },
    (
        "tests/programs/host_rail_fp32.py",
        "tests/programs",
    ): {
        "a2": "1381d23a789788e2e6a57f86baf0dd66d5d600ac4892bd4357baccb003edbdd9",
        "a3": "e6b9e86aa73c4cbb17ece086fa920673145ddb8fb06462713990e40cc7dc83d9",
        "a5": "799960202b9fd878acd7d06bf2458b033b7c84e8a12da5f8411ecd93d110ef50",
    },
    (
        "tests/programs/host_rail_int8.py",
        "tests/programs",
    ): {
        "a2": "03a0f8b295f18f3de162f2a71b89d474d826e2f4f169944db7fe213b29679f6e",
        "a3": "5a0ef2e133ec961970bb0da2d617f4c3e27a4d56cc34e56fc09942ae693a9809",
        "a5": "9a3166c1dc6be1b243bc47bed2d7fbbe73eadfd9067b42df8f32b7f71ea17b1a",
    },
    (
        "tests/programs/host_rail_ranked.py",
        "tests/programs",
    ): {
        "a2": "95e1def1af0cf5629bca8b2cfb3c536d631e48a7d1adabd5c77e7c51a71dd029",
        "a3": "8d54c31e5d50c52545803707bd3184bc5f336c48425c7b251df01bf294c8e851",
        "a5": "65436a9e568e28e3dc93545aebe1adcb8fd6bad10c119dd7f9cef45cac9b680a",
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
