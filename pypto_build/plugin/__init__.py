"""Front ends over the engine: the ``pypto-build`` command line (and, later, the hatchling
build hook, the CMake package for scikit-build-core and the ``[tool.pypto]`` settings model)."""
