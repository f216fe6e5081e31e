"""MoE expert combine with the fused MC2 operator (a pypto-build sample package).

The program lives in :mod:`moe_mc2.pipelines`; it is compiled by pypto-build at build time and
is not imported here.
"""

__version__ = "0.1.0"
