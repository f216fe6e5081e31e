"""The compile cache's folder bounds itself, as ccache's does: after every build publishes,
the compile cache's entries and the build records kept beside them (:mod:`.records`)
together are brought within ``cache-max-size`` (``PYPTO_CACHE_MAX_SIZE``), the least recently
used first: compile entries, then, when they alone do not make room, records.

Each step takes the lock of what it prunes (the compile cache's prune lock, the record store's
lock), so builds that finish at once prune one after another, and a build reading an entry
another prunes finds it whole or not at all (:meth:`~pypto_build.chip_build.compile_cache.cache.
CompileCache.prune` renames an entry out before removing it).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from pypto_build.build_records.records import RecordStore
from pypto_build.chip_build.compile_cache.cache import CompileCache
from pypto_build.chip_build.compile_cache.stats import PruneResult


def bound_cache(root: Path, max_size: int, *, warn: Callable[[str], None]) -> PruneResult:
    """Bring the compile cache folder ``root`` within ``max_size`` bytes (see the module); what
    the compile cache pruned. Raises :class:`OSError` when the folder cannot be written."""
    store = RecordStore(root, warn=warn)
    records = store.size()
    result = CompileCache(root, warn=warn).prune(max(max_size - records, 0))
    if result.remaining_bytes + records > max_size:
        store.prune(max(max_size - result.remaining_bytes, 0))
    return result


def bound_after_build(root: Path, max_size: int, *, warn: Callable[[str], None]) -> None:
    """:func:`bound_cache` at the end of a build, which has succeeded whatever the cache
    folder allows: a folder that cannot be pruned costs a warning."""
    try:
        bound_cache(root, max_size, warn=warn)
    except OSError as exc:
        warn(f"compile cache {root}: not brought within cache-max-size ({exc})")
