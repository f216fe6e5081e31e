"""Compile-time contiguity proof for the tensor operands of a builtin collective kernel.

The builtin kernels move each operand as one dense row-major block. Whether an operand really is
dense is only known per rank at run time, and a rank that refuses to submit while its peers
launch leaves them waiting in the kernel's exchange barrier: a hang, not an error. So the CHIP
rail proves contiguity at compile time, with a whitelist, and rejects whatever it cannot prove.

Each operand, as written at the call, is traced through every value that can reach it:

* **roots** (dense row-major by construction): function parameters, ``pld.window`` views and
  ``tensor.create``. A ``pl.submit`` Out result is the tensor the caller allocated for that Out
  (every argument of a submitted kernel is passed explicitly), so it ends at one of these roots;
* **traced through** to their source: ``tensor.reshape``, ``tensor.view``,
  ``tensor.set_validshape``, ``tensor.assemble`` (its target), a collective's result (its
  target), a kernel call or ``pl.submit`` result and its tuple elements (the argument bound to the
  parameter that the callee's ``return`` names directly; an external kernel, which has no body,
  returns its written parameters in declaration order), and a ``tensor.slice`` that narrows only
  the leading dimension of its parent, with a literal offset tuple whose other entries are 0;
* **everything else is rejected**, including ``tensor.transpose`` and any other slice.

Every value on a chain must also have ND layout and a compact stride: each step above assumes a
compact row-major source (a slice drops its parent's stride, so a leading-dim slice of a DN or
padded tensor is not contiguous). Some safe programs are rejected too — a ``tensor.write``
result, a ``[1, N]`` slice of a ``[1, W]`` tensor, a slice at a computed offset tuple, a callee
whose ``return`` is not a parameter — because a missed acceptance is safe and a wrong one is not.

Which values reach a use is decided by a flow-sensitive reaching-definitions analysis over the
structured body: an ``if`` joins both branches, a loop is iterated to a fixpoint and its exit
state includes the state on entry (a loop that runs zero times yields its initial values). The
analysis ignores that a ``return`` ends a path, which can only add definitions, never lose one.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from pypto_build.lowering.diagnostics import SYNTHETIC, InternalError, ProgramError, Span
from pypto_build.lowering.ir import (
    AssignStmt,
    Call,
    CommDomainScopeStmt,
    ConstInt,
    Expr,
    ForStmt,
    Function,
    GlobalVar,
    IfStmt,
    Layout,
    MakeTuple,
    Program,
    ReturnStmt,
    SeqStmts,
    Stmt,
    TensorType,
    TupleGetItem,
    TupleType,
    Type,
    Var,
    WhileStmt,
    compact_strides,
    get_attr,
)
from pypto_build.lowering.ops.signature import expr_span
from pypto_build.lowering.passes.provenance import returned_params
from pypto_build.lowering.passes.rewrite import walk_stmts

#: Ops whose result is a fresh dense row-major tensor.
ROOT_OPS = frozenset({"tensor.create", "pld.window"})

#: Ops whose result is (a view of) one of their operands, by operand index.
TRACED_THROUGH_OPS = {
    "tensor.reshape": 0,
    "tensor.view": 0,
    "tensor.set_validshape": 0,
    "tensor.assemble": 0,
    "pld.tensor.all_to_all_v": 1,
    "pld.tensor.indexed_all_to_all_v": 1,
}

SLICE_OP = "tensor.slice"

#: A position inside a tuple-typed value: one index per nesting level.
Path = tuple[int, ...]

#: Names to the definitions (indices into ``ReachingDefinitions.definitions``) reaching a point.
Env = dict[str, frozenset[int]]


@dataclass(frozen=True)
class Definition:
    """One way a name gets a value: a parameter, a loop index, or an assignment target.

    ``value`` is the assigned expression and ``index`` the target's position when a tuple value
    is unpacked (``a, b = e``); ``at`` is the assignment, whose entry state resolves ``value``.
    """

    var: Var
    value: Expr | None = None
    index: int | None = None
    at: Stmt | None = None
    is_loop_index: bool = False


class ReachingDefinitions:
    """Which definitions of each name can reach each statement of one function."""

    def __init__(self, func: Function) -> None:
        self.definitions: list[Definition] = []
        self.param_definitions: dict[int, int] = {}
        self._assign_defs: dict[int, tuple[int, ...]] = {}
        self._loop_defs: dict[int, int] = {}
        self._entry: dict[int, Env] = {}
        env: Env = {}
        for position, param in enumerate(func.params):
            def_id = self._add(Definition(param.var))
            self.param_definitions[def_id] = position
            env[param.var.name] = frozenset({def_id})
        self._seq(func.body, env)

    def entry_state(self, stmt: Stmt) -> Env:
        """Definitions reaching the start of ``stmt`` (a statement of this function's body)."""
        return self._entry.get(id(stmt), {})

    def _add(self, definition: Definition) -> int:
        self.definitions.append(definition)
        return len(self.definitions) - 1

    def _seq(self, body: SeqStmts, env: Env) -> Env:
        for stmt in body.stmts:
            env = self._stmt(stmt, env)
        return env

    def _stmt(self, stmt: Stmt, env: Env) -> Env:
        known = self._entry.get(id(stmt))
        self._entry[id(stmt)] = env if known is None else _join(known, env)
        if isinstance(stmt, AssignStmt):
            return {**env, **{var.name: frozenset({d}) for var, d in self._targets(stmt)}}
        if isinstance(stmt, IfStmt):
            then_env = self._seq(stmt.then_body, env)
            else_env = env if stmt.else_body is None else self._seq(stmt.else_body, env)
            return _join(then_env, else_env)
        if isinstance(stmt, ForStmt):
            index = self._loop_index(stmt)
            return self._loop(stmt.body, env, {stmt.var.name: frozenset({index})})
        if isinstance(stmt, WhileStmt):
            return self._loop(stmt.body, env, {})
        if isinstance(stmt, CommDomainScopeStmt):
            return self._seq(stmt.body, env)
        return env

    def _loop(self, body: SeqStmts, entry: Env, per_iteration: Env) -> Env:
        """Iterate ``body`` to a fixpoint; the head state covers zero or more iterations."""
        head = entry
        while True:
            after_body = self._seq(body, {**head, **per_iteration})
            new_head = _join(entry, after_body)
            if new_head == head:
                return head
            head = new_head

    def _targets(self, stmt: AssignStmt) -> list[tuple[Var, int]]:
        ids = self._assign_defs.get(id(stmt))
        if ids is None:
            unpacked = len(stmt.targets) > 1
            ids = tuple(
                self._add(Definition(var, stmt.value, i if unpacked else None, stmt))
                for i, var in enumerate(stmt.targets)
            )
            self._assign_defs[id(stmt)] = ids
        return list(zip(stmt.targets, ids, strict=True))

    def _loop_index(self, stmt: ForStmt) -> int:
        def_id = self._loop_defs.get(id(stmt))
        if def_id is None:
            def_id = self._add(Definition(stmt.var, is_loop_index=True))
            self._loop_defs[id(stmt)] = def_id
        return def_id


def _join(a: Env, b: Env) -> Env:
    return {name: a.get(name, frozenset()) | b.get(name, frozenset()) for name in {*a, *b}}


@dataclass(frozen=True)
class Violation:
    """The first construct found that may make an operand non-contiguous, and where it is."""

    construct: str
    span: Span


#: A definition traced at a position inside its value: the unit each result is cached for.
Node = tuple[int, Path]

#: Where one step along a chain of views leads: the expression it views (at a path), a
#: violation, or None at a root.
Step = tuple[Expr, Path] | Violation | None


@dataclass
class _Frame:
    """A node whose definitions are being traced, on the explicit depth-first stack."""

    node: Node
    successors: Iterator[Node]
    #: Tarjan's low link: the earliest node still on the component stack that it reaches.
    low: int


class ContiguityTracer:
    """Proves operands of calls inside one function contiguous (see the module docstring).

    The trace is a depth-first search of a graph whose nodes are definitions (each at a path
    into its value) and whose edges are the reaching definitions of the one name a chain of
    views ends at. Every node is traced once per tracer, however many operands reach it: a long
    pipeline threads one window through every collective, so each operand reaches all the
    earlier ones. The search keeps its own stack, because that chain is as long as the program.

    Loop-carried values make the graph cyclic, and a node on a cycle is only accepted once its
    whole strongly connected component is (its result depends on nodes still being traced), so
    results are cached per component, with Tarjan's algorithm. A violation ends the search; it
    is cached for the nodes on the path to it, which all reach it.
    """

    def __init__(self, program: Program, func: Function) -> None:
        self._program = program
        self._reaching = ReachingDefinitions(func)
        self._callees: dict[str, ReachingDefinitions] = {}
        self._results: dict[Node, Violation | None] = {}

    def violation(self, operand: Expr, at: Stmt) -> Violation | None:
        """Why ``operand``, written in statement ``at``, may not be dense row-major (or None)."""
        successors = self._chain(operand, (), self._reaching.entry_state(at))
        if isinstance(successors, Violation):
            return successors
        for node in successors:
            found = self._search(node)
            if found is not None:
                return found
        return None

    def _search(self, root: Node) -> Violation | None:
        """The first violation reachable from ``root``, in depth-first order (or None)."""
        if root in self._results:
            return self._results[root]
        order: dict[Node, int] = {}  # discovery order of the nodes this search entered
        component: list[Node] = []  # entered nodes whose component is not complete yet
        frames: list[_Frame] = []
        node: Node | None = root  # the next node to enter, if any
        while True:
            if node is not None:
                order[node] = len(order)
                component.append(node)
                successors = self._successors(node)
                if isinstance(successors, Violation):
                    return self._fail(successors, [node, *(frame.node for frame in frames)])
                frames.append(_Frame(node, iter(successors), order[node]))
            frame = frames[-1]
            node = next(frame.successors, None)
            if node is None:
                frames.pop()
                if frame.low == order[frame.node]:
                    self._accept(component, frame.node)
                if not frames:
                    return None
                frames[-1].low = min(frames[-1].low, frame.low)
            elif node in self._results:
                found = self._results[node]
                if found is not None:
                    return self._fail(found, [frame.node for frame in frames])
                node = None
            elif node in order:  # on the component stack: a loop-carried value
                frame.low = min(frame.low, order[node])
                node = None

    def _accept(self, component: list[Node], root: Node) -> None:
        """Cache the completed component of ``root`` (the top of ``component``) as accepted:
        the search left it without finding a violation."""
        while True:
            member = component.pop()
            self._results[member] = None
            if member == root:
                return

    def _fail(self, found: Violation, path: list[Node]) -> Violation:
        """Cache ``found`` for the nodes on ``path``, the search's way to it."""
        for node in path:
            self._results[node] = found
        return found

    def _successors(self, node: Node) -> list[Node] | Violation:
        """The nodes ``node`` is traced into, or its violation (no nodes: a root)."""
        def_id, path = node
        definition = self._reaching.definitions[def_id]
        if definition.is_loop_index:
            return Violation(f"the loop index '{definition.var.name}'", definition.var.span)
        if definition.value is None or definition.at is None:
            # A parameter: a root, if its own type is compact row-major. (An assigned value's
            # type is its expression's, checked where that expression is traced.)
            problem = _layout_problem(_element_type(definition.var.type, path))
            if problem is not None:
                return Violation(f"'{definition.var.name}' with {problem}", definition.var.span)
            return []
        if definition.index is not None:
            path = (definition.index, *path)
        return self._chain(definition.value, path, self._reaching.entry_state(definition.at))

    def _chain(self, expr: Expr, path: Path, env: Env) -> list[Node] | Violation:
        """Follow ``expr`` (at ``path``) through the views it is made of, checking each, to
        the definitions of the name it ends at (none at a root)."""
        while not isinstance(expr, Var):
            step = self._step(expr, path)
            if step is None or isinstance(step, Violation):
                return [] if step is None else step
            expr, path = step
        definitions = env.get(expr.name)
        if not definitions:
            return Violation(f"'{expr.name}', which no definition reaches", expr.span)
        return [(def_id, path) for def_id in sorted(definitions)]

    def _step(self, expr: Expr, path: Path) -> Step:
        if isinstance(expr, TupleGetItem):
            return expr.tuple, (expr.index, *path)
        if isinstance(expr, MakeTuple) and path:
            return expr.items[path[0]], path[1:]
        if isinstance(expr, Call):
            if isinstance(expr.op, GlobalVar):
                return self._kernel_call_step(expr, expr.op.name, path)
            return self._op_step(expr, expr.op, path)
        return Violation(f"the expression {type(expr).__name__}", span_of(expr))

    def _op_step(self, call: Call, op: str, path: Path) -> Step:
        if op not in ROOT_OPS and op not in TRACED_THROUGH_OPS and op != SLICE_OP:
            return Violation(op, call.span)
        problem = _layout_problem(_element_type(call.type, path))
        if problem is not None:
            return Violation(f"a {op} result with {problem}", call.span)
        if op in ROOT_OPS:
            return None
        if op == SLICE_OP:
            problem = _slice_problem(call)
            if problem is not None:
                return Violation(f"a {SLICE_OP} {problem}", call.span)
            return call.args[0], path
        return call.args[TRACED_THROUGH_OPS[op]], path

    def _kernel_call_step(self, call: Call, callee_name: str, path: Path) -> Step:
        callee = self._program.function(callee_name)
        if callee is None:
            raise InternalError(f"contiguity: call of unknown function '{callee_name}'")
        submitted = get_attr(call.attrs, "submit") is True
        if submitted:
            if not path or path[0] != 0:
                return Violation(f"the task id of pl.submit(self.{callee_name})", call.span)
            path = path[1:]
        several = len(callee.return_types) > 1
        if several and not path:
            param = None  # the whole tuple of results is not one tensor
        else:
            param = self._returned_param(callee, path[0] if several else 0)
        if param is None:
            return Violation(
                f"the result of self.{callee_name}, whose return value is not one of its "
                "parameters",
                call.span,
            )
        problem = _layout_problem(_element_type(call.type, (0, *path) if submitted else path))
        if problem is not None:
            return Violation(f"a self.{callee_name} result with {problem}", call.span)
        return call.args[param], path[1:] if several else path

    def _returned_param(self, callee: Function, position: int) -> int | None:
        """The parameter ``callee`` returns at ``position``, or None if that is not provably
        one parameter.

        A body's every ``return`` must name the same parameter, still holding its entry value
        (a parameter name rebound in the body is not the parameter). An external kernel has no
        body; by the DSL convention (:func:`returned_params`) its results are its written
        parameters in declaration order.
        """
        if not callee.body.stmts:
            convention = returned_params(callee)
            return convention[position] if position < len(convention) else None
        reaching = self._callees.get(callee.name)
        if reaching is None:
            reaching = ReachingDefinitions(callee)
            self._callees[callee.name] = reaching
        found: set[int] = set()
        for ret in walk_stmts(callee.body):
            if not isinstance(ret, ReturnStmt):
                continue
            returned = ret.values[position] if position < len(ret.values) else None
            if not isinstance(returned, Var):
                return None
            definitions = reaching.entry_state(ret).get(returned.name, frozenset())
            if len(definitions) != 1:
                return None
            param = reaching.param_definitions.get(next(iter(definitions)))
            if param is None:
                return None
            found.add(param)
        return found.pop() if len(found) == 1 else None


def check_contiguous_operands(
    tracer: ContiguityTracer, call: Call, roles: tuple[str, ...], at: Stmt, phase: str
) -> None:
    """Reject the first operand of ``call`` (written in ``at``) not provably contiguous."""
    for role, operand in zip(roles, call.args, strict=True):
        found = tracer.violation(operand, at)
        if found is not None:
            raise ProgramError(
                f"{call.callee_name} {role} is not provably contiguous: it may come from "
                f"{found.construct} at line {found.span.line}; the builtin kernel needs dense "
                "row-major operands (make a contiguous copy with a kernel, or pass a "
                "parameter/window)",
                span_of(operand, call.span),
                phase=phase,
            )


def _slice_problem(call: Call) -> str | None:
    """Why a ``tensor.slice`` is not a leading-dimension narrowing (None if it is)."""
    parent = call.args[0].type
    result = call.type
    offset = call.args[2]
    if not isinstance(parent, TensorType) or not isinstance(result, TensorType):
        raise InternalError(f"contiguity: {SLICE_OP} of a non-tensor, typed {result}")
    if not isinstance(offset, MakeTuple):
        return "whose offset is not a literal tuple"
    if result.shape[1:] != parent.shape[1:]:  # the deducer keeps the rank
        return "that narrows a non-leading dimension"
    if not all(isinstance(item, ConstInt) and item.value == 0 for item in offset.items[1:]):
        return "whose offset in a non-leading dimension is not a literal 0"
    return None


def _layout_problem(value_type: Type | None) -> str | None:
    if not isinstance(value_type, TensorType):
        return None
    if value_type.layout is not Layout.ND:
        return f"layout {value_type.layout.value}"
    if value_type.stride is not None and value_type.stride != compact_strides(value_type.shape):
        return f"non-compact stride {list(value_type.stride)}"
    return None


def _element_type(value_type: Type, path: Path) -> Type | None:
    for index in path:
        if not isinstance(value_type, TupleType) or index >= len(value_type.items):
            return None
        value_type = value_type.items[index]
    return value_type


def span_of(node: object, fallback: Span = SYNTHETIC) -> Span:
    """The source span of an IR node (the Expr base class does not declare one), or
    ``fallback`` for a node written by a pass or for a literal."""
    span = expr_span(node, fallback)
    return fallback if span == SYNTHETIC else span
