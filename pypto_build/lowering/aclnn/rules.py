"""Every check of ``batch_matmul_reduce_scatter_all_to_all``, in the order aclnn makes them.

:func:`check` turns an :class:`Mc2Request` -- what the DSL op or the two-stage host API is
given -- into the checked static :class:`Mc2Config`, or raises an :class:`Mc2Error` at the
first violated rule. The op's type deduction and the host API both call it, so a program and an
API call are refused by the same rule with the same aclnn status and message.

Keys in brackets name upstream's files of the operator, listed with their repository and
revision in ``docs/mc2.md`` (Upstream sources).

Order ([aclnn]'s ``CheckParams``; [aclnn doc]: null pointers, group name length, dtypes,
attributes, dimensions, shape ranges), each rule with the status its failure returns:

1. ``CheckNotNull`` (161001): x, weight and out given; the group names given and non-empty.
2. ``CheckParams`` (161002): the group names strings (C strings: no NUL inside) shorter than
   128 bytes.
3. ``CheckDtypeValid`` (161002): x, weight and out FP16 or BF16 and all alike; the bias FP16 for
   FP16, FP32 for BF16.
4. ``CheckAttr`` (161002): y_shard_type 0 or 1; ep and tp in {2, 4, 8, 16, 32}; each an integer.
5. ``CheckIfTensorThreeDim`` (161002): x, weight and out 3-D; the bias 2-D or 3-D.
6. ``CheckTensorDimCommonShape`` (161002): E = E/ep * ep; x and weight share E/ep and M/tp.
7. ``CheckTensorDimUniqueShape`` (161002): per y_shard_type, out's H/tp (or H) and x's ep*C
   (or ep*tp*C/tp) rows.
8. ``CheckBiasDim`` (161002): the bias (E/ep, [1,] H/tp) or (E/ep, [1,] H).
9. ``CheckShapeRange`` (161002): M/tp and H in [1, 65535]; E/ep in [1, 32]; E in [2, 512];
   C (or C/tp) > 0.
10. ``GroupCheck`` (161002): group_ep != group_tp.

The four ``CheckTensorDim`` sub-checks carry the names upstream gives them ([aclnn]).

**Argument types.** aclnn's C signature makes the group names ``const char*`` and the attributes
``int64_t``; a Python caller, or a program's keyword, can pass anything. A value of another type
is refused by the rule that checks that argument, so a program and an API call get the same
message: a group name that is not a ``str`` (bytes, an int) by ``CheckParams``, an attribute
that is not an integer by ``CheckAttr``, both 161002, for aclnn's status table gives 161002 for
an invalid group name and an invalid attribute. ``bool`` is no integer here (``True`` is no
``int64_t`` a caller means); any other ``numbers.Integral`` (NumPy's integers) is one and is
read as an ``int``. ``None`` is a null pointer only where aclnn takes a pointer: a tensor or a
group name (161001); a ``None`` attribute is an invalid one (161002).
``GroupCheck`` is not aclnn's: upstream makes it in infer-shape and tiling ([infershape]), after
every aclnn check, with a status upstream does not document; it is reported here last, as
161002, which [aclnn doc]'s status table gives for invalid attribute values.

The other constraints the operator documents ([aclnn doc]) are implied by the
relations above, so no rule of their own can fire (``tests/lowering/test_mc2_rules.py`` checks
it over a grid of shapes):

* **E a multiple of ep** -- CheckTensorDimCommonShape makes ``out.shape[0] = x.shape[0] * ep``.
* **H a multiple of tp (y_shard_type 0)** -- CheckTensorDimUniqueShape makes
  ``H = out.shape[2] * tp``.
* **C > 0** -- C is ``out.shape[1]`` (y_shard_type 0) or ``out.shape[1] * tp`` (1), and
  CheckShapeRange requires ``out.shape[1] > 0``.
* **C a multiple of tp (y_shard_type 1)** -- C is ``out.shape[1] * tp`` ([tiling]), and
  CheckTensorDimUniqueShape makes ``x.shape[1] = ep * tp * out.shape[1]``.
* Likewise E >= 2 always holds (E/ep >= 1, ep >= 2), so of E's range only the upper bound can
  fire, and only for E = E/ep * ep, e.g. 544 = 17 * 32 (513 fails the common shape first).

Shapes are the shapes the caller gives ([aclnn doc]): x (E/ep, X1, M/tp), out
(E, C, H/tp) for y_shard_type 0 or (E, C/tp, H) for 1, bias (E/ep, [1,] H/tp) or
(E/ep, [1,] H). The weight is given **as stored**: (E/ep, M/tp, H), or with
``transpose_weight`` (E/ep, H, M/tp), whose logical view aclnn checks is still (E/ep, M/tp, H)
([aclnn]'s ``TransTensor``). So the relations use the weight's logical
dimensions, and a message names the stored dimension the caller wrote (``weight.shape[1]`` is
H when the weight is transposed). ``out`` is given by the caller too; the relations hold exactly
when it equals the shape infer-shape derives ([infershape]).
"""

