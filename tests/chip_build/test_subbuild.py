"""The sub-build writer: tree layout, kernel_config.py, manifest, copied kernels, diagnostics and
atomic publishing."""

from __future__ import annotations

import hashlib
import json
import os
import textwrap
from pathlib import Path

import pytest
from _support.rendered import ALL_CHIPS, PROGRAMS_DIR, RENDERED_STEMS, Render, sub_builds

from pypto_build.builtins import include_dir
from pypto_build.chip_build.kernel_config import ArgDirection
from pypto_build.chip_build.kernel_config_reader import read_kernel_config
from pypto_build.chip_build.runtime_types import DataType
from pypto_build.chip_build.subbuild import (
    LOG_DIR,
    ChipTree,
    RenderError,
    default_chips,
    lower_file,
    lower_for_default_chips,
    plan_chip,
    render_subbuilds,
    write_trees,
)
from pypto_build.chip_build.tree_manifest import verify_manifest
from pypto_build.lowering.builtin_ops import BuiltinOp
from pypto_build.lowering.diagnostics import ProgramError
from pypto_build.tree_layout import KERNELS, RELATIVE, SubBuildLayout, TreeLayout

VARIANT = RELATIVE.sub_build("builtin.tensor.all_to_all_v__int8").root.as_posix()


def _files(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())


@pytest.mark.parametrize("chip", ALL_CHIPS)
def test_chip_rail_program_layout(rendered: Render, chip: str) -> None:
    root = rendered("chip_pipeline") / chip
    assert _files(root) == [
        "distributed_meta.json",
        "manifest.json",
        "next_levels/chip_pipeline/include/pypto_build/all_to_all_v_protocol.h",
        "next_levels/chip_pipeline/include/pypto_build/kernel_abi.h",
        "next_levels/chip_pipeline/include/pypto_build/orchestration.h",
        "next_levels/chip_pipeline/include/pypto_build/portability.h",
        "next_levels/chip_pipeline/kernel_config.py",
        "next_levels/chip_pipeline/kernels/aiv/__builtin_all_to_all_v__fp32.cpp",
        "next_levels/chip_pipeline/kernels/aiv/consume_step.cpp",
        "next_levels/chip_pipeline/kernels/aiv/stage_step.cpp",
        "next_levels/chip_pipeline/orchestration/chip_pipeline.cpp",
        "orchestration/host_orch.py",
    ]
    # The headers are copies of the package's own: the tree needs nothing outside itself.
    for header in ("kernel_abi.h", "orchestration.h", "portability.h"):
        copied = TreeLayout(root).sub_build("chip_pipeline").include / "pypto_build" / header
        assert copied.read_bytes() == (include_dir() / "pypto_build" / header).read_bytes()
    # A CHIP-only program has no HOST-rail variant sub-build.
    assert not list(TreeLayout(root).next_levels.glob("builtin.tensor.*"))


def test_host_rail_program_layout(rendered: Render) -> None:
    root = rendered("host_rail_int8") / "a3"
    assert _files(root / VARIANT) == [
        "include/pypto_build/all_to_all_v_protocol.h",
        "include/pypto_build/kernel_abi.h",
        "include/pypto_build/orchestration.h",
        "include/pypto_build/portability.h",
        "kernel_config.py",
        "kernels/aiv/builtin_tensor_all_to_all_v__int8_kernel.cpp",
        "orchestration/builtin_tensor_all_to_all_v__int8.cpp",
    ]
    assert sorted(p.name for p in TreeLayout(root).next_levels.iterdir()) == [
        "builtin.tensor.all_to_all_v__int8",
        "consume_orch",
        "stage_orch",
    ]
    assert TreeLayout(root).host_module.is_file()


