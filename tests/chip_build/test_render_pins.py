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
        "a2": "aebf5beda6afdb4ff326e1970eac173b4f2b50aeec971afebcbcfd5469ff9459",
        "a3": "78ec74dc1051a96ef2cd8e68b3b5601baaf7c3406f8de94bf3bab012f415ca0f",
        "a5": "24a812c8f394c9e77388e4e5429513e7dc9e14e3d774829cc29cc395317102e2",
    },
    (
        "samples/moe_a2a_skbuild/src/moe_a2a_skbuild/dispatch.py",
        "samples/moe_a2a_skbuild",
    ): {
        "a2": "8d06e25e5642175a6f734ae9832ffc4b62891a364e1b6b16762fc2100a20a9b0",
        "a3": "eeefd2efff312f50c91ddab3120ec18600b531b16899d9be4139293ecebef380",
        "a5": "109f9e335cbe4e663fc3e2f5972ccb5d28bb1bbe8105c40a23e83310b4d6dbb7",
    },
    (
        "tests/programs/chip_pipeline.py",
        "tests/programs",
    ): {
        "a2": "8105f45ed5cd069b05038fdfe1e1bfeb1ffcfdf901b834608e47d5ba3a9d6da6",
        "a3": "890585b560d0ca4b2446e842220dd3e63ee93a4bd2c36b2616591dabb1c3578b",
        "a5": "c634cac18a2acd26c6a9ab7c1125c1cfb8e124185d8b356f70f74408b84f154c",
    },
    (
        "tests/programs/chip_rail_int8.py",
        "tests/programs",
    ): {
        "a2": "a3a981561bd31ea53057cf687c260ff691f02105dcb16a7f86059f1e44c8adb9",
        "a3": "93327a6f9242e6087a2bf6489e0ae8b584d5fcfaa5524d94a4c2bfe4ff5338e7",
        "a5": "b765c763056465885eebcd8a07a8ca8b34e555c31abf15cc1fa9de112868c10d",
    },
    (
        "tests/programs/host_rail_fp32.py",
        "tests/programs",
    ): {
        "a2": "7b6f1b386a87c51272336388744330cdb1481adef1dd9b25e3df6eba4bc8a085",
        "a3": "6ebd0a75f972ee642efb75a7ba664f3690ef9e5670d1318d02eb76980b5a0262",
        "a5": "30a459b4743c1743f7ec0fac009d1a4684a0f3d8e5a3b555a8904f6a644f37fe",
    },
    (
        "tests/programs/host_rail_int8.py",
        "tests/programs",
    ): {
        "a2": "059a92f814a25481d1620847a8edd0408bf8df50a38d8a5ea6cb5f2aab624451",
        "a3": "6b8d7265edec3ef774fb82db65c9380db855217963eb3b4104221c69feaba1b5",
        "a5": "bf036d2b8ec87607710f78968e883a95125c4320851e2ba8494f447198430f0c",
    },
    (
        "tests/programs/host_rail_ranked.py",
        "tests/programs",
    ): {
        "a2": "c198917ec9aa4b5dab41d612719e559a70dae271811f8fa494693a0aa4752564",
        "a3": "196f173685099e59405248d941b33a5209d5c270dd92239b7ee0a5fe24473ac4",
        "a5": "1c2ae54636ac7bf21be53f304b655e567eec3ba1dfdc4136b9a485c66d369e06",
    },
    (
        "tests/programs/orchestration_features.py",
        "tests/programs",
    ): {
        "a2": "66d00d8473768b0a7d7f771651c8b856a5dd35cc3834c6fd64bdbba51031c42e",
        "a3": "7e72b29cd410b9887dcb708928553b66bdb8eb24f7f3c7a6601fea97bd6ec93f",
        "a5": "ba016bd5aca0cab2776895df224c7ce945ee7a52d813c208a53f90a78673fdf7",
    },
}


def _render_digests(program: Path, source_root: Path, out: Path) -> dict[str, str]:
    chips = ("a2", "a3", "a5")
    render_subbuilds(lower_file(program, chips), chips, out, source_root=source_root)
    return {
        chip: hashlib.sha256((out / chip / "manifest.json").read_bytes()).hexdigest()
        for chip in chips
    }


@pytest.mark.parametrize(("program", "source_root"), sorted(PINS))
def test_rendered_trees_are_pinned(program: str, source_root: str, tmp_path: Path) -> None:
    digests = _render_digests(ROOT / program, ROOT / source_root, tmp_path / "out")
    assert digests == PINS[program, source_root]
