"""Rendered sub-build trees shared by the chip_build tests (each rendered once per session)."""

from __future__ import annotations

from pathlib import Path

import pytest
from _support.rendered import Render, render_program


@pytest.fixture(scope="session")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> Render:
    """``rendered(stem)``: the tree of ``tests/programs/<stem>.py`` for every chip. Tests only
    read it; a test that changes files renders its own copy."""
    trees: dict[str, Path] = {}

    def render(stem: str) -> Path:
        if stem not in trees:
            trees[stem] = render_program(stem, tmp_path_factory.mktemp(f"render-{stem}") / "tree")
        return trees[stem]

    return render