from __future__ import annotations

import enum
import numbers
from dataclasses import dataclass
from math import prod

from pypto_build.errors import PyptoError
from pypto_build.lowering.ir.types import DataType

#: ``HCCL_GROUP_NAME_MAX``: a group name is shorter than this many bytes [aclnn].
HCCL_GROUP_NAME_MAX = 128
#: The EP and TP group sizes aclnn accepts (``WORLD_SIZE_*``) [aclnn].
WORLD_SIZES = (2, 4, 8, 16, 32)
#: ``MOE_X_DTYPE_SUPPORT_LIST`` and ``MOE_BIAS_DTYPE_SUPPORT_LIST`` [aclnn].
X_DTYPES = (DataType.FP16, DataType.BF16)
BIAS_DTYPES = (DataType.FP16, DataType.FP32)
#: The bias dtype each x dtype needs: BF16's bias is added in FP32 [aclnn doc].
BIAS_DTYPE_FOR = {DataType.FP16: DataType.FP16, DataType.BF16: DataType.FP32}
#: Inclusive ranges of CheckShapeRange [aclnn]: ``EXPERT_LOWER_LIMIT`` /
#: ``EXPERT_UPPER_LIMIT``, ``MATMUL_E_OVER_EP_LIMIT``, ``MATMUL_K_LIMIT`` (M/tp and H).
E_RANGE = (2, 512)
E_OVER_EP_RANGE = (1, 32)
DIM_RANGE = (1, 65535)


class AclnnStatus(enum.IntEnum):
    """The aclnn status a rule's failure returns; the member names drop ``ACLNN_ERR_``."""

    PARAM_NULLPTR = 161001
    PARAM_INVALID = 161002

    @property
    def aclnn_name(self) -> str:
        """The constant's name in aclnn, e.g. ``ACLNN_ERR_PARAM_INVALID``."""
        return f"ACLNN_ERR_{self.name}"


class Rule(enum.StrEnum):
    """The rules in check order; the value is upstream's name for the check."""

    CHECK_NOT_NULL = "CheckNotNull"
    GROUP_NAME_LENGTH = "CheckParams"
    CHECK_DTYPE_VALID = "CheckDtypeValid"
    CHECK_ATTR = "CheckAttr"
    THREE_DIM = "CheckIfTensorThreeDim"
    COMMON_SHAPE = "CheckTensorDimCommonShape"
    UNIQUE_SHAPE = "CheckTensorDimUniqueShape"
    BIAS_DIM = "CheckBiasDim"
    SHAPE_RANGE = "CheckShapeRange"
    GROUP_CHECK = "GroupCheck"

    @property
    def stage(self) -> str:
        """Where upstream makes the check: aclnn's first stage, or infer-shape for GroupCheck."""
        return "infer-shape" if self is Rule.GROUP_CHECK else "aclnn"


