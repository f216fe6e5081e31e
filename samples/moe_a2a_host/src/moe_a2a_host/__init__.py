"""MoE token dispatch with a HOST-rail all_to_all_v (a pypto-build sample package).

The program lives in :mod:`moe_a2a_host.pipelines`; it is compiled by pypto-build at build time
and is not imported here.
"""

__version__ = "0.1.0"
