"""Launch-width rules: how a collective's requested ``core_num`` becomes the number of blocks its
builtin kernel launches. A builtin package names its rule (``[op] launch_width``); the rule itself
is code, because a manifest cannot say it. These are ours; another distribution registers its own
:class:`LaunchWidthRule` through the ``pypto_build.builtins`` entry-point group
(:mod:`pypto_build.lowering.builtin_registry`).

* ``all_to_all_v`` -- the multi-block ``all_to_all_v`` kernel (PyPTO's admission formula,
  https://github.com/hw-native-sys/pypto/issues/2521). Both
  rails fold the requested block limit ``core_num`` (L) against the rank count (P) with the same
  formula: the CHIP rail at compile time (LowerL2TensorCollectives) and the HOST rail in its
  generated entry. Keeping the formula in one function, pinned by that issue's worked table in
  the tests, is what keeps the two rails launching the same number of blocks.
* ``exact`` -- ``core_num`` is the exact number of blocks launched (the indexed exchange: blocks
  beyond the rank count only gather rows locally).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pypto_build.lowering.ir.names import Kwarg


def cal_all_to_all_v_blocks(nranks: int, core_num: int) -> int:
    """The admitted block count B for P = ``nranks`` ranks and a requested limit L = ``core_num``.

    ``B = L`` when ``L < P`` (every block serves a stride set of peers); otherwise B is the
    largest multiple of P not above L, so every peer gets the same number of lanes. There is no
    upper cap: the runtime refuses a sync-start launch wider than the chip instead of silently
    launching fewer blocks.
    """
    for name, value in (("nranks", nranks), (Kwarg.CORE_NUM.value, core_num)):
        # bool is an int subclass; a True/False block count is always a caller bug.
        if type(value) is not int:
            raise TypeError(f"{name} must be int, got {type(value).__name__}")
        if value <= 0:
            raise ValueError(f"{name} must be positive, got {value}")
    if core_num < nranks:
        return core_num
    return (core_num // nranks) * nranks


def _exact(nranks: int, core_num: int) -> int:
    return core_num


@dataclass(frozen=True)
class LaunchWidthRule:
    """A named rule: the admitted block count for P ranks and a requested ``core_num``."""

    name: str
    blocks: Callable[[int, int], int]
    #: What ``core_num`` means under this rule, for a diagnostic that asks for a constant.
    meaning: str


ALL_TO_ALL_V = LaunchWidthRule(
    "all_to_all_v",
    cal_all_to_all_v_blocks,
    "the admitted block count is folded from it at compile time",
)
EXACT = LaunchWidthRule("exact", _exact, "it is the exact number of AIV launched")