class Mc2Error(PyptoError, ValueError):
    """A violated rule: its aclnn ``status``, the ``rule``, the ``operand`` (or attribute) the
    message is about, so a diagnostic can point at it, and the bare ``message``; ``str()`` adds
    the rule and the status."""

    def __init__(self, status: AclnnStatus, rule: Rule, operand: str, message: str) -> None:
        super().__init__(status, rule, operand, message)
        self.status = status
        self.rule = rule
        self.operand = operand
        self.message = message

    def __str__(self) -> str:
        return (
            f"{self.message} ({self.rule.stage} {self.rule}: "
            f"{self.status.aclnn_name}, {int(self.status)})"
        )


@dataclass(frozen=True)
class TensorSpec:
    """An operand's shape (as given; see the module docstring for the weight) and dtype."""

    shape: tuple[int, ...]
    dtype: DataType


@dataclass(frozen=True)
class Mc2Request:
    """What the op or the host API is given, as given: the group names and the attributes are
    whatever the caller passed (see the module docstring's argument types). A ``None`` operand
    is a null pointer. A ``None`` group name is one not given: the DSL op has none, so their
    checks are skipped, unless ``require_group_names`` (the host API, where a name is a
    required argument) makes it a null pointer."""

    x: TensorSpec | None
    weight: TensorSpec | None
    bias: TensorSpec | None
    out: TensorSpec | None
    #: A ``str`` when valid.
    group_ep: object
    group_tp: object
    #: Integers when valid.
    ep_world_size: object
    tp_world_size: object
    y_shard_type: object
    transpose_weight: bool
    require_group_names: bool = False


@dataclass(frozen=True)
class Mc2Config:
    """The checked static configuration: what the tiling and a kernel variant depend on.

    The sizes follow the tiling's derivation ([tiling]): ``E`` and ``C`` from out
    (``C = out.shape[1] * tp`` for y_shard_type 1), ``E_over_ep`` and ``M_over_tp`` from x, ``H``
    from the weight's logical view. ``C_over_tp`` (y_shard_type 0) and ``H_over_tp``
    (y_shard_type 1) need not divide evenly; they are the tiling's integer quotients there and
    unused by that shard's kernel and workspace. Group names are not part of it: the kernel
    variant is shared by every call site with the same shapes, whatever its groups.
    """

    dtype: DataType
    bias_dtype: DataType | None
    ep: int
    tp: int
    y_shard_type: int
    transpose_weight: bool
    has_bias: bool
    E: int
    E_over_ep: int
    C: int
    C_over_tp: int
    H: int
    H_over_tp: int
    M_over_tp: int
    out_shape: tuple[int, int, int]

    def __post_init__(self) -> None:
        if self.has_bias != (self.bias_dtype is not None):
            raise ValueError("has_bias must say whether bias_dtype is given")


def check(request: Mc2Request) -> Mc2Config:
    """The checked configuration of ``request``; :class:`Mc2Error` at the first violated rule,
    in the order of the module docstring's table."""
    x, weight, out = _check_not_null(request)
    _check_group_names(request)
    _check_dtype_valid(x, weight, out, request.bias)
    operands = _Operands(request, x, weight, out, _check_attr(request))
    _check_three_dim(operands)
    _check_common_shape(operands)
    _check_unique_shape(operands)
    _check_bias_dim(operands)
    _check_shape_range(operands)
    _group_check(request)
    return operands.config()


# ---- the operands once CheckNotNull has passed ----------------------------------------------


@dataclass(frozen=True)
class _Dim:
    """One dimension of an operand as a message names it: ``x.shape[0] (4)``."""

    label: str
    value: int

    def __str__(self) -> str:
        return f"{self.label} ({self.value})"


