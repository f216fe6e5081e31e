"""A cheaper ``__init__`` for the frozen dataclasses the lowering makes by the million.

A frozen dataclass's generated ``__init__`` sets each field through ``object.__setattr__`` (its
own ``__setattr__`` refuses): for the IR nodes and the spans the front end makes for every node
of a program, and the analyses and passes make for every call, that was a large part of the cost
of making them. :func:`fast_init` gives such a class an ``__init__`` with the same parameters and
defaults that fills the instance dict directly, as :func:`~pypto_build.lowering.ir.rebuild.replaced`
does for a copy: the object made is the same (every field, in declaration order, and nothing
else), and still frozen to its users.

It applies only to a frozen dataclass whose fields are all set by ``__init__`` from a parameter
or a plain default, with no ``__post_init__``; anything else is refused when the class is made.
"""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

T = TypeVar("T", bound=type)


def fast_init(cls: T) -> T:
    """Give frozen dataclass ``cls`` an ``__init__`` that writes its instance dict."""
    frozen = getattr(cls, "__dataclass_params__", None)
    if frozen is None or not frozen.frozen or hasattr(cls, "__post_init__"):
        raise TypeError(f"fast_init needs a frozen dataclass without __post_init__: {cls}")
    params = dataclasses.fields(cls)
    defaults: dict[str, Any] = {}
    signature: list[str] = []
    for field in params:
        if not field.init or field.kw_only or field.default_factory is not dataclasses.MISSING:
            raise TypeError(f"fast_init: field '{field.name}' of {cls.__name__} is not plain")
        if field.default is dataclasses.MISSING:
            signature.append(field.name)
        else:
            defaults[f"_default_{field.name}"] = field.default
            signature.append(f"{field.name}=_default_{field.name}")
    # One dict literal, so that no local of the body can shadow a field (ReturnStmt.values).
    values = ", ".join(f"{field.name!r}: {field.name}" for field in params)
    header = f"def __init__({', '.join(['self', *signature])}):"
    source = f"{header}\n    self.__dict__.update({{{values}}})\n"
    namespace: dict[str, Any] = {}
    exec(source, defaults, namespace)
    init = namespace["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__module__ = cls.__module__
    setattr(cls, "__init__", init)  # noqa: B010 (mypy refuses assigning to __init__)
    return cls
