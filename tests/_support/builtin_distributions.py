"""Installing a builtin template package as a fake distribution, found by the real
``importlib.metadata`` (a ``.dist-info`` folder with an ``entry_points.txt`` on ``sys.path``),
so the registry's discovery runs unmocked. Shared by the registry's tests and the hostile-input
corpus (broken third-party packages)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from pypto_build.builtins import ENTRY_POINT_GROUP, default_registry
from pypto_build.lowering import builtin_registry
from pypto_build.lowering.optable import table as op_table

InstallDistribution = Callable[..., Path]


def clear_builtin_caches() -> None:
    """Forget the registry, the builtin ops and the op table this process discovered."""
    default_registry.cache_clear()
    builtin_registry.builtin_ops.cache_clear()
    op_table._table.cache_clear()


def installer(site: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[InstallDistribution]:
    """Body of an ``install_distribution`` fixture: ``install(entry_points, name)`` puts a
    distribution into ``site`` (prepended to ``sys.path``) whose entry points name packages."""
    site.mkdir()
    monkeypatch.syspath_prepend(str(site))
    clear_builtin_caches()

    def install(entry_points: dict[str, str], name: str = "acme-builtins") -> Path:
        dist_info = site / f"{name.replace('-', '_')}-1.0.dist-info"
        dist_info.mkdir()
        (dist_info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
        lines = [f"{key} = {value}" for key, value in entry_points.items()]
        (dist_info / "entry_points.txt").write_text(
            f"[{ENTRY_POINT_GROUP}]\n" + "\n".join(lines) + "\n"
        )
        return site

    yield install
    for module in [name for name in sys.modules if name.startswith("acme")]:
        del sys.modules[module]
    clear_builtin_caches()


def write_python_package(site: Path, dotted: str) -> Path:
    """An importable (empty) package ``dotted`` under ``site``; its folder."""
    folder = site.joinpath(*dotted.split("."))
    folder.mkdir(parents=True)
    for parent in [folder, *folder.relative_to(site).parents]:
        if parent != Path("."):
            (site / parent / "__init__.py").touch()
    return folder
