"""A tree built inside a project warns when the project's sources changed since its build."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest
from _support.trees import INPUTS, make_tree

from pypto_build.chip_build.sim.program import BuildTreeError, open_chip_build
from pypto_build.chip_build.stale_tree import StaleTreeWarning, changed_inputs

(PROGRAM,) = INPUTS


def _project(root: Path, program: bytes) -> Path:
    (root / "pyproject.toml").parent.mkdir(parents=True)
    (root / "pyproject.toml").write_text("[tool.pypto]\n")
    (root / PROGRAM).parent.mkdir(parents=True)
    (root / PROGRAM).write_bytes(program)
    return root


def test_an_edited_source_makes_opening_its_tree_warn_with_the_rebuild_command(
    tmp_path: Path,
) -> None:
    project = _project(tmp_path / "proj", b"edited program")
    make_tree(project / "src" / "pkg" / "_kernels")
    with pytest.warns(StaleTreeWarning) as caught, pytest.raises(BuildTreeError):
        open_chip_build(project / "src" / "pkg" / "_kernels", "a3")  # a render: refused after
    message = str(caught[0].message)
    assert f"({PROGRAM} changed since it was built)" in message
    assert f"pip install -e {project} (an editable install) or pypto-build build {project}" in (
        message
    )


def test_an_unchanged_project_or_an_installed_tree_does_not_warn(tmp_path: Path) -> None:
    project = _project(tmp_path / "proj", b"program")  # the content INPUTS records
    tree = make_tree(project / "build" / "pypto")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(BuildTreeError):
            open_chip_build(tree, "a3")
    manifest = {"inputs": dict.fromkeys(INPUTS, "0" * 64)}
    assert changed_inputs(project / "build" / "pypto" / "a3", manifest) == (project, [PROGRAM])
    site = tmp_path / "venv" / "lib" / "site-packages" / "pkg" / "_kernels" / "a3"
    assert changed_inputs(site, manifest) is None