def test_a_build_holds_one_host_orchestrator(tmp_path: Path) -> None:
    """PyPTO's L3 loader runs one orchestration/host_orch.py per tree: a second HOST
    orchestrator, in the same program or another, is refused with both names."""
    programs = [
        source
        for stem in ("host_rail_int8", "chip_pipeline")
        for source in lower_file(PROGRAMS_DIR / f"{stem}.py", ("a3",))
    ]
    with pytest.raises(ProgramError, match="would share one chip tree") as caught:
        render_subbuilds(programs, ["a3"], tmp_path / "out", source_root=PROGRAMS_DIR)
    assert "HOST orchestrator 'host_orch' of program 'ChipPipeline'" in str(caught.value)
    assert "HOST orchestrator 'host_orch' of program 'HostRailInt8'" in str(caught.value)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("chip", "method"), [("a2", "set_block_num"), ("a3", "set_block_num"), ("a5", "set_core_num")]
)
def test_host_rail_entry_uses_the_chips_launch_spec_method(
    rendered: Render, chip: str, method: str
) -> None:
    entry = SubBuildLayout(rendered("host_rail_int8") / chip / VARIANT).orchestration_dir
    text = (entry / "builtin_tensor_all_to_all_v__int8.cpp").read_text()
    assert f"params.launch_spec.{method}(blocks);" in text
    assert "{{" not in text


@pytest.mark.parametrize("stem", RENDERED_STEMS)
def test_kernel_config_compiles_and_lists_every_kernel(rendered: Render, stem: str) -> None:
    builds = sub_builds(rendered(stem))
    assert builds
    for build in builds:
        text = SubBuildLayout(build).kernel_config.read_text()
        compile(text, str(SubBuildLayout(build).kernel_config), "exec")
        config = read_kernel_config(SubBuildLayout(build).kernel_config)
        listed = sorted(kernel.source for kernel in config.kernels)
        assert listed == sorted(
            p.relative_to(build).as_posix() for p in (build / KERNELS).rglob("*.cpp")
        )
        assert config.orchestration is not None
        assert (build / config.orchestration.source).is_file()


def test_kernel_config_signatures_and_func_ids(rendered: Render) -> None:
    config = read_kernel_config(
        TreeLayout(rendered("chip_pipeline") / "a3").sub_build("chip_pipeline").kernel_config
    )
    IN, OUT, INOUT = ArgDirection.IN, ArgDirection.OUT, ArgDirection.INOUT
    # Kernels in order of first call; signatures list tensors only (no CommCtx, no scalars).
    assert [(k.func_id, k.name, k.signature) for k in config.kernels] == [
        (0, "stage_step", (IN, INOUT, INOUT)),
        (1, "__builtin_all_to_all_v__fp32", (IN, INOUT, INOUT, IN, INOUT)),
        (2, "consume_step", (IN, IN, OUT)),
    ]
    assert config.orchestration is not None
    assert config.orchestration.signature == (IN, OUT, INOUT, INOUT, INOUT, INOUT, INOUT)


def test_kernel_config_describes_the_orchestrations_parameters(rendered: Render) -> None:
    """Every parameter in argument order: windows told from tensors, the contexts
    MaterializeDistTensorCtx appended naming their windows, scalars with their element type."""
    pipeline = read_kernel_config(
        TreeLayout(rendered("chip_pipeline") / "a3").sub_build("chip_pipeline").kernel_config
    ).orchestration
    assert pipeline is not None
    windows = ("stage", "data", "signal", "counts", "recv")
    assert [(p.name, p.kind, p.direction) for p in pipeline.params] == [
        ("inp", "tensor", "In"),
        ("out", "tensor", "Out"),
        *((name, "window", "InOut") for name in windows),
        *((f"{name}__ctx", "comm_context", "In") for name in windows),
    ]
    shapes = [(8, 64), (8, 64), (8, 64), (8, 64), (2, 1), (2,), (2, 1)]
    assert [p.shape for p in pipeline.params[:7]] == shapes
    assert [p.window for p in pipeline.params[7:]] == list(windows)
    features = read_kernel_config(
        TreeLayout(rendered("orchestration_features") / "a3").sub_build("features").kernel_config
    ).orchestration
    assert features is not None
    scalars = [(p.name, p.dtype) for p in features.params if p.kind == "scalar"]
    assert scalars == [("steps", DataType.INT64), ("factor", DataType.FLOAT32)]


