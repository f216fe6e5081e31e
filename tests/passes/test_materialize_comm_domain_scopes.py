"""MaterializeCommDomainScopes: explicit and implicit comm domains of HOST orchestrators, their
names and buffers, every rejection with its location, and the ``with pld.comm_domain(...)``
syntax of the front end."""

from __future__ import annotations

import textwrap

import pytest
from _support.passes import (
    HOST_A2AV,
    HOST_PRELUDE,
    HOST_WINDOWS,
    PROGRAMS,
    host_function,
    line_of,
    located,
    parse_one,
    pass_error,
    position,
    run_verified,
    span_location,
)

from pypto_build.lowering.analysis.host_windows import buffer_name
from pypto_build.lowering.diagnostics import ProgramError
from pypto_build.lowering.frontend import parse_file
from pypto_build.lowering.ir import (
    AssignStmt,
    CommDomainScopeStmt,
    EvalStmt,
    Function,
    IfStmt,
    Program,
    Stmt,
)
from pypto_build.lowering.ir.walk import walk_stmts
from pypto_build.lowering.passes import (
    PassManager,
    PipelineOrderError,
    Property,
    default_pipeline,
)
from pypto_build.lowering.passes.materialize_comm_domain_scopes import (
    MaterializeCommDomainScopes,
    allocation,
)
from pypto_build.lowering.printer import print_programs

#: The default pipeline's passes before this one.
PREFIX = default_pipeline().until("AutoDeriveTaskDependencies").passes

HEADER = (
    HOST_PRELUDE
    + """\
    @pl.function(type=pl.FunctionType.AIV, external_source="kernels/touch.cpp")
    def touch(
        self, x: pl.InOut[pld.DistributedTensor[[T, W], pl.FP32]]
    ) -> pld.DistributedTensor[[T, W], pl.FP32]: ...

    @pl.function(type=pl.FunctionType.Orchestration)
    def touch_orch(self, x: pl.InOut[pld.DistributedTensor[[T, W], pl.FP32]]):
        x = self.touch(x)

    @pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator)
    def host_orch(self, flag: pl.Scalar[pl.BOOL]):
"""
)

#: Five windows and an all_to_all_v over them, for the loop and domain checks.
WINDOWS = HOST_WINDOWS.replace("DT", "pl.FP32")
A2AV = HOST_A2AV


def host_source(body: str) -> str:
    return HEADER + textwrap.indent(textwrap.dedent(body), " " * 8)


def materialize(source: str) -> Program:
    return run(parse_one(source))


def run(program: Program) -> Program:
    return run_verified(program, *PREFIX, MaterializeCommDomainScopes())


def materialize_error(source: str) -> ProgramError:
    return pass_error(parse_one(source), *PREFIX, MaterializeCommDomainScopes())


def frontend_error(source: str) -> ProgramError:
    with pytest.raises(ProgramError) as info:
        parse_one(source)
    assert info.value.phase == "frontend"
    return info.value


def scopes(node: Stmt) -> list[CommDomainScopeStmt]:
    """Every scope under ``node``, in source (pre-)order."""
    return [s for s in walk_stmts(node) if isinstance(s, CommDomainScopeStmt)]


def summary(func: Function) -> list[tuple[str, tuple[str, ...], tuple[int, ...] | None]]:
    return [(s.name, s.buffers, s.devices) for s in scopes(func.body)]


def assigned(stmt: Stmt) -> str:
    assert isinstance(stmt, AssignStmt)
    return stmt.targets[0].name


# --- the pass contract -----------------------------------------------------------------------


def test_contract_runs_after_task_dependencies() -> None:
    assert MaterializeCommDomainScopes.requires == {Property.TASK_DEPENDENCIES_DERIVED}
    assert MaterializeCommDomainScopes.produces == {Property.COMM_DOMAIN_SCOPES_MATERIALIZED}
    with pytest.raises(PipelineOrderError, match="requires TaskDependenciesDerived"):
        PassManager((*PREFIX[:-1], MaterializeCommDomainScopes())).check_order()


