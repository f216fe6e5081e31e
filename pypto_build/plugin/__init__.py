"""Front ends over the engine: the ``pypto-build`` command line, the ``[tool.pypto]`` settings
model and the hatchling build hook. (The CMake package for scikit-build-core is
:mod:`pypto_build.cmake`; the checks the command line runs are
:mod:`pypto_build.chip_build.determinism`.)"""
