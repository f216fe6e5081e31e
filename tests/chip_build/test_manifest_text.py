"""A manifest's text is ``json.dumps(document, indent=2, sort_keys=True)`` whatever it holds:
its list of files is written by a template of one entry."""

from __future__ import annotations

import json

import pytest

from pypto_build.chip_build.tree_manifest import _manifest_text

_FILE = {"path": "next_levels/p/kernels/aiv/k.cpp", "sha256": "ab" * 32, "size": 12}


def _document(files: list[dict[str, object]], **extra: object) -> dict[str, object]:
    return {
        "chip": "a3",
        "files": files,
        "format_version": 1,
        "inputs": {"pipelines.py": "cd" * 32, "kernels/k.cpp": "ef" * 32},
        "toolchain": {"name": "g++", "version": ""},
        **extra,
    }


@pytest.mark.parametrize(
    "document",
    [
        _document([_FILE]),
        _document([_FILE, {"path": 'b/"quoted"\\é\u2603.h', "sha256": "00" * 32, "size": 0}]),
        _document([], binary_context={"runtime": "sim", "chip": "a3"}),
        _document([_FILE], toolchain={"name": "\0files\0", "version": "x"}),  # the marker
    ],
)
def test_the_text_is_the_encoders(document: dict[str, object]) -> None:
    files = document["files"]
    assert isinstance(files, list)
    assert _manifest_text(document, files) == json.dumps(document, indent=2, sort_keys=True)
