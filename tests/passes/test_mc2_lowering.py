"""The MC2 op through the pass pipeline: where a program may call it (a CHIP orchestration for a3)
and what the lowering refuses, each at the call: a workspace window smaller than the tiling's
user part (naming the bytes it needs), a HOST orchestrator, an InCore function, chips a2 and
a5. Each is a diagnostic of the pass that meets it first, not of CheckLegality."""

from __future__ import annotations

from pathlib import Path

import pytest

from pypto_build.lowering.diagnostics import ProgramError
from pypto_build.lowering.ir import Call
from pypto_build.lowering.ir.names import template_vars
from pypto_build.lowering.ir.walk import walk_calls
from pypto_build.lowering.lower import lower_path

OP = "pld.tensor.batch_matmul_reduce_scatter_all_to_all"
#: ep 2, tp 2, E 4, C 4, H 4, M 4, y_shard_type 1 (C/tp = 2: Lite): the workspace's user part
#: is (2*E*C/tp*H + E*C*H) + max(r*M/tp, r*M/tp*(ep-1)) + max(r*H, r*H*(ep-1)) elements with
#: r = C/tp * E/ep * tp = 8 rows: 64 + 64 + 16 + 32 = 176 elements, 352 bytes.
USER_BYTES = 352

HEADER = """\
import pypto.language as pl
import pypto.language.distributed as pld

EP = 2
TP = 2
E = 4
C = 4
H = 4
M = 4
"""
CALL = (
    "        out = pld.tensor.batch_matmul_reduce_scatter_all_to_all(\n"
    "            x, w, None, out, ws, ep_world_size=EP, tp_world_size=TP, y_shard_type=1\n"
    "        )\n"
)
PARAMS = (
    "        x: pl.Tensor[[E // EP, EP * C, M // TP], pl.FP16],\n"
    "        w: pl.Tensor[[E // EP, M // TP, H], pl.FP16],\n"
    "        out: pl.Out[pl.Tensor[[E, C // TP, H], pl.FP16]],\n"
)


def program(decorator: str, name: str, params: str, body: str, returns: str = "") -> str:
    """A one-function program: ``@pl.function(<decorator>) def <name>(self, <params>)``."""
    return (
        f"{HEADER}\n\n@pl.program\nclass Moe:\n    @pl.function({decorator})\n"
        f"    def {name}(\n        self,\n{PARAMS}{params}    ){returns}:\n{body}"
    )


def chip_program(workspace: str) -> str:
    """The op in a CHIP orchestration with a workspace window ``DistributedTensor<workspace>``."""
    window = f"        ws: pl.InOut[pld.DistributedTensor{workspace}],\n"
    return program("type=pl.FunctionType.Orchestration", "layer", window, CALL)


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "program.py"
    path.write_text(text, encoding="utf-8")
    return path


def refusal(path: Path, chips: tuple[str, ...] = ("a3",)) -> ProgramError:
    with pytest.raises(ProgramError) as error:
        lower_path(path, chips)
    return error.value


def the_call(path: Path) -> Call:
    (program,) = lower_path(path, ("a3",))
    layer = program.function("layer")
    assert layer is not None
    (call,) = walk_calls(layer.body)
    return call


@pytest.mark.parametrize(
    "workspace",
    [f"[[{USER_BYTES // 2}], pl.FP16]", f"[[{USER_BYTES}], pl.INT8]", "[[2, 64], pl.FP32]"],
)
def test_a_workspace_of_any_dtype_holding_the_user_part_is_accepted(
    tmp_path: Path, workspace: str
) -> None:
    call = the_call(write(tmp_path, chip_program(workspace)))
    assert call.callee_name == "__builtin_bmm_rs_a2a__fp16"


def test_lower_shows_the_tiling_on_the_kernel(tmp_path: Path) -> None:
    path = write(tmp_path, chip_program(f"[[{USER_BYTES // 2}], pl.FP16]"))
    (program,) = lower_path(path, ("a3",))
    kernel = program.function("__builtin_bmm_rs_a2a__fp16")
    assert kernel is not None
    variables = template_vars(kernel)
    assert variables.startswith("x_cpp=half,bias_cpp=half,version=2,hcomm_cnt=2,")
    assert f",workspace_user_bytes={USER_BYTES}," in variables
    assert ",tiling_key=1000000000000001001,is_lite=true," in variables


@pytest.mark.parametrize(
    ("workspace", "have"),
    [(f"[[{USER_BYTES // 2 - 1}], pl.FP16]", USER_BYTES - 2), ("[[87], pl.FP32]", 348)],
)
def test_a_smaller_workspace_names_the_bytes_the_kernel_needs(
    tmp_path: Path, workspace: str, have: int
) -> None:
    error = refusal(write(tmp_path, chip_program(workspace)))
    assert error.phase == "frontend"
    assert str(error.message) == (
        f"{OP} workspace holds {have} bytes; the kernel needs at least {USER_BYTES} bytes (the "
        "user part of the workspace the tiling computes for this configuration, without the "
        "16777216 bytes of the runtime's own part)"
    )


@pytest.mark.parametrize("chip", ["a2", "a5"])
def test_only_a3_builds_the_op(tmp_path: Path, chip: str) -> None:
    error = refusal(write(tmp_path, chip_program(f"[[{USER_BYTES}], pl.INT8]")), (chip,))
    assert error.phase == "LowerL2TensorCollectives"
    assert str(error.message) == (
        f"{OP} requires chip a3 (the operator registers only ascend910_93, Atlas A3); the build "
        f"targets {chip}"
    )


def test_a_host_orchestrator_cannot_call_it(tmp_path: Path) -> None:
    window = (
        f'        ws_buf = pld.alloc_window_buffer({USER_BYTES}, name="ws")\n'
        f"        ws = pld.window(ws_buf, [{USER_BYTES}], dtype=pl.INT8)\n"
    )
    text = program(
        "type=pl.FunctionType.Orchestration, level=pl.Level.HOST", "host", "", window + CALL
    )
    error = refusal(write(tmp_path, text))
    assert error.phase == "LowerHostTensorCollectives"
    assert str(error.message) == (
        f"{OP} is not supported in a HOST orchestrator: it runs only on the CHIP rail (call it "
        "from a CHIP Orchestration function)"
    )


def test_an_incore_function_cannot_call_it(tmp_path: Path) -> None:
    window = f"        ws: pl.InOut[pld.DistributedTensor[[{USER_BYTES}], pl.INT8]],\n"
    returns = " -> pl.Tensor[[E, C // TP, H], pl.FP16]"
    text = program(
        "type=pl.FunctionType.InCore", "kernel", window, CALL + "        return out\n", returns
    )
    error = refusal(write(tmp_path, text))
    assert error.phase == "LowerCompositeOps"
    assert str(error.message) == (
        f"{OP} is not supported in an InCore function: it runs only as a managed task of its "
        "builtin package, which has no InCore (composite) form; call it from a CHIP "
        "Orchestration function"
    )
