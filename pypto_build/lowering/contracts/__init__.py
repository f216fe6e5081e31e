"""Op contracts: what a builtin package's manifest cannot say about its op, in code.

A manifest names its contract (``[op] contract``, default ``collective``). The contract types the
public op (and the HOST rail's per-device op, where the package has that rail), checks that the
manifest makes sense for it, and decides, for one call on the CHIP rail, the kernel variant
(payload dtype and any static configuration, which become template variables) and the launch
spec. Everything else — rails, chips, operands and their directions, the synthesized kernel, the
contiguity proof — is generic over packages and stays in the passes. A collective exchanging
rows between ranks is typed from its manifest's operand table (:mod:`.collective`); a fused
operator with rules of its own has a module of its own (:mod:`.mc2`).
"""
