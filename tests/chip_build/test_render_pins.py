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
        "a2": "e79386d523eb8084d8ec2e49194773d9a6101e0b88358a7dbdeb036fdf589413",
        "a3": "bb76d6edcef3e235a736c549aa6494682ff9058503a0dbb654dfa76a69fced15",
        "a5": "0f9a743fb1e97c9dc502d3ba54fe9c93f37d1275bbeb8961e653701435c5b095",
    },
    (
        "samples/moe_a2a_skbuild/src/moe_a2a_skbuild/dispatch.py",
        "samples/moe_a2a_skbuild",
    ): {
        "a2": "429b7952fddf3d27af6eb8ad3863d9123e9d607c7a3a5eb3361ff49c57540e2d",
        "a3": "56b8ae1ee796ed67879999e4049c3989171f4c1ab3c29c8bd403a14ad1bce3c1",
        "a5": "160e075c9b52540731d8c50e257a194048bb4ced4ae8d5266697837ef8f580ec",
    },
    (
        "tests/programs/chip_pipeline.py",
        "tests/programs",
    ): {
        "a2": "92462592529b27216276fd93bdb4daacf444b76e7eb52ed4977ea746f1c5cb4b",
        "a3": "6e253816cd1fea941a2e047c83340bdca95a9da89ceaacd9a74bf4d6779fa2f8",
        "a5": "2604bae0309c10c4200b227446c935420e5517125f42c36d89dc76d78fd28245",
    },
    (
        "tests/programs/chip_rail_int8.py",
        "tests/programs",
    ): {
        "a2": "c39e53c1f8da16f6d5d56895155e48cdc0596bf2625614fcb62dec72ef66b2a4",
        "a3": "222b02207a7b05fd0990b001eb9695a6da277138c62098eec43578d48fbd2a24",
        "a5": "6ecfb051decf4db9da136b50d7d74645a736f996c42aceb54b0bb45d39f6d584",
    },
    (
        "tests/programs/host_rail_fp32.py",
        "tests/programs",
    ): {
        "a2": "ebefb115571d63dc893be183f053ebe4c75b2aa1671188c3fe9b4ee57fa3b555",
        "a3": "b27a24bc7b0eff9a50a4a58552be008284f2e3bfeba4d02c80ded312c26fe13b",
        "a5": "2cace16ac86a76436c42d5d1eba40cdfe308f97469e0a3cda68209a5d8e1210d",
    },
    (
        "tests/programs/host_rail_int8.py",
        "tests/programs",
    ): {
        "a2": "94f7f3bda900c2cd7cceae8f315a9ccb7ce5bb549b2aa6080adffe35252a0a77",
        "a3": "53d1c19421130be6bfa3fce8a9c068549a899c7a2f8f874b656f5f21442af083",
        "a5": "4b3667addbacd964b064af6e481bd931907a79e05d358065495140dcd455a0fc",
    },
    (
        "tests/programs/host_rail_ranked.py",
        "tests/programs",
    ): {
        "a2": "8243f8120b1d5399cbcf0c7e0508b91b9706e24e279a87c4860c5148ad3361d7",
        "a3": "14ae126db2fdfb30381df12ed3b04718af754a3d1a204aff8f7823951f4a5561",
        "a5": "7aafe214ab773eb57a3f12a879c088832625b4026a9f94d7309e7d821e822b99",
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
