"""How many compiler processes to run at once.

The default is one per usable CPU, but never more than the available memory allows: a C++
compile of a kernel with its headers takes up to about 1 GiB, and a build that makes the
machine swap (or the OOM killer end a compiler) is far slower than one with fewer jobs.
The ``jobs`` setting overrides the default; like every setting it comes from ``[tool.pypto]``,
``PYPTO_JOBS`` or ``--jobs`` (:mod:`pypto_build.plugin.settings`), and the project build
(:mod:`pypto_build.plugin.project_build`) falls back to :func:`default_jobs` without it.
"""

from __future__ import annotations

import os
from pathlib import Path

#: Memory one compile job is assumed to need.
BYTES_PER_JOB = 1 << 30
_MEMINFO = Path("/proc/meminfo")


def usable_cpus() -> int:
    """CPUs this process may run on (its affinity mask where the OS has one)."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return os.cpu_count() or 1


def available_memory(meminfo: Path = _MEMINFO) -> int | None:
    """``MemAvailable`` from ``/proc/meminfo`` in bytes; None where it cannot be read."""
    return meminfo_bytes("MemAvailable", meminfo)


def meminfo_bytes(field: str, meminfo: Path = _MEMINFO) -> int | None:
    """Field ``field`` (``MemTotal``, ``MemAvailable``) of ``/proc/meminfo`` in bytes; None
    where it cannot be read."""
    try:
        text = meminfo.read_text(encoding="ascii")
    except OSError:
        return None
    for line in text.splitlines():
        name, _, value = line.partition(":")
        if name == field:
            fields = value.split()
            if fields and fields[0].isdigit():
                unit = 1024 if fields[1:] == ["kB"] else 1
                return int(fields[0]) * unit
    return None


def default_jobs(cpus: int | None = None, memory: int | None = None) -> int:
    """One job per CPU, capped at one per :data:`BYTES_PER_JOB` of available memory; at least 1.

    ``cpus`` and ``memory`` default to this machine's (:func:`usable_cpus`,
    :func:`available_memory`); an unknown memory size does not cap.
    """
    cpus = usable_cpus() if cpus is None else cpus
    memory = available_memory() if memory is None else memory
    jobs = cpus if memory is None else min(cpus, memory // BYTES_PER_JOB)
    return max(1, jobs)