# --- implicit world domain -------------------------------------------------------------------


def test_sample_program_gets_one_world_domain_from_the_first_allocation() -> None:
    (program,) = parse_file(PROGRAMS / "host_rail_int8.py")
    program = PassManager(PREFIX).run(program)
    original = host_function(program)
    lowered = host_function(MaterializeCommDomainScopes().apply(program))
    (scope,) = lowered.body.stmts
    assert isinstance(scope, CommDomainScopeStmt)
    assert (scope.name, scope.devices) == ("d0", None)
    assert scope.buffers == ("stage_buf", "data_buf", "signal_buf", "counts_buf", "recv_buf")
    # The whole body from the first allocation on, unchanged, located at that allocation.
    assert scope.body.stmts == original.body.stmts
    first = original.body.stmts[0]
    assert isinstance(first, AssignStmt)
    assert scope.span == first.span


def test_statements_before_the_first_allocation_stay_outside() -> None:
    source = host_source(
        """\
        if flag:
            pass
        buf = pld.alloc_window_buffer([T, W], dtype=pl.FP32)
        x = pld.window(buf, [T, W], dtype=pl.FP32)
        self.touch_orch(x, device=0)
        """
    )
    func = host_function(materialize(source))
    first, scope = func.body.stmts
    assert isinstance(first, IfStmt)
    assert isinstance(scope, CommDomainScopeStmt)
    assert [assigned(s) for s in scope.body.stmts[:2]] == ["buf", "x"]
    assert isinstance(scope.body.stmts[2], EvalStmt)
    assert summary(func) == [("d0", ("buf",), None)]


def test_allocation_in_a_branch_gets_a_domain_ending_with_the_branch() -> None:
    source = host_source(
        """\
        if flag:
            a = pld.alloc_window_buffer([T, W], dtype=pl.FP32)
            self.touch_orch(pld.window(a, [T, W], dtype=pl.FP32), device=0)
        b = pld.alloc_window_buffer([T, W], dtype=pl.FP32)
        if flag:
            c = pld.alloc_window_buffer([T, W], dtype=pl.FP32)
        """
    )
    func = host_function(materialize(source))
    branch, world = func.body.stmts
    assert isinstance(branch, IfStmt)
    (inner,) = branch.then_body.stmts
    assert isinstance(inner, CommDomainScopeStmt)
    # ``c`` is allocated after ``b`` in the same enclosing body: it joins b's world domain.
    assert summary(func) == [("d0", ("a",), None), ("d1", ("b", "c"), None)]
    assert isinstance(world, CommDomainScopeStmt)


def test_host_orchestrator_without_windows_and_other_functions_are_untouched() -> None:
    source = host_source(
        """\
        buf = pld.alloc_window_buffer([T, W], dtype=pl.FP32)
        self.touch_orch(pld.window(buf, [T, W], dtype=pl.FP32), device=0)
        """
    )
    program = parse_one(source)
    program = PassManager(PREFIX).run(program)
    lowered = MaterializeCommDomainScopes().apply(program)
    assert lowered.function("host_orch") != program.function("host_orch")
    for name in ("touch", "touch_orch"):
        assert lowered.function(name) is program.function(name)
    bare = host_source("self.touch_orch(x, device=0)").replace(
        "flag: pl.Scalar[pl.BOOL]", "x: pld.DistributedTensor[[T, W], pl.FP32]"
    )
    program = parse_one(bare)
    assert MaterializeCommDomainScopes().apply(program) is program


def test_rerunning_is_a_no_op() -> None:
    (program,) = parse_file(PROGRAMS / "host_rail_int8.py")
    once = run(program)
    assert MaterializeCommDomainScopes().apply(once) == once


# --- explicit domains ------------------------------------------------------------------------


