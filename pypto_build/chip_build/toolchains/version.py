"""CANN toolkit versions, which come in several spellings, as comparable values.

Toolkits have been numbered ``8.0.RC1``, ``8.3.RC1``, ``8.5.0.alpha001``, ``9.0.0-beta.1`` and plain
``8.5.0`` (the ``version=`` / ``Version=`` lines of a toolkit's ``ascend_toolkit_install.info`` and
``version.info`` files). A version is a release (the leading numbers) followed by pre-release
stages, each a label with a number. A release with trailing zeros equals the shorter one (``8.3`` ==
``8.3.0``). Stages order as alpha < beta < rc < final, and a later stage refines an earlier one, so
``8.0.RC2.alpha003`` (an alpha of RC2) sorts after ``8.0.RC1`` and before ``8.0.RC2``.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

_STAGE_RANK = {"alpha": 0, "beta": 1, "rc": 2}
#: Rank of "no further stage": a version without a stage sorts after all its pre-releases.
_FINAL = (len(_STAGE_RANK), 0)
_STAGE = re.compile(r"(?i)(alpha|beta|rc)(\d*)")


@functools.total_ordering
@dataclass(frozen=True, eq=False)
class Version:
    """A parsed toolkit version; ``str()`` gives the text it was parsed from."""

    text: str
    release: tuple[int, ...]
    #: Pre-release stages in order, e.g. ``(("rc", 2), ("alpha", 3))``.
    stages: tuple[tuple[str, int], ...]

    @classmethod
    def parse(cls, text: str) -> Version:
        """Parse ``text``; anything but numbers and alpha/beta/rc stages is a ValueError."""
        stripped = text.strip()
        release: list[int] = []
        stages: list[tuple[str, int | None]] = []
        for token in re.split(r"[.\-_]", stripped):
            if token.isdigit():
                if not stages:
                    release.append(int(token))
                elif stages[-1][1] is None:  # "beta.1": the stage's number follows it
                    stages[-1] = (stages[-1][0], int(token))
                else:
                    raise ValueError(f"version '{stripped}': number '{token}' after a stage")
                continue
            stage = _STAGE.fullmatch(token)
            if stage is None or not release:
                raise ValueError(
                    f"version '{stripped}' is not <numbers>[.rcN|.alphaN|-beta.N]: "
                    f"unexpected '{token}'"
                )
            label, number = stage.group(1).lower(), stage.group(2)
            stages.append((label, int(number) if number else None))
        if not release:
            raise ValueError(f"version '{stripped}' has no release number")
        return cls(stripped, tuple(release), tuple((label, n or 0) for label, n in stages))

    def _key(self) -> tuple[tuple[int, ...], tuple[tuple[int, int], ...]]:
        release = list(self.release)
        while len(release) > 1 and release[-1] == 0:
            release.pop()
        ranked = tuple((_STAGE_RANK[label], number) for label, number in self.stages)
        return tuple(release), (*ranked, _FINAL)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Version):
            return NotImplemented
        return self._key() == other._key()

    def __lt__(self, other: Version) -> bool:
        return self._key() < other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __str__(self) -> str:
        return self.text
