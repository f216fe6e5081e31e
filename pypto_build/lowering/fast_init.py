"""A cheaper ``__init__`` for the frozen dataclasses the lowering makes by the million.

A frozen dataclass's generated ``__init__`` sets each field through ``object.__setattr__`` (its
own ``__setattr__`` refuses), looking that method up anew for every field: for the IR nodes and
the spans the front end makes for every node of a program, that lookup is a fifth of the cost of
making them. :func:`fast_init` gives such a class an ``__init__`` with the same parameters and
defaults that calls ``object.__setattr__`` bound once: the object made is the same (every field,
in declaration order, and nothing else), and still frozen to its users. Filling the instance
dict directly would be cheaper still, but makes CPython give every node a dict of its own: more
than twice the memory per node, and slower attribute reads for every pass after.

It applies only to a frozen dataclass whose fields are all set by ``__init__`` from a parameter
or a plain default, with no ``__post_init__``; anything else is refused when the class is made.
"""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

T = TypeVar("T", bound=type)


def fast_init(cls: T) -> T:
    """Give frozen dataclass ``cls`` an ``__init__`` that sets its fields with
    ``object.__setattr__`` bound once."""
    frozen = getattr(cls, "__dataclass_params__", None)
    if frozen is None or not frozen.frozen or hasattr(cls, "__post_init__"):
        raise TypeError(f"fast_init needs a frozen dataclass without __post_init__: {cls}")
    params = dataclasses.fields(cls)
    defaults: dict[str, Any] = {}
    signature: list[str] = []
    for field in params:
        if (
            not field.init
            or field.kw_only
            or field.default_factory is not dataclasses.MISSING
            or field.name in ("self", "_set")
            or field.name.startswith("_default_")
        ):
            raise TypeError(f"fast_init: field '{field.name}' of {cls.__name__} is not plain")
        if field.default is dataclasses.MISSING:
            signature.append(field.name)
        else:
            defaults[f"_default_{field.name}"] = field.default
            signature.append(f"{field.name}=_default_{field.name}")
    # object.__setattr__ bound once (the generated __init__ looks it up for every field), so
    # the values stay where CPython keeps an instance's attributes without a dict of its own.
    defaults["_set"] = object.__setattr__
    body = "".join(f"    _set(self, {field.name!r}, {field.name})\n" for field in params)
    source = f"def __init__({', '.join(['self', *signature])}):\n{body or '    pass'}\n"
    namespace: dict[str, Any] = {}
    exec(source, defaults, namespace)
    init = namespace["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__module__ = cls.__module__
    setattr(cls, "__init__", init)  # noqa: B010 (mypy refuses assigning to __init__)
    return cls
