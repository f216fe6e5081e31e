"""``replaced`` copies an IR node as ``dataclasses.replace`` would, and refuses a name that is
not a field."""

from __future__ import annotations

import dataclasses

import pytest

from pypto_build.lowering.ir import INDEX, Call, GlobalVar, Var
from pypto_build.lowering.ir.rebuild import replaced
from pypto_build.lowering.ir.walk import walk_calls


def test_a_copy_equals_dataclasses_replace() -> None:
    call = Call(GlobalVar("k"), (Var("x", INDEX),), INDEX)
    copy = replaced(call, args=(), attrs=(("a", 1),))
    assert copy == dataclasses.replace(call, args=(), attrs=(("a", 1),))
    assert list(copy.__dict__) == [field.name for field in dataclasses.fields(Call)]


def test_a_copy_leaves_the_memos_of_the_original_behind() -> None:
    call = Call(GlobalVar("k"), (Var("x", INDEX),), INDEX, attrs=(("a", 1),))
    list(walk_calls(call))
    call.__dict__["_memo_example"] = 1
    copy = replaced(call, args=())
    assert list(copy.__dict__) == [field.name for field in dataclasses.fields(Call)]


@pytest.mark.parametrize("node", [Var("x", INDEX), Call(GlobalVar("k"), (), INDEX)])
def test_a_name_that_is_not_a_field_is_refused(node: Var | Call) -> None:
    node.__dict__["_memo_example"] = 1  # with a memo and without (a fresh copy)
    for each in (node, replaced(node)):
        with pytest.raises(TypeError, match=rf"^{type(node).__name__} has no field bogus, x$"):
            replaced(each, bogus=1, x=2)
