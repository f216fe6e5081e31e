"""The two halves of a hook build around the engine: before it, whether the project's last
build can stand for this one (:mod:`pypto_build.build_records.record`); after a full build,
recording it (:mod:`pypto_build.build_records.records`). The hook's glue between its settings
and the build records, so it lives with the hook.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pypto_build.build_records.record import (
    BuildRecord,
    build_record,
    record_key,
    toolchain_description,
)
from pypto_build.build_records.records import RecordStore
from pypto_build.plugin.settings import CHIP_NAMES
from pypto_build.store.storage import Damaged, Unavailable

if TYPE_CHECKING:
    from pypto_build.chip_build.build import BuildResult
    from pypto_build.chip_build.toolchains import Toolchain
    from pypto_build.plugin.settings import PyptoSettings


@dataclass(frozen=True)
class Unchanged:
    """What a build found before deciding whether the engine must run."""

    toolchain: Toolchain
    #: What the toolchain contributes to the trees (:func:`toolchain_description`).
    toolchain_state: Mapping[str, Any]
    cache_root: Path
    store: RecordStore
    key: str
    #: The record found, changed or not: a new record reuses the hashes of the files that
    #: kept their signature.
    previous: BuildRecord | None = None
    #: What changed since the recorded build, in words, when one was recorded.
    changed: str | None = None

    @property
    def record(self) -> BuildRecord | None:
        """The record of the last build, when nothing it read has changed."""
        return self.previous if self.changed is None else None


def unchanged_build(
    project: Path,
    settings: PyptoSettings,
    toolchain: Toolchain,
    *,
    warn: Callable[[str], None],
) -> Unchanged:
    """Look for the record of ``project``'s last build with ``settings`` in the user's
    compile cache folder, and keep it when nothing it read has changed."""
    from pypto_build.store.location import default_cache_dir

    cache_root = default_cache_dir()
    store = RecordStore(cache_root, warn=warn)
    # What a build prints changes nothing it makes.
    key = record_key(project, dataclasses.asdict(dataclasses.replace(settings, verbose=False)))
    # Without a chips setting, the chips are known only once the programs are lowered: the
    # toolchain is described for every chip it could build.
    state = toolchain_description(toolchain, settings.chips or CHIP_NAMES)
    previous = store.load(key)
    changed = None if previous is None else previous.changed(state)
    return Unchanged(toolchain, state, cache_root, store, key, previous, changed)


def remember(unchanged: Unchanged, project: Path, result: BuildResult) -> None:
    """Record the full build ``result`` for later builds; when what its compiles read cannot
    be told (the cache could not keep it), nothing is recorded and later builds run in full.
    A record that cannot be written costs a warning, never the build."""
    from pypto_build.build_records.compile_inputs import compile_inputs

    store = unchanged.store
    previous = unchanged.previous
    known = {} if previous is None else {file.path: file for file in previous.files}
    try:
        compiled_from = compile_inputs(
            unchanged.cache_root, result.out_dir, result.reports, unchanged.toolchain, known
        )
        if compiled_from is None:
            return
        record = build_record(
            unchanged.key, project, result, unchanged.toolchain_state, compiled_from, known
        )
        store.save(record, result.out_dir)
    except (OSError, ValueError, KeyError, Damaged, Unavailable) as exc:
        store.warn(f"build record: not written ({exc}); the next build runs in full")
