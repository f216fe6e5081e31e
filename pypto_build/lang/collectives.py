"""``pld.tensor``: managed collectives of the program model.

Each returns its ``target`` window (window-as-result), so the call site rebinds it:
``data = pld.tensor.all_to_all_v(stage, data, signal, counts, recv, core_num=4)``.
``core_num`` is the requested AIV block count (1 when omitted).
"""

from __future__ import annotations

from pypto_build.lang._annotations import DistributedTensor, Tensor
from pypto_build.lang._errors import compiled_only


def all_to_all_v(
    input: Tensor,
    target: DistributedTensor,
    signal: DistributedTensor,
    send_counts: Tensor,
    recv_counts: DistributedTensor,
    core_num: int = 1,
) -> DistributedTensor:
    """Send rows ``input[d*MAX_RECV : d*MAX_RECV + send_counts[d]]`` to every rank ``d``; they
    land in ``target[r*MAX_RECV : ...]`` of rank ``d``, and ``recv_counts[r]`` holds the count."""
    raise compiled_only("pld.tensor.all_to_all_v")


def indexed_all_to_all_v(
    input: Tensor,
    target: DistributedTensor,
    signal: DistributedTensor,
    send_counts: DistributedTensor,
    recv_counts: Tensor,
    index: Tensor,
    core_num: int = 1,
) -> DistributedTensor:
    """Like :func:`all_to_all_v`, but row ``k`` for rank ``d`` is
    ``input[index[d*MAX_RECV + k]]`` (chip a5 only)."""
    raise compiled_only("pld.tensor.indexed_all_to_all_v")
