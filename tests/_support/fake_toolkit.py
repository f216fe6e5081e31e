"""The cann toolchain over a fake toolkit and a fake runtime, as the cann and launcher tests
select it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from _support.fakes.fake_cann import FakeCann
from pypto_build.chip_build.toolchains import CannToolchain, TargetSettings, select_toolchain


def cann_toolchain(fake: FakeCann, home: Path, runtime_root: Path, **target: Any) -> CannToolchain:
    """``select_toolchain("cann")`` finding ``fake`` through ``ASCEND_HOME_PATH``, building for
    the runtime at ``runtime_root``; ``target`` sets the other :class:`TargetSettings`."""
    chosen = select_toolchain(
        "cann",
        environ={"ASCEND_HOME_PATH": str(fake.root)},
        home=home,
        target=TargetSettings(runtime_root=runtime_root, **target),
    )
    assert isinstance(chosen, CannToolchain)
    return chosen
