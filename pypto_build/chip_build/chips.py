"""The chip catalog: one sourced table of what differs between the Ascend chips we build for.

Which chips a builtin collective runs on is its package manifest's word (``chips``), not the
catalog's. Every other fact the build needs per chip lives here, so a pass, the orchestration
codegen, a toolchain and the simulator all agree on it. Each fact carries a comment naming where
it comes from, by a key for one of these upstream files (hw-native-sys/simpler at 6ebaf77,
hw-native-sys/pypto at e2d0f78, the revisions of ``docs/runtime-compatibility.md``):

* ``[chip architecture]`` = simpler's ``docs/hardware/chip-architecture.md`` (product family,
  ``Short_SoC_version`` and AI Core arch of each SoC);
* ``[simpler platforms]`` = simpler's ``simpler_setup/platform_info.py`` (``PLATFORM_MAP``: a2a3,
  a2a3sim, a5, a5sim);
* ``[simpler hardware]`` = simpler's ``src/a2a3/docs/hardware.md`` and ``src/a5/docs/hardware.md``
  (AIC and AIV per device, ccec arch per platform);
* ``[simpler toolchain]`` = simpler's ``simpler_setup/toolchain.py`` (the ccec flags per platform);
* ``[simpler sync-start]`` = simpler's ``submit_task`` in
  ``src/a2a3/runtime/tensormap_and_ringbuffer/runtime/pto_orchestrator.cpp`` (a sync-start launch
  is bounded by the AIV count for AIV-only shapes, by the cluster count otherwise);
* ``[pypto collectives]`` = pypto's ``docs/en/user/distributed/01-collectives.md`` (the device AIV
  count: 48 on 910B, 36 on 950);
* ``[pypto backends]`` = pypto's ``include/pypto/backend/910B/backend_910b_handler.h`` and
  ``include/pypto/backend/950/backend_950_handler.h`` (the launch-spec method).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Literal


class CoreType(enum.StrEnum):
    """The two AI Core kinds a kernel runs on; the value is the upstream directory/config name."""

    AIV = "aiv"
    AIC = "aic"


#: Launch-spec setter the orchestration codegen emits for a multi-block task.
LaunchSpecMethod = Literal["set_block_num", "set_core_num"]

#: The clusters (one AIC and two AIV each) a host-simulation platform (``a2a3sim``, ``a5sim``)
#: runs, whatever the chip: simpler 6ebaf77 takes ``SIM_AUTO_BLOCKDIM`` (8) clusters, narrower
#: than the device because it runs one OS thread per core
#: (``src/common/platform/sim/host/device_runner_base.cpp``, ``task_interface/call_config.h``).
#: pypto-build's simulator runs the same, so a launch it admits runs on upstream's too.
SIM_CLUSTERS = 8
SIM_AIV_CAPACITY = 2 * SIM_CLUSTERS
SIM_AIC_CAPACITY = SIM_CLUSTERS


@dataclass(frozen=True)
class Chip:
    """One buildable chip; the instances are :data:`CHIPS`, looked up with :func:`get_chip`."""

    #: The name users write in ``[tool.pypto] chips`` and the sub-build directory name.
    name: str
    #: CANN ``Short_SoC_version``.
    soc: str
    #: The simpler/PyPTO runtime platform arch; ``<platform>sim`` is its host simulation.
    platform: Literal["a2a3", "a5"]
    #: PyPTO's ``BackendType`` member for the platform (``distributed_meta.json``'s
    #: ``backend_type``).
    backend_type: str
    #: ``--cce-aicore-arch`` value for vector (AIV) kernels.
    aiv_arch: str
    #: ``--cce-aicore-arch`` value for cube (AIC) kernels.
    aic_arch: str
    #: Extra ccec flags this chip needs on every AI Core compile.
    ccec_extra_flags: tuple[str, ...]
    #: Widest AIV-only sync-start launch the runtime admits (more blocks cannot all start).
    aiv_capacity: int
    #: Widest sync-start launch of any other shape (the runtime bounds it by cluster = AIC count).
    aic_capacity: int
    launch_spec_method: LaunchSpecMethod

    @property
    def sim_platform(self) -> str:
        """The host-simulation platform name for this chip's arch."""
        # [simpler platforms]: the platforms are a2a3, a2a3sim, a5, a5sim.
        return f"{self.platform}sim"

    def cce_arch(self, core_type: CoreType) -> str:
        """The ``--cce-aicore-arch`` value for a kernel of ``core_type``."""
        return self.aiv_arch if core_type is CoreType.AIV else self.aic_arch

    def sync_start_limit(self, core_type: CoreType, *, simulated: bool = False) -> int:
        """Widest sync-start launch admitted for a task of ``core_type``, on the device or (when
        ``simulated``) on the chip's host-simulation platform (:data:`SIM_CLUSTERS`).

        The runtime bounds AIV-only shapes by the AIV count and every other shape by the cluster
        count ([simpler sync-start]); a cluster holds one AIC, so that is the AIC count.
        """
        if simulated:
            return SIM_AIV_CAPACITY if core_type is CoreType.AIV else SIM_AIC_CAPACITY
        return self.aiv_capacity if core_type is CoreType.AIV else self.aic_capacity