@dataclass(frozen=True)
class _Product:
    """A dimension times attributes: ``x.shape[0] * ep_world_size (4 * 4 = 16)``."""

    factors: tuple[_Dim, ...]

    @property
    def value(self) -> int:
        return prod(factor.value for factor in self.factors)

    def __str__(self) -> str:
        if len(self.factors) == 1:
            return str(self.factors[0])
        labels = " * ".join(factor.label for factor in self.factors)
        values = " * ".join(str(factor.value) for factor in self.factors)
        return f"{labels} ({values} = {self.value})"


@dataclass(frozen=True)
class _Attributes:
    """The attributes once CheckAttr has passed: integers, by the names the caller gives them."""

    ep_world_size: int
    tp_world_size: int
    y_shard_type: int


@dataclass(frozen=True)
class _Operands:
    """The request with x, weight and out known to be given and its attributes checked."""

    request: Mc2Request
    x: TensorSpec
    weight: TensorSpec
    out: TensorSpec
    attributes: _Attributes

    @property
    def shard(self) -> int:
        return self.attributes.y_shard_type

    def dim(self, operand: str, axis: int) -> _Dim:
        """Dimension ``axis`` of ``operand`` as given ("x", "out" or "bias")."""
        spec = {"x": self.x, "out": self.out, "bias": self.request.bias}[operand]
        assert spec is not None
        index = axis if axis >= 0 else len(spec.shape) + axis
        return _Dim(f"{operand}.shape[{index}]", spec.shape[index])

    def weight_dim(self, logical_axis: int) -> _Dim:
        """Axis ``logical_axis`` of the weight's logical view (E/ep, M/tp, H), named by the
        stored axis the caller wrote: the last two are swapped when the weight is transposed."""
        stored = (0, 2, 1)[logical_axis] if self.request.transpose_weight else logical_axis
        return _Dim(f"weight.shape[{stored}]", self.weight.shape[stored])

    def attr(self, name: str) -> _Dim:
        value = getattr(self.attributes, name)
        assert isinstance(value, int)
        return _Dim(name, value)

    def config(self) -> Mc2Config:
        ep, tp, shard = self.attributes.ep_world_size, self.attributes.tp_world_size, self.shard
        out_shape = (self.out.shape[0], self.out.shape[1], self.out.shape[2])
        H = self.weight_dim(2).value
        bias = self.request.bias
        return Mc2Config(
            dtype=self.x.dtype,
            bias_dtype=None if bias is None else bias.dtype,
            ep=ep,
            tp=tp,
            y_shard_type=shard,
            transpose_weight=self.request.transpose_weight,
            has_bias=bias is not None,
            E=out_shape[0],
            E_over_ep=self.x.shape[0],
            C=out_shape[1] * tp if shard == 1 else out_shape[1],
            C_over_tp=out_shape[1] if shard == 1 else out_shape[1] // tp,
            H=H,
            H_over_tp=H // tp,
            M_over_tp=self.x.shape[2],
            out_shape=out_shape,
        )


def _invalid(rule: Rule, operand: str, message: str) -> Mc2Error:
    return Mc2Error(AclnnStatus.PARAM_INVALID, rule, operand, message)


def _require_equal(rule: Rule, operand: str, lhs: _Product, rhs: _Dim, meaning: str) -> None:
    """``lhs == rhs``, else an error about ``operand`` saying what the two sides both are."""
    if lhs.value != rhs.value:
        raise _invalid(rule, operand, f"{lhs} must equal {rhs}: {meaning}")


def _require_in(rule: Rule, dim: _Dim, meaning: str, bounds: tuple[int, int]) -> None:
    low, high = bounds
    if not low <= dim.value <= high:
        operand = dim.label.split(".", 1)[0]
        raise _invalid(
            rule, operand, f"{dim.label} ({meaning}) must be in [{low}, {high}], got {dim.value}"
        )


