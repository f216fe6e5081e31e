"""The op contracts a manifest may name, and finding the one a package names."""

from __future__ import annotations

from pypto_build.lowering.builtin_ops import BuiltinOp, manifest_error
from pypto_build.lowering.contracts.base import Contract
from pypto_build.lowering.contracts.collective import CollectiveContract
from pypto_build.lowering.contracts.mc2 import Mc2Contract

CONTRACTS: dict[str, Contract] = {
    contract.name: contract for contract in (CollectiveContract(), Mc2Contract())
}


def contract_of(builtin: BuiltinOp) -> Contract:
    """The contract ``builtin``'s manifest names, once it has validated the manifest."""
    found = CONTRACTS.get(builtin.package.contract)
    if found is None:
        known = ", ".join(sorted(CONTRACTS))
        raise manifest_error(
            builtin.package,
            "op.contract",
            f"unknown op contract {builtin.package.contract!r} (known: {known})",
        )
    found.validate(builtin.package)
    return found