def _a2a3_chip(name: str, soc: str) -> Chip:
    """A chip of the a2a3 platform: a2 and a3 differ only in SoC name.

    [simpler hardware]: the a2a3 platform covers 910B (a2) and 910_93 (a3); [chip architecture]:
    both use the AIC-C-220 arch (dav-c220-vec / dav-c220-cube) and need no extra ccec flags.
    """
    return Chip(
        name=name,
        soc=soc,
        platform="a2a3",
        # [pypto backends]: the a2a3 platform's backend.
        backend_type="Ascend910B",
        aiv_arch="dav-c220-vec",
        aic_arch="dav-c220-cube",
        ccec_extra_flags=(),
        # [pypto collectives]: device AIV count 48 on 910B; [simpler hardware],
        # [simpler sync-start]: 24 AIC + 48 AIV per device (24 clusters, 1C2V). PyPTO documents
        # the AIV count for 910B only; [simpler hardware] gives those counts for the whole a2a3
        # platform (an a3 chip is two device ids, one per die), so a3 takes the same value.
        aiv_capacity=48,
        aic_capacity=24,
        # [pypto backends]: the 910B backend handler's launch-spec method.
        launch_spec_method="set_block_num",
    )


CHIPS: tuple[Chip, ...] = (
    # [chip architecture]: Atlas A2 = Short_SoC_version Ascend910B (Ascend910B1..B4).
    _a2a3_chip("a2", soc="Ascend910B"),
    # [chip architecture]: Atlas A3 = Short_SoC_version Ascend910_93 (Ascend910_9362..9392).
    _a2a3_chip("a3", soc="Ascend910_93"),
    Chip(
        name="a5",
        # [chip architecture]: Ascend 950 = Short_SoC_version Ascend950 (950PR / 950DT).
        soc="Ascend950",
        # [simpler platforms], [simpler hardware]: A5 (= Ascend 950) is the a5 platform.
        platform="a5",
        # [pypto backends]: the a5 platform's backend.
        backend_type="Ascend950",
        # [chip architecture], [simpler hardware]: AIC-C-310 -> dav-c310-vec / dav-c310-cube.
        aiv_arch="dav-c310-vec",
        aic_arch="dav-c310-cube",
        # [simpler hardware], [simpler toolchain]: a5 compiles add
        # `-mllvm -cce-vf-aa-between-iters=true`.
        ccec_extra_flags=("-mllvm", "-cce-vf-aa-between-iters=true"),
        # [pypto collectives]: PyPTO's user docs give a device AIV count of 36 on 950.
        # [simpler hardware] / [simpler sync-start] instead list 72 AIV (36 AIC clusters, 1C2V). We
        # admit the smaller documented bound: it never admits a launch the runtime would refuse.
        aiv_capacity=36,
        # [simpler hardware], [simpler sync-start]: 36 AIC (2 x 18 clusters).
        aic_capacity=36,
        # [pypto backends]: the 950 backend handler's launch-spec method.
        launch_spec_method="set_core_num",
    ),
)

_BY_NAME = {chip.name: chip for chip in CHIPS}


def get_chip(name: str) -> Chip:
    """The catalog entry for ``name``; an unknown name is an error that lists the valid ones."""
    try:
        return _BY_NAME[name]
    except KeyError:
        valid = ", ".join(chip.name for chip in CHIPS)
        raise ValueError(f"unknown chip '{name}'; valid chips: {valid}") from None
