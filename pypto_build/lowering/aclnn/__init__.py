"""What aclnn's first stage does for the fused MC2 operator
``batch_matmul_reduce_scatter_all_to_all``, as pure rules: its checks and its tiling.

Two modules that know no IR and no build, so the op's type deduction, the kernel build and the
two-stage host API apply exactly the same checks and compute exactly the same tiling:

* :mod:`~pypto_build.lowering.aclnn.rules` -- every aclnn check of the operator in aclnn's
  order, from a :class:`~pypto_build.lowering.aclnn.rules.Mc2Request` (operand shapes and dtypes,
  group names, attributes) to the checked static
  :class:`~pypto_build.lowering.aclnn.rules.Mc2Config`, or an
  :class:`~pypto_build.lowering.aclnn.rules.Mc2Error` carrying the aclnn status;
* :mod:`~pypto_build.lowering.aclnn.tiling` -- the build-time tiling of a configuration: the
  common tiling fields, the local / non-local tiles, Lite mode, the workspace, the tiling key,
  the HCCL configuration and the UB sizing.
"""
