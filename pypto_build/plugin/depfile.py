"""What a build system needs to run ``pypto-build build`` as one step: a dependency file and a
stamp.

A build system that runs the whole build as one command (the CMake package's
``add_custom_command``, see ``pypto_build/cmake``) must know when to run it again. The command
leaves a *stamp* file, its declared output, and a Make-style *depfile* naming the stamp's
prerequisites: every file the build read to produce its trees. CMake hands the depfile to Ninja
(or its Makefile dependency scanner), so editing a program, an external kernel or a builtin
template re-runs the build and nothing else does.

The prerequisites are taken from what the render recorded in each chip's ``manifest.json``
(program files and external kernels by path relative to the source root, templates by their
package handle), plus the manifests of the builtin packages used (their template variables) and
every header the rendered sources include from ``pypto_build/`` (all of them: a cache hit
compiles nothing, so no compiler says which it read). The toolchain's own headers (CANN,
PTO-ISA, the C++ library) are not listed; a new toolchain means a fresh build directory.

Both files are build-system files, never shipped: the depfile holds absolute paths, as CMake
expects. Both are still deterministic (sorted, no timestamps), and both are written only after a
successful build, so a failed build leaves no stamp and runs again next time.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from pathlib import Path

from pypto_build.builtins import default_registry, include_dir
from pypto_build.builtins.manifest import TEMPLATES_DIR
from pypto_build.chip_build.build import BuildResult
from pypto_build.files import atomic_write_text, read_regular, read_text, walk_files
from pypto_build.tree_layout import TreeLayout

#: How the render names a template input in a manifest: ``<handle>/templates/<file>``.
_TEMPLATE_INFIX = f"/{TEMPLATES_DIR}/"


def build_inputs(result: BuildResult, source_root: Path) -> tuple[Path, ...]:
    """Every file the build ``result`` was made from, absolute, sorted and without duplicates.

    ``source_root`` is the folder the build recorded inputs relative to; template handles
    resolve through this environment's builtin registry, as they did for the render.
    """
    registry = default_registry()
    root = source_root.resolve()
    headers = include_dir()
    inputs = {headers / path for path in walk_files(headers)}
    for name in _recorded_inputs(result):
        if name.startswith(":"):
            handle, _, template = name.partition(_TEMPLATE_INFIX)
            package = registry.resolve(handle)
            inputs.add(package.manifest_path)
            inputs.add(package.root / TEMPLATES_DIR / template)
        else:
            inputs.add(root / name)
    return tuple(sorted(path.resolve() for path in inputs))


def _recorded_inputs(result: BuildResult) -> list[str]:
    """The input names of every chip's manifest, sorted."""
    names: set[str] = set()
    for report in result.reports:
        manifest = TreeLayout(result.out_dir / report.chip).manifest
        names.update(json.loads(read_text(manifest))["inputs"])
    return sorted(names)


def _escape(path: Path) -> str:
    """``path`` as a word of a Make rule (the escapes Ninja's and CMake's depfile readers
    undo)."""
    return str(path).replace("$", "$$").replace("#", "\\#").replace(" ", "\\ ")


def depfile_text(target: Path, prerequisites: Iterable[Path]) -> str:
    """One Make rule: ``target`` depends on ``prerequisites``, one per continued line."""
    lines = [f"{_escape(target)}:", *(f"  {_escape(path)}" for path in prerequisites)]
    return " \\\n".join(lines) + "\n"


def stamp_text(result: BuildResult) -> str:
    """One line per chip: its name and the SHA-256 of its manifest, which hashes every file of
    the tree; the same trees give the same stamp."""
    lines = []
    for report in result.reports:
        manifest = read_regular(TreeLayout(result.out_dir / report.chip).manifest)
        lines.append(f"{report.chip} {hashlib.sha256(manifest).hexdigest()}\n")
    return "".join(lines)


def write_build_files(
    result: BuildResult, source_root: Path, *, stamp: Path, depfile: Path | None
) -> None:
    """Write ``depfile`` (when given) for ``stamp``, then ``stamp`` itself, last: a build
    system takes the stamp as proof that the whole step succeeded."""
    if depfile is not None:
        inputs = build_inputs(result, source_root)
        atomic_write_text(depfile, depfile_text(stamp.absolute(), inputs))
    atomic_write_text(stamp, stamp_text(result))
