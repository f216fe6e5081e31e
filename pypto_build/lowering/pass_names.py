"""The name of every pass of the pipeline, once: the pass declares it (``Pass.name``), and every
diagnostic raised on its behalf, also by the analyses and legality checks below the passes,
names it as its phase (``[CheckLegality]``). A test holds each name to its pass's class name.
"""

from __future__ import annotations

LOWER_COMPOSITE_OPS = "LowerCompositeOps"
FUSE_CREATE_ASSEMBLE_TO_SLICE = "FuseCreateAssembleToSlice"
LOWER_L2_TENSOR_COLLECTIVES = "LowerL2TensorCollectives"
DERIVE_CALL_DIRECTIONS = "DeriveCallDirections"
AUTO_DERIVE_TASK_DEPENDENCIES = "AutoDeriveTaskDependencies"
MATERIALIZE_COMM_DOMAIN_SCOPES = "MaterializeCommDomainScopes"
LOWER_HOST_TENSOR_COLLECTIVES = "LowerHostTensorCollectives"
MATERIALIZE_DIST_TENSOR_CTX = "MaterializeDistTensorCtx"
CHECK_LEGALITY = "CheckLegality"
