"""The provenance analysis behind dependency derivation and CommCtx materialization: which
storage (parameter or allocation) every name may refer to, through views, callee results,
branches and loops, and the origin algebra it is built on."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from _support.passes import function, parse_one

from pypto_build.lowering.analysis.provenance import (
    NOTHING,
    Origin,
    ProvenanceState,
    ProvenanceWalker,
    Root,
    allocation_root,
    roots,
)
from pypto_build.lowering.analysis.returns import returned_params
from pypto_build.lowering.diagnostics import InternalError
from pypto_build.lowering.ir import (
    INDEX,
    BinaryOp,
    Call,
    DataType,
    EvalStmt,
    Expr,
    Function,
    FunctionType,
    GlobalVar,
    Level,
    Param,
    ParamDirection,
    Program,
    ReturnStmt,
    SeqStmts,
    Stmt,
    TensorType,
    Var,
)

#: ``TILE`` stands for the one tensor type of the program (the DSL has no type aliases).
SOURCE = """\
import pypto.language as pl


@pl.program
class Flow:
    @pl.function(type=pl.FunctionType.AIV, external_source="kernels/fill.cpp")
    def fill(self, src: TILE, dst: pl.Out[TILE]) -> TILE: ...

    @pl.function(type=pl.FunctionType.AIV, external_source="kernels/swap.cpp")
    def swap(self, p: pl.InOut[TILE], q: pl.InOut[TILE]) -> TILE: ...

    @pl.function(type=pl.FunctionType.InCore)
    def passthrough(self, x: pl.InOut[TILE]) -> TILE:
        return x

    @pl.function(type=pl.FunctionType.Orchestration)
    def make(self, x: TILE) -> TILE:
        y = pl.create_tensor([4, 8], dtype=pl.FP32)
        return y

    @pl.function(type=pl.FunctionType.Orchestration)
    def orch(self, a: TILE, b: pl.Out[TILE], n: pl.Scalar[pl.INDEX]) -> TILE:
        t = pl.create_tensor([4, 8], dtype=pl.FP32)
        v = pl.reshape(a, [32])
        f = self.fill(a, t)
        s = self.swap(a, b)
        p = self.passthrough(b)
        m = self.make(a)
        w = pl.assemble(b, t, [0, 0])
        if n > 0:
            c = a
        else:
            c = b
        for i in pl.range(n):
            d = self.passthrough(c)
            c = t
        r, tid = pl.submit(self.fill, a, t)
        return c
