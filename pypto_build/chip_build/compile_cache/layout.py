"""The compile cache's layout: where its entries are, what an entry holds, and how its
manifests are spelled and read.

Layout (``v2``, :data:`LAYOUT`; a new layout gets a new directory, so the entries of an older
one are misses, never errors)::

    <root>/v2/entries/<key[:2]>/<key>/<entry>/{artifact, shared.json, manifest.json}
    <root>/v2/tmp/              staging, on the same file system as entries/
    <root>/v2/locks/<key[:2]>/<key>.lock
    <root>/v2/last-build.json   hits and misses of the last recorded build

One compile key can hold several entries (one per set of header contents), each named by the
hash of the key and its dependencies (:func:`entry_name`). A manifest lists the entry's own
dependencies (the files in the tree: the source and its headers there) and the SHA-256 of
``shared.json``, which lists those outside the tree: the hundred-odd system, PTO-ISA and
pypto-build headers that every kernel of a sub-build shares. A build hashes, parses and matches
each such file's bytes once (:meth:`~.dependencies.FileDigests.match_shared`) and only compares
later entries' bytes with them, where layout ``v1`` parsed and matched the whole list on every
hit (and a list kept as a string inside the manifest would cost decoding its escapes on every
hit). The remote tier keeps the self-contained manifests of format :data:`~.keys.FORMAT`
(every dependency listed), which is also the keys' format.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from json.encoder import encode_basestring_ascii

from pypto_build.chip_build.compile_cache.dependencies import (
    SHA256,
    Dependency,
    listing,
    parse_dependencies,
)
from pypto_build.chip_build.compile_cache.keys import FORMAT

#: The local layout: its folder, and the format of its entries' manifests.
LAYOUT = "v2"
#: How a layout's folder is named (``v1``, ``v2``, ...).
LAYOUT_NAME = re.compile(r"v[0-9]+")
MANIFEST = "manifest.json"
ARTIFACT = "artifact"
SHARED = "shared.json"
LAST_BUILD = "last-build.json"


def key_folder(key: str) -> tuple[str, str, str]:
    """The folder of ``key``'s entries, as its parts below the layout's folder."""
    return ("entries", key[:2], key)


def entry_name(key: str, own: Sequence[Dependency], shared_sha256: str) -> str:
    """An entry's folder name: the key, its own dependencies and the hash of its shared ones,
    so one key holds one entry per set of header contents, and a manifest altered after
    publishing no longer matches. It is ``digest_json([key, [dep.as_json() for dep in own],
    shared_sha256])``, spelled out from :attr:`Dependency.canonical`."""
    canonical = f'[{encode_basestring_ascii(key)},{listing(own)},"{shared_sha256}"]'
    return hashlib.sha256(canonical.encode("ascii")).hexdigest()


def entry_manifest(
    key: str, artifact: str, own: Sequence[Dependency], shared_sha256: str
) -> dict[str, object]:
    """A local entry's manifest (format :data:`LAYOUT`): the artifact's hash, the entry's own
    dependencies and the hash of its ``shared.json``."""
    return {
        "artifact_sha256": artifact,
        "dependencies": [dep.as_json() for dep in own],
        "format": LAYOUT,
        "key": key,
        "shared_sha256": shared_sha256,
    }


def portable_manifest(
    key: str, artifact: str, dependencies: Sequence[Dependency]
) -> dict[str, object]:
    """The self-contained manifest (format :data:`~.keys.FORMAT`, every dependency listed) of
    an entry, the one the remote tier stores."""
    return {
        "artifact_sha256": artifact,
        "dependencies": [dep.as_json() for dep in dependencies],
        "format": FORMAT,
        "key": key,
    }


def parse_manifest(document: object, key: str) -> tuple[str, list[Dependency]]:
    """The artifact hash and dependencies of a self-contained manifest (format
    :data:`~.keys.FORMAT`, as the remote tier stores them); ValueError if malformed."""
    _, artifact, raw = _manifest_fields(document, key, FORMAT)
    return artifact, parse_dependencies(raw)


def parse_entry_manifest(document: object, key: str) -> tuple[str, list[Dependency], str]:
    """The artifact hash, own dependencies and the claimed SHA-256 of ``shared.json`` of a
    local entry's manifest (format :data:`LAYOUT`); ValueError if malformed. The shared
    dependencies are checked by :meth:`~.dependencies.FileDigests.match_shared`, once per build."""
    fields, artifact, raw = _manifest_fields(document, key, LAYOUT)
    shared_sha256 = fields.get("shared_sha256")
    if type(shared_sha256) is not str or len(fields) != 5:
        raise ValueError("malformed manifest")
    if SHA256.fullmatch(shared_sha256) is None:
        raise ValueError("shared dependencies' hash is not a SHA-256")
    return artifact, parse_dependencies(raw), shared_sha256


def _manifest_fields(
    document: object, key: str, format_: str
) -> tuple[dict[str, object], str, list[object]]:
    """A manifest of format ``format_`` and ``key`` as a dict, its artifact hash and its raw
    dependency list; ValueError otherwise."""
    if not isinstance(document, dict) or document.get("format") != format_:
        raise ValueError("not a cache entry manifest")
    if document.get("key") != key:
        raise ValueError("manifest of another key")
    artifact = document.get("artifact_sha256")
    raw = document.get("dependencies")
    if not isinstance(artifact, str) or not isinstance(raw, list):
        raise ValueError("malformed manifest")
    if SHA256.fullmatch(artifact) is None:
        raise ValueError("artifact hash is not a SHA-256")
    return document, artifact, raw