@dataclass(frozen=True)
class _Layout:
    """The operands' layouts under one y_shard_type [aclnn doc], for the messages."""

    x: str
    out: str
    #: What out's last dimension, and so the bias's, holds.
    last: str

    def bias(self, rank: int) -> str:
        return f"(E/ep, {self.last})" if rank == 2 else f"(E/ep, 1, {self.last})"


_LAYOUTS = {
    0: _Layout(x="(E/ep, ep*C, M/tp)", out="(E, C, H/tp)", last="H/tp"),
    1: _Layout(x="(E/ep, ep*tp*C/tp, M/tp)", out="(E, C/tp, H)", last="H"),
}


# ---- the rules, in order ----------------------------------------------------------------------


def _check_not_null(request: Mc2Request) -> tuple[TensorSpec, TensorSpec, TensorSpec]:
    """CheckNotNull [aclnn]: the required tensors, then the group names; a name that
    is empty counts as null (``strnlen(name, 128) != 0``). Returns x, weight and out."""
    given: list[TensorSpec] = []
    for operand in ("x", "weight", "out"):
        spec = getattr(request, operand)
        if spec is None:
            raise Mc2Error(
                AclnnStatus.PARAM_NULLPTR,
                Rule.CHECK_NOT_NULL,
                operand,
                f"{operand} is missing: x, weight and out are required operands",
            )
        given.append(spec)
    for name in ("group_ep", "group_tp"):
        value = getattr(request, name)
        empty = isinstance(value, str) and not value
        if empty or (value is None and request.require_group_names):
            what = "empty" if empty else "missing"
            raise Mc2Error(
                AclnnStatus.PARAM_NULLPTR,
                Rule.CHECK_NOT_NULL,
                name,
                f"{name} is {what}: a communication group name is required",
            )
    x, weight, out = given
    return x, weight, out


def _check_group_names(request: Mc2Request) -> None:
    """The name check of aclnn's CheckParams [aclnn]: each given name a string (aclnn's
    ``const char*``, so no NUL inside, which would end it early), whose length ``strnlen``
    counts in bytes, so in UTF-8 bytes, 1 to 127 of them."""
    for name in ("group_ep", "group_tp"):
        value = getattr(request, name)
        if value is None:
            continue
        if not isinstance(value, str):
            raise _invalid(
                Rule.GROUP_NAME_LENGTH,
                name,
                f"{name} must be a str (the communicator's name), got {described(value)}",
            )
        if "\0" in value:
            raise _invalid(
                Rule.GROUP_NAME_LENGTH,
                name,
                f"{name} {value!r} holds a NUL character: aclnn reads a group name as a C "
                "string, which ends there",
            )
        if len(value.encode()) >= HCCL_GROUP_NAME_MAX:
            raise _invalid(
                Rule.GROUP_NAME_LENGTH,
                name,
                f"{name} is {len(value.encode())} bytes long: a group name must be shorter than "
                f"HCCL_GROUP_NAME_MAX ({HCCL_GROUP_NAME_MAX} bytes)",
            )


def _check_dtype_valid(
    x: TensorSpec, weight: TensorSpec, out: TensorSpec, bias: TensorSpec | None
) -> None:
    """CheckDtypeValid [aclnn]: x, weight, out in the x list and all x's dtype; the
    bias in the bias list and the one x's dtype needs [aclnn doc]."""
    x_dtype = x.dtype
    for name, spec in (("x", x), ("weight", weight), ("out", out)):
        if spec.dtype not in X_DTYPES:
            raise _invalid(
                Rule.CHECK_DTYPE_VALID,
                name,
                f"{name}.dtype must be {' or '.join(d.name for d in X_DTYPES)}, "
                f"got {spec.dtype.name}",
            )
    for name, spec in (("weight", weight), ("out", out)):
        if spec.dtype is not x_dtype:
            raise _invalid(
                Rule.CHECK_DTYPE_VALID,
                name,
                f"{name}.dtype ({spec.dtype.name}) must equal x.dtype ({x_dtype.name})",
            )
    if bias is None:
        return
    if bias.dtype not in BIAS_DTYPES:
        raise _invalid(
            Rule.CHECK_DTYPE_VALID,
            "bias",
            f"bias.dtype must be {' or '.join(d.name for d in BIAS_DTYPES)}, got {bias.dtype.name}",
        )
    needed = BIAS_DTYPE_FOR[x_dtype]
    if bias.dtype is not needed:
        raise _invalid(
            Rule.CHECK_DTYPE_VALID,
            "bias",
            f"bias.dtype must be {needed.name} when x.dtype is {x_dtype.name}, "
            f"got {bias.dtype.name}",
        )


