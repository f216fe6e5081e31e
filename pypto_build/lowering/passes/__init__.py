"""The collective lowering passes and the default pipeline that orders them.

The order is PyPTO's default pipeline (hw-native-sys/pypto ``python/pypto/ir/pass_manager.py``,
listed in its ``docs/en/dev/passes/index.md`` at 1698bae), and it is a correctness condition, not a
preference: the CHIP rail's rewrite must come before DeriveCallDirections and
AutoDeriveTaskDependencies (so the builtin collective gets directions and TensorMap edges like any
kernel); the HOST rail needs the comm domains made explicit first; both rails run before
MaterializeDistTensorCtx (which adds the kernels' CommCtx arguments); CheckLegality closes the
pipeline, owning every diagnostic about what a build can generate from the lowered program. Each
pass declares what it requires and produces, so the :class:`PassManager` refuses any other order.
"""

from pypto_build.lowering.passes.auto_derive_task_dependencies import AutoDeriveTaskDependencies
from pypto_build.lowering.passes.base import (
    Instrument,
    Pass,
    PassManager,
    PipelineOrderError,
    Property,
)
from pypto_build.lowering.passes.check_legality import CheckLegality
from pypto_build.lowering.passes.derive_call_directions import DeriveCallDirections
from pypto_build.lowering.passes.fuse_create_assemble_to_slice import FuseCreateAssembleToSlice
from pypto_build.lowering.passes.lower_composite_ops import LowerCompositeOps
from pypto_build.lowering.passes.lower_host_tensor_collectives import LowerHostTensorCollectives
from pypto_build.lowering.passes.lower_l2_tensor_collectives import LowerL2TensorCollectives
from pypto_build.lowering.passes.materialize_comm_domain_scopes import MaterializeCommDomainScopes
from pypto_build.lowering.passes.materialize_dist_tensor_ctx import MaterializeDistTensorCtx


def default_pipeline(chips: tuple[str, ...] = ()) -> PassManager:
    """The lowering pipeline for a build targeting ``chips`` (empty: chip not known)."""
    return PassManager(
        (
            LowerCompositeOps(),
            FuseCreateAssembleToSlice(),
            LowerL2TensorCollectives(chips),
            DeriveCallDirections(),
            AutoDeriveTaskDependencies(),
            MaterializeCommDomainScopes(),
            LowerHostTensorCollectives(chips),
            MaterializeDistTensorCtx(),
            CheckLegality(chips),
        )
    )


#: Names of the default pipeline's passes in order (the choices of ``lower --after``).
PASS_NAMES: tuple[str, ...] = default_pipeline().names()

__all__ = [
    "PASS_NAMES",
    "AutoDeriveTaskDependencies",
    "CheckLegality",
    "DeriveCallDirections",
    "FuseCreateAssembleToSlice",
    "Instrument",
    "LowerCompositeOps",
    "LowerHostTensorCollectives",
    "LowerL2TensorCollectives",
    "MaterializeCommDomainScopes",
    "MaterializeDistTensorCtx",
    "Pass",
    "PassManager",
    "PipelineOrderError",
    "Property",
    "default_pipeline",
]