def test_explicit_domains_are_named_in_source_order_with_their_buffers() -> None:
    source = host_source(
        """\
        with pld.comm_domain(devices=[1, 0]):
            a = pld.alloc_window_buffer([T, W], dtype=pl.FP32)
            b = pld.alloc_window_buffer([T, W], dtype=pl.FP32)
        with pld.comm_domain():
            c = pld.alloc_window_buffer([T, W], dtype=pl.FP32)
        d = pld.alloc_window_buffer([T, W], dtype=pl.FP32)
        """
    )
    func = host_function(materialize(source))
    assert summary(func) == [
        ("d0", ("a", "b"), (1, 0)),
        ("d1", ("c",), None),
        ("d2", ("d",), None),
    ]


def test_nested_domain_is_named_after_its_parent_and_keeps_its_own_buffers() -> None:
    source = host_source(
        """\
        outer = pld.alloc_window_buffer([T, W], dtype=pl.FP32)
        with pld.comm_domain(devices=[0, 1]):
            inner = pld.alloc_window_buffer([T, W], dtype=pl.FP32)
            x = pld.window(outer, [T, W], dtype=pl.FP32)
            self.touch_orch(x, device=1)
        late = pld.alloc_window_buffer([T, W], dtype=pl.FP32)
        """
    )
    func = host_function(materialize(source))
    assert summary(func) == [("d0", ("outer", "late"), None), ("d1", ("inner",), (0, 1))]


def test_printed_scopes_carry_names_buffers_and_devices() -> None:
    source = host_source(
        """\
        with pld.comm_domain(devices=[0, 1]):
            a = pld.alloc_window_buffer([T, W], dtype=pl.FP32)
        """
    )
    text = print_programs([materialize(source)])
    assert '        with pld.comm_domain("d0", buffers=["a"], devices=[0, 1]):\n' in text


# --- rejections ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("loop", "kind"),
    [("for i in pl.range(2):", "for"), ("while flag:", "while")],
)
def test_allocation_in_a_loop_is_rejected(loop: str, kind: str) -> None:
    source = host_source(f"{loop}\n    buf = pld.alloc_window_buffer(64)\n")
    error = materialize_error(source)
    assert error.message == (
        f"pld.alloc_window_buffer inside the {kind} loop at line {line_of(source, loop)}: "
        "a window buffer belongs to a comm domain that is set up once per run, so an "
        "allocation nested in a for/while is rejected on the HOST rail: hoist it out of the loop"
    )
    assert located(error) == position(source, "pld.alloc_window_buffer(64)")


def test_collective_in_a_loop_is_rejected() -> None:
    source = host_source(WINDOWS + f"if flag:\n    for i in pl.range(2):\n        data = {A2AV}\n")
    error = materialize_error(source)
    line = line_of(source, "for i in")
    assert error.message == (
        f"pld.tensor.all_to_all_v inside the for loop at line {line}: the HOST rail fans a "
        "collective out into one builtin dispatch per device of its comm domain, once per run, "
        "so a collective nested in a for/while is rejected on the HOST rail: hoist it out of "
        "the loop"
    )
    assert located(error) == position(source, A2AV)


def test_loop_bounds_are_outside_the_loop() -> None:
    source = host_source(
        WINDOWS
        + "for i in pl.range(2):\n"
        + "    for r in pl.range(pld.world_size()):\n"
        + "        self.touch_orch(data, device=r)\n"
    )
    func = host_function(materialize(source))
    assert summary(func)[0][0] == "d0"


def test_window_used_after_its_domain_is_rejected() -> None:
    source = host_source(
        """\
        with pld.comm_domain(devices=[0, 1]):
            buf = pld.alloc_window_buffer([T, W], dtype=pl.FP32)
            x = pld.window(buf, [T, W], dtype=pl.FP32)
        self.touch_orch(x, device=0)
        """
    )
    error = materialize_error(source)
    assert error.message == (
        "window 'x' is used outside the comm domain that allocated window buffer 'buf' "
        f"(line {line_of(source, 'buf =')}): a window exists only in its buffer's comm "
        "domain, so use it inside that domain"
    )
    assert located(error) == position(source, "x, device=0")