def _check_attr(request: Mc2Request) -> _Attributes:
    """CheckAttr [aclnn]: the shard type, then the two group sizes, each an integer (aclnn's
    ``int64_t``; see the module docstring) of the values aclnn accepts."""
    shard = _attribute(
        request, "y_shard_type", (0, 1), "0 (reduce-scatter H) or 1 (reduce-scatter C)"
    )
    sizes = [
        _attribute(request, name, WORLD_SIZES, f"one of {', '.join(map(str, WORLD_SIZES))}")
        for name in ("ep_world_size", "tp_world_size")
    ]
    return _Attributes(ep_world_size=sizes[0], tp_world_size=sizes[1], y_shard_type=shard)


def _attribute(request: Mc2Request, name: str, accepted: tuple[int, ...], values: str) -> int:
    """Attribute ``name`` as an ``int``, when it is an integer of ``accepted`` (``values`` says
    which, for the message)."""
    value = getattr(request, name)
    number = integer_value(value)
    if number is None:
        raise _invalid(
            Rule.CHECK_ATTR,
            name,
            f"{name} must be an integer (aclnn's int64_t), {values}; got {described(value)}",
        )
    if number not in accepted:
        raise _invalid(Rule.CHECK_ATTR, name, f"{name} must be {values}, got {number}")
    return number


