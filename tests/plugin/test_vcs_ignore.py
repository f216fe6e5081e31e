"""Build output that pypto-build writes into a project is listed in the project's .gitignore,
once, unless a line there already names it."""

from __future__ import annotations

from pathlib import Path

import pytest

from pypto_build.plugin.vcs_ignore import ensure_ignored, nearest_gitignore

ENTRY = (
    "# Build output of pypto-build: kept out of git and out of sdists.\n"
    "/build/pypto/\n/build/.pypto.*\n"
)


def test_a_project_without_gitignore_gets_one(tmp_path: Path) -> None:
    assert ensure_ignored(tmp_path, tmp_path / "build" / "pypto") == tmp_path / ".gitignore"
    assert (tmp_path / ".gitignore").read_text(encoding="utf-8") == ENTRY
    assert ensure_ignored(tmp_path, tmp_path / "build" / "pypto") is None  # listed once


def test_an_existing_gitignore_is_extended(tmp_path: Path) -> None:
    (tmp_path / ".gitignore").write_text("*.pyc", encoding="utf-8")
    ensure_ignored(tmp_path, tmp_path / "build" / "pypto")
    assert (tmp_path / ".gitignore").read_text(encoding="utf-8") == f"*.pyc\n\n{ENTRY}"


@pytest.mark.parametrize(
    "line", ["build", "build/", "/build", "/build/", "/build/pypto", "pypto/", "*", "/*"]
)
def test_a_line_naming_the_folder_or_a_parent_is_enough(tmp_path: Path, line: str) -> None:
    (tmp_path / ".gitignore").write_text(f"# mine\n{line}\n", encoding="utf-8")
    assert ensure_ignored(tmp_path, tmp_path / "build" / "pypto") is None


@pytest.mark.parametrize("line", ["/src/build/", "#build", "!build", "/buildx/", "build/other"])
def test_other_lines_are_not(tmp_path: Path, line: str) -> None:
    (tmp_path / ".gitignore").write_text(f"{line}\n", encoding="utf-8")
    assert ensure_ignored(tmp_path, tmp_path / "build" / "pypto") is not None


def test_the_nearest_gitignore_up_to_the_repository_is_the_one_hatchling_reads(
    tmp_path: Path,
) -> None:
    repository = tmp_path / "repo"
    project = repository / "packages" / "moe"
    project.mkdir(parents=True)
    (repository / ".git").mkdir()
    (tmp_path / ".gitignore").write_text("outside the repository\n", encoding="utf-8")
    assert nearest_gitignore(project) == project / ".gitignore"  # none in the repository
    (repository / ".gitignore").write_text("/dist/\n", encoding="utf-8")
    assert nearest_gitignore(project) == repository / ".gitignore"
    ensure_ignored(project, project / "src" / "moe" / "_kernels")
    assert (
        (repository / ".gitignore")
        .read_text(encoding="utf-8")
        .endswith("\n/packages/moe/src/moe/_kernels/\n/packages/moe/src/moe/._kernels.*\n")
    )
