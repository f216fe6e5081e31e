"""Requests of the MC2 op built from its logical sizes, for the rules and tiling tests.

Shapes are the operator's documented contract (``[aclnn doc]`` of ``docs/mc2.md``), written out
here independently of ``pypto_build.lowering.aclnn`` so a test of the rules does not borrow the
module's own arithmetic. The defaults are the aclnn sample's sizes ([sample]: E = 4*ep, C = 6*tp,
H = 2*tp, M = 6*tp).
"""

from __future__ import annotations

import dataclasses

from pypto_build.lowering.aclnn.rules import Mc2Request, TensorSpec
from pypto_build.lowering.ir.types import DataType

#: The bias dtype each x dtype takes.
BIAS_DTYPE = {DataType.FP16: DataType.FP16, DataType.BF16: DataType.FP32}


def mc2_request(
    ep: int = 4,
    tp: int = 2,
    shard: int = 1,
    *,
    E: int | None = None,
    C: int | None = None,
    H: int | None = None,
    M: int | None = None,
    dtype: DataType = DataType.FP16,
    bias_rank: int | None = None,
    transpose_weight: bool = False,
    group_ep: str | None = "ep_group",
    group_tp: str | None = "tp_group",
) -> Mc2Request:
    """A consistent request for ``ep`` x ``tp`` ranks and ``y_shard_type`` ``shard``; a bias of
    ``bias_rank`` dimensions (2 or 3) when given, with the dtype ``dtype`` needs."""
    E = 4 * ep if E is None else E
    C = 6 * tp if C is None else C
    H = 2 * tp if H is None else H
    M = 6 * tp if M is None else M
    assert E % ep == 0 and M % tp == 0, "sizes the rules would refuse: build those by hand"
    assert (H % tp == 0) if shard == 0 else (C % tp == 0)
    e, m = E // ep, M // tp
    weight = (e, H, m) if transpose_weight else (e, m, H)
    out = (E, C, H // tp) if shard == 0 else (E, C // tp, H)
    bias = None
    if bias_rank is not None:
        shape = (e, out[2]) if bias_rank == 2 else (e, 1, out[2])
        bias = TensorSpec(shape, BIAS_DTYPE[dtype])
    return Mc2Request(
        x=TensorSpec((e, ep * C, m), dtype),
        weight=TensorSpec(weight, dtype),
        bias=bias,
        out=TensorSpec(out, dtype),
        group_ep=group_ep,
        group_tp=group_tp,
        ep_world_size=ep,
        tp_world_size=tp,
        y_shard_type=shard,
        transpose_weight=transpose_weight,
    )


def with_dim(request: Mc2Request, operand: str, axis: int, value: int) -> Mc2Request:
    """``request`` with dimension ``axis`` of ``operand`` (as given) set to ``value``."""
    spec = getattr(request, operand)
    shape = list(spec.shape)
    shape[axis] = value
    return dataclasses.replace(request, **{operand: dataclasses.replace(spec, shape=tuple(shape))})


def with_shape(request: Mc2Request, operand: str, shape: tuple[int, ...]) -> Mc2Request:
    """``request`` with ``operand``'s whole shape replaced."""
    spec = getattr(request, operand)
    return dataclasses.replace(request, **{operand: dataclasses.replace(spec, shape=shape)})


def with_dtype(request: Mc2Request, operand: str, dtype: DataType) -> Mc2Request:
    """``request`` with ``operand``'s dtype replaced."""
    spec = getattr(request, operand)
    return dataclasses.replace(request, **{operand: dataclasses.replace(spec, dtype=dtype)})
