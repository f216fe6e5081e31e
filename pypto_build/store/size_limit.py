"""How a size bound of the store is spelled (``cache-max-size``, ``PYPTO_CACHE_MAX_SIZE``,
``pypto-build cache prune --max-size``)."""

from __future__ import annotations

import re

_SIZE = re.compile(r"(?i)\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(i?)b?\s*")
_SIZE_POWERS = {"": 0, "k": 1, "m": 2, "g": 3, "t": 4}


def parse_size(text: str) -> int:
    """A size in bytes from ``500M``, ``2G``, ``1.5GiB``, ``4096`` (as ccache spells them:
    a plain suffix is decimal, an ``i`` suffix binary)."""
    match = _SIZE.fullmatch(text)
    if match is None or (match.group(3) and not match.group(2)):
        raise ValueError(f"invalid size '{text}' (examples: 4096, 500M, 2G, 1.5GiB)")
    base = 1024 if match.group(3) else 1000
    return int(float(match.group(1)) * base ** _SIZE_POWERS[match.group(2).lower()])
