"""The content-addressed store every cache of pypto-build keeps its values in.

One interface (:class:`~.storage.Storage`, in the shape of sccache's ``Storage`` trait:
``get``, ``put``, where it is, how much it holds), a module per backend: a folder on this
machine (:mod:`.disk`), a server of the HTTP remote-cache protocol (:mod:`.http`, with its
credentials in :mod:`.http_credentials` and its deadline in :mod:`.http_deadline`), and any
of them read-only (:mod:`.read_only`). Every backend publishes atomically (a reader sees a
whole value or none), verifies what it reads against the SHA-256 the caller names, and raises
the one :class:`~.storage.Damaged` for a value it could not have stored.

Two clients keep their values here: the compile cache
(:mod:`pypto_build.chip_build.compile_cache`, with its remote tier) and the records of
projects' last builds (:mod:`pypto_build.build_records`), both in the folder
:func:`.location.default_cache_dir` names. The store imports nothing of pypto-build but
:mod:`pypto_build.files` and the error root (:mod:`pypto_build.errors`), so every part can use
it.
"""
