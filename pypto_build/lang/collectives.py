"""``pld.tensor``: managed collectives of the program model.

Each collective returns its ``target`` window (window-as-result), so the call site rebinds it:
``data = pld.tensor.all_to_all_v(stage, data, signal, counts, recv, core_num=4)``.
``core_num`` is the requested AIV block count (1 when omitted). Each function's parameters are
the op's operands as its builtin package's contract defines them (a test holds them together).
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


def batch_matmul_reduce_scatter_all_to_all(
    x: Tensor,
    weight: Tensor,
    bias: Tensor | None,
    out: Tensor,
    workspace: DistributedTensor,
    *,
    ep_world_size: int,
    tp_world_size: int,
    y_shard_type: int,
    transpose_weight: bool = False,
    group_ep: str | None = None,
    group_tp: str | None = None,
) -> Tensor:
    """The fused MC2 operator: ``x @ weight (+ bias)``, reduce-scattered over the TP group and
    exchanged all-to-all over the EP group into ``out`` (chip a3 only; ``docs/mc2.md``)."""
    raise compiled_only("pld.tensor.batch_matmul_reduce_scatter_all_to_all")
