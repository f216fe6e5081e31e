"""The platform part of a wheel tag (``py3-none-<platform>``) for a toolchain's binaries.

Host shared objects (``sim``) are tied to this host's platform, spelt as ``packaging`` spells
it; device binaries (``cann``) run on the NPU whatever the host, so their wheel names no
platform (``any``).
"""

from __future__ import annotations

import sysconfig

#: The platform of a wheel whose binaries run on the NPU only.
DEVICE_PLATFORM = "any"


def host_platform_tag() -> str:
    """This interpreter's platform as a wheel tag (``linux_x86_64``), spelt as ``packaging``
    spells it: ``sysconfig.get_platform()`` with ``-`` and ``.`` replaced by ``_``."""
    return sysconfig.get_platform().replace("-", "_").replace(".", "_")


def host_platform_problem(platform: str, what: str) -> str | None:
    """Why a wheel of host shared objects (``what``: ``sim kernels``) cannot be tagged
    ``platform``: one this host does not install (``any`` and foreign platforms), since this
    host's interpreter loads them; None for a platform it installs."""
    # Asked by the wheel hook only, which runs under hatchling and its packaging.
    from packaging.tags import sys_tags

    supported = {tag.platform for tag in sys_tags()} - {DEVICE_PLATFORM}
    if platform in supported:
        return None
    return (
        f"'{platform}' is not a platform of this host, and {what} are shared objects for this "
        f"host; use 'auto' ({host_platform_tag()}) or one of the manylinux platforms it "
        "installs, checked by auditwheel show (docs/packaging.md)"
    )
