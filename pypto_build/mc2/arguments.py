"""The host API's arguments of the wrong type: what C's types rule out before aclnn runs.

aclnn's functions take an ``aclTensor*``, ``int64_t`` or ``uint64_t`` where this API takes a
Python object, so a value of another type (a list for a tensor, ``"16"`` for a size) never
reaches aclnn on hardware; here it is an :class:`ArgumentError` naming the argument, raised
before any check of the op. The op's own group names and attributes are not checked here: their
types are the op's rules' to refuse (:mod:`pypto_build.lowering.aclnn.rules`), so a program and an
API call given the same value get the same message and aclnn status.
"""

from __future__ import annotations

from pypto_build.errors import PyptoUsageError
from pypto_build.lowering.aclnn.rules import described, integer_value


class ArgumentError(PyptoUsageError, TypeError):
    """An argument of :mod:`pypto_build.mc2` of a type it cannot take; the message names it."""


def integer(name: str, value: object, meaning: str) -> int:
    """``value`` as an ``int``: an integer (NumPy's included) that is not a ``bool``, else an
    :class:`ArgumentError` saying what the argument is (``meaning``: "aclnn's uint64_t")."""
    number = integer_value(value)
    if number is None:
        raise ArgumentError(f"{name} must be an integer ({meaning}), got {described(value)}")
    return number