def test_external_kernels_are_copied_not_referenced(rendered: Render) -> None:
    build = TreeLayout(rendered("chip_pipeline") / "a5").sub_build("chip_pipeline").root
    for name in ("stage_step", "consume_step"):
        copied = SubBuildLayout(build).kernel("aiv", name)
        assert copied.read_bytes() == (PROGRAMS_DIR / "kernels" / f"{name}.cpp").read_bytes()
    assert '"external"' not in SubBuildLayout(build).kernel_config.read_text()


def test_aic_kernels_go_to_kernels_aic(rendered: Render) -> None:
    build = TreeLayout(rendered("orchestration_features") / "a2").sub_build("features").root
    assert (build / "kernels/aic/tile_mix.cpp").is_file()
    assert (build / "kernels/aiv/tile_scale.cpp").is_file()


@pytest.mark.parametrize("stem", ["chip_pipeline", "host_rail_int8"])
def test_manifest_lists_every_file_and_the_inputs(rendered: Render, stem: str) -> None:
    for chip in ALL_CHIPS:
        root = rendered(stem) / chip
        assert verify_manifest(root) == []
        manifest = json.loads(TreeLayout(root).manifest.read_text())
        assert manifest["toolchain"] == {"name": "none", "version": ""}
        inputs = manifest["inputs"]
        program = PROGRAMS_DIR / f"{stem}.py"
        assert inputs[f"{stem}.py"] == hashlib.sha256(program.read_bytes()).hexdigest()
        external = [name for name in inputs if name.startswith("kernels/")]
        assert external
        for name in external:
            assert inputs[name] == hashlib.sha256((PROGRAMS_DIR / name).read_bytes()).hexdigest()
        handle = ":pypto.runtime.builtins.collectives.all_to_all_v"
        assert f"{handle}/templates/kernel.cpp.in" in inputs


def test_builtin_variant_is_rendered_once_for_two_dispatch_sites(rendered: Render) -> None:
    # host_rail_int8 dispatches the variant once per rank (a loop); the tree holds it once.
    manifest = json.loads(TreeLayout(rendered("host_rail_int8") / "a2").manifest.read_text())
    kernels = [f["path"] for f in manifest["files"] if f["path"].endswith("_kernel.cpp")]
    assert kernels == [f"{VARIANT}/kernels/aiv/builtin_tensor_all_to_all_v__int8_kernel.cpp"]


def _program(tmp_path: Path, text: str, kernels: dict[str, str] | None = None) -> Path:
    path = tmp_path / "prog.py"
    path.write_text(textwrap.dedent(text))
    for name, body in (kernels or {}).items():
        (tmp_path / "kernels").mkdir(exist_ok=True)
        (tmp_path / "kernels" / name).write_text(body)
    return path


SCALE_PROGRAM = """\
    import pypto.language as pl

    @pl.program
    class Scale:
        @pl.function(type=pl.FunctionType.AIV, external_source="kernels/scale.cpp")
        def scale(self, x: pl.Tensor[[16], pl.FP32], y: pl.Out[pl.Tensor[[16], pl.FP32]]
                  ) -> pl.Tensor[[16], pl.FP32]: ...

        @pl.function(type=pl.FunctionType.Orchestration)
        def orch(self, x: pl.Tensor[[16], pl.FP32], y: pl.Out[pl.Tensor[[16], pl.FP32]]
                 ) -> pl.Tensor[[16], pl.FP32]:
            return self.scale(x, y)
"""


def _render(path: Path, out: Path, chips: tuple[str, ...] = ("a3",)) -> None:
    render_subbuilds(lower_file(path, chips), chips, out, source_root=path.parent)


