"""The engine's back half: a lowered program becomes one tree per chip, and the tree binaries.

Rendering (:mod:`.subbuild`) writes each chip's sub-builds with the two orchestration backends
(:mod:`.orchestration_codegen` for CHIP orchestrations, :mod:`.host_orch_codegen` for HOST
orchestrators), the kernels, ``kernel_config.py`` and a manifest; compiling (:mod:`.compile`)
turns the tree's sources into binaries with a toolchain (:mod:`.toolchains`) through the compile
cache (:mod:`.compile_cache`); :mod:`.sim` runs a tree built for the simulator. Every output is
atomic and deterministic (:mod:`.fs`), so a tree is a pure function of its inputs.
"""
