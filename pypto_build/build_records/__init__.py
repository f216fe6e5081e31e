"""The records of projects' last builds, which let a hook build that would change nothing ship
its last trees without lowering, rendering or compiling: what a record holds and how a build is
recorded (:mod:`.record`), what it read as a later build checks it (:mod:`.signatures`, and the
headers its compiles read, from the compile cache's entries, :mod:`.compile_inputs`), where
records are kept (:mod:`.records`: the second client of the store, :mod:`pypto_build.store`,
beside the compile cache), and the size bound over both (:mod:`.folder_bound`).
"""
