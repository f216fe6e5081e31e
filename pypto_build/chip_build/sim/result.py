"""What a simulated run leaves: its tensors and windows by the names the program gave them, and
what each dispatch did.

A run of a HOST orchestrator leaves its tensor parameters (host memory, one array each, as the
host holds them) and the window buffers its comm domains allocated. A run of one chip
orchestration on every rank leaves each tensor parameter with a leading rank axis, windows
included: there a window is a parameter. Either way :attr:`SimResult.windows` holds every window
by name, so a check reads windows the same way whichever program ran. A run that fails leaves
the same, as far as it got (:attr:`SimulationError.result
<pypto_build.chip_build.sim.run_failure.SimulationError.result>`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import numpy as np
import numpy.typing as npt

from pypto_build.chip_build.sim.l3 import DomainSnapshot
from pypto_build.chip_build.sim.run_failure import DispatchRecord


class SimResult(Mapping[str, npt.NDArray[np.generic]]):
    """The tensor parameters as a run left them, by name, its windows, and how it ran."""

    def __init__(
        self,
        tensors: Mapping[str, npt.NDArray[np.generic]],
        dispatches: tuple[DispatchRecord, ...],
        domains: tuple[DomainSnapshot, ...],
        windows: Mapping[str, npt.NDArray[np.generic]] | None = None,
        *,
        window_setup_seconds: float = 0.0,
    ) -> None:
        self._tensors = dict(tensors)
        #: Every chip dispatch, by rank and order: its error code, tasks, timing lines and wall
        #: time.
        self.dispatches = dispatches
        #: Each comm domain's windows as its scope left them, in the order the scopes ended.
        self.domains = domains
        #: Every window by the name the program gave it, one entry per member rank on the
        #: leading axis: a HOST orchestrator's buffers as declared (``[members, count]``, bytes
        #: for a buffer sized in bytes; :meth:`DomainSnapshot.view` reads one rank's as a
        #: tensor), a chip orchestration's window parameters as the tensors they are (the same
        #: arrays as ``self[name]``).
        self.windows: dict[str, npt.NDArray[np.generic]] = (
            windows_of(domains) if windows is None else dict(windows)
        )
        #: Wall time spent setting up a chip orchestration's windows before any rank ran:
        #: allocating every rank's and writing each once, with its given contents or zeros (0
        #: for a HOST orchestrator, whose domains allocate their windows as they run).
        self.window_setup_seconds = window_setup_seconds

    def __getitem__(self, name: str) -> npt.NDArray[np.generic]:
        return self._tensors[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._tensors)

    def __len__(self) -> int:
        return len(self._tensors)

    def domain(self, name: str) -> DomainSnapshot:
        """The last snapshot of comm domain ``name``."""
        for snapshot in reversed(self.domains):
            if snapshot.name == name:
                return snapshot
        known = ", ".join(snapshot.name for snapshot in self.domains) or "none"
        raise KeyError(f"no comm domain '{name}' in this run (domains: {known})")


def windows_of(domains: tuple[DomainSnapshot, ...]) -> dict[str, npt.NDArray[np.generic]]:
    """Every buffer of ``domains`` as declared, by name (unique in a program: the lowering
    refuses two buffers of one name), in the order the domains ended and declared them."""
    return {
        layout.name: snapshot.contents(layout.name)
        for snapshot in domains
        for layout in snapshot.buffers
    }