""".replace("TILE", "pl.Tensor[[4, 8], pl.FP32]")

A, B = Root("a"), Root("b")


class _Recorder(ProvenanceWalker[ProvenanceState]):
    """Keeps the last argument origins of every self-call, by callee."""

    def __init__(self, program: Program, func: Function) -> None:
        super().__init__(program, func)
        self.calls: dict[str, tuple[Origin, ...]] = {}

    def on_call(
        self, call: Call, callee: Function, args: tuple[Origin, ...], state: ProvenanceState
    ) -> None:
        self.calls[callee.name] = args


@pytest.fixture(scope="module")
def walked() -> tuple[dict[str, Origin], dict[str, tuple[Origin, ...]]]:
    program = parse_one(SOURCE)
    walker = _Recorder(program, function(program, "orch"))
    state = walker.run(ProvenanceState({}))
    return state.env, walker.calls


def _allocation(origin: Origin) -> Root:
    (root,) = roots(origin)
    assert root.name == "tensor.create" and not root.is_param
    return root


def test_parameters_are_their_own_roots(
    walked: tuple[dict[str, Origin], dict[str, tuple[Origin, ...]]],
) -> None:
    env, _ = walked
    assert (env["a"], env["b"]) == (frozenset({A}), frozenset({B}))
    assert env["n"] == frozenset({Root("n")}) and Root("n").is_param


def test_views_alias_their_operand_and_allocations_are_new_storage(
    walked: tuple[dict[str, Origin], dict[str, tuple[Origin, ...]]],
) -> None:
    env, _ = walked
    assert env["v"] == frozenset({A})
    _allocation(env["t"])
    assert env["w"] == frozenset({B})  # an assemble's result is its target, not its source


def test_callee_results(walked: tuple[dict[str, Origin], dict[str, tuple[Origin, ...]]]) -> None:
    env, _ = walked
    assert env["f"] == env["t"]  # an external kernel returns the parameter it writes
    assert env["s"] == frozenset({A, B})  # two written parameters of the result's type: either
    assert env["p"] == frozenset({B})  # a body that returns its parameter
    (made,) = roots(env["m"])
    assert (made.name, made.result, made.is_param) == ("make", 0, False)


def test_branches_join_and_loops_reach_a_fixpoint(
    walked: tuple[dict[str, Origin], dict[str, tuple[Origin, ...]]],
) -> None:
    env, calls = walked
    created = _allocation(env["t"])
    # Zero iterations keep a or b; later ones see t.
    assert env["c"] == frozenset({A, B, created})
    assert env["i"] == NOTHING
    # The last observation of the loop's call is made with the fixpoint state.
    assert calls["passthrough"] == (frozenset({A, B, created}),)


def test_submit_yields_the_result_and_a_task_id(
    walked: tuple[dict[str, Origin], dict[str, tuple[Origin, ...]]],
) -> None:
    env, calls = walked
    assert env["r"] == env["t"]
    assert env["tid"] == NOTHING
    assert calls["fill"] == (frozenset({A}), env["t"])


def test_every_allocation_site_is_its_own_root() -> None:
    first = Call("tensor.create", (), TensorType((4,), DataType.FP32))
    second = Call("tensor.create", (), TensorType((4,), DataType.FP32))
    assert allocation_root(first) != allocation_root(second)
    assert allocation_root(first) == allocation_root(first)


def _walker() -> ProvenanceWalker[ProvenanceState]:
    orch = Function("orch", (), (), SeqStmts(()), FunctionType.Orchestration)
    return ProvenanceWalker[ProvenanceState](Program("P", (orch,)), orch)


def test_origin_algebra() -> None:
    pair: Origin = (frozenset({A}), (frozenset({B}), NOTHING))
    assert roots(pair) == {A, B}
    join = _walker().join
    assert join((frozenset({A}),), (frozenset({B}),)) == (frozenset({A, B}),)
    # Tuples of different lengths (or a tuple and a set) collapse to their roots.
    assert join((frozenset({A}),), frozenset({B})) == frozenset({A, B})


def test_flow_state_join_keeps_names_bound_on_either_path() -> None:
    left = ProvenanceState({"x": frozenset({A}), "only_left": frozenset({A})})
    right = ProvenanceState({"x": frozenset({B})})
    joined = left.join(right, _walker().join)
    assert joined.env == {"x": frozenset({A, B}), "only_left": frozenset({A})}
    copy = left.copy()
    copy.env["x"] = NOTHING
    assert left.env["x"] == frozenset({A})


T = TensorType((4, 8), DataType.FP32)
U = TensorType((8,), DataType.FP32)


def _kernel(params: tuple[Param, ...], returns: tuple[TensorType, ...], *body: Stmt) -> Function:
    return Function("k", params, returns, SeqStmts(body), FunctionType.AIV, Level.CHIP)


def test_returned_params_from_a_final_return() -> None:
    x, y = Var("x", T), Var("y", T)
    params = (Param(x), Param(y, ParamDirection.Out))
    assert returned_params(_kernel(params, (T, T), ReturnStmt((y, x)))) == (1, 0)
    # A returned value that is not a parameter, or a count that disagrees, proves nothing.
    assert returned_params(_kernel(params, (T,), ReturnStmt((Var("z", T),)))) == (None,)
    assert returned_params(_kernel(params, (T,), ReturnStmt((x, y)))) == (None,)


def test_returned_params_of_an_external_kernel_are_its_written_params() -> None:
    inp = Param(Var("inp", T))
    out_t, out_u = Param(Var("o", T), ParamDirection.Out), Param(Var("p", U), ParamDirection.InOut)
    assert returned_params(_kernel((inp, out_t, out_u), (T, U))) == (1, 2)
    # More written parameters than results: matched by type where that is unambiguous.
    assert returned_params(_kernel((inp, out_t, out_u), (U,))) == (2,)
    same = Param(Var("q", T), ParamDirection.InOut)
    assert returned_params(_kernel((out_t, same), (T,))) == (None,)


def test_a_body_not_ending_in_return_proves_nothing() -> None:
    x = Var("x", T)
    func = _kernel((Param(x, ParamDirection.Out),), (T,), EvalStmt(x))
    assert returned_params(func) == (None,)


def test_a_call_of_an_unknown_function_is_an_internal_error() -> None:
    call = Call(GlobalVar("missing"), (), T)
    orch = Function("orch", (), (T,), SeqStmts((ReturnStmt((call,)),)), FunctionType.Orchestration)
    walker = ProvenanceWalker[ProvenanceState](Program("P", (orch,)), orch)
    with pytest.raises(InternalError, match="call of unknown function 'missing'"):
        walker.run(ProvenanceState({}))


def test_an_unknown_statement_kind_is_an_internal_error() -> None:
    @dataclass(frozen=True)
    class Odd(Stmt):
        pass

    orch = Function("orch", (), (), SeqStmts((Odd(),)), FunctionType.Orchestration)
    walker = ProvenanceWalker[ProvenanceState](Program("P", (orch,)), orch)
    with pytest.raises(InternalError, match="unknown statement kind Odd"):
        walker.run(ProvenanceState({}))


def test_scalars_have_no_storage() -> None:
    n = Var("n", INDEX)
    orch = Function("orch", (Param(n),), (), SeqStmts(()), FunctionType.Orchestration)
    walker = ProvenanceWalker[ProvenanceState](Program("P", (orch,)), orch)
    assert walker.eval(BinaryOp("+", n, n, INDEX), ProvenanceState({"n": NOTHING})) == NOTHING


class _NameObserver(_Recorder):
    """Records every name it evaluates, as an analysis observing uses (eval overridden) does."""

    def __init__(self, program: Program, func: Function) -> None:
        super().__init__(program, func)
        self.names: list[str] = []

    def eval(self, expr: Expr, state: ProvenanceState) -> Origin:
        if isinstance(expr, Var):
            self.names.append(expr.name)
        return super().eval(expr, state)


def test_an_analysis_overriding_eval_sees_every_call_operand() -> None:
    program = parse_one(SOURCE)
    observer = _NameObserver(program, function(program, "orch"))
    state = observer.run(ProvenanceState({}))
    plain = _Recorder(program, function(program, "orch"))
    walked = plain.run(ProvenanceState({})).env, plain.calls
    # Names among call operands are looked up without eval() only where eval is not overridden:
    # the observer sees them all, and both walks find the same values.
    assert {"a", "b", "t", "c"} <= set(observer.names)
    assert observer.names.count("a") >= 5
    assert (state.env, observer.calls) == walked
