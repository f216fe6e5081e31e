"""``pypto-build build`` as a build system runs it: program files with a source root, and the
``--stamp``/``--depfile`` pair the CMake package's custom command depends on."""

from __future__ import annotations

import hashlib
import json
import shutil
import textwrap
from pathlib import Path

import pytest
from _support.console import run_cli

from pypto_build.builtins import default_registry, include_dir
from pypto_build.chip_build.compile_cache.depfile_parser import read_depfile
from pypto_build.chip_build.toolchains import SimToolchain
from pypto_build.files import walk_files
from pypto_build.plugin.cli import ExitCode
from pypto_build.plugin.depfile import depfile_text
from pypto_build.tree_layout import TreeLayout

SAMPLE_PROGRAM = Path("src/moe_a2a_skbuild/dispatch.py")
SAMPLE_KERNEL = Path("src/moe_a2a_skbuild/kernels/pack_rows.cpp")
ALL_TO_ALL_V = ":pypto.runtime.builtins.collectives.all_to_all_v"


@pytest.fixture(autouse=True)
def environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A private compile cache and no override variables."""
    monkeypatch.setenv("PYPTO_CACHE_DIR", str(tmp_path / "cache"))
    for name in ("PYPTO_CHIPS", "PYPTO_TOOLCHAIN", "PYPTO_JOBS", "PYPTO_COMPILER_LAUNCHER", "CXX"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def sample(tmp_path: Path, repo_root: Path) -> Path:
    """A copy of the scikit-build-core sample package (its program and kernel)."""
    copy = tmp_path / "sample"
    shutil.copytree(repo_root / "samples" / "moe_a2a_skbuild", copy)
    return copy


def test_stamp_and_depfile_name_every_input_of_the_build(
    sample: Path, tmp_path: Path, sim: SimToolchain, capsys: pytest.CaptureFixture[str]
) -> None:
    stamp, depfile = tmp_path / "work" / "build.stamp", tmp_path / "work" / "build.d"
    argv = [
        "build",
        str(sample / SAMPLE_PROGRAM),
        "--source-root",
        str(sample),
        "--chip",
        "a3",
        "--toolchain",
        "sim",
        "--out",
        str(tmp_path / "out"),
        "--stamp",
        str(stamp),
        "--depfile",
        str(depfile),
    ]
    code, _, err = run_cli(capsys, *argv)
    assert (code, err) == (ExitCode.OK, "")

    manifest = TreeLayout(tmp_path / "out" / "a3").manifest
    assert stamp.read_text(encoding="utf-8") == (
        f"a3 {hashlib.sha256(manifest.read_bytes()).hexdigest()}\n"
    )
    assert sorted(json.loads(manifest.read_text(encoding="utf-8"))["inputs"]) == [
        f"{ALL_TO_ALL_V}/templates/kernel.cpp.in",
        SAMPLE_PROGRAM.as_posix(),
        SAMPLE_KERNEL.as_posix(),
    ]
    package = default_registry().resolve(ALL_TO_ALL_V)
    headers = [include_dir() / path for path in walk_files(include_dir())]
    expected = sorted(
        path.resolve()
        for path in [
            sample / SAMPLE_PROGRAM,
            sample / SAMPLE_KERNEL,
            package.manifest_path,
            package.root / "templates" / "kernel.cpp.in",
            *headers,
        ]
    )
    text = depfile.read_text(encoding="utf-8")
    assert text.startswith(f"{stamp}: \\\n")
    assert read_depfile(depfile, tmp_path) == tuple(expected)

    # A second build of the same inputs writes the same files (from the cache this time).
    assert run_cli(capsys, *argv)[0] == ExitCode.OK
    assert depfile.read_text(encoding="utf-8") == text
    assert stamp.read_text(encoding="utf-8").startswith("a3 ")


def test_the_depfile_escapes_what_make_would_read_otherwise(tmp_path: Path) -> None:
    odd = [Path("/src/a b/k#1.cpp"), Path("/src/$HOME.py")]
    text = depfile_text(Path("/build/the stamp"), odd)
    assert text == "/build/the\\ stamp: \\\n  /src/a\\ b/k\\#1.cpp \\\n  /src/$$HOME.py\n"
    depfile = tmp_path / "d"
    depfile.write_text(text, encoding="utf-8")
    assert read_depfile(depfile, tmp_path) == tuple(odd)


def test_a_failed_build_leaves_no_stamp(
    sample: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    program = sample / SAMPLE_PROGRAM
    program.write_text(
        program.read_text(encoding="utf-8").replace("NR = 2", "NR = two"), encoding="utf-8"
    )
    stamp, depfile = tmp_path / "build.stamp", tmp_path / "build.d"
    code, out, err = run_cli(
        capsys,
        "build",
        str(program),
        "--chip",
        "a3",
        "--out",
        str(tmp_path / "out"),
        "--stamp",
        str(stamp),
        "--depfile",
        str(depfile),
    )
    assert (code, out) == (ExitCode.PROGRAM_ERROR, "")
    assert err.startswith(f"{program}:")
    assert " error: " in err.splitlines()[0]
    assert not stamp.exists()
    assert not depfile.exists()


INDEXED_PROGRAM = """\
    import pypto.language as pl
    import pypto.language.distributed as pld

    @pl.program
    class Gather:
        @pl.function(type=pl.FunctionType.Orchestration)
        def gather_rows(
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


def test_several_program_files_build_for_the_chips_all_support(
    sample: Path, sim: SimToolchain, capsys: pytest.CaptureFixture[str]
) -> None:
    gather = sample / "gather.py"
    gather.write_text(textwrap.dedent(INDEXED_PROGRAM), encoding="utf-8")
    out = sample / "out"
    # dispatch.py builds for every chip, the indexed collective only for a5.
    code, stdout, err = run_cli(
        capsys,
        "build",
        str(sample / SAMPLE_PROGRAM),
        str(gather),
        "--source-root",
        str(sample),
        "--out",
        str(out),
        "--toolchain",
        "sim",
    )
    assert (code, err) == (ExitCode.OK, "")
    assert stdout.startswith(f"a5: 5 compiled, 0 from cache -> {out / 'a5'} (sim ")
    assert sorted(path.name for path in out.iterdir()) == [".pypto-build-logs", "a5"]
    inputs = json.loads(TreeLayout(out / "a5").manifest.read_text(encoding="utf-8"))["inputs"]
    assert {"gather.py", SAMPLE_PROGRAM.as_posix(), SAMPLE_KERNEL.as_posix()} <= set(inputs)
    assert TreeLayout(out / "a5").sub_build("gather_rows").kernel_config.is_file()
    assert TreeLayout(out / "a5").sub_build("quant_exchange").kernel_config.is_file()


def test_program_files_and_their_source_root_must_agree(
    sample: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    program = str(sample / SAMPLE_PROGRAM)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    cases = {
        (program, "--source-root", str(elsewhere)): (
            f"{program} is not under the source root {elsewhere}: inputs are recorded by their "
            "path relative to it (set --source-root)"
        ),
        (program, "--source-root", str(tmp_path / "missing")): (
            f"--source-root: {tmp_path / 'missing'}: no such directory"
        ),
        (str(sample), program): "give one project folder, or program files",
        (program, str(sample)): f"{sample}: a folder among program files; give one project folder",
        (str(sample), "--source-root", str(sample)): (
            "--source-root goes with program files; a project is its own root"
        ),
        (program, "--depfile", str(tmp_path / "d")): (
            "--depfile needs --stamp: the depfile lists the stamp's inputs"
        ),
    }
    for argv, message in cases.items():
        code, _, err = run_cli(capsys, "build", *argv)
        assert (code, err) == (ExitCode.USAGE_ERROR, f"pypto-build: error: {message}\n"), argv
