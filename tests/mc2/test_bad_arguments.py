"""Every bad argument of the fused op gets its aclnn status and rule, or a typed error naming the
argument, on both paths: a program's call (``pypto-build lower`` of the ``moe_mc2`` sample with
one argument changed) and the host API's two stages. Never another exception: a bad value
reaches no internal module's own failure.

The shared cases are values a program can write and a caller can pass alike; both paths must
then give the same rule, status and message (the rules are one function). The sweeps try every
argument of each path with values of the wrong type, None and out of range, and accept only the
documented outcomes.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from _support.console import run_cli

from pypto_build import mc2
from pypto_build.chip_build.subbuild import lower_file
from pypto_build.errors import PyptoError
from pypto_build.lowering.diagnostics import ProgramError

NULLPTR, INVALID = 161001, 161002
OP = "pld.tensor.batch_matmul_reduce_scatter_all_to_all"
#: The sample's call, which each case edits.
CALL = "x, weight, bias, out, workspace, ep_world_size=EP, tp_world_size=TP, y_shard_type=1"
#: The sample's configuration (ep 4, tp 2, E 8, C 8, H 16, M 16, y_shard_type 1, a 2-D bias)
#: as the host API's arguments, by name.
GOOD: dict[str, object] = {
    "group_ep": "ep",
    "group_tp": "tp",
    "ep_world_size": 4,
    "tp_world_size": 2,
    "y_shard_type": 1,
}


def _arrays() -> dict[str, object]:
    return {
        "x": np.zeros((2, 32, 8), np.float16),
        "weight": np.zeros((2, 8, 16), np.float16),
        "bias": np.zeros((2, 16), np.float16),
        "out": np.zeros((8, 4, 16), np.float16),
    }


def _api(**changed: object) -> tuple[int, mc2.Executor]:
    """``get_workspace_size`` with the sample's arguments, ``changed`` replacing some."""
    arguments = {**_arrays(), **GOOD, **changed}
    return mc2.get_workspace_size(**arguments)  # type: ignore[arg-type]


@dataclass(frozen=True)
class Shared:
    """One bad value, as a program writes it (``source``) and as a caller passes it."""

    argument: str
    source: str
    value: object
    status: int
    rule: str


def _shared(argument: str, source: str, value: object, status: int, rule: str) -> Shared:
    return Shared(argument, source, value, status, rule)


SHARED = [
    _shared("x", "None", None, NULLPTR, "CheckNotNull"),
    _shared("weight", "None", None, NULLPTR, "CheckNotNull"),
    _shared("out", "None", None, NULLPTR, "CheckNotNull"),
    _shared("group_ep", "''", "", NULLPTR, "CheckNotNull"),
    _shared("group_ep", "3", 3, INVALID, "CheckParams"),
    _shared("group_tp", "2.5", 2.5, INVALID, "CheckParams"),
    _shared("group_ep", "'a\\x00b'", "a\x00b", INVALID, "CheckParams"),
    _shared("group_tp", "'" + "t" * 128 + "'", "t" * 128, INVALID, "CheckParams"),
    _shared("ep_world_size", "4.0", 4.0, INVALID, "CheckAttr"),
    _shared("ep_world_size", "True", True, INVALID, "CheckAttr"),
    _shared("ep_world_size", "'4'", "4", INVALID, "CheckAttr"),
    _shared("ep_world_size", "None", None, INVALID, "CheckAttr"),
    _shared("ep_world_size", "3", 3, INVALID, "CheckAttr"),
    _shared("tp_world_size", "2.0", 2.0, INVALID, "CheckAttr"),
    _shared("tp_world_size", "False", False, INVALID, "CheckAttr"),
    _shared("tp_world_size", "-2", -2, INVALID, "CheckAttr"),
    _shared("y_shard_type", "True", True, INVALID, "CheckAttr"),
    _shared("y_shard_type", "1.0", 1.0, INVALID, "CheckAttr"),
    _shared("y_shard_type", "None", None, INVALID, "CheckAttr"),
    _shared("y_shard_type", "2", 2, INVALID, "CheckAttr"),
    _shared("group_tp", "'ep'", "ep", INVALID, "GroupCheck"),
]


