"""The readers of a call's attrs: one copy of them all agrees with one lookup each."""

from __future__ import annotations

from pypto_build.lowering.ir import INDEX, Call, GlobalVar, get_attr
from pypto_build.lowering.ir.names import CallAttr, call_attrs, task_deps, task_numbers


def _call(*attrs: tuple[str, object]) -> Call:
    return Call(GlobalVar("k"), (), INDEX, attrs=attrs)  # type: ignore[arg-type]


def test_call_attrs_finds_what_get_attr_finds() -> None:
    call = _call((CallAttr.TASK_ID, 3), (CallAttr.DEPS, (1, 2)), (CallAttr.TASK_ID, 9))
    found = call_attrs(call)
    for key in (CallAttr.TASK_ID, CallAttr.DEPS, CallAttr.EXPLICIT_DEPS):
        assert found.get(key) == get_attr(call.attrs, key)
    assert found[CallAttr.TASK_ID] == 3  # the first of a repeated name


def test_task_numbers_keeps_the_integers_of_a_tuple() -> None:
    assert task_numbers((1, "x", 2, None)) == (1, 2)
    assert task_numbers(None) == ()
    assert task_numbers(4) == ()
    call = _call((CallAttr.EXPLICIT_DEPS, (5, True, 6)))
    assert task_deps(call, CallAttr.EXPLICIT_DEPS) == task_numbers((5, True, 6)) == (5, 6)
