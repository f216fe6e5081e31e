"""hatchling's entry point into pypto-build (``[project.entry-points.hatch] pypto``).

hatchling loads every module of its ``hatch`` entry-point group through pluggy and asks it for
build hooks; this one offers :class:`~pypto_build.plugin.hatch.PyptoBuildHook`, selected by a
package's ``[tool.hatch.build.targets.wheel.hooks.pypto]`` table.
"""

from __future__ import annotations

from hatchling.plugin import hookimpl

from pypto_build.plugin.hatch import PyptoBuildHook


@hookimpl
def hatch_register_build_hook() -> type[PyptoBuildHook]:
    """The build hook class hatchling registers under the name ``pypto``."""
    return PyptoBuildHook
