"""Front ends over the engine: the ``pypto-build`` command line and the ``[tool.pypto]`` settings
model (and, later, the hatchling build hook and the CMake package for scikit-build-core)."""
