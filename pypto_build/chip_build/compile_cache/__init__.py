"""The content-addressed compile cache shared by every build of a user, and its remote tier.

Keying follows ccache's direct mode in two phases. The *compile key* hashes what is known
before compiling: the source bytes, every command line of the plan and the toolchain's identity
and version (:mod:`.keys`). What the compiler then read — every header, from its ``-MD``
dependency file (:mod:`.depfile_parser`) — is only known afterwards, so each entry records
those files with their hashes, and a lookup accepts an entry only while every recorded file
still has the recorded hash (:mod:`.dependencies`). One compile key can therefore hold several
entries (one per set of header contents), each named by the hash of the key and its
dependencies (:mod:`.layout`).

Keys and entries depend on content, never on where the tree or pypto-build is installed: an
isolated build (pip, build, uv) installs pypto-build into a new temporary environment each time,
and must still hit.

The entries are kept in the store's folder (:mod:`pypto_build.store.disk`, under
``<root>/v2/``), which trusts nothing it reads: an entry is used only when it is one this cache
could have published (:mod:`.lookup`), anything else is a damaged entry, evicted with one
warning line and rebuilt. An entry is published whole or not at all (:mod:`.publish`); a hit
hard-links the artifact it has verified to where the caller wants it. :mod:`.stats` counts and
prunes; :mod:`.cache` is the entry point (:class:`~.cache.CompileCache`), which asks the
optional remote tier (:mod:`.remote`, over the store's HTTP backend) on a local miss.
"""
