"""kernel_config.py: upstream's format byte for byte, plus kernel binaries, read back with ast.

The first group mirrors upstream's ``tests/ut/backend/test_kernel_config_signature.py`` rows
(hw-native-sys/pypto at e2d0f78, whose ``_generate_config_file`` writes the format).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from pypto_build.chip_build import kernel_config_reader
from pypto_build.chip_build.chips import CoreType
from pypto_build.chip_build.kernel_config import (
    ArgDirection,
    KernelConfig,
    KernelConfigError,
    KernelEntry,
    OrchestrationEntry,
    OrchestrationParam,
    Runtime,
)
from pypto_build.chip_build.kernel_config_reader import read_kernel_config
from pypto_build.chip_build.kernel_config_writer import render_config, render_kernel_config
from pypto_build.chip_build.runtime_types import DataType

IN, OUT, INOUT = ArgDirection.IN, ArgDirection.OUT, ArgDirection.INOUT
IMPORT_LINE = "from simpler.task_interface import ArgDirection as _D"

MAIN = OrchestrationEntry("main")
MATMUL = KernelEntry(0, "matmul_aic", CoreType.AIC)


def is_valid_python(text: str) -> bool:
    compile(text, "kernel_config.py", "exec")
    return True


# --- upstream's rows ------------------------------------------------------------------------------


def test_signature_emitted_for_matmul() -> None:
    kernel = KernelEntry(0, "matmul_aic", CoreType.AIC, signature=(IN, IN, INOUT))
    text = render_kernel_config(MAIN, [kernel])
    assert IMPORT_LINE in text
    assert '"aicpu_thread_num": 0' in text
    assert '"signature": [_D.IN, _D.IN, _D.INOUT]' in text
    assert text.count("_D.") == 3
    assert is_valid_python(text)


def test_no_import_without_signatures() -> None:
    text = render_kernel_config(MAIN, [MATMUL])
    assert "ArgDirection" not in text
    assert '"signature"' not in text
    assert is_valid_python(text)


def test_empty_signature_is_noop() -> None:
    text = render_kernel_config(OrchestrationEntry("main", signature=()), [MATMUL])
    assert text == render_kernel_config(MAIN, [MATMUL])
    assert "ArgDirection" not in text


def test_scalars_cannot_be_emitted() -> None:
    # Signatures list tensor arguments only: a scalar has no direction member at all.
    with pytest.raises(ValueError, match="SCALAR"):
        KernelEntry(0, "k", CoreType.AIV, signature=("IN", "SCALAR"))  # type: ignore[arg-type]
    text = render_kernel_config(MAIN, [KernelEntry(0, "k", CoreType.AIV, signature=(IN, OUT))])
    assert "SCALAR" not in text


def test_directions_emitted_verbatim_in_given_order() -> None:
    kernel = KernelEntry(0, "k", CoreType.AIV, signature=(INOUT, OUT, IN, IN))
    text = render_kernel_config(MAIN, [kernel])
    assert '"signature": [_D.INOUT, _D.OUT, _D.IN, _D.IN]' in text


def test_upstream_direction_spellings_accepted() -> None:
    assert KernelEntry(0, "k", CoreType.AIV, signature=("IN", "INOUT")).signature == (  # type: ignore[arg-type]
        IN,
        INOUT,
    )


def test_partial_signatures_across_kernels() -> None:
    kernels = [
        KernelEntry(0, "k_with", CoreType.AIV, signature=(IN, OUT)),
        KernelEntry(1, "k_without", CoreType.AIV),
    ]
    text = render_kernel_config(MAIN, kernels)
    assert IMPORT_LINE in text
    assert text.count('"signature"') == 1
    assert '"signature": [_D.IN, _D.OUT]' in text
    assert is_valid_python(text)


def test_orchestration_signature_precedes_kernels() -> None:
    text = render_kernel_config(OrchestrationEntry("main", signature=(IN, OUT)), [MATMUL])
    assert IMPORT_LINE in text
    orchestration_block = text[text.index("ORCHESTRATION = {") : text.index("KERNELS = [")]
    assert '\t"signature": [_D.IN, _D.OUT],\n' in orchestration_block
    assert text.count("_D.") == 2
    assert is_valid_python(text)


def test_orchestration_and_kernel_signatures_coexist() -> None:
    kernel = KernelEntry(0, "matmul_aic", CoreType.AIC, signature=(IN, IN, INOUT))
    text = render_kernel_config(OrchestrationEntry("main", signature=(IN, INOUT)), [kernel])
    head, kernels_block = text.split("KERNELS = [")
    assert '"signature": [_D.IN, _D.INOUT]' in head
    assert '"signature": [_D.IN, _D.IN, _D.INOUT]' in kernels_block
    assert text.count("_D.") == 5
    assert is_valid_python(text)


def test_runtime_default() -> None:
    text = render_kernel_config(MAIN, [MATMUL])
    assert '"runtime": "tensormap_and_ringbuffer"' in text
    assert "# Runtime configuration for tensormap_and_ringbuffer." in text


def test_runtime_wire_names_round_trip() -> None:
    for runtime in Runtime:
        assert Runtime.from_name(runtime.value) is runtime
    assert [runtime.value for runtime in Runtime] == ["tensormap_and_ringbuffer"]


@pytest.mark.parametrize("name", ["ringbuffer", "host_build_graph"])
def test_unknown_runtime(name: str) -> None:
    message = f"Unknown runtime '{name}' \\(expected one of: tensormap_and_ringbuffer\\)"
    with pytest.raises(ValueError, match=message):
        Runtime.from_name(name)
    with pytest.raises(ValueError, match=message):
        render_kernel_config(MAIN, [MATMUL], runtime=name)


# --- exact text -----------------------------------------------------------------------------------

#: The CHIP-rail sub-build of ``tests/programs/chip_pipeline.py``: chip_pipeline(inp, out,
#: stage, data, signal, counts, recv) calls stage_step, the synthesized all_to_all_v kernel and
#: consume_step.
CHIP_PIPELINE_ORCHESTRATION = OrchestrationEntry(
    "chip_pipeline", signature=(IN, OUT, INOUT, INOUT, INOUT, INOUT, INOUT)
)
CHIP_PIPELINE_KERNELS = (
    KernelEntry(2, "consume_step", CoreType.AIV, signature=(IN, IN, OUT)),
    KernelEntry(0, "stage_step", CoreType.AIV, signature=(IN, INOUT, INOUT)),
    KernelEntry(
        1, "__builtin_all_to_all_v__fp32", CoreType.AIV, signature=(IN, INOUT, INOUT, IN, INOUT)
    ),
)

CHIP_PIPELINE_GOLDEN = """\
# Kernel and Orchestration Configuration