def test_buffer_used_after_its_domain_is_rejected() -> None:
    source = host_source(
        """\
        with pld.comm_domain():
            buf = pld.alloc_window_buffer([T, W], dtype=pl.FP32)
        x = pld.window(buf, [T, W], dtype=pl.FP32)
        """
    )
    error = materialize_error(source)
    assert error.message.startswith(
        "window buffer 'buf' is used outside the comm domain that allocated window buffer 'buf'"
    )
    assert located(error) == position(source, "buf, [T, W]")


def test_collective_mixing_two_domains_is_rejected() -> None:
    outer = [line for line in WINDOWS.splitlines(keepends=True) if "recv" not in line]
    inner = [line for line in WINDOWS.splitlines(keepends=True) if "recv" in line]
    body = (
        "".join(outer)
        + "with pld.comm_domain(devices=[0, 1]):\n"
        + textwrap.indent("".join(inner) + f"data = {A2AV}\n", "    ")
    )
    source = host_source(body)
    error = materialize_error(source)
    assert error.message == (
        "pld.tensor.all_to_all_v recv_counts views window buffer 'recv_buf' (allocated at line "
        f"{line_of(source, 'recv_buf =')}) of a different comm domain than input "
        f"('inp_buf', line {line_of(source, 'inp_buf =')}): all window operands of a "
        "collective must be allocated in the same comm domain"
    )
    assert located(error) == position(source, "recv)")


def test_reassigned_window_buffer_is_rejected() -> None:
    source = host_source(
        """\
        buf = pld.alloc_window_buffer([T, W], dtype=pl.FP32)
        buf = pld.alloc_window_buffer([T, W], dtype=pl.FP32)
        """
    )
    error = materialize_error(source)
    assert error.message == (
        f"window buffer 'buf' (allocated at line {line_of(source, 'buf =')}) is assigned "
        "again: windows name the buffer they view, so each pld.alloc_window_buffer needs a "
        "variable of its own"
    )
    assert located(error) == position(source, "buf =", occurrence=1)


@pytest.mark.parametrize(
    ("first", "second"),
    [
        # Two buffers given one name, in different domains: a run reads windows by name.
        (
            'a = pld.alloc_window_buffer(64, name="stage")',
            'b = pld.alloc_window_buffer(64, name="stage")',
        ),
        # A given name that is another buffer's variable name.
        ("stage = pld.alloc_window_buffer(64)", 'b = pld.alloc_window_buffer(64, name="stage")'),
    ],
)
def test_two_window_buffers_of_one_name_are_rejected(first: str, second: str) -> None:
    source = host_source(
        f"""\
        with pld.comm_domain(devices=[0, 1]):
            {first}
        {second}
        """
    )
    error = materialize_error(source)
    assert error.message == (
        f"window buffer name 'stage' is already given to the buffer allocated at line "
        f"{line_of(source, first)}: a comm domain creates its window buffers, and a run reads "
        "them back, by name, so give each pld.alloc_window_buffer a name of its own"
    )
    assert located(error) == position(source, second)


def test_a_buffer_is_named_as_the_program_names_it() -> None:
    program = materialize(
        host_source(
            """\
            a = pld.alloc_window_buffer(64, name="stage")
            b = pld.alloc_window_buffer(64)
            """
        )
    )
    allocations = [s for s in walk_stmts(host_function(program).body) if allocation(s)]
    assert [buffer_name(s) for s in allocations if isinstance(s, AssignStmt)] == ["stage", "b"]


# --- front end: with pld.comm_domain(...) ----------------------------------------------------


