"""The ``sim`` toolchain in the registry: ``auto``'s fallback, and what ``doctor`` reports of it
(the host compiler, or why there is none)."""

from __future__ import annotations

from collections.abc import Sequence

from pypto_build.chip_build.toolchains.base import Toolchain, ToolchainError
from pypto_build.chip_build.toolchains.kind import DoctorSection, ToolchainRequest
from pypto_build.chip_build.toolchains.sim import SimToolchain


class SimKind:
    """Selects and reports the ``sim`` toolchain (see the module)."""

    def select(self, request: ToolchainRequest, requested: str) -> Toolchain | None:
        # The host compiler is always looked for: auto falls back to it.
        return SimToolchain.discover(request.environ, request.sim_extra)

    def doctor(self, request: ToolchainRequest, chips: Sequence[str]) -> DoctorSection:
        try:
            sim = SimToolchain.discover(request.environ)
        except ToolchainError as exc:
            return DoctorSection({"sim": {"error": str(exc)}}, [f"sim: {exc}"], usable=False)
        identity = sim.identity()
        report = {"compiler": str(sim.compiler), "version": sim.version, "identity": identity}
        line = f"sim: {sim.compiler} {sim.version} ({identity})"
        return DoctorSection({"sim": report}, [line], usable=True)


KIND = SimKind()