from pathlib import Path

from simpler.task_interface import ArgDirection as _D

_ROOT_DIR = Path(__file__).parent

# Runtime configuration for tensormap_and_ringbuffer.
# AICPU thread count 0 selects the runtime's architecture default (a2a3: 4; a5: 5).
RUNTIME_CONFIG = {
\t"runtime": "tensormap_and_ringbuffer",
\t"aicpu_thread_num": 0,
}

ORCHESTRATION = {
\t"source": str(_ROOT_DIR / "orchestration" / "chip_pipeline.cpp"),
\t"function_name": "aicpu_orchestration_entry",
\t"signature": [_D.IN, _D.OUT, _D.INOUT, _D.INOUT, _D.INOUT, _D.INOUT, _D.INOUT],
}

KERNELS = [
\t{"func_id": 0, "name": "stage_step", "source": str(_ROOT_DIR / "kernels" / "aiv" / "stage_step.cpp"), "core_type": "aiv", "signature": [_D.IN, _D.INOUT, _D.INOUT]},
\t{"func_id": 1, "name": "__builtin_all_to_all_v__fp32", "source": str(_ROOT_DIR / "kernels" / "aiv" / "__builtin_all_to_all_v__fp32.cpp"), "core_type": "aiv", "signature": [_D.IN, _D.INOUT, _D.INOUT, _D.IN, _D.INOUT]},
\t{"func_id": 2, "name": "consume_step", "source": str(_ROOT_DIR / "kernels" / "aiv" / "consume_step.cpp"), "core_type": "aiv", "signature": [_D.IN, _D.IN, _D.OUT]},
]
"""  # noqa: E501


def test_chip_pipeline_golden_sorted_by_func_id() -> None:
    text = render_kernel_config(CHIP_PIPELINE_ORCHESTRATION, CHIP_PIPELINE_KERNELS)
    assert text == CHIP_PIPELINE_GOLDEN


def test_golden_without_signatures_and_with_sdma() -> None:
    text = render_kernel_config(
        OrchestrationEntry("main"),
        [KernelEntry(0, "mm", CoreType.AIC)],
        enable_sdma=True,
    )
    assert text == (
        "# Kernel and Orchestration Configuration\n"
        "\n"
        "from pathlib import Path\n"
        "\n"
        "_ROOT_DIR = Path(__file__).parent\n"
        "\n"
        "# Runtime configuration for tensormap_and_ringbuffer.\n"
        "# AICPU thread count 0 selects the runtime's architecture default (a2a3: 4; a5: 5).\n"
        "RUNTIME_CONFIG = {\n"
        '\t"runtime": "tensormap_and_ringbuffer",\n'
        '\t"aicpu_thread_num": 0,\n'
        '\t"enable_sdma": True,\n'
        "}\n"
        "\n"
        "ORCHESTRATION = {\n"
        '\t"source": str(_ROOT_DIR / "orchestration" / "main.cpp"),\n'
        '\t"function_name": "aicpu_orchestration_entry",\n'
        "}\n"
        "\n"
        "KERNELS = [\n"
        '\t{"func_id": 0, "name": "mm", "source": str(_ROOT_DIR / "kernels" / "aic" / "mm.cpp"),'
        ' "core_type": "aic"},\n'
        "]\n"
    )


def test_binary_is_the_last_key_and_only_when_known() -> None:
    kernels = [
        KernelEntry(0, "a", CoreType.AIV, signature=(IN,), binary="kernels/aiv/a.o"),
        KernelEntry(1, "b", CoreType.AIC, binary="kernels/aic/b.so"),
        KernelEntry(2, "c", CoreType.AIV),
    ]
    lines = render_kernel_config(MAIN, kernels).splitlines()
    kernel_lines = lines[lines.index("KERNELS = [") + 1 : -1]
    assert kernel_lines[0].endswith(
        '"signature": [_D.IN], "binary": str(_ROOT_DIR / "kernels" / "aiv" / "a.o")},'
    )
    assert kernel_lines[1].endswith(
        '"core_type": "aic", "binary": str(_ROOT_DIR / "kernels" / "aic" / "b.so")},'
    )
    assert '"binary"' not in kernel_lines[2]


def test_without_orchestration_the_block_is_omitted() -> None:
    text = render_kernel_config(None, [MATMUL])
    assert "ORCHESTRATION" not in text
    assert text.endswith(
        "}\n\nKERNELS = [\n"
        '\t{"func_id": 0, "name": "matmul_aic", '
        '"source": str(_ROOT_DIR / "kernels" / "aic" / "matmul_aic.cpp"), "core_type": "aic"},\n'
        "]\n"
    )
    assert is_valid_python(text)


def test_empty_kernel_list() -> None:
    assert render_kernel_config(MAIN, []).endswith("}\n\nKERNELS = [\n]\n")


def test_generated_file_runs_and_resolves_paths_under_its_directory(tmp_path: Path) -> None:
    # No signatures, so the file needs nothing beyond the standard library to execute.
    path = tmp_path / "kernel_config.py"
    kernel = KernelEntry(0, "mm", CoreType.AIC, binary="kernels/aic/mm.o")
    path.write_text(render_kernel_config(MAIN, [kernel]), encoding="utf-8")
    namespace: dict[str, object] = {"__file__": str(path)}
    exec(compile(path.read_text(encoding="utf-8"), str(path), "exec"), namespace)
    assert namespace["ORCHESTRATION"] == {
        "source": str(tmp_path / "orchestration" / "main.cpp"),
        "function_name": "aicpu_orchestration_entry",
    }
    assert namespace["KERNELS"] == [
        {
            "func_id": 0,
            "name": "mm",
            "source": str(tmp_path / "kernels" / "aic" / "mm.cpp"),
            "core_type": "aic",
            "binary": str(tmp_path / "kernels" / "aic" / "mm.o"),
        }
    ]


# --- validation -----------------------------------------------------------------------------------


def test_duplicate_func_id_rejected() -> None:
    kernels = [KernelEntry(0, "a", CoreType.AIV), KernelEntry(0, "b", CoreType.AIV)]
    with pytest.raises(KernelConfigError, match="kernels 'a' and 'b' share func_id 0"):
        render_kernel_config(MAIN, kernels)


def test_duplicate_kernel_source_rejected() -> None:
    kernels = [KernelEntry(0, "a", CoreType.AIV), KernelEntry(1, "a", CoreType.AIV)]
    with pytest.raises(KernelConfigError, match=r"kernel kernels/aiv/a\.cpp is listed twice"):
        render_kernel_config(MAIN, kernels)


@pytest.mark.parametrize("name", ["", "1st", "a-b", 'x"y', "../k", "a b"])
def test_names_must_be_identifiers(name: str) -> None:
    with pytest.raises(KernelConfigError, match="is not a C identifier"):
        KernelEntry(0, name, CoreType.AIV)
    with pytest.raises(KernelConfigError, match="is not a C identifier"):
        OrchestrationEntry(name)


def test_negative_func_id_rejected() -> None:
    with pytest.raises(KernelConfigError, match="negative func_id -1"):
        KernelEntry(-1, "k", CoreType.AIV)


@pytest.mark.parametrize(
    "binary",
    [
        "kernels/aic/k.o",  # wrong core type directory
        "kernels/aiv/other.o",
        "kernels/aiv/k.cpp",  # would overwrite the source
        "kernels/aiv/k.",
        "kernels/aiv/k",
        "/abs/kernels/aiv/k.o",
        "kernels/aiv/k.o/x",
    ],
)
def test_binary_must_sit_at_its_sources_place(binary: str) -> None:
    with pytest.raises(KernelConfigError, match="must sit at its source's place"):
        KernelEntry(0, "k", CoreType.AIV, binary=binary)


def test_with_binaries_records_compiled_kernels() -> None:
    config = KernelConfig(
        MAIN, (KernelEntry(0, "a", CoreType.AIV), KernelEntry(1, "b", CoreType.AIC))
    )
    built = config.with_binaries({"kernels/aic/b.cpp": "kernels/aic/b.o"})
    assert [kernel.binary for kernel in built.kernels] == [None, "kernels/aic/b.o"]
    with pytest.raises(KernelConfigError, match=r"unknown kernels: kernels/aiv/z\.cpp"):
        config.with_binaries({"kernels/aiv/z.cpp": "kernels/aiv/z.o"})


def test_a_mix_kernel_is_listed_once_per_core_type() -> None:
    mix = (KernelEntry(0, "m", CoreType.AIC), KernelEntry(1, "m", CoreType.AIV))
    config = KernelConfig(MAIN, mix)
    assert [kernel.source for kernel in config.kernels] == [
        "kernels/aic/m.cpp",
        "kernels/aiv/m.cpp",
    ]
    built = config.with_binaries({"kernels/aiv/m.cpp": "kernels/aiv/m.o"})
    assert [kernel.binary for kernel in built.kernels] == [None, "kernels/aiv/m.o"]


# --- reading back ---------------------------------------------------------------------------------

ROUND_TRIP_CASES = [
    KernelConfig(CHIP_PIPELINE_ORCHESTRATION, CHIP_PIPELINE_KERNELS),
    KernelConfig(MAIN, (MATMUL,), enable_sdma=True),
    KernelConfig(None, ()),
    KernelConfig(
        OrchestrationEntry("builtin_tensor_all_to_all_v__fp32", signature=(IN, OUT, OUT, IN, OUT)),
        (
            KernelEntry(
                0,
                "builtin_tensor_all_to_all_v__fp32_kernel",
                CoreType.AIV,
                signature=(IN, OUT, OUT, IN, OUT),
                binary="kernels/aiv/builtin_tensor_all_to_all_v__fp32_kernel.o",
            ),
            KernelEntry(3, "mm", CoreType.AIC, binary="kernels/aic/mm.so"),
        ),
    ),
]


@pytest.mark.parametrize("config", ROUND_TRIP_CASES)
def test_round_trip(config: KernelConfig) -> None:
    text = render_kernel_config(
        config.orchestration, config.kernels, config.runtime, config.enable_sdma
    )
    assert text == render_config(config)
    assert read_kernel_config(text) == config


def test_read_from_path(tmp_path: Path) -> None:
    path = tmp_path / "kernel_config.py"
    path.write_text(CHIP_PIPELINE_GOLDEN, encoding="utf-8")
    config = read_kernel_config(path)
    assert config.orchestration is not None
    assert config.orchestration.source == "orchestration/chip_pipeline.cpp"
    assert config.orchestration.function_name == "aicpu_orchestration_entry"
    assert [(k.func_id, k.name, k.source) for k in config.kernels] == [
        (0, "stage_step", "kernels/aiv/stage_step.cpp"),
        (1, "__builtin_all_to_all_v__fp32", "kernels/aiv/__builtin_all_to_all_v__fp32.cpp"),
        (2, "consume_step", "kernels/aiv/consume_step.cpp"),
    ]
    assert config.kernels[1].signature == (IN, INOUT, INOUT, IN, INOUT)


def test_reader_never_executes_the_file() -> None:
    text = CHIP_PIPELINE_GOLDEN + "raise SystemExit('executed')\n"
    assert read_kernel_config(text).runtime is Runtime.TENSORMAP_AND_RINGBUFFER


STAGE_CORE_TYPE = '"core_type": "aiv", "signature": [_D.IN, _D.INOUT'

#: (text in the golden, its replacement, expected error) — each edit leaves our format.
READER_ERRORS = [
    (
        '"runtime": "tensormap_and_ringbuffer"',
        '"runtime": "ringbuffer"',
        r"^kernel_config.py:12: Unknown runtime 'ringbuffer'",
    ),
    ('"aicpu_thread_num": 0', '"aicpu_thread_num": 4', "aicpu_thread_num must be 0"),
    (
        "[_D.IN, _D.INOUT, _D.INOUT]",
        "[_D.SCALAR, _D.INOUT, _D.INOUT]",
        r"^kernel_config.py:23: unsupported signature entry _D.SCALAR",
    ),
    ('"consume_step.cpp")', '"consume_step.cpp").upper()', "kernel source must be str"),
    ('"stage_step.cpp"', '"other.cpp"', "source of kernel 'stage_step' is 'kernels/aiv/other.cpp'"),
    ('"func_id": 2', '"func_id": "2"', "func_id must be an integer literal"),
    ('"func_id": 2', '"func_id": 1', "share func_id 1"),
    (STAGE_CORE_TYPE, STAGE_CORE_TYPE.replace("aiv", "vec"), "unknown core_type 'vec'"),
    (
        STAGE_CORE_TYPE,
        '"external": True, ' + STAGE_CORE_TYPE,
        "unknown key 'external' in a KERNELS entry",
    ),
    ('"function_name": "aicpu_orchestration_entry",\n', "", "ORCHESTRATION lacks 'function_name'"),
    ("KERNELS = [", "KERNELS = (", r"^kernel_config.py:\d+: "),
    ('/ "orchestration" /', '/ "orch" /', "is not 'orchestration/<name>.cpp'"),
    ('/ "orchestration" /', '/ ".." /', "invalid path component '..'"),
]


@pytest.mark.parametrize(("old", "new", "message"), READER_ERRORS)
def test_reader_rejects_what_it_did_not_write(old: str, new: str, message: str) -> None:
    assert old in CHIP_PIPELINE_GOLDEN
    text = CHIP_PIPELINE_GOLDEN.replace(old, new, 1)
    with pytest.raises(KernelConfigError, match=message):
        read_kernel_config(text)


def test_reader_requires_kernels_and_runtime_config() -> None:
    with pytest.raises(KernelConfigError, match="RUNTIME_CONFIG and KERNELS must both be assigned"):
        read_kernel_config("RUNTIME_CONFIG = {}\n")


# --- the orchestration's parameters ---------------------------------------------------------------

#: A pipeline with a tensor, a window, a scalar and the window's context.
PARAMS = (
    OrchestrationParam("inp", "tensor", "In", (8, 64), DataType.FLOAT32),
    OrchestrationParam("stage", "window", "InOut", (8, 64), DataType.FLOAT32),
    OrchestrationParam("rows", "scalar", dtype=DataType.INT64),
    OrchestrationParam("stage__ctx", "comm_context", window="stage"),
)
WITH_PARAMS = OrchestrationEntry("pipe", signature=(IN, INOUT), params=PARAMS)


def test_params_follow_the_signature_one_line_each() -> None:
    text = render_kernel_config(WITH_PARAMS, [])
    assert (
        '\t"signature": [_D.IN, _D.INOUT],\n'
        '\t"params": [\n'
        '\t\t{"name": "inp", "kind": "tensor", "direction": "In", "shape": [8, 64], '
        '"dtype": "fp32"},\n'
        '\t\t{"name": "stage", "kind": "window", "direction": "InOut", "shape": [8, 64], '
        '"dtype": "fp32"},\n'
        '\t\t{"name": "rows", "kind": "scalar", "dtype": "int64"},\n'
        '\t\t{"name": "stage__ctx", "kind": "comm_context", "window": "stage"},\n'
        "\t],\n"
    ) in text
    assert read_kernel_config(text).orchestration == WITH_PARAMS
    with_binary = read_kernel_config(text).with_binaries({}, "sim/orchestration/pipe.so")
    assert read_kernel_config(render_config(with_binary)) == with_binary


def test_a_window_parameter_is_bound_as_a_tensor() -> None:
    assert PARAMS[1].parameter().is_tensor
    assert not PARAMS[2].parameter().is_tensor
    with pytest.raises(KernelConfigError, match="a context takes no input"):
        PARAMS[3].parameter()


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        (
            lambda: OrchestrationEntry("pipe", signature=(IN, IN), params=PARAMS),
            r"the tensor parameters \(IN, INOUT\) do not match the signature \(IN, IN\)",
        ),
        (
            lambda: OrchestrationEntry(
                "pipe",
                (IN,),
                params=(PARAMS[0], OrchestrationParam("c", "comm_context", window="inp")),
            ),
            "context c names 'inp', which is no window parameter",
        ),
        (lambda: OrchestrationParam("n", "scalar", "Out", dtype=DataType.INT64), "has shape"),
        (lambda: OrchestrationParam("t", "tensor", "Up", (1,), DataType.INT8), "unknown direction"),
        (lambda: OrchestrationParam("t", "tensor", "In", (1,)), "a tensor has an element type"),
    ],
)
def test_params_must_describe_the_signature(entry: Callable[[], object], message: str) -> None:
    with pytest.raises(KernelConfigError, match=message):
        entry()


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ('"dtype": "int64"', '"dtype": "int65"', "element type 'int65' is not one of"),
        ('"shape": [8, 64], "dtype": "fp32"}', '"shape": [8, -1], "dtype": "fp32"}', "shape"),
        ('"kind": "scalar"', '"kind": "vector"', "unknown kind 'vector'"),
        ('"window": "stage"', '"window": STAGE', "a params entry holds literals only"),
        ('"window": "stage"', '"window": "stage", "size": 4', "unknown key 'size' in a params"),
    ],
)
def test_the_reader_checks_params(old: str, new: str, message: str) -> None:
    text = render_kernel_config(WITH_PARAMS, [])
    assert old in text
    with pytest.raises(KernelConfigError, match=message):
        read_kernel_config(text.replace(old, new, 1))


# --- a builtin kernel's variant ------------------------------------------------------------------

#: A MIX builtin configured beyond its dtype (values as an MC2 tiling gives them), its AIV half
#: built.
VARIANT = (("tiling_key", "1000000000000001001"), ("is_lite", "true"), ("alg", "AlltoAll=a;b"))
MIX_WITH_VARIANT = (
    KernelEntry(0, "bmm", CoreType.AIC, signature=(IN, OUT), variant=VARIANT),
    KernelEntry(1, "bmm", CoreType.AIV, (IN, OUT), "sim/kernels/aiv/bmm.so", variant=VARIANT),
)
VARIANT_BLOCK = (
    '"variant": {\n'
    '\t\t"tiling_key": "1000000000000001001",\n'
    '\t\t"is_lite": "true",\n'
    '\t\t"alg": "AlltoAll=a;b",\n'
    "\t}"
)


def test_a_variant_follows_the_signature_one_variable_a_line() -> None:
    text = render_kernel_config(MAIN, MIX_WITH_VARIANT)
    assert text.endswith(
        "KERNELS = [\n"
        '\t{"func_id": 0, "name": "bmm", "source": str(_ROOT_DIR / "kernels" / "aic" / "bmm.cpp"), '
        f'"core_type": "aic", "signature": [_D.IN, _D.OUT], {VARIANT_BLOCK}}},\n'
        '\t{"func_id": 1, "name": "bmm", "source": str(_ROOT_DIR / "kernels" / "aiv" / "bmm.cpp"), '
        f'"core_type": "aiv", "signature": [_D.IN, _D.OUT], {VARIANT_BLOCK}, '
        '"binary": str(_ROOT_DIR / "sim" / "kernels" / "aiv" / "bmm.so")},\n'
        "]\n"
    )
    assert is_valid_python(text)


def test_a_variant_round_trips_and_survives_recording_binaries() -> None:
    config = KernelConfig(MAIN, MIX_WITH_VARIANT)
    assert read_kernel_config(render_config(config)) == config
    built = config.with_binaries({"kernels/aic/bmm.cpp": "sim/kernels/aic/bmm.so"})
    assert [kernel.variant for kernel in built.kernels] == [VARIANT, VARIANT]


@pytest.mark.parametrize(
    ("variant", "message"),
    [
        ((("a-b", "1"),), "variant variable of kernel 'bmm' 'a-b' is not a C identifier"),
        ((("a", "1"), ("a", "2")), "kernel 'bmm': a variant variable is named twice"),
        ((("a", 1),), "kernel 'bmm': variant variable a must be a string"),
    ],
)
def test_a_variant_names_identifiers_once_with_string_values(
    variant: tuple[tuple[str, str], ...], message: str
) -> None:
    with pytest.raises(KernelConfigError, match=message):
        KernelEntry(0, "bmm", CoreType.AIC, variant=variant)


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        (VARIANT_BLOCK, '"variant": {}', "variant must be a non-empty dict literal"),
        (VARIANT_BLOCK, '"variant": VARIANT', "variant must be a non-empty dict literal"),
        ('"is_lite": "true"', '"is_lite": True', "a variant value must be a string literal"),
        ('"is_lite": "true"', "**EXTRA", "variant must be a dict literal without \\*\\* entries"),
        ('"is_lite": "true"', '"is_lite": "true", "is_lite": "false"', "named twice"),
    ],
)
def test_the_reader_checks_a_variant(old: str, new: str, message: str) -> None:
    text = render_kernel_config(MAIN, MIX_WITH_VARIANT[:1])
    assert old in text
    with pytest.raises(KernelConfigError, match=message):
        read_kernel_config(text.replace(old, new, 1))


# --- the reader's fast path for rendered files ----------------------------------------------------

WITH_INCLUDES = KernelConfig(
    MAIN,
    (
        KernelEntry(0, "k0", CoreType.AIV, (IN, INOUT), "sim/kernels/aiv/k0.so", ("include",)),
        KernelEntry(1, "k1", CoreType.AIC, include_dirs=("include", "more/headers")),
    ),
)


@pytest.mark.parametrize("config", [*ROUND_TRIP_CASES, WITH_INCLUDES])
def test_a_rendered_file_is_read_without_a_syntax_tree(config: KernelConfig) -> None:
    assert kernel_config_reader._read_rendered(render_config(config)) == config


def test_a_variant_or_a_foreign_spelling_goes_through_the_syntax_tree() -> None:
    variant = KernelConfig(MAIN, (KernelEntry(0, "mc2", CoreType.AIV, variant=VARIANT),))
    assert kernel_config_reader._read_rendered(render_config(variant)) is None
    assert read_kernel_config(render_config(variant)) == variant
    respaced = render_config(WITH_INCLUDES).replace('"func_id": 1,', '"func_id":1,')
    assert kernel_config_reader._read_rendered(respaced) is None
    assert read_kernel_config(respaced) == WITH_INCLUDES


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ('[str(_ROOT_DIR / "include")]', '[str(_ROOT_DIR / "..")]', "invalid path component"),
        ('"func_id": 1, "name": "k1"', '"func_id": 0, "name": "k1"', "share func_id 0"),
        ('/ "k0.so")', '/ "k0.cpp")', "must sit at its source's place"),
        ("_D.IN, _D.INOUT]", "_D.IN, _D.SCALAR]", "unsupported signature entry _D.SCALAR"),
    ],
)
def test_a_kernel_line_the_fast_path_refuses_gets_the_readers_error(
    old: str, new: str, message: str
) -> None:
    text = render_config(WITH_INCLUDES)
    assert old in text
    with pytest.raises(KernelConfigError, match=message):
        read_kernel_config(text.replace(old, new, 1))