def test_frontend_builds_unnamed_scopes_and_folds_constants() -> None:
    source = host_source(
        """\
        with pld.comm_domain(devices=[0, NR - 1]):
            buf = pld.alloc_window_buffer(64)
        with pld.comm_domain():
            pass
        x = buf
        """
    )
    program = parse_one(source)
    explicit, world, after = host_function(program).body.stmts
    assert isinstance(explicit, CommDomainScopeStmt)
    assert (explicit.name, explicit.buffers, explicit.devices) == ("", (), (0, 1))
    assert [assigned(s) for s in explicit.body.stmts] == ["buf"]
    assert world == CommDomainScopeStmt("", (), None, world.body)
    assert world.body.stmts == ()
    # The block runs exactly once, so its bindings hold after it.
    assert assigned(after) == "x"
    span = explicit.span
    assert span_location(span) == position(source, "with pld.comm_domain(devices")


def test_frontend_scope_round_trips_through_the_printer() -> None:
    source = host_source(
        """\
        with pld.comm_domain(devices=[0, 1]):
            buf = pld.alloc_window_buffer(64)
        with pld.comm_domain():
            pass
        """
    )
    program = parse_one(source)
    text = print_programs([program])
    assert "        with pld.comm_domain(devices=[0, 1]):\n" in text
    assert "        with pld.comm_domain():\n            pass\n" in text
    assert parse_one(text) == program


@pytest.mark.parametrize(
    ("body", "marker", "message"),
    [
        (
            "with pld.comm_domain(devices=[0]) as d:\n    pass",
            "d:",
            "pld.comm_domain(...) takes no 'as' target: with pld.comm_domain(devices=[0, 1]):",
        ),
        (
            'with pld.comm_domain(), open("f"):\n    pass',
            "with",
            "pld.comm_domain(...) must be the only context manager: "
            "with pld.comm_domain(devices=[0, 1]):",
        ),
        (
            "with pld.comm_domain([0, 1]):\n    pass",
            "[0, 1]",
            "pld.comm_domain(...) takes only devices=[...]: with pld.comm_domain(devices=[0, 1]):",
        ),
        (
            "with pld.comm_domain(ranks=[0, 1]):\n    pass",
            "ranks",
            "unexpected keyword 'ranks' in pld.comm_domain(...); it takes only devices=[...]",
        ),
        (
            "with pld.comm_domain(devices=NR):\n    pass",
            "NR)",
            "devices= must be a list of compile-time device ids, e.g. devices=[0, 1], not 'NR'",
        ),
        (
            "with pld.comm_domain(devices=[]):\n    pass",
            "[]",
            "devices= must not be empty; omit it for a domain of every rank",
        ),
        (
            "with pld.comm_domain(devices=[0, -1]):\n    pass",
            "-1",
            "device id must be non-negative, got -1",
        ),
        (
            "with pld.comm_domain(devices=[1, NR - 1]):\n    pass",
            "NR - 1",
            "device 1 is listed twice in devices=",
        ),
        (
            'with open("f"):\n    pass',
            "with",
            "unsupported statement: 'with'",
        ),
        (
            "x = pld.comm_domain()",
            "pld.comm_domain()",
            "pld.comm_domain(...) is only allowed as a with statement in a HOST orchestrator: "
            "with pld.comm_domain(devices=[0, 1]):",
        ),
    ],
)
def test_frontend_rejects_other_forms(body: str, marker: str, message: str) -> None:
    source = host_source(body)
    error = frontend_error(source)
    assert error.message == message
    assert located(error) == position(source, marker, occurrence=source.count(marker) - 1)


def test_frontend_rejects_comm_domain_outside_host_orchestrators() -> None:
    source = HEADER.replace(
        "    @pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator)\n"
        "    def host_orch(self, flag: pl.Scalar[pl.BOOL]):\n",
        "    @pl.function(type=pl.FunctionType.Orchestration)\n"
        "    def chip_orch(self):\n"
        "        with pld.comm_domain(devices=[0, 1]):\n"
        "            pass\n",
    )
    error = frontend_error(source)
    assert error.message == (
        "pld.comm_domain(...) is only allowed in a HOST orchestrator (level=pl.Level.HOST): "
        "communication domains are set up by the host"
    )
    assert located(error) == position(source, "pld.comm_domain(devices")
