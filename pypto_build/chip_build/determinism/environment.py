"""The varied environment both determinism checks run in.

check-render compares two renders of a program, check-reproducible two builds of a project's
wheel. Either proves its output a function of the inputs alone only if the two runs differ in
everything the output must not depend on (where and when it runs, as whom, in which locale),
so the variation is defined once, here: a variation added for one check protects the other,
and neither can drift weaker.

A run made here differs from the other run of its check in:

* its working directory: the run's own folder, inside which the caller also places the run's
  input copy and output (so their paths differ too);
* its temporary directory (``TMPDIR``, in the run's folder);
* ``PYTHONHASHSEED``, the locale (``LC_ALL`` and ``LANG``), the time zone (``TZ``), the umask
  and the job count (``PYPTO_JOBS``): the values of a :class:`Variant`;
* its compile cache (``PYPTO_CACHE_DIR``, in the run's folder): empty, so a build compiles
  everything instead of being handed the other run's binaries, which would hide a compiler
  that is not deterministic.

check-reproducible builds both wheels here, one per variant of :data:`VARIANTS`.
check-render makes its first render in its own process, so its second render runs as
:func:`unlike_this_process` says: for every value, the variant value this process does not have.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pypto_build

#: The import path entry that holds this pypto-build: a run must execute the code that checks
#: it, not another installed copy.
_PACKAGE_PARENT = str(Path(pypto_build.__file__).resolve().parent.parent)


@dataclass(frozen=True)
class Variant:
    """The environment values one run sets (see the module); ``name`` names its folders."""

    name: str
    hash_seed: str
    locale: str
    time_zone: str
    umask: int
    jobs: str

    def environment(self) -> dict[str, str]:
        """The environment variables that carry this variant's values."""
        return {
            "PYTHONHASHSEED": self.hash_seed,
            "LC_ALL": self.locale,
            "LANG": self.locale,
            "TZ": self.time_zone,
            "PYPTO_JOBS": self.jobs,
        }


#: Two variants that differ in every value.
VARIANTS = (
    Variant("first", "1", "C.UTF-8", "UTC", 0o022, "1"),
    Variant("second", "2", "C", "Pacific/Kiritimati", 0o077, "2"),
)


def current_umask() -> int:
    """This process's umask. The only way to read it is to set it, so it is set back at once."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def unlike_this_process(environ: Mapping[str, str], umask: int) -> Variant:
    """The variant of a run compared with one made in this process (whose environment is
    ``environ`` and umask ``umask``): each value the second variant's, or the first's where this
    process already has the second's, so the run differs from this process in every value."""
    first, second = VARIANTS

    def unlike(current: object, field: str) -> Any:
        return getattr(first if current == getattr(second, field) else second, field)

    # The locale that decodes text is LC_ALL, else LC_CTYPE, else LANG, else POSIX's default.
    locale = environ.get("LC_ALL") or environ.get("LC_CTYPE") or environ.get("LANG") or "C"
    return Variant(
        second.name,
        hash_seed=unlike(environ.get("PYTHONHASHSEED"), "hash_seed"),
        locale=unlike(locale, "locale"),
        time_zone=unlike(environ.get("TZ"), "time_zone"),
        umask=unlike(umask, "umask"),
        jobs=unlike(environ.get("PYPTO_JOBS"), "jobs"),
    )


def run_varied(
    command: Sequence[str],
    variant: Variant,
    folder: Path,
    environ: Mapping[str, str],
    *,
    extra_environment: Mapping[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run ``command`` with ``folder`` (created) as its working directory, in ``environ``
    varied as ``variant`` and the module say, plus ``extra_environment``; its standard output
    and error, interleaved, are the result's ``stdout``."""
    temp = folder / "tmp"
    temp.mkdir(parents=True, exist_ok=True)
    env = {
        **environ,
        **variant.environment(),
        "TMPDIR": str(temp),
        "PYPTO_CACHE_DIR": str(folder / "cache"),
        **(extra_environment or {}),
        "PYTHONPATH": os.pathsep.join(filter(None, [_PACKAGE_PARENT, environ.get("PYTHONPATH")])),
    }
    return subprocess.run(
        command,
        cwd=folder,
        env=env,
        umask=variant.umask,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        check=False,
    )
