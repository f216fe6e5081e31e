"""Launch width of the multi-block ``all_to_all_v`` kernel (RFC #2521 admission formula).

Both rails fold the requested block limit ``core_num`` (L) against the rank count (P) with the
same formula: the CHIP rail at compile time (LowerL2TensorCollectives) and the HOST rail in its
generated entry. Keeping the formula in one function, pinned by the RFC's worked table in the
tests, is what keeps the two rails launching the same number of blocks.
"""

from __future__ import annotations

#: Upper bound of ``core_num`` and of the rank count: the runtime narrows both to ``int32_t``.
INT32_MAX = 2**31 - 1


def cal_all_to_all_v_blocks(nranks: int, core_num: int) -> int:
    """The admitted block count B for P = ``nranks`` ranks and a requested limit L = ``core_num``.

    ``B = L`` when ``L < P`` (every block serves a stride set of peers); otherwise B is the
    largest multiple of P not above L, so every peer gets the same number of lanes. There is no
    upper cap: the runtime refuses a sync-start launch wider than the chip instead of silently
    launching fewer blocks.
    """
    for name, value in (("nranks", nranks), ("core_num", core_num)):
        # bool is an int subclass; a True/False block count is always a caller bug.
        if type(value) is not int:
            raise TypeError(f"{name} must be int, got {type(value).__name__}")
        if value <= 0:
            raise ValueError(f"{name} must be positive, got {value}")
    if core_num < nranks:
        return core_num
    return (core_num // nranks) * nranks
