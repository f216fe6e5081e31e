"""Quantized MoE token dispatch with an on-chip INT8 all_to_all_v (a pypto-build sample package
built with scikit-build-core).

The program lives in :mod:`moe_a2a_skbuild.dispatch`; pypto-build compiles it from CMake at
build time (``CMakeLists.txt``) and it is not imported here. The wheel carries the result in
``moe_a2a_skbuild/_kernels/<chip>/``.
"""

__version__ = "0.1.0"
