"""The cann toolchain over a fake toolkit, as the cann and launcher tests select it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fakes.fake_cann import FakeCann

from pypto_build.chip_build.toolchains import CannToolchain, select_toolchain


def cann_toolchain(fake: FakeCann, home: Path, pto_isa_root: Path, **options: Any) -> CannToolchain:
    """``select_toolchain("cann")`` finding ``fake`` through ``ASCEND_HOME_PATH``; ``options``
    are passed on (include directories)."""
    chosen = select_toolchain(
        "cann",
        environ={"ASCEND_HOME_PATH": str(fake.root)},
        home=home,
        pto_isa_root=pto_isa_root,
        **options,
    )
    assert isinstance(chosen, CannToolchain)
    return chosen
