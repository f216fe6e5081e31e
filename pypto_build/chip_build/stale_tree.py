"""Whether a tree built inside a project is older than the project's sources.

An editable install runs the kernels built in place (``src/<pkg>/_kernels``), and
``pypto-build build`` writes ``build/pypto``: both stay where they are when a program or a
kernel is edited afterwards, and would run stale with no sign. A tree's ``manifest.json``
records the SHA-256 of every input by its path relative to the project, so opening such a tree
compares them and warns with the command that rebuilds it. Rebuilding on open (as
scikit-build-core's ``editable.rebuild`` does) would need the build's toolchain and settings at
run time and could compile in the middle of a run; a warning keeps a run a run.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from pathlib import Path

from pypto_build.files import file_problem, sha256_regular

#: The name of the file that marks the project folder.
PYPROJECT = "pyproject.toml"


class StaleTreeWarning(UserWarning):
    """A tree's recorded inputs differ from the project's files."""


def changed_inputs(root: Path, manifest: Mapping[str, object]) -> tuple[Path, list[str]] | None:
    """The project holding the tree ``root`` and the recorded inputs whose content changed
    since it was built; None for a tree in no project (an installed wheel's, under
    ``site-packages``). An input that no longer exists, or a builtin handle, is not compared."""
    if "site-packages" in root.parts:
        return None
    project = next((p for p in root.parents if (p / PYPROJECT).is_file()), None)
    inputs = manifest.get("inputs")
    if project is None or not isinstance(inputs, dict):
        return None
    changed = []
    for name, digest in sorted(inputs.items()):
        path = project / name
        if file_problem(path) is None and sha256_regular(path) != digest:
            changed.append(name)
    return project, changed


def warn_if_stale(root: Path, manifest: Mapping[str, object]) -> None:
    """Warn (:class:`StaleTreeWarning`) when the tree ``root`` is older than its sources,
    naming them and the commands that rebuild it."""
    found = changed_inputs(root, manifest)
    if found is None or not found[1]:
        return
    project, changed = found
    warnings.warn(
        f"{root} is older than its sources ({', '.join(changed)} changed since it was built); "
        f"rebuild it: pip install -e {project} (an editable install) or pypto-build build "
        f"{project}",
        StaleTreeWarning,
        stacklevel=3,
    )
