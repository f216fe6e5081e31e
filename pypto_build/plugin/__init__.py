"""Front ends over the engine: the ``pypto-build`` command line, the ``[tool.pypto]`` settings
model, the hatchling build hook and the ``check-reproducible`` wheel check. (The CMake package
for scikit-build-core is :mod:`pypto_build.cmake`.)"""