def test_missing_external_source_is_a_diagnostic_and_writes_nothing(tmp_path: Path) -> None:
    path = _program(tmp_path, SCALE_PROGRAM)
    out = tmp_path / "out"
    with pytest.raises(ProgramError) as caught:
        _render(path, out)
    assert "external_source 'kernels/scale.cpp' of kernel 'scale' does not exist" in str(
        caught.value
    )
    assert (caught.value.span.file, caught.value.span.line) == (str(path), 6)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["prog.py"]


def test_kernel_without_source_is_a_diagnostic(tmp_path: Path) -> None:
    path = _program(tmp_path, SCALE_PROGRAM.replace(', external_source="kernels/scale.cpp"', ""))
    with pytest.raises(ProgramError, match="kernel 'scale' has no external_source"):
        _render(path, tmp_path / "out")


def test_names_must_be_unique_across_programs(tmp_path: Path) -> None:
    programs = [
        *lower_file(PROGRAMS_DIR / "chip_pipeline.py", ALL_CHIPS),
        *lower_file(PROGRAMS_DIR / "host_rail_int8.py", ALL_CHIPS),
    ]
    with pytest.raises(ProgramError) as caught:
        render_subbuilds(programs, ("a3",), tmp_path / "out", source_root=PROGRAMS_DIR)
    message = str(caught.value)
    assert "'host_orch' of program 'HostRailInt8'" in message
    assert "program 'ChipPipeline'" in message
    assert "orchestration/host_orch.py" in message
    assert not (tmp_path / "out").exists()


def test_a_second_render_replaces_the_tree(tmp_path: Path) -> None:
    path = _program(tmp_path, SCALE_PROGRAM, {"scale.cpp": "// v1\n"})
    out = tmp_path / "out"
    _render(path, out, ("a2", "a3"))
    (tmp_path / "kernels" / "scale.cpp").write_text("// v2\n")
    _render(path, out, ("a5",))
    assert sorted(p.name for p in out.iterdir()) == ["a5"]
    copied = TreeLayout(out / "a5").sub_build("orch").kernel("aiv", "scale")
    assert copied.read_text() == "// v2\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kernels", "out", "prog.py"]


def test_a_render_replaces_a_build_with_its_logs_but_nothing_else(tmp_path: Path) -> None:
    path = _program(tmp_path, SCALE_PROGRAM, {"scale.cpp": "// k\n"})
    out = tmp_path / "out"
    _render(path, out, ("a3",))
    (out / LOG_DIR).mkdir()
    (out / LOG_DIR / "a3.log").write_text("compile log\n")
    _render(path, out, ("a3",))
    assert sorted(p.name for p in out.iterdir()) == ["a3"]
    (out / ".notes").mkdir()
    with pytest.raises(RenderError, match="is not a render tree"):
        _render(path, out, ("a3",))


def test_refuses_to_replace_a_directory_that_is_not_a_render(tmp_path: Path) -> None:
    path = _program(tmp_path, SCALE_PROGRAM, {"scale.cpp": "// k\n"})
    with pytest.raises(RenderError, match="is not a render tree"):
        _render(path, tmp_path)
    assert (tmp_path / "prog.py").is_file()


def test_inputs_must_be_under_the_source_root(tmp_path: Path) -> None:
    path = _program(tmp_path, SCALE_PROGRAM, {"scale.cpp": "// k\n"})
    programs = lower_file(path, ("a3",))
    with pytest.raises(RenderError, match="is not under the source root"):
        plan_chip(programs, "a3", PROGRAMS_DIR)


def test_file_modes_do_not_depend_on_the_umask(tmp_path: Path) -> None:
    path = _program(tmp_path, SCALE_PROGRAM, {"scale.cpp": "// k\n"})
    (tmp_path / "kernels" / "scale.cpp").chmod(0o600)
    out = tmp_path / "out"
    _render(path, out)
    for entry in out.rglob("*"):
        assert entry.stat().st_mode & 0o777 == (0o755 if entry.is_dir() else 0o644), entry
    assert out.stat().st_mode & 0o777 == 0o755


