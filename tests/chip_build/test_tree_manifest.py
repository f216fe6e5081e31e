"""manifest.json: every file of a sub-build with its hash, deterministic, and verifiable."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import pytest

from pypto_build.chip_build.tree_manifest import ManifestProblem, verify_manifest, write_manifest
from pypto_build.files import atomic_write_bytes, atomic_write_text
from pypto_build.tree_layout import MANIFEST, TreeLayout

FILES = {
    "next_levels/chip_pipeline/kernel_config.py": b"KERNELS = []\n",
    "next_levels/chip_pipeline/kernels/aiv/stage_step.cpp": b"// stage\n",
    "next_levels/chip_pipeline/kernels/aiv/stage_step.o": bytes(range(7)),
    "orchestration/host_orch.py": b"",
}
INPUTS = {
    "src/moe/pipelines.py": hashlib.sha256(b"program").hexdigest(),
    ":pypto_build.builtins.collectives.all_to_all_v": hashlib.sha256(b"templates").hexdigest(),
}


def make_tree(root: Path) -> Path:
    for rel, data in FILES.items():
        atomic_write_bytes(root / rel, data)
    return root


def write(root: Path) -> Path:
    return write_manifest(
        root, chip="a3", toolchain="sim", toolchain_version="g++ 13.2.0", inputs=INPUTS
    )


def test_manifest_content(tmp_path: Path) -> None:
    root = make_tree(tmp_path / "a3")
    path = write(root)
    assert path == root / MANIFEST
    text = path.read_text(encoding="utf-8")
    assert text.endswith("}\n")
    document = json.loads(text)
    assert document == {
        "chip": "a3",
        "files": [
            {"path": rel, "sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}
            for rel, data in sorted(FILES.items())
        ],
        "format_version": 1,
        "inputs": INPUTS,
        "toolchain": {"name": "sim", "version": "g++ 13.2.0"},
    }
    assert text == json.dumps(document, indent=2, sort_keys=True) + "\n"


def test_files_the_caller_placed_are_described_as_it_says(tmp_path: Path) -> None:
    root = make_tree(tmp_path / "a3")
    expected = write(root).read_bytes()
    binary = "next_levels/chip_pipeline/kernels/aiv/stage_step.o"
    data = FILES[binary]
    placed = {binary: (hashlib.sha256(data).hexdigest(), len(data))}
    (root / binary).write_bytes(b"")  # not read back: described as the caller says
    write_manifest(
        root,
        chip="a3",
        toolchain="sim",
        toolchain_version="g++ 13.2.0",
        inputs=INPUTS,
        written=placed,
    )
    assert (root / MANIFEST).read_bytes() == expected


def test_manifest_is_identical_for_identical_trees_at_different_paths(tmp_path: Path) -> None:
    first = write(make_tree(tmp_path / "one" / "a3")).read_bytes()
    second_root = tmp_path / "elsewhere" / "deeper" / "a3"
    for rel, data in reversed(FILES.items()):  # a different creation order
        atomic_write_bytes(second_root / rel, data)
    second = write(second_root).read_bytes()
    assert first == second
    assert str(tmp_path).encode() not in first


def test_rewriting_excludes_the_previous_manifest(tmp_path: Path) -> None:
    root = make_tree(tmp_path)
    first = write(root).read_bytes()
    assert write(root).read_bytes() == first
    assert MANIFEST not in first.decode()


def test_nested_manifest_name_is_listed(tmp_path: Path) -> None:
    root = make_tree(tmp_path)
    atomic_write_text(root / "sub" / MANIFEST, "{}")
    paths = [entry["path"] for entry in json.loads(write(root).read_text())["files"]]
    assert f"sub/{MANIFEST}" in paths


def test_unknown_chip_rejected(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown chip 'b9'"):
        write_manifest(
            make_tree(tmp_path), chip="b9", toolchain="sim", toolchain_version="1", inputs={}
        )


@pytest.mark.parametrize(
    ("inputs", "message"),
    [
        ({"/home/u/p.py": "0" * 64}, "is an absolute path"),
        ({"C:\\p.py": "0" * 64}, "is an absolute path"),
        ({"p.py": "abc"}, "has no SHA-256 hex digest"),
        ({"p.py": "A" * 64}, "has no SHA-256 hex digest"),
    ],
)
def test_inputs_validated(tmp_path: Path, inputs: dict[str, str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        write_manifest(
            tmp_path, chip="a5", toolchain="cann", toolchain_version="8.3.RC1", inputs=inputs
        )


def test_verify_clean_tree(tmp_path: Path) -> None:
    root = make_tree(tmp_path)
    write(root)
    assert verify_manifest(root) == []


def test_verify_reports_every_difference_sorted_by_path(tmp_path: Path) -> None:
    root = make_tree(tmp_path)
    write(root)
    TreeLayout(root).host_module.unlink()
    atomic_write_bytes(root / "next_levels/chip_pipeline/kernels/aiv/stage_step.o", b"longer bytes")
    atomic_write_bytes(root / "next_levels/chip_pipeline/kernel_config.py", b"KERNELS = ()\n")
    atomic_write_text(root / "extra.txt", "x")
    assert [str(problem) for problem in verify_manifest(root)] == [
        "extra.txt: not in manifest.json",
        "next_levels/chip_pipeline/kernel_config.py: sha256 differs from manifest.json",
        "next_levels/chip_pipeline/kernels/aiv/stage_step.o: size 12 differs from "
        "manifest.json's 7",
        "orchestration/host_orch.py: missing (manifest.json lists it)",
    ]


def test_bytecode_caches_are_not_part_of_the_tree(tmp_path: Path) -> None:
    root = make_tree(tmp_path)
    cached = root / "next_levels/chip_pipeline/__pycache__/kernel_config.cpython-311.pyc"
    atomic_write_bytes(cached, b"written by an installer")
    path = write(root)
    listed = [entry["path"] for entry in json.loads(path.read_text())["files"]]
    assert not [entry for entry in listed if "__pycache__" in entry]
    atomic_write_bytes(root / "orchestration/__pycache__/host_orch.cpython-311.pyc", b"later")
    assert verify_manifest(root) == []


def test_verify_missing_manifest(tmp_path: Path) -> None:
    assert verify_manifest(make_tree(tmp_path)) == [ManifestProblem("manifest.json", "missing")]


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        ("{not json", "Expecting property name"),
        ('{"format_version": 99, "files": []}', "not a format 1 manifest"),
        ('{"format_version": 1, "files": {}}', "'files' is not a list"),
        (
            '{"format_version": 1, "files": [{"path": "a", "sha256": "x", "size": "1"}]}',
            "needs a string path",
        ),
        (
            '{"format_version": 1, "files": [{"path": "../a", "sha256": "x", "size": 1}]}',
            "not a normalized relative path",
        ),
        (
            '{"format_version": 1, "files": [{"path": "a", "sha256": "x", "size": 1},'
            ' {"path": "a", "sha256": "x", "size": 1}]}',
            "listed twice",
        ),
    ],
)
def test_verify_unreadable_manifest(tmp_path: Path, content: str, reason: str) -> None:
    atomic_write_text(tmp_path / MANIFEST, content)
    (problem,) = verify_manifest(tmp_path)
    assert problem.path == "manifest.json"
    assert problem.what.startswith("unreadable: ")
    assert reason in problem.what


def test_verify_after_copy_elsewhere(tmp_path: Path) -> None:
    root = make_tree(tmp_path / "build")
    write(root)
    copy = tmp_path / "installed" / "a3"
    shutil.copytree(root, copy)
    assert verify_manifest(copy) == []


def test_a_listed_file_replaced_by_a_fifo_is_named_not_opened(tmp_path: Path) -> None:
    """``run`` verifies every tree it opens: a FIFO where a listed file was must be a problem,
    not a read that blocks forever."""
    root = make_tree(tmp_path)
    write(root)
    listed = json.loads((root / MANIFEST).read_text())["files"][0]["path"]
    (root / listed).unlink()
    os.mkfifo(root / listed)
    (problem,) = verify_manifest(root)
    assert problem == ManifestProblem(
        "manifest.json", f"unreadable: FIFO, device or socket in build tree: {listed}"
    )
