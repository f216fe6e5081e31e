"""Rendering builtin template packages on both rails, through one kernel-variable function.

A builtin collective reaches a chip in one of two ways. On the CHIP rail, LowerL2TensorCollectives
synthesized an AIV function whose attrs name the package (``builtin_template_dir``) and the
variables of its variant (``builtin_template_vars``); only the package's ``kernel.cpp.in`` is
rendered, into the calling orchestration's ``kernels/aiv/``. On the HOST rail, each
``builtin.tensor.<op>`` dispatch of a HOST orchestrator names a *variant* (op and payload dtype)
that becomes a chip callable of its own, ``next_levels/<op>__<dtype>/``, rendered from all of the
package's templates (upstream ``_materialize_builtin_next_levels``).

Both rails render the kernel through :func:`render_kernel` with :func:`kernel_variables`
(``template_package`` = the handle without its ``:``, then the variant's variables), which is
what makes their kernels byte-identical by construction. The variant's variables come from two
independent places — the CHIP rail's function attr, written by the lowering, and the HOST rail's
package manifest — so ``check-render`` comparing the two renders checks that they agree.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cached_property

from pypto_build.builtins import BuiltinPackage, TemplateRenderError, render, resolve
from pypto_build.builtins.manifest import CONFIG_TEMPLATE, ENTRY_TEMPLATE, KERNEL_TEMPLATE
from pypto_build.chip_build.chips import Chip, CoreType
from pypto_build.chip_build.render_errors import RenderError
from pypto_build.lowering.builtin_ops import HOST_RAIL, SIGNAL, BuiltinOp, parse_template_vars
from pypto_build.lowering.builtin_registry import builtin_op
from pypto_build.lowering.diagnostics import InternalError, Span
from pypto_build.lowering.ir import Call, DataType, Function, Program, TensorType
from pypto_build.lowering.ir.memo import per_node
from pypto_build.lowering.ir.names import Kwarg, kwarg, template_dir, template_vars
from pypto_build.lowering.ir.walk import walk_calls
from pypto_build.lowering.legality.kernels import payload_dtype
from pypto_build.tree_layout import KERNEL_CONFIG, RELATIVE_SUB_BUILD

_NOT_IDENTIFIER_CHAR = re.compile(r"[^A-Za-z0-9_]")


def kernel_variables(package: BuiltinPackage, variant_vars: Mapping[str, str]) -> dict[str, str]:
    """The variables of ``kernel.cpp.in`` on either rail: the package name, then the variant's
    variables (which win on a collision, as upstream's dict update)."""
    return {"template_package": package.package, **variant_vars}


def render_kernel(package: BuiltinPackage, variant_vars: Mapping[str, str]) -> str:
    """``package``'s kernel for the variant with variables ``variant_vars``."""
    return render(package, KERNEL_TEMPLATE, kernel_variables(package, variant_vars))


def _kernel_core(core_type: str) -> str:
    """The core type whose folder holds a kernel of ``core_type`` (a MIX kernel's entry is its
    AIV)."""
    return CoreType.AIC.value if core_type == "aic" else CoreType.AIV.value


# --- CHIP rail -------------------------------------------------------------------------------


@dataclass(frozen=True)
class ChipBuiltinKernel:
    """A synthesized builtin kernel function of a lowered program."""

    function: Function
    package: BuiltinPackage
    variant_vars: Mapping[str, str]

    @property
    def payload_dtype(self) -> DataType:
        """The element type of the variant: that of the first payload-typed operand."""
        return payload_dtype(self.function, self.package)

    @property
    def configuration(self) -> tuple[tuple[str, str], ...]:
        """The variant's variables beyond its dtype's, in order: the static configuration its
        op's contract rendered it for (an MC2 tiling; none for a collective)."""
        by_dtype = self.package.dtype_variables(self.payload_dtype.value)
        return tuple(
            (key, value) for key, value in self.variant_vars.items() if key not in by_dtype
        )

    def render(self) -> str:
        with rendered_at(self.function.span):
            return render_kernel(self.package, self.variant_vars)


@per_node
def chip_builtin_kernel(func: Function) -> ChipBuiltinKernel | None:
    """The builtin template ``func`` is rendered from, or None for any other function
    (CheckLegality has checked its attrs and resolved its package). Asked for each kernel
    slot of each sub-build on each chip, so answered once per function (:mod:`~..memo`)."""
    handle = template_dir(func)
    if handle is None:
        return None
    return ChipBuiltinKernel(
        func, resolve(handle), parse_template_vars(template_vars(func), func.name)
    )


# --- HOST rail -------------------------------------------------------------------------------


@dataclass(frozen=True)
class HostVariant:
    """A builtin chip callable that a HOST orchestrator dispatches: one op, one payload dtype."""

    package: BuiltinPackage
    dtype: DataType
    #: The first dispatch of the variant (where a diagnostic about it points).
    span: Span

    # The names are asked for by every template's render and output path: each is computed
    # once per variant (in the instance dict, beside the fields equality compares).

    @cached_property
    def name(self) -> str:
        """The variant and its sub-build folder, e.g. ``builtin.tensor.all_to_all_v__fp32``."""
        return f"{self.package.builtin_op}__{self.dtype.value}"

    @cached_property
    def entry(self) -> str:
        """The variant as a C identifier: the entry's exported name and source stem."""
        return _NOT_IDENTIFIER_CHAR.sub("_", self.name)

    @cached_property
    def kernel_name(self) -> str:
        return f"{self.entry}_kernel"

    @property
    def variant_vars(self) -> dict[str, str]:
        """The manifest's variables for this dtype."""
        return self.package.dtype_variables(self.dtype.value)

    def output_path(self, template: str) -> str:
        """Where ``template`` renders to inside the variant's sub-build."""
        return self._output_paths[template]

    @cached_property
    def _output_paths(self) -> dict[str, str]:
        """Every template's output path, made once per variant: a path of the tree's layout
        costs a few pathlib joins, more than rendering a small template."""
        return {spec.name: self._place(spec.name) for spec in self.package.templates}

    def _place(self, template: str) -> str:
        if template == ENTRY_TEMPLATE:
            return RELATIVE_SUB_BUILD.orchestration(self.entry).as_posix()
        if template == KERNEL_TEMPLATE:
            core = _kernel_core(self.package.core_type)
            return RELATIVE_SUB_BUILD.kernel(core, self.kernel_name).as_posix()
        if template == CONFIG_TEMPLATE:
            return KERNEL_CONFIG
        return template.removesuffix(".in")

    def render(self, chip: Chip, runtime: str) -> dict[str, str]:
        """Every template of the package, by output path inside the variant's sub-build."""
        if HOST_RAIL not in self.package.rails or chip.name not in self.package.chips:
            raise InternalError(
                f"{self.package.builtin_op} ({self.package.handle}) has no HOST rail for chip "
                f"{chip.name}: the lowering should have refused it"
            )
        available = {
            "variant": self.name,
            "entry": self.entry,
            "kernel_name": self.kernel_name,
            "runtime": runtime,
            "launch_core_count_method": chip.launch_spec_method,
            **kernel_variables(self.package, self.variant_vars),
        }
        files: dict[str, str] = {}
        with rendered_at(self.span):
            for spec in self.package.templates:
                # A declared variable we do not know is left out, for render to name it.
                variables = {name: available[name] for name in spec.variables if name in available}
                files[self.output_path(spec.name)] = render(self.package, spec.name, variables)
        return dict(sorted(files.items()))

    def render_kernel(self) -> str:
        """The variant's kernel alone (what :meth:`render` writes for ``kernel.cpp.in``)."""
        with rendered_at(self.span):
            return render_kernel(self.package, self.variant_vars)


def is_builtin_dispatch(call: Call) -> bool:
    """Whether ``call`` is a HOST-rail builtin dispatch (the internal op of a package)."""
    if not isinstance(call.op, str):
        return False
    found = builtin_op(call.op)
    return found is not None and found.builtin_op == call.op


def host_variant(call: Call) -> HostVariant:
    """The variant a HOST-rail builtin dispatch ``call`` submits."""
    found = builtin_op(call.callee_name)
    dtype = kwarg(call, Kwarg.DTYPE)
    if found is None or not isinstance(dtype, DataType):
        raise InternalError(f"{call.callee_name} is not a builtin dispatch with a dtype=")
    return HostVariant(found.package, dtype, call.span)


def host_variants(program: Program) -> tuple[HostVariant, ...]:
    """The variants the HOST orchestrators of ``program`` dispatch, once each, by first use."""
    found: dict[str, HostVariant] = {}
    for func in program.functions:
        if not func.is_host_orchestrator:
            continue
        for call in walk_calls(func.body):
            if is_builtin_dispatch(call):
                variant = host_variant(call)
                found.setdefault(variant.name, variant)
    return tuple(found.values())


def _signal_rows(package: BuiltinPackage, types: Sequence[object]) -> list[int]:
    """The leading dimension (NR) of the signal operand among ``types``, if ``package`` has one."""
    return [
        ty.shape[0]
        for operand, ty in zip(package.operands, types, strict=False)
        if operand.role == SIGNAL and isinstance(ty, TensorType) and ty.shape
    ]


def _chip_builtin_op(func: Function) -> BuiltinOp | None:
    """The builtin op whose CHIP-rail kernel ``func`` is, or None for any other function."""
    builtin = chip_builtin_kernel(func)
    return None if builtin is None else builtin_op(builtin.package.public_op)


def kernel_ranks(func: Function) -> tuple[int, ...]:
    """The rank count CHIP-rail builtin kernel ``func`` is sized for, as its package's op
    contract reads it (a collective's signal rows, the MC2 operator's ep * tp); none for any
    other function."""
    found = _chip_builtin_op(func)
    if found is None:
        return ()
    ranks = found.ranks(func)
    return () if ranks is None else (ranks,)


def window_tail(program: Program) -> int:
    """The bytes every comm window of ``program`` holds beyond its buffers: the largest
    ``window_tail`` of the contracts of its CHIP-rail builtin kernels (0 without any)."""
    tails = (_chip_builtin_op(func) for func in program.functions)
    return max((found.contract.window_tail for found in tails if found is not None), default=0)


def collective_ranks(program: Program) -> tuple[int, ...]:
    """The rank counts the collectives of ``program`` are sized for, on either rail: the leading
    dimension (NR) of each one's signal operand, in order of appearance."""
    ranks: list[int] = []
    for func in program.functions:
        ranks += kernel_ranks(func)
        if func.is_host_orchestrator:
            for call in walk_calls(func.body):
                if is_builtin_dispatch(call):
                    ranks += _signal_rows(
                        host_variant(call).package, [arg.type for arg in call.args]
                    )
    return tuple(ranks)


@contextmanager
def rendered_at(span: Span) -> Iterator[None]:
    """Report a template that does not render where the program uses it (``span``, the function
    or dispatch being rendered): the package, not the program, is at fault, and its author
    needs both."""
    try:
        yield
    except TemplateRenderError as error:
        raise RenderError(f"{span}: {error}") from None


def rail_renders(program: Program, chip: Chip, runtime: str) -> Iterator[tuple[str, str, str]]:
    """For each builtin variant ``program`` uses on a package with both rails: its name, its
    kernel as the HOST rail's variant sub-build holds it (rendered with every template of the
    package, variables from the manifest) and as the CHIP rail renders it (variables from the
    ``builtin_template_vars`` the lowering wrote)."""
    seen: set[str] = set()
    for variant in host_variants(program):
        found = builtin_op(variant.package.builtin_op)
        assert found is not None
        chip_vars = parse_template_vars(found.template_vars(variant.dtype), variant.name)
        with rendered_at(variant.span):
            chip_text = render_kernel(variant.package, chip_vars)
        seen.add(variant.name)
        yield variant.name, _host_rail_kernel(variant, chip, runtime), chip_text
    for func in program.functions:
        builtin = chip_builtin_kernel(func)
        if builtin is None or HOST_RAIL not in builtin.package.rails:
            continue
        variant = HostVariant(builtin.package, builtin.payload_dtype, func.span)
        if variant.name not in seen:
            seen.add(variant.name)
            yield variant.name, _host_rail_kernel(variant, chip, runtime), builtin.render()


def _host_rail_kernel(variant: HostVariant, chip: Chip, runtime: str) -> str:
    return variant.render(chip, runtime)[variant.output_path(KERNEL_TEMPLATE)]