def integer_value(value: object) -> int | None:
    """``value`` as an ``int`` when it is an integer: a ``numbers.Integral`` (NumPy's
    integers too) that is not a ``bool``; else None."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        return None
    return int(value)


def described(value: object) -> str:
    """A value of the wrong type as a message shows it: ``2.0 of type float``, an enum member
    as it is spelled (``DataType.FP32``)."""
    if value is None:
        return "None"
    if isinstance(value, enum.Enum):
        return f"{type(value).__name__}.{value.name}"
    return f"{value!r} of type {type(value).__name__}"


def _check_three_dim(operands: _Operands) -> None:
    """CheckIfTensorThreeDim [aclnn]: x, weight and out 3-D, the bias 2-D or 3-D."""
    layout = _LAYOUTS[operands.shard]
    weight = "(E/ep, H, M/tp)" if operands.request.transpose_weight else "(E/ep, M/tp, H)"
    specs = (
        ("x", operands.x, (3,), f"3-D {layout.x}"),
        ("weight", operands.weight, (3,), f"3-D {weight}"),
        ("out", operands.out, (3,), f"3-D {layout.out}"),
        ("bias", operands.request.bias, (2, 3), f"2-D {layout.bias(2)} or 3-D {layout.bias(3)}"),
    )
    for name, spec, ranks, expected in specs:
        if spec is not None and len(spec.shape) not in ranks:
            raise _invalid(
                Rule.THREE_DIM,
                name,
                f"{name} must be {expected}, got {len(spec.shape)}-D shape {spec.shape}",
            )


def _check_common_shape(operands: _Operands) -> None:
    """CheckTensorDimCommonShape [aclnn]: E, E/ep and M/tp agree across operands."""
    x0, ep = operands.dim("x", 0), operands.attr("ep_world_size")
    rule = Rule.COMMON_SHAPE
    _require_equal(rule, "out", _Product((x0, ep)), operands.dim("out", 0), "E = E/ep * ep")
    _require_equal(rule, "weight", _Product((x0,)), operands.weight_dim(0), "both are E/ep")
    x2 = _Product((operands.dim("x", 2),))
    _require_equal(rule, "weight", x2, operands.weight_dim(1), "both are M/tp")


def _check_unique_shape(operands: _Operands) -> None:
    """CheckTensorDimUniqueShape [aclnn]: y_shard_type 0 reduce-scatters H over tp
    (out holds H/tp, x's rows are ep*C); 1 reduce-scatters C (out holds H whole and C/tp rows,
    x's rows are ep*tp*C/tp). Reported about out, the shape the other two determine."""
    out1, out2 = operands.dim("out", 1), operands.dim("out", 2)
    ep, tp = operands.attr("ep_world_size"), operands.attr("tp_world_size")
    H, x1 = operands.weight_dim(2), operands.dim("x", 1)
    rule = Rule.UNIQUE_SHAPE
    if operands.shard == 0:
        _require_equal(rule, "out", _Product((out2, tp)), H, "H = H/tp * tp (y_shard_type 0)")
        _require_equal(
            rule, "out", _Product((out1, ep)), x1, "x.shape[1] = ep * C (y_shard_type 0)"
        )
    else:
        _require_equal(rule, "out", _Product((out2,)), H, "both are H (y_shard_type 1)")
        meaning = "x.shape[1] = ep * tp * C/tp (y_shard_type 1)"
        _require_equal(rule, "out", _Product((out1, ep, tp)), x1, meaning)


def _check_bias_dim(operands: _Operands) -> None:
    """CheckBiasDim [aclnn]: one bias row per local expert, as wide as out's rows."""
    bias = operands.request.bias
    if bias is None:
        return
    layout = _LAYOUTS[operands.shard]
    bias0 = _Product((operands.dim("bias", 0),))
    _require_equal(Rule.BIAS_DIM, "bias", bias0, operands.weight_dim(0), "both are E/ep")
    if len(bias.shape) == 3 and bias.shape[1] != 1:
        raise _invalid(
            Rule.BIAS_DIM,
            "bias",
            f"bias.shape[1] must be 1 in a 3-D bias {layout.bias(3)}, got {bias.shape[1]}",
        )
    last = _Product((operands.dim("bias", -1),))
    meaning = f"both are {layout.last} (y_shard_type {operands.shard})"
    _require_equal(Rule.BIAS_DIM, "bias", last, operands.dim("out", 2), meaning)


def _check_shape_range(operands: _Operands) -> None:
    """CheckShapeRange [aclnn], in aclnn's order. ``out.shape[1]`` is C or C/tp and
    must be positive: empty tensors are not supported."""
    _require_in(Rule.SHAPE_RANGE, operands.dim("x", 2), "M/tp", DIM_RANGE)
    _require_in(Rule.SHAPE_RANGE, operands.dim("x", 0), "E/ep", E_OVER_EP_RANGE)
    _require_in(Rule.SHAPE_RANGE, operands.dim("out", 0), "E", E_RANGE)
    out1 = operands.dim("out", 1)
    if out1.value <= 0:
        meaning = "C/tp" if operands.shard == 1 else "C"
        raise _invalid(
            Rule.SHAPE_RANGE,
            "out",
            f"{out1.label} ({meaning}) must be positive, got {out1.value}: "
            "empty tensors are not supported",
        )
    _require_in(Rule.SHAPE_RANGE, operands.weight_dim(2), "H", DIM_RANGE)


def _group_check(request: Mc2Request) -> None:
    """GroupCheck [infershape]: EP and TP are different groups. Skipped when a name is not
    given (the DSL op names no groups)."""
    if request.group_ep is not None and request.group_ep == request.group_tp:
        raise _invalid(
            Rule.GROUP_CHECK,
            "group_tp",
            f"group_ep and group_tp must name different groups, both are {request.group_ep!r}",
        )