def _program(tmp_path: Path, argument: str, source: str) -> Path:
    """The sample with ``argument`` of its call given as ``source``; a group name the call
    does not give is added, with the other group named as the API names it."""
    repo = Path(__file__).resolve().parents[2]
    text = (repo / "samples/moe_mc2/src/moe_mc2/pipelines.py").read_text(encoding="utf-8")
    assert text.count(CALL) == 1
    if argument in ("x", "weight", "out"):
        call = CALL.replace(f"{argument},", f"{source},", 1)
    elif argument in ("group_ep", "group_tp"):
        other = "group_tp='tp'" if argument == "group_ep" else "group_ep='ep'"
        call = f"{CALL}, {argument}={source}, {other}"
    else:
        call = _replace_keyword(CALL, argument, source)
    program = tmp_path / "pipelines.py"
    program.write_text(text.replace(CALL, call), encoding="utf-8")
    return program


def _replace_keyword(call: str, keyword: str, source: str) -> str:
    parts = [f"{keyword}={source}" if p.startswith(f"{keyword}=") else p for p in call.split(", ")]
    assert parts != call.split(", ")
    return ", ".join(parts)


@pytest.mark.parametrize("case", SHARED, ids=lambda c: f"{c.argument}={c.source[:12]}")
def test_a_bad_value_gets_the_same_rule_on_both_paths(
    case: Shared, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(mc2.Mc2Error) as info:
        _api(**{case.argument: case.value})
    error = info.value
    assert (int(error.status), str(error.rule), error.operand) == (
        case.status,
        case.rule,
        case.argument,
    )
    assert str(error).endswith(f"{case.rule}: {error.status.aclnn_name}, {case.status})")
    program = _program(tmp_path, case.argument, case.source)
    code, _, err = run_cli(capsys, "lower", str(program), "--chip", "a3")
    assert code == 1 and "Traceback" not in err, err
    assert f"error: {OP} {error}" in err, err


def test_aclnns_order_holds_across_argument_types() -> None:
    """A null tensor is reported before a group name or an attribute of the wrong type, as
    aclnn's CheckNotNull runs first; a bad group name before a bad attribute."""
    with pytest.raises(mc2.Mc2Error) as info:
        _api(out=None, group_ep=b"ep", ep_world_size=2.0)
    assert (info.value.rule, info.value.operand) == (mc2.Rule.CHECK_NOT_NULL, "out")
    with pytest.raises(mc2.Mc2Error) as info:
        _api(group_ep=b"ep", y_shard_type=True)
    assert (info.value.rule, info.value.operand) == (mc2.Rule.GROUP_NAME_LENGTH, "group_ep")
    assert (
        info.value.message
        == "group_ep must be a str (the communicator's name), got b'ep' of type bytes"
    )


def test_the_reported_gaps_are_refused_at_the_first_stage() -> None:
    """The values that used to pass the first stage or fail inside the package."""
    messages = {
        "ep_world_size": "ep_world_size must be an integer (aclnn's int64_t), one of 2, 4, 8, 16, "
        "32; got 2.0 of type float",
        "tp_world_size": "tp_world_size must be an integer (aclnn's int64_t), one of 2, 4, 8, 16, "
        "32; got 2.0 of type float",
    }
    for name, message in messages.items():
        with pytest.raises(mc2.Mc2Error) as info:
            _api(**{name: 2.0})
        assert info.value.message == message
    with pytest.raises(
        mc2.Mc2Error, match=r"y_shard_type must be an integer .* got True of type bool"
    ):
        _api(y_shard_type=True)
    for value in (3, b"ep"):
        with pytest.raises(mc2.Mc2Error, match="group_ep must be a str"):
            _api(group_ep=value)


def test_numpy_integers_are_integers_and_the_size_is_an_int() -> None:
    size, executor = _api(
        ep_world_size=np.int64(4), tp_world_size=np.int32(2), y_shard_type=np.uint8(1)
    )
    assert type(size) is int and (executor.config.ep, executor.config.tp) == (4, 2)
    assert type(executor.config.y_shard_type) is int


#: Values of the wrong type, None and out of range, tried for every argument.
HOSTILE: list[object] = [
    None,
    True,
    False,
    2.0,
    "4",
    b"ep",
    [4],
    object(),
    -1,
    0,
    2**70,
    np.float16(1),
    np.bool_(True),
    np.zeros((2, 2), np.float64),
]
ARGUMENTS = ["x", "weight", "bias", "group_ep", "group_tp", *list(GOOD)[2:], "out"]


SHAPE_RULES = (mc2.Rule.COMMON_SHAPE, mc2.Rule.UNIQUE_SHAPE, mc2.Rule.BIAS_DIM)


def _accepted(argument: str, value: object) -> bool:
    if value is None:
        return argument == "bias"
    return argument.startswith("group_") and isinstance(value, str)


@pytest.mark.parametrize("argument", ARGUMENTS)
def test_every_argument_of_the_first_stage_refuses_hostile_values_clearly(argument: str) -> None:
    """Each value is refused by an aclnn rule (with its status, about that argument) or by an
    ArgumentError naming it. Accepted: a None bias (an optional operand), and "4" as a group
    name."""
    for value in HOSTILE:
        if _accepted(argument, value):
            _api(**{argument: value})
            continue
        try:
            _api(**{argument: value})
        except mc2.Mc2Error as error:
            assert error.status in (NULLPTR, INVALID)
            # A valid value (y_shard_type 0) the sample's shapes then do not fit.
            assert error.operand == argument or error.rule in SHAPE_RULES, (value, error)
            assert f"({error.rule.stage} {error.rule}: " in str(error)
        except mc2.ArgumentError as error:
            assert str(error).startswith(f"{argument} must be"), (value, error)
        else:
            pytest.fail(f"{argument}={value!r} was accepted")


def test_a_tensor_that_is_no_array_is_an_argument_error() -> None:
    for value in (3, [[[1.0]]], "x", object()):
        with pytest.raises(mc2.ArgumentError) as info:
            _api(x=value)
        assert str(info.value) == (
            "x must be a NumPy array or an mc2.Tensor (aclnn's aclTensor), "
            f"got {type(value).__name__}"
        )
        assert isinstance(info.value, TypeError) and isinstance(info.value, PyptoError)


def test_a_read_only_out_is_a_run_error() -> None:
    out = np.zeros((8, 4, 16), np.float16)
    out.flags.writeable = False
    with pytest.raises(mc2.RunError, match="out is read-only"):
        _api(out=out)


# ---- the second stage and the world ---------------------------------------------------------


def _first_stage(world: mc2.SimWorld) -> tuple[int, mc2.Executor, mc2.SimStream]:
    stream = world.stream(0)
    size, executor = _api(group_ep=stream.group_ep, group_tp=stream.group_tp)
    return size, executor, stream


@pytest.mark.parametrize("value", ["16", 16.0, None, True, [1], b"1"])
def test_a_workspace_size_that_is_no_integer_is_refused(value: object) -> None:
    size, executor, stream = _first_stage(mc2.SimWorld(4, 2))
    with pytest.raises(mc2.ArgumentError) as info:
        mc2.run(np.empty(size, np.uint8), value, executor, stream)  # type: ignore[arg-type]
    assert str(info.value).startswith(
        "workspace_size must be an integer (aclnn's uint64_t, in bytes), got "
    )
    mc2.run(np.empty(size, np.uint8), np.uint64(size), executor, stream)  # type: ignore[arg-type]


def test_a_negative_or_huge_workspace_size_is_a_run_error() -> None:
    size, executor, stream = _first_stage(mc2.SimWorld(4, 2))
    with pytest.raises(mc2.RunError, match="workspace_size -1 is smaller than"):
        mc2.run(np.empty(size, np.uint8), -1, executor, stream)
    with pytest.raises(mc2.RunError, match="fewer than workspace_size"):
        mc2.run(np.empty(size, np.uint8), 2**70, executor, stream)


@pytest.mark.parametrize(
    ("arguments", "error", "message"),
    [
        (("4", 2), mc2.ArgumentError, "ep_world_size must be an integer (a group size), got '4'"),
        ((4, 2.0), mc2.ArgumentError, "tp_world_size must be an integer (a group size), got 2.0"),
        ((True, 2), mc2.ArgumentError, "ep_world_size must be an integer (a group size), got True"),
        ((4, None), mc2.ArgumentError, "tp_world_size must be an integer (a group size), got None"),
        ((-4, 2), mc2.RunError, "at least 1"),
    ],
)
def test_a_world_of_bad_sizes_is_refused(
    arguments: tuple[object, object], error: type[Exception], message: str
) -> None:
    with pytest.raises(error) as info:
        mc2.SimWorld(*arguments)  # type: ignore[arg-type]
    assert message in str(info.value)


@pytest.mark.parametrize(
    ("timeout", "error"),
    [
        ("1", mc2.ArgumentError),
        (True, mc2.ArgumentError),
        (0, mc2.RunError),
        (-1.0, mc2.RunError),
        (float("nan"), mc2.RunError),
        (float("inf"), mc2.RunError),
    ],
)
def test_a_bad_timeout_is_refused(timeout: object, error: type[Exception]) -> None:
    with pytest.raises(error, match="timeout must be"):
        mc2.SimWorld(2, 2, timeout=timeout)  # type: ignore[arg-type]
    stream = mc2.SimWorld(2, 2).stream(0)
    if timeout != 0:
        with pytest.raises(error, match="timeout must be"):
            stream.synchronize(timeout)  # type: ignore[arg-type]
    stream.synchronize(0)  # nothing queued: a zero wait is fine


def test_a_bad_timeout_variable_is_a_run_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYPTO_SIM_TIMEOUT_S", "soon")
    with pytest.raises(mc2.RunError, match="PYPTO_SIM_TIMEOUT_S='soon' is not a positive number"):
        mc2.SimWorld(2, 2)


def test_a_rank_is_an_integer_inside_the_world() -> None:
    world = mc2.SimWorld(2, 2)
    for rank in ("0", 1.0, None):
        with pytest.raises(mc2.ArgumentError, match="rank must be an integer"):
            world.stream(rank)  # type: ignore[arg-type]
    for rank in (-1, 4):
        with pytest.raises(mc2.NoSuchRank) as info:
            world.stream(rank)
        assert isinstance(info.value, IndexError) and isinstance(info.value, mc2.RunError)
    assert world.stream(np.int64(3)).rank == 3  # type: ignore[arg-type]


# ---- the program path, swept ----------------------------------------------------------------

#: What a program may write for an argument, beyond the shared cases.
PROGRAM_HOSTILE = ["None", "True", "4.0", "'s'", "-1", "0", "x", "pl.FP32"]
KEYWORDS = ["ep_world_size", "tp_world_size", "y_shard_type"]
OPTIONAL = ["transpose_weight", "group_ep", "group_tp"]


@pytest.mark.parametrize("argument", ["x", "weight", "out", "workspace", *KEYWORDS, *OPTIONAL])
def test_every_argument_of_the_op_refuses_hostile_values_clearly(
    argument: str, tmp_path: Path
) -> None:
    """Each value is refused with one diagnostic naming the argument (and, from an aclnn rule,
    its status); None for an optional keyword is the keyword left out, and 's' a group name."""
    for source in PROGRAM_HOSTILE:
        if argument in OPTIONAL:
            call = f"{CALL}, {argument}={source}"
        elif argument in KEYWORDS:
            call = _replace_keyword(CALL, argument, source)
        else:
            call = CALL.replace(f"{argument},", f"{source},", 1)
        program = _program(tmp_path, "x", "x")  # the sample as it is
        program.write_text(program.read_text(encoding="utf-8").replace(CALL, call), "utf-8")
        valid = {("x", "x"), ("group_ep", "'s'"), ("group_tp", "'s'")}
        if (source == "None" and argument in OPTIONAL) or (argument, source) in valid:
            lower_file(program, ["a3"])
            continue
        with pytest.raises(ProgramError) as info:
            lower_file(program, ["a3"])
        message = info.value.message
        # A transposed weight is the sample's weight read as (E/ep, H, M/tp): refused for it.
        named = "weight" if (argument, source) == ("transpose_weight", "True") else argument
        assert named in message, (source, message)
        if "aclnn" in message:
            assert message.endswith((f"{NULLPTR})", f"{INVALID})")), message
