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
        "a2": "962411857eba8cabd57e2f747351ad001876b60d510f56b34e113c4f49d164d7",
        "a3": "24ae44d4f9239c56151ede50779e36691718058ec0595ce7b3f555b7beedb785",
        "a5": "9aac6e80dcf69d27273567c7ed10bef34f21cf76006b31cb8f81260e6c5bfe9b",
    },
    (
        "samples/moe_a2a_skbuild/src/moe_a2a_skbuild/dispatch.py",
        "samples/moe_a2a_skbuild",
    ): {
        "a2": "b4d7821c644f0e46a5d92a0276c70d1a53c35991d1b8c45d09bc8e7ece8af9d3",
        "a3": "ab8d28cfc061582a97654d564a7f49f3088d8cb823eff94cb99122bace84419b",
        "a5": "0a2e84ee6f91059664140311d6c98e840a1dd304898b9851102f292d2a056645",
    },
    # The fused MC2 operator runs on a3 only.
    (
        "samples/moe_mc2/src/moe_mc2/pipelines.py",
        "samples/moe_mc2",
    ): {
        "a3": "91e10764f675132b29810177c66bc9b9609b5f208550dac52718109540c4f270",
    },
    (
        "tests/programs/chip_pipeline.py",
        "tests/programs",
    ): {
        "a2": "3f4a2e2455607a9222ef768c0323c6f173fbaf8817fd371248278994a1061302",
        "a3": "03d8c73f7c2d76459e30e2f95d4266f49559b41e3274a18b3e1842f27e709901",
        "a5": "7e16063a6c5b4571d96331c2c338bab172d13d93ed7a16d8b2455812dad2aede",
    },
    (
        "tests/programs/chip_rail_int8.py",
        "tests/programs",
    ): {
        "a2": "5cfc13fcc9b99f9bd55f4803cd268256de830576674f3c18152bf19f2ddaa256",
        "a3": "bb1fd7ab0ea115914cfec81281efd694cbcbde53a3f074967422372549f95361",
        "a5": "e997fb7602d9396522118e924c8b404c54e424036cf6c62a5efeec4558717d84",
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
