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
        "a2": "34244f1baf37cf8aa4cbc6a3fcf8506989dc32626e1f88506f84adf49809c5ff",
        "a3": "b6a77779cf482b21aaa6e1b31e5db158da155a01202d57cc3aa96adff82c425f",
        "a5": "f7016d86d5bb00a15f9f59c2bb529d211b621993f9f6b7459a5adfe3f9e63c63",
    },
    (
        "samples/moe_a2a_skbuild/src/moe_a2a_skbuild/dispatch.py",
        "samples/moe_a2a_skbuild",
    ): {
        "a2": "fd91b9def01ab8d60b8e152a13f5887874e9cc1901dbfe36a00451f1ddc72cb8",
        "a3": "d09e862b39ab27659101bb3bede055af1104016233c2552cfa67690c486c8de8",
        "a5": "ef75005610a61919fe35551625c07c6615a538668c8bc75a6dc5e699fedc6a92",
    },
    # The fused MC2 operator runs on a3 only.
    (
        "samples/moe_mc2/src/moe_mc2/pipelines.py",
        "samples/moe_mc2",
    ): {
        "a3": "e6dc6cb3e39cf0e86cf300182eb94bfb1b3ee7f59149b733a9b639773a557d03",
    },
    (
        "tests/programs/chip_pipeline.py",
        "tests/programs",
    ): {
        "a2": "4ff9b3c1e3eea947fcb01e6f440adeb4786682498fbfe0b860c8772c4b7f4498",
        "a3": "e8c074219c5f05d4a4eca1ec1d865fc741455a2b26d6e902ff32e32d03fa9251",
        "a5": "9399c58fa6dcf2c9e54e68c5838fd8c629563f0f66308c12af06854007d9161a",
    },
    (
        "tests/programs/chip_rail_int8.py",
        "tests/programs",
    ): {
        "a2": "c2bed9523d7835b0b21aaf04e114fcd9f4fad03f85bc64e8ca8855e88970e5d1",
        "a3": "43c798673eec3bcc17967534b69b8365bc0760363f44151a08286654cabe9853",
        "a5": "c0b373b2440460e6ee6c6071c5580e262cf8276ed640622a69bf973893d7c390",
    },
    (
        "tests/programs/host_rail_fp32.py",
        "tests/programs",
    ): {
        "a2": "3dca7c8029c1d3293be37c4b7654fc0aacb2cda9ecfcae79032812e477500274",
        "a3": "54135816563410cbff9f2aaf92bf2b7458de7abe51890b41355b533375599c24",
        "a5": "8af8f3f103abf7635e8d2efe3d38404198b3930468e5c66280dd3e7379c4e339",
    },
    (
        "tests/programs/host_rail_int8.py",
        "tests/programs",
    ): {
        "a2": "8efac84cc13c8854e68a39bc161bd75f6a9ea2fd6ac895d0f0028a8d116132a5",
        "a3": "cffbddfae5e81b1b1123e83a675a7a90b743d40dcd989214c2f9049bcbf81890",
        "a5": "9c10c488be18ef3c279bdcf2da3f2c669f9c806f8b0146d613b795e69fb14316",
    },
    (
        "tests/programs/host_rail_ranked.py",
        "tests/programs",
    ): {
        "a2": "ec6d8dd495d7a646f28ea4f057222f10e6375a1641dc76f18ece480df166c084",
        "a3": "4d49311a8a6dac889baa9c5ab164d730253273b8d5ba6b43e12e570e2ca43016",
        "a5": "b539b3b8129ef30ded52f68c8a91a2d62bee9768ffa92d6e82ffb7924b954467",
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
