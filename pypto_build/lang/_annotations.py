"""The annotation names, seen one way by Python and another by type checkers.

``pl.Tensor[[8, 64], pl.FP32]`` puts a list of ints where a type checker expects types, so no
static type can describe it: a real class here would make every annotation in a program file an
error. For type checkers these names are therefore ``Any`` (answered by the module
``__getattr__`` below, which exists only for them); every other ``pl``/``pld`` name keeps its
precise type, so typos and wrong op arguments are still caught. At runtime the names are the
forms of :mod:`pypto_build.lang._forms`, which build the matching IR types.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:

    def __getattr__(name: str) -> Any:
        raise AttributeError(name)

else:
    from pypto_build.lang._forms import DirectionForm, ScalarForm, TensorForm
    from pypto_build.lowering.ir import ParamDirection

    Tensor = TensorForm("pl.Tensor", distributed=False)
    DistributedTensor = TensorForm("pld.DistributedTensor", distributed=True)
    Out = DirectionForm("pl.Out", ParamDirection.Out)
    InOut = DirectionForm("pl.InOut", ParamDirection.InOut)
    Scalar = ScalarForm("pl.Scalar")
