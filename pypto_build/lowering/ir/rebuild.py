"""Copying an IR node with some fields changed, fast.

Every pass rebuilds the nodes it changes, and their parents, for every call of a program (the
directions, task ids and context arguments are new attrs and operands of each call). Through
:func:`dataclasses.replace`, each copy binds every field as a keyword argument to the frozen
dataclass's generated ``__init__``, which sets each with ``object.__setattr__``: for a large
program, that was most of the time of the rewriting passes.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

N = TypeVar("N", bound="DataclassInstance")

#: Each node type's field names in declaration order, and as a set.
_FIELDS: dict[type, tuple[tuple[str, ...], frozenset[str]]] = {}


def replaced(node: N, **changes: object) -> N:
    """``dataclasses.replace(node, **changes)`` for an IR node.

    IR nodes validate nothing when they are made (no ``__post_init__``, every field in
    ``__init__``), so the copy is made the way ``__init__`` would leave it: every field, in
    declaration order, in its instance dict, and nothing else (no memo of the original,
    :mod:`.memo`). A name that is not a field is an error, as for ``dataclasses.replace``.
    """
    kind = type(node)
    fields = _FIELDS.get(kind)
    if fields is None:
        names = tuple(field.name for field in dataclasses.fields(node))
        fields = _FIELDS[kind] = (names, frozenset(names))
    names, known = fields
    old = node.__dict__
    copy = object.__new__(kind)
    values = copy.__dict__
    if len(old) == len(names):  # no memo: the fields alone, in declaration order
        values.update(old)
    else:
        for name in names:
            values[name] = old[name]
    values.update(changes)  # every key is there already: the order stays the declaration's
    if len(values) != len(names):  # a name that is not a field added a key: checked after
        unknown = ", ".join(sorted(changes.keys() - known))  # (the common case pays nothing)
        raise TypeError(f"{kind.__name__} has no field {unknown}")
    return copy
