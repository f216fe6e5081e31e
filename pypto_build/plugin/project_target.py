"""What a project's settings say it is built from and with: its program files and its toolchain.

Resolving them loads none of the engine (no lowering, rendering or compiling), so a build that
finds nothing changed (:mod:`pypto_build.build_records.record`) can check the toolchain before
it decides whether the engine must run; :mod:`.project_build` builds with the same answers.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from pypto_build.files import file_problem
from pypto_build.plugin.settings import TABLE, PyptoSettings, SettingsError

if TYPE_CHECKING:
    from pypto_build.chip_build.toolchains import Toolchain
    from pypto_build.chip_build.toolchains.target import TargetSettings


def program_paths(project: Path, settings: PyptoSettings) -> list[Path]:
    """The settings' program files inside ``project``; a missing one is a settings error that
    names its key path."""
    paths = [project / program for program in settings.programs]
    for index, path in enumerate(paths):
        problem = file_problem(path)
        if problem is not None:
            raise SettingsError(f"{TABLE}.programs[{index}]: {settings.programs[index]}: {problem}")
    if not paths:
        raise SettingsError(f"{TABLE}.programs: at least one program file is needed")
    return paths


def target_settings(project: Path, settings: PyptoSettings) -> TargetSettings:
    """What the settings say a CANN build is built for, paths resolved against ``project``
    (an absolute setting stays as it is)."""
    from pypto_build.chip_build.toolchains.target import TargetSettings

    return TargetSettings(
        runtime_root=_project_path(project, settings.runtime_root),
        pto_isa_root=_project_path(project, settings.pto_isa_root),
        runtime_revision=settings.runtime_revision,
        pto_isa_revision=settings.pto_isa_revision,
    )


def _project_path(project: Path, setting: str | None) -> Path | None:
    return None if setting is None else project / setting


def project_toolchain(project: Path, settings: PyptoSettings) -> Toolchain:
    """The toolchain the ``toolchain`` setting selects, for the target the settings name
    (raises :class:`~pypto_build.chip_build.toolchains.ToolchainError`)."""
    # The selection's own module: the toolchains package's other parts (compiler launchers)
    # are not needed to choose one.
    from pypto_build.chip_build.toolchains.extra_flags import cann_flags, sim_flags
    from pypto_build.chip_build.toolchains.select import select_toolchain

    return select_toolchain(
        settings.toolchain,
        target=target_settings(project, settings),
        sim_extra=sim_flags(
            settings.sim_defines, settings.sim_cxxflags, settings.build_type, os.environ
        ),
        cann_extra=cann_flags(settings.cann_defines, settings.cann_cxxflags),
    )
