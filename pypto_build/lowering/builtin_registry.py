"""Every registered builtin package as a :class:`~pypto_build.lowering.builtin_ops.BuiltinOp`:
the one place an op's definition is built from its manifest.

A manifest names its op contract (``[op] contract``, default ``collective``) and its launch-width
rule (``[op] launch_width``). Ours are :data:`CONTRACTS` and :data:`LAUNCH_WIDTH_RULES`; another
distribution registers its own beside its packages, through the same entry-point group
(``pypto_build.builtins``): an entry point whose value names an object (``module:attr``) is a
:class:`~pypto_build.lowering.builtin_ops.Contract` or a
:class:`~pypto_build.lowering.launch_width.LaunchWidthRule`, known by the entry point's name.
Those are code, so they are imported only when a manifest names a contract or a rule that is not
ours, and then all of them, once per registry: a package of ours never runs another
distribution's code. What a manifest says in the program model's terms (its dtype names, the
rule and the contract it names, what the contract requires of it) is checked when the package
is taken in, with an error naming the manifest and the key.
"""

from __future__ import annotations

import functools
import importlib.metadata
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TypeVar

from pypto_build.builtins.manifest import ANY_DTYPE, PAYLOAD_DTYPE, BuiltinPackage, Rail
from pypto_build.builtins.registry import (
    BuiltinRegistry,
    BuiltinRegistryError,
    default_registry,
    entry_point_text,
)
from pypto_build.lowering.builtin_ops import BuiltinOp, Contract, manifest_error
from pypto_build.lowering.contracts.collective import CollectiveContract
from pypto_build.lowering.contracts.mc2 import Mc2Contract
from pypto_build.lowering.ir import DataType
from pypto_build.lowering.launch_width import ALL_TO_ALL_V, EXACT, LaunchWidthRule
from pypto_build.lowering.runtime_facts import RUNTIME_DTYPES

#: Our op contracts, by the name a manifest gives.
CONTRACTS: Mapping[str, Contract] = {
    contract.name: contract for contract in (CollectiveContract(), Mc2Contract())
}
#: Our launch-width rules, by the name a manifest gives.
LAUNCH_WIDTH_RULES: Mapping[str, LaunchWidthRule] = {
    rule.name: rule for rule in (ALL_TO_ALL_V, EXACT)
}

_Code = TypeVar("_Code", Contract, LaunchWidthRule)


@dataclass(frozen=True)
class Extensions:
    """The contracts and launch-width rules a registry's code entry points name, ours first."""

    contracts: Mapping[str, Contract]
    rules: Mapping[str, LaunchWidthRule]


def _ours() -> Extensions:
    return Extensions(CONTRACTS, LAUNCH_WIDTH_RULES)


@functools.cache
def _registered(registry: BuiltinRegistry) -> Extensions:
    """Ours and every code entry point of ``registry``, loaded: a load that fails, an object
    that is neither a contract nor a rule, or a name given twice is an error naming the entry
    point."""
    contracts = dict(CONTRACTS)
    rules = dict(LAUNCH_WIDTH_RULES)
    for entry_point in registry.code:
        where = entry_point_text(entry_point)
        try:
            found = entry_point.load()
        except Exception as error:  # the third party's module, run by its import
            raise BuiltinRegistryError(f"{where}: cannot load it: {error!r}") from None
        if isinstance(found, Contract):
            _add(contracts, entry_point, found, "op contract")
        elif isinstance(found, LaunchWidthRule):
            _add(rules, entry_point, found, "launch-width rule")
        else:
            raise BuiltinRegistryError(
                f"{where}: must name an op contract (pypto_build.lowering.builtin_ops.Contract) "
                "or a launch-width rule (pypto_build.lowering.launch_width.LaunchWidthRule), "
                f"got {type(found).__name__}"
            )
    return Extensions(contracts, rules)


def _add(
    known: dict[str, _Code], entry_point: importlib.metadata.EntryPoint, found: _Code, what: str
) -> None:
    where = entry_point_text(entry_point)
    if found.name != entry_point.name:
        raise BuiltinRegistryError(
            f"{where}: names the {what} {found.name!r}; the entry point must be named after it"
        )
    if found.name in known:
        raise BuiltinRegistryError(f"{where}: the {what} {found.name!r} is registered twice")
    known[found.name] = found


def _extensions_for(package: BuiltinPackage, registry: BuiltinRegistry) -> Extensions:
    """Ours, unless ``package`` names a contract or a rule that is not: then every registered."""
    if package.contract in CONTRACTS and package.launch_width in LAUNCH_WIDTH_RULES:
        return _ours()
    return _registered(registry)


def package_op(package: BuiltinPackage, registry: BuiltinRegistry | None = None) -> BuiltinOp:
    """``package`` as an op, once what its manifest says in the program model's terms is
    checked: the builtins leaf cannot know those terms, so the lowering checks them when it takes
    the package in, naming the manifest and the key. Unchecked, such a slip surfaced as a bare
    ValueError or an internal error at the first program using the op."""
    _require_known_dtypes(package)
    extensions = _extensions_for(package, registry or default_registry())
    rule = extensions.rules.get(package.launch_width)
    if rule is None:
        known = ", ".join(sorted(extensions.rules))
        raise manifest_error(
            package,
            "op.launch_width",
            f"unknown launch-width rule {package.launch_width!r} (known: {known})",
        )
    contract = extensions.contracts.get(package.contract)
    if contract is None:
        known = ", ".join(sorted(extensions.contracts))
        raise manifest_error(
            package, "op.contract", f"unknown op contract {package.contract!r} (known: {known})"
        )
    contract.validate(package)
    return BuiltinOp(package, rule, contract)


def _require_known_dtypes(package: BuiltinPackage) -> None:
    """Every dtype the manifest names (a payload variant, a fixed operand dtype) is an element
    type of the program model."""
    known = [dtype.value for dtype in DataType if dtype in RUNTIME_DTYPES]
    named = [(f"dtypes.{variant.name}", variant.name) for variant in package.dtypes]
    named += [
        (f"operands[{position}].dtype", operand.dtype)
        for position, operand in enumerate(package.operands)
        if operand.dtype not in (PAYLOAD_DTYPE, ANY_DTYPE)
    ]
    for key, name in named:
        if name not in known:
            raise manifest_error(
                package, key, f"unknown dtype {name!r} (known: {', '.join(known)})"
            )


@functools.cache
def builtin_ops() -> tuple[BuiltinOp, ...]:
    """Every registered builtin package as an op, sorted by handle."""
    registry = default_registry()
    return tuple(package_op(package, registry) for package in registry.packages())


def builtin_op(op: str) -> BuiltinOp | None:
    """The builtin whose public or internal op is ``op``, if any."""
    for found in builtin_ops():
        if op in (found.op, found.builtin_op):
            return found
    return None


def public_builtin(op: str, rail: Rail | None = None) -> BuiltinOp | None:
    """The builtin whose public op is ``op`` (and whose package runs on ``rail``, if given)."""
    found = builtin_op(op)
    if found is None or found.op != op or (rail is not None and not found.supports(rail)):
        return None
    return found
