"""JSON documents from a source that is not trusted, parsed within a bound on size and depth.

Python's parser recurses once per nesting level: a document a hundred thousand brackets deep
raises ``RecursionError`` (not the ``ValueError`` of malformed JSON), and one just shallow
enough to parse makes every later walk of it (a comparison, a re-encoding) recurse as deep.
The depth is therefore measured before parsing, on the brackets outside strings, without
recursion, and a document deeper than its kind can be is refused like malformed JSON.
"""

from __future__ import annotations

import itertools
import json
import re

from pypto_build.errors import PyptoError

#: A JSON string, escapes included: brackets inside one do not nest.
_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"')
#: Every byte but the four brackets, deleted before the depth is counted.
_NOT_BRACKETS = bytes(sorted(set(range(256)) - set(b"[]{}")))
_STEP = {ord("["): 1, ord("{"): 1, ord("]"): -1, ord("}"): -1}


class DocumentRefused(PyptoError, ValueError):
    """The bytes are not JSON, or larger or deeper than the document can be."""


def loads(data: bytes, *, max_bytes: int, max_depth: int) -> object:
    """The JSON value ``data`` holds; :class:`DocumentRefused` when it is over ``max_bytes``,
    nested deeper than ``max_depth`` or not JSON."""
    if len(data) > max_bytes:
        raise DocumentRefused(f"{len(data)} bytes, at most {max_bytes} expected")
    if depth(data) > max_depth:
        raise DocumentRefused(f"nested deeper than {max_depth} levels")
    try:
        return json.loads(data)
    except ValueError:
        raise DocumentRefused("not a JSON document") from None


def depth(data: bytes) -> int:
    """How deep the arrays and objects of the JSON text ``data`` nest (0 for a scalar)."""
    brackets = _STRING.sub(b"", data).translate(None, _NOT_BRACKETS)
    return max(itertools.accumulate(_STEP[byte] for byte in brackets), default=0)