def test_a_tree_of_no_files_gets_its_folder_mode_whatever_the_umask(tmp_path: Path) -> None:
    # A chip whose program only calls external kernels plans no file: its folder is made for
    # the manifest alone, and must get the same mode as every other tree folder.
    trees = [ChipTree("a2", {}, {}), ChipTree("a3", {"kernels/k.cpp": b"// k\n"}, {})]
    previous = os.umask(0o077)
    try:
        write_trees(trees, tmp_path)
    finally:
        os.umask(previous)
    for chip in ("a2", "a3"):
        assert (tmp_path / chip).stat().st_mode & 0o777 == 0o755, chip
    assert (tmp_path / "a3" / "kernels").stat().st_mode & 0o777 == 0o755


INDEXED_PROGRAM = """\
    import pypto.language as pl
    import pypto.language.distributed as pld

    @pl.program
    class Indexed:
        @pl.function(type=pl.FunctionType.Orchestration)
        def gather(
            self,
            inp: pl.Tensor[[8, 64], pl.FP32],
            target: pl.InOut[pld.DistributedTensor[[8, 64], pl.FP32]],
            signal: pl.InOut[pld.DistributedTensor[[2, 2], pl.INT32]],
            counts: pld.DistributedTensor[[2], pl.INT32],
            recv: pl.InOut[pl.Tensor[[2, 1], pl.INT32]],
            index: pl.Tensor[[8], pl.INT32],
        ) -> pld.DistributedTensor[[8, 64], pl.FP32]:
            return pld.tensor.indexed_all_to_all_v(
                inp, target, signal, counts, recv, index, core_num=2
            )
"""


def test_indexed_program_defaults_to_a5_and_renders_its_kernel(tmp_path: Path) -> None:
    path = _program(tmp_path, INDEXED_PROGRAM)
    assert default_chips(path) == ("a5",)
    tree = plan_chip(lower_file(path, ("a5",)), "a5", tmp_path)
    kernel = "next_levels/gather/kernels/aiv/__builtin_indexed_all_to_all_v__fp32.cpp"
    assert kernel in tree.files
    orchestration = tree.files["next_levels/gather/orchestration/gather.cpp"].decode()
    assert "task0_.launch_spec.set_core_num(2);" in orchestration


def test_chip_pipeline_defaults_to_every_chip() -> None:
    assert default_chips(PROGRAMS_DIR / "chip_pipeline.py") == ALL_CHIPS


@pytest.mark.parametrize("stem", [*RENDERED_STEMS, "indexed"])
def test_one_lowering_serves_the_default_chips(stem: str, tmp_path: Path) -> None:
    # The lowering that finds the default chips is the lowering for them: chips only refuse.
    path = PROGRAMS_DIR / f"{stem}.py"
    if stem == "indexed":
        path = _program(tmp_path, INDEXED_PROGRAM)
    chips, programs = lower_for_default_chips(path)
    assert chips == default_chips(path)
    assert programs == lower_file(path, chips)


@pytest.mark.parametrize(
    "stem",
    [
        # A CHIP-rail kernel takes its variables from the attr the lowering wrote ...
        "chip_pipeline",
        # ... a HOST-rail variant's are compared with the lowering's for the same dtype.
        "host_rail_int8",
    ],
)
def test_every_render_refuses_rails_that_disagree(
    stem: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Make the lowering's variables disagree with the package manifest's: the render itself,
    # not only check-render, must refuse, and write nothing.
    monkeypatch.setattr(
        BuiltinOp, "template_vars", lambda self, dtype, config=(): "dtype_cpp=double"
    )
    sources = lower_file(PROGRAMS_DIR / f"{stem}.py", ("a3",))
    out = tmp_path / "out"
    with pytest.raises(RenderError, match="HOST and CHIP rails render different kernels"):
        render_subbuilds(sources, ("a3",), out, source_root=PROGRAMS_DIR)
    assert not out.exists()
