"""The op definitions of the program model: signatures, effects, type deducers and the operand
validation they share.

Adding an op means adding an :class:`~pypto_build.lowering.ops.signature.OpDef` (operands plus
a deducer) to one of the tables in ``tensor_ops``, ``distributed_ops`` or ``parse_only``; a
builtin package's ops are defined by its contract instead
(:mod:`pypto_build.lowering.builtin_ops`). The table that gathers all of them, and binds calls
against it, is :mod:`pypto_build.lowering.optable`, above the contracts.
"""
